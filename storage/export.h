// Datasets from the store: a campaign's measurements, one row per measurement in seq
// order, as CSV (RFC 4180, with a header row) or JSON lines (one object per line).
// Both carry the columns of kExportColumns; the schedule is its protobuf JSON. An OK
// row also has its pipeline's FLOPs and compulsory bytes, GFLOP/s and GB/s at its median
// and their shares of its host's fp32 peak and memory bandwidth at its thread count
// (storage/throughput.h), empty where unknown.
#pragma once

#include <ostream>
#include <string>

#include "common/status.h"
#include "storage/store.h"
#include "storage/throughput.h"

namespace schedfarm {

enum class ExportFormat { kCsv, kJsonLines };

// The columns, in order: the CSV header and the JSON keys.
inline constexpr const char* kExportColumns[] = {"seq",
                                                 "campaign",
                                                 "lease_id",
                                                 "pipeline_id",
                                                 "schedule_hash",
                                                 "repeat",
                                                 "origin",
                                                 "model_version",
                                                 "predicted_seconds",
                                                 "acquisition_score",
                                                 "acquisition",
                                                 "sampled_stages",
                                                 "search_seconds",
                                                 "status",
                                                 "compile_seconds",
                                                 "min_seconds",
                                                 "median_seconds",
                                                 "mean_seconds",
                                                 "stddev_seconds",
                                                 "cv",
                                                 "samples",
                                                 "flops",
                                                 "gflops",
                                                 "peak_gflops",
                                                 "peak_share",
                                                 "bytes",
                                                 "gbps",
                                                 "bandwidth_gbps",
                                                 "bandwidth_share",
                                                 "worker_id",
                                                 "cpu_model",
                                                 "finished_unix_ms",
                                                 "error",
                                                 "schedule"};

// Writes the campaign's measurements to `out`: the header, then one row per measurement.
// Non-finite numbers, and figures that are unknown, are written as an empty CSV field
// or JSON null. The FLOPs and bytes are those of the pipelines in the store (none for a
// pipeline the store does not hold).
Status ExportMeasurements(const Store& store, const std::string& campaign, ExportFormat format,
                          std::ostream& out);

// The pieces of ExportMeasurements, for writers that get the measurements elsewhere
// (farmctl reads them from the coordinator page by page): the CSV header line (nothing
// for JSON lines), and one measurement as one CSV row or JSON line, with its pipeline's
// work (0 where unknown: no flops, gflops or share of the peak; no bytes, gbps or share
// of the bandwidth).
void WriteExportHeader(ExportFormat format, std::ostream& out);
Status WriteExportRow(const StoredMeasurement& stored, const PipelineWork& work,
                      ExportFormat format, std::ostream& out);

}  // namespace schedfarm
