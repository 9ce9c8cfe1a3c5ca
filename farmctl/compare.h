// `farmctl compare`: campaigns that ran the same pipelines, side by side. From each
// campaign's status (its PipelineProgress) and a tally of its measurements (the export
// pages): one row per pipeline with each campaign's best runtime and each baseline's,
// the geometric mean of every column, each campaign's mean speedup over each baseline,
// and what each campaign spent (search time, candidates by origin, benchmarks,
// failures). Pure functions, so tests compare hand-made campaigns.
#pragma once

#include <google/protobuf/struct.pb.h>

#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "schedfarm.pb.h"

namespace schedfarm {

// What compare takes from a campaign's measurements. A candidate measured more than
// once (a retry after a failed attempt) counts once.
class MeasurementTally {
 public:
  // `first` > 0: also the best runtime of each pipeline among its first `first`
  // candidates other than baselines, in measurement order, failed ones counted: the
  // campaign's best at that budget per pipeline, so that campaigns that ran different
  // budgets compare at an equal one.
  explicit MeasurementTally(int first = 0) : first_(first) {}

  void Add(const Measurement& measurement);

  // The sum of Candidate.search_seconds over the candidates: the wall time the
  // campaign's searches took.
  double search_seconds() const { return search_seconds_; }
  // Candidates by Candidate.origin.
  const std::map<std::string, int64_t>& candidates_by_origin() const { return by_origin_; }
  // Whether the autoscheduler `baseline` has a failed result on the pipeline.
  bool BaselineFailed(const std::string& pipeline_id, const std::string& baseline) const;
  int first() const { return first_; }
  // The pipeline's best runtime among its first `first` candidates (0: none OK).
  double BestOfFirst(const std::string& pipeline_id) const;
  // How many candidates of the pipeline (baselines aside) there are, at most `first`.
  int CountedOf(const std::string& pipeline_id) const;

 private:
  int first_ = 0;
  std::map<std::string, int> counted_;  // pipeline id -> candidates seen, baselines aside
  std::set<std::pair<std::string, std::string>> within_first_;  // (pipeline id, hash)
  std::map<std::string, double> best_of_first_;  // pipeline id -> seconds
  std::set<std::pair<std::string, std::string>> candidates_;  // (pipeline id, schedule hash)
  double search_seconds_ = 0;
  std::map<std::string, int64_t> by_origin_;
  std::set<std::pair<std::string, std::string>> failed_baselines_;  // (pipeline id, baseline)
};

// A campaign as compare reads it: its status and the tally of its measurements.
struct ComparedCampaign {
  CampaignStatus status;
  MeasurementTally tally;
};

// A cell of the table: a runtime (seconds > 0), none yet (seconds 0), or a baseline
// that only failed.
struct ComparedRuntime {
  double seconds = 0;
  bool failed = false;
};

// A geometric mean of speedups and how many pipelines it is over (0: none, value 0).
struct MeanSpeedup {
  double value = 0;
  int pipelines = 0;
};

struct Comparison {
  struct Row {
    std::string pipeline_id;
    std::string name;
    // One per column: the campaigns' best runtimes (among each pipeline's first
    // candidates where the tallies count a first), then the baselines'.
    std::vector<ComparedRuntime> runtimes;
  };

  std::vector<ComparedCampaign> campaigns;
  // The column of each campaign: its strategy's name; where two campaigns share a
  // strategy, their names; where those are shared too, their ids.
  std::vector<std::string> headers;
  // Every baseline that any campaign names in its config or has a runtime of, sorted.
  std::vector<std::string> baselines;
  // Pipelines by id, in the order the campaigns list them (the first campaign's
  // first). A baseline's runtime is its best over the campaigns.
  std::vector<Row> rows;
  // Each column's geometric mean over the pipelines where every column has a runtime
  // (0 when there is none), and how many pipelines those are.
  std::vector<double> geomeans;
  int geomean_pipelines = 0;
  // speedups[c][b]: the geometric mean of baseline b's runtime over campaign c's best
  // (the table's values), over the pipelines where both have one.
  std::vector<std::vector<MeanSpeedup>> speedups;
};

// The geometric mean of positive values; 0 of none.
double GeometricMeanOf(const std::vector<double>& values);

// Compares the campaigns, in the order given.
Comparison CompareCampaigns(std::vector<ComparedCampaign> campaigns);

// The comparison as compare prints it: the table of runtimes with the geometric means
// under it, the speedups over the baselines, and a table of the campaigns (id, name,
// state, benchmarks finished / budget, failures, search time, candidates by origin).
std::string RenderComparison(const Comparison& comparison);

// The comparison as data for `compare --json`: columns, pipelines (runtimes in seconds
// by column, null for none, "failed" for a failed baseline), the geometric means, and
// per campaign its column, counters, failures, search time, candidates by origin and
// speedups.
google::protobuf::Struct ComparisonToJson(const Comparison& comparison);

}  // namespace schedfarm
