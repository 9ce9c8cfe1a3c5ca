// GraphSAGE's predictions of variants of one state (SageModel::PredictVariantMembers),
// as the GCN's (gcn_variants.cc): each layer is local, so a variant whose input rows
// differ from the base's changes after layer l only the rows its changed rows reach
// through producer and consumer messages (variant_rows.h). A layer's row combines the
// stage's own row with the means of its producers' and consumers' messages; the
// messages of the changed rows change the means by their changes (the means are
// linear), so a layer computes the messages of the changed rows and the combination
// of the rows reached. The readout reads the mean, the sum and the maximum over the
// stages of the last rows: the sum and the mean follow from the changed rows, the
// maximum is taken over each variant's rows, the base's with its changed ones in place.
#include <vector>

#include "learner/torch/sage.h"
#include "learner/torch/variant_rows.h"

namespace schedfarm {
namespace torch_models {

torch::Tensor SageModel::PredictVariantMembers(
    const PipelineFeatures& base, const std::vector<const PipelineFeatures*>& variants) const {
  const int layers = options_.layers;
  const int64_t count = static_cast<int64_t>(variants.size());
  const int64_t stages = base.num_stages;
  const SageSet set =
      MakeSageSet({&base}, Stack({&base}, invariant_columns(), dependent_columns()), stats_);
  const SageBatch batch = MakeSageBatch(set, {0});
  const VariantRows rows = FindVariantRows(base, variants, {&set.producers, &set.consumers},
                                           layers, invariant_columns(), dependent_columns());
  const PipelineFeatures changed =
      ChangedInputs(variants, rows, invariant_columns(), dependent_columns());
  const StackedStages stacked = Stack({&changed}, invariant_columns(), dependent_columns());
  const torch::Tensor changed_inputs =
      torch::cat({stats_.Invariant(stacked), stats_.Dependent(stacked)}, 1);
  // Per level: the rows' stages, and which rows were changed one level down already
  // (`kept`, with their rows there, `kept_from`).
  std::vector<torch::Tensor> stage_of, kept, kept_from;
  std::vector<LevelMessages> producers = {LevelMessages()}, consumers = {LevelMessages()};
  for (int l = 0; l <= layers; ++l) {
    stage_of.push_back(LongTensor(rows.stage[l]));
    std::vector<int64_t> at, from;
    for (size_t k = 0; k < rows.previous[l].size(); ++k) {
      if (rows.previous[l][k] < 0) continue;
      at.push_back(static_cast<int64_t>(k));
      from.push_back(rows.previous[l][k]);
    }
    kept.push_back(LongTensor(at));
    kept_from.push_back(LongTensor(from));
    if (l > 0) {
      producers.push_back(MessagesBetween(rows, l, set.producers, stages, count));
      consumers.push_back(MessagesBetween(rows, l, set.consumers, stages, count));
    }
  }
  const torch::Tensor last_variant = LongTensor(rows.variant[layers]);
  const torch::Tensor last_slot = last_variant * stages + stage_of[layers];
  const auto normalize = torch::nn::functional::NormalizeFuncOptions().dim(1);

  torch::Tensor seconds = torch::empty({static_cast<int64_t>(members_.size()), count});
  for (size_t m = 0; m < members_.size(); ++m) {
    SageNet net = members_[m];
    // The base: each level's rows, and each layer's messages and their means.
    std::vector<torch::Tensor> base_rows = {torch::relu(Dense(
        net->embed, torch::cat({batch.producers.invariant, batch.producers.dependent}, 1)))};
    std::vector<torch::Tensor> from_producers, from_consumers, producer_means, consumer_means;
    for (int l = 0; l < layers; ++l) {
      from_producers.push_back(torch::relu(Dense(net->from_producers[l], base_rows.back())));
      from_consumers.push_back(torch::relu(Dense(net->from_consumers[l], base_rows.back())));
      producer_means.push_back(Propagate(batch.producers, from_producers.back()));
      consumer_means.push_back(Propagate(batch.consumers, from_consumers.back()));
      base_rows.push_back(torch::nn::functional::normalize(
          torch::relu(Dense(net->combine[l], torch::cat({base_rows.back(), producer_means.back(),
                                                         consumer_means.back()},
                                                        1))),
          normalize));
    }
    const auto last = [&](const torch::Tensor& h) {
      return torch::relu(Dense(net->node_second, torch::relu(Dense(net->node_first, h))));
    };
    const torch::Tensor base_last = last(base_rows.back());
    // The variants' changed rows, level by level.
    torch::Tensor changed_rows = torch::relu(Dense(net->embed, changed_inputs));
    for (int l = 0; l < layers && changed_rows.size(0) > 0; ++l) {
      const torch::Tensor producer_change =
          torch::relu(Dense(net->from_producers[l], changed_rows)) -
          from_producers[l].index_select(0, stage_of[l]);
      const torch::Tensor consumer_change =
          torch::relu(Dense(net->from_consumers[l], changed_rows)) -
          from_consumers[l].index_select(0, stage_of[l]);
      const LevelMessages& p = producers[l + 1];
      const LevelMessages& c = consumers[l + 1];
      const torch::Tensor producer_mean = producer_means[l].index_select(0, stage_of[l + 1]).index_add(
          0, p.to, producer_change.index_select(0, p.from) * p.weight);
      const torch::Tensor consumer_mean = consumer_means[l].index_select(0, stage_of[l + 1]).index_add(
          0, c.to, consumer_change.index_select(0, c.from) * c.weight);
      const torch::Tensor own = base_rows[l].index_select(0, stage_of[l + 1]).index_copy(
          0, kept[l + 1], changed_rows.index_select(0, kept_from[l + 1]));
      changed_rows = torch::nn::functional::normalize(
          torch::relu(Dense(net->combine[l], torch::cat({own, producer_mean, consumer_mean}, 1))),
          normalize);
    }
    // Every variant's last rows: the base's, its changed ones in place.
    torch::Tensor all = base_last.repeat({count, 1});
    if (changed_rows.size(0) > 0) all.index_copy_(0, last_slot, last(changed_rows));
    all = all.view({count, stages, -1});
    const torch::Tensor sum = all.sum(1);
    const torch::Tensor out = Dense(net->readout, torch::cat({sum / static_cast<double>(stages),
                                                               std::get<0>(all.max(1)), sum},
                                                              1))
                                  .squeeze(1);
    seconds[m].copy_(out.clamp(-kMaxSageLogRuntime, kMaxSageLogRuntime).exp() * time_scale_);
  }
  return seconds;
}

}  // namespace torch_models
}  // namespace schedfarm
