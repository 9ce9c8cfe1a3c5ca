#include "farmctl/watch_log.h"

#include <algorithm>

#include "farmctl/render.h"
#include "protocol/state_names.h"
#include "tools/text_table.h"

namespace schedfarm {
namespace {

constexpr double kProgressEverySeconds = 30;
constexpr double kBestImprovement = 0.01;  // a best 1% faster is news

std::string Progress(const CampaignStatus& status) {
  const Campaign& c = status.campaign();
  const CampaignCounters& n = c.counters();
  const BudgetUse use = BudgetUseOf(c);
  return c.name() + ": " + use.Text() + " (" + use.Share() + "), " +
         FormatNumber("%.2f", status.results_per_second()) + " results/s, measured " +
         std::to_string(n.measured()) + ", failed " + std::to_string(n.failed()) +
         ", quarantined " + std::to_string(n.quarantined()) + ", run time " +
         FormatElapsed(c.running_seconds());
}

}  // namespace

std::vector<std::string> WatchLog::Update(const CampaignStatus& status, double seconds) {
  const Campaign& c = status.campaign();
  const int64_t finished = c.counters().finished();
  std::vector<std::string> lines;
  if (!started_) {
    started_ = true;
    state_ = c.state();
    finished_ = finished;
    progress_seconds_ = seconds;
    const BudgetUse use = BudgetUseOf(c);
    lines.push_back(c.name() + ": campaign " + c.id() + " " + CampaignStateText(c.state()) +
                    ", " + use.Text() + " (" + use.Share() + "), " +
                    std::to_string(c.pipeline_ids_size()) + " pipelines");
    tenths_ = static_cast<int>(use.fraction * 10);
    for (const PipelineProgress& p : status.pipelines()) {
      best_seconds_[p.pipeline_id()] = p.farm_best_seconds();
      for (const auto& [name, seconds] : p.baseline_seconds()) {
        baselines_seen_.insert(p.pipeline_id() + "/" + name);
      }
    }
    for (const auto& [name, count] : status.failures_by_status()) failures_[name] = count;
    return lines;
  }
  for (const PipelineProgress& p : status.pipelines()) {
    const std::map<std::string, double> baselines(p.baseline_seconds().begin(),
                                                  p.baseline_seconds().end());
    for (const auto& [name, seconds] : baselines) {
      if (baselines_seen_.insert(p.pipeline_id() + "/" + name).second) {
        lines.push_back(c.name() + ": " + PipelineDisplayName(p) + " baseline " + name + " " +
                        FormatDuration(seconds));
      }
    }
    double& known = best_seconds_[p.pipeline_id()];
    const double best = p.farm_best_seconds();
    if (best > 0 && known > 0 && best < known * (1 - kBestImprovement)) {
      const Contender fastest = FastestContender(p);
      lines.push_back(c.name() + ": " + PipelineDisplayName(p) + " farm's best " +
                      FormatDuration(best) + " (was " + FormatDuration(known) + "), origin " +
                      p.farm_best_origin() +
                      (fastest.seconds > 0 ? ", vs fastest " + VersusFastest(fastest, best) : ""));
    }
    if (best > 0) known = best;
  }
  for (const auto& [name, count] : status.failures_by_status()) {
    int64_t& known = failures_[name];
    if (name != MeasurementStatus_Name(OK) && count > known) {
      lines.push_back(c.name() + ": " + std::to_string(count - known) + " more " + name + " (" +
                      std::to_string(count) + " in all)");
    }
    known = count;
  }
  const int tenths = static_cast<int>(BudgetUseOf(c).fraction * 10);
  if (finished != finished_ &&
      (tenths != tenths_ || seconds - progress_seconds_ >= kProgressEverySeconds ||
       c.state() != state_)) {
    lines.push_back(Progress(status));
    finished_ = finished;
    tenths_ = tenths;
    progress_seconds_ = seconds;
  }
  if (c.state() != state_) {
    lines.push_back(c.name() + ": " + CampaignStateText(state_) + " -> " +
                    CampaignStateText(c.state()));
    state_ = c.state();
  }
  return lines;
}

}  // namespace schedfarm
