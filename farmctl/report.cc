#include "farmctl/report.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <map>
#include <set>
#include <sstream>

#include "campaign/campaign_yaml.h"
#include "farmctl/render.h"
#include "farmctl/svg_chart.h"
#include "farmctl/task_table.h"
#include "protocol/state_names.h"
#include "scheduler/autoscheduler_names.h"
#include "tools/text_table.h"

namespace schedfarm {
namespace {

// Pipelines drawn one chart each; the rest are named under the charts.
constexpr size_t kMaxPipelineCharts = 12;
// The per-pipeline charts' size, two to a row.
constexpr int kSmallWidth = 520, kSmallHeight = 320;
// Buckets of the time axis of the failure and throughput charts.
constexpr int kTimeBuckets = 20;
// The histogram's bin width, in doublings over the pipeline's best.
constexpr double kHistogramBin = 0.25;

const char kStyle[] =
    "body{font-family:sans-serif;margin:24px auto;max-width:1100px;color:#222}"
    "h1{font-size:22px}h2{font-size:18px;margin-top:32px;border-bottom:1px solid #ccc}"
    "table{border-collapse:collapse;font-size:13px}"
    "td,th{border:1px solid #ddd;padding:3px 8px;text-align:right}"
    "td:first-child,th:first-child{text-align:left}"
    "figure.chart{display:inline-block;margin:8px}"
    "p.empty{color:#666;font-style:italic}";

// A baseline's or the reference schedule's measurement: drawn as a flat line, never
// part of the search's best so far.
bool IsBaselineOrigin(const std::string& origin) {
  return IsBaselineName(origin) || origin == "reference";
}

bool Measured(const Measurement& m) {
  return m.status() == OK && std::isfinite(m.stats().median_seconds()) &&
         m.stats().median_seconds() > 0;
}

std::string PipelineName(const CampaignStatus& status, const std::string& id) {
  for (const PipelineProgress& p : status.pipelines()) {
    if (p.pipeline_id() == id) return PipelineDisplayName(p);
  }
  return id.substr(0, 12);
}

// The chart in its figure, with the number of points it draws.
std::string Figure(const std::string& id, const LineChart& chart, int width = 720,
                   int height = 420) {
  size_t points = 0;
  for (const ChartSeries& s : chart.series) points += s.points.size();
  return "<figure class=\"chart\" id=\"" + XmlEscaped(id) + "\" data-points=\"" +
         std::to_string(points) + "\">\n" + RenderSvgLineChart(chart, width, height) + "</figure>\n";
}

std::string Empty(const std::string& text) { return "<p class=\"empty\">" + text + "</p>\n"; }

// `config` is null when the campaign's config does not parse.
std::string Summary(const ReportInput& input, const CampaignConfig* config) {
  const Campaign& c = input.status.campaign();
  const std::string strategy = config != nullptr ? config->strategy().name() : "?";
  std::set<std::string> hosts;
  for (const Measurement& m : input.measurements) hosts.insert(m.host().worker_id());
  std::ostringstream html;
  html << "<table>\n"
       << "<tr><td>campaign</td><td>" << XmlEscaped(c.id()) << "</td></tr>\n"
       << "<tr><td>state</td><td>" << CampaignStateText(c.state()) << "</td></tr>\n"
       << "<tr><td>strategy</td><td>" << XmlEscaped(strategy) << "</td></tr>\n"
       << "<tr><td>benchmarks</td><td>" << c.counters().results() << " / " << c.budget()
       << "</td></tr>\n"
       << "<tr><td>failures</td><td>" << XmlEscaped(FailuresText(input.status)) << "</td></tr>\n"
       << "<tr><td>workers</td><td>" << hosts.size() << "</td></tr>\n"
       << "</table>\n";
  return html.str();
}

// An HTML table of text cells; `attributes` go into its opening tag.
std::string HtmlTable(const std::vector<std::string>& header,
                      const std::vector<std::vector<std::string>>& rows,
                      const std::string& attributes = "") {
  std::ostringstream html;
  html << "<table" << attributes << ">\n<tr>";
  for (const std::string& cell : header) html << "<th>" << XmlEscaped(cell) << "</th>";
  html << "</tr>\n";
  for (const std::vector<std::string>& row : rows) {
    html << "<tr>";
    for (const std::string& cell : row) html << "<td>" << XmlEscaped(cell) << "</td>";
    html << "</tr>\n";
  }
  html << "</table>\n";
  return html.str();
}

// Per pipeline, the columns of `farmctl status` (PipelineTableCells).
std::string PipelineTable(const CampaignStatus& status) {
  const PipelineCells cells = PipelineTableCells(status);
  return HtmlTable(cells.header, cells.rows);
}

// A network campaign's distinct tasks (farmctl/task_table.h), with the same columns as
// `farmctl status`; empty for any other campaign.
std::string TaskTable(const CampaignStatus& status) {
  const std::vector<TaskRow> rows = NetworkTaskRows(status);
  if (rows.empty()) return "";
  std::vector<std::string> header;
  for (const TaskColumn& column : TaskColumns()) header.push_back(column.header);
  std::vector<std::vector<std::string>> cells;
  for (const TaskRow& row : rows) {
    cells.emplace_back();
    for (const TaskColumn& column : TaskColumns()) cells.back().push_back(column.cell(row));
  }
  return "<h2>Tasks</h2>\n" + HtmlTable(header, cells, " id=\"tasks\"");
}

// One best-so-far chart: the search's best median so far in milliseconds against the
// benchmarks of `searched`, each baseline measured on `baselines_of` a flat line.
LineChart BestSoFarChart(const std::string& title,
                         const std::vector<const Measurement*>& searched,
                         const std::vector<const Measurement*>& baselines_of) {
  ChartSeries best{"search best so far", {}};
  double best_ms = 0;
  int benchmark = 0;
  for (const Measurement* m : searched) {
    if (IsBaselineOrigin(m->candidate().origin())) continue;
    ++benchmark;
    if (!Measured(*m)) continue;
    const double ms = m->stats().median_seconds() * 1e3;
    if (best_ms == 0 || ms < best_ms) best_ms = ms;
    best.points.push_back({static_cast<double>(benchmark), best_ms});
  }
  std::map<std::string, double> baselines;
  for (const Measurement* m : baselines_of) {
    if (!Measured(*m) || !IsBaselineOrigin(m->candidate().origin())) continue;
    const double ms = m->stats().median_seconds() * 1e3;
    auto [it, added] = baselines.insert({m->candidate().origin(), ms});
    if (!added) it->second = std::min(it->second, ms);
  }
  LineChart chart{title, "benchmarks", "median runtime (ms)", {best}};
  for (const auto& [origin, ms] : baselines) {
    chart.series.push_back({origin, {{1, ms}, {std::max(benchmark, 2) * 1.0, ms}}});
  }
  return chart;
}

// Best so far per pipeline in the campaign's order. A network campaign's first chart
// is the whole network: its assembled schedules against the baselines measured on the
// network itself; its tasks follow, the most measured first.
std::string BestSoFarCharts(const ReportInput& input, const CampaignConfig* config) {
  std::map<std::string, std::vector<const Measurement*>> by_pipeline;
  for (const Measurement& m : input.measurements) {
    by_pipeline[m.candidate().pipeline_id()].push_back(&m);
  }
  std::vector<std::string> order;
  for (const PipelineProgress& p : input.status.pipelines()) order.push_back(p.pipeline_id());
  std::string html;
  if (config != nullptr && config->has_network() && order.size() >= 2) {
    const std::string network = order[0], assembly = order[1];
    order.erase(order.begin(), order.begin() + 2);
    std::stable_sort(order.begin(), order.end(), [&](const std::string& a, const std::string& b) {
      return by_pipeline[a].size() > by_pipeline[b].size();
    });
    html += Figure("best-so-far-network",
                   BestSoFarChart("Whole network: " + PipelineName(input.status, network),
                                  by_pipeline[assembly], by_pipeline[network]),
                   kSmallWidth, kSmallHeight);
  }
  size_t drawn = 0;
  std::vector<std::string> left_out, unmeasured;
  for (const std::string& id : order) {
    if (by_pipeline[id].empty()) continue;
    const std::string name = PipelineName(input.status, id);
    const LineChart chart = BestSoFarChart(name, by_pipeline[id], by_pipeline[id]);
    if (chart.series[0].points.empty() && chart.series.size() == 1) {
      unmeasured.push_back(name);
    } else if (drawn == kMaxPipelineCharts) {
      left_out.push_back(name);
    } else {
      ++drawn;
      html += Figure("best-so-far-" + std::to_string(drawn), chart, kSmallWidth, kSmallHeight);
    }
  }
  if (html.empty() && unmeasured.empty()) return Empty("No results yet.");
  for (const auto& [list, what] : {std::pair{&unmeasured, "No measured result yet: "},
                                   std::pair{&left_out, "Not drawn: "}}) {
    if (list->empty()) continue;
    html += std::string("<p>") + what;
    for (size_t i = 0; i < list->size(); ++i) html += (i > 0 ? ", " : "") + XmlEscaped((*list)[i]);
    html += ".</p>\n";
  }
  return html;
}

// The search's measured runtimes as a histogram of log2(runtime / the pipeline's best),
// one step line per origin: how far from the best the campaign's schedules landed.
std::string DistributionChart(const ReportInput& input) {
  std::map<std::string, double> best;  // per pipeline
  for (const Measurement& m : input.measurements) {
    if (!Measured(m)) continue;
    double& b = best[m.candidate().pipeline_id()];
    if (b == 0 || m.stats().median_seconds() < b) b = m.stats().median_seconds();
  }
  std::map<std::string, std::map<int, int>> bins;  // origin -> bin -> results
  int top = 0;
  for (const Measurement& m : input.measurements) {
    if (!Measured(m) || IsBaselineOrigin(m.candidate().origin())) continue;
    const double doublings =
        std::log2(m.stats().median_seconds() / best[m.candidate().pipeline_id()]);
    const int bin = static_cast<int>(std::floor(doublings / kHistogramBin));
    ++bins[m.candidate().origin()][bin];
    top = std::max(top, bin);
  }
  if (bins.empty()) return Empty("No measured runtimes yet.");
  LineChart chart{"Measured runtimes", "log2(runtime / the pipeline's best)", "results", {}};
  for (const auto& [origin, counts] : bins) {
    ChartSeries s{origin, {}};
    for (int bin = 0; bin <= top; ++bin) {
      const auto it = counts.find(bin);
      const double n = it == counts.end() ? 0 : it->second;
      s.points.push_back({bin * kHistogramBin, n});
      s.points.push_back({(bin + 1) * kHistogramBin, n});
    }
    chart.series.push_back(std::move(s));
  }
  return Figure("runtime-distribution", chart);
}

// The time axis of the campaign: minutes from its first result, in kTimeBuckets.
struct TimeAxis {
  int64_t first_ms = 0;
  double bucket_minutes = 1;

