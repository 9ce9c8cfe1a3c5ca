// The split of a dataset into training and held-out pipelines: by pipeline, never by
// schedule, so held-out metrics measure how a model does on pipelines it has not seen.
// Deterministic from the seed, the held-out fraction and the set of pipeline ids, and
// written as a small text file so that every table can be regenerated on the same split.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/status.h"

namespace schedfarm {

struct PipelineSplit {
  uint64_t seed = 0;
  double held_out_fraction = 0;
  std::vector<std::string> train;     // sorted, unique
  std::vector<std::string> held_out;  // sorted, unique, disjoint from train

  bool IsHeldOut(const std::string& pipeline_id) const;
  bool IsTrain(const std::string& pipeline_id) const;
};

// Splits the distinct ids of `pipeline_ids` (repeats allowed: one per sample is fine).
// The held-out set has round(fraction * n) pipelines, at least 1 and at most n - 1; the
// pipelines are ordered by SHA-256 of (seed, id) and the first ones are held out, so a
// pipeline's side does not depend on the order of the input. Errors: fewer than two
// distinct pipelines, a fraction outside (0, 1), an empty id or one with whitespace.
StatusOr<PipelineSplit> SplitByPipeline(const std::vector<std::string>& pipeline_ids, uint64_t seed,
                                        double held_out_fraction);

// The split file, line by line:
//   schedfarm.split.v1
//   seed <decimal>
//   held_out_fraction <number>
//   train <pipeline id>        (one line per training pipeline)
//   held_out <pipeline id>     (one line per held-out pipeline)
// Lines starting with '#' and empty lines are ignored. Parse errors name the line.
std::string FormatSplit(const PipelineSplit& split);
StatusOr<PipelineSplit> ParseSplit(const std::string& text);
Status WriteSplitFile(const std::string& path, const PipelineSplit& split);
StatusOr<PipelineSplit> ReadSplitFile(const std::string& path);

}  // namespace schedfarm
