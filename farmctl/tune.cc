#include "farmctl/tune.h"

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <sstream>

#include "common/files.h"
#include "common/text.h"
#include "farmctl/local.h"
#include "pipeline/yaml_reader.h"
#include "pipeline/zoo.h"

namespace schedfarm {
namespace {

namespace fs = std::filesystem;

// The campaign's `network` item for MODEL.
std::string NetworkItem(const std::string& model) {
  if (EndsWith(model, ".onnx")) return "{onnx: {path: '" + fs::absolute(model).string() + "'}}";
  if (EndsWith(model, ".yaml") || EndsWith(model, ".yml")) {
    return "{yaml: {path: '" + fs::absolute(model).string() + "'}}";
  }
  const std::string block = model.rfind("zoo:", 0) == 0 ? model.substr(4) : model;
  return "{zoo: {block: '" + block + "'}}";
}

// MODEL as the user typed it: an existing .onnx or .yaml file, or a zoo block. Checked
// before the campaign file is written, so that the error names the argument rather
// than a place in a file the user never wrote.
Status CheckModelArgument(const std::string& model) {
  const bool file = EndsWith(model, ".onnx") || EndsWith(model, ".yaml") || EndsWith(model, ".yml");
  if (file) {
    std::error_code error;
    if (!fs::is_regular_file(model, error)) {
      return Status::Error("MODEL '" + model + "': no such file (looked at " +
                           fs::absolute(model).string() + ")");
    }
    return Status::Ok();
  }
  const std::string block = model.rfind("zoo:", 0) == 0 ? model.substr(4) : model;
  const std::vector<std::string> blocks = ZooNames();
  if (std::find(blocks.begin(), blocks.end(), block) == blocks.end()) {
    return Status::Error("MODEL '" + model +
                         "' is neither an .onnx or .yaml file nor a zoo block (" +
                         NearMissHint(block, blocks, "zoo blocks: ") + ")");
  }
  return Status::Ok();
}

std::string CampaignName(const std::string& model) {
  std::string stem = fs::path(model).stem().string();
  if (stem == "model") stem = fs::path(model).parent_path().filename().string();
  std::string name = "tune-";
  for (char c : stem) name += std::isalnum(static_cast<unsigned char>(c)) ? c : '-';
  return name.substr(0, 100);
}

}  // namespace

std::string TuneCampaignYaml(const TuneOptions& options) {
  std::ostringstream yaml;
  yaml << "# Written by farmctl tune " << options.model << "\n"
       << "name: " << CampaignName(options.model) << "\n"
       << "network: " << NetworkItem(options.model) << "\n"
       << "layout: " << options.layout << "\n"
       << "fusion: " << options.fusion << "\n"
       << "strategy:\n"
       << "  name: model-guided\n"
       << "  settings: {model: gbt, batch: 8, retrain_every: 32, retrain_growth: 0.3"
       << (options.model_from.empty() ? "" : ", model_from: '" + options.model_from + "'") << "}\n"
       << "budget:\n";
  if (options.benchmarks > 0) yaml << "  benchmarks: " << options.benchmarks << "\n";
  if (!options.wall_time.empty()) yaml << "  wall_time: " << options.wall_time << "\n";
  yaml << "measurement:\n"
       << "  threads: " << options.threads << "\n"
       << "  samples: 5\n"
       << "  max_samples: 10\n"
       << "  min_sample_time: 10ms\n"
       << "  compile_timeout: 600s\n"
       << "  run_timeout: 120s\n"
       << "baselines: [";
  for (size_t i = 0; i < options.baselines.size(); ++i) {
    yaml << (i ? ", " : "") << options.baselines[i];
  }
  yaml << "]\n";
  return yaml.str();
}

int RunTune(const TuneOptions& options, const CliStreams& streams) {
  const Status model = CheckModelArgument(options.model);
  if (!model.ok()) {
    streams.err << "farmctl tune: " << model.message() << "\n";
    return kExitInvalidInput;
  }
  std::error_code error;
  fs::create_directories(options.dir, error);
  const std::string file = (fs::path(options.dir) / "tune.yaml").string();
  const Status written = WriteFileAtomically(file, TuneCampaignYaml(options));
  if (error || !written.ok()) {
    streams.err << "farmctl tune: cannot write " << file << ": "
                << (error ? error.message() : written.message()) << "\n";
    return kExitFailed;
  }
  LocalFarmOptions local;
  local.campaign_files = {file};
  local.dir = options.dir;
  return RunLocalFarm(local, streams);
}

}  // namespace schedfarm
