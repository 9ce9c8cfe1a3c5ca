// How one proposal batch of a campaign is shared among its pipelines: in proportion to
// each pipeline's weight, with what each is owed carried from batch to batch, so that
// over many batches every pipeline of weight w gets a w / sum share of the proposals
// and none waits forever. Equal weights take turns. farm-learner weighs pipelines
// evenly, or by the model's error on them (AcquisitionInfo::shares_by_error).
#pragma once

#include <vector>

namespace schedfarm {

// The proposals of each pipeline, summing to `batch` unless every weight is 0 (then
// none). `credit` holds what each pipeline is owed; it is resized to weights.size() and
// updated: each pipeline is owed batch x its share of the weights, and every proposal
// given pays one back. Each proposal goes to the pipeline owed most, ties to the first.
// REQUIRES: batch >= 0; every weight >= 0.
std::vector<int> ShareBatch(int batch, const std::vector<double>& weights,
                            std::vector<double>* credit);

}  // namespace schedfarm
