// The noise floor of a dataset (docs/EVALUATION.md): the schedules it holds measured
// twice, the second measurement scored as if it were a model predicting the first, on
// the held-out pipelines of the learner's split and on all pipelines. No model can be
// expected to rank better than this against these labels.
#pragma once

#include <string>

#include "common/status.h"
#include "dataset/dataset.h"

namespace schedfarm {

// The metrics table (evaluation/metrics.h) with the rows "noise floor (held out)" and
// "noise floor (all)", each over the schedules with two OK measurements; the held-out
// pipelines are those of a replay campaign's split with the same share and seed. An
// error when no schedule was measured twice.
StatusOr<std::string> RenderNoiseFloor(const LoadedDataset& dataset, double held_out,
                                       uint64_t seed);

}  // namespace schedfarm
