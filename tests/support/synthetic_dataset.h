// A small dataset for tests of the dataset file, the replay worker and replay
// campaigns: random pipelines, random schedules of each, and made-up runtimes (a
// schedule's runtime is a fixed function of its hash), on a made-up host. Not a
// measurement of anything: the real dataset is in data/datasets/.
#pragma once

#include <cstdint>
#include <set>
#include <stdexcept>
#include <string>
#include <vector>

#include "dataset/dataset.h"
#include "pipeline/graph.h"
#include "pipeline/random_pipeline.h"
#include "pipeline/spec.h"
#include "scheduler/schedule_space.h"

namespace schedfarm::testing_support {

inline HostFingerprint SyntheticHost() {
  HostFingerprint host;
  host.set_cpu_model("Test CPU 9000");
  host.set_cores(2);
  host.set_halide_target("x86-64-linux-avx2");
  host.add_isa_flags("avx2");
  return host;
}

// A made-up median runtime in [1 ms, 100 ms) from the schedule's hash.
inline double SyntheticSeconds(const std::string& hash) {
  return 0.001 * (1 + static_cast<double>(std::stoull(hash.substr(0, 8), nullptr, 16) % 99000) /
                          1000.0);
}

// `pipelines` random pipelines (seeds 1..pipelines) with `schedules` distinct random
// schedules each, all OK, taken on SyntheticHost(), as one campaign part; the first
// schedule of the first pipeline is measured twice (the second record 10% slower).
inline Dataset SyntheticDataset(int pipelines, int schedules) {
  Campaign campaign;
  campaign.set_id("synthetic-00000000");
  campaign.set_name("synthetic");
  campaign.set_yaml_source("name: synthetic\n");
  std::vector<PipelineSpec> specs;
  std::vector<Measurement> measurements;
  RandomPipelineOptions options;
  options.max_ops = 4;
  options.max_elements = 1 << 14;
  for (int p = 0; p < pipelines; ++p) {
    PipelineSpec spec = RandomPipeline(static_cast<uint64_t>(p + 1), options).value();
    spec.set_name("random_" + std::to_string(p + 1));
    const PipelineGraph graph = PipelineGraph::Build(spec).value();
    const ScheduleSpace space(graph);
    specs.push_back(spec);
    std::set<std::string> hashes;
    for (uint64_t seed = 0; static_cast<int>(hashes.size()) < schedules && seed < 1000; ++seed) {
      ScheduleSpec schedule = space.RandomSchedule(MixSeed(7, seed));
      const std::string hash = ScheduleHash(space, schedule);
      if (!hashes.insert(hash).second) continue;
      const int records = (p == 0 && hashes.size() == 1) ? 2 : 1;
      for (int r = 0; r < records; ++r) {
        Measurement m;
        Candidate& c = *m.mutable_candidate();
        c.set_campaign(campaign.id());
        c.set_pipeline_id(PipelineId(graph));
        schedule.set_pipeline_id(PipelineId(graph));
        *c.mutable_schedule() = schedule;
        c.set_schedule_hash(hash);
        c.set_origin("random");
        *m.mutable_host() = SyntheticHost();
        m.mutable_host()->set_worker_id("synthetic-worker");
        m.set_status(OK);
        const double seconds = SyntheticSeconds(hash) * (r == 0 ? 1.0 : 1.1);
        for (int s = 0; s < 5; ++s) m.add_samples_seconds(seconds);
        m.mutable_stats()->set_min_seconds(seconds);
        m.mutable_stats()->set_median_seconds(seconds);
        m.mutable_stats()->set_mean_seconds(seconds);
        m.set_compile_seconds(0.5);
        m.set_lease_id("lease-" + std::to_string(measurements.size() + 1));
        m.set_finished_unix_ms(1700000000000 + static_cast<int64_t>(measurements.size()));
        measurements.push_back(std::move(m));
      }
    }
  }
  Dataset dataset;
  const Status added = AddDatasetPart(campaign, specs, measurements, 1700000100000, &dataset);
  if (!added.ok()) throw std::runtime_error(added.message());
  return dataset;
}

}  // namespace schedfarm::testing_support
