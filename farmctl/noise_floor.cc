#include "farmctl/noise_floor.h"

#include <map>
#include <vector>

#include "evaluation/metrics.h"
#include "evaluation/split.h"

namespace schedfarm {

StatusOr<std::string> RenderNoiseFloor(const LoadedDataset& loaded, double held_out,
                                       uint64_t seed) {
  const Dataset& dataset = loaded.data;
  SCHEDFARM_ASSIGN_OR_RETURN(PipelineSplit split,
                             SplitByPipeline(loaded.pipeline_ids, seed, held_out));
  struct Pairs {
    std::vector<std::string> ids;
    std::vector<double> first, second;
  };
  Pairs held, all;
  for (const auto& [key, indexes] : MeasurementsByKey(dataset)) {
    std::vector<double> ok;  // the OK medians, in the order taken
    for (int i : indexes) {
      const Measurement& m = dataset.measurements(i);
      if (m.status() == OK && m.stats().median_seconds() > 0) {
        ok.push_back(m.stats().median_seconds());
      }
    }
    if (ok.size() < 2) continue;
    const std::string& id = dataset.measurements(indexes[0]).candidate().pipeline_id();
    for (Pairs* pairs : {&all, split.IsHeldOut(id) ? &held : nullptr}) {
      if (pairs == nullptr) continue;
      pairs->ids.push_back(id);
      pairs->first.push_back(ok[0]);
      pairs->second.push_back(ok[1]);
    }
  }
  if (all.ids.empty()) return Status::Error("no schedule of the dataset was measured twice");
  std::vector<NamedMetrics> rows;
  if (!held.ids.empty()) {
    SCHEDFARM_ASSIGN_OR_RETURN(EvalMetrics m, ComputeMetrics(held.ids, held.first, held.second));
    rows.push_back({"noise floor (held out)", m});
  }
  SCHEDFARM_ASSIGN_OR_RETURN(EvalMetrics m, ComputeMetrics(all.ids, all.first, all.second));
  rows.push_back({"noise floor (all)", m});
  return FormatMetricsTable(rows);
}

}  // namespace schedfarm