  explicit TimeAxis(const std::vector<Measurement>& measurements) {
    int64_t last_ms = 0;
    for (const Measurement& m : measurements) {
      if (m.finished_unix_ms() <= 0) continue;
      if (first_ms == 0 || m.finished_unix_ms() < first_ms) first_ms = m.finished_unix_ms();
      last_ms = std::max(last_ms, m.finished_unix_ms());
    }
    bucket_minutes = std::max(1.0 / 60, (last_ms - first_ms) / 60000.0 / kTimeBuckets);
  }
  int Bucket(const Measurement& m) const {
    const double minutes = (m.finished_unix_ms() - first_ms) / 60000.0;
    return std::min(kTimeBuckets - 1, static_cast<int>(minutes / bucket_minutes));
  }
  double BucketEnd(int bucket) const { return (bucket + 1) * bucket_minutes; }

  // The measurements per bucket, by `key` (an empty key leaves the measurement out).
  std::map<std::string, std::vector<int>> Count(
      const std::vector<Measurement>& measurements,
      const std::function<std::string(const Measurement&)>& key) const {
    std::map<std::string, std::vector<int>> per_bucket;
    for (const Measurement& m : measurements) {
      const std::string k = key(m);
      if (k.empty()) continue;
      auto [it, added] = per_bucket.insert({k, {}});
      if (added) it->second.assign(kTimeBuckets, 0);
      ++it->second[Bucket(m)];
    }
    return per_bucket;
  }
};

// Failed results by class, cumulative, against minutes from the first result.
std::string FailureChart(const ReportInput& input, const TimeAxis& axis) {
  const auto per_bucket = axis.Count(input.measurements, [](const Measurement& m) {
    return m.status() == OK ? std::string() : MeasurementStatus_Name(m.status());
  });
  if (per_bucket.empty()) return Empty("No failed results.");
  LineChart chart{"Failures by class", "minutes from the first result", "failed results (cumulative)",
                  {}};
  for (const auto& [status, counts] : per_bucket) {
    ChartSeries s{status, {{0, 0}}};
    int total = 0;
    for (int b = 0; b < kTimeBuckets; ++b) {
      total += counts[b];
      s.points.push_back({axis.BucketEnd(b), static_cast<double>(total)});
    }
    chart.series.push_back(std::move(s));
  }
  return Figure("failures-over-time", chart);
}

// Each worker's results per minute against minutes from the first result.
std::string ThroughputChart(const ReportInput& input, const TimeAxis& axis) {
  const auto per_bucket = axis.Count(input.measurements, [](const Measurement& m) {
    return m.host().worker_id().empty() ? std::string("?") : m.host().worker_id();
  });
  if (per_bucket.empty()) return Empty("No results yet.");
  LineChart chart{"Worker throughput", "minutes from the first result", "results per minute", {}};
  for (const auto& [worker, counts] : per_bucket) {
    ChartSeries s{worker, {}};
    for (int b = 0; b < kTimeBuckets; ++b) {
      s.points.push_back({axis.BucketEnd(b) - axis.bucket_minutes / 2,
                          counts[b] / axis.bucket_minutes});
    }
    chart.series.push_back(std::move(s));
  }
  return Figure("worker-throughput", chart);
}

// The learner's models: held-out pairwise accuracy and top-1 regret of each kind against
// the training-set size of its versions, and a table of every version.
std::string ModelSection(const ReportInput& input) {
  if (input.models.empty()) return Empty("No model was trained for this campaign.");
  std::vector<const Model*> models;
  for (const Model& m : input.models) models.push_back(&m);
  std::sort(models.begin(), models.end(), [](const Model* a, const Model* b) {
    return a->created_unix_ms() != b->created_unix_ms() ? a->created_unix_ms() < b->created_unix_ms()
                                                        : a->version() < b->version();
  });
  std::string html;
  const std::pair<const char*, const char*> metrics[] = {
      {"pairwise_accuracy", "held-out pairwise accuracy"}, {"top1_regret", "held-out top-1 regret"}};
  for (const auto& [key, label] : metrics) {
    std::map<std::string, ChartSeries> by_kind;
    for (const Model* m : models) {
      const auto it = m->metrics().find(key);
      if (it == m->metrics().end() || !std::isfinite(it->second)) continue;
      ChartSeries& s = by_kind[m->kind()];
      s.name = m->kind();
      s.points.push_back({static_cast<double>(m->training_set_size()), it->second});
    }
    if (by_kind.empty()) continue;
    LineChart chart{std::string("Models: ") + label, "training results", label, {}};
    for (auto& [kind, s] : by_kind) chart.series.push_back(std::move(s));
    html += Figure(std::string("model-") + key, chart);
  }
  if (html.empty()) html = Empty("No model has held-out metrics.");
  html += "<table>\n<tr><th>version</th><th>kind</th><th>training results</th>"
          "<th>held-out results</th><th>pairwise accuracy</th><th>Kendall tau</th>"
          "<th>top-1 regret</th></tr>\n";
  for (const Model* m : models) {
    html += "<tr><td>" + XmlEscaped(m->version()) + "</td><td>" + XmlEscaped(m->kind()) +
            "</td><td>" + std::to_string(m->training_set_size()) + "</td><td>" +
            std::to_string(m->held_out_size()) + "</td>";
    for (const char* key : {"pairwise_accuracy", "kendall_tau", "top1_regret"}) {
      const auto it = m->metrics().find(key);
      const bool known = it != m->metrics().end() && std::isfinite(it->second);
      html += "<td>" + (known ? FormatNumber("%.3f", it->second) : "-") + "</td>";
    }
    html += "</tr>\n";
  }
  return html + "</table>\n";
}

}  // namespace

std::string RenderCampaignReport(const ReportInput& input) {
  const Campaign& c = input.status.campaign();
  const std::string title = "schedfarm report: " + XmlEscaped(c.name());
  const StatusOr<CampaignConfig> parsed = CampaignConfigFromJson(c.config_json());
  const CampaignConfig* config = parsed.ok() ? &*parsed : nullptr;
  const TimeAxis axis(input.measurements);
  std::ostringstream html;
  html << "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<title>" << title
       << "</title>\n<style>" << kStyle << "</style>\n</head>\n<body>\n<h1>" << title << "</h1>\n"
       << Summary(input, config) << "<h2>Pipelines</h2>\n"
       << PipelineTable(input.status) << TaskTable(input.status) << "<h2>Best so far</h2>\n"
       << BestSoFarCharts(input, config) << "<h2>Measured runtimes</h2>\n"
       << DistributionChart(input) << "<h2>Failures</h2>\n"
       << FailureChart(input, axis) << "<h2>Workers</h2>\n"
       << ThroughputChart(input, axis) << "<h2>Models</h2>\n"
       << ModelSection(input) << "<footer><p>" << XmlEscaped(input.generated)
       << "</p></footer>\n</body>\n</html>\n";
  return html.str();
}

}  // namespace schedfarm
