#include "farmctl/curves.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <optional>
#include <set>
#include <sstream>

#include "campaign/campaign_yaml.h"
#include "dataset/dataset.h"
#include "farmctl/svg_chart.h"

namespace schedfarm {
namespace {

constexpr int kStep = 100;            // the benchmark counts the curves are read at
constexpr double kWithin = 1.05;      // "within 5% of the dataset's best"
constexpr const char kRandom[] = "random";
const double kNaN = std::nan("");

// One campaign's curves on the grid kStep, 2 kStep, ... up to its result count.
struct Curves {
  std::vector<double> tau, top1, within;  // index i: at (i + 1) * kStep benchmarks
  // Per pipeline, its own results until its best was within 5% of the dataset's best
  // (censored at its result count + 1 when it never was), and how many got there.
  double mean_to_within = kNaN;
  int reached = 0, pipelines = 0;
};

Curves CurvesOf(const CurveCampaign& c, const CampaignConfig& config,
                const std::map<std::string, double>& dataset_best) {
  Curves out;
  std::vector<const Model*> models;
  for (const Model& m : c.models) {
    if (m.kind() == config.strategy().model()) models.push_back(&m);
  }
  std::sort(models.begin(), models.end(), [](const Model* a, const Model* b) {
    return a->training_set_size() < b->training_set_size();
  });
  const auto metric = [](const Model* m, const char* key) {
    auto it = m->metrics().find(key);
    return it == m->metrics().end() ? kNaN : it->second;
  };
  std::map<std::string, double> best;
  std::map<std::string, int> results, to_within;
  const std::set<std::string> pipelines(config.replay().pipeline_ids().begin(),
                                        config.replay().pipeline_ids().end());
  int within = 0;
  size_t next_model = 0;
  const Model* newest = nullptr;
  for (size_t i = 0; i < c.measurements.size(); ++i) {
    const Measurement& m = c.measurements[i];
    const std::string& id = m.candidate().pipeline_id();
    ++results[id];
    const double median = m.stats().median_seconds();
    auto target = dataset_best.find(id);
    if (m.status() == OK && median > 0 && target != dataset_best.end()) {
      const bool was_within = best.count(id) && best[id] <= target->second * kWithin;
      if (!best.count(id) || median < best[id]) best[id] = median;
      if (!was_within && best[id] <= target->second * kWithin) {
        ++within;
        to_within[id] = results[id];
      }
    }
    const size_t n = i + 1;
    if (n % kStep != 0) continue;
    while (next_model < models.size() &&
           models[next_model]->training_set_size() <= static_cast<int64_t>(n)) {
      newest = models[next_model++];
    }
    out.tau.push_back(newest ? metric(newest, "kendall_tau") : kNaN);
    out.top1.push_back(newest ? metric(newest, "top1_regret") : kNaN);
    out.within.push_back(pipelines.empty() ? kNaN
                                           : static_cast<double>(within) / pipelines.size());
  }
  double sum = 0;
  for (const std::string& id : pipelines) {
    auto it = to_within.find(id);
    sum += it != to_within.end() ? it->second : results[id] + 1;
    out.reached += it != to_within.end() ? 1 : 0;
  }
  out.pipelines = static_cast<int>(pipelines.size());
  out.mean_to_within = pipelines.empty() ? kNaN : sum / pipelines.size();
  return out;
}

struct Group {
  std::string name;
  std::vector<Curves> seeds;
  // The seed average at grid index i, where every seed has a value.
  double Mean(std::vector<double> Curves::*curve, size_t i) const {
    double sum = 0;
    for (const Curves& s : seeds) {
      if (i >= (s.*curve).size() || std::isnan((s.*curve)[i])) return kNaN;
      sum += (s.*curve)[i];
    }
    return seeds.empty() ? kNaN : sum / seeds.size();
  }
  size_t Length() const {
    size_t n = 0;
    for (const Curves& s : seeds) n = std::max(n, s.tau.size());
    return n;
  }
  // The last grid index where the seed average of tau is defined.
  std::optional<size_t> LastTau() const {
    for (size_t i = Length(); i-- > 0;) {
      if (!std::isnan(Mean(&Curves::tau, i))) return i;
    }
    return std::nullopt;
  }
  // Benchmarks from which the seed average of tau is at `goal` or above to the end of
  // the curve: a curve that crosses the goal and falls back has not reached it.
  double BenchmarksToTau(double goal) const {
    double reached = kNaN;
    for (size_t i = Length(); i-- > 0;) {
      const double tau = Mean(&Curves::tau, i);
      if (std::isnan(tau)) continue;
      if (tau < goal) break;
      reached = static_cast<double>((i + 1) * kStep);
    }
    return reached;
  }
  double MeanToWithin() const {
    double sum = 0;
    for (const Curves& s : seeds) sum += s.mean_to_within;
    return seeds.empty() ? kNaN : sum / seeds.size();
  }
};

std::string Cell(double v, const char* format = "%.3f") {
  if (std::isnan(v)) return "-";
  char text[32];
  std::snprintf(text, sizeof(text), format, v);
  return text;
}

void Table(std::ostringstream& out, const std::string& title, const std::vector<Group>& groups,
           std::vector<double> Curves::*curve, const std::vector<size_t>& rows,
           const char* format) {
  out << "\n" << title << "\n\n| benchmarks |";
  for (const Group& g : groups) out << " " << g.name << " |";
  out << "\n|---|";
  for (size_t k = 0; k < groups.size(); ++k) out << "---|";
  out << "\n";
  for (size_t i : rows) {
    out << "| " << (i + 1) * kStep << " |";
    for (const Group& g : groups) out << " " << Cell(g.Mean(curve, i), format) << " |";
    out << "\n";
  }
}

LineChart Chart(const std::string& title, const std::string& y_label,
                const std::vector<Group>& groups, std::vector<double> Curves::*curve) {
  LineChart chart;
  chart.title = title;
  chart.x_label = "benchmarks";
  chart.y_label = y_label;
  for (const Group& g : groups) {
    ChartSeries series;
    series.name = g.name;
    for (size_t i = 0; i < g.Length(); ++i) {
      const double v = g.Mean(curve, i);
      if (!std::isnan(v)) series.points.push_back({static_cast<double>((i + 1) * kStep), v});
    }
    chart.series.push_back(std::move(series));
  }
  return chart;
}

}  // namespace

std::string CurveGroup(const CampaignConfig& config) {
  const Strategy& s = config.strategy();
  if (s.name() == kRandom) return kRandom;
  std::string name = s.acquisition();
  if (s.epsilon() > 0) name += " + " + Cell(100 * s.epsilon(), "%g") + "% random";
  if (s.remeasure() > 0) name += " + " + Cell(100 * s.remeasure(), "%g") + "% near-ties";
  if (s.name() != "model-guided") name += " [" + s.name() + "]";
  return name;
}

std::map<std::string, double> DatasetBestRuntimes(const Dataset& dataset) {
  std::map<std::string, double> best;
  for (const auto& [key, m] : FirstOkMeasurements(dataset)) {
    const double median = m->stats().median_seconds();
    auto [it, added] = best.emplace(m->candidate().pipeline_id(), median);
    if (!added) it->second = std::min(it->second, median);
  }
  return best;
}

CurveReport RenderLearningCurves(const std::vector<CurveCampaign>& campaigns,
                                 const std::map<std::string, double>& dataset_best) {
  std::map<std::string, Group> by_name;
  std::ostringstream out;
  for (const CurveCampaign& c : campaigns) {
    StatusOr<CampaignConfig> config = CampaignConfigFromJson(c.status.campaign().config_json());
    if (!config.ok()) {
      out << "campaign " << c.status.campaign().id() << " skipped: " << config.status().message()
          << "\n";
      continue;
    }
    Group& group = by_name[CurveGroup(*config)];
    group.name = CurveGroup(*config);
    group.seeds.push_back(CurvesOf(c, *config, dataset_best));
  }
  std::vector<Group> groups;
  if (by_name.count(kRandom)) groups.push_back(by_name[kRandom]);
  for (auto& [name, group] : by_name) {
    if (name != kRandom) groups.push_back(group);
  }
  size_t length = 0;
  for (const Group& g : groups) length = std::max(length, g.Length());
  std::vector<size_t> rows;  // 100, 200, 400, 800, ... and the last
  for (size_t i = 0; i < length; i = 2 * i + 1) rows.push_back(i);
  if (length > 0 && rows.back() != length - 1) rows.push_back(length - 1);

  out << "Learning curves of " << campaigns.size() << " campaigns in " << groups.size()
      << " groups (seed averages at every " << kStep << " benchmarks)\n";
  Table(out, "Held-out Kendall tau of the newest model", groups, &Curves::tau, rows, "%.3f");
  Table(out, "Held-out top-1 regret of the newest model", groups, &Curves::top1, rows, "%.2f");
  Table(out, "Share of pipelines within 5% of the dataset's best", groups, &Curves::within, rows,
        "%.2f");

  const Group* random = by_name.count(kRandom) ? &by_name[kRandom] : nullptr;
  const Group* epsilon_greedy = nullptr;
  for (const Group& g : groups) {
    if (g.name.rfind("exploit + ", 0) == 0 && g.name.find('[') == std::string::npos) {
      epsilon_greedy = &by_name[g.name];
    }
  }
  double goal = kNaN, random_n = kNaN;
  if (random != nullptr && random->LastTau()) {
    goal = random->Mean(&Curves::tau, *random->LastTau());
    random_n = random->BenchmarksToTau(goal);
  }
  out << "\nHeadline ratios (goal: tau ratio <= 0.25, 5% ratio <= 0.33)\n\n"
      << "| group | seeds | final tau | benchmarks to random's final tau (" << Cell(goal)
      << ") | ratio to random | pipeline benchmarks to within 5% | pipelines that got there | "
         "ratio to epsilon-greedy |\n|---|---|---|---|---|---|---|---|\n";
  for (const Group& g : groups) {
    const std::optional<size_t> last = g.LastTau();
    const double n = g.BenchmarksToTau(goal);
    int reached = 0, total = 0;
    for (const Curves& s : g.seeds) reached += s.reached, total += s.pipelines;
    out << "| " << g.name << " | " << g.seeds.size() << " | "
        << Cell(last ? g.Mean(&Curves::tau, *last) : kNaN) << " | " << Cell(n, "%.0f") << " | "
        << Cell(n / random_n, "%.2f") << " | " << Cell(g.MeanToWithin(), "%.2f") << " | "
        << reached << "/" << total << " | "
        << Cell(epsilon_greedy ? g.MeanToWithin() / epsilon_greedy->MeanToWithin() : kNaN,
                "%.2f")
        << " |\n";
  }

  CurveReport report;
  report.text = out.str();
  report.charts["tau.svg"] = RenderSvgLineChart(
      Chart("Held-out Kendall tau", "Kendall tau", groups, &Curves::tau));
  report.charts["top1.svg"] = RenderSvgLineChart(
      Chart("Held-out top-1 regret", "top-1 regret (x best)", groups, &Curves::top1));
  report.charts["within5.svg"] = RenderSvgLineChart(Chart(
      "Pipelines within 5% of the dataset's best", "share of pipelines", groups, &Curves::within));
  return report;
}

}  // namespace schedfarm
