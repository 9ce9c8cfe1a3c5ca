// Speed of the schedule space on the zoo blocks, one core: random complete schedules
// per second, sampled stage decisions per second (through RandomCompletion, and
// through the public SampleOption on each prefix), option counts per second and
// enumerated options per second, with the ratio against the target of 100,000
// sampled stage decisions per second. Times are the thread's CPU time, so the figures
// hold on a loaded machine. Prints figures only; asserts nothing.
#include <time.h>

#include <algorithm>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "pipeline/graph.h"
#include "pipeline/zoo.h"
#include "scheduler/schedule_space.h"

namespace schedfarm {
namespace {

constexpr double kTargetDecisionsPerSecond = 100000;
constexpr double kSecondsPerMeasure = 0.4;

// CPU seconds of this thread.
double Now() {
  timespec t;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return static_cast<double>(t.tv_sec) + 1e-9 * static_cast<double>(t.tv_nsec);
}

// Runs `step` (which returns the work units it did) until kSecondsPerMeasure has passed;
// returns units per second.
template <typename Step>
double Rate(Step step) {
  const double start = Now();
  double units = 0;
  double elapsed = 0;
  do {
    units += step();
    elapsed = Now() - start;
  } while (elapsed < kSecondsPerMeasure);
  return units / elapsed;
}

int Main() {
  std::printf("%-30s %6s %9s %12s %12s %12s %12s %12s\n", "block", "stages", "build ms", "sched/s",
              "decisions/s", "sample/s", "count/s", "enum opt/s");
  double sum_decisions = 0, sum_sample = 0, sum_enum = 0;
  double min_decisions = 1e30, min_sample = 1e30;
  int blocks = 0;
  int64_t empty_steps = 0;  // decisions without options: must stay 0
  for (const std::string& name : ZooNames()) {
    StatusOr<PipelineSpec> spec = MakeZooBlock(name);
    if (!spec.ok()) {
      std::printf("%s: %s\n", name.c_str(), spec.status().ToString().c_str());
      return 1;
    }
    StatusOr<PipelineGraph> graph = PipelineGraph::Build(spec.value());
    if (!graph.ok()) {
      std::printf("%s: %s\n", name.c_str(), graph.status().ToString().c_str());
      return 1;
    }
    const double t0 = Now();
    const ScheduleSpace space(graph.value());
    const double build_ms = 1e3 * (Now() - t0);
    const int stages = graph->num_stages();

    // Whole random schedules (RandomCompletion keeps its resolved prefix).
    uint64_t seed = 0;
    const double schedules = Rate([&] {
      space.RandomSchedule(seed++);
      return 1.0;
    });
    const double decisions = schedules * stages;

    // SampleOption and CountOptions on the prefixes of a fixed random schedule.
    const ScheduleSpec full = space.RandomSchedule(12345);
    std::vector<ScheduleSpec> prefixes;
    ScheduleSpec partial = space.Empty();
    for (int i = 0; i < stages; ++i) {
      prefixes.push_back(partial);
      *partial.add_stages() = full.stages(i);
    }
    SpaceRng rng(1);
    const double samples = Rate([&] {
      for (const ScheduleSpec& p : prefixes) space.SampleOption(p, rng);
      return static_cast<double>(prefixes.size());
    });
    const double counts = Rate([&] {
      for (const ScheduleSpec& p : prefixes) {
        if (space.CountOptions(p) < 1) ++empty_steps;
      }
      return static_cast<double>(prefixes.size());
    });

    // Enumeration of the options of the first decision, up to 200,000 per pass.
    const double enumerated = Rate([&] {
      double n = 0;
      space.ForEachOption(prefixes[0], [&](const StageSchedule&) { return ++n < 200000; });
      return n;
    });

    std::printf("%-30s %6d %9.1f %12.0f %12.0f %12.0f %12.0f %12.0f\n", name.c_str(), stages,
                build_ms, schedules, decisions, samples, counts, enumerated);
    sum_decisions += decisions;
    sum_sample += samples;
    sum_enum += enumerated;
    min_decisions = std::min(min_decisions, decisions);
    min_sample = std::min(min_sample, samples);
    ++blocks;
  }
  std::printf(
      "\nmean over %d blocks: %.0f decisions/s in RandomCompletion (%.2fx the %.0f/s "
      "target; slowest block %.2fx), %.0f SampleOption calls/s on prefixes (%.2fx; "
      "slowest %.2fx), %.0f enumerated options/s\n",
      blocks, sum_decisions / blocks, sum_decisions / blocks / kTargetDecisionsPerSecond,
      kTargetDecisionsPerSecond, min_decisions / kTargetDecisionsPerSecond, sum_sample / blocks,
      sum_sample / blocks / kTargetDecisionsPerSecond, min_sample / kTargetDecisionsPerSecond,
      sum_enum / blocks);
  if (empty_steps > 0) std::printf("ERROR: %lld decisions had no option\n", (long long)empty_steps);
  return empty_steps > 0 ? 1 : 0;
}

}  // namespace
}  // namespace schedfarm

int main() { return schedfarm::Main(); }
