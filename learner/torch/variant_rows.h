// Internal to learner/torch/: the rows that variants of one state change, for the
// models that score a search step's options incrementally (PredictVariantMembers of the
// GCN, GraphSAGE and the BiLSTM). Level 0 holds the input rows in which each variant
// differs from the base (compared bit for bit); level l the rows that messages from
// level l - 1 reach (a row stays reached: the reach includes each stage itself). Rows
// are flat over all variants, each variant's rows together.
#pragma once

#include <torch/torch.h>

#include <cstdint>
#include <vector>

#include "learner/features.h"
#include "learner/torch/gcn.h"

namespace schedfarm {
namespace torch_models {

struct VariantRows {
  std::vector<std::vector<int64_t>> variant;  // [level][row]: its variant
  std::vector<std::vector<int64_t>> stage;    // [level][row]: its stage
  // [level][row]: the same variant's row of the same stage one level down, or -1.
  std::vector<std::vector<int64_t>> previous;
};

// The rows of `levels` + 1 levels; `reach` holds the messages of every layer (graph 0
// of each set; a stage always reaches itself).
VariantRows FindVariantRows(const PipelineFeatures& base,
                            const std::vector<const PipelineFeatures*>& variants,
                            const std::vector<const GraphSet*>& reach, int levels,
                            int64_t invariant_columns, int64_t dependent_columns);

// The messages of `set` (graph 0) from the rows of level `level` - 1 to those of
// `level`, within each variant: row indices into the two levels and the weight.
struct LevelMessages {
  torch::Tensor from, to;  // int64 [messages]
  torch::Tensor weight;    // float32 [messages, 1]
};
LevelMessages MessagesBetween(const VariantRows& rows, int level, const GraphSet& set,
                              int64_t stages, int64_t variants);

// The variants' changed input rows (level 0) as features of one pseudo-pipeline, so
// that they are stacked and normalized exactly as whole pipelines are.
PipelineFeatures ChangedInputs(const std::vector<const PipelineFeatures*>& variants,
                               const VariantRows& rows, int64_t invariant_columns,
                               int64_t dependent_columns);

}  // namespace torch_models
}  // namespace schedfarm
