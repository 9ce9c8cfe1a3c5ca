// What `farmctl watch` (and `farmctl local`'s watch) prints when its output is not a
// terminal: one line per meaningful change, instead of a whole frame every second, so
// that a log stays short. A line is printed for the start; for progress each time
// another tenth of the budget is used (benchmarks or wall time, farmctl/render.h's
// BudgetUseOf), or at most every 30 seconds while results
// come in; for a pipeline whose best runtime improves by 1% or more; for each new
// failure class count; and for a change of the campaign's state. Each line starts with
// the campaign's name.
#pragma once

#include <cstdint>
#include <map>
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
  std::map<std::string, double> best_seconds_;   // by pipeline id
  std::map<std::string, int64_t> failures_;      // by measurement status name
};

}  // namespace schedfarm
