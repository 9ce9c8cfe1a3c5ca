// Featurizing speed on one core: stage-feature vectors per second (Featurizer::Featurize
// over random complete schedules of every zoo block, each schedule's stages counted),
// with the ratio to the target of 200,000 per second, and the same for partial
// schedules (random prefixes, as a search featurizes its candidate states). The share
// of the time spent in ScheduleSpace::Check, which Featurize runs first, is printed
// beside. Times are the thread's CPU time. Prints figures only; asserts nothing.
#include <time.h>

#include <algorithm>
#include <cstdio>
#include <string>
#include <vector>

#include "learner/features.h"
#include "pipeline/graph.h"
#include "pipeline/zoo.h"
#include "scheduler/schedule_space.h"

namespace schedfarm {
namespace {

constexpr double kTargetVectorsPerSecond = 200000;
constexpr double kSecondsPerMeasure = 0.5;
constexpr int kSchedules = 64;

double Now() {
  timespec t;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return static_cast<double>(t.tv_sec) + 1e-9 * static_cast<double>(t.tv_nsec);
}

// Runs `step` (which returns the units it did) for kSecondsPerMeasure; units per second.
template <typename Step>
double Rate(Step step) {
  const double start = Now();
  double units = 0, elapsed = 0;
  do {
    units += step();
    elapsed = Now() - start;
  } while (elapsed < kSecondsPerMeasure);
  return units / elapsed;
}

int Main() {
  std::printf("%-30s %6s %8s %14s %14s %10s\n", "block", "stages", "ctor ms", "complete/s",
              "partial/s", "check %");
  double sum_complete = 0, sum_partial = 0, min_complete = 1e30;
  int blocks = 0;
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
    const ScheduleSpace space(graph.value());
    const double t0 = Now();
    const Featurizer featurizer(space);
    const double ctor_ms = 1e3 * (Now() - t0);
    std::vector<ScheduleSpec> complete, partial;
    double complete_stages = 0, partial_stages = 0;
    for (int k = 0; k < kSchedules; ++k) {
      complete.push_back(space.RandomSchedule(1000 + k));
      complete_stages += complete.back().stages_size();
      ScheduleSpec prefix = complete.back();
      const int keep = k % (graph->num_stages() + 1);
      prefix.mutable_stages()->DeleteSubrange(keep, prefix.stages_size() - keep);
      prefix.set_partial(keep < graph->num_stages());
      partial_stages += keep;
      partial.push_back(std::move(prefix));
    }
    PipelineFeatures features;
    int failures = 0;
    auto featurize_all = [&](const std::vector<ScheduleSpec>& specs, double stages) {
      for (const ScheduleSpec& s : specs) failures += !featurizer.Featurize(s, &features).ok();
      return stages;
    };
    const double complete_rate = Rate([&] { return featurize_all(complete, complete_stages); });
    const double partial_rate = Rate([&] { return featurize_all(partial, partial_stages); });
    const double check_rate = Rate([&] {
      for (const ScheduleSpec& s : complete) failures += !space.Check(s).ok();
      return complete_stages;
    });
    if (failures > 0) {
      std::printf("%s: %d schedules failed to featurize\n", name.c_str(), failures);
      return 1;
    }
    std::printf("%-30s %6d %8.2f %14.0f %14.0f %9.0f%%\n", name.c_str(), graph->num_stages(),
                ctor_ms, complete_rate, partial_rate, 100 * complete_rate / check_rate);
    sum_complete += complete_rate;
    sum_partial += partial_rate;
    min_complete = std::min(min_complete, complete_rate);
    ++blocks;
  }
  std::printf(
      "\nmean over %d blocks: %.0f stage-feature vectors/s on complete schedules (%.2fx the "
      "%.0f/s target; slowest block %.2fx), %.0f/s on partial schedules (%.2fx)\n",
      blocks, sum_complete / blocks, sum_complete / blocks / kTargetVectorsPerSecond,
      kTargetVectorsPerSecond, min_complete / kTargetVectorsPerSecond, sum_partial / blocks,
      sum_partial / blocks / kTargetVectorsPerSecond);
  return 0;
}

}  // namespace
}  // namespace schedfarm

int main() { return schedfarm::Main(); }
