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

// Which candidates of a campaign compare weighs against the others: all of them, or
// each pipeline's first `first` (baselines aside, in measurement order, failed ones
// counted) and/or those measured within `seconds` of the campaign's submission: the
// campaign at an equal budget of benchmarks or of wall time.
struct ComparisonCut {
  int first = 0;       // 0: no limit
  double seconds = 0;  // 0: no limit

  bool any() const { return first > 0 || seconds > 0; }
};

// What compare takes from a campaign's measurements. A candidate measured more than
// once (a retry after a failed attempt) counts once.
class MeasurementTally {
 public:
  // `submitted_unix_ms`: the campaign's submission, where a cut in seconds starts.
  explicit MeasurementTally(ComparisonCut cut = {}, int64_t submitted_unix_ms = 0)
      : cut_(cut), submitted_unix_ms_(submitted_unix_ms) {}

  void Add(const Measurement& measurement);

  // The sum of Candidate.search_seconds over the candidates: the wall time the
  // campaign's searches took.
  double search_seconds() const { return search_seconds_; }
  // Candidates by Candidate.origin.
  const std::map<std::string, int64_t>& candidates_by_origin() const { return by_origin_; }
  // Whether the autoscheduler `baseline` has a failed result on the pipeline.
  bool BaselineFailed(const std::string& pipeline_id, const std::string& baseline) const;
  const ComparisonCut& cut() const { return cut_; }
  // The pipeline's best runtime among its candidates within the cut (0: none OK).
  double BestWithinCut(const std::string& pipeline_id) const;
  // How many candidates of the pipeline (baselines aside) are within the cut.
  int CountedOf(const std::string& pipeline_id) const;
  // The number of candidates (baselines aside, within the cut, in measurement order)
  // the pipeline took to come within `margin` (0.05: 5%) of its best among them; 0
  // when none is OK.
  int CandidatesToNearBest(const std::string& pipeline_id, double margin) const;

 private:
  ComparisonCut cut_;
  int64_t submitted_unix_ms_ = 0;
  std::map<std::string, int> counted_;  // pipeline id -> candidates within the cut
  // (pipeline id, hash) -> its position among the pipeline's candidates within the cut
  std::map<std::pair<std::string, std::string>, int> position_;
  // pipeline id -> (position, runtime) of each OK result within the cut
  std::map<std::string, std::vector<std::pair<int, double>>> results_;
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
    // A network campaign's distinct task: its occurrences in the network; else 0.
    int task_weight = 0;
    // One per column: the campaigns' best runtimes of their own schedules, baselines
    // aside (PipelineProgress.farm_best_seconds; within the tallies' cut where they
    // have one), then the baselines'.
    std::vector<ComparedRuntime> runtimes;
    // One per campaign: the candidates it took to come within kNearBest of its best
    // (CandidatesToNearBest); 0 without an OK one.
    std::vector<int> to_near_best;
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
  // Network campaigns: each column's sum of task weight x runtime over the tasks, when
  // every task has a runtime in it (0 otherwise): the tasks' estimate of the network.
  std::vector<double> task_estimates;
  // speedups[c][b]: the geometric mean of baseline b's runtime over campaign c's best
  // (the table's values), over the pipelines where both have one.
  std::vector<std::vector<MeanSpeedup>> speedups;
  // over_fastest[c]: the same against the fastest contender of each pipeline (the least
  // runtime of its baselines, the reference schedule left out).
  std::vector<MeanSpeedup> over_fastest;
};

// How near a campaign's best a candidate must be for Row::to_near_best: 5%.
inline constexpr double kNearBest = 0.05;

// The geometric mean of positive values; 0 of none.
double GeometricMeanOf(const std::vector<double>& values);

// Compares the campaigns, in the order given.
Comparison CompareCampaigns(std::vector<ComparedCampaign> campaigns);

// The comparison as compare prints it: the table of runtimes with the geometric means
// (and a network's tasks' estimate) under it, the speedups over the baselines and over
// the fastest contender, and a
// table of the campaigns (id, name, state, benchmarks finished / budget, failures,
// search time, candidates by origin, candidates to come within 5% of the best: median
// and most over the pipelines).
std::string RenderComparison(const Comparison& comparison);

// The comparison as data for `compare --json`: columns, pipelines (runtimes in seconds
// by column, null for none, "failed" for a failed baseline), the geometric means, and
// per campaign its column, counters, failures, search time, candidates by origin and
// speedups (the fastest contender's under "fastest contender"); per pipeline also its task weight
// and each campaign's candidates to come within 5% of its best; the tasks' estimates.
google::protobuf::Struct ComparisonToJson(const Comparison& comparison);

}  // namespace schedfarm
