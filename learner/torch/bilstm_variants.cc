// The BiLSTM's predictions of variants of one state (BilstmModel::PredictVariantMembers).
// A stage's output reads its embedding and the two recurrences' states at it. Variants
// that differ from the base only in stages F..L (the first and the last stage any of
// them changes) share the base's embeddings elsewhere, its forward states before F and
// its backward states after L. So the base runs the forward recurrence over its stages
// before F and the backward one over those after L, once, and every variant runs the
// forward one from F on and the backward one from L down, starting from the base's
// states: when an option changes one stage, about half the steps of whole states, and
// only the changed stages are embedded again. The latent layer, the sum over the
// stages and the readout run on every variant's stages.
#include <algorithm>
#include <string>
#include <vector>

#include "learner/torch/bilstm.h"
#include "learner/torch/variant_rows.h"

namespace schedfarm {
namespace torch_models {
namespace {

// One direction of `lstm`'s weights, as torch::lstm takes them.
std::vector<torch::Tensor> DirectionWeights(const torch::nn::LSTM& lstm, bool reverse) {
  const std::string suffix = reverse ? "_l0_reverse" : "_l0";
  const auto parameters = lstm->named_parameters(/*recurse=*/false);
  return {parameters["weight_ih" + suffix], parameters["weight_hh" + suffix],
          parameters["bias_ih" + suffix], parameters["bias_hh" + suffix]};
}

// One direction's recurrence over `inputs` [batch, steps, width] from the state (h, c),
// each [1, batch, hidden]: the states at every step [batch, steps, hidden] and the last.
struct Recurrence {
  torch::Tensor out, h, c;
};

Recurrence Recur(const torch::Tensor& inputs, const torch::Tensor& h, const torch::Tensor& c,
                 const std::vector<torch::Tensor>& weights) {
  auto [out, h_n, c_n] = torch::lstm(inputs, {h, c}, weights, /*has_biases=*/true,
                                     /*num_layers=*/1, /*dropout=*/0, /*train=*/false,
                                     /*bidirectional=*/false, /*batch_first=*/true);
  return {out, h_n, c_n};
}

// A state of one sequence [1, 1, hidden] as the state of `count` [1, count, hidden].
torch::Tensor ForEach(const torch::Tensor& state, int64_t count) {
  return state.expand({1, count, state.size(2)}).contiguous();
}

}  // namespace

torch::Tensor BilstmModel::PredictVariantMembers(
    const PipelineFeatures& base, const std::vector<const PipelineFeatures*>& variants) const {
  const int64_t stages = base.num_stages;
  const int64_t count = static_cast<int64_t>(variants.size());
  const VariantRows rows =
      FindVariantRows(base, variants, {}, 0, invariant_columns(), dependent_columns());
  int64_t first = stages, last = -1;  // the changed stages, F..L
  for (const int64_t s : rows.stage[0]) {
    first = std::min(first, s);
    last = std::max(last, s);
  }
  const torch::Tensor base_inputs =
      StageInputs(Stack({&base}, invariant_columns(), dependent_columns()), stats_);
  const PipelineFeatures changed =
      ChangedInputs(variants, rows, invariant_columns(), dependent_columns());
  const torch::Tensor changed_inputs =
      StageInputs(Stack({&changed}, invariant_columns(), dependent_columns()), stats_);
  // Each changed row's place among the variants' stages, variant by variant.
  std::vector<int64_t> flat;
  for (size_t k = 0; k < rows.stage[0].size(); ++k) {
    flat.push_back(rows.variant[0][k] * stages + rows.stage[0][k]);
  }
  const torch::Tensor changed_at = LongTensor(flat);

  torch::Tensor seconds = torch::empty({static_cast<int64_t>(members_.size()), count});
  for (size_t m = 0; m < members_.size(); ++m) {
    BilstmNet net = members_[m];
    const torch::Tensor base_embedded = torch::relu(Dense(net->embed, base_inputs));
    const int64_t width = base_embedded.size(1), hidden = width / 2;
    torch::Tensor embedded = base_embedded.unsqueeze(0).repeat({count, 1, 1});
    if (!flat.empty()) {
      embedded.view({count * stages, width})
          .index_copy_(0, changed_at, torch::relu(Dense(net->embed, changed_inputs)));
    }
    const torch::Tensor zero = torch::zeros({1, 1, hidden});

    // Forward: the base's states before F, then every variant's from F on.
    std::vector<torch::Tensor> forward;
    torch::Tensor h = zero, c = zero;
    const std::vector<torch::Tensor> forward_weights = DirectionWeights(net->lstm, false);
    if (first > 0) {
      const Recurrence before =
          Recur(base_embedded.slice(0, 0, first).unsqueeze(0), h, c, forward_weights);
      forward.push_back(before.out.expand({count, first, hidden}));
      h = before.h;
      c = before.c;
    }
    if (first < stages) {
      forward.push_back(Recur(embedded.slice(1, first, stages), ForEach(h, count),
                              ForEach(c, count), forward_weights)
                            .out);
    }
    // Backward: the base's states after L, then every variant's from L down.
    std::vector<torch::Tensor> backward;
    h = zero;
    c = zero;
    const std::vector<torch::Tensor> backward_weights = DirectionWeights(net->lstm, true);
    torch::Tensor after;
    if (last + 1 < stages) {
      const Recurrence tail = Recur(base_embedded.slice(0, last + 1, stages).flip(0).unsqueeze(0),
                                    h, c, backward_weights);
      after = tail.out.flip(1).expand({count, stages - last - 1, hidden});
      h = tail.h;
      c = tail.c;
    }
    if (last >= 0) {
      backward.push_back(Recur(embedded.slice(1, 0, last + 1).flip(1), ForEach(h, count),
                               ForEach(c, count), backward_weights)
                             .out.flip(1));
    }
    if (after.defined()) backward.push_back(after);

    const torch::Tensor states = torch::cat({torch::cat(forward, 1), torch::cat(backward, 1)}, 2);
    const torch::Tensor latent =
        torch::relu(Dense(net->to_latent, (states * embedded).reshape({count * stages, width})))
            .view({count, stages, -1});
    seconds[m].copy_(PositiveRuntime(Dense(net->readout, latent.sum(1)).squeeze(1)) * time_scale_);
  }
  return seconds;
}

}  // namespace torch_models
}  // namespace schedfarm
