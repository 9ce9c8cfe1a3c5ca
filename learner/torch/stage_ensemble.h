// Internal to learner/torch/: what the models over normalized stage features share
// (the GCN kinds, GraphSAGE and the BiLSTM): their options, their members, the
// normalization statistics and the time scale, saved and loaded one way. A model
// says how to check its options and how to make one member's network.
#pragma once

#include <torch/torch.h>

#include <string>
#include <utility>
#include <vector>

#include "common/status.h"
#include "learner/features.h"
#include "learner/torch/ensemble.h"
#include "learner/torch/stage_tensors.h"

namespace schedfarm {
namespace torch_models {

template <typename Options, typename Net>
class StageEnsembleModel : public TorchEnsembleModel {
 public:
  StageEnsembleModel(const Options& options, const FeatureSchema& schema)
      : TorchEnsembleModel(schema), options_(options) {}

  const Options& options() const { return options_; }
  // The trained state, for the TorchScript export.
  const std::vector<Net>& members() const { return members_; }
  const StageStats& stats() const { return stats_; }
  double time_scale() const { return time_scale_; }

 protected:
  // An error naming the first option out of its range.
  virtual Status CheckOptions(const Options& options) const = 0;
  // One member's network, untrained, for `options`.
  virtual Net NewNet(const Options& options) const = 0;

  int default_ensemble() const override { return options_.ensemble; }
  int default_epochs() const override { return options_.epochs; }

  void SaveBody(torch::serialize::OutputArchive& archive) const final {
    WriteOptions(archive, options_);
    archive.write("time_scale", c10::IValue(time_scale_));
    stats_.Write(archive);
    WriteMembers(archive, members_);
  }

  Status LoadBody(torch::serialize::InputArchive& archive) final {
    SCHEDFARM_ASSIGN_OR_RETURN(Options options, ReadOptions<Options>(archive));
    SCHEDFARM_RETURN_IF_ERROR(CheckOptions(options));
    SCHEDFARM_ASSIGN_OR_RETURN(double time_scale, ReadDouble(archive, "time_scale"));
    SCHEDFARM_ASSIGN_OR_RETURN(StageStats stats,
                               StageStats::Read(archive, invariant_columns(), dependent_columns()));
    SCHEDFARM_ASSIGN_OR_RETURN(std::vector<Net> members,
                               ReadMembers<Net>(archive, [&] { return NewNet(options); }));
    options_ = options;
    members_ = std::move(members);
    stats_ = stats;
    time_scale_ = time_scale;
    return Status::Ok();
  }

  Options options_;
  std::vector<Net> members_;
  StageStats stats_;
  double time_scale_ = 1;  // seconds per unit of the networks' runtime output
};

}  // namespace torch_models
}  // namespace schedfarm
