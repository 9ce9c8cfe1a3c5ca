// Pretrained models: performance models trained offline on the recorded datasets of
// one or more kinds of host and shipped with the farm in data/models/ (docs/MODELS.md,
// "Pretrained models"), one file each, named KIND-HOST (e.g. "gbt-amd-epyc"). A
// campaign starts its search under one (`model_from: pretrained`, or
// `pretrained:NAME`) instead of under random schedules, and fine-tunes it on its own
// results. A model serves the workers compatible with a host it was trained on (the
// same vector width and its vector ISA flags), and "pretrained" takes the fitting model
// whose host is nearest the worker's. Free of Torch and XGBoost: the weights are the
// kind's saved bytes (PerformanceModel::Save), loaded by the learner.
//
// The file: the bytes "SFPM", the format version as 4 little-endian bytes, then one
// zstd frame of the serialized `PretrainedModel` message (dataset/compressed_file.h).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/status.h"
#include "pretrained.pb.h"

namespace schedfarm {

inline constexpr uint32_t kPretrainedFormatVersion = 1;
inline constexpr char kPretrainedExtension[] = ".sfpm";

// model_from values: "pretrained" picks the model of the strategy's kind nearest the
// workers' host kind among those that fit it; "pretrained:NAME" names one.
inline constexpr char kPretrainedSource[] = "pretrained";
bool IsPretrainedSource(const std::string& model_from);
// NAME of "pretrained:NAME"; empty for "pretrained" and for anything else.
std::string PretrainedNameOf(const std::string& model_from);

// Where the farm's pretrained models are read from: $SCHEDFARM_PRETRAINED_DIR when set,
// else the data/models folder of the source tree the binaries were built from.
std::string DefaultPretrainedDir();

// The host kind as a file name part: the CPU model in lower case, every run of other
// characters than letters and digits a '-' ("AMD EPYC" -> "amd-epyc").
std::string HostKindSlug(const HostFingerprint& host);
// KIND-HOST, the name a model of `kind` trained on `host`'s datasets is shipped under.
std::string PretrainedName(const std::string& kind, const HostFingerprint& host);
// The name of a model of `kind` trained on the datasets of several host kinds: their
// distinct HostKindSlug values sorted and joined with '+' ("gbt-amd-epyc+intel-xeon";
// as HostKindSlug, "unknown-host" for none).
std::string PretrainedName(const std::string& kind,
                           const google::protobuf::RepeatedPtrField<HostFingerprint>& hosts);

// The host kinds `model` was trained on: its `hosts`, or the one `host` of a file
// written before them (a model without a host description).
std::vector<HostFingerprint> PretrainedHosts(const PretrainedModel& model);

// Empty when a worker of `worker`'s kind can run what a model trained on `trained`
// learned: the same vector width (VectorBytesOfHalideTarget of the Halide targets), and
// the vector ISA flags of that width `trained` has (avx512f; avx2 and fma) in the
// worker's flags too. Else why not, naming both hosts.
std::string HostIncompatibility(const HostFingerprint& trained, const HostFingerprint& worker);

// How far apart two host kinds are in what a schedule's speed depends on, 0 for
// alike: 1 for another CPU model, plus |log2| of the ratio of their cores, of their L2
// sizes, of their L3 sizes and of their fp32 peaks at their `cores` threads (each where
// both know it), plus 0.1 for each ISA flag one has and the other lacks. Among the
// fitting models, "pretrained" takes the one with a host nearest the worker.
double HostDistance(const HostFingerprint& a, const HostFingerprint& b);

// What differs between the host a model was trained on and the worker it serves, for
// the learner's log when it starts warm on a host that is not the same kind, e.g.
// "trained on AMD EPYC, 2 cores, avx512; this worker: AMD EPYC, 2 cores, avx512,
// +avx512_vp2intersect" (flags the worker has and `trained` lacks as +flag, those it
// lacks as -flag; the Halide targets where they differ). Empty for the same host kind.
std::string HostDifferenceNote(const HostFingerprint& trained, const HostFingerprint& worker);

Status WritePretrained(const std::string& path, const PretrainedModel& model);
// Reads and checks a file: errors name it (missing, not a pretrained model, another
// format version, truncated or corrupt, no kind or weights).
StatusOr<PretrainedModel> ReadPretrained(const std::string& path);

// The names (file stems) of the pretrained models in `dir`, sorted; none for a missing
// folder.
std::vector<std::string> PretrainedNames(const std::string& dir);
std::string PretrainedPath(const std::string& dir, const std::string& name);

// Ok when `name` is a model in `dir`; else an error listing those that are.
Status CheckPretrainedExists(const std::string& dir, const std::string& name);

// Ok when `model` may serve a campaign that scores with `kind`, under the feature
// schema `schema_version`, on workers of `host`'s kind: one of its hosts compatible
// with `host` (HostIncompatibility), or for a model without a host description the
// same host kind (HostKindDifference). Else an error naming both sides of what differs.
Status CheckPretrainedFits(const PretrainedModel& model, const std::string& kind,
                           int schema_version, const HostFingerprint& host);

// What `model_from` resolves to for a campaign of `kind` on `host` under the schema:
// the named model (which must fit: CheckPretrainedFits), or for "pretrained", of the
// models in `dir` whose kind is `kind` and that fit, the one with a host nearest
// `host` (HostDistance; ties to the first name). *found false, and *why_none saying
// that the campaign starts cold and which host kinds the models of `kind` cover, when
// "pretrained" finds none. When one is found and `host_note` is given, *host_note is
// HostDifferenceNote of its nearest host and `host` (empty for the same host kind).
StatusOr<PretrainedModel> ResolvePretrained(const std::string& dir, const std::string& model_from,
                                            const std::string& kind, int schema_version,
                                            const HostFingerprint& host, bool* found,
                                            std::string* why_none,
                                            std::string* host_note = nullptr);

// What `farm-pretrain --show` prints: name, kind, hosts, schema, datasets, training
// set, metrics, size.
std::string DescribePretrained(const PretrainedModel& model);

}  // namespace schedfarm
