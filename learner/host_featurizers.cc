#include "learner/host_featurizers.h"

#include <sstream>

#include "learner/model_evaluation.h"

namespace schedfarm {
namespace {

// Every field of the target, so that two targets share a space only when equal.
std::string TargetKey(const TargetParams& t) {
  std::ostringstream key;
  key << t.vector_bytes << ' ' << t.cores << ' ' << t.peak_gflops << ' ' << t.bandwidth_gbps << ' '
      << t.l1d_bytes << ' ' << t.l2_bytes << ' ' << t.l3_bytes;
  return key.str();
}

}  // namespace

TargetParams MeasuredTarget(const Measurement& m) {
  return TargetOf(m.host(), m.settings().threads());
}

const Featurizer& HostFeaturizers::For(const PipelineGraph& graph, const TargetParams& target) {
  Entry& entry = entries_[{&graph, TargetKey(target)}];
  if (entry.featurizer == nullptr) {
    entry.space = std::make_unique<ScheduleSpace>(graph, target);
    entry.featurizer = std::make_unique<Featurizer>(*entry.space);
  }
  return *entry.featurizer;
}

StatusOr<Sample> HostFeaturizers::SampleOf(const PipelineGraph& graph, const Measurement& m) {
  return schedfarm::SampleOf(m, For(graph, MeasuredTarget(m)));
}

}  // namespace schedfarm
