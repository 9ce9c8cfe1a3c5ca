// A recorded dataset: every measurement of one or more campaigns, all taken on one
// kind of host, with the pipelines they measured and where they came from (each
// campaign's file, its first and last measurement, the host's fingerprint), kept as
// one compressed file that lasts in a repository (data/datasets/, docs/DATASETS.md).
// Replay workers answer leases from one (worker/replay.h), replay campaigns propose its
// schedules, and the models are trained and scored on one offline.
//
// The file: the bytes "SFDS", the format version as 4 little-endian bytes, then one
// zstd frame, with its checksum, of the serialized `Dataset` message.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "common/status.h"
#include "schedfarm.pb.h"

namespace schedfarm {

inline constexpr uint32_t kDatasetFormatVersion = 1;

struct LoadedDataset {
  std::string path;
  std::string id;  // DatasetId of the file
  Dataset data;
  std::vector<std::string> pipeline_ids;  // PipelineId of each of data.pipelines, in order
};

// The content id of a dataset file: hex of the first 16 bytes of SHA-256 of its bytes.
std::string DatasetId(const std::string& file_bytes);

// Reads and checks a dataset file. Errors name the file and what is wrong: missing,
// not a dataset, another format version, truncated or corrupt, or failing CheckDataset.
StatusOr<LoadedDataset> ReadDataset(const std::string& path);
// Checks `dataset` and writes it (atomically), compressed.
Status WriteDataset(const std::string& path, const Dataset& dataset);

// Every pipeline builds and appears once; every measurement is of one of them, has a
// schedule hash, and was taken on the dataset's host (HostKindDifference). When
// `pipeline_ids` is given it receives each pipeline's id, in order.
Status CheckDataset(const Dataset& dataset, std::vector<std::string>* pipeline_ids = nullptr);

// Empty when `a` and `b` are the same kind of host (CPU model, cores, ISA flags and
// Halide target); else what differs, e.g. "cpu_model 'AMD EPYC' against 'Intel Xeon'".
std::string HostKindDifference(const HostFingerprint& a, const HostFingerprint& b);

// A pipeline's source (PipelineSpec.source) as a dataset keeps it: a file, "onnx:PATH"
// or "yaml:PATH" (also inside a task's "task N of onnx:PATH"), named by its folder and
// name only ("onnx:resnet18/model.onnx"), so that a dataset, which outlives the machine
// that packed it, holds none of that machine's paths.
std::string PortableSource(const std::string& source);

// Adds one campaign's measurements (in the order taken) and the pipelines they measured
// to `dataset`, their sources portable. Measurements the coordinator made without a
// host (a lost worker) are left out. The first part sets the dataset's host; an error
// for a measurement taken on another kind of host (naming it and the difference), for a
// campaign packed already, or for a measurement of a pipeline the campaign does not
// hold.
Status AddDatasetPart(const Campaign& campaign, const std::vector<PipelineSpec>& pipelines,
                      const std::vector<Measurement>& measurements, int64_t packed_unix_ms,
                      Dataset* dataset);

// What `farmctl dataset show` prints: the file's id, the host, each campaign packed in
// (name, id, dates, measurements), then pipelines, distinct schedules, schedules
// measured more than once, and the measurements by status.
std::string DescribeDataset(const LoadedDataset& dataset);

// The key of a candidate in indexes of a dataset: its pipeline id and schedule hash.
std::string DatasetKey(const std::string& pipeline_id, const std::string& schedule_hash);
// The indexes of the dataset's measurements of each DatasetKey, in the order taken.
std::map<std::string, std::vector<int>> MeasurementsByKey(const Dataset& dataset);
// Each scheduled candidate's (not a baseline's) first OK measurement with a positive
// median, by DatasetKey: what a campaign that measures every schedule once (a failure
// retried as it was recorded) sees of it.
std::map<std::string, const Measurement*> FirstOkMeasurements(const Dataset& dataset);

}  // namespace schedfarm
