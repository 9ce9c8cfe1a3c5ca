#include "learner/torch/gcn.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <map>
#include <memory>
#include <random>
#include <utility>

namespace schedfarm {
namespace torch_models {
namespace {

constexpr double kLearningRate = 0.0075;
constexpr double kWeightDecay = 1e-4;

// The rows of rownorm(A + I) of one graph as messages (target, source, weight), or of
// rownorm(A) without self loops.
void AddMessages(const PipelineFeatures& f, GcnEdges edges, bool self_loops, GraphSet* set) {
  std::vector<std::pair<int64_t, int64_t>> pairs;  // (target, source)
  for (const auto& [producer, consumer] : f.edges) {
    if (producer == consumer) continue;
    if (edges != GcnEdges::kConsumers) pairs.emplace_back(consumer, producer);
    if (edges != GcnEdges::kProducers) pairs.emplace_back(producer, consumer);
  }
  if (self_loops) {
    for (int64_t s = 0; s < f.num_stages; ++s) pairs.emplace_back(s, s);
  }
  std::sort(pairs.begin(), pairs.end());
  pairs.erase(std::unique(pairs.begin(), pairs.end()), pairs.end());
  std::vector<int64_t> count(f.num_stages, 0);
  for (const auto& p : pairs) ++count[p.first];
  for (const auto& [target, source] : pairs) {
    set->message_target.push_back(target);
    set->message_source.push_back(source);
    set->message_weight.push_back(1.0f / static_cast<float>(count[target]));
  }
  set->first_message.push_back(set->message_target.size());
}

}  // namespace

GraphSet MakeGraphSet(const StackedStages& stacked,
                      const std::vector<const PipelineFeatures*>& features, GcnEdges edges,
                      bool self_loops, const StageStats& stats) {
  GraphSet set;
  set.invariant = stats.Invariant(stacked);
  set.dependent = stats.Dependent(stacked);
  set.first_stage.push_back(0);
  for (const PipelineFeatures* f : features) {
    set.first_stage.push_back(set.first_stage.back() + f->num_stages);
  }
  return WithMessages(std::move(set), features, edges, self_loops);
}

GraphSet WithMessages(GraphSet set, const std::vector<const PipelineFeatures*>& features,
                      GcnEdges edges, bool self_loops) {
  set.first_message.assign(1, 0);
  set.message_source.clear();
  set.message_target.clear();
  set.message_weight.clear();
  for (const PipelineFeatures* f : features) AddMessages(*f, edges, self_loops, &set);
  return set;
}

GraphBatch MakeBatch(const GraphSet& set, const std::vector<int64_t>& graphs) {
  std::vector<int64_t> rows, graph_index;
  for (size_t b = 0; b < graphs.size(); ++b) {
    for (int64_t s = set.first_stage[graphs[b]]; s < set.first_stage[graphs[b] + 1]; ++s) {
      rows.push_back(s);
      graph_index.push_back(b);
    }
  }
  GraphBatch batch;
  torch::Tensor row_index = LongTensor(rows);
  batch.invariant = set.invariant.index_select(0, row_index);
  batch.dependent = set.dependent.index_select(0, row_index);
  batch.graph_index = LongTensor(graph_index);
  batch.num_graphs = graphs.size();
  return WithMessagesOf(std::move(batch), set, graphs);
}

GraphBatch WithMessagesOf(GraphBatch batch, const GraphSet& set,
                          const std::vector<int64_t>& graphs) {
  std::vector<int64_t> source, target;
  std::vector<float> weight;
  int64_t offset = 0;
  for (const int64_t g : graphs) {
    for (int64_t m = set.first_message[g]; m < set.first_message[g + 1]; ++m) {
      source.push_back(offset + set.message_source[m]);
      target.push_back(offset + set.message_target[m]);
      weight.push_back(set.message_weight[m]);
    }
    offset += set.stages(g);
  }
  batch.source = LongTensor(source);
  batch.target = LongTensor(target);
  batch.weight = FloatTensor(weight);
  return batch;
}

GcnNetImpl::GcnNetImpl(int64_t invariant_columns, int64_t dependent_inputs, int layers) {
  embed_invariant =
      register_module("embed_invariant", torch::nn::Linear(invariant_columns, kInvariantEmbedding));
  embed_dependent =
      register_module("embed_dependent", torch::nn::Linear(dependent_inputs, kDependentEmbedding));
  for (int l = 0; l < layers; ++l) {
    convolutions.push_back(
        register_module("conv" + std::to_string(l), torch::nn::Linear(kNodeWidth, kNodeWidth)));
    norms.push_back(register_module(
        "norm" + std::to_string(l),
        torch::nn::BatchNorm1d(torch::nn::BatchNorm1dOptions(kNodeWidth).eps(kBatchNormEps))));
  }
  readout = register_module("readout", torch::nn::Linear(kNodeWidth * (layers + 1), 1));
}

torch::Tensor SumOverGraphs(const GraphBatch& batch, const torch::Tensor& x) {
  return torch::zeros({batch.num_graphs, x.size(1)}, x.options())
      .index_add(0, batch.graph_index, x);
}

torch::Tensor Propagate(const GraphBatch& batch, const torch::Tensor& x) {
  return torch::zeros_like(x).index_add(
      0, batch.target, x.index_select(0, batch.source) * batch.weight.unsqueeze(1));
}

torch::Tensor GcnNetImpl::forward(const GraphBatch& batch) {
  torch::Tensor e = torch::relu(torch::cat(
      {Dense(embed_invariant, batch.invariant), Dense(embed_dependent, batch.dependent)}, 1));
  std::vector<torch::Tensor> pooled = {SumOverGraphs(batch, e)};
  for (size_t l = 0; l < convolutions.size(); ++l) {
    e = torch::relu(norms[l]->forward(Propagate(batch, Dense(convolutions[l], e))));
    pooled.push_back(SumOverGraphs(batch, e));
  }
  return Dense(readout, torch::cat(pooled, 1)).squeeze(1);
}

Status GcnModel::CheckOptions(const GcnOptions& o) const {
  if (o.layers < 0 || o.layers > kMaxGcnLayers) {
    return Status::Error("layers must be 0.." + std::to_string(kMaxGcnLayers) + ", got " +
                         std::to_string(o.layers));
  }
  if (o.batch_size < 1 || o.epochs < 1 || o.ensemble < 1) {
    return Status::Error("batch_size, epochs and ensemble must be at least 1");
  }
  if (o.edges != GcnEdges::kBoth && o.edges != GcnEdges::kProducers &&
      o.edges != GcnEdges::kConsumers) {
    return Status::Error("unknown edge direction " + std::to_string(static_cast<int>(o.edges)));
  }
  return Status::Ok();
}

GcnNet GcnModel::NewNet(const GcnOptions& options) const {
  return GcnNet(invariant_columns(), dependent_columns() + 1, options.layers);
}

Status GcnModel::TrainMembers(const std::vector<Sample>& train, const MemberPlan& plan) {
  SCHEDFARM_RETURN_IF_ERROR(CheckOptions(options_));
  std::vector<const PipelineFeatures*> features;
  for (const Sample& s : train) features.push_back(&s.features);
  const StackedStages stacked = Stack(features, invariant_columns(), dependent_columns());
  if (stacked.invariant.size(0) < 2) {
    return Status::Error("the training set has " + std::to_string(stacked.invariant.size(0)) +
                         " stage in all; BatchNorm needs at least 2");
  }
  // A warm start keeps the normalization and time scale the weights were trained with.
  const bool warm = plan.warm_start && !members_.empty();
  const StageStats stats = warm ? stats_ : StageStats::Fit(stacked);
  const GraphSet set = MakeGraphSet(stacked, features, options_.edges, true, stats);
  const Targets targets = MakeTargets(train, warm ? time_scale_ : 0);
  const int per_pipeline = options_.loss == Loss::kRank ? kRankRunLength : 1;
  const ValidationSplit split = SplitForValidation(targets, plan.early_stopping, plan.seed);
  const torch::Tensor validation_index = LongTensor(split.validation);
  const GraphBatch validation =
      split.validation.empty() ? GraphBatch() : MakeBatch(set, split.validation);
  auto validation_loss = [&](GcnNet& net) {
    torch::NoGradGuard no_grad;
    net->eval();
    const torch::Tensor log_predicted = PositiveRuntime(net->forward(validation)).log();
    net->train();
    return LossOf(log_predicted, targets, validation_index, options_.loss).item<double>();
  };

  std::vector<GcnNet> members;
  for (int k = 0; k < plan.members; ++k) {
    torch::manual_seed(plan.seed + k);
    GcnNet net = NewNet(options_);
    if (warm) CopyState(*members_[k % members_.size()], *net);
    torch::optim::Adagrad optimizer(
        net->parameters(), torch::optim::AdagradOptions(kLearningRate * plan.learning_rate_scale *
                                                            (warm ? kWarmLearningRateScale : 1))
                               .weight_decay(kWeightDecay));
    std::mt19937_64 rng(plan.seed + k);
    const MemberBudget budget(plan, k);
    EarlyStopping stopping;
    net->train();
    for (int epoch = 0; epoch < plan.epochs && (epoch == 0 || !budget.Expired()); ++epoch) {
      for (const std::vector<int64_t>& graphs :
           PipelineBatches(targets, split.fit, options_.batch_size, per_pipeline, rng)) {
        const GraphBatch batch = MakeBatch(set, graphs);
        // BatchNorm needs two stages; only a last batch of one 1-stage graph has fewer.
        if (batch.invariant.size(0) < 2) continue;
        SCHEDFARM_RETURN_IF_ERROR(TrainStep(optimizer, PositiveRuntime(net->forward(batch)).log(),
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

torch::Tensor GcnModel::PredictMembers(const std::vector<const PipelineFeatures*>& features) const {
  const GraphSet set = MakeGraphSet(Stack(features, invariant_columns(), dependent_columns()),
                                    features, options_.edges, true, stats_);
  return PredictInBatches(
      members_.size(), features.size(),
      [&](const std::vector<int64_t>& graphs) { return MakeBatch(set, graphs); },
      [&](const GraphBatch& batch, int64_t m) {
        GcnNet net = members_[m];
        return PositiveRuntime(net->forward(batch)) * time_scale_;
      });
}

}  // namespace torch_models

std::unique_ptr<PerformanceModel> MakeGcnModel(const GcnOptions& options,
                                               const FeatureSchema& schema) {
  return std::make_unique<torch_models::GcnModel>(options, schema);
}

}  // namespace schedfarm
