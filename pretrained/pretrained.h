// Pretrained models: performance models trained offline on the recorded datasets of
// one kind of host and shipped with the farm in data/models/ (docs/MODELS.md,
// "Pretrained models"), one file each, named KIND-HOST (e.g. "gbt-amd-epyc"). A
// campaign starts its search under one (`model_from: pretrained`, or
// `pretrained:NAME`) instead of under random schedules, and fine-tunes it on its own
// results. Free of Torch and XGBoost: the weights are the kind's saved bytes
// (PerformanceModel::Save), loaded by the learner.
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

// model_from values: "pretrained" picks the model of the strategy's kind for the
// workers' host kind; "pretrained:NAME" names one.
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
// schema `schema_version`, on workers of `host`'s kind; else an error naming both
// sides of what differs.
Status CheckPretrainedFits(const PretrainedModel& model, const std::string& kind,
                           int schema_version, const HostFingerprint& host);

// What `model_from` resolves to for a campaign of `kind` on `host` under the schema:
// the named model (which must fit: CheckPretrainedFits), or for "pretrained" the one
// model of `kind` in `dir` that fits. *found false, and *why_none saying what there
// is, when "pretrained" finds none: the campaign then starts as without one.
StatusOr<PretrainedModel> ResolvePretrained(const std::string& dir, const std::string& model_from,
                                            const std::string& kind, int schema_version,
                                            const HostFingerprint& host, bool* found,
                                            std::string* why_none);

// What `farm-pretrain --show` prints: name, kind, host, schema, datasets, training
// set, metrics, size.
std::string DescribePretrained(const PretrainedModel& model);

}  // namespace schedfarm
