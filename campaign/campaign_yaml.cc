#include "campaign/campaign_yaml.h"

#include <google/protobuf/util/json_util.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <limits>
#include <map>
#include <sstream>
#include <utility>
#include <vector>

#include "campaign/campaign_pipelines.h"
#include "common/duration.h"
#include "common/files.h"
#include "common/text.h"
#include "dataset/dataset.h"
#include "evaluation/split.h"
#include "pipeline/random_pipeline.h"
#include "pipeline/spec.h"
#include "pipeline/yaml_io.h"
#include "pipeline/yaml_reader.h"
#include "pipeline/zoo.h"
#include "pretrained/pretrained.h"
#include "protocol/measurement_settings.h"
#include "scheduler/autoscheduler_names.h"
#include "search/registry.h"

namespace schedfarm {
namespace {

namespace fs = std::filesystem;

// ISA flags a worker can report (worker/fingerprint.cc keeps the timing-relevant
// flags of /proc/cpuinfo under these names).
const std::vector<std::string>& IsaNames() {
  static const std::vector<std::string> names = {"sse4_1",
                                                 "sse4_2",
                                                 "avx",
                                                 "avx2",
                                                 "fma",
                                                 "f16c",
                                                 "bmi2",
                                                 "popcnt",
                                                 "avx512f",
                                                 "avx512dq",
                                                 "avx512cd",
                                                 "avx512bw",
                                                 "avx512vl",
                                                 "avx512ifma",
                                                 "avx512vbmi",
                                                 "avx512_vbmi2",
                                                 "avx512_vnni",
                                                 "avx512_bitalg",
                                                 "avx512_vpopcntdq",
                                                 "avx512_bf16",
                                                 "avx512_fp16",
                                                 "avx512_vp2intersect",
                                                 "amx_tile",
                                                 "amx_bf16",
                                                 "amx_int8"};
  return names;
}

// Defaults of the settings every strategy that uses a model has (docs/CAMPAIGN_YAML.md);
// each strategy's own settings and their defaults are the registry's (search/registry.h).
constexpr double kDefaultEpsilon = 0.05;  // Ansor's share of random candidates
constexpr int32_t kDefaultBatch = 16;
constexpr int32_t kDefaultRetrainEvery = 32;
// A replay campaign's split of its dataset's pipelines: the learner's own default.
constexpr double kDefaultReplayHeldOut = 0.2;
constexpr uint64_t kDefaultReplaySplitSeed = 1;

const std::vector<std::pair<std::string, int>>& DtypeNames() {
  static const std::vector<std::pair<std::string, int>> names = {{"f32", FLOAT32},
                                                                 {"f64", FLOAT64}};
  return names;
}

const std::vector<std::pair<std::string, int>>& MathNames() {
  static const std::vector<std::pair<std::string, int>> names = {{"exact", EXACT}, {"pade", PADE}};
  return names;
}

std::vector<std::string> Keys(const std::vector<std::pair<std::string, int>>& names) {
  std::vector<std::string> keys;
  for (const auto& [name, value] : names) keys.push_back(name);
  return keys;
}

using Fields = YamlFields;

bool HasSetting(const std::vector<SettingSpec>& specs, const std::string& name) {
  return std::any_of(specs.begin(), specs.end(),
                     [&](const SettingSpec& spec) { return spec.name == name; });
}

// Reads one campaign file; `what` arguments are the dotted path of the value being
// read (e.g. "pipelines[2].zoo.batch"), used in error messages.
class Reader : public YamlReader {
 public:
  Reader(std::string filename, bool check_files)
      : YamlReader(filename), dir_(fs::path(filename).parent_path()), check_files_(check_files) {}

  StatusOr<CampaignConfig> Read(const std::string& text);

 private:
  // Numbers within [min, max].
  StatusOr<int64_t> IntIn(const YAML::Node& n, const std::string& what, int64_t min,
                          int64_t max) const;
  StatusOr<double> DoubleIn(const YAML::Node& n, const std::string& what, double min,
                            double max) const;
  // "90s", "2m", "500ms", "2h" or a number of seconds; never negative.
  StatusOr<double> Duration(const YAML::Node& n, const std::string& what) const;
  StatusOr<int> Choice(const YAML::Node& n, const std::string& what, const std::string& kind,
                       const std::vector<std::pair<std::string, int>>& names) const;
  // A string that is one of `names`.
  StatusOr<std::string> OneOf(const YAML::Node& n, const std::string& what,
                              const std::string& kind, const std::vector<std::string>& names) const;
  // A list of distinct names, each one of `known` unless `known` is empty.
  StatusOr<std::vector<std::string>> Names(const YAML::Node& n, const std::string& what,
                                           const std::string& kind,
                                           const std::vector<std::string>& known) const;
  // An existing regular file named relative to the campaign file, ending in one of
  // `extensions`; returns its absolute path.
  StatusOr<std::string> File(const YAML::Node& n, const std::string& what,
                             const std::vector<std::string>& extensions) const;

  Status ReadPipeline(const YAML::Node& n, const std::string& what, PipelineSource* source) const;
  Status ReadZoo(const YAML::Node& n, const std::string& what, ZooPipeline* zoo) const;
  Status ReadRandom(const YAML::Node& n, const std::string& what, RandomPipelines* random) const;
  // `pipelines`: the campaign's pipeline count, for the strategy's own check (-1:
  // unknown here, not checked). `learner`: farm-learner proposes the candidates even
  // of a strategy without a model (a replay campaign), so it has the settings of the
  // strategies that use one.
  Status ReadStrategy(const YAML::Node& n, int pipelines, bool learner, Strategy* strategy) const;
  Status ReadBudget(const YAML::Node& n, Budget* budget) const;
  Status ReadMeasurement(const YAML::Node& n, MeasurementSettings* settings) const;
  Status ReadWorkers(const YAML::Node& n, WorkerRequirements* workers) const;
  // With check_files, the dataset is read, its pipelines split, and `replay` holds its
  // id and both sides of the split; else only the settings are read.
  Status ReadReplay(const YAML::Node& n, ReplaySource* replay) const;

