#include "farmctl/render.h"

#include <google/protobuf/util/json_util.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <ctime>
#include <map>
#include <set>
#include <sstream>
#include <vector>

#include "campaign/campaign_yaml.h"
#include "evaluation/metrics.h"
#include "farmctl/task_table.h"
#include "network/tasks.h"
#include "pipeline/graph.h"
#include "pipeline/spec.h"
#include "protocol/state_names.h"
#include "scheduler/autoscheduler_names.h"
#include "scheduler/schedule_source.h"
#include "search/cost_model.h"
#include "search/registry.h"
#include "storage/throughput.h"
#include "tools/text_table.h"

namespace schedfarm {
namespace {

constexpr WorkerState kWorkerStates[] = {WORKER_BUSY, WORKER_IDLE, WORKER_DRAINING, WORKER_LEFT,
                                         WORKER_DEAD};

// The first 12 characters of an id: enough to tell pipelines and schedules apart.
std::string ShortId(const std::string& id) { return id.size() > 12 ? id.substr(0, 12) : id; }


// Sorted copy of a protobuf map.
template <typename Map>
std::map<std::string, typename Map::mapped_type> Sorted(const Map& map) {
  return std::map<std::string, typename Map::mapped_type>(map.begin(), map.end());
}

std::string WorkersLine(const StatusReply& reply) {
  std::string line = "workers:";
  for (const WorkerState state : kWorkerStates) {
    const auto it = reply.workers_by_state().find(WorkerState_Name(state));
    const int32_t n = it == reply.workers_by_state().end() ? 0 : it->second;
    line +=
        " " + std::to_string(n) + " " + WorkerStateText(state) + (state == WORKER_DEAD ? "" : ",");
  }
  return line;
}

// The pipelines of a campaign (PipelineTableCells) as a text table.
void PrintPipelines(const CampaignStatus& status, int max_pipelines, std::ostream& out) {
  const PipelineCells cells = PipelineTableCells(status, max_pipelines);
  TextTable table(cells.header, cells.right_aligned);
  for (const std::vector<std::string>& row : cells.rows) table.Add(row);
  table.Print(out);
  if (static_cast<int>(cells.rows.size()) < status.pipelines_size()) {
    out << "  ... " << status.pipelines_size() - cells.rows.size()
        << " more pipelines (farmctl status " << status.campaign().id() << ")\n";
  }
}

// A network campaign's end-to-end table: the network under its reference schedule and
// each baseline, the fastest contender marked, and the farm's best assembled schedule,
// with how much faster the farm's best is than each.
void PrintNetwork(const CampaignStatus& status, std::ostream& out) {
  const Campaign& campaign = status.campaign();
  StatusOr<CampaignConfig> config = CampaignConfigFromJson(campaign.config_json());
  if (!config.ok() || !config->has_network() || status.pipelines_size() < 2) return;
  const PipelineProgress& network = status.pipelines(0);
  const PipelineProgress& assembly = status.pipelines(1);
  const double farm = assembly.farm_best_seconds();
  const Contender fastest = FastestContender(network);
  out << "\ncampaign " << campaign.id() << " (" << campaign.name() << "): the network end to end ("
      << status.pipelines_size() - 2 << " distinct tasks)\n";
  TextTable table({"SCHEDULE", "RUNTIME", "FARM'S SPEEDUP"}, {false, true, true});
  std::vector<std::string> rows = {kReferenceOrigin};
  rows.insert(rows.end(), config->baselines().begin(), config->baselines().end());
  for (const std::string& name : rows) {
    const auto it = network.baseline_seconds().find(name);
    const double seconds = it == network.baseline_seconds().end() ? 0 : it->second;
    table.Add({name + (name == fastest.name ? " (fastest contender)" : ""),
               seconds > 0 ? FormatDuration(seconds) : "no result",
               seconds > 0 && farm > 0 ? FormatNumber("%.2fx", seconds / farm) : "-"});
  }
  table.Add({"farm's best (assembled)", farm > 0 ? FormatDuration(farm) : "not yet", ""});
  table.Print(out);
  if (fastest.seconds > 0 && farm > 0) {
    out << "the farm's best against the fastest contender: " << VersusFastest(fastest, farm)
        << "\n";
  }
}

// A network campaign's task table (farmctl/task_table.h): per distinct task its weight,
// FLOPs, the farm's best, libtorch's and their ratio, and the farm's GFLOP/s.
void PrintTasks(const CampaignStatus& status, int max_pipelines, std::ostream& out) {
  const std::vector<TaskRow> rows = NetworkTaskRows(status);
  if (rows.empty()) return;
  const Campaign& campaign = status.campaign();
  out << "\ncampaign " << campaign.id() << " (" << campaign.name() << "): the distinct tasks\n";
  std::vector<std::string> header;
  std::vector<bool> right;
  for (const TaskColumn& column : TaskColumns()) {
    header.push_back(column.header);
    right.push_back(column.right_aligned);
  }
  TextTable table(header, right);
  const int tasks = static_cast<int>(rows.size()) - 1;  // the last row sums them
  const int shown = max_pipelines > 0 ? std::min(max_pipelines, tasks) : tasks;
  for (int i = 0; i < static_cast<int>(rows.size()); ++i) {
    if (i >= shown && i < tasks) continue;
    std::vector<std::string> cells;
    for (const TaskColumn& column : TaskColumns()) cells.push_back(column.cell(rows[i]));
    table.Add(cells);
  }
  table.Print(out);
  if (shown < tasks) {
    out << "  ... " << tasks - shown << " more tasks (farmctl status " << campaign.id() << ")\n";
  }
}

// The meaning of a model kind in `check`'s settings table: its summary, what its
// predictions of partial schedules mean and whether it has a spread.
std::string ModelKindMeaning(const std::string& kind) {
  const ModelKindInfo* info = FindModelKind(kind);
  if (info == nullptr) return "not a model kind of the registry";
  return info->summary + "; partial schedules: " + PartialMeaningName(info->partial) +
         (info->has_spread ? "; spread: the ensemble's stddev" : "; no spread");
}

std::string AcquisitionMeaning(const std::string& name) {
  const AcquisitionInfo* info = FindAcquisition(name);
  return info == nullptr ? "not an acquisition of the registry" : info->summary;
}

// `check`'s table of the strategy's settings: its own (the registry's, in its order)
// with their resolved values, then seed; for a per-pipeline strategy retrain_every, and
// for one that uses a model epsilon and batch; for any that uses a model the model, the
// acquisition with its own settings, and model_from.
// `learner`: farm-learner proposes the campaign's candidates (LearnerProposes), so
// even a strategy without a model has the model strategies' settings.
void PrintStrategySettings(const Strategy& strategy, const StrategyInfo& info, bool learner,
                           std::ostream& out) {
  TextTable table({"SETTING", "VALUE", "MEANING"}, {false, false, false});
  const StrategySettings values = ResolvedSettings(strategy);
  auto add_setting = [&](const SettingSpec& spec) {
    table.Add({spec.name, FormatNumber(spec.integer ? "%.0f" : "%g", values.at(spec.name)),
               spec.help});
  };
  for (const SettingSpec& spec : info.settings) add_setting(spec);
  table.Add({"seed", std::to_string(strategy.seed()), "seeds the strategy's sampling"});
  const bool per_pipeline = info.make != nullptr;  // else farm-learner runs the whole campaign
  if (learner && per_pipeline) {
    table.Add({"epsilon", FormatNumber("%g", strategy.epsilon()),
               "share of random candidates in a batch"});
    table.Add({"batch", std::to_string(strategy.batch()),
               "candidates proposed at once, shared by the pipelines"});
    if (strategy.remeasure() > 0) {
      table.Add({"remeasure", FormatNumber("%g", strategy.remeasure()),
                 "share of a batch spent measuring near-ties again"});
    }
  }
  if (per_pipeline && strategy.retrain_every() > 0) {
    table.Add({"retrain_every", std::to_string(strategy.retrain_every()),
               "new results between retrainings of the models"});
  } else if (per_pipeline) {
    table.Add({"retrain_every", "default",
               "new results between retrainings of the models: farm-learner's "
               "--retrain-every"});
  }
  if (per_pipeline && strategy.retrain_growth() > 0) {
    table.Add({"retrain_growth", FormatNumber("%g", strategy.retrain_growth()),
               "and only once the results grew by this share since the last training"});
  }
  if (learner) {
    table.Add({"model", strategy.model(), ModelKindMeaning(strategy.model())});
    table.Add(
        {"acquisition", strategy.acquisition(), AcquisitionMeaning(strategy.acquisition())});
    if (const AcquisitionInfo* acquisition = FindAcquisition(strategy.acquisition())) {
      for (const SettingSpec& spec : acquisition->settings) add_setting(spec);
    }
    if (!strategy.model_from().empty()) {
      table.Add({"model_from", strategy.model_from(),
                 "the search starts under this campaign's newest model of the kind"});
    }
  }
  table.Print(out);
}

// The campaign's state, with why it ended once it has.
std::string StateWithReason(const Campaign& campaign) {
  const std::string state = CampaignStateText(campaign.state());
  return campaign.finish_reason().empty() ? state : state + " (" + campaign.finish_reason() + ")";
}

// After the cpu model of a worker whose times are scaled for a test: says so.
std::string TestScaleNote(const HostFingerprint& host) {
  if (host.test_time_scale() <= 0) return "";
  return " (times x" + FormatNumber("%g", host.test_time_scale()) + " for a test)";
}

}  // namespace

std::string Speedup(double baseline_seconds, double best_seconds) {
  if (!(baseline_seconds > 0) || !(best_seconds > 0)) return "";
  return " (" + FormatNumber("%.2fx", baseline_seconds / best_seconds) + ")";
}

Contender FastestContender(const std::map<std::string, double>& baseline_seconds) {
  Contender fastest;
  for (const auto& [name, seconds] : baseline_seconds) {
    if (name == kReferenceOrigin || !(seconds > 0)) continue;
    if (fastest.seconds == 0 || seconds < fastest.seconds) fastest = {name, seconds};
  }
  return fastest;
}

Contender FastestContender(const PipelineProgress& pipeline) {
  return FastestContender(Sorted(pipeline.baseline_seconds()));
}

std::string VersusFastest(const Contender& fastest, double farm_seconds) {
  if (!(fastest.seconds > 0) || !(farm_seconds > 0)) return "-";
  return FormatNumber("%.2fx ", fastest.seconds / farm_seconds) + fastest.name;
}

PipelineCells PipelineTableCells(const CampaignStatus& status, int max_pipelines) {
  std::set<std::string> baselines;
  for (const PipelineProgress& p : status.pipelines()) {
    for (const auto& [name, seconds] : p.baseline_seconds()) baselines.insert(name);
  }
  PipelineCells cells;
  cells.header = {"PIPELINE", "ID",   "MEASURED",  "FARM'S BEST", "GFLOP/S",
                  "PEAK",     "GB/S", "BANDWIDTH", "ORIGIN"};
  cells.right_aligned = {false, false, true, true, true, true, true, true, false};
  for (const std::string& name : baselines) {
    cells.header.push_back(name);
    cells.right_aligned.push_back(true);
  }
  cells.header.push_back("VS FASTEST");
  cells.right_aligned.push_back(true);
  const int shown = max_pipelines > 0 ? std::min(max_pipelines, status.pipelines_size())
                                      : status.pipelines_size();
  for (int i = 0; i < shown; ++i) {
    const PipelineProgress& p = status.pipelines(i);
    const double farm = p.farm_best_seconds();
    const Throughput best = FarmBestThroughput(p);
    std::vector<std::string> row = {PipelineDisplayName(p),
                                    ShortId(p.pipeline_id()),
                                    std::to_string(p.measured()),
                                    FormatDuration(farm),
                                    FormatRate(best.gflops),
                                    FormatShare(best.peak_share),
                                    FormatRate(best.gbps),
                                    FormatShare(best.bandwidth_share),
                                    p.farm_best_origin().empty() ? "-" : p.farm_best_origin()};
    for (const std::string& name : baselines) {
      const auto it = p.baseline_seconds().find(name);
      row.push_back(it == p.baseline_seconds().end()
                        ? "-"
                        : FormatDuration(it->second) + Speedup(it->second, farm));
    }
    row.push_back(VersusFastest(FastestContender(p), farm));
    cells.rows.push_back(std::move(row));
  }
  return cells;
}

std::string FormatDuration(double seconds) {
  if (!std::isfinite(seconds) || seconds <= 0) return "-";
  if (seconds < 1e-6) return FormatNumber("%.0f ns", seconds * 1e9);
  if (seconds < 1e-3) return FormatNumber("%.3g us", seconds * 1e6);
  if (seconds < 1) return FormatNumber("%.3g ms", seconds * 1e3);
  if (seconds < 1000) return FormatNumber("%.3g s", seconds);
  return FormatNumber("%.0f s", seconds);
}

std::string FormatElapsed(double seconds) {
  const int64_t s = std::isfinite(seconds) && seconds > 0 ? static_cast<int64_t>(seconds) : 0;
  char buf[32];
  if (s < 60) {
    std::snprintf(buf, sizeof(buf), "%llds", static_cast<long long>(s));
  } else if (s < 3600) {
    std::snprintf(buf, sizeof(buf), "%lldm%02llds", static_cast<long long>(s / 60),
                  static_cast<long long>(s % 60));
  } else {
    std::snprintf(buf, sizeof(buf), "%lldh%02lldm", static_cast<long long>(s / 3600),
                  static_cast<long long>(s % 3600 / 60));
  }
  return buf;
}

std::string PipelineDisplayName(const PipelineProgress& pipeline) {
  return pipeline.name().empty() ? ShortId(pipeline.pipeline_id()) : pipeline.name();
}

std::string FormatRate(std::optional<double> rate) {
  if (!rate || !std::isfinite(*rate) || *rate < 0) return "-";
  return FormatNumber(*rate >= 100 ? "%.0f" : "%.3g", *rate);
}

std::string FormatShare(std::optional<double> share) {
  if (!share || !std::isfinite(*share) || *share < 0) return "-";
  return FormatNumber(*share >= 1 ? "%.0f%%" : "%.3g%%", *share * 100);
}

std::string FailuresText(const CampaignStatus& status) {
  std::string text;
  for (const auto& [name, count] : Sorted(status.failures_by_status())) {
    if (name == MeasurementStatus_Name(OK) || count == 0) continue;
    text += (text.empty() ? "" : ", ") + name + " " + std::to_string(count);
  }
  return text.empty() ? "none" : text;
}

BudgetUse BudgetUseOf(const Campaign& campaign) {
  Budget budget;  // none known without a config
  if (!campaign.config_json().empty()) {
    StatusOr<CampaignConfig> config = CampaignConfigFromJson(campaign.config_json());
    if (config.ok()) budget = config->budget();
  }
  // A config without benchmarks is bounded by its wall time only (campaign_yaml.h's
  // BenchmarkLimit); else the coordinator's limit is the campaign's.
  const bool time_only = budget.benchmarks() == 0 && budget.wall_time_seconds() > 0;
  const int64_t limit = time_only ? 0 : campaign.budget();
  const double wall = budget.wall_time_seconds();
  const int64_t finished = campaign.counters().finished();
  BudgetUse use;
  use.benchmarks = std::to_string(finished) + (limit > 0 ? "/" + std::to_string(limit) : "");
  if (limit > 0) use.fraction = static_cast<double>(finished) / static_cast<double>(limit);
  if (wall > 0) {
    use.time = FormatElapsed(campaign.running_seconds()) + "/" + FormatElapsed(wall);
    use.fraction = std::max(use.fraction, campaign.running_seconds() / wall);
  }
  use.fraction = std::clamp(use.fraction, 0.0, 1.0);
  return use;
}

std::string BudgetUse::Text() const {
  return benchmarks + " benchmarks" + (time.empty() ? "" : ", " + time);
}

std::string BudgetUse::Share() const { return FormatNumber("%.0f%%", 100 * fraction); }

std::string RenderCampaignLine(const Campaign& campaign) {
  return "campaign " + campaign.id() + " (" + campaign.name() + "): " + StateWithReason(campaign) +
         ", " + BudgetUseOf(campaign).Text() + ", " +
         std::to_string(campaign.pipeline_ids_size()) + " pipelines\n";
}

std::string RenderStatus(const StatusReply& reply, int max_pipelines) {
  std::ostringstream out;
  if (reply.campaigns().empty()) {
    out << "no campaigns\n" << WorkersLine(reply) << "\n";
    return out.str();
  }
  TextTable table({"CAMPAIGN", "NAME", "STATE", "BUDGET", "USED", "MEASURED", "FAILED",
                   "QUARANTINED", "QUEUED", "LEASED", "RESULTS/S", "RUNNING"},
                  {false, false, false, true, true, true, true, true, true, true, true, true});
  for (const CampaignStatus& status : reply.campaigns()) {
    const Campaign& c = status.campaign();
    const CampaignCounters& n = c.counters();
    const BudgetUse use = BudgetUseOf(c);
    table.Add({c.id(), c.name(), CampaignStateText(c.state()),
               use.benchmarks + (use.time.empty() ? "" : ", " + use.time),
               use.Share(), std::to_string(n.measured()),
               std::to_string(n.failed()), std::to_string(n.quarantined()),
               std::to_string(n.queued()), std::to_string(n.leased()),
               FormatNumber("%.2f", status.results_per_second()),
               FormatElapsed(c.running_seconds())});
  }
  table.Print(out);
  out << WorkersLine(reply) << "\n";
  for (const CampaignStatus& status : reply.campaigns()) {
    out << "\ncampaign " << status.campaign().id() << " (" << status.campaign().name()
        << "): " << (status.campaign().finish_reason().empty()
                         ? ""
                         : "ended: " + status.campaign().finish_reason() + "; ")
        << "best so far per pipeline\n";
    PrintPipelines(status, max_pipelines, out);
    PrintNetwork(status, out);
    PrintTasks(status, max_pipelines, out);
  }
  return out.str();
}

std::string RenderWatch(const StatusReply& reply, int bar_width) {
  std::ostringstream out;
  if (reply.campaigns().empty()) {
    out << "no campaign\n" << WorkersLine(reply) << "\n";
    return out.str();
  }
  const CampaignStatus& status = reply.campaigns(0);
  const Campaign& c = status.campaign();
  const CampaignCounters& n = c.counters();
  out << "campaign " << c.id() << " (" << c.name() << ")  " << StateWithReason(c)
      << "  run time " << FormatElapsed(c.running_seconds()) << "\n";
  const BudgetUse use = BudgetUseOf(c);
  const int filled = static_cast<int>(std::floor(use.fraction * bar_width));
  out << "  [" << std::string(filled, '#') << std::string(bar_width - filled, '-') << "]  "
      << use.Text() << " (" << use.Share() << ")\n";
  out << "  " << FormatNumber("%.2f", status.results_per_second()) << " results/s  measured "
      << n.measured() << "  failed " << n.failed() << "  quarantined " << n.quarantined()
      << "  queued " << n.queued() << "  leased " << n.leased() << "  results " << n.results()
      << "\n";
  out << "  " << WorkersLine(reply) << "\n";
  out << "  failures: " << FailuresText(status) << "\n";
  PrintPipelines(status, 0, out);
  PrintNetwork(status, out);
  return out.str();
}

std::string RenderWorkers(const WorkersReply& reply, int64_t now_unix_ms) {
  std::ostringstream out;
  std::map<WorkerState, int> counts;
  TextTable table({"WORKER", "HOST", "STATE", "CORES", "CREDITS", "LEASES", "OK", "FAILED",
                   "AUDITS", "TRUST", "LAST SEEN", "LABELS", "CPU"},
                  {false, false, false, true, true, true, true, true, true, false, true, false,
                   false});
  std::string flagged;
  for (const WorkerStatus& w : reply.workers()) {
    const WorkerRecord& r = w.record();
    int64_t failed = 0;
    for (const auto& [name, count] : r.failures_by_status()) failed += count;
    std::string labels;
    for (const std::string& label : r.host().labels())
      labels += (labels.empty() ? "" : ",") + label;
    const std::string seen =
        r.last_seen_unix_ms() > 0
            ? FormatElapsed(static_cast<double>(now_unix_ms - r.last_seen_unix_ms()) / 1000) +
                  " ago"
            : "never";
    ++counts[w.state()];
    // Audits on other hosts (coordinator/host_audit.h): agreed/deviated.
    const std::string audits =
        std::to_string(r.audits_agreed()) + "/" + std::to_string(r.audits_deviated());
    table.Add({r.host().worker_id(), r.host().hostname(), WorkerStateText(w.state()),
               std::to_string(r.host().cores()), std::to_string(w.credits()),
               std::to_string(w.leases()), std::to_string(r.results_ok()), std::to_string(failed),
               audits, r.flagged() ? "FLAGGED" : "ok", seen, labels.empty() ? "-" : labels,
               r.host().cpu_model() + TestScaleNote(r.host())});
    if (r.flagged()) flagged += "flagged " + r.host().worker_id() + ": " + r.flag_reason() + "\n";
  }
  out << reply.workers_size() << (reply.workers_size() == 1 ? " worker:" : " workers:");
  for (const WorkerState state : kWorkerStates) {
    out << " " << counts[state] << " " << WorkerStateText(state)
        << (state == WORKER_DEAD ? "" : ",");
  }
  out << "\n";
  if (reply.workers_size() > 0) table.Print(out);
  if (!flagged.empty()) {
    out << flagged
        << "a flagged host's results count neither in the best nor in training; once it is "
           "fixed: farmctl workers --clear WORKER\n";
  }
  return out.str();
}

StatusOr<std::string> RenderBest(const BestReply& reply) {
  struct Known {
    PipelineGraph graph;
    std::string name;
  };
  std::map<std::string, Known> pipelines;
  for (const PipelineSpec& spec : reply.pipelines()) {
    StatusOr<PipelineGraph> graph = PipelineGraph::Build(spec);
    if (!graph.ok())
      return graph.status().WithContext("pipeline '" + spec.name() + "' of the reply");
    const std::string id = PipelineId(*graph);
    pipelines.emplace(id, Known{std::move(*graph), spec.name()});
  }
  std::ostringstream out;
  std::string current;
  int rank = 0;
  for (const StoredMeasurementRecord& record : reply.best()) {
    const Measurement& m = record.measurement();
    const Candidate& c = m.candidate();
    const auto known = pipelines.find(c.pipeline_id());
    if (known == pipelines.end()) {
      return Status::Error("measurement " + std::to_string(record.seq()) + " is of pipeline " +
                           c.pipeline_id() + ", which the reply does not carry");
    }
    if (c.pipeline_id() != current) {
      if (!current.empty()) out << "\n";
      current = c.pipeline_id();
      rank = 0;
      out << "// pipeline " << known->second.name << " (" << current << ")\n";
    }
    ++rank;
    out << "// #" << rank << ": median " << FormatDuration(m.stats().median_seconds()) << " (min "
        << FormatDuration(m.stats().min_seconds()) << ", " << m.samples_seconds_size()
        << " samples), origin " << (c.origin().empty() ? "-" : c.origin()) << ", schedule "
        << c.schedule_hash()
        << (c.repeat() > 0 ? " (measured again: repeat " + std::to_string(c.repeat()) + ")" : "")
        << ", worker " << m.host().worker_id() << "\n";
    if (c.origin() == kOnnxRuntimeBaseline) {
      out << "// ONNX Runtime's run of the pipeline written as an ONNX model: no Halide schedule"
          << (m.runtime_version().empty() ? "" : " (" + m.runtime_version() + ")") << "\n";
      continue;
    }
    if (c.origin() == kLibtorchBaseline) {
      out << "// libtorch's run of the pipeline: no Halide schedule";
      if (!m.runtime_version().empty()) out << " (" << m.runtime_version() << ")";
      if (!m.torch_layout().empty()) out << "; layout " << m.torch_layout();
      std::string layouts;
      for (const TorchLayoutRun& run : m.torch_layouts()) {
        layouts += (layouts.empty() ? "" : ", ") + run.layout() + " " +
                   (run.status() == OK ? FormatDuration(run.stats().median_seconds())
                                       : MeasurementStatus_Name(run.status()));
      }
      if (!layouts.empty()) out << " (" << layouts << ")";
      out << "\n";
      continue;
    }
    if (IsAutoschedulerName(c.origin())) {
      if (m.schedule_source().empty()) {
        out << "// (the worker recorded no source for this " << c.origin() << " schedule)\n";
      } else {
        out << m.schedule_source() << (m.schedule_source().back() == '\n' ? "" : "\n");
      }
      continue;
    }
    StatusOr<std::string> source = ScheduleSource(known->second.graph, c.schedule());
    if (!source.ok()) {
      return source.status().WithContext("measurement " + std::to_string(record.seq()) +
                                         " (schedule " + c.schedule_hash() + ")");
    }
    out << *source << (source->empty() || source->back() == '\n' ? "" : "\n");
  }
  if (reply.best().empty()) out << "no measured schedule yet\n";
  return out.str();
}

std::string RenderCampaignCheck(const CampaignConfig& config, const SubmitCampaign& submission) {
  std::ostringstream out;
  out << submission.file_name() << ": campaign " << config.name() << " is valid\n";
  const Strategy& strategy = config.strategy();
  const StrategyInfo* info = FindStrategy(strategy.name());
  if (info == nullptr) {
    out << "strategy " << strategy.name() << ": not a strategy of the registry\n";
  } else {
    out << "strategy " << info->name << ": "
        << (config.has_replay() && !info->uses_model
                ? "uniform random picks of the dataset's schedules, proposed by farm-learner"
                : info->summary)
        << "\n";
    PrintStrategySettings(strategy, *info, LearnerProposes(config), out);
  }
  if (config.has_replay()) {
    const ReplaySource& replay = config.replay();
    out << "replay of dataset " << replay.dataset() << " (id " << replay.dataset_id()
        << "): " << replay.pipeline_ids_size() << " pipelines searched, "
        << replay.held_out_pipelines_size() << " held out for scoring (share "
        << FormatNumber("%g", replay.held_out()) << ", split seed " << replay.split_seed()
        << "); only a replay worker of this dataset takes its leases\n";
  }
  out << "pipelines: " << submission.pipelines_size() << "\n";
  TextTable pipelines({"NAME", "SOURCE", "STAGES"}, {false, false, true});
  for (const PipelineSpec& spec : submission.pipelines()) {
    pipelines.Add({spec.name(), spec.source(), std::to_string(spec.stages_size())});
  }
  pipelines.Print(out);
  const Budget& budget = config.budget();
  out << "budget: "
      << (budget.benchmarks() > 0 ? std::to_string(budget.benchmarks()) + " benchmarks"
                                  : "no benchmark limit")
      << ", "
      << (budget.wall_time_seconds() > 0 ? "wall time " + FormatElapsed(budget.wall_time_seconds())
                                         : "no wall-time limit")
      << "\n";
  std::string baselines;
  for (const std::string& name : config.baselines()) {
    baselines += (baselines.empty() ? "" : ", ") + name;
  }
  out << "baselines: " << (baselines.empty() ? "none" : baselines) << "\n";
  return out.str();
}

std::string ToJsonLine(const google::protobuf::Message& message) {
  google::protobuf::util::JsonPrintOptions options;
  options.preserve_proto_field_names = true;
  options.always_print_primitive_fields = true;
  std::string json;
  // Printing a well-formed message cannot fail.
  (void)google::protobuf::util::MessageToJsonString(message, &json, options);
  return json;
}

std::string RenderModelList(const ModelsReply& reply) {
  if (reply.models().empty()) return "no models yet: farm-learner stores them as it trains\n";
  TextTable table({"KIND", "VERSION", "STORED (UTC)", "TRAINED ON", "HELD OUT", "SCHEMA",
                   "PAIR-ACC", "TAU", "TOP1", "MAPE%"},
                  {false, false, false, true, true, true, true, true, true, true});
  const auto metric = [](const Model& model, const char* key, const char* format) {
    auto it = model.metrics().find(key);
    return it == model.metrics().end() ? std::string("-") : FormatNumber(format, it->second);
  };
  for (const Model& model : reply.models()) {
    const std::time_t seconds = static_cast<std::time_t>(model.created_unix_ms() / 1000);
    std::tm utc{};
    gmtime_r(&seconds, &utc);
    char stored[32];
    std::strftime(stored, sizeof(stored), "%Y-%m-%d %H:%M:%S", &utc);
    // A model whose training a test scaled says so where its version is read.
    const std::string version =
        model.test_learning_rate_scale() > 0
            ? model.version() + " (learning rates x" +
                  FormatNumber("%g", model.test_learning_rate_scale()) + " for a test)"
            : model.version();
    table.Add({model.kind(), version, stored, std::to_string(model.training_set_size()),
               std::to_string(model.held_out_size()),
               std::to_string(model.feature_schema_version()),
               metric(model, "pairwise_accuracy", "%.3f"), metric(model, "kendall_tau", "%.3f"),
               metric(model, "top1_regret", "%.2f"), metric(model, "mape", "%.1f")});
  }
  std::ostringstream out;
  table.Print(out);
  return out.str();
}

std::string RenderModelEval(const ModelsReply& reply) {
  // Newest first from the coordinator: the first of each kind is its newest.
  std::vector<const Model*> newest;
  std::set<std::string> kinds;
  for (const Model& model : reply.models()) {
    if (kinds.insert(model.kind()).second) newest.push_back(&model);
  }
  if (newest.empty()) return "no models yet: farm-learner stores them as it trains\n";
  const auto split_of = [](const Model& model) {
    std::vector<std::string> ids(model.held_out_pipelines().begin(),
                                 model.held_out_pipelines().end());
    std::sort(ids.begin(), ids.end());
    std::string text;
    for (const std::string& id : ids) text += (text.empty() ? "" : ", ") + id.substr(0, 12);
    return text;
  };
  std::map<std::string, std::vector<const Model*>> by_split;
  for (const Model* model : newest) by_split[split_of(*model)].push_back(model);
  std::ostringstream out;
  for (const auto& [split, models] : by_split) {
    out << "held-out pipelines: " << (split.empty() ? "none (one pipeline)" : split) << "\n";
    std::vector<NamedMetrics> rows;
    for (const Model* model : models) {
      const std::map<std::string, double> metrics(model->metrics().begin(), model->metrics().end());
      rows.push_back({model->kind() + " (" + model->version() + ", trained on " +
                          std::to_string(model->training_set_size()) + ")",
                      MetricsFromMap(metrics)});
    }
    out << FormatMetricsTable(rows) << "\n";
  }
  return out.str();
}

}  // namespace schedfarm
