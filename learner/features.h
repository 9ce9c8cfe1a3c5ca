// Per-stage features of a complete or partial schedule, the input of the performance
// models (docs/FEATURES.md; as in the GNN paper of Singh et al. 2021): every stage of
// the pipeline is a node with a schedule-invariant part (what the stage computes and
// how it reads its producers) and a schedule-dependent part (the loop nest the
// schedule gives it); the stage DAG is the graph. Free of Halide and Torch.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "common/status.h"
#include "schedfarm.pb.h"
#include "scheduler/schedule_space.h"

namespace schedfarm {

namespace features_internal {
struct PipelineModel;
}  // namespace features_internal

// The names of the feature columns, versioned: a model stores the schema it was
// trained with and refuses features of another version.
struct FeatureSchema {
  int version = 0;
  std::vector<std::string> invariant_names;
  std::vector<std::string> dependent_names;
};
const FeatureSchema& CurrentFeatureSchema();

// The features of one (partial) schedule of a pipeline. Raw values: normalization
// (log1p, z-scores with training-set statistics) belongs to the models.
struct PipelineFeatures {
  int num_stages = 0;
  std::vector<float> invariant;            // num_stages x invariant_names.size(), row-major
  std::vector<float> dependent;            // num_stages x dependent_names.size(), row-major; zeros
                                           // for stages the partial schedule has not decided
  std::vector<uint8_t> scheduled;          // per stage: 1 when the schedule decides it
  std::vector<std::pair<int, int>> edges;  // producer stage -> consumer stage
  double flops = 0;                        // analytic arithmetic operations of the whole pipeline
  double bytes = 0;  // analytic bytes read and written by all stages, each tensor once
};

// Featurizes schedules of one pipeline. The invariant part and the graph are computed
// once, at construction; Featurize computes the dependent part per schedule.
class Featurizer {
 public:
  explicit Featurizer(const ScheduleSpace& space);

  const ScheduleSpace& space() const { return space_; }
  // The features of `schedule`, which must pass space().CheckMeasured, i.e. be legal
  // or have been legal when it was measured (an error names what is wrong otherwise). `out` is reused: its buffers keep their capacity.
  Status Featurize(const ScheduleSpec& schedule, PipelineFeatures* out) const;
  // The same without the legality check, which costs as much as the rest, for the
  // schedules a search builds from the space's own options.
  // REQUIRES: space().Check(schedule).ok().
  void FeaturizeLegal(const ScheduleSpec& schedule, PipelineFeatures* out) const;

 private:
  const ScheduleSpace& space_;
  // The schedule-free model of every stage (learner/stage_model.h), shared by copies.
  std::shared_ptr<const features_internal::PipelineModel> model_;
  PipelineFeatures invariant_;  // invariant part, edges, flops, bytes
};

}  // namespace schedfarm
