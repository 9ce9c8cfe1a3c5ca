#include "farmctl/task_table.h"

#include <algorithm>
#include <cmath>
#include <tuple>

#include "campaign/campaign_yaml.h"
#include "farmctl/render.h"
#include "scheduler/autoscheduler_names.h"
#include "tools/text_table.h"

namespace schedfarm {

double TaskRow::LibtorchOverFarm() const {
  return farm_seconds > 0 && libtorch_seconds > 0 ? libtorch_seconds / farm_seconds : 0;
}

double TaskRow::FarmGflops() const {
  return farm_seconds > 0 && flops > 0 ? flops / farm_seconds / 1e9 : 0;
}

std::string FormatFlops(double flops) {
  if (!std::isfinite(flops) || flops <= 0) return "-";
  if (flops >= 1e9) return FormatNumber("%.3g GFLOP", flops / 1e9);
  if (flops >= 1e6) return FormatNumber("%.3g MFLOP", flops / 1e6);
  if (flops >= 1e3) return FormatNumber("%.3g kFLOP", flops / 1e3);
  return FormatNumber("%.0f FLOP", flops);
}

std::vector<TaskRow> NetworkTaskRows(const CampaignStatus& status) {
  StatusOr<CampaignConfig> config = CampaignConfigFromJson(status.campaign().config_json());
  if (!config.ok() || !config->has_network() || status.pipelines_size() < 3) return {};
  std::vector<TaskRow> rows;
  TaskRow all;
  all.name = "all tasks";
  bool farm_complete = true, libtorch_complete = true;
  for (int i = 2; i < status.pipelines_size(); ++i) {
    const PipelineProgress& p = status.pipelines(i);
    TaskRow row;
    row.name = PipelineDisplayName(p);
    row.pipeline_id = p.pipeline_id();
    row.weight = p.task_weight();
    row.flops = p.flops();
    row.farm_seconds = p.farm_best_seconds();
    row.peak_gflops = p.best_peak_gflops();
    if (row.peak_gflops > 0) all.peak_gflops = row.peak_gflops;
    const auto libtorch = p.baseline_seconds().find(kLibtorchBaseline);
    if (libtorch != p.baseline_seconds().end()) row.libtorch_seconds = libtorch->second;
    // The fastest way is the one whose best is libtorch's best; the others are listed
    // beside it.
    for (const auto& [layout, seconds] : p.libtorch_layout_seconds()) {
      if (row.libtorch_layout.empty() && seconds == row.libtorch_seconds) {
        row.libtorch_layout = layout;
      } else {
        row.other_layouts.emplace_back(layout, seconds);
      }
    }
    std::sort(row.other_layouts.begin(), row.other_layouts.end(), [](const auto& a, const auto& b) {
      return std::tie(a.second, a.first) < std::tie(b.second, b.first);
    });
    all.weight += row.weight;
    all.flops += row.weight * row.flops;
    all.farm_seconds += row.weight * row.farm_seconds;
    all.libtorch_seconds += row.weight * row.libtorch_seconds;
    farm_complete = farm_complete && row.farm_seconds > 0;
    libtorch_complete = libtorch_complete && row.libtorch_seconds > 0;
    rows.push_back(std::move(row));
  }
  if (!farm_complete) all.farm_seconds = 0;
  if (!libtorch_complete) all.libtorch_seconds = 0;
  rows.push_back(std::move(all));
  return rows;
}

const std::vector<TaskColumn>& TaskColumns() {
  static const std::vector<TaskColumn> kColumns = {
      {"TASK", false, [](const TaskRow& r) { return r.name; }},
      {"WEIGHT", true, [](const TaskRow& r) { return std::to_string(r.weight); }},
      {"FLOPS", true, [](const TaskRow& r) { return FormatFlops(r.flops); }},
      {"FARM'S BEST", true, [](const TaskRow& r) { return FormatDuration(r.farm_seconds); }},
      {"LIBTORCH", true, [](const TaskRow& r) { return FormatDuration(r.libtorch_seconds); }},
      {"LAYOUT", false,
       [](const TaskRow& r) {
         if (r.libtorch_layout.empty()) return std::string("-");
         std::string others;
         for (const auto& [layout, seconds] : r.other_layouts) {
           others += (others.empty() ? " (" : ", ") + layout + " " + FormatDuration(seconds);
         }
         return r.libtorch_layout + others + (others.empty() ? "" : ")");
       }},
      {"LIBTORCH/FARM", true,
       [](const TaskRow& r) {
         const double ratio = r.LibtorchOverFarm();
         return ratio > 0 ? FormatNumber("%.2fx", ratio) : std::string("-");
       }},
      {"GFLOP/S", true,
       [](const TaskRow& r) {
         const double gflops = r.FarmGflops();
         return gflops > 0 ? FormatNumber("%.3g", gflops) : std::string("-");
       }},
      {"PEAK", true,
       [](const TaskRow& r) {
         const double gflops = r.FarmGflops();
         return gflops > 0 && r.peak_gflops > 0
                    ? FormatNumber("%.0f%%", 100 * gflops / r.peak_gflops)
                    : std::string("-");
       }},
  };
  return kColumns;
}

}  // namespace schedfarm
