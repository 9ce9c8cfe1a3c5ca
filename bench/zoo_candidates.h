// The candidate stream of the worker benchmarks: random complete schedules of six zoo
// blocks, in turn, with fixed seeds (the same stream in every run). The blocks are
// scaled down (spatial size x `spatial_scale`, channels x 0.5) because random
// schedules can recompute a lot: at full size a few of them run for seconds.
#pragma once

#include <string>
#include <vector>

#include "pipeline/graph.h"
#include "pipeline/spec.h"
#include "pipeline/zoo.h"
#include "scheduler/schedule_space.h"

namespace schedfarm {

struct BenchCandidate {
  std::string name;  // "<block>#<seed>"
  PipelineSpec pipeline;
  std::string pipeline_id;
  ScheduleSpec schedule;
};

inline std::vector<BenchCandidate> ZooCandidates(int count, double spatial_scale = 0.25,
                                                 uint64_t first_seed = 1000) {
  const std::vector<std::string> blocks = {"resnet18_basic",  "mobilenetv2_inverted_residual",
                                           "squeezenet_fire", "wavenet_residual",
                                           "shufflenet_unit", "mnasnet_block"};
  ZooOptions options;
  options.spatial_scale = spatial_scale;
  options.channel_scale = 0.5;
  std::vector<BenchCandidate> candidates;
  for (int i = 0; i < count; ++i) {
    BenchCandidate c;
    const std::string& block = blocks[i % blocks.size()];
    const uint64_t seed = first_seed + i;
    c.name = block + "#" + std::to_string(seed);
    c.pipeline = MakeZooBlock(block, options).value();
    const PipelineGraph graph = PipelineGraph::Build(c.pipeline).value();
    c.pipeline_id = PipelineId(graph);
    c.schedule = ScheduleSpace(graph).RandomSchedule(seed);
    candidates.push_back(std::move(c));
  }
  return candidates;
}

}  // namespace schedfarm
