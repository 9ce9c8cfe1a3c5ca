// The GCN's predictions of variants of one state (GcnModel::PredictVariantMembers).
// Every layer is local: after layer l a stage's row depends only on the rows of the
// stages one message away after layer l - 1, and the readout reads each layer's sum of
// rows through one linear layer. So a variant whose input rows R0 differ from the
// base's changes, after layer l, only the rows R_l that the messages from R_{l-1}
// reach, and its output is the base's plus those rows' changes times the readout. One pass over the base serves every variant; the
// variants' changed rows go through each layer together, one matrix product a layer.
// A change of a layer's input changes its output by the weights alone (the bias
// cancels), and the aggregation is linear, so only the normalization and the ReLU of
// the reached rows are computed again.
#include <cstring>
#include <utility>
#include <vector>

#include "learner/torch/gcn.h"

namespace schedfarm {
namespace torch_models {
namespace {

// The rows each variant changes, level by level, flat over all variants: level 0 is
// the input rows, level l the rows after layer l.
struct ChangedRows {
  std::vector<std::vector<int64_t>> variant;  // [level][row]: its variant
  std::vector<std::vector<int64_t>> stage;    // [level][row]: its stage
  // [layer l >= 1][message]: from a row of level l - 1 to a row of level l, weighted.
  std::vector<std::vector<int64_t>> from, to;
  std::vector<std::vector<float>> weight;
};

bool RowDiffers(const std::vector<float>& a, const std::vector<float>& b, int64_t row,
                int64_t width) {
  return std::memcmp(a.data() + row * width, b.data() + row * width, width * sizeof(float)) != 0;
}

ChangedRows FindChangedRows(const PipelineFeatures& base,
                            const std::vector<const PipelineFeatures*>& variants,
                            const GraphSet& set, int layers, int64_t invariant_columns,
                            int64_t dependent_columns) {
  const int64_t stages = base.num_stages;
  // The base's messages by source stage: (target, weight).
  std::vector<std::vector<std::pair<int64_t, float>>> out(stages);
  for (int64_t m = set.first_message[0]; m < set.first_message[1]; ++m) {
    out[set.message_source[m]].emplace_back(set.message_target[m], set.message_weight[m]);
  }
  ChangedRows rows;
  rows.variant.resize(layers + 1);
  rows.stage.resize(layers + 1);
  rows.from.resize(layers + 1);
  rows.to.resize(layers + 1);
  rows.weight.resize(layers + 1);
  std::vector<int64_t> at(stages, -1);  // a stage's row in the level being built
  for (size_t v = 0; v < variants.size(); ++v) {
    const PipelineFeatures& f = *variants[v];
    int64_t begin = static_cast<int64_t>(rows.stage[0].size());
    for (int64_t s = 0; s < stages; ++s) {
      if (f.scheduled[s] != base.scheduled[s] ||
          RowDiffers(f.dependent, base.dependent, s, dependent_columns) ||
          RowDiffers(f.invariant, base.invariant, s, invariant_columns)) {
        rows.variant[0].push_back(static_cast<int64_t>(v));
        rows.stage[0].push_back(s);
      }
    }
    for (int l = 1; l <= layers; ++l) {
      const int64_t end = static_cast<int64_t>(rows.stage[l - 1].size());
      const int64_t next_begin = static_cast<int64_t>(rows.stage[l].size());
      std::vector<int64_t> reached;
      for (int64_t k = begin; k < end; ++k) {
        for (const auto& [target, weight] : out[rows.stage[l - 1][k]]) {
          if (at[target] < 0) {
            at[target] = static_cast<int64_t>(rows.stage[l].size());
            rows.variant[l].push_back(static_cast<int64_t>(v));
            rows.stage[l].push_back(target);
            reached.push_back(target);
          }
          rows.from[l].push_back(k);
          rows.to[l].push_back(at[target]);
          rows.weight[l].push_back(weight);
        }
      }
      for (int64_t s : reached) at[s] = -1;
      begin = next_begin;
    }
  }
  return rows;
}

// The variants' changed input rows as features of one pseudo-pipeline, so that they
// are stacked and normalized exactly as whole pipelines are.
PipelineFeatures ChangedInputs(const std::vector<const PipelineFeatures*>& variants,
                               const ChangedRows& rows, int64_t invariant_columns,
                               int64_t dependent_columns) {
  PipelineFeatures changed;
  changed.num_stages = static_cast<int>(rows.stage[0].size());
  for (size_t k = 0; k < rows.stage[0].size(); ++k) {
    const PipelineFeatures& f = *variants[rows.variant[0][k]];
    const int64_t s = rows.stage[0][k];
    changed.invariant.insert(changed.invariant.end(), f.invariant.begin() + s * invariant_columns,
                             f.invariant.begin() + (s + 1) * invariant_columns);
    changed.dependent.insert(changed.dependent.end(), f.dependent.begin() + s * dependent_columns,
                             f.dependent.begin() + (s + 1) * dependent_columns);
    changed.scheduled.push_back(f.scheduled[s]);
  }
  return changed;
}

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
  const ChangedRows rows =
      FindChangedRows(base, variants, set, layers, invariant_columns(), dependent_columns());
  const PipelineFeatures changed =
      ChangedInputs(variants, rows, invariant_columns(), dependent_columns());
  const StackedStages stacked = Stack({&changed}, invariant_columns(), dependent_columns());
  const torch::Tensor changed_invariant = stats_.Invariant(stacked);
  const torch::Tensor changed_dependent = stats_.Dependent(stacked);
  std::vector<torch::Tensor> variant_of, stage_of, from, to, weight;
  for (int l = 0; l <= layers; ++l) {
    variant_of.push_back(LongTensor(rows.variant[l]));
    stage_of.push_back(LongTensor(rows.stage[l]));
    from.push_back(LongTensor(rows.from[l]));
    to.push_back(LongTensor(rows.to[l]));
    weight.push_back(FloatTensor(rows.weight[l]).unsqueeze(1));
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
          0, to[l], moved.index_select(0, from[l]) * weight[l]);
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
