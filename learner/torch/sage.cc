#include "learner/torch/sage.h"

#include <algorithm>
#include <memory>
#include <random>
#include <utility>

namespace schedfarm {
namespace torch_models {
namespace {

torch::nn::Linear Unbiased(int64_t in, int64_t out) {
  return torch::nn::Linear(torch::nn::LinearOptions(in, out).bias(false));
}

}  // namespace

SageSet MakeSageSet(const std::vector<const PipelineFeatures*>& features,
                    const StackedStages& stacked, const StageStats& stats) {
  GraphSet producers = MakeGraphSet(stacked, features, GcnEdges::kProducers, false, stats);
  GraphSet consumers = WithMessages(producers, features, GcnEdges::kConsumers, false);
  return {std::move(producers), std::move(consumers)};
}

SageBatch MakeSageBatch(const SageSet& set, const std::vector<int64_t>& graphs) {
  GraphBatch producers = MakeBatch(set.producers, graphs);
  GraphBatch consumers = WithMessagesOf(producers, set.consumers, graphs);
  return {std::move(producers), std::move(consumers)};
}

SageNetImpl::SageNetImpl(int64_t inputs, int64_t hidden, int layers) {
  embed = register_module("embed", torch::nn::Linear(inputs, hidden));
  for (int l = 0; l < layers; ++l) {
    const std::string n = std::to_string(l);
    from_producers.push_back(register_module("producers" + n, Unbiased(hidden, hidden)));
    from_consumers.push_back(register_module("consumers" + n, Unbiased(hidden, hidden)));
    combine.push_back(register_module("combine" + n, Unbiased(3 * hidden, hidden)));
  }
  node_first = register_module("node_first", Unbiased(hidden, hidden));
  node_second = register_module("node_second", Unbiased(hidden, hidden));
  readout = register_module("readout", torch::nn::Linear(3 * hidden, 1));
}

torch::Tensor SageNetImpl::forward(const SageBatch& batch) {
  const GraphBatch& graphs = batch.producers;
  torch::Tensor h = torch::relu(Dense(embed, torch::cat({graphs.invariant, graphs.dependent}, 1)));
  for (size_t l = 0; l < combine.size(); ++l) {
    const torch::Tensor producers =
        Propagate(batch.producers, torch::relu(Dense(from_producers[l], h)));
    const torch::Tensor consumers =
        Propagate(batch.consumers, torch::relu(Dense(from_consumers[l], h)));
    h = torch::nn::functional::normalize(
        torch::relu(Dense(combine[l], torch::cat({h, producers, consumers}, 1))),
        torch::nn::functional::NormalizeFuncOptions().dim(1));
  }
  h = torch::relu(Dense(node_second, torch::relu(Dense(node_first, h))));
  const torch::Tensor sum = SumOverGraphs(graphs, h);
  const torch::Tensor stages = SumOverGraphs(graphs, torch::ones({h.size(0), 1}, h.options()));
  // h >= 0 after the ReLU, so a max that starts from 0 is the max over the stages.
  const torch::Tensor max = torch::zeros_like(sum).scatter_reduce(
      0, graphs.graph_index.unsqueeze(1).expand_as(h), h, "amax");
  return Dense(readout, torch::cat({sum / stages, max, sum}, 1)).squeeze(1);
}

Status SageModel::CheckOptions(const SageOptions& o) const {
  if (o.layers < 0 || o.layers > kMaxSageLayers) {
    return Status::Error("layers must be 0.." + std::to_string(kMaxSageLayers) + ", got " +
                         std::to_string(o.layers));
  }
  if (o.hidden < 1 || o.batch_size < 1 || o.epochs < 1 || o.ensemble < 1) {
    return Status::Error("hidden, batch_size, epochs and ensemble must be at least 1");
  }
  if (!(o.learning_rate > 0)) return Status::Error("learning_rate must be positive");
  if (o.loss != Loss::kRegression && o.loss != Loss::kRank) {
    return Status::Error("unknown loss " + std::to_string(static_cast<int>(o.loss)));
  }
  return Status::Ok();
}

SageNet SageModel::NewNet(const SageOptions& options) const {
  return SageNet(invariant_columns() + dependent_columns() + 1, options.hidden, options.layers);
}

Status SageModel::TrainMembers(const std::vector<Sample>& train, const MemberPlan& plan) {
  SCHEDFARM_RETURN_IF_ERROR(CheckOptions(options_));
  std::vector<const PipelineFeatures*> features;
  for (const Sample& s : train) features.push_back(&s.features);
  const StackedStages stacked = Stack(features, invariant_columns(), dependent_columns());
  // A warm start keeps the normalization and time scale the weights were trained with.
  const bool warm = plan.warm_start && !members_.empty();
  const StageStats stats = warm ? stats_ : StageStats::Fit(stacked);
  const SageSet set = MakeSageSet(features, stacked, stats);
  const Targets targets = MakeTargets(train, warm ? time_scale_ : 0);
  const int per_pipeline = options_.loss == Loss::kRank ? kRankRunLength : 1;
  const ValidationSplit split = SplitForValidation(targets, plan.early_stopping, plan.seed);
  const torch::Tensor validation_index = LongTensor(split.validation);
  const SageBatch validation =
      split.validation.empty() ? SageBatch() : MakeSageBatch(set, split.validation);
  auto validation_loss = [&](SageNet& net) {
    torch::NoGradGuard no_grad;
    return LossOf(net->forward(validation), targets, validation_index, options_.loss)
        .item<double>();
  };

  std::vector<SageNet> members;
  for (int k = 0; k < plan.members; ++k) {
    torch::manual_seed(plan.seed + k);
    SageNet net = NewNet(options_);
    if (warm) CopyState(*members_[k % members_.size()], *net);
    torch::optim::Adam optimizer(
        net->parameters(),
        torch::optim::AdamOptions(options_.learning_rate * plan.learning_rate_scale *
                                  (warm ? kWarmLearningRateScale : 1)));
    std::mt19937_64 rng(plan.seed + k);
    const MemberBudget budget(plan, k);
    EarlyStopping stopping;
    net->train();
    for (int epoch = 0; epoch < plan.epochs && (epoch == 0 || !budget.Expired()); ++epoch) {
      for (const std::vector<int64_t>& graphs :
           PipelineBatches(targets, split.fit, options_.batch_size, per_pipeline, rng)) {
        SCHEDFARM_RETURN_IF_ERROR(TrainStep(optimizer, net->forward(MakeSageBatch(set, graphs)),
                                            targets, LongTensor(graphs), options_.loss, k, epoch));
      }
      if (!split.validation.empty() && stopping.AfterEpoch(validation_loss(net), *net)) break;
    }
    stopping.RestoreBest(*net);
    net->eval();
    members.push_back(net);
  }
  members_ = std::move(members);
  stats_ = stats;
  time_scale_ = targets.time_scale;
  return Status::Ok();
}

torch::Tensor SageModel::PredictMembers(
    const std::vector<const PipelineFeatures*>& features) const {
  const SageSet set =
      MakeSageSet(features, Stack(features, invariant_columns(), dependent_columns()), stats_);
  return PredictInBatches(
      members_.size(), features.size(),
      [&](const std::vector<int64_t>& graphs) { return MakeSageBatch(set, graphs); },
      [&](const SageBatch& batch, int64_t m) {
        SageNet net = members_[m];
        return net->forward(batch).clamp(-kMaxSageLogRuntime, kMaxSageLogRuntime).exp() *
               time_scale_;
      });
}

}  // namespace torch_models

std::unique_ptr<PerformanceModel> MakeSageModel(const SageOptions& options,
                                                const FeatureSchema& schema) {
  return std::make_unique<torch_models::SageModel>(options, schema);
}

}  // namespace schedfarm
