// Random pipeline generator in the style of the GNN and value-learning papers:
// seeded and deterministic DNN-like DAGs built from the operator library, kept only
// if they pass the filters (at most one output, a minimum depth, favoured operators
// present), with size knobs so a pipeline fits a time budget.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/status.h"
#include "schedfarm.pb.h"

namespace schedfarm {

struct RandomPipelineOptions {
  int min_ops = 1;               // operators of the library (a composite counts once)
  int max_ops = 30;              // at most 200
  int max_rank = 4;              // input tensors of 2 to max_rank dims (at most 4)
  int64_t max_elements = 1 << 18;  // per tensor; bounds the work of every stage
  double max_flops = 2e8;        // whole pipeline; keeps one run in the ms range
  int min_depth = 1;             // longest input-to-output path, in operators
  int max_outputs = 1;           // the GNN paper's output filter
  std::vector<std::string> favoured_ops;  // e.g. {"conv", "relu"}: at least one present
  MathMode math = EXACT;
  int max_attempts = 200;        // candidates drawn before giving up
};

// The pipeline for `seed`: the same seed and options give the same spec everywhere.
// Fails only if no candidate within max_attempts passes the filters.
StatusOr<PipelineSpec> RandomPipeline(uint64_t seed, const RandomPipelineOptions& options = {});

}  // namespace schedfarm
