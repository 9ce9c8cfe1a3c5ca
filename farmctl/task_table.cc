#include "farmctl/task_table.h"

#include <algorithm>
#include <cmath>
#include <tuple>

#include "campaign/campaign_yaml.h"
#include "farmctl/render.h"
#include "network/tasks.h"
#include "scheduler/autoscheduler_names.h"
#include "tools/text_table.h"

namespace schedfarm {

double TaskRow::BaselineSeconds(const std::string& name) const {
  const auto it = baseline_seconds.find(name);
  return it == baseline_seconds.end() ? 0 : it->second;
}

Throughput TaskRow::FarmThroughput() const {
  return ThroughputOf({flops, bytes}, farm_seconds, peak_gflops, bandwidth_gbps);
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
  bool farm_complete = true;
  std::map<std::string, int> tasks_with;  // baseline -> tasks that have it
  for (int i = 2; i < status.pipelines_size(); ++i) {
    const PipelineProgress& p = status.pipelines(i);
    TaskRow row;
    row.name = PipelineDisplayName(p);
    row.pipeline_id = p.pipeline_id();
    row.weight = p.task_weight();
    row.flops = p.flops();
    row.farm_seconds = p.farm_best_seconds();
    row.peak_gflops = p.farm_best_peak_gflops();
    if (row.peak_gflops > 0) all.peak_gflops = row.peak_gflops;
    row.bandwidth_gbps = p.farm_best_bandwidth_gbps();
    if (row.bandwidth_gbps > 0) all.bandwidth_gbps = row.bandwidth_gbps;
    row.kind = p.kind();
    row.bytes = p.bytes();
    for (const auto& [name, seconds] : p.baseline_seconds()) {
      if (name == kReferenceOrigin || !(seconds > 0)) continue;
      row.baseline_seconds[name] = seconds;
      all.baseline_seconds[name] += row.weight * seconds;
      ++tasks_with[name];
    }
    // The fastest way is the one whose best is libtorch's best; the others are listed
    // beside it.
    const double libtorch = row.BaselineSeconds(kLibtorchBaseline);
    for (const auto& [layout, seconds] : p.libtorch_layout_seconds()) {
      if (row.libtorch_layout.empty() && seconds == libtorch) {
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
    all.bytes += row.weight * row.bytes;
    all.farm_seconds += row.weight * row.farm_seconds;
    farm_complete = farm_complete && row.farm_seconds > 0;
    rows.push_back(std::move(row));
  }
  if (!farm_complete) all.farm_seconds = 0;
  for (const auto& [name, count] : tasks_with) {
    if (count < static_cast<int>(rows.size())) all.baseline_seconds.erase(name);
  }
  rows.push_back(std::move(all));
  return rows;
}

const std::vector<TaskColumn>& TaskColumns() {
  static const std::vector<TaskColumn> kColumns = {
      {"TASK", false, [](const TaskRow& r) { return r.name; }},
      {"KIND", false, [](const TaskRow& r) { return r.kind.empty() ? "-" : r.kind; }},
      {"WEIGHT", true, [](const TaskRow& r) { return std::to_string(r.weight); }},
      {"FLOPS", true, [](const TaskRow& r) { return FormatFlops(r.flops); }},
      {"FARM'S BEST", true, [](const TaskRow& r) { return FormatDuration(r.farm_seconds); }},
      {"LIBTORCH", true,
       [](const TaskRow& r) { return FormatDuration(r.BaselineSeconds(kLibtorchBaseline)); }},
      {"LAYOUT", false,
       [](const TaskRow& r) {
         if (r.libtorch_layout.empty()) return std::string("-");
         std::string others;
         for (const auto& [layout, seconds] : r.other_layouts) {
           others += (others.empty() ? " (" : ", ") + layout + " " + FormatDuration(seconds);
         }
         return r.libtorch_layout + others + (others.empty() ? "" : ")");
       }},
      {"ONNXRUNTIME", true,
       [](const TaskRow& r) { return FormatDuration(r.BaselineSeconds(kOnnxRuntimeBaseline)); }},
      {"VS FASTEST", true,
       [](const TaskRow& r) {
         return VersusFastest(FastestContender(r.baseline_seconds), r.farm_seconds);
       }},
      {"GFLOP/S", true, [](const TaskRow& r) { return FormatRate(r.FarmThroughput().gflops); }},
      {"PEAK", true, [](const TaskRow& r) { return FormatShare(r.FarmThroughput().peak_share); }},
      {"GB/S", true, [](const TaskRow& r) { return FormatRate(r.FarmThroughput().gbps); }},
      {"BANDWIDTH", true,
       [](const TaskRow& r) { return FormatShare(r.FarmThroughput().bandwidth_share); }},
  };
  return kColumns;
}

}  // namespace schedfarm
