#include "learner/torch/bilstm.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <memory>
#include <numeric>
#include <random>
#include <utility>

namespace schedfarm {
namespace torch_models {
namespace {

// Schedules per forward pass in Predict (of one stage count).
constexpr int64_t kPredictBatch = 256;

// The normalized stage inputs of a set of schedules [stages, inputs], schedules after
// one another, and where each schedule's stages begin.
struct StageRows {
  torch::Tensor rows;
  std::vector<int64_t> first_stage;  // per schedule, and the total at the end
};

StageRows Rows(const std::vector<const PipelineFeatures*>& features,
               const StackedStages& stacked, const StageStats& stats) {
  StageRows out;
  out.rows = StageInputs(stacked, stats);
  out.first_stage.push_back(0);
  for (const PipelineFeatures* f : features) {
    out.first_stage.push_back(out.first_stage.back() + f->num_stages);
  }
  return out;
}

// The schedules `indices`, all with the same stage count, as [schedules, stages, inputs].
torch::Tensor Gather(const StageRows& rows, const std::vector<int64_t>& indices) {
  const int64_t stages = rows.first_stage[indices[0] + 1] - rows.first_stage[indices[0]];
  std::vector<int64_t> row_index;
  row_index.reserve(indices.size() * stages);
  for (int64_t i : indices) {
    for (int64_t s = 0; s < stages; ++s) row_index.push_back(rows.first_stage[i] + s);
  }
  return rows.rows.index_select(0, LongTensor(row_index))
      .view({static_cast<int64_t>(indices.size()), stages, rows.rows.size(1)});
}

// The schedules by stage count (the LSTM runs one stage count per batch, unpadded).
std::map<int, std::vector<int64_t>> ByStageCount(
    const std::vector<const PipelineFeatures*>& features) {
  std::map<int, std::vector<int64_t>> groups;
  for (size_t i = 0; i < features.size(); ++i) groups[features[i]->num_stages].push_back(i);
  return groups;
}

}  // namespace

torch::Tensor StageInputs(const StackedStages& stacked, const StageStats& stats) {
  return torch::cat({stats.Invariant(stacked), stats.Dependent(stacked)}, 1);
}

BilstmNetImpl::BilstmNetImpl(int64_t inputs, int64_t embedding, int64_t latent) {
  embed = register_module("embed", torch::nn::Linear(inputs, embedding));
  lstm = register_module(
      "lstm", torch::nn::LSTM(
                  torch::nn::LSTMOptions(embedding, embedding / 2).batch_first(true).bidirectional(
                      true)));
  to_latent = register_module("to_latent", torch::nn::Linear(embedding, latent));
  readout = register_module("readout", torch::nn::Linear(latent, 1));
}

torch::Tensor BilstmNetImpl::forward(const torch::Tensor& stages) {
  const int64_t schedules = stages.size(0), count = stages.size(1);
  const torch::Tensor e =
      torch::relu(Dense(embed, stages.reshape({schedules * count, stages.size(2)})))
          .view({schedules, count, -1});
  const torch::Tensor h = std::get<0>(lstm->forward(e));  // [schedules, stages, embedding]
  const torch::Tensor z =
      torch::relu(Dense(to_latent, (h * e).reshape({schedules * count, e.size(2)})))
          .view({schedules, count, -1});
  return Dense(readout, z.sum(1)).squeeze(1);
}

Status BilstmModel::CheckOptions(const BilstmOptions& o) const {
  if (o.embedding < 2 || o.embedding % 2 != 0) {
    return Status::Error("embedding must be even and at least 2, got " +
                         std::to_string(o.embedding));
  }
  if (o.latent < 1 || o.batch_size < 1 || o.epochs < 1 || o.ensemble < 1) {
    return Status::Error("latent, batch_size, epochs and ensemble must be at least 1");
  }
  if (!(o.learning_rate > 0) || !std::isfinite(o.learning_rate)) {
    return Status::Error("learning_rate must be positive, got " +
                         std::to_string(o.learning_rate));
  }
  return Status::Ok();
}

BilstmNet BilstmModel::NewNet(const BilstmOptions& options) const {
  return BilstmNet(inputs(), options.embedding, options.latent);
}

Status BilstmModel::TrainMembers(const std::vector<Sample>& train, const MemberPlan& plan) {
  SCHEDFARM_RETURN_IF_ERROR(CheckOptions(options_));
  std::vector<const PipelineFeatures*> features;
  for (const Sample& s : train) features.push_back(&s.features);
  // A warm start keeps the normalization and time scale the weights were trained with.
  const bool warm = plan.warm_start && !members_.empty();
  const StackedStages stacked = Stack(features, invariant_columns(), dependent_columns());
  const StageStats stats = warm ? stats_ : StageStats::Fit(stacked);
  const StageRows rows = Rows(features, stacked, stats);
  const Targets targets = MakeTargets(train, warm ? time_scale_ : 0);
  const std::map<int, std::vector<int64_t>> groups = ByStageCount(features);

  std::vector<BilstmNet> members;
  for (int k = 0; k < plan.members; ++k) {
    torch::manual_seed(plan.seed + k);
    BilstmNet net = NewNet(options_);
    if (warm) CopyState(*members_[k % members_.size()], *net);
    torch::optim::Adam optimizer(
        net->parameters(),
        torch::optim::AdamOptions(options_.learning_rate * plan.learning_rate_scale));
    std::mt19937_64 rng(plan.seed + k);
    const MemberBudget budget(plan, k);
    net->train();
    for (int epoch = 0; epoch < plan.epochs && (epoch == 0 || !budget.Expired()); ++epoch) {
      // Minibatches within each stage count, in a shuffled order.
      std::vector<std::vector<int64_t>> batches;
      for (const auto& [count, members_of_count] : groups) {
        std::vector<int64_t> order = members_of_count;
        std::shuffle(order.begin(), order.end(), rng);
        for (size_t begin = 0; begin < order.size(); begin += options_.batch_size) {
          batches.emplace_back(order.begin() + begin,
                               order.begin() + std::min(order.size(), begin + options_.batch_size));
        }
      }
      std::shuffle(batches.begin(), batches.end(), rng);
      for (const std::vector<int64_t>& batch : batches) {
        SCHEDFARM_RETURN_IF_ERROR(
            TrainStep(optimizer, PositiveRuntime(net->forward(Gather(rows, batch))).log(),
                      targets, LongTensor(batch), Loss::kRegression, k, epoch));
      }
    }
    net->eval();
    members.push_back(net);
  }
  members_ = std::move(members);
  stats_ = stats;
  time_scale_ = targets.time_scale;
  return Status::Ok();
}

torch::Tensor BilstmModel::PredictMembers(
    const std::vector<const PipelineFeatures*>& features) const {
  const StageRows rows =
      Rows(features, Stack(features, invariant_columns(), dependent_columns()), stats_);
  torch::Tensor seconds =
      torch::empty({static_cast<int64_t>(members_.size()), static_cast<int64_t>(features.size())});
  for (const auto& [count, indices] : ByStageCount(features)) {
    for (size_t begin = 0; begin < indices.size(); begin += kPredictBatch) {
      const std::vector<int64_t> batch(
          indices.begin() + begin,
          indices.begin() + std::min(indices.size(), begin + static_cast<size_t>(kPredictBatch)));
      const torch::Tensor stages = Gather(rows, batch);
      const torch::Tensor index = LongTensor(batch);
      for (size_t m = 0; m < members_.size(); ++m) {
        BilstmNet net = members_[m];
        seconds[m].index_copy_(0, index, PositiveRuntime(net->forward(stages)) * time_scale_);
      }
    }
  }
  return seconds;
}

}  // namespace torch_models

std::unique_ptr<PerformanceModel> MakeBilstmModel(const BilstmOptions& options,
                                                  const FeatureSchema& schema) {
  return std::make_unique<torch_models::BilstmModel>(options, schema);
}

}  // namespace schedfarm
