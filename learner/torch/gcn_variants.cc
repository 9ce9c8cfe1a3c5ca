// The GCN's predictions of variants of one state (GcnModel::PredictVariantMembers).
// Every layer is local: after layer l a stage's row depends only on the rows of the
// stages one message away after layer l - 1, and the readout reads each layer's sum of
// rows through one linear layer. So a variant whose input rows R0 differ from the
// base's changes, after layer l, only the rows R_l that the messages from R_{l-1}
// reach (variant_rows.h), and its output is the base's plus those rows' changes times
// the readout. One pass over the base serves every variant; the variants' changed rows
// go through each layer together, one matrix product a layer. A change of a layer's
// input changes its output by the weights alone (the bias cancels), and the
// aggregation is linear, so only the normalization and the ReLU of the reached rows
// are computed again.
#include <vector>

#include "learner/torch/gcn.h"
#include "learner/torch/variant_rows.h"

namespace schedfarm {
namespace torch_models {
namespace {

// What a level's changed rows add to each variant's output: the readout is linear in
// each level's sum of rows, so each row's change adds its product with that level's
// readout weights (`weights`, [width]) to its variant's output.
torch::Tensor AddChanges(torch::Tensor out, const torch::Tensor& variant_of,
                         const torch::Tensor& change, const torch::Tensor& weights) {
  if (change.size(0) == 0) return out;
  return out.index_add(0, variant_of, (change * weights).sum(1));
}

}  // namespace

torch::Tensor GcnModel::PredictVariantMembers(
    const PipelineFeatures& base, const std::vector<const PipelineFeatures*>& variants) const {
  const int layers = options_.layers;
  const int64_t count = static_cast<int64_t>(variants.size());
  const GraphSet set = MakeGraphSet(Stack({&base}, invariant_columns(), dependent_columns()),
                                    {&base}, options_.edges, true, stats_);
  const GraphBatch batch = MakeBatch(set, {0});
  const VariantRows rows = FindVariantRows(base, variants, {&set}, layers, invariant_columns(),
                                           dependent_columns());
  const PipelineFeatures changed =
      ChangedInputs(variants, rows, invariant_columns(), dependent_columns());
  const StackedStages stacked = Stack({&changed}, invariant_columns(), dependent_columns());
  const torch::Tensor changed_invariant = stats_.Invariant(stacked);
  const torch::Tensor changed_dependent = stats_.Dependent(stacked);
  std::vector<torch::Tensor> variant_of, stage_of;
  std::vector<LevelMessages> messages = {LevelMessages()};
  for (int l = 0; l <= layers; ++l) {
    variant_of.push_back(LongTensor(rows.variant[l]));
    stage_of.push_back(LongTensor(rows.stage[l]));
    if (l > 0) messages.push_back(MessagesBetween(rows, l, set, base.num_stages, count));
  }

  torch::Tensor seconds = torch::empty({static_cast<int64_t>(members_.size()), count});
  for (size_t m = 0; m < members_.size(); ++m) {
    GcnNet net = members_[m];
    // The base: each level's rows, and each layer's aggregation before its norm.
    std::vector<torch::Tensor> base_rows = {
        torch::relu(torch::cat({Dense(net->embed_invariant, batch.invariant),
                                Dense(net->embed_dependent, batch.dependent)},
                               1))};
    std::vector<torch::Tensor> base_aggregation = {torch::Tensor()};
    for (int l = 0; l < layers; ++l) {
      base_aggregation.push_back(Propagate(batch, Dense(net->convolutions[l], base_rows.back())));
      base_rows.push_back(torch::relu(net->norms[l]->forward(base_aggregation.back())));
    }
    // The base's output, and each variant's: its changed rows, level by level, add
    // their part of the readout.
    std::vector<torch::Tensor> base_sums;
    for (const torch::Tensor& level : base_rows) base_sums.push_back(level.sum(0, true));
    const torch::Tensor readout = net->readout->weight.view({-1});
    torch::Tensor out = Dense(net->readout, torch::cat(base_sums, 1)).view({1}).repeat({count});
    torch::Tensor change =
        torch::relu(torch::cat({Dense(net->embed_invariant, changed_invariant),
                                Dense(net->embed_dependent, changed_dependent)},
                               1)) -
        base_rows[0].index_select(0, stage_of[0]);
    out = AddChanges(out, variant_of[0], change, readout.narrow(0, 0, kNodeWidth));
    for (int l = 1; l <= layers && change.size(0) > 0; ++l) {
      const torch::Tensor moved = DenseChange(net->convolutions[l - 1], change);
      const torch::Tensor aggregation = base_aggregation[l].index_select(0, stage_of[l]).index_add(
          0, messages[l].to, moved.index_select(0, messages[l].from) * messages[l].weight);
      change = torch::relu(net->norms[l - 1]->forward(aggregation)) -
               base_rows[l].index_select(0, stage_of[l]);
      out = AddChanges(out, variant_of[l], change, readout.narrow(0, l * kNodeWidth, kNodeWidth));
    }
    seconds[m].copy_(PositiveRuntime(out) * time_scale_);
  }
  return seconds;
}

}  // namespace torch_models
}  // namespace schedfarm
