#include "farmctl/commands.h"

#include <string>

#include "common/flags.h"
#include "common/log.h"
#include "farmctl/local.h"
#include "farmctl/render.h"
#include "farmctl/runner.h"
#include "farmctl/tune.h"
#include "pipeline/spec.h"
#include "protocol/security.h"
#include "scheduler/autoscheduler_names.h"

namespace schedfarm {

int RunWorkers(Runner& r) {
  ClientRequest request;
  if (r.inv().Has("--clear")) {
    const std::string worker = r.inv().Get("--clear");
    if (worker.empty()) return r.Fail(kExitUsage, "workers: --clear needs a worker id");
    request.mutable_clear_worker()->set_worker_id(worker);
    int code = kExitOk;
    const auto reply = r.Call(request, &ClientReply::has_workers, "workers --clear", &code);
    if (!reply) return code;
    return Print(r, *reply, "cleared " + worker + ": its results count again\n");
  }
  request.mutable_workers();
  int code = kExitOk;
  const auto reply = r.Call(request, &ClientReply::has_workers, "workers", &code);
  if (!reply) return code;
  return Print(r, *reply, RenderWorkers(reply->workers(), UnixMillis()));
}

int RunKeygen(Runner& r) {
  const std::string& path = r.inv().args[0];
  const CurveKeyPair keys = GenerateCurveKeyPair();
  Status written = WriteKeyPair(keys, path);
  if (!written.ok()) return r.Fail(kExitFailed, "keygen: " + written.message());
  r.out() << "wrote " << path << ".key (secret, mode 0600) and " << path << ".pub (public key "
          << keys.public_key << ")\n";
  return kExitOk;
}

int RunLocal(Runner& r) {
  LocalFarmOptions options;
  options.campaign_files = r.inv().args;
  options.dir = r.inv().Get("--dir", options.dir);
  if (r.inv().Has("--workers")) {
    StatusOr<int> workers = ParsePositiveInt("--workers", r.inv().Get("--workers"));
    if (!workers.ok()) return r.Fail(kExitUsage, workers.status().message());
    options.workers = *workers;
  }
  return RunLocalFarm(options, r.io());
}

int RunTuneCommand(Runner& r) {
  TuneOptions options;
  options.model = r.inv().args[0];
  options.dir = r.inv().Get("--dir", options.dir);
  if (r.inv().Has("--budget")) {
    StatusOr<int> budget = ParsePositiveInt("--budget", r.inv().Get("--budget"));
    if (!budget.ok()) return r.Fail(kExitUsage, budget.status().message());
    options.benchmarks = *budget;
  }
  if (r.inv().Has("--time")) {
    options.wall_time = r.inv().Get("--time");
    const StatusOr<double> seconds = ParsePositiveDuration("--time", options.wall_time, "30m");
    if (!seconds.ok()) return r.Fail(kExitUsage, seconds.status().message());
  }
  if (options.benchmarks == 0 && options.wall_time.empty()) options.wall_time = "30m";
  if (r.inv().Has("--baselines")) {
    options.baselines.clear();
    for (const std::string& name : SplitFlagList(r.inv().Get("--baselines"))) {
      if (name.empty()) continue;
      if (!IsBaselineName(name)) {
        std::string known;
        for (const std::string& b : BaselineNames()) known += (known.empty() ? "" : ", ") + b;
        return r.Fail(kExitUsage,
                      "--baselines: unknown baseline '" + name + "' (known: " + known + ")");
      }
      options.baselines.push_back(name);
    }
  }
  if (r.inv().Has("--threads")) {
    StatusOr<int> threads = ParsePositiveInt("--threads", r.inv().Get("--threads"));
    if (!threads.ok()) return r.Fail(kExitUsage, threads.status().message());
    options.threads = *threads;
  }
  options.layout = r.inv().Get("--layout", options.layout);
  if (!BoundaryLayoutNamed(options.layout)) {
    return r.Fail(kExitUsage,
                  "--layout '" + options.layout + "' is not a layout (nchw or channels_last)");
  }
  options.fusion = r.inv().Get("--fusion", options.fusion);
  if (options.fusion != "blocks" && options.fusion != "none") {
    return r.Fail(kExitUsage, "--fusion '" + options.fusion + "' is not blocks or none");
  }
  options.model_from = r.inv().Get("--model-from", options.model_from);
  if (options.model_from.empty()) return r.Fail(kExitUsage, "--model-from needs a value");
  if (options.model_from == "none") options.model_from.clear();
  return RunTune(options, r.io());
}

}  // namespace schedfarm
