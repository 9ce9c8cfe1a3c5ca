// A network campaign's distinct tasks as `farmctl status` and `farmctl report` show
// them (docs/NETWORKS.md): each task's operator kind, weight and FLOPs, the farm's best
// schedule, the runtimes a user would deploy instead on the task (libtorch in the faster
// of its layouts, ONNX Runtime), the farm's ratio to the fastest contender
// (FastestContender: any baseline measured on the task), and the farm's GFLOP/s and GB/s
// with their shares of the hosts' peak and bandwidth. The columns are defined once
// (TaskColumns) for the text table and the HTML table alike; a column added there appears
// in both. Pure functions of a status reply.
#pragma once

#include <functional>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "farmctl/render.h"
#include "schedfarm.pb.h"
#include "storage/throughput.h"

namespace schedfarm {

struct TaskRow {
  std::string name;  // the task pipeline's name (PipelineDisplayName)
  std::string pipeline_id;
  int weight = 0;               // occurrences in the network
  double flops = 0;             // per run of the task
  double farm_seconds = 0;      // the farm's best (PipelineProgress.farm_best_seconds); 0: none
  // Each baseline measured on the task (the reference schedule left out), by name;
  // libtorch's is its fastest way's.
  std::map<std::string, double> baseline_seconds;
  std::string libtorch_layout;  // that way ("nchw", "channels_last", "frozen"); empty: unknown
  // The other ways libtorch ran in, by name, and their times, fastest first.
  std::vector<std::pair<std::string, double>> other_layouts;
  // The fp32 peak and memory bandwidth of the hosts that measured the farm's best
  // (PipelineProgress.farm_best_peak_gflops, farm_best_bandwidth_gbps); 0: unknown. A farm
  // of one kind of host has one of each.
  double peak_gflops = 0;
  double bandwidth_gbps = 0;
  std::string kind;  // the task's operator kind (PipelineProgress.kind); empty: unknown
  double bytes = 0;  // the bytes it cannot avoid moving per run

  // A baseline's time; 0 when it was not measured.
  double BaselineSeconds(const std::string& name) const;
  // The farm's best against the roofs: GFLOP/s and GB/s, and their shares of the peak and
  // of the bandwidth (storage/throughput.h).
  Throughput FarmThroughput() const;
};

// The distinct tasks of a network campaign's status (its pipelines from the third on),
// in the campaign's order; empty for any other campaign. The last row, named "all
// tasks", sums weight x runtime (and weight x FLOPs) over the tasks, the farm's and each
// baseline's, each only when every task has one: the tasks' estimate of the network.
std::vector<TaskRow> NetworkTaskRows(const CampaignStatus& status);

struct TaskColumn {
  std::string header;
  bool right_aligned = true;
  std::function<std::string(const TaskRow&)> cell;
};
// TASK, KIND, WEIGHT, FLOPS, FARM'S BEST, LIBTORCH, LAYOUT, ONNXRUNTIME, VS FASTEST,
// GFLOP/S, PEAK, GB/S, BANDWIDTH.
const std::vector<TaskColumn>& TaskColumns();

// "2.31 GFLOP", "118 MFLOP", "950 kFLOP"; "-" when not positive.
std::string FormatFlops(double flops);

}  // namespace schedfarm
