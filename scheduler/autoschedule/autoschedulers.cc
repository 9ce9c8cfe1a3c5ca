#include "scheduler/autoschedule/autoschedulers.h"

#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <map>
#include <mutex>
#include <optional>
#include <sstream>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "common/caches.h"
#include "common/elapsed.h"
#include "pipeline/halide/jit_target.h"
#include "pipeline/halide/lowering.h"
#include "scheduler/autoschedule/import.h"

namespace schedfarm {
namespace {

// Halide's MachineParams::generic() last-level cache, used when no source knows one.
constexpr uint64_t kGenericCacheBytes = 16ull * 1024 * 1024;

// The plugin of an autoscheduler.
struct Plugin {
  const char* halide;   // the name the plugin registers
  const char* path;     // the plugin of Halide's CMake package (build-time path)
  const char* library;  // its library name, searched on the library path if `path` is gone
};
// In the order of AutoschedulerNames().
constexpr Plugin kPlugins[] = {
    {"Adams2019", SCHEDFARM_ADAMS2019_PLUGIN, "autoschedule_adams2019"},
    {"Li2018", SCHEDFARM_LI2018_PLUGIN, "autoschedule_li2018"},
    {"Mullapudi2016", SCHEDFARM_MULLAPUDI2016_PLUGIN, "autoschedule_mullapudi2016"},
};

// Every autoscheduler run and plugin load holds this lock: they use Halide's and the
// plugins' global state, and the environment.
std::mutex& AutoschedulerMutex() {
  static std::mutex mutex;
  return mutex;
}

StatusOr<const Plugin*> Find(const std::string& name) {
  const std::vector<std::string>& names = AutoschedulerNames();
  std::string known;
  for (size_t i = 0; i < names.size(); ++i) {
    if (name == names[i]) return &kPlugins[i];
    known += (known.empty() ? "" : ", ") + names[i];
  }
  return Status::Error("unknown autoscheduler '" + name + "' (known: " + known + ")");
}

// Loads the plugin once per process. REQUIRES: AutoschedulerMutex() held.
Status LoadPlugin(const Plugin& p) {
  static std::map<std::string, Status> loaded;
  auto it = loaded.find(p.halide);
  if (it != loaded.end()) return it->second;
  const std::string path = p.path;
  Status status;
  try {
    // A path with a '.' is opened as given; a bare name is searched for as lib<name>.so
    // on the library path.
    Halide::load_plugin(access(path.c_str(), R_OK) == 0 ? path : std::string(p.library));
  } catch (const Halide::Error& e) {
    status = Status::Error("cannot load the " + std::string(p.halide) + " autoscheduler (" + path +
                           " or lib" + p.library + ".so): " + e.what());
  }
  loaded.emplace(p.halide, status);
  return status;
}

// Sets environment variables for its lifetime and restores them afterwards.
class ScopedEnv {
 public:
  void Set(const char* name, const std::optional<std::string>& value) {
    const char* old = std::getenv(name);
    saved_.emplace_back(name, old ? std::optional<std::string>(old) : std::nullopt);
    if (value) {
      setenv(name, value->c_str(), 1);
    } else {
      unsetenv(name);
    }
  }
  ~ScopedEnv() {
    for (auto it = saved_.rbegin(); it != saved_.rend(); ++it) {
      if (it->second) {
        setenv(it->first.c_str(), it->second->c_str(), 1);
      } else {
        unsetenv(it->first.c_str());
      }
    }
  }

