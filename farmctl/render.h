// What farmctl prints, as pure functions from the coordinator's replies to text: the
// status table, the live watch view, the workers table, the best schedules as Halide
// source and the protobuf JSON of --json; and a checked campaign file as `check` prints
// it. No I/O, so tests render hand-made replies.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "common/status.h"
#include "schedfarm.pb.h"

namespace schedfarm {

// A duration in seconds with a unit that fits: "850 ns", "12.3 us", "4.56 ms", "1.23 s".
// "-" for zero, negative or non-finite values (nothing measured yet).
std::string FormatDuration(double seconds);
// The best's speedup over a baseline as the tables show it after the baseline's
// runtime, " (2.00x)"; empty when either runtime is not positive.
std::string Speedup(double baseline_seconds, double best_seconds);
// Elapsed wall time: "12s", "3m05s", "2h04m".
std::string FormatElapsed(double seconds);
// A pipeline as the views name it: its name, else the first 12 characters of its id.
std::string PipelineDisplayName(const PipelineProgress& pipeline);
// A rate (GFLOP/s, GB/s) with three significant digits, "41.2", "0.0512", whole from 100
// on ("1050"); "-" when unknown.
std::string FormatRate(std::optional<double> rate);
// A share of a roof (the peak, the bandwidth) as a percentage with three significant
// digits, "31.4%", "0.52%", whole from 100% on; "-" when unknown (the host measured no
// such roof at the thread count).
std::string FormatShare(std::optional<double> share);
// A campaign's failed results by class, "COMPILE_ERROR 1, CRASH 3", or "none".
std::string FailuresText(const CampaignStatus& status);

// The fastest contender measured on a pipeline: of the campaign's baselines measured on
// it (Halide's autoschedulers and the runtimes a user would deploy instead; the reference
// schedule is the farm's own starting point, not a contender), the one with the least
// time. `seconds` 0: none measured yet.
struct Contender {
  std::string name;
  double seconds = 0;
};
Contender FastestContender(const PipelineProgress& pipeline);
// The same of baseline name -> time.
Contender FastestContender(const std::map<std::string, double>& baseline_seconds);
// The farm's ratio to the fastest contender as the tables show it, "0.66x onnxruntime":
// the contender's time over the farm's (above 1 where the farm is faster), and its name;
// "-" when either time is missing.
std::string VersusFastest(const Contender& fastest, double farm_seconds);

// The pipelines of a campaign as `farmctl status` and `farmctl report` show them, one
// row each: the farm's best (PipelineProgress.farm_best_seconds) with its GFLOP/s, their
// share of the measuring hosts' fp32 peak and its origin; each baseline's runtime with
// the farm's speedup over it; and the farm's ratio to the fastest contender.
// `max_pipelines` > 0 keeps the first that many rows.
struct PipelineCells {
  std::vector<std::string> header;
  std::vector<bool> right_aligned;
  std::vector<std::vector<std::string>> rows;
};
PipelineCells PipelineTableCells(const CampaignStatus& status, int max_pipelines = 0);

// How much of a campaign's budget is used: the benchmarks finished against their
// limit ("325/1000"; "325" when only a wall time bounds it) and the run time against
// the wall time ("12m05s/30m00s"; empty without one); `fraction` is the nearer of the
// two to its end, in [0, 1].
struct BudgetUse {
  std::string benchmarks;
  std::string time;
  double fraction = 0;
  // "325/1000 benchmarks, 12m05s/30m00s".
  std::string Text() const;
  // The fraction as a whole percentage, "40%".
  std::string Share() const;
};
BudgetUse BudgetUseOf(const Campaign& campaign);

// One line about a campaign: id, name, state and budget used (after submit, pause,
// resume, cancel).
std::string RenderCampaignLine(const Campaign& campaign);

// The campaigns of a status reply as a table (state, budget used (BudgetUseOf),
// counters, results/s), the workers by state, then for each campaign its pipelines
// (PipelineTableCells); a network campaign then its network end to end against every
// baseline, the fastest contender named, and its task table (farmctl/task_table.h).
// `max_pipelines` > 0 shows at most that many pipelines (and tasks) per campaign.
std::string RenderStatus(const StatusReply& reply, int max_pipelines = 0);

// The live view of the first campaign of `reply`: a progress bar of the budget used
// (BudgetUseOf), results/s, the counters, the workers by state, the failures by class,
// the best so far per pipeline, and a network campaign's network end to end. `bar_width`
// is the bar's cells.
std::string RenderWatch(const StatusReply& reply, int bar_width = 40);

// The workers: state, cores, credits, leases in hand, results, failures, how long ago
// each was last heard from (relative to `now_unix_ms`), labels and CPU.
std::string RenderWorkers(const WorkersReply& reply, int64_t now_unix_ms);

// The best schedules of a best reply, by pipeline, best first: a comment line with the
// pipeline, the rank, runtime, origin and worker, then the schedule as Halide C++
// source (ScheduleSource of the candidate's schedule; for an autoscheduler baseline the
// source the autoscheduler chose, Measurement.schedule_source). Errors: a measurement
// of a pipeline the reply does not carry, or a schedule that does not fit its pipeline.
StatusOr<std::string> RenderBest(const BestReply& reply);

// `farmctl model eval`: the newest model of each kind among `reply`'s, side by side with
// their metrics on the held-out pipelines (evaluation/metrics.h's table), under a line
// naming the split; models trained on another split are listed apart.
std::string RenderModelEval(const ModelsReply& reply);
// `farmctl model list`: every stored version of `reply`, newest first, a line each: kind,
// version, when it was stored (UTC), training-set and held-out sizes, feature schema,
// and its held-out pairwise accuracy, Kendall tau, top-1 regret and MAPE.
std::string RenderModelList(const ModelsReply& reply);

// `farmctl check`: a checked campaign (`config` with every default filled in, and the
// submission built from it) as it would run: the strategy with the registry's summary
// and a table of every setting with its resolved value and meaning (for a strategy
// that uses a model also the model kind, with what its predictions of partial
// schedules mean and whether it has a spread, and the acquisition), then the pipelines
// as built (name, source, stages), the budget and the baselines.
std::string RenderCampaignCheck(const CampaignConfig& config, const SubmitCampaign& submission);

// The protobuf JSON of a message on one line: proto field names, every field printed.
std::string ToJsonLine(const google::protobuf::Message& message);

}  // namespace schedfarm
