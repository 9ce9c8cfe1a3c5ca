// The featurizers of pipelines on the hosts that measured them: a measurement is
// featurized in the schedule space of its own host at its own threads
// (MeasuredTarget), so that its features describe the machine its time was taken on.
// One space per pipeline and host description, made on first use.
#pragma once

#include <map>
#include <memory>
#include <string>

#include "common/status.h"
#include "learner/features.h"
#include "learner/model.h"
#include "pipeline/graph.h"
#include "scheduler/target.h"

namespace schedfarm {

// The target a measurement ran on: its host's, at the threads it ran with.
TargetParams MeasuredTarget(const Measurement& m);

class HostFeaturizers {
 public:
  // The featurizer of `graph`'s schedules on `target`. `graph` must outlive this.
  const Featurizer& For(const PipelineGraph& graph, const TargetParams& target);
  // The sample of `m`, a measurement of `graph`, featurized on MeasuredTarget(m).
  StatusOr<Sample> SampleOf(const PipelineGraph& graph, const Measurement& m);

 private:
  struct Entry {
    std::unique_ptr<ScheduleSpace> space;
    std::unique_ptr<Featurizer> featurizer;
  };
  std::map<std::pair<const PipelineGraph*, std::string>, Entry> entries_;  // by graph, target
};

}  // namespace schedfarm
