// What `farmctl watch` (and `farmctl local`'s watch) prints when its output is not a
// terminal: one line per meaningful change, instead of a whole frame every second, so
// that a log stays short. A line is printed for the start; for progress each time
// another tenth of the budget is used (benchmarks or wall time, farmctl/render.h's
// BudgetUseOf), or at most every 30 seconds while results come in; for a baseline's
// first time on a pipeline; for a pipeline whose farm's best (never a baseline's)
// improves by 1% or more, with its ratio to the fastest contender; for each new failure
// class count; and for a change of the campaign's state. Each line starts with the
// campaign's name.
#pragma once

#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "schedfarm.pb.h"

namespace schedfarm {

class WatchLog {
 public:
  // The lines (without newlines) that the campaign's newest status adds; `seconds` is
  // the watch's clock.
  std::vector<std::string> Update(const CampaignStatus& status, double seconds);

 private:
  bool started_ = false;
  CampaignState state_ = CAMPAIGN_STATE_UNSPECIFIED;
  int64_t finished_ = 0;         // at the last progress line
  int tenths_ = 0;               // tenths of the budget used at the last progress line
  double progress_seconds_ = 0;  // of the last progress line
  std::map<std::string, double> best_seconds_;   // the farm's, by pipeline id
  std::set<std::string> baselines_seen_;         // "pipeline id/baseline name"
  std::map<std::string, int64_t> failures_;      // by measurement status name
};

}  // namespace schedfarm