 private:
  std::vector<std::pair<std::string, std::optional<std::string>>> saved_;
};

int ResolveThreads(int threads) {
  if (threads > 0) return threads;
  const unsigned n = std::thread::hardware_concurrency();
  return n > 0 ? static_cast<int>(n) : 1;
}

}  // namespace

HostMachineParams DetectMachineParams(int threads) {
  HostMachineParams params;
  params.parallelism = ResolveThreads(threads);
  const CacheSize& cache = DetectHostCaches().LastLevel();
  if (cache.bytes > 0) {
    params.last_level_cache_bytes = static_cast<uint64_t>(cache.bytes);
    params.cache_source = cache.source + " (" + std::to_string(cache.bytes >> 10) + " KiB)";
  } else {
    params.last_level_cache_bytes = kGenericCacheBytes;
    params.cache_source = "no cache size known (sysfs, cpuid): Halide's generic 16 MiB";
  }
  return params;
}

std::string MachineParamsString(const HostMachineParams& params) {
  return Halide::MachineParams(params.parallelism, params.last_level_cache_bytes, params.balance)
      .to_string();
}

TargetParams HalideTargetParams(int threads) {
  TargetParams target;
  target.vector_bytes = HostJitTarget().natural_vector_size(Halide::UInt(8));
  target.cores = ResolveThreads(threads);
  return target;
}

StatusOr<HalideAutoscheduleResult> ApplyAutoscheduler(LoweredPipeline& lowered,
                                                      const std::string& autoscheduler,
                                                      const AutoscheduleOptions& options) {
  SCHEDFARM_ASSIGN_OR_RETURN(const Plugin* plugin, Find(autoscheduler));
  if (options.beam_size < 1) {
    return Status::Error("autoscheduler beam size must be >= 1, got " +
                         std::to_string(options.beam_size));
  }
  if (options.threads < 0) {
    return Status::Error("threads must be >= 0, got " + std::to_string(options.threads));
  }
  const HostMachineParams machine = DetectMachineParams(options.threads);
  std::lock_guard<std::mutex> lock(AutoschedulerMutex());
  SCHEDFARM_RETURN_IF_ERROR(LoadPlugin(*plugin));
  ScopedEnv env;
  env.Set("HL_BEAM_SIZE", std::to_string(options.beam_size));
  env.Set("HL_RANDOM_DROPOUT", "100");
  env.Set("HL_SEED", "0");
  for (const char* unset :
       {"HL_NUM_PASSES", "HL_WEIGHTS_DIR", "HL_RANDOMIZE_WEIGHTS", "HL_AUTOSCHEDULE_MEMORY_LIMIT",
        "HL_NO_SUBTILING", "HL_CYOS", "HL_SCHEDULE_FILE", "HL_FEATURE_FILE",
        "HL_PERMIT_FAILED_UNROLL", "HL_DEBUG_AUTOSCHEDULE", "HL_MACHINE_PARAMS"}) {
    env.Set(unset, std::nullopt);
  }
  HalideAutoscheduleResult result;
  try {
    const Halide::Target target = HostJitTarget();
    const Halide::MachineParams params(machine.parallelism, machine.last_level_cache_bytes,
                                       machine.balance);
    const auto start = std::chrono::steady_clock::now();
    Halide::AutoSchedulerResults r = lowered.pipeline.auto_schedule(plugin->halide, target, params);
    result.seconds = SecondsSince(start);
    result.schedule_source = r.schedule_source;
    result.machine_params = params.to_string();
    result.target = target.to_string();
  } catch (const Halide::Error& e) {
    return Status::Error(std::string(plugin->halide) + " failed: " + e.what());
  }
  return result;
}

StatusOr<BaselineResult> RunAutoscheduler(const PipelineGraph& graph,
                                          const std::string& autoscheduler,
                                          const AutoscheduleOptions& options,
                                          const std::vector<HostTensor>& reference_outputs) {
  const std::string where = "pipeline '" + graph.spec().name() + "', " + autoscheduler;
  std::vector<HostTensor> reference = reference_outputs;
  if (reference.empty()) {
    RunOptions once;
    once.timing_samples = 0;
    StatusOr<RunResult> ref = RunReference(graph, once);
    if (!ref.ok()) return ref.status().WithContext(where + ": reference run");
    reference = std::move(ref->outputs);
  }
  if (reference.size() != graph.output_stages().size()) {
    return Status::Error(where + ": " + std::to_string(reference.size()) +
                         " reference outputs for " + std::to_string(graph.output_stages().size()) +
                         " outputs");
  }
  StatusOr<LoweredPipeline> lowered = LowerToHalide(graph);
  if (!lowered.ok()) return lowered.status();
  StatusOr<HalideAutoscheduleResult> scheduled =
      ApplyAutoscheduler(*lowered, autoscheduler, options);
  if (!scheduled.ok()) return scheduled.status().WithContext(where);

  BaselineResult result;
  result.autoscheduler = autoscheduler;
  result.machine_params = scheduled->machine_params;
  result.target = scheduled->target;
  result.schedule_source = scheduled->schedule_source;
  result.autoschedule_seconds = scheduled->seconds;
  RunOptions run = options.run;
  run.threads = ResolveThreads(options.threads);
  run.input_buffers = InputBuffers::kCoverScheduleReads;
  StatusOr<RunResult> ran = RunScheduled(graph, *lowered, run);
  if (ran.ok()) {
    result.run = std::move(*ran);
    result.correct = true;
    for (size_t i = 0; i < reference.size(); ++i) {
      const Comparison c =
          CompareTensors(result.run.outputs[i], reference[i], DefaultTolerance(reference[i].dtype));
      if (!c.match) {
        result.correct = false;
        result.mismatch =
            "output '" + graph.spec().outputs(static_cast<int>(i)) + "': " + c.message;
        break;
      }
    }
  } else {
    result.run_error = ran.status().message();
  }
  if (options.import_schedule) {
    StatusOr<ImportedSchedule> imported =
        ImportHalideSchedule(graph, *lowered, HalideTargetParams(options.threads));
    if (imported.ok()) {
      result.imported = std::move(*imported);
    } else {
      result.import_error = imported.status().message();
    }
  }
  return result;
}

StatusOr<ImportedSchedule> ImportAutoschedule(const PipelineGraph& graph,
                                              const std::string& autoscheduler,
                                              const AutoscheduleOptions& options,
                                              std::string* schedule_source) {
  StatusOr<LoweredPipeline> lowered = LowerToHalide(graph);
  if (!lowered.ok()) return lowered.status();
  StatusOr<HalideAutoscheduleResult> scheduled =
      ApplyAutoscheduler(*lowered, autoscheduler, options);
  if (!scheduled.ok()) {
    return scheduled.status().WithContext("pipeline '" + graph.spec().name() + "'");
  }
  if (schedule_source != nullptr) *schedule_source = scheduled->schedule_source;
  return ImportHalideSchedule(graph, *lowered, HalideTargetParams(options.threads));
}

bool ImportedSchedule::exact_loop_nest() const {
  for (const LeftOut& l : left_out) {
    if (l.changes_loop_nest) return false;
  }
  return true;
}

std::string DescribeLeftOut(const std::vector<LeftOut>& left_out) {
  std::ostringstream out;
  for (const LeftOut& l : left_out) {
    out << l.stage << ": " << l.directive << ": " << l.why
        << (l.changes_loop_nest ? "" : " (loop nest unchanged)") << "\n";
  }
  return out.str();
}

}  // namespace schedfarm
