#include "learner/torch/variant_rows.h"

#include <algorithm>
#include <cstring>
#include <utility>

#include "learner/torch/stage_tensors.h"

namespace schedfarm {
namespace torch_models {
namespace {

bool RowDiffers(const std::vector<float>& a, const std::vector<float>& b, int64_t row,
                int64_t width) {
  return std::memcmp(a.data() + row * width, b.data() + row * width, width * sizeof(float)) != 0;
}

// [source stage]: the messages of graph 0 of `set` from it, (target, weight).
std::vector<std::vector<std::pair<int64_t, float>>> MessagesBySource(const GraphSet& set,
                                                                     int64_t stages) {
  std::vector<std::vector<std::pair<int64_t, float>>> out(stages);
  for (int64_t m = set.first_message[0]; m < set.first_message[1]; ++m) {
    out[set.message_source[m]].emplace_back(set.message_target[m], set.message_weight[m]);
  }
  return out;
}

// Where each variant's rows of one level begin, and the end, from the level's
// variant-of-row list (rows of a variant together, variants in order).
std::vector<int64_t> VariantBegins(const std::vector<int64_t>& variant_of, int64_t variants) {
  std::vector<int64_t> begin(variants + 1, static_cast<int64_t>(variant_of.size()));
  for (int64_t k = static_cast<int64_t>(variant_of.size()) - 1; k >= 0; --k) {
    begin[variant_of[k]] = k;
  }
  for (int64_t v = variants - 1; v >= 0; --v) begin[v] = std::min(begin[v], begin[v + 1]);
  return begin;
}

}  // namespace

VariantRows FindVariantRows(const PipelineFeatures& base,
                            const std::vector<const PipelineFeatures*>& variants,
                            const std::vector<const GraphSet*>& reach, int levels,
                            int64_t invariant_columns, int64_t dependent_columns) {
  const int64_t stages = base.num_stages;
  std::vector<std::vector<int64_t>> out(stages);
  for (const GraphSet* set : reach) {
    for (int64_t m = set->first_message[0]; m < set->first_message[1]; ++m) {
      out[set->message_source[m]].push_back(set->message_target[m]);
    }
  }
  VariantRows rows;
  rows.variant.resize(levels + 1);
  rows.stage.resize(levels + 1);
  rows.previous.resize(levels + 1);
  std::vector<int64_t> at(stages, -1);  // a stage's row in the level being built
  for (size_t v = 0; v < variants.size(); ++v) {
    const PipelineFeatures& f = *variants[v];
    const auto add = [&](int level, int64_t stage, int64_t previous) {
      at[stage] = static_cast<int64_t>(rows.stage[level].size());
      rows.variant[level].push_back(static_cast<int64_t>(v));
      rows.stage[level].push_back(stage);
      rows.previous[level].push_back(previous);
    };
    int64_t begin = static_cast<int64_t>(rows.stage[0].size());
    for (int64_t s = 0; s < stages; ++s) {
      if (f.scheduled[s] != base.scheduled[s] ||
          RowDiffers(f.dependent, base.dependent, s, dependent_columns) ||
          RowDiffers(f.invariant, base.invariant, s, invariant_columns)) {
        rows.variant[0].push_back(static_cast<int64_t>(v));
        rows.stage[0].push_back(s);
        rows.previous[0].push_back(-1);
      }
    }
    for (int l = 1; l <= levels; ++l) {
      const int64_t end = static_cast<int64_t>(rows.stage[l - 1].size());
      const int64_t next_begin = static_cast<int64_t>(rows.stage[l].size());
      for (int64_t k = begin; k < end; ++k) add(l, rows.stage[l - 1][k], k);
      for (int64_t k = begin; k < end; ++k) {
        for (int64_t target : out[rows.stage[l - 1][k]]) {
          if (at[target] < 0) add(l, target, -1);
        }
      }
      for (int64_t k = next_begin; k < static_cast<int64_t>(rows.stage[l].size()); ++k) {
        at[rows.stage[l][k]] = -1;
      }
      begin = next_begin;
    }
  }
  return rows;
}

LevelMessages MessagesBetween(const VariantRows& rows, int level, const GraphSet& set,
                              int64_t stages, int64_t variants) {
  const std::vector<int64_t>& below = rows.stage[level - 1];
  const std::vector<int64_t>& here = rows.stage[level];
  const auto out = MessagesBySource(set, stages);
  const std::vector<int64_t> below_begin = VariantBegins(rows.variant[level - 1], variants);
  const std::vector<int64_t> here_begin = VariantBegins(rows.variant[level], variants);
  std::vector<int64_t> from, to;
  std::vector<float> weight;
  std::vector<int64_t> at(stages, -1);
  for (int64_t v = 0; v < variants; ++v) {
    for (int64_t j = here_begin[v]; j < here_begin[v + 1]; ++j) at[here[j]] = j;
    for (int64_t k = below_begin[v]; k < below_begin[v + 1]; ++k) {
      for (const auto& [target, w] : out[below[k]]) {
        from.push_back(k);
        to.push_back(at[target]);  // reached: the reach holds every set's messages
        weight.push_back(w);
      }
    }
    for (int64_t j = here_begin[v]; j < here_begin[v + 1]; ++j) at[here[j]] = -1;
  }
  return {LongTensor(from), LongTensor(to), FloatTensor(weight).unsqueeze(1)};
}

PipelineFeatures ChangedInputs(const std::vector<const PipelineFeatures*>& variants,
                               const VariantRows& rows, int64_t invariant_columns,
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

}  // namespace torch_models
}  // namespace schedfarm