  fs::path dir_;
  bool check_files_;
};

StatusOr<int64_t> Reader::IntIn(const YAML::Node& n, const std::string& what, int64_t min,
                                int64_t max) const {
  SCHEDFARM_ASSIGN_OR_RETURN(int64_t v, Int(n, what));
  if (v < min || v > max) {
    return ErrorAt(n, what + " must be between " + std::to_string(min) + " and " +
                          std::to_string(max) + ", got " + n.Scalar());
  }
  return v;
}

StatusOr<double> Reader::DoubleIn(const YAML::Node& n, const std::string& what, double min,
                                  double max) const {
  SCHEDFARM_ASSIGN_OR_RETURN(double v, Double(n, what));
  if (!(v >= min && v <= max)) {
    std::ostringstream limits;
    limits << what << " must be between " << min << " and " << max << ", got " << n.Scalar();
    return ErrorAt(n, limits.str());
  }
  return v;
}

StatusOr<double> Reader::Duration(const YAML::Node& n, const std::string& what) const {
  const std::string expected =
      " must be a duration such as 90s, 2m, 500ms, 2h or a number "
      "of seconds";
  if (!n.IsScalar()) return ErrorAt(n, what + expected + ", is " + KindName(n));
  const std::string& s = n.Scalar();
  const std::optional<double> v = DurationSeconds(s);
  if (!v) return ErrorAt(n, what + expected + ", got '" + s + "'");
  if (*v < 0) return ErrorAt(n, what + " must not be negative, got " + s);
  return *v;
}

StatusOr<int> Reader::Choice(const YAML::Node& n, const std::string& what, const std::string& kind,
                             const std::vector<std::pair<std::string, int>>& names) const {
  const std::vector<std::string> keys = Keys(names);
  SCHEDFARM_ASSIGN_OR_RETURN(std::string s, OneOf(n, what, kind, keys));
  return names[std::find(keys.begin(), keys.end(), s) - keys.begin()].second;
}

StatusOr<std::string> Reader::OneOf(const YAML::Node& n, const std::string& what,
                                    const std::string& kind,
                                    const std::vector<std::string>& names) const {
  SCHEDFARM_ASSIGN_OR_RETURN(std::string s, String(n, what));
  if (std::find(names.begin(), names.end(), s) != names.end()) return s;
  return ErrorAt(n, "unknown " + kind + " '" + s + "' (" + NearMissHint(s, names, "known: ") + ")");
}

StatusOr<std::vector<std::string>> Reader::Names(const YAML::Node& n, const std::string& what,
                                                 const std::string& kind,
                                                 const std::vector<std::string>& known) const {
  if (!n.IsSequence()) return ErrorAt(n, what + " must be a list, is " + KindName(n));
  std::vector<std::string> out;
  for (size_t i = 0; i < n.size(); ++i) {
    const std::string item = what + "[" + std::to_string(i) + "]";
    SCHEDFARM_ASSIGN_OR_RETURN(std::string s, String(n[i], item));
    if (s.empty()) return ErrorAt(n[i], item + " must not be empty");
    if (!known.empty() && std::find(known.begin(), known.end(), s) == known.end()) {
      return ErrorAt(
          n[i], "unknown " + kind + " '" + s + "' (" + NearMissHint(s, known, "known: ") + ")");
    }
    if (std::find(out.begin(), out.end(), s) != out.end()) {
      return ErrorAt(n[i], kind + " '" + s + "' is listed twice");
    }
    out.push_back(s);
  }
  return out;
}

StatusOr<std::string> Reader::File(const YAML::Node& n, const std::string& what,
                                   const std::vector<std::string>& extensions) const {
  SCHEDFARM_ASSIGN_OR_RETURN(std::string s, String(n, what));
  const std::string extension = fs::path(s).extension().string();
  if (std::find(extensions.begin(), extensions.end(), extension) == extensions.end()) {
    return ErrorAt(n, what + " must name a " + Join(extensions, ", ") + " file, got '" + s + "'");
  }
  fs::path path(s);
  if (path.is_relative()) path = dir_ / path;
  std::error_code error;
  path = fs::absolute(path, error).lexically_normal();
  if (error || (check_files_ && !fs::is_regular_file(path, error))) {
    return ErrorAt(n, what + ": file '" + s +
                          "' not found (relative paths are read from the "
                          "campaign file's directory; looked at " +
                          path.string() + ")");
  }
  return path.string();
}

Status Reader::ReadZoo(const YAML::Node& n, const std::string& what, ZooPipeline* zoo) const {
  // `zoo: NAME` is short for `zoo: {block: NAME}`.
  const bool shorthand = n.IsScalar();
  Fields f;
  if (!shorthand) {
    SCHEDFARM_ASSIGN_OR_RETURN(
        f, Map(n, what, {"block", "spatial_scale", "channel_scale", "batch", "dtype", "math"}));
    SCHEDFARM_RETURN_IF_ERROR(Require(f, "block", what));
  }
  const YAML::Node& block_node = shorthand ? n : f.value("block");
  SCHEDFARM_ASSIGN_OR_RETURN(std::string block,
                             String(block_node, shorthand ? what : what + ".block"));
  const std::vector<std::string> blocks = ZooNames();
  if (std::find(blocks.begin(), blocks.end(), block) == blocks.end()) {
    return ErrorAt(block_node, "unknown zoo block '" + block + "' (" +
                                   NearMissHint(block, blocks, "known: ") + ")");
  }
  zoo->set_block(block);
  const ZooOptions defaults;
  zoo->set_spatial_scale(defaults.spatial_scale);
  zoo->set_channel_scale(defaults.channel_scale);
  zoo->set_batch(defaults.batch);
  zoo->set_dtype(defaults.dtype);
  zoo->set_math(defaults.math);
  for (const char* key : {"spatial_scale", "channel_scale"}) {
    if (!f.has(key)) continue;
    SCHEDFARM_ASSIGN_OR_RETURN(double scale,
                               DoubleIn(f.value(key), what + "." + key, 1.0 / 16, 16));
    if (std::string(key) == "spatial_scale") {
      zoo->set_spatial_scale(scale);
    } else {
      zoo->set_channel_scale(scale);
    }
  }
  if (f.has("batch")) {
    SCHEDFARM_ASSIGN_OR_RETURN(int64_t batch, IntIn(f.value("batch"), what + ".batch", 1, 256));
    zoo->set_batch(batch);
  }
  if (f.has("dtype")) {
    SCHEDFARM_ASSIGN_OR_RETURN(int dtype,
                               Choice(f.value("dtype"), what + ".dtype", "dtype", DtypeNames()));
    zoo->set_dtype(static_cast<DataType>(dtype));
  }
  if (f.has("math")) {
    SCHEDFARM_ASSIGN_OR_RETURN(int math,
                               Choice(f.value("math"), what + ".math", "math mode", MathNames()));
    zoo->set_math(static_cast<MathMode>(math));
  }
  return Status::Ok();
}

Status Reader::ReadRandom(const YAML::Node& n, const std::string& what,
                          RandomPipelines* random) const {
  SCHEDFARM_ASSIGN_OR_RETURN(
      Fields f,
      Map(n, what, {"seeds", "max_ops", "max_elements", "max_flops", "min_depth", "math"}));
  SCHEDFARM_RETURN_IF_ERROR(Require(f, "seeds", what));
  constexpr int64_t kMaxPipelines = 100000;
  const YAML::Node& seeds = f.value("seeds");
  const std::string seeds_what = what + ".seeds";
  int64_t first = 0;
  int64_t count = 0;
  if (seeds.IsSequence()) {
    if (seeds.size() != 2) {
      return ErrorAt(seeds, seeds_what + " must be [first, last] or {first, count}, has " +
                                std::to_string(seeds.size()) + " items");
    }
    SCHEDFARM_ASSIGN_OR_RETURN(
        first, IntIn(seeds[0], seeds_what + "[0]", 0, std::numeric_limits<int64_t>::max()));
    SCHEDFARM_ASSIGN_OR_RETURN(
        int64_t last, IntIn(seeds[1], seeds_what + "[1]", 0, std::numeric_limits<int64_t>::max()));
    if (last < first) {
      return ErrorAt(seeds, seeds_what + ": seed range reversed, last " + std::to_string(last) +
                                " is below first " + std::to_string(first) +
                                " (write [first, last])");
    }
    if (last - first >= kMaxPipelines) {
      return ErrorAt(seeds, seeds_what + ": at most " + std::to_string(kMaxPipelines) +
                                " seeds, got " + std::to_string(last - first + 1));
    }
    count = last - first + 1;
  } else if (seeds.IsMap()) {
    SCHEDFARM_ASSIGN_OR_RETURN(Fields s, Map(seeds, seeds_what, {"first", "count"}));
    SCHEDFARM_RETURN_IF_ERROR(Require(s, "first", seeds_what));
    SCHEDFARM_RETURN_IF_ERROR(Require(s, "count", seeds_what));
    SCHEDFARM_ASSIGN_OR_RETURN(first, IntIn(s.value("first"), seeds_what + ".first", 0,
                                            std::numeric_limits<int64_t>::max()));
    SCHEDFARM_ASSIGN_OR_RETURN(count,
                               IntIn(s.value("count"), seeds_what + ".count", 1, kMaxPipelines));
  } else {
    return ErrorAt(seeds,
                   seeds_what + " must be [first, last] or {first, count}, is " + KindName(seeds));
  }
  random->set_first_seed(static_cast<uint64_t>(first));
  random->set_count(static_cast<uint64_t>(count));

  const RandomPipelineOptions defaults;
  random->set_max_ops(defaults.max_ops);
  random->set_max_elements(defaults.max_elements);
  random->set_max_flops(defaults.max_flops);
  random->set_min_depth(defaults.min_depth);
  random->set_math(defaults.math);
  if (f.has("max_ops")) {
    SCHEDFARM_ASSIGN_OR_RETURN(int64_t v, IntIn(f.value("max_ops"), what + ".max_ops", 1, 200));
    random->set_max_ops(static_cast<int32_t>(v));
  }
  if (f.has("max_elements")) {
    SCHEDFARM_ASSIGN_OR_RETURN(
        int64_t v, IntIn(f.value("max_elements"), what + ".max_elements", 1, int64_t{1} << 30));
    random->set_max_elements(v);
  }
  if (f.has("max_flops")) {
    SCHEDFARM_ASSIGN_OR_RETURN(double v,
                               DoubleIn(f.value("max_flops"), what + ".max_flops", 1, 1e12));
    random->set_max_flops(v);
  }
  if (f.has("min_depth")) {
    SCHEDFARM_ASSIGN_OR_RETURN(
        int64_t v, IntIn(f.value("min_depth"), what + ".min_depth", 1, random->max_ops()));
    random->set_min_depth(static_cast<int32_t>(v));
  }
  if (f.has("math")) {
    SCHEDFARM_ASSIGN_OR_RETURN(int math,
                               Choice(f.value("math"), what + ".math", "math mode", MathNames()));
    random->set_math(static_cast<MathMode>(math));
  }
  return Status::Ok();
}

Status Reader::ReadPipeline(const YAML::Node& n, const std::string& what,
                            PipelineSource* source) const {
  const std::vector<std::string> kinds = {"zoo", "onnx", "yaml", "random"};
  SCHEDFARM_ASSIGN_OR_RETURN(Fields f, Map(n, what, kinds));
  if (f.order.size() != 1) {
    const YAML::Node& at = f.order.empty() ? n : f.key(f.order[1]);
    return ErrorAt(at, what + " must have exactly one of " + Join(kinds, ", ") + ", has " +
                           std::to_string(f.order.size()) +
                           " (start a new list item with '-' for each pipeline)");
  }
  const std::string kind = f.order[0];
  const YAML::Node& value = f.value(kind);
  const std::string inner = what + "." + kind;
  if (kind == "zoo") return ReadZoo(value, inner, source->mutable_zoo());
  if (kind == "random") return ReadRandom(value, inner, source->mutable_random());
  // `onnx: PATH` and `yaml: PATH` are short for `{path: PATH}`.
  Fields file;
  if (!value.IsScalar()) {
    SCHEDFARM_ASSIGN_OR_RETURN(file, Map(value, inner, {"path"}));
    SCHEDFARM_RETURN_IF_ERROR(Require(file, "path", inner));
  }
  const YAML::Node& path_node = value.IsScalar() ? value : file.value("path");
  const std::string path_what = value.IsScalar() ? inner : inner + ".path";
  if (kind == "onnx") {
    SCHEDFARM_ASSIGN_OR_RETURN(*source->mutable_onnx_path(),
                               File(path_node, path_what, {".onnx"}));
    return Status::Ok();
  }
  SCHEDFARM_ASSIGN_OR_RETURN(std::string path, File(path_node, path_what, {".yaml", ".yml"}));
  StatusOr<PipelineSpec> spec = PipelineFromYamlFile(path);
  if (!spec.ok()) {
    return ErrorAt(path_node,
                   path_what + ": the pipeline does not validate: " + spec.status().message());
  }
  source->set_yaml_path(path);
  return Status::Ok();
}

Status Reader::ReadStrategy(const YAML::Node& n, int pipelines, bool learner,
                            Strategy* strategy) const {
  SCHEDFARM_ASSIGN_OR_RETURN(Fields f, Map(n, "strategy", {"name", "settings"}));
  SCHEDFARM_RETURN_IF_ERROR(Require(f, "name", "strategy"));
  SCHEDFARM_ASSIGN_OR_RETURN(std::string name,
                             OneOf(f.value("name"), "strategy.name", "strategy", StrategyNames()));
  const StrategyInfo& info = *FindStrategy(name);
  strategy->set_name(name);
  const bool model_settings = info.uses_model || learner;
  if (model_settings) {
    strategy->set_epsilon(kDefaultEpsilon);
    strategy->set_batch(kDefaultBatch);
    strategy->set_retrain_every(kDefaultRetrainEvery);
    strategy->set_model(info.default_model.empty() ? kDefaultModelKind : info.default_model);
    // A strategy without a model (random, in a replay campaign) scores nothing.
    strategy->set_acquisition(info.default_acquisition.empty() ? "exploit"
                                                               : info.default_acquisition);
  }
  std::map<std::string, double> values;
  for (const SettingSpec& spec : info.settings) values[spec.name] = spec.default_value;
  Fields s;
  if (f.has("settings")) {
    // A strategy that farm-learner runs over the whole campaign (no per-pipeline
    // search) trains on its own schedule and proposes in its own batches.
    const bool per_pipeline = info.make != nullptr;
    std::vector<std::string> keys = {"seed"};
    if (per_pipeline) keys.insert(keys.end(), {"retrain_every", "retrain_growth"});
    if (model_settings && per_pipeline) keys.insert(keys.end(), {"epsilon", "batch", "remeasure"});
    if (model_settings) keys.insert(keys.end(), {"model", "acquisition", "model_from"});
    for (const SettingSpec& spec : info.settings) keys.push_back(spec.name);
    // Every acquisition's settings: one of an acquisition other than the chosen one is
    // refused below, naming the acquisition it belongs to.
    if (model_settings) {
      for (const AcquisitionInfo& acquisition : Acquisitions()) {
        for (const SettingSpec& spec : acquisition.settings) keys.push_back(spec.name);
      }
    }
    const std::string what = "strategy.settings (of strategy '" + name + "')";
    SCHEDFARM_ASSIGN_OR_RETURN(s, Map(f.value("settings"), what, keys));
  }
  if (s.has("seed")) {
    SCHEDFARM_ASSIGN_OR_RETURN(int64_t seed, IntIn(s.value("seed"), "strategy.settings.seed", 0,
                                                   std::numeric_limits<int64_t>::max()));
    strategy->set_seed(static_cast<uint64_t>(seed));
  }
  if (s.has("epsilon")) {
    SCHEDFARM_ASSIGN_OR_RETURN(double epsilon,
                               DoubleIn(s.value("epsilon"), "strategy.settings.epsilon", 0, 1));
    strategy->set_epsilon(epsilon);
  }
  if (s.has("remeasure")) {
    SCHEDFARM_ASSIGN_OR_RETURN(
        double share, DoubleIn(s.value("remeasure"), "strategy.settings.remeasure", 0, 1));
    strategy->set_remeasure(share);
  }
  if (s.has("batch")) {
    SCHEDFARM_ASSIGN_OR_RETURN(int64_t batch,
                               IntIn(s.value("batch"), "strategy.settings.batch", 1, 10000));
    strategy->set_batch(static_cast<int32_t>(batch));
  }
  if (s.has("retrain_every")) {
    SCHEDFARM_ASSIGN_OR_RETURN(int64_t every, IntIn(s.value("retrain_every"),
                                                    "strategy.settings.retrain_every", 1, 1000000));
    strategy->set_retrain_every(static_cast<int32_t>(every));
  }
  if (s.has("retrain_growth")) {
    SCHEDFARM_ASSIGN_OR_RETURN(
        double growth, DoubleIn(s.value("retrain_growth"), "strategy.settings.retrain_growth", 0, 10));
    strategy->set_retrain_growth(growth);
  }
  if (s.has("model")) {
    SCHEDFARM_ASSIGN_OR_RETURN(
        *strategy->mutable_model(),
        OneOf(s.value("model"), "strategy.settings.model", "model kind", ModelKindNames()));
  }
  if (s.has("acquisition")) {
    SCHEDFARM_ASSIGN_OR_RETURN(*strategy->mutable_acquisition(),
                               OneOf(s.value("acquisition"), "strategy.settings.acquisition",
                                     "acquisition", AcquisitionNames()));
  }
  if (s.has("model_from")) {
    SCHEDFARM_ASSIGN_OR_RETURN(*strategy->mutable_model_from(),
                               String(s.value("model_from"), "strategy.settings.model_from"));
    if (strategy->model_from().empty() || strategy->model_from() == "pretrained:") {
      return ErrorAt(s.value("model_from"),
                     "strategy.settings.model_from must name a campaign (its id or name), "
                     "'pretrained' or 'pretrained:NAME'");
    }
    // A named pretrained model must be here (farmctl's side: the coordinator does not
    // read data/models); whether it fits the workers' host is the learner's to check.
    const std::string pretrained = PretrainedNameOf(strategy->model_from());
    if (check_files_ && !pretrained.empty()) {
      const Status exists = CheckPretrainedExists(DefaultPretrainedDir(), pretrained);
      if (!exists.ok()) {
        return ErrorAt(s.value("model_from"), "strategy.settings.model_from: " + exists.message());
      }
    }
  }
  std::vector<SettingSpec> specs = info.settings;
  if (info.uses_model) {
    const AcquisitionInfo& chosen = *FindAcquisition(strategy->acquisition());
    for (const AcquisitionInfo& other : Acquisitions()) {
      for (const SettingSpec& spec : other.settings) {
        if (!s.has(spec.name) || HasSetting(chosen.settings, spec.name)) continue;
        return ErrorAt(s.key(spec.name), "strategy.settings." + spec.name +
                                             " is a setting of acquisition '" + other.name +
                                             "', and the acquisition is '" + chosen.name + "'");
      }
    }
    for (const SettingSpec& spec : chosen.settings) {
      values[spec.name] = spec.default_value;
      specs.push_back(spec);
    }
  }
  for (const SettingSpec& spec : specs) {
    if (!s.has(spec.name)) continue;
    const std::string what = "strategy.settings." + spec.name;
    if (spec.integer) {
      SCHEDFARM_ASSIGN_OR_RETURN(int64_t v, IntIn(s.value(spec.name), what,
                                                  static_cast<int64_t>(spec.min),
                                                  static_cast<int64_t>(spec.max)));
      values[spec.name] = static_cast<double>(v);
    } else {
      SCHEDFARM_ASSIGN_OR_RETURN(values[spec.name],
                                 DoubleIn(s.value(spec.name), what, spec.min, spec.max));
    }
  }
  for (const auto& [setting, value] : values) {
    StrategySetting* out = strategy->add_settings();
    out->set_name(setting);
    out->set_value(value);
  }
  if (model_settings) {
    const AcquisitionInfo& acquisition = *FindAcquisition(strategy->acquisition());
    Status picks = CheckStrategyAcquisition(info, acquisition);
    if (!picks.ok()) {
      return ErrorAt(s.has("acquisition") ? s.value("acquisition") : f.value("name"),
                     picks.message());
    }
    Status usable = CheckStrategyModel(info, *FindModelKind(strategy->model()), acquisition);
    if (!usable.ok()) {
      const YAML::Node& at = s.has("model")         ? s.value("model")
                             : s.has("acquisition") ? s.value("acquisition")
                                                    : f.value("name");
      return ErrorAt(at, usable.message());
    }
  }
  if (info.check != nullptr && pipelines >= 0) {
    std::string at;
    Status consistent = info.check(*strategy, pipelines, &at);
    if (!consistent.ok()) {
      const YAML::Node& node = s.has(at) ? s.value(at) : f.value("name");
      return ErrorAt(node, "strategy.settings: " + consistent.message());
    }
  }
  return Status::Ok();
}

Status Reader::ReadBudget(const YAML::Node& n, Budget* budget) const {
  SCHEDFARM_ASSIGN_OR_RETURN(Fields f, Map(n, "budget", {"benchmarks", "wall_time"}));
  if (!f.has("wall_time")) SCHEDFARM_RETURN_IF_ERROR(Require(f, "benchmarks", "budget"));
  if (f.has("benchmarks")) {  // none: only the wall time bounds the campaign
    SCHEDFARM_ASSIGN_OR_RETURN(
        int64_t benchmarks, IntIn(f.value("benchmarks"), "budget.benchmarks", 1, kMaxBenchmarks));
    budget->set_benchmarks(benchmarks);
  }
  if (f.has("wall_time")) {
    SCHEDFARM_ASSIGN_OR_RETURN(double seconds, Duration(f.value("wall_time"), "budget.wall_time"));
    if (seconds <= 0) {
      return ErrorAt(f.value("wall_time"),
                     "budget.wall_time must be positive (leave it out for no limit)");
    }
    budget->set_wall_time_seconds(seconds);
  }
  return Status::Ok();
}

Status Reader::ReadMeasurement(const YAML::Node& n, MeasurementSettings* settings) const {
  // YAML key -> MeasurementSettings field, for errors of ValidateMeasurementSettings.
  static const std::vector<std::pair<std::string, std::string>> kFields = {
      {"samples", "samples"},
      {"min_sample_time", "min_sample_seconds"},
      {"threads", "threads"},
      {"compile_timeout", "compile_timeout_ms"},
      {"run_timeout", "run_timeout_ms"},
      {"target_cv", "target_cv"},
      {"max_samples", "max_samples"},
      {"flush_cache", "flush_cache"}};
  std::vector<std::string> keys;
  for (const auto& [key, field] : kFields) keys.push_back(key);
  SCHEDFARM_ASSIGN_OR_RETURN(Fields f, Map(n, "measurement", keys));
  // Types only here: the limits are ValidateMeasurementSettings's.
  constexpr int64_t kIntMin = std::numeric_limits<int32_t>::min();
  constexpr int64_t kIntMax = std::numeric_limits<int32_t>::max();
  const double kHuge = std::numeric_limits<double>::max();
  if (f.has("samples")) {
    SCHEDFARM_ASSIGN_OR_RETURN(int64_t v,
                               IntIn(f.value("samples"), "measurement.samples", kIntMin, kIntMax));
    settings->set_samples(static_cast<int32_t>(v));
  }
  if (f.has("max_samples")) {
    SCHEDFARM_ASSIGN_OR_RETURN(
        int64_t v, IntIn(f.value("max_samples"), "measurement.max_samples", kIntMin, kIntMax));
    settings->set_max_samples(static_cast<int32_t>(v));
  }
  if (f.has("threads")) {
    SCHEDFARM_ASSIGN_OR_RETURN(int64_t v,
                               IntIn(f.value("threads"), "measurement.threads", kIntMin, kIntMax));
    settings->set_threads(static_cast<int32_t>(v));
  }
  if (f.has("min_sample_time")) {
    SCHEDFARM_ASSIGN_OR_RETURN(double v,
                               Duration(f.value("min_sample_time"), "measurement.min_sample_time"));
    settings->set_min_sample_seconds(v);
  }
  if (f.has("compile_timeout")) {
    SCHEDFARM_ASSIGN_OR_RETURN(double v,
                               Duration(f.value("compile_timeout"), "measurement.compile_timeout"));
    settings->set_compile_timeout_ms(std::llround(v * 1000));
  }
  if (f.has("run_timeout")) {
    SCHEDFARM_ASSIGN_OR_RETURN(double v,
                               Duration(f.value("run_timeout"), "measurement.run_timeout"));
    settings->set_run_timeout_ms(std::llround(v * 1000));
  }
  if (f.has("target_cv")) {
    SCHEDFARM_ASSIGN_OR_RETURN(
        double v, DoubleIn(f.value("target_cv"), "measurement.target_cv", -kHuge, kHuge));
    settings->set_target_cv(v);
  }
  if (f.has("flush_cache")) {
    SCHEDFARM_ASSIGN_OR_RETURN(bool v, Bool(f.value("flush_cache"), "measurement.flush_cache"));
    settings->set_flush_cache(v);
  }
  *settings = WithDefaults(*settings);
  const Status valid = ValidateMeasurementSettings(*settings);
  if (valid.ok()) return Status::Ok();
  // "measurement settings: <field> <why>": point at the YAML key of <field>.
  const std::string prefix = "measurement settings: ";
  std::string why = valid.message();
  if (why.rfind(prefix, 0) == 0) why = why.substr(prefix.size());
  for (const auto& [key, field] : kFields) {
    if (why.rfind(field + " ", 0) != 0) continue;
    const YAML::Node& at = f.has(key) ? f.value(key) : n;
    return ErrorAt(at, "measurement." + key + why.substr(field.size()));
  }
  return ErrorAt(n, "measurement: " + why);
}

Status Reader::ReadWorkers(const YAML::Node& n, WorkerRequirements* workers) const {
  SCHEDFARM_ASSIGN_OR_RETURN(Fields f, Map(n, "workers", {"isa", "min_cores", "labels"}));
  workers->set_min_cores(1);
  if (f.has("isa")) {
    SCHEDFARM_ASSIGN_OR_RETURN(std::vector<std::string> isa,
                               Names(f.value("isa"), "workers.isa", "ISA flag", IsaNames()));
    for (const std::string& flag : isa) workers->add_isa(flag);
  }
  if (f.has("min_cores")) {
    SCHEDFARM_ASSIGN_OR_RETURN(int64_t cores,
                               IntIn(f.value("min_cores"), "workers.min_cores", 1, 4096));
    workers->set_min_cores(static_cast<int32_t>(cores));
  }
  if (f.has("labels")) {
    SCHEDFARM_ASSIGN_OR_RETURN(std::vector<std::string> labels,
                               Names(f.value("labels"), "workers.labels", "label", {}));
    for (const std::string& label : labels) workers->add_labels(label);
  }
  return Status::Ok();
}

Status Reader::ReadReplay(const YAML::Node& n, ReplaySource* replay) const {
  SCHEDFARM_ASSIGN_OR_RETURN(Fields f, Map(n, "replay", {"dataset", "held_out", "split_seed"}));
  SCHEDFARM_RETURN_IF_ERROR(Require(f, "dataset", "replay"));
  SCHEDFARM_ASSIGN_OR_RETURN(*replay->mutable_dataset(),
                             File(f.value("dataset"), "replay.dataset", {".sfds"}));
  replay->set_held_out(kDefaultReplayHeldOut);
  if (f.has("held_out")) {
    SCHEDFARM_ASSIGN_OR_RETURN(double held_out,
                               DoubleIn(f.value("held_out"), "replay.held_out", 0.01, 0.9));
    replay->set_held_out(held_out);
  }
  replay->set_split_seed(kDefaultReplaySplitSeed);
  if (f.has("split_seed")) {
    SCHEDFARM_ASSIGN_OR_RETURN(int64_t seed, IntIn(f.value("split_seed"), "replay.split_seed", 0,
                                                   std::numeric_limits<int64_t>::max()));
    replay->set_split_seed(static_cast<uint64_t>(seed));
  }
  if (!check_files_) return Status::Ok();
  StatusOr<LoadedDataset> dataset = ReadDataset(replay->dataset());
  if (!dataset.ok()) return ErrorAt(f.value("dataset"), "replay.dataset: " + dataset.status().message());
  replay->set_dataset_id(dataset->id);
  StatusOr<PipelineSplit> split =
      SplitByPipeline(dataset->pipeline_ids, replay->split_seed(), replay->held_out());
  if (!split.ok()) return ErrorAt(f.value("dataset"), "replay: " + split.status().message());
  for (const std::string& id : dataset->pipeline_ids) {
    *(split->IsHeldOut(id) ? replay->add_held_out_pipelines() : replay->add_pipeline_ids()) = id;
  }
  return Status::Ok();
}

StatusOr<CampaignConfig> Reader::Read(const std::string& text) {
  SCHEDFARM_ASSIGN_OR_RETURN(YAML::Node root,
                             Load(text, "a campaign needs at least name, pipelines and budget"));
  SCHEDFARM_ASSIGN_OR_RETURN(
      Fields top, Map(root, "campaign",
                      {"name", "pipelines", "replay", "network", "strategy", "budget",
                       "measurement", "baselines", "workers", "templates", "layout", "fusion"}));
  for (const char* key : {"name", "budget"}) {
    SCHEDFARM_RETURN_IF_ERROR(Require(top, key, "campaign"));
  }
  const int sources = top.has("pipelines") + top.has("replay") + top.has("network");
  if (sources != 1) {
    const YAML::Node& at =
        sources == 0 ? root : top.value(top.has("network") ? "network" : "replay");
    return ErrorAt(at, sources == 0
                           ? "campaign needs pipelines (or replay: a recorded dataset, or "
                             "network: a whole network tuned as tasks)"
                           : "a campaign has one of pipelines, replay or network, not several "
                             "(a replay campaign's pipelines are its dataset's, a network "
                             "campaign's are the network's tasks)");
  }
  CampaignConfig config;

  SCHEDFARM_ASSIGN_OR_RETURN(std::string name, String(top.value("name"), "name"));
  const bool name_ok =
      !name.empty() && name.size() <= 100 && std::all_of(name.begin(), name.end(), [](char c) {
        return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-' || c == '.';
      });
  if (!name_ok) {
    return ErrorAt(top.value("name"),
                   "name '" + name + "' must be 1 to 100 letters, digits, '_', '-' or '.'");
  }
  config.set_name(name);

  if (top.has("replay")) {
    SCHEDFARM_RETURN_IF_ERROR(ReadReplay(top.value("replay"), config.mutable_replay()));
  } else if (top.has("network")) {
    SCHEDFARM_RETURN_IF_ERROR(ReadPipeline(top.value("network"), "network", config.mutable_network()));
    if (config.network().has_random()) {
      return ErrorAt(top.value("network"),
                     "network must be one pipeline: zoo, onnx or yaml, not random pipelines");
    }
  } else {
    const YAML::Node& pipelines = top.value("pipelines");
    if (!pipelines.IsSequence() || pipelines.size() == 0) {
      return ErrorAt(pipelines, std::string("pipelines must be a non-empty list, is ") +
                                    (pipelines.IsSequence() ? "empty" : KindName(pipelines)));
    }
    for (size_t i = 0; i < pipelines.size(); ++i) {
      SCHEDFARM_RETURN_IF_ERROR(ReadPipeline(pipelines[i], "pipelines[" + std::to_string(i) + "]",
                                             config.add_pipelines()));
    }
  }

  config.mutable_strategy()->set_name("random");
  // A replay campaign's pipelines are unknown until its dataset is read, a network's
  // until it is split into tasks (-1).
  const int pipeline_count =
      (config.has_replay() && config.replay().pipeline_ids().empty()) || config.has_network()
          ? -1
          : static_cast<int>(CampaignPipelineCount(config));
  const bool learner = config.has_replay() || config.has_network();
  if (top.has("strategy")) {
    SCHEDFARM_RETURN_IF_ERROR(
        ReadStrategy(top.value("strategy"), pipeline_count, learner, config.mutable_strategy()));
  } else if (learner) {  // the default strategy, with the settings farm-learner reads
    SCHEDFARM_RETURN_IF_ERROR(ReadStrategy(YAML::Load("{name: random}"), pipeline_count, learner,
                                           config.mutable_strategy()));
  }
  if (config.has_network() && config.strategy().name() == "value-iteration") {
    return ErrorAt(top.value("strategy"),
                   "strategy value-iteration does not tune networks: it runs over a campaign's "
                   "pipelines as a whole, and a network's tasks take rounds of a per-pipeline "
                   "strategy (random, model-guided, greedy...)");
  }
  SCHEDFARM_RETURN_IF_ERROR(ReadBudget(top.value("budget"), config.mutable_budget()));
  if (top.has("measurement")) {
    SCHEDFARM_RETURN_IF_ERROR(
        ReadMeasurement(top.value("measurement"), config.mutable_measurement()));
  } else {
    *config.mutable_measurement() = WithDefaults(MeasurementSettings());
  }
  if (top.has("baselines")) {
    SCHEDFARM_ASSIGN_OR_RETURN(
        std::vector<std::string> baselines,
        Names(top.value("baselines"), "baselines", "baseline", BaselineNames()));
    for (const std::string& b : baselines) config.add_baselines(b);
  }
  // A replay answers only recorded schedules, and value iteration benchmarks its own
  // plan: neither takes templates.
  const bool templates_apply =
      !config.has_replay() && config.strategy().name() != "value-iteration";
  config.set_templates(templates_apply);
  if (top.has("templates")) {
    SCHEDFARM_ASSIGN_OR_RETURN(bool templates, Bool(top.value("templates"), "templates"));
    if (templates && !templates_apply) {
      return ErrorAt(top.value("templates"),
                     config.has_replay()
                         ? "templates: a replay campaign proposes only its dataset's schedules; "
                           "write templates: false or leave it out"
                         : "templates: value iteration benchmarks its own rounds; write "
                           "templates: false or leave it out");
    }
    config.set_templates(templates);
  }
  if (top.has("layout")) {
    if (!config.has_network()) {
      return ErrorAt(top.value("layout"),
                     "layout: only a network campaign has one (the layout its tasks exchange "
                     "tensors in); leave it out");
    }
    SCHEDFARM_ASSIGN_OR_RETURN(
        std::string layout, OneOf(top.value("layout"), "layout", "layout", BoundaryLayoutNames()));
    config.set_network_layout(*BoundaryLayoutNamed(layout));
  }
  // A network campaign fuses chains of layers into tasks unless told not to.
  if (config.has_network()) config.set_fusion(FUSION_BLOCKS);
  if (top.has("fusion")) {
    if (!config.has_network()) {
      return ErrorAt(top.value("fusion"),
                     "fusion: only a network campaign has one (how its network is cut into "
                     "tasks); leave it out");
    }
    SCHEDFARM_ASSIGN_OR_RETURN(std::string fusion,
                               OneOf(top.value("fusion"), "fusion", "fusion", {"none", "blocks"}));
    config.set_fusion(fusion == "none" ? FUSION_NONE : FUSION_BLOCKS);
  }
  if (top.has("workers")) {
    SCHEDFARM_RETURN_IF_ERROR(ReadWorkers(top.value("workers"), config.mutable_workers()));
  } else {
    config.mutable_workers()->set_min_cores(1);
  }
  return config;
}

}  // namespace

StatusOr<CampaignConfig> ParseCampaignYaml(const std::string& text, const std::string& filename,
                                           bool check_files) {
  if (text.size() > kMaxCampaignFileBytes) {
    return Status::Error(filename + ": " + std::to_string(text.size()) +
                         " bytes; a campaign file is at most " +
                         std::to_string(kMaxCampaignFileBytes >> 20) +
                         " MiB (its pipelines are files of their own)");
  }
  return Reader(filename, check_files).Read(text);
}

StatusOr<CampaignConfig> LoadCampaignFile(const std::string& path) {
  StatusOr<std::string> text = ReadFileBytes(path);
  if (!text.ok()) return text.status().WithContext("campaign file");
  return ParseCampaignYaml(*text, path);
}

int64_t BenchmarkLimit(const Budget& budget) {
  return budget.benchmarks() > 0 ? budget.benchmarks() : kMaxBenchmarks;
}

bool LearnerProposes(const CampaignConfig& config) {
  const StrategyInfo* strategy = FindStrategy(config.strategy().name());
  return config.has_replay() || config.has_network() ||
         (strategy != nullptr && strategy->uses_model);
}

bool WorkerServes(const CampaignConfig& config, const HostFingerprint& host) {
  if (host.replay_dataset() != config.replay().dataset_id()) return false;
  const WorkerRequirements& need = config.workers();
  if (host.cores() < need.min_cores()) return false;
  const auto has = [](const auto& list, const std::string& s) {
    return std::find(list.begin(), list.end(), s) != list.end();
  };
  for (const std::string& isa : need.isa()) {
    if (!has(host.isa_flags(), isa)) return false;
  }
  for (const std::string& label : need.labels()) {
    if (!has(host.labels(), label)) return false;
  }
  return true;
}

std::string CampaignConfigToJson(const CampaignConfig& config) {
  google::protobuf::util::JsonPrintOptions options;
  options.always_print_primitive_fields = true;
  options.preserve_proto_field_names = true;
  std::string json;
  // Printing a well-formed message cannot fail.
  (void)google::protobuf::util::MessageToJsonString(config, &json, options);
  return json;
}

StatusOr<CampaignConfig> CampaignConfigFromJson(const std::string& json) {
  CampaignConfig config;
  const auto status = google::protobuf::util::JsonStringToMessage(json, &config);
  if (!status.ok()) {
    return Status::Error("campaign config JSON: " + std::string(status.message()));
  }
  return config;
}

}  // namespace schedfarm
