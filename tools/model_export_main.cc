// farm-model-export: one stored model (a Model message, the coordinator's record of a
// trained model with its weights) written as a TorchScript module with its feature
// schema (docs/MODELS.md). `farmctl model export` fetches the model from the
// coordinator and runs this program, so that farmctl itself links no Torch.
//
// Usage: farm-model-export MODEL_FILE OUTPUT
// Exit codes: 0 written, 1 the model does not load or the module cannot be written,
// 2 usage.
#include <cstdio>
#include <memory>
#include <string>

#include "common/files.h"
#include "learner/features.h"
#include "learner/kinds/model_kinds.h"
#include "learner/torch/torch_models.h"
#include "schedfarm.pb.h"

namespace schedfarm {
namespace {

int Fail(const std::string& message) {
  std::fprintf(stderr, "farm-model-export: %s\n", message.c_str());
  return 1;
}

int Run(const std::string& model_file, const std::string& output) {
  StatusOr<std::string> bytes = ReadFileBytes(model_file);
  if (!bytes.ok()) return Fail(bytes.status().message());
  Model stored;
  if (!stored.ParseFromString(*bytes)) {
    return Fail("'" + model_file + "' is not a stored model (a Model message)");
  }
  const std::string what = "model " + stored.version() + " (kind '" + stored.kind() + "')";
  if (stored.feature_schema_version() != CurrentFeatureSchema().version) {
    return Fail(what + " was trained on feature schema version " +
                std::to_string(stored.feature_schema_version()) + "; this build reads version " +
                std::to_string(CurrentFeatureSchema().version));
  }
  StatusOr<const ModelMaker*> maker = ModelMakerNamed(stored.kind());
  if (!maker.ok()) return Fail(what + ": " + maker.status().message());
  if (!(*maker)->exports_torchscript) {
    return Fail(what + " has no TorchScript export (a kind that is not a Torch network)");
  }
  const std::unique_ptr<PerformanceModel> model = (*maker)->make();
  if (Status loaded = model->Load(stored.weights()); !loaded.ok()) {
    return Fail(what + " does not load: " + loaded.message());
  }
  if (Status exported = ExportTorchScript(*model, output); !exported.ok()) {
    return Fail(what + ": " + exported.message());
  }
  return 0;
}

}  // namespace
}  // namespace schedfarm

int main(int argc, char** argv) {
  if (argc != 3 || std::string(argv[1]) == "--help") {
    std::fprintf(stderr, "usage: farm-model-export MODEL_FILE OUTPUT\n");
    return 2;
  }
  return schedfarm::Run(argv[1], argv[2]);
}
