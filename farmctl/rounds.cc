#include "farmctl/rounds.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <numeric>
#include <set>
#include <sstream>
#include <utility>

#include "common/text.h"
#include "farmctl/compare.h"
#include "farmctl/render.h"
#include "protocol/state_names.h"
#include "tools/text_table.h"

namespace schedfarm {
namespace {

using PipelineHash = std::pair<std::string, std::string>;

std::string RoundStateText(ValueRoundState state) {
  switch (state) {
    case VALUE_ROUND_PLANNED:
      return "planned";
    case VALUE_ROUND_FITTED:
      return "fitted";
    default:
      return "?";
  }
}

std::string MetricText(const Model* model, const char* key, const char* format) {
  if (model == nullptr) return "-";
  const auto it = model->metrics().find(key);
  if (it == model->metrics().end() || !std::isfinite(it->second)) return "-";
  return FormatNumber(format, it->second);
}

void PrintRounds(const ValueIterationReport& report, std::ostream& out) {
  std::map<std::string, const Model*> models;  // by version
  for (const Model& model : report.models) models[model.version()] = &model;
  TextTable table({"ROUND", "STATE", "MODEL", "PIPELINES", "PREFIXES", "TARGETS", "PLAN", "FIT",
                   "HELD-OUT MAPE", "TAU", "TOP-1 REGRET"},
                  {true, false, false, true, true, true, true, true, true, true, true});
  for (const ValueRound& round : report.rounds) {
    int targets = 0;
    for (const ValuePrefix& prefix : round.prefixes()) targets += prefix.target_seconds() > 0;
    const auto model = models.find(round.fitted_model());
    const Model* fitted = model == models.end() ? nullptr : model->second;
    const bool planned = round.round() > 0;
    table.Add({std::to_string(round.round()), RoundStateText(round.state()),
               round.fitted_model().empty() ? "-" : round.fitted_model(),
               planned ? std::to_string(round.pipeline_ids_size()) : "-",
               planned ? std::to_string(round.prefixes_size()) : "-",
               round.state() == VALUE_ROUND_FITTED && planned ? std::to_string(targets) : "-",
               planned ? FormatElapsed(round.plan_seconds()) : "-",
               round.state() == VALUE_ROUND_FITTED ? FormatElapsed(round.fit_seconds()) : "-",
               MetricText(fitted, "mape", "%.1f%%"), MetricText(fitted, "kendall_tau", "%.2f"),
               MetricText(fitted, "top1_regret", "%.2fx")});
  }
  table.Print(out);
}

// One row of the comparison: a runtime per held-out pipeline (0: none), and for a
// search under a value function its mean wall time per pipeline (0: not a search).
struct MethodRow {
  std::string name;
  std::vector<double> seconds;
  double search_seconds = 0;
};

// The kind of a pipeline's source as the figure groups it: "generator" for the random
// pipelines, else the source's own kind ("zoo", "yaml", "onnx"); "" when unknown.
std::string SourceKind(const ValueIterationReport& report, const std::string& pipeline_id) {
  const auto found = report.sources.find(pipeline_id);
  if (found == report.sources.end()) return "";
  const std::string kind = found->second.substr(0, found->second.find(':'));
  return kind == "random" ? "generator" : kind;
}

// The geometric mean of one random schedule's runtime over the row's, over the
// pipelines `columns` where both have one; "-" with none.
std::string RatioText(const MethodRow& row, const MethodRow& one_random,
                      const std::vector<size_t>& columns) {
  std::vector<double> ratios;
  for (const size_t i : columns) {
    if (row.seconds[i] > 0 && one_random.seconds[i] > 0) {
      ratios.push_back(one_random.seconds[i] / row.seconds[i]);
    }
  }
  return ratios.empty() ? "-" : FormatNumber("%.2fx", GeometricMeanOf(ratios));
}

void PrintFigure(const ValueIterationReport& report, std::ostream& out) {
  // The held-out pipelines: those the evaluations search, in campaign order.
  std::set<std::string> evaluated;
  for (const ValueRound& round : report.rounds) {
    for (const ValueEvaluation& e : round.evaluations()) evaluated.insert(e.pipeline_id());
  }
  std::vector<const PipelineProgress*> pipelines;
  for (const PipelineProgress& p : report.status.pipelines()) {
    if (evaluated.count(p.pipeline_id())) pipelines.push_back(&p);
  }
  if (pipelines.empty()) {
    out << "  no value function evaluated on the held-out pipelines yet\n";
    return;
  }
  std::map<PipelineHash, double> measured;  // OK medians
  std::map<std::string, std::vector<double>> random;
  for (const Measurement& m : report.measurements) {
    if (m.status() != OK || !(m.stats().median_seconds() > 0)) continue;
    const Candidate& c = m.candidate();
    measured[{c.pipeline_id(), c.schedule_hash()}] = m.stats().median_seconds();
    if (c.origin() == "random") random[c.pipeline_id()].push_back(m.stats().median_seconds());
  }
  std::vector<MethodRow> rows;
  MethodRow one_random{"random (one schedule)", {}}, best_random{"random (best of warm-up)", {}};
  for (const PipelineProgress* p : pipelines) {
    const std::vector<double>& runtimes = random[p->pipeline_id()];
    one_random.seconds.push_back(GeometricMeanOf(runtimes));
    best_random.seconds.push_back(runtimes.empty() ? 0
                                                   : *std::min_element(runtimes.begin(),
                                                                       runtimes.end()));
  }
  rows.push_back(one_random);
  rows.push_back(best_random);
  for (const ValueRound& round : report.rounds) {
    for (const char* search : {"greedy", "beam"}) {
      MethodRow row{"V" + std::to_string(round.round()) + " " + search, {}};
      int searches = 0;
      for (const PipelineProgress* p : pipelines) {
        double seconds = 0;
        for (const ValueEvaluation& e : round.evaluations()) {
          if (e.pipeline_id() != p->pipeline_id() || e.search() != search) continue;
          ++searches;
          row.search_seconds += e.search_seconds();
          const auto found = measured.find({e.pipeline_id(), e.schedule_hash()});
          if (found != measured.end()) seconds = found->second;
        }
        row.seconds.push_back(seconds);
      }
      if (searches == 0) continue;
      row.search_seconds /= searches;
      rows.push_back(std::move(row));
    }
  }
  std::set<std::string> baselines;
  for (const PipelineProgress* p : pipelines) {
    for (const auto& [name, seconds] : p->baseline_seconds()) baselines.insert(name);
  }
  for (const std::string& baseline : baselines) {
    MethodRow row{baseline, {}};
    for (const PipelineProgress* p : pipelines) {
      const auto found = p->baseline_seconds().find(baseline);
      row.seconds.push_back(found == p->baseline_seconds().end() ? 0 : found->second);
    }
    rows.push_back(std::move(row));
  }

  // The held-out pipelines by kind of source, in order of first appearance.
  std::vector<std::pair<std::string, std::vector<size_t>>> kinds;
  for (size_t i = 0; i < pipelines.size(); ++i) {
    const std::string kind = SourceKind(report, pipelines[i]->pipeline_id());
    auto at = std::find_if(kinds.begin(), kinds.end(),
                           [&](const auto& entry) { return entry.first == kind; });
    if (at == kinds.end()) at = kinds.insert(kinds.end(), {kind, {}});
    at->second.push_back(i);
  }
  if (kinds.size() < 2) kinds.clear();
  std::vector<size_t> all(pipelines.size());
  std::iota(all.begin(), all.end(), 0);

  std::vector<std::string> header = {"SEARCH"};
  for (const PipelineProgress* p : pipelines) header.push_back(PipelineDisplayName(*p));
  header.push_back("GEOMEAN");
  header.push_back("VS ONE RANDOM");
  for (const auto& [kind, columns] : kinds) {
    header.push_back(Upper(kind.empty() ? "other" : kind) + " (" + std::to_string(columns.size()) +
                     ")");
  }
  header.push_back("SEARCH TIME");
  std::vector<bool> right(header.size(), true);
  right[0] = false;
  TextTable table(header, right);
  for (const MethodRow& row : rows) {
    std::vector<std::string> cells = {row.name};
    std::vector<double> present;
    for (size_t i = 0; i < row.seconds.size(); ++i) {
      cells.push_back(FormatDuration(row.seconds[i]));
      if (row.seconds[i] > 0) present.push_back(row.seconds[i]);
    }
    const std::string of = present.size() == row.seconds.size()
                               ? ""
                               : " (" + std::to_string(present.size()) + " of " +
                                     std::to_string(row.seconds.size()) + ")";
    cells.push_back(FormatDuration(GeometricMeanOf(present)) + of);
    cells.push_back(RatioText(row, one_random, all));
    for (const auto& [kind, columns] : kinds) cells.push_back(RatioText(row, one_random, columns));
    cells.push_back(row.search_seconds > 0 ? FormatNumber("%.2f s", row.search_seconds) : "-");
    table.Add(cells);
  }
  table.Print(out);
}

}  // namespace

std::string RenderValueRounds(const ValueIterationReport& report) {
  std::ostringstream out;
  const Campaign& campaign = report.status.campaign();
  int fitted = 0;
  std::string rule;
  for (const ValueRound& round : report.rounds) {
    fitted += round.state() == VALUE_ROUND_FITTED && round.round() > 0;
    if (!round.target_rule().empty()) rule = round.target_rule();
  }
  out << "value iteration of " << campaign.id() << " (" << CampaignStateText(campaign.state())
      << "): V0";
  if (report.rounds.empty()) {
    out << " not trained yet (the random warm-up runs first)\n";
    return out.str();
  }
  out << " and " << fitted << " round" << (fitted == 1 ? "" : "s") << " fitted; prefix targets: "
      << (rule == "measured" ? "the least runtime measured among the schedules extending the "
                               "prefix (V_{i-1}'s own prediction takes no part)"
                             : rule)
      << "\n\n";
  PrintRounds(report, out);
  out << "\nheld-out pipelines: the schedule greedy and beam search find under each value "
         "function, as measured (vs one random: the geometric mean of one random schedule's "
         "runtime over the row's; held-out pipelines of more than one kind of source also per "
         "kind; search time: the mean wall time of one search)\n";
  PrintFigure(report, out);
  return out.str();
}

}  // namespace schedfarm
