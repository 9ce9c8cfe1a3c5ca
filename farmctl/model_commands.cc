#include "farmctl/commands.h"

#include <cstdio>
#include <fstream>
#include <string>

#include "common/files.h"
#include "farmctl/binaries.h"
#include "farmctl/render.h"
#include "farmctl/runner.h"

namespace schedfarm {
namespace {

// `model export`: the newest stored model of the kind (or --version), with its
// weights, written as TorchScript by farm-model-export into OUTPUT.partial, renamed to
// OUTPUT when complete.
int RunModelExport(Runner& r) {
  if (!r.inv().Has("--kind") || !r.inv().Has("--output")) {
    return r.Fail(kExitUsage, "model export: --kind and --output are required");
  }
  const std::string kind = r.inv().Get("--kind");
  const std::string output = r.inv().Get("--output");
  const std::string partial = output + ".partial";
  if (!std::ofstream(partial, std::ios::binary | std::ios::trunc)) {
    return r.Fail(kExitFailed, "model export: cannot write '" + partial + "'");
  }
  const std::string model_file = output + ".model";
  auto fail = [&](int code, const std::string& message) {
    std::remove(partial.c_str());
    std::remove(model_file.c_str());
    return message.empty() ? code : r.Fail(code, message);
  };
  const std::string exporter = FindBinary("farm-model-export", "tools");
  if (exporter.empty()) {
    return fail(kExitFailed,
                "model export: cannot find farm-model-export (set SCHEDFARM_BIN_DIR to the "
                "folder that holds it)");
  }
  ClientRequest request;
  request.mutable_models()->set_campaign(r.inv().args[1]);
  request.mutable_models()->set_kind(kind);
  request.mutable_models()->set_with_weights(true);
  int code = kExitOk;
  const auto reply = r.Call(request, &ClientReply::has_models, "models", &code);
  if (!reply) return fail(code, "");
  const Model* chosen = nullptr;
  for (const Model& model : reply->models().models()) {
    if (!r.inv().Has("--version") || model.version() == r.inv().Get("--version")) {
      chosen = &model;
      break;
    }
  }
  if (chosen == nullptr) {
    return fail(kExitFailed,
                "model export: campaign " + r.inv().args[1] + " has no stored '" + kind +
                    "' model" +
                    (r.inv().Has("--version") ? " of version " + r.inv().Get("--version") : ""));
  }
  if (Status written = WriteFileAtomically(model_file, chosen->SerializeAsString());
      !written.ok()) {
    return fail(kExitFailed, "model export: " + written.message());
  }
  std::string log;
  const int status = RunToEnd(exporter, {model_file, partial}, &log);
  if (status != 0) {
    while (!log.empty() && log.back() == '\n') log.pop_back();
    return fail(kExitFailed, "model export: " + (log.empty() ? "farm-model-export exited with " +
                                                                   std::to_string(status)
                                                             : log));
  }
  std::remove(model_file.c_str());
  if (std::rename(partial.c_str(), output.c_str()) != 0) {
    return fail(kExitFailed, "model export: cannot rename '" + partial + "' to '" + output + "'");
  }
  r.out() << "exported " << chosen->kind() << " model " << chosen->version() << " (feature schema "
          << chosen->feature_schema_version() << ", " << chosen->training_set_size()
          << " training samples) to " << output << " as TorchScript\n";
  return kExitOk;
}

}  // namespace

int RunModel(Runner& r) {
  const std::string& action = r.inv().args[0];
  if (action == "export") return RunModelExport(r);
  if (action != "eval" && action != "list") {
    return r.Fail(kExitUsage, "model: unknown action '" + action + "' (known: eval, list, export)");
  }
  if (action == "eval" && r.inv().Has("--kind")) {
    return r.Fail(kExitUsage, "model eval: --kind is for model list and export");
  }
  for (const char* flag : {"--output", "--version"}) {
    if (r.inv().Has(flag)) {
      return r.Fail(kExitUsage, "model " + action + ": " + flag + " is for model export");
    }
  }
  ClientRequest request;
  request.mutable_models()->set_campaign(r.inv().args[1]);
  if (r.inv().Has("--kind")) request.mutable_models()->set_kind(r.inv().Get("--kind"));
  int code = kExitOk;
  const auto reply = r.Call(request, &ClientReply::has_models, "models", &code);
  if (!reply) return code;
  return Print(
      r, *reply,
      action == "eval" ? RenderModelEval(reply->models()) : RenderModelList(reply->models()));
}

}  // namespace schedfarm
