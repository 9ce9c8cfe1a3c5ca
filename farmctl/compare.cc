#include "farmctl/compare.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <optional>
#include <sstream>

#include "campaign/campaign_yaml.h"
#include "farmctl/render.h"
#include "protocol/state_names.h"
#include "scheduler/autoscheduler_names.h"
#include "tools/text_table.h"

namespace schedfarm {
namespace {

using google::protobuf::Struct;
using google::protobuf::Value;

// The campaign's config; nothing when its config_json is unreadable.
std::optional<CampaignConfig> ConfigOf(const Campaign& campaign) {
  StatusOr<CampaignConfig> config = CampaignConfigFromJson(campaign.config_json());
  if (!config.ok()) return std::nullopt;
  return std::move(*config);
}

// The strategy of the campaign's config; its name when the config is unreadable.
std::string StrategyOf(const Campaign& campaign) {
  const std::optional<CampaignConfig> config = ConfigOf(campaign);
  return config ? config->strategy().name() : campaign.name();
}

// Comparison::headers.
std::vector<std::string> ColumnHeaders(const std::vector<ComparedCampaign>& campaigns) {
  std::vector<std::string> headers;
  for (const ComparedCampaign& c : campaigns) headers.push_back(StrategyOf(c.status.campaign()));
  // Gives every campaign whose header another one shares the header `field` makes.
  const auto replace_shared = [&](std::string (*field)(const Campaign&)) {
    std::map<std::string, int> uses;
    for (const std::string& header : headers) ++uses[header];
    for (size_t i = 0; i < headers.size(); ++i) {
      if (uses[headers[i]] > 1) headers[i] = field(campaigns[i].status.campaign());
    }
  };
  replace_shared([](const Campaign& c) { return c.name(); });
  replace_shared([](const Campaign& c) { return c.id(); });
  return headers;
}

// Comparison::baselines.
std::vector<std::string> BaselinesOf(const std::vector<ComparedCampaign>& campaigns) {
  std::set<std::string> baselines;
  for (const ComparedCampaign& c : campaigns) {
    if (const std::optional<CampaignConfig> config = ConfigOf(c.status.campaign())) {
      baselines.insert(config->baselines().begin(), config->baselines().end());
    }
    for (const PipelineProgress& p : c.status.pipelines()) {
      for (const auto& [name, seconds] : p.baseline_seconds()) baselines.insert(name);
    }
  }
  return {baselines.begin(), baselines.end()};
}

// The rows, one per pipeline id, with the campaigns' best runtimes and the baselines'
// best over the campaigns; a baseline without a runtime that failed somewhere is failed.
std::vector<Comparison::Row> RowsOf(const std::vector<ComparedCampaign>& campaigns,
                                    const std::vector<std::string>& baselines) {
  std::vector<Comparison::Row> rows;
  std::map<std::string, size_t> row_of;
  for (size_t c = 0; c < campaigns.size(); ++c) {
    for (const PipelineProgress& p : campaigns[c].status.pipelines()) {
      auto [at, added] = row_of.emplace(p.pipeline_id(), rows.size());
      if (added) {
        rows.push_back({p.pipeline_id(), PipelineDisplayName(p), p.task_weight(),
                        std::vector<ComparedRuntime>(campaigns.size() + baselines.size()),
                        std::vector<int>(campaigns.size())});
      }
      Comparison::Row& row = rows[at->second];
      std::vector<ComparedRuntime>& runtimes = row.runtimes;
      const MeasurementTally& tally = campaigns[c].tally;
      runtimes[c].seconds =
          tally.cut().any() ? tally.BestWithinCut(p.pipeline_id()) : p.farm_best_seconds();
      row.to_near_best[c] = tally.CandidatesToNearBest(p.pipeline_id(), kNearBest);
      for (size_t b = 0; b < baselines.size(); ++b) {
        ComparedRuntime& baseline = runtimes[campaigns.size() + b];
        const auto found = p.baseline_seconds().find(baselines[b]);
        if (found != p.baseline_seconds().end() && found->second > 0 &&
            (baseline.seconds == 0 || found->second < baseline.seconds)) {
          baseline.seconds = found->second;
        }
        if (campaigns[c].tally.BaselineFailed(p.pipeline_id(), baselines[b])) {
          baseline.failed = true;
        }
      }
    }
  }
  // A runtime in any campaign outweighs a failure in another.
  for (Comparison::Row& row : rows) {
    for (ComparedRuntime& runtime : row.runtimes) {
      if (runtime.seconds > 0) runtime.failed = false;
    }
  }
  return rows;
}

// Comparison::geomeans and geomean_pipelines, from the rows.
void SetGeomeans(Comparison* comparison) {
  const size_t columns = comparison->headers.size() + comparison->baselines.size();
  std::vector<std::vector<double>> covered(columns);
  for (const Comparison::Row& row : comparison->rows) {
    const bool complete = std::all_of(row.runtimes.begin(), row.runtimes.end(),
                                      [](const ComparedRuntime& r) { return r.seconds > 0; });
    if (!complete) continue;
    ++comparison->geomean_pipelines;
    for (size_t k = 0; k < columns; ++k) covered[k].push_back(row.runtimes[k].seconds);
  }
  for (const std::vector<double>& values : covered) {
    comparison->geomeans.push_back(GeometricMeanOf(values));
  }
}

// Comparison::task_estimates, from the rows of the tasks (those with a weight).
void SetTaskEstimates(Comparison* comparison) {
  const size_t columns = comparison->headers.size() + comparison->baselines.size();
  comparison->task_estimates.assign(columns, 0);
  bool network = false;
  std::vector<bool> complete(columns, true);
  for (const Comparison::Row& row : comparison->rows) {
    if (row.task_weight <= 0) continue;
    network = true;
    for (size_t k = 0; k < columns; ++k) {
      comparison->task_estimates[k] += row.task_weight * row.runtimes[k].seconds;
      if (!(row.runtimes[k].seconds > 0)) complete[k] = false;
    }
  }
  for (size_t k = 0; k < columns; ++k) {
    if (!network || !complete[k]) comparison->task_estimates[k] = 0;
  }
}

// Comparison::speedups, from the rows.
void SetSpeedups(Comparison* comparison) {
  const size_t campaigns = comparison->campaigns.size();
  for (size_t c = 0; c < campaigns; ++c) {
    std::vector<MeanSpeedup>& speedups = comparison->speedups.emplace_back();
    for (size_t b = 0; b < comparison->baselines.size(); ++b) {
      std::vector<double> ratios;
      for (const Comparison::Row& row : comparison->rows) {
        const double best = row.runtimes[c].seconds;
        const double baseline = row.runtimes[campaigns + b].seconds;
        if (best > 0 && baseline > 0) ratios.push_back(baseline / best);
      }
      speedups.push_back({GeometricMeanOf(ratios), static_cast<int>(ratios.size())});
    }
    std::vector<double> ratios;
    for (const Comparison::Row& row : comparison->rows) {
      std::map<std::string, double> baselines;
      for (size_t b = 0; b < comparison->baselines.size(); ++b) {
        baselines[comparison->baselines[b]] = row.runtimes[campaigns + b].seconds;
      }
      const double fastest = FastestContender(baselines).seconds;
      const double best = row.runtimes[c].seconds;
      if (best > 0 && fastest > 0) ratios.push_back(fastest / best);
    }
    comparison->over_fastest.push_back({GeometricMeanOf(ratios), static_cast<int>(ratios.size())});
  }
}

// "1 pipeline", "3 pipelines".
std::string Count(size_t n, const std::string& noun) {
  return std::to_string(n) + " " + noun + (n == 1 ? "" : "s");
}

std::string RuntimeText(const ComparedRuntime& runtime) {
  return runtime.failed ? "failed" : FormatDuration(runtime.seconds);
}

std::string SpeedupText(const MeanSpeedup& speedup) {
  if (speedup.pipelines == 0) return "-";
  return FormatNumber("%.2fx", speedup.value) + " (" +
         Count(static_cast<size_t>(speedup.pipelines), "pipeline") + ")";
}

std::string OriginsText(const MeasurementTally& tally) {
  std::string text;
  for (const auto& [origin, count] : tally.candidates_by_origin()) {
    text +=
        (text.empty() ? "" : ", ") + (origin.empty() ? "-" : origin) + " " + std::to_string(count);
  }
  return text.empty() ? "none" : text;
}

void PrintRuntimes(const Comparison& comparison, std::ostream& out) {
  std::vector<std::string> header = {"PIPELINE"};
  header.insert(header.end(), comparison.headers.begin(), comparison.headers.end());
  header.insert(header.end(), comparison.baselines.begin(), comparison.baselines.end());
  std::vector<bool> right(header.size(), true);
  right[0] = false;
  TextTable table(header, right);
  for (const Comparison::Row& row : comparison.rows) {
    std::vector<std::string> cells = {row.name};
    for (const ComparedRuntime& runtime : row.runtimes) cells.push_back(RuntimeText(runtime));
    table.Add(cells);
  }
  std::vector<std::string> geomeans = {"geomean (" + std::to_string(comparison.geomean_pipelines) +
                                       " of " + std::to_string(comparison.rows.size()) + ")"};
  for (const double seconds : comparison.geomeans) geomeans.push_back(FormatDuration(seconds));
  table.Add(geomeans);
  if (std::any_of(comparison.rows.begin(), comparison.rows.end(),
                  [](const Comparison::Row& row) { return row.task_weight > 0; })) {
    std::vector<std::string> estimates = {"tasks' estimate (weight x runtime)"};
    for (const double seconds : comparison.task_estimates) {
      estimates.push_back(seconds > 0 ? FormatDuration(seconds) : "-");
    }
    table.Add(estimates);
  }
  table.Print(out);
}

void PrintSpeedups(const Comparison& comparison, std::ostream& out) {
  std::vector<std::string> header = {"CAMPAIGN"};
  header.insert(header.end(), comparison.baselines.begin(), comparison.baselines.end());
  header.push_back("FASTEST CONTENDER");
  std::vector<bool> right(header.size(), true);
  right[0] = false;
  TextTable table(header, right);
  for (size_t c = 0; c < comparison.campaigns.size(); ++c) {
    std::vector<std::string> cells = {comparison.headers[c]};
    for (const MeanSpeedup& speedup : comparison.speedups[c]) cells.push_back(SpeedupText(speedup));
    cells.push_back(SpeedupText(comparison.over_fastest[c]));
    table.Add(cells);
  }
  table.Print(out);
}

// The candidates campaign `c` took to come within 5% of its best: the median and the
// most over the pipelines with an OK candidate ("-" with none).
std::string ToNearBestText(const Comparison& comparison, size_t c) {
  std::vector<int> counts;
  for (const Comparison::Row& row : comparison.rows) {
    if (row.to_near_best[c] > 0) counts.push_back(row.to_near_best[c]);
  }
  if (counts.empty()) return "-";
  std::sort(counts.begin(), counts.end());
  return std::to_string(counts[counts.size() / 2]) + "/" + std::to_string(counts.back());
}

void PrintCampaigns(const Comparison& comparison, std::ostream& out) {
  TextTable table({"CAMPAIGN", "ID", "NAME", "STATE", "BENCHMARKS", "FAILURES", "SEARCH TIME",
                   "TO 5%", "CANDIDATES BY ORIGIN"},
                  {false, false, false, false, true, false, true, true, false});
  for (size_t c = 0; c < comparison.campaigns.size(); ++c) {
    const ComparedCampaign& compared = comparison.campaigns[c];
    const Campaign& campaign = compared.status.campaign();
    table.Add(
        {comparison.headers[c], campaign.id(), campaign.name(), CampaignStateText(campaign.state()),
         std::to_string(campaign.counters().finished()) + "/" + std::to_string(campaign.budget()),
         FailuresText(compared.status), FormatDuration(compared.tally.search_seconds()),
         ToNearBestText(comparison, c), OriginsText(compared.tally)});
  }
  table.Print(out);
}

Value NumberValue(double v) {
  Value value;
  value.set_number_value(v);
  return value;
}

Value StringValue(const std::string& s) {
  Value value;
  value.set_string_value(s);
  return value;
}

Value NullValue() {
  Value value;
  value.set_null_value(google::protobuf::NULL_VALUE);
  return value;
}

Value StructValue(Struct fields) {
  Value value;
  *value.mutable_struct_value() = std::move(fields);
  return value;
}

Value ListValue(std::vector<Value> items) {
  Value value;
  for (Value& item : items) *value.mutable_list_value()->add_values() = std::move(item);
  return value;
}

// Seconds, null for none, "failed" for a failed baseline.
Value RuntimeValue(const ComparedRuntime& runtime) {
  if (runtime.failed) return StringValue("failed");
  return runtime.seconds > 0 ? NumberValue(runtime.seconds) : NullValue();
}

// {"geomean": the mean or null, "pipelines": how many it is over}.
Value SpeedupValue(const MeanSpeedup& speedup) {
  Struct entry;
  (*entry.mutable_fields())["geomean"] =
      speedup.pipelines > 0 ? NumberValue(speedup.value) : NullValue();
  (*entry.mutable_fields())["pipelines"] = NumberValue(speedup.pipelines);
  return StructValue(std::move(entry));
}

Value CampaignValue(const Comparison& comparison, size_t c) {
  const ComparedCampaign& compared = comparison.campaigns[c];
  const Campaign& campaign = compared.status.campaign();
  Struct failures;
  for (const auto& [name, count] : compared.status.failures_by_status()) {
    if (name != MeasurementStatus_Name(OK)) {
      (*failures.mutable_fields())[name] = NumberValue(static_cast<double>(count));
    }
  }
  Struct origins;
  for (const auto& [origin, count] : compared.tally.candidates_by_origin()) {
    (*origins.mutable_fields())[origin] = NumberValue(static_cast<double>(count));
  }
  Struct speedups;
  for (size_t b = 0; b < comparison.baselines.size(); ++b) {
    (*speedups.mutable_fields())[comparison.baselines[b]] = SpeedupValue(comparison.speedups[c][b]);
  }
  (*speedups.mutable_fields())["fastest contender"] = SpeedupValue(comparison.over_fastest[c]);
  Struct fields;
  auto& f = *fields.mutable_fields();
  f["column"] = StringValue(comparison.headers[c]);
  f["id"] = StringValue(campaign.id());
  f["name"] = StringValue(campaign.name());
  f["strategy"] = StringValue(StrategyOf(campaign));
  f["state"] = StringValue(CampaignStateText(campaign.state()));
  f["finished"] = NumberValue(static_cast<double>(campaign.counters().finished()));
  f["budget"] = NumberValue(static_cast<double>(campaign.budget()));
  f["failures"] = StructValue(std::move(failures));
  f["search_seconds"] = NumberValue(compared.tally.search_seconds());
  f["candidates_by_origin"] = StructValue(std::move(origins));
  f["speedups"] = StructValue(std::move(speedups));
  return StructValue(std::move(fields));
}

}  // namespace

void MeasurementTally::Add(const Measurement& measurement) {
  const Candidate& candidate = measurement.candidate();
  if (measurement.status() != OK && IsBaselineName(candidate.origin())) {
    failed_baselines_.emplace(candidate.pipeline_id(), candidate.origin());
  }
  const std::pair<std::string, std::string> key(candidate.pipeline_id(), candidate.schedule_hash());
  const bool added = candidates_.insert(key).second;
  if (added) {
    search_seconds_ += candidate.search_seconds();
    ++by_origin_[candidate.origin()];
  }
  if (IsBaselineName(candidate.origin())) return;
  if (cut_.seconds > 0 && measurement.finished_unix_ms() >
                              submitted_unix_ms_ + static_cast<int64_t>(cut_.seconds * 1000)) {
    return;
  }
  auto position = position_.find(key);
  if (position == position_.end()) {
    // Within a cut of `first` only a pipeline's first candidates count; a retry of one
    // of them counts with it.
    int& counted = counted_[key.first];
    if (!added || (cut_.first > 0 && counted >= cut_.first)) return;
    position = position_.emplace(key, ++counted).first;
  }
  const double median = measurement.stats().median_seconds();
  if (measurement.status() != OK || !(median > 0)) return;
  results_[key.first].emplace_back(position->second, median);
}

double MeasurementTally::BestWithinCut(const std::string& pipeline_id) const {
  const auto found = results_.find(pipeline_id);
  if (found == results_.end()) return 0;
  double best = 0;
  for (const auto& [position, seconds] : found->second) {
    if (best == 0 || seconds < best) best = seconds;
  }
  return best;
}

int MeasurementTally::CountedOf(const std::string& pipeline_id) const {
  const auto found = counted_.find(pipeline_id);
  return found == counted_.end() ? 0 : found->second;
}

int MeasurementTally::CandidatesToNearBest(const std::string& pipeline_id, double margin) const {
  const double best = BestWithinCut(pipeline_id);
  if (!(best > 0)) return 0;
  int first = 0;
  for (const auto& [position, seconds] : results_.at(pipeline_id)) {
    if (seconds <= best * (1 + margin) && (first == 0 || position < first)) first = position;
  }
  return first;
}

bool MeasurementTally::BaselineFailed(const std::string& pipeline_id,
                                      const std::string& baseline) const {
  return failed_baselines_.count({pipeline_id, baseline}) > 0;
}

double GeometricMeanOf(const std::vector<double>& values) {
  if (values.empty()) return 0;
  double log_sum = 0;
  for (const double v : values) log_sum += std::log(v);
  return std::exp(log_sum / static_cast<double>(values.size()));
}

Comparison CompareCampaigns(std::vector<ComparedCampaign> campaigns) {
  Comparison comparison;
  comparison.headers = ColumnHeaders(campaigns);
  comparison.baselines = BaselinesOf(campaigns);
  comparison.rows = RowsOf(campaigns, comparison.baselines);
  comparison.campaigns = std::move(campaigns);
  SetGeomeans(&comparison);
  SetTaskEstimates(&comparison);
  SetSpeedups(&comparison);
  return comparison;
}

namespace {

// With a cut: what the runtimes are, and the campaigns that have fewer than N
// candidates of a pipeline within it (so that their budgets there are not equal).
void PrintCutNote(const Comparison& comparison, std::ostream& out) {
  if (comparison.campaigns.empty() || !comparison.campaigns[0].tally.cut().any()) return;
  const ComparisonCut& cut = comparison.campaigns[0].tally.cut();
  out << "each campaign's best among "
      << (cut.first > 0 ? "the first " + std::to_string(cut.first) + " candidates"
                        : "the candidates")
      << " of each pipeline (baselines aside)"
      << (cut.seconds > 0 ? " measured in the first " + FormatElapsed(cut.seconds) +
                                " after the campaign's submission"
                          : "")
      << "\n";
  for (size_t c = 0; cut.first > 0 && c < comparison.campaigns.size(); ++c) {
    int fewest = cut.first;
    for (const Comparison::Row& row : comparison.rows) {
      fewest = std::min(fewest, comparison.campaigns[c].tally.CountedOf(row.pipeline_id));
    }
    if (fewest < cut.first) {
      out << "  " << comparison.headers[c] << " has only " << fewest
          << " candidates of some pipeline\n";
    }
  }
}

}  // namespace

std::string RenderComparison(const Comparison& comparison) {
  std::ostringstream out;
  out << "best runtime per pipeline: " << Count(comparison.campaigns.size(), "campaign") << ", "
      << Count(comparison.baselines.size(), "baseline") << ", "
      << Count(comparison.rows.size(), "pipeline") << "\n";
  PrintCutNote(comparison, out);
  PrintRuntimes(comparison, out);
  if (!comparison.baselines.empty()) {
    out << "speedup over the baselines (geomean over the pipelines where both have a runtime)\n";
    PrintSpeedups(comparison, out);
  }
  out << "campaigns\n";
  PrintCampaigns(comparison, out);
  return out.str();
}

Struct ComparisonToJson(const Comparison& comparison) {
  std::vector<Value> columns, campaigns, pipelines, geomeans;
  for (const std::string& header : comparison.headers) columns.push_back(StringValue(header));
  for (const std::string& baseline : comparison.baselines) columns.push_back(StringValue(baseline));
  for (size_t c = 0; c < comparison.campaigns.size(); ++c) {
    campaigns.push_back(CampaignValue(comparison, c));
  }
  for (const Comparison::Row& row : comparison.rows) {
    std::vector<Value> seconds, to_near_best;
    for (const ComparedRuntime& runtime : row.runtimes) seconds.push_back(RuntimeValue(runtime));
    for (const int count : row.to_near_best) {
      to_near_best.push_back(count > 0 ? NumberValue(count) : NullValue());
    }
    Struct entry;
    (*entry.mutable_fields())["id"] = StringValue(row.pipeline_id);
    (*entry.mutable_fields())["name"] = StringValue(row.name);
    (*entry.mutable_fields())["task_weight"] = NumberValue(row.task_weight);
    (*entry.mutable_fields())["seconds"] = ListValue(std::move(seconds));
    (*entry.mutable_fields())["candidates_to_near_best"] = ListValue(std::move(to_near_best));
    pipelines.push_back(StructValue(std::move(entry)));
  }
  for (const double seconds : comparison.geomeans) {
    geomeans.push_back(seconds > 0 ? NumberValue(seconds) : NullValue());
  }
  std::vector<Value> task_estimates;
  for (const double seconds : comparison.task_estimates) {
    task_estimates.push_back(seconds > 0 ? NumberValue(seconds) : NullValue());
  }
  Struct geomean;
  (*geomean.mutable_fields())["seconds"] = ListValue(std::move(geomeans));
  (*geomean.mutable_fields())["pipelines"] = NumberValue(comparison.geomean_pipelines);
  Struct json;
  auto& f = *json.mutable_fields();
  f["columns"] = ListValue(std::move(columns));
  f["campaigns"] = ListValue(std::move(campaigns));
  f["pipelines"] = ListValue(std::move(pipelines));
  f["geomean"] = StructValue(std::move(geomean));
  f["task_estimates"] = ListValue(std::move(task_estimates));
  return json;
}

}  // namespace schedfarm
