// Tests of the search layer: the registry of names, every strategy on real schedule
// spaces (random pipelines small enough to enumerate, and a zoo block) under a
// synthetic cost model whose optimum is known, and PipelineSearch, the per-pipeline
// driver with its epsilon share, fallbacks and de-duplication.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <numeric>
#include <set>
#include <string>
#include <vector>

#include "pipeline/random_pipeline.h"
#include "pipeline/zoo.h"
#include "scheduler/schedule_space.h"
#include "search/pipeline_search.h"
#include "search/registry.h"
#include "search/stage_options.h"

namespace schedfarm {
namespace {

// ---------------------------------------------------------------------------------
// Spaces

// A graph and its space (the space refers to the graph).
struct Fixture {
  std::unique_ptr<PipelineGraph> graph;
  std::unique_ptr<ScheduleSpace> space;
  const ScheduleSpace& operator*() const { return *space; }
  const ScheduleSpace* operator->() const { return space.get(); }
  int num_stages() const { return graph->num_stages(); }
};

Fixture Make(const StatusOr<PipelineSpec>& spec) {
  EXPECT_TRUE(spec.ok()) << spec.status().ToString();
  StatusOr<PipelineGraph> graph = PipelineGraph::Build(spec.value());
  EXPECT_TRUE(graph.ok()) << graph.status().ToString();
  Fixture f;
  f.graph = std::make_unique<PipelineGraph>(std::move(graph).value());
  f.space = std::make_unique<ScheduleSpace>(*f.graph);
  return f;
}

// Three elementwise stages (one a slice) on tensors of at most 16 elements: a few
// hundred complete schedules.
Fixture TinySpace() {
  RandomPipelineOptions options;
  options.min_ops = 2;
  options.max_ops = 3;
  options.max_elements = 16;
  options.max_rank = 2;
  options.min_depth = 2;
  return Make(RandomPipeline(17, options));
}

// Four stages ending in a reduction (it has an update definition, so it cannot be
// inlined and offers split reduction loops): about a thousand complete schedules.
Fixture ReductionSpace() {
  RandomPipelineOptions options;
  options.min_ops = 2;
  options.max_ops = 5;
  options.max_elements = 16;
  options.max_rank = 2;
  options.min_depth = 2;
  return Make(RandomPipeline(10, options));
}

// One stage with a handful of schedules.
Fixture SingleStageSpace() {
  RandomPipelineOptions options;
  options.min_ops = 1;
  options.max_ops = 1;
  options.max_elements = 64;
  options.max_rank = 2;
  return Make(RandomPipeline(12, options));
}

// A zoo block at a small size: thousands to a hundred thousand options per stage.
Fixture VggSpace() {
  ZooOptions options;
  options.spatial_scale = 0.25;
  options.channel_scale = 0.25;
  return Make(MakeZooBlock("vgg_block", options));
}

std::vector<Fixture> SmallSpaces() {
  std::vector<Fixture> spaces;
  spaces.push_back(TinySpace());
  spaces.push_back(ReductionSpace());
  return spaces;
}

ScheduleSpec With(const ScheduleSpec& partial, const StageSchedule& option) {
  ScheduleSpec spec = partial;
  *spec.add_stages() = option;
  return spec;
}

// Every complete schedule of a small space, by depth-first enumeration.
void Enumerate(const ScheduleSpace& space, const ScheduleSpec& partial,
               std::vector<ScheduleSpec>* out) {
  if (space.NextStage(partial) < 0) {
    ScheduleSpec complete = partial;
    complete.set_partial(false);
    out->push_back(std::move(complete));
    return;
  }
  space.ForEachOption(partial, [&](const StageSchedule& option) {
    Enumerate(space, With(partial, option), out);
    return true;
  });
}
std::vector<ScheduleSpec> AllSchedules(const ScheduleSpace& space) {
  std::vector<ScheduleSpec> out;
  Enumerate(space, space.Empty(), &out);
  return out;
}

bool SameDecision(const StageSchedule& a, const StageSchedule& b) {
  return a.SerializeAsString() == b.SerializeAsString();
}

// Whether `schedule` is one anneal move away from `from` (or equal): the same decisions
// up to some stage, that stage redecided, and every later stage the same unless `from`
// computed it AT a loop (a move redecides those when their loop is gone).
bool OneMoveFrom(const ScheduleSpec& from, const ScheduleSpec& schedule) {
  if (from.stages_size() != schedule.stages_size()) return false;
  int first = 0;
  while (first < from.stages_size() && SameDecision(from.stages(first), schedule.stages(first))) {
    ++first;
  }
  for (int i = first + 1; i < from.stages_size(); ++i) {
    if (from.stages(i).compute() != AT && !SameDecision(from.stages(i), schedule.stages(i))) {
      return false;
    }
  }
  return true;
}

// ---------------------------------------------------------------------------------
// A synthetic cost model

uint64_t Fnv1a(const std::string& bytes) {
  uint64_t h = 1469598103934665603ull;
  for (unsigned char c : bytes) {
    h ^= c;
    h *= 1099511628211ull;
  }
  return h;
}

// Predicted seconds: the sum over the decided stages of a fixed cost per decision, plus
// `undecided_seconds` per undecided stage (a fixed default completion). A decision
// costs 1 to 2 ms (a hash of its bytes, in `levels` steps: few levels make many ties),
// one more ms when computed AT a consumer loop, so that every stage's cheapest decision
// is a ROOT or INLINE one, which the space offers whatever the other stages decide:
// the cost is separable and the optimum is each stage's cheapest decision. With a
// `trap` (one decision of the first stage), every later stage decided after the trap
// costs kTrapPenalty more: the greedy walk falls in it, a beam of two does not.
class SyntheticModel : public CostModel {
 public:
  static constexpr double kTrapPenalty = 10e-3;

  struct Config {
    int num_stages = 0;
    std::string version = "synthetic-1";
    PartialMeaning partial = PartialMeaning::kDefaultCompletion;
    int64_t levels = int64_t{1} << 20;
    double undecided_seconds = 1.5e-3;
    bool spread = false;         // stddev: a hash of the schedule, up to half the mean
    // With members, an ensemble: member k predicts the seconds times 0.5 to 1.5 (a hash of
    // the schedule and k), the prediction is their mean and spread (`spread` unread).
    int members = 0;
    std::set<int> fail_calls;    // calls of Predict (from 0) that fail
    bool fail_always = false;
    std::string trap;            // a serialized StageSchedule of the first stage
  };

  explicit SyntheticModel(Config config) : config_(std::move(config)) {}
  SyntheticModel(const ScheduleSpace& space, const std::string& version = "synthetic-1") {
    config_.num_stages = static_cast<int>(space.decision_order().size());
    config_.version = version;
  }

  std::string version() const override { return config_.version; }
  PartialMeaning partial_meaning() const override { return config_.partial; }

  StatusOr<std::vector<RuntimePrediction>> Predict(
      const std::vector<const ScheduleSpec*>& schedules) override {
    const int call = calls_++;
    if (config_.fail_always || config_.fail_calls.count(call)) {
      return Status::Error("synthetic model failed on call " + std::to_string(call));
    }
    batches_.emplace_back();
    std::vector<RuntimePrediction> out;
    for (const ScheduleSpec* schedule : schedules) {
      batches_.back().push_back(*schedule);
      out.push_back(Prediction(*schedule));
    }
    return out;
  }

  static double DecisionSeconds(const StageSchedule& decision, int64_t levels) {
    const uint64_t step = (Fnv1a(decision.SerializeAsString()) >> 11) % levels;
    return 1e-3 * (1.0 + static_cast<double>(step) / static_cast<double>(levels)) +
           (decision.compute() == AT ? 1e-3 : 0.0);
  }

  double Seconds(const ScheduleSpec& schedule) const {
    const bool trapped =
        !config_.trap.empty() && schedule.stages_size() > 0 &&
        schedule.stages(0).SerializeAsString() == config_.trap;
    double total = 0;
    for (int i = 0; i < schedule.stages_size(); ++i) {
      total += DecisionSeconds(schedule.stages(i), config_.levels);
      if (i > 0 && trapped) total += kTrapPenalty;
    }
    return total + (config_.num_stages - schedule.stages_size()) * config_.undecided_seconds;
  }

  RuntimePrediction Prediction(const ScheduleSpec& schedule) const {
    std::string bytes;
    for (const StageSchedule& stage : schedule.stages()) bytes += stage.SerializeAsString();
    if (config_.members > 0) {
      std::vector<double> members;
      for (int k = 0; k < config_.members; ++k) {
        const uint64_t hash = Fnv1a(bytes + std::to_string(k));
        members.push_back(Seconds(schedule) * (0.5 + static_cast<double>(hash % 1000) / 1000));
      }
      return EnsemblePrediction(std::move(members));
    }
    RuntimePrediction p;
    p.mean_seconds = Seconds(schedule);
    if (config_.spread) {
      p.stddev_seconds = p.mean_seconds * 0.5 * static_cast<double>(Fnv1a(bytes) % 1000) / 1000;
    }
    return p;
  }

  int calls() const { return calls_; }
  // The schedules of every successful call, one batch per call.
  const std::vector<std::vector<ScheduleSpec>>& batches() const { return batches_; }

 private:
  Config config_;
  int calls_ = 0;
  std::vector<std::vector<ScheduleSpec>> batches_;
};

SyntheticModel::Config ConfigFor(const ScheduleSpace& space) {
  SyntheticModel::Config config;
  config.num_stages = static_cast<int>(space.decision_order().size());
  return config;
}

// The smallest predicted runtime over every schedule of a small space.
double Optimum(const ScheduleSpace& space, const SyntheticModel& model) {
  double best = 1e30;
  for (const ScheduleSpec& schedule : AllSchedules(space)) {
    best = std::min(best, model.Seconds(schedule));
  }
  return best;
}

// The first stage's cheapest decision under the separable cost.
std::string CheapestFirstDecision(const ScheduleSpace& space) {
  std::string best;
  double best_seconds = 1e30;
  for (const StageSchedule& option : space.Options(space.Empty())) {
    const double seconds = SyntheticModel::DecisionSeconds(option, SyntheticModel::Config().levels);
    if (seconds < best_seconds) {
      best_seconds = seconds;
      best = option.SerializeAsString();
    }
  }
  return best;
}

// ---------------------------------------------------------------------------------
// Running a strategy

StrategySettings Settings(const std::string& strategy, const std::map<std::string, double>& values) {
  Strategy config;
  config.set_name(strategy);
  for (const auto& [name, value] : values) {
    StrategySetting* setting = config.add_settings();
    setting->set_name(name);
    setting->set_value(value);
  }
  StrategySettings settings = ResolvedSettings(config);
  for (const auto& [name, value] : values) {
    EXPECT_EQ(settings.count(name), 1u) << strategy << " has no setting " << name;
  }
  return settings;
}

// A strategy made by name, bound to a space and a model; `known` is what the search
// context reports as measured or proposed elsewhere.
class Searcher {
 public:
  explicit Searcher(const std::string& strategy, const std::string& acquisition = "exploit") {
    StatusOr<std::unique_ptr<SearchStrategy>> made = MakeSearchStrategy(strategy);
    EXPECT_TRUE(made.ok()) << made.status().ToString();
    if (made.ok()) strategy_ = std::move(made).value();
    StatusOr<std::unique_ptr<AcquisitionFunction>> acq = MakeAcquisition(acquisition);
    EXPECT_TRUE(acq.ok()) << acq.status().ToString();
    if (acq.ok()) acquisition_ = std::move(acq).value();
  }
  Searcher(const Searcher&) = delete;
  Searcher& operator=(const Searcher&) = delete;

  Status Init(const ScheduleSpace& space, CostModel* model,
              const std::map<std::string, double>& settings = {}, uint64_t seed = 1) {
    SearchContext context;
    context.space = &space;
    context.model = model;
    context.acquisition = model ? acquisition_.get() : nullptr;
    context.seed = seed;
    context.settings = Settings(strategy_->name(), settings);
    context.known = [this](const std::string& hash) { return known.count(hash) > 0; };
    return strategy_->Init(context);
  }

  std::vector<SearchProposal> Propose(int n) {
    StatusOr<std::vector<SearchProposal>> proposals = strategy_->Propose(n);
    EXPECT_TRUE(proposals.ok()) << strategy_->name() << ": " << proposals.status().ToString();
    if (!proposals.ok()) return {};
    EXPECT_LE(static_cast<int>(proposals->size()), n);
    return std::move(proposals).value();
  }

  // Proposes `per_call` at a time until exhausted (or `max_calls` calls).
  std::vector<SearchProposal> Drain(int per_call, int max_calls) {
    std::vector<SearchProposal> all;
    for (int call = 0; call < max_calls && !strategy_->Exhausted(); ++call) {
      for (SearchProposal& p : Propose(per_call)) all.push_back(std::move(p));
    }
    return all;
  }

  SearchStrategy* operator->() { return strategy_.get(); }
  const AcquisitionFunction& acquisition() const { return *acquisition_; }

  std::set<std::string> known;

 private:
  std::unique_ptr<SearchStrategy> strategy_;
  std::unique_ptr<AcquisitionFunction> acquisition_;
};

// A proposal is a complete legal schedule with its hash, the model's prediction of it
// and the acquisition's score of that prediction.
void ExpectValid(const ScheduleSpace& space, const SyntheticModel& model,
                 const AcquisitionFunction& acquisition, const SearchProposal& p,
                 double incumbent_seconds = 0) {
  ASSERT_EQ(p.schedule.stages_size(), static_cast<int>(space.decision_order().size()));
  EXPECT_FALSE(p.schedule.partial());
  const Status legal = space.Check(p.schedule);
  ASSERT_TRUE(legal.ok()) << legal.ToString();
  EXPECT_EQ(p.hash, ScheduleHash(space, p.schedule));
  EXPECT_TRUE(p.predicted);
  EXPECT_EQ(p.acquisition, acquisition.name());
  const RuntimePrediction expected = model.Prediction(p.schedule);
  EXPECT_DOUBLE_EQ(p.prediction.mean_seconds, expected.mean_seconds);
  EXPECT_DOUBLE_EQ(p.prediction.stddev_seconds, expected.stddev_seconds);
  EXPECT_DOUBLE_EQ(p.acquisition_score, acquisition.Score(p.prediction, incumbent_seconds));
}

std::vector<std::string> Hashes(const std::vector<SearchProposal>& proposals) {
  std::vector<std::string> hashes;
  for (const SearchProposal& p : proposals) hashes.push_back(p.hash);
  return hashes;
}

void ExpectDistinct(const std::vector<std::string>& hashes) {
  EXPECT_EQ(std::set<std::string>(hashes.begin(), hashes.end()).size(), hashes.size());
}

double BestPredicted(const std::vector<SearchProposal>& proposals) {
  double best = 1e30;
  for (const SearchProposal& p : proposals) best = std::min(best, p.prediction.mean_seconds);
  return best;
}

// Stages along the schedule's decisions whose options exceed `cap`.
int StagesOver(const ScheduleSpace& space, const ScheduleSpec& schedule, int64_t cap) {
  int over = 0;
  ScheduleSpec prefix = space.Empty();
  for (const StageSchedule& stage : schedule.stages()) {
    over += space.CountOptions(prefix) > cap ? 1 : 0;
    *prefix.add_stages() = stage;
  }
  return over;
}

SearchResult Measured(const ScheduleSpace& space, const ScheduleSpec& schedule, double seconds) {
  SearchResult result;
  result.schedule = schedule;
  result.schedule.set_partial(false);
  result.hash = ScheduleHash(space, result.schedule);
  result.ok = true;
  result.seconds = seconds;
  return result;
}

// The strategies with a per-pipeline search under a model (value-iteration runs over
// a whole campaign in farm-learner instead).
std::vector<std::string> ModelStrategies() {
  std::vector<std::string> names;
  for (const StrategyInfo& info : SearchStrategies()) {
    if (info.uses_model && info.make != nullptr) names.push_back(info.name);
  }
  return names;
}

// Small settings of each model strategy, for the tests that run them all.
std::map<std::string, double> SmallSettings(const std::string& strategy) {
  if (strategy == "model-guided" || strategy == "uncertainty") return {{"sample_size", 16}};
  if (strategy == "greedy") return {{"noise", 0}};
  if (strategy == "beam") return {{"width", 4}, {"max_width", 8}};
  if (strategy == "anneal") return {{"steps", 10}, {"neighbors", 4}};
  if (strategy == "relaxed") return {{"expansions", 50}};
  return {};
}

// ---------------------------------------------------------------------------------
// The spaces the tests rely on

TEST(SearchFixturesTest, TheSmallSpacesCanBeEnumerated) {
  Fixture tiny = TinySpace();
  EXPECT_EQ(tiny.num_stages(), 3);
  const size_t tiny_count = AllSchedules(*tiny).size();
  EXPECT_GE(tiny_count, 100u);
  EXPECT_LE(tiny_count, 2000u);

  Fixture reduction = ReductionSpace();
  EXPECT_EQ(reduction.num_stages(), 4);
  bool has_update = false;
  for (int s = 0; s < reduction.num_stages(); ++s) has_update |= !reduction->InlineLegal(s);
  EXPECT_TRUE(has_update);
  const size_t reduction_count = AllSchedules(*reduction).size();
  EXPECT_GE(reduction_count, 100u);
  EXPECT_LE(reduction_count, 2000u);

  Fixture single = SingleStageSpace();
  EXPECT_EQ(single.num_stages(), 1);
  EXPECT_LE(AllSchedules(*single).size(), 20u);

  // The separable model's optimum is each stage's cheapest decision.
  SyntheticModel model(*tiny);
  ScheduleSpec greedy = tiny->Empty();
  while (tiny->NextStage(greedy) >= 0) {
    std::vector<StageSchedule> options = tiny->Options(greedy);
    auto cheapest = std::min_element(
        options.begin(), options.end(), [](const StageSchedule& a, const StageSchedule& b) {
          return SyntheticModel::DecisionSeconds(a, SyntheticModel::Config().levels) <
                 SyntheticModel::DecisionSeconds(b, SyntheticModel::Config().levels);
        });
    greedy = With(greedy, *cheapest);
  }
  EXPECT_DOUBLE_EQ(model.Seconds(greedy), Optimum(*tiny, model));
}

// ---------------------------------------------------------------------------------
// Registry

TEST(SearchRegistryTest, EveryNameIsFoundAndMade) {
  ASSERT_FALSE(SearchStrategies().empty());
  EXPECT_EQ(StrategyNames().size(), SearchStrategies().size());
  std::set<std::string> strategy_names;
  for (const std::string& name : StrategyNames()) {
    EXPECT_TRUE(strategy_names.insert(name).second) << "duplicate " << name;
    const StrategyInfo* info = FindStrategy(name);
    ASSERT_NE(info, nullptr) << name;
    EXPECT_EQ(info->name, name);
    EXPECT_FALSE(info->summary.empty()) << name;
    StatusOr<std::unique_ptr<SearchStrategy>> made = MakeSearchStrategy(name);
    if (info->make == nullptr) {
      EXPECT_FALSE(made.ok()) << name;
      EXPECT_NE(made.status().message().find("no per-pipeline search"), std::string::npos);
      EXPECT_TRUE(info->uses_model) << "farm-learner runs it: " << name;
    } else {
      ASSERT_TRUE(made.ok()) << made.status().ToString();
      EXPECT_EQ((*made)->name(), name);
    }
    if (info->uses_model) {
      EXPECT_NE(FindAcquisition(info->default_acquisition), nullptr) << name;
    }
    EXPECT_TRUE(!info->scores_partial || info->uses_model) << name;
    for (const SettingSpec& spec : info->settings) {
      EXPECT_LE(spec.min, spec.default_value) << name << "." << spec.name;
      EXPECT_LE(spec.default_value, spec.max) << name << "." << spec.name;
      if (spec.integer) {
        EXPECT_EQ(spec.default_value, static_cast<double>(static_cast<int64_t>(spec.default_value)))
            << name << "." << spec.name;
      }
    }
  }
  for (const char* expected :
       {"random", "model-guided", "uncertainty", "greedy", "beam", "anneal", "relaxed",
        "value-iteration"}) {
    EXPECT_EQ(strategy_names.count(expected), 1u) << expected;
  }

  EXPECT_EQ(AcquisitionNames().size(), Acquisitions().size());
  for (const std::string& name : AcquisitionNames()) {
    const AcquisitionInfo* info = FindAcquisition(name);
    ASSERT_NE(info, nullptr) << name;
    StatusOr<std::unique_ptr<AcquisitionFunction>> made = MakeAcquisition(name);
    ASSERT_TRUE(made.ok()) << made.status().ToString();
    EXPECT_EQ((*made)->name(), name);
    EXPECT_EQ((*made)->needs_spread(), info->needs_spread) << name;
  }

  EXPECT_EQ(ModelKindNames().size(), ModelKinds().size());
  std::set<std::string> kinds;
  for (const std::string& name : ModelKindNames()) {
    EXPECT_TRUE(kinds.insert(name).second) << "duplicate " << name;
    const ModelKindInfo* info = FindModelKind(name);
    ASSERT_NE(info, nullptr) << name;
    EXPECT_EQ(info->name, name);
  }
  EXPECT_EQ(kinds.count("gcn"), 1u);

  EXPECT_EQ(FindStrategy("annealing"), nullptr);
  EXPECT_EQ(FindAcquisition("ucb"), nullptr);
  EXPECT_EQ(FindModelKind("transformer"), nullptr);
}

TEST(SearchRegistryTest, UnknownNamesListTheKnownOnes) {
  StatusOr<std::unique_ptr<SearchStrategy>> strategy = MakeSearchStrategy("simulated-annealing");
  ASSERT_FALSE(strategy.ok());
  EXPECT_NE(strategy.status().message().find("simulated-annealing"), std::string::npos);
  for (const std::string& name : StrategyNames()) {
    EXPECT_NE(strategy.status().message().find(name), std::string::npos)
        << name << " missing from: " << strategy.status().message();
  }
  StatusOr<std::unique_ptr<AcquisitionFunction>> acquisition = MakeAcquisition("ucb");
  ASSERT_FALSE(acquisition.ok());
  EXPECT_NE(acquisition.status().message().find("ucb"), std::string::npos);
  for (const std::string& name : AcquisitionNames()) {
    EXPECT_NE(acquisition.status().message().find(name), std::string::npos)
        << name << " missing from: " << acquisition.status().message();
  }
}

TEST(SearchRegistryTest, ResolvedSettingsFillDefaultsAndTakeConfigValues) {
  Strategy config;
  config.set_name("beam");
  StrategySetting* width = config.add_settings();
  width->set_name("width");
  width->set_value(8);
  StrategySetting* unknown = config.add_settings();
  unknown->set_name("temperature");  // anneal's, not beam's
  unknown->set_value(3);
  const StrategySettings settings = ResolvedSettings(config);
  const StrategyInfo* info = FindStrategy("beam");
  ASSERT_NE(info, nullptr);
  EXPECT_EQ(settings.size(), info->settings.size());
  for (const SettingSpec& spec : info->settings) {
    ASSERT_EQ(settings.count(spec.name), 1u) << spec.name;
    EXPECT_EQ(settings.at(spec.name), spec.name == "width" ? 8 : spec.default_value) << spec.name;
  }
  EXPECT_EQ(settings.count("temperature"), 0u);

  // Every strategy: all its settings, at their defaults without config values.
  for (const StrategyInfo& strategy : SearchStrategies()) {
    Strategy bare;
    bare.set_name(strategy.name);
    const StrategySettings defaults = ResolvedSettings(bare);
    EXPECT_EQ(defaults.size(), strategy.settings.size()) << strategy.name;
    for (const SettingSpec& spec : strategy.settings) {
      EXPECT_EQ(defaults.at(spec.name), spec.default_value) << strategy.name << "." << spec.name;
    }
  }
  Strategy nameless;
  nameless.set_name("no-such-strategy");
  EXPECT_TRUE(ResolvedSettings(nameless).empty());
}

TEST(SearchRegistryTest, CheckStrategyModelRefusesWhatTheModelCannotServe) {
  const ModelKindInfo complete_only{"whole-only", "scores complete schedules only",
                                    PartialMeaning::kCompleteOnly, true};
  const ModelKindInfo no_spread{"point-estimate", "one deterministic model",
                                PartialMeaning::kDefaultCompletion, false};
  const ModelKindInfo ensemble{"ensemble", "a seed ensemble", PartialMeaning::kBestReachable,
                               true};
  const AcquisitionInfo& exploit = *FindAcquisition("exploit");
  const AcquisitionInfo& spread = *FindAcquisition("uncertainty");
  ASSERT_FALSE(exploit.needs_spread);
  ASSERT_TRUE(spread.needs_spread);

  for (const std::string name : {"greedy", "beam", "relaxed"}) {
    const StrategyInfo& strategy = *FindStrategy(name);
    EXPECT_TRUE(strategy.scores_partial) << name;
    const Status refused = CheckStrategyModel(strategy, complete_only, exploit);
    ASSERT_FALSE(refused.ok()) << name;
    EXPECT_NE(refused.message().find("'" + std::string(name) + "'"), std::string::npos)
        << refused.message();
    EXPECT_NE(refused.message().find("whole-only"), std::string::npos) << refused.message();
    EXPECT_TRUE(CheckStrategyModel(strategy, no_spread, exploit).ok()) << name;
    EXPECT_TRUE(CheckStrategyModel(strategy, ensemble, spread).ok()) << name;
  }
  for (const std::string name : {"anneal", "model-guided", "uncertainty"}) {
    const StrategyInfo& strategy = *FindStrategy(name);
    EXPECT_FALSE(strategy.scores_partial) << name;
    EXPECT_TRUE(CheckStrategyModel(strategy, complete_only, exploit).ok()) << name;
  }

  const Status no_spread_refused =
      CheckStrategyModel(*FindStrategy("uncertainty"), no_spread, spread);
  ASSERT_FALSE(no_spread_refused.ok());
  EXPECT_NE(no_spread_refused.message().find("'uncertainty'"), std::string::npos)
      << no_spread_refused.message();
  EXPECT_NE(no_spread_refused.message().find("point-estimate"), std::string::npos)
      << no_spread_refused.message();
  for (const ModelKindInfo& kind : ModelKinds()) {
    if (kind.has_spread) {
      EXPECT_NE(no_spread_refused.message().find(kind.name), std::string::npos)
          << kind.name << " missing from: " << no_spread_refused.message();
    }
  }

  // The rule over every registered combination.
  for (const StrategyInfo& strategy : SearchStrategies()) {
    if (!strategy.uses_model) continue;
    for (const ModelKindInfo& kind : ModelKinds()) {
      for (const AcquisitionInfo& acquisition : Acquisitions()) {
        const bool usable =
            !(strategy.scores_partial && kind.partial == PartialMeaning::kCompleteOnly) &&
            !(acquisition.needs_spread && !kind.has_spread);
        EXPECT_EQ(CheckStrategyModel(strategy, kind, acquisition).ok(), usable)
            << strategy.name << " " << kind.name << " " << acquisition.name;
      }
    }
  }
}

// ---------------------------------------------------------------------------------
// greedy

TEST(SearchGreedyTest, FindsTheOptimumOfASeparableCost) {
  for (const Fixture& f : SmallSpaces()) {
    for (int64_t levels : {int64_t{1} << 20, int64_t{3}}) {
      SyntheticModel::Config config = ConfigFor(*f);
      config.levels = levels;
      SyntheticModel model(config);
      Searcher greedy("greedy");
      ASSERT_TRUE(greedy.Init(*f, &model, {{"noise", 0}}).ok());
      const std::vector<SearchProposal> proposals = greedy.Propose(1);
      ASSERT_EQ(proposals.size(), 1u);
      ExpectValid(*f, model, greedy.acquisition(), proposals[0]);
      EXPECT_NEAR(proposals[0].prediction.mean_seconds, Optimum(*f, model), 1e-12)
          << "levels " << levels;
      EXPECT_EQ(proposals[0].sampled_stages, 0);
    }
  }
}

TEST(SearchGreedyTest, NoisyWalksProposeNewLegalSchedulesAfterTheGreedyOne) {
  Fixture f = ReductionSpace();
  SyntheticModel model(*f);
  Searcher pure("greedy");
  ASSERT_TRUE(pure.Init(*f, &model, {{"noise", 0}}).ok());
  const std::vector<SearchProposal> best = pure.Propose(1);
  ASSERT_EQ(best.size(), 1u);

  Searcher noisy("greedy");
  ASSERT_TRUE(noisy.Init(*f, &model, {{"noise", 0.5}}).ok());
  std::vector<SearchProposal> proposals = noisy.Propose(4);
  for (SearchProposal& p : noisy.Propose(4)) proposals.push_back(std::move(p));
  ASSERT_EQ(proposals.size(), 8u);
  EXPECT_EQ(proposals[0].hash, best[0].hash);  // the first walk is the pure greedy one
  for (const SearchProposal& p : proposals) {
    ExpectValid(*f, model, noisy.acquisition(), p);
    EXPECT_GE(p.prediction.mean_seconds, best[0].prediction.mean_seconds - 1e-12);
  }
  ExpectDistinct(Hashes(proposals));
  EXPECT_FALSE(noisy->Exhausted());
}

TEST(SearchGreedyTest, SamplesStagesWithMoreOptionsThanTheCap) {
  Fixture f = VggSpace();
  SyntheticModel model(*f);
  Searcher greedy("greedy");
  ASSERT_TRUE(greedy.Init(*f, &model, {{"options", 8}, {"noise", 0}}).ok());
  const std::vector<SearchProposal> proposals = greedy.Propose(3);
  // Sampling draws new options each walk: noise 0 does not exhaust it.
  ASSERT_EQ(proposals.size(), 3u);
  for (const SearchProposal& p : proposals) {
    ExpectValid(*f, model, greedy.acquisition(), p);
    EXPECT_GT(p.sampled_stages, 0);
    EXPECT_EQ(p.sampled_stages, StagesOver(*f, p.schedule, 8));
  }
  ExpectDistinct(Hashes(proposals));
  // Every scoring call saw at most the cap.
  for (const auto& batch : model.batches()) EXPECT_LE(batch.size(), 8u);
}

TEST(SearchGreedyTest, SameSeedSameProposals) {
  Fixture f = VggSpace();
  SyntheticModel model(*f);
  auto run = [&](uint64_t seed) {
    Searcher greedy("greedy");
    EXPECT_TRUE(greedy.Init(*f, &model, {{"options", 8}, {"noise", 0.3}}, seed).ok());
    return Hashes(greedy.Propose(4));
  };
  const std::vector<std::string> first = run(7);
  ASSERT_EQ(first.size(), 4u);
  EXPECT_EQ(run(7), first);
  EXPECT_NE(run(8), first);
}

TEST(SearchGreedyTest, NeverProposesKnownSchedules) {
  Fixture f = ReductionSpace();
  SyntheticModel model(*f);
  Searcher first("greedy");
  ASSERT_TRUE(first.Init(*f, &model, {{"noise", 0.5}}).ok());
  const std::vector<std::string> taken = Hashes(first.Propose(6));
  ASSERT_EQ(taken.size(), 6u);

  Searcher second("greedy");
  second.known.insert(taken.begin(), taken.end());
  ASSERT_TRUE(second.Init(*f, &model, {{"noise", 0.5}}).ok());
  const std::vector<SearchProposal> proposals = second.Propose(6);
  EXPECT_FALSE(proposals.empty());
  for (const SearchProposal& p : proposals) EXPECT_EQ(second.known.count(p.hash), 0u);
  ExpectDistinct(Hashes(proposals));

  // Without noise the only walk is the known optimum: nothing to propose.
  Searcher pure("greedy");
  pure.known.insert(taken[0]);
  ASSERT_TRUE(pure.Init(*f, &model, {{"noise", 0}}).ok());
  EXPECT_TRUE(pure.Propose(3).empty());
  EXPECT_TRUE(pure->Exhausted());
}

TEST(SearchGreedyTest, ExhaustedAfterOneWalkWithoutNoiseOrSampling) {
  Fixture f = TinySpace();
  SyntheticModel model(*f);
  Searcher greedy("greedy");
  ASSERT_TRUE(greedy.Init(*f, &model, {{"noise", 0}}).ok());
  EXPECT_FALSE(greedy->Exhausted());
  EXPECT_EQ(greedy.Propose(3).size(), 1u);
  EXPECT_TRUE(greedy->Exhausted());
  EXPECT_TRUE(greedy.Propose(3).empty());
}

// ---------------------------------------------------------------------------------
// beam

TEST(SearchBeamTest, WidthOneIsTheGreedyWalk) {
  for (const Fixture& f : SmallSpaces()) {
    for (int64_t levels : {int64_t{1} << 20, int64_t{3}}) {  // 3 levels: many ties
      SyntheticModel::Config config = ConfigFor(*f);
      config.levels = levels;
      SyntheticModel model(config);
      Searcher greedy("greedy");
      ASSERT_TRUE(greedy.Init(*f, &model, {{"noise", 0}}).ok());
      Searcher beam("beam");
      ASSERT_TRUE(beam.Init(*f, &model, {{"width", 1}}).ok());
      const std::vector<SearchProposal> g = greedy.Propose(1);
      const std::vector<SearchProposal> b = beam.Propose(1);
      ASSERT_EQ(g.size(), 1u);
      ASSERT_EQ(b.size(), 1u);
      EXPECT_EQ(b[0].hash, g[0].hash) << "levels " << levels;
      ExpectValid(*f, model, beam.acquisition(), b[0]);
    }
  }
}

TEST(SearchBeamTest, AWiderBeamIsNeverWorseThanGreedy) {
  Fixture f = ReductionSpace();
  // Separable cost: both find the optimum.
  SyntheticModel separable(*f);
  Searcher greedy("greedy");
  ASSERT_TRUE(greedy.Init(*f, &separable, {{"noise", 0}}).ok());
  Searcher beam("beam");
  ASSERT_TRUE(beam.Init(*f, &separable, {{"width", 8}}).ok());
  const double greedy_best = BestPredicted(greedy.Propose(1));
  const double beam_best = BestPredicted(beam.Propose(8));
  EXPECT_LE(beam_best, greedy_best + 1e-12);
  EXPECT_NEAR(beam_best, Optimum(*f, separable), 1e-12);

  // A trap on the first stage's cheapest decision: greedy walks into it, a beam of
  // four keeps the way around it and finds the optimum.
  SyntheticModel::Config config = ConfigFor(*f);
  config.trap = CheapestFirstDecision(*f);
  SyntheticModel trapped(config);
  const double optimum = Optimum(*f, trapped);
  Searcher trapped_greedy("greedy");
  ASSERT_TRUE(trapped_greedy.Init(*f, &trapped, {{"noise", 0}}).ok());
  const double trapped_greedy_best = BestPredicted(trapped_greedy.Propose(1));
  EXPECT_GT(trapped_greedy_best, optimum + SyntheticModel::kTrapPenalty);
  Searcher wide("beam");
  ASSERT_TRUE(wide.Init(*f, &trapped, {{"width", 4}}).ok());
  const std::vector<SearchProposal> proposals = wide.Propose(4);
  ASSERT_EQ(proposals.size(), 4u);
  EXPECT_NEAR(BestPredicted(proposals), optimum, 1e-12);
  EXPECT_LT(BestPredicted(proposals), trapped_greedy_best);
}

TEST(SearchBeamTest, ProposesDistinctNewSchedulesBestFirst) {
  Fixture f = TinySpace();
  SyntheticModel model(*f);
  Searcher first("beam");
  ASSERT_TRUE(first.Init(*f, &model, {{"width", 8}}).ok());
  const std::vector<SearchProposal> top = first.Propose(2);
  ASSERT_EQ(top.size(), 2u);

  Searcher beam("beam");
  beam.known.insert(top[0].hash);
  ASSERT_TRUE(beam.Init(*f, &model, {{"width", 8}}).ok());
  const std::vector<SearchProposal> proposals = beam.Propose(7);
  ASSERT_EQ(proposals.size(), 7u);  // the width-8 beam less the known one
  EXPECT_EQ(proposals[0].hash, top[1].hash);
  for (size_t i = 0; i < proposals.size(); ++i) {
    ExpectValid(*f, model, beam.acquisition(), proposals[i]);
    EXPECT_EQ(beam.known.count(proposals[i].hash), 0u);
    if (i > 0) {
      EXPECT_LE(proposals[i - 1].prediction.mean_seconds, proposals[i].prediction.mean_seconds);
    }
  }
  ExpectDistinct(Hashes(proposals));
}

TEST(SearchBeamTest, SamplesStagesWithMoreOptionsThanTheCap) {
  Fixture f = VggSpace();
  SyntheticModel model(*f);
  Searcher beam("beam");
  ASSERT_TRUE(beam.Init(*f, &model, {{"width", 2}, {"options", 6}, {"max_width", 2}}).ok());
  const std::vector<SearchProposal> proposals = beam.Propose(2);
  ASSERT_EQ(proposals.size(), 2u);
  for (const SearchProposal& p : proposals) {
    ExpectValid(*f, model, beam.acquisition(), p);
    EXPECT_GT(p.sampled_stages, 0);
    EXPECT_EQ(p.sampled_stages, StagesOver(*f, p.schedule, 6));
  }
}

TEST(SearchBeamTest, WidensUpToMaxWidthThenIsExhausted) {
  Fixture f = TinySpace();
  SyntheticModel model(*f);
  Searcher beam("beam");
  ASSERT_TRUE(beam.Init(*f, &model, {{"width", 2}, {"max_width", 8}}).ok());
  const std::vector<SearchProposal> all = beam.Drain(3, 100);
  EXPECT_TRUE(beam->Exhausted());
  // Widths 2, 4, 8: the last run alone has 8 distinct schedules.
  EXPECT_GE(all.size(), 8u);
  EXPECT_LE(all.size(), 2u + 4u + 8u);
  ExpectDistinct(Hashes(all));
  for (const SearchProposal& p : all) ExpectValid(*f, model, beam.acquisition(), p);
  EXPECT_TRUE(beam.Propose(3).empty());

  // A max_width between two doublings is still tried: widths 4, then 6.
  Searcher uneven("beam");
  ASSERT_TRUE(uneven.Init(*f, &model, {{"width", 4}, {"max_width", 6}}).ok());
  const std::vector<SearchProposal> uneven_all = uneven.Drain(3, 100);
  EXPECT_TRUE(uneven->Exhausted());
  EXPECT_GE(uneven_all.size(), 6u);
  ExpectDistinct(Hashes(uneven_all));

  // A width above max_width runs once, at max_width.
  Searcher narrow("beam");
  ASSERT_TRUE(narrow.Init(*f, &model, {{"width", 16}, {"max_width", 4}}).ok());
  const std::vector<SearchProposal> narrow_all = narrow.Drain(3, 100);
  EXPECT_TRUE(narrow->Exhausted());
  EXPECT_EQ(narrow_all.size(), 4u);
}

// ---------------------------------------------------------------------------------
// relaxed

TEST(SearchRelaxedTest, FindsTheOptimumWithAlphaOneAndAbove) {
  for (const Fixture& f : SmallSpaces()) {
    SyntheticModel model(*f);
    const double optimum = Optimum(*f, model);
    for (double alpha : {1.0, 1.3}) {
      Searcher relaxed("relaxed");
      ASSERT_TRUE(relaxed.Init(*f, &model, {{"alpha", alpha}}).ok());
      const std::vector<SearchProposal> proposals = relaxed.Propose(3);
      ASSERT_FALSE(proposals.empty()) << "alpha " << alpha;
      EXPECT_NEAR(proposals[0].prediction.mean_seconds, optimum, 1e-12) << "alpha " << alpha;
      for (size_t i = 0; i < proposals.size(); ++i) {
        ExpectValid(*f, model, relaxed.acquisition(), proposals[i]);
        if (i > 0) {
          EXPECT_LE(proposals[i - 1].prediction.mean_seconds,
                    proposals[i].prediction.mean_seconds);
        }
      }
    }
  }
}

TEST(SearchRelaxedTest, ProposesDistinctCompleteSchedulesUntilExhausted) {
  Fixture f = TinySpace();
  SyntheticModel model(*f);
  const size_t total = AllSchedules(*f).size();
  std::vector<size_t> counts;
  for (double alpha : {1.0, 1.3, 10.0}) {
    Searcher relaxed("relaxed");
    ASSERT_TRUE(relaxed.Init(*f, &model, {{"alpha", alpha}}).ok());
    const std::vector<SearchProposal> all = relaxed.Drain(5, 1000);
    EXPECT_TRUE(relaxed->Exhausted()) << "alpha " << alpha;
    ASSERT_FALSE(all.empty());
    ExpectDistinct(Hashes(all));
    for (const SearchProposal& p : all) ExpectValid(*f, model, relaxed.acquisition(), p);
    counts.push_back(all.size());
  }
  // A larger alpha backtracks into more states; 10 prunes nothing on this cost.
  EXPECT_LT(counts[0], counts[1]);
  EXPECT_LT(counts[1], counts[2]);
  EXPECT_EQ(counts[2], total);
}

// With alpha large enough to prune nothing, the search enumerates the whole space,
// however few states each call may expand: no state is lost between calls.
TEST(SearchRelaxedTest, ASmallExpansionBudgetLosesNoState) {
  Fixture f = TinySpace();
  SyntheticModel model(*f);
  const size_t total = AllSchedules(*f).size();
  for (double expansions : {1.0, 2.0, 400.0}) {
    Searcher relaxed("relaxed");
    ASSERT_TRUE(relaxed.Init(*f, &model, {{"alpha", 10}, {"expansions", expansions}}).ok());
    const std::vector<SearchProposal> all = relaxed.Drain(1, 5000);
    EXPECT_TRUE(relaxed->Exhausted()) << "expansions " << expansions;
    EXPECT_EQ(all.size(), total) << "expansions " << expansions;
    ExpectDistinct(Hashes(all));
    EXPECT_NEAR(BestPredicted(all), Optimum(*f, model), 1e-12) << "expansions " << expansions;
  }
}

// ---------------------------------------------------------------------------------
// anneal

TEST(SearchAnnealTest, BeatsTheMeanOfRandomSchedules) {
  Fixture f = VggSpace();
  SyntheticModel model(*f);
  double mean = 0;
  const int samples = 50;
  for (int i = 0; i < samples; ++i) mean += model.Seconds(f->RandomSchedule(1000 + i)) / samples;

  Searcher anneal("anneal");
  ASSERT_TRUE(anneal.Init(*f, &model, {{"steps", 40}, {"neighbors", 8}}).ok());
  const std::vector<SearchProposal> proposals = anneal.Propose(10);
  ASSERT_EQ(proposals.size(), 10u);
  for (size_t i = 0; i < proposals.size(); ++i) {
    ExpectValid(*f, model, anneal.acquisition(), proposals[i]);
    if (i > 0) {
      EXPECT_LE(proposals[i - 1].prediction.mean_seconds, proposals[i].prediction.mean_seconds);
    }
  }
  ExpectDistinct(Hashes(proposals));
  EXPECT_LT(BestPredicted(proposals), mean);
}

TEST(SearchAnnealTest, RestartsFromABetterMeasurement) {
  Fixture f = VggSpace();
  SyntheticModel model(*f);
  Searcher anneal("anneal");
  // One step a call: the proposals are the moves from where the walk stands.
  ASSERT_TRUE(anneal.Init(*f, &model, {{"steps", 1}, {"neighbors", 6}}).ok());
  std::vector<SearchProposal> before = anneal.Propose(100);
  ASSERT_FALSE(before.empty());

  const ScheduleSpec measured = f->RandomSchedule(4242);
  anneal->Notify({Measured(*f, measured, 1e-6)});
  const std::vector<SearchProposal> after = anneal.Propose(100);
  ASSERT_FALSE(after.empty());
  for (const SearchProposal& p : after) {
    ExpectValid(*f, model, anneal.acquisition(), p, 1e-6);
    EXPECT_TRUE(OneMoveFrom(measured, p.schedule));
    EXPECT_NE(p.hash, ScheduleHash(*f, measured));
  }

  // A slower measurement is no new incumbent: the walk goes on where it was.
  const ScheduleSpec slower = f->RandomSchedule(777);
  anneal->Notify({Measured(*f, slower, 1.0)});
  const std::vector<SearchProposal> later = anneal.Propose(100);
  ASSERT_FALSE(later.empty());
  int near_slower = 0;
  for (const SearchProposal& p : later) {
    ExpectValid(*f, model, anneal.acquisition(), p, 1e-6);
    near_slower += OneMoveFrom(slower, p.schedule) ? 1 : 0;
  }
  EXPECT_LT(near_slower, static_cast<int>(later.size()));
}

// A walk starts from a scored schedule, even when scoring the start failed once.
TEST(SearchAnnealTest, AWalkStartsFromAScoredSchedule) {
  Fixture f = VggSpace();
  SyntheticModel::Config config = ConfigFor(*f);
  config.fail_calls = {0};
  SyntheticModel model(config);
  Searcher anneal("anneal");
  ASSERT_TRUE(anneal.Init(*f, &model, {{"steps", 5}, {"neighbors", 4}}).ok());
  ASSERT_FALSE(anneal->Propose(3).ok());
  EXPECT_EQ(model.calls(), 1);
  const std::vector<SearchProposal> proposals = anneal.Propose(3);
  EXPECT_EQ(proposals.size(), 3u);
  ASSERT_GE(model.batches().size(), 2u);
  EXPECT_EQ(model.batches()[0].size(), 1u);  // the start, scored before the first moves
  EXPECT_EQ(model.batches()[1].size(), 4u);
}

// ---------------------------------------------------------------------------------
// model-guided and uncertainty

TEST(SearchScreenedTest, ModelGuidedProposesTheBestPredictedOfItsSample) {
  Fixture f = ReductionSpace();
  SyntheticModel model(*f);
  Searcher guided("model-guided");
  ASSERT_TRUE(guided.Init(*f, &model, {{"sample_size", 20}}).ok());
  const std::vector<SearchProposal> proposals = guided.Propose(5);
  ASSERT_EQ(proposals.size(), 5u);
  ASSERT_EQ(model.batches().size(), 1u);
  const std::vector<ScheduleSpec>& sample = model.batches()[0];
  EXPECT_EQ(sample.size(), 20u);
  std::vector<double> seconds;
  for (const ScheduleSpec& s : sample) seconds.push_back(model.Seconds(s));
  std::sort(seconds.begin(), seconds.end());
  for (size_t i = 0; i < proposals.size(); ++i) {
    ExpectValid(*f, model, guided.acquisition(), proposals[i]);
    EXPECT_DOUBLE_EQ(proposals[i].prediction.mean_seconds, seconds[i]) << i;
  }
  ExpectDistinct(Hashes(proposals));

  // The next batch comes from a fresh sample and repeats nothing.
  const std::vector<SearchProposal> next = guided.Propose(5);
  ASSERT_EQ(next.size(), 5u);
  std::vector<std::string> all = Hashes(proposals);
  for (const std::string& h : Hashes(next)) all.push_back(h);
  ExpectDistinct(all);
}

TEST(SearchScreenedTest, UncertaintyProposesTheMostUncertainOfItsSample) {
  Fixture f = ReductionSpace();
  SyntheticModel::Config config = ConfigFor(*f);
  config.spread = true;
  SyntheticModel model(config);
  Searcher uncertain("uncertainty", "uncertainty");
  ASSERT_TRUE(uncertain.Init(*f, &model, {{"sample_size", 30}}).ok());
  const std::vector<SearchProposal> proposals = uncertain.Propose(4);
  ASSERT_EQ(proposals.size(), 4u);
  ASSERT_EQ(model.batches().size(), 1u);
  std::vector<double> scores;
  for (const ScheduleSpec& s : model.batches()[0]) {
    scores.push_back(uncertain.acquisition().Score(model.Prediction(s), 0));
  }
  std::sort(scores.rbegin(), scores.rend());
  for (size_t i = 0; i < proposals.size(); ++i) {
    ExpectValid(*f, model, uncertain.acquisition(), proposals[i]);
    EXPECT_DOUBLE_EQ(proposals[i].acquisition_score, scores[i]) << i;
  }
  EXPECT_GT(proposals[0].prediction.stddev_seconds, 0);
}

// Thompson sampling through model-guided: each proposal is, among the sample's schedules
// not proposed before it, the fastest under one of the ensemble's members; one seed gives
// one batch.
TEST(SearchScreenedTest, ThompsonPicksFollowTheMembersAndTheSeed) {
  Fixture f = ReductionSpace();
  SyntheticModel::Config config = ConfigFor(*f);
  config.members = 4;
  auto run = [&](uint64_t seed, SyntheticModel& model) {
    Searcher thompson("model-guided", "thompson");
    EXPECT_TRUE(thompson.Init(*f, &model, {{"sample_size", 30}}, seed).ok());
    return thompson.Propose(6);
  };
  SyntheticModel model(config);
  const std::vector<SearchProposal> proposals = run(5, model);
  ASSERT_EQ(proposals.size(), 6u);
  ASSERT_EQ(model.batches().size(), 1u);
  std::vector<ScheduleSpec> left = model.batches()[0];
  const std::unique_ptr<AcquisitionFunction> thompson = MakeAcquisition("thompson").value();
  for (const SearchProposal& p : proposals) {
    ExpectValid(*f, model, *thompson, p);
    EXPECT_EQ(p.prediction.member_seconds.size(), 4u);
    bool a_members_fastest = false;
    for (int m = 0; m < 4; ++m) {
      double fastest = 1e30;
      for (const ScheduleSpec& s : left) {
        fastest = std::min(fastest, model.Prediction(s).member_seconds[m]);
      }
      a_members_fastest |= p.prediction.member_seconds[m] == fastest;
    }
    EXPECT_TRUE(a_members_fastest) << "proposal " << p.hash;
    left.erase(std::find_if(left.begin(), left.end(), [&](const ScheduleSpec& s) {
      return ScheduleHash(*f, s) == p.hash;
    }));
  }
  SyntheticModel again(config);
  EXPECT_EQ(Hashes(run(5, again)), Hashes(proposals));
  std::set<std::vector<std::string>> batches;
  for (uint64_t seed = 1; seed <= 4; ++seed) {
    SyntheticModel other(config);
    batches.insert(Hashes(run(seed, other)));
  }
  EXPECT_GT(batches.size(), 1u);
}

// The random acquisition: distinct schedules of the sample, score 0, one seed one batch.
TEST(SearchScreenedTest, RandomAcquisitionPicksOutOfTheSample) {
  Fixture f = ReductionSpace();
  auto run = [&](uint64_t seed) {
    SyntheticModel model(*f);
    Searcher random("model-guided", "random");
    EXPECT_TRUE(random.Init(*f, &model, {{"sample_size", 40}}, seed).ok());
    std::vector<SearchProposal> proposals = random.Propose(8);
    std::set<std::string> sample;
    for (const ScheduleSpec& s : model.batches().at(0)) sample.insert(ScheduleHash(*f, s));
    for (const SearchProposal& p : proposals) {
      ExpectValid(*f, model, random.acquisition(), p);
      EXPECT_EQ(p.acquisition_score, 0);
      EXPECT_EQ(sample.count(p.hash), 1u);
    }
    return proposals;
  };
  const std::vector<SearchProposal> proposals = run(3);
  ASSERT_EQ(proposals.size(), 8u);
  ExpectDistinct(Hashes(proposals));
  EXPECT_EQ(Hashes(run(3)), Hashes(proposals));
}

// ---------------------------------------------------------------------------------
// Every model strategy: Init's checks, model errors

TEST(SearchModelStrategyTest, StrategiesThatRankRefuseBatchRules) {
  Fixture f = TinySpace();
  SyntheticModel model(*f);
  for (const std::string& name : ModelStrategies()) {
    for (const char* acquisition : {"thompson", "random"}) {
      Searcher run(name, acquisition);
      const Status status = run.Init(*f, &model, SmallSettings(name));
      EXPECT_EQ(status.ok(), FindStrategy(name)->selects) << name << " " << acquisition;
      if (!status.ok()) {
        EXPECT_NE(status.message().find(acquisition), std::string::npos) << status.message();
      }
    }
  }
}

TEST(SearchModelStrategyTest, InitNeedsAModel) {
  Fixture f = TinySpace();
  for (const std::string& name : ModelStrategies()) {
    Searcher run(name);
    const Status status = run.Init(*f, nullptr, SmallSettings(name));
    ASSERT_FALSE(status.ok()) << name;
    EXPECT_NE(status.message().find(name), std::string::npos) << status.message();
    EXPECT_NE(status.message().find("model"), std::string::npos) << status.message();
  }
  Searcher random("random");
  EXPECT_TRUE(random.Init(*f, nullptr).ok());
  std::vector<SearchProposal> proposals = random.Propose(3);
  ASSERT_EQ(proposals.size(), 3u);
  for (const SearchProposal& p : proposals) {
    EXPECT_TRUE(f->Check(p.schedule).ok());
    EXPECT_EQ(p.hash, ScheduleHash(*f, p.schedule));
    EXPECT_FALSE(p.predicted);
  }
}

TEST(SearchModelStrategyTest, PartialScoringStrategiesRefuseCompleteOnlyModels) {
  Fixture f = TinySpace();
  SyntheticModel::Config config = ConfigFor(*f);
  config.partial = PartialMeaning::kCompleteOnly;
  config.version = "complete-only-7";
  SyntheticModel model(config);
  for (const std::string& name : ModelStrategies()) {
    Searcher run(name);
    const Status status = run.Init(*f, &model, SmallSettings(name));
    if (FindStrategy(name)->scores_partial) {
      ASSERT_FALSE(status.ok()) << name;
      EXPECT_NE(status.message().find(name), std::string::npos) << status.message();
      EXPECT_NE(status.message().find("complete-only-7"), std::string::npos) << status.message();
    } else {
      ASSERT_TRUE(status.ok()) << name << ": " << status.ToString();
      for (const SearchProposal& p : run.Propose(2)) {
        ExpectValid(*f, model, run.acquisition(), p);
      }
    }
  }
}

TEST(SearchModelStrategyTest, InitRefusesSettingsOutOfRange) {
  Fixture f = TinySpace();
  SyntheticModel model(*f);
  const std::vector<std::pair<std::string, std::map<std::string, double>>> bad = {
      {"greedy", {{"options", 0}}},   {"greedy", {{"noise", 1.5}}},
      {"beam", {{"width", 2.5}}},     {"anneal", {{"cooling", 0}}},
      {"relaxed", {{"alpha", 0.5}}},  {"model-guided", {{"sample_size", -3}}},
  };
  for (const auto& [name, settings] : bad) {
    Searcher run(name);
    const Status status = run.Init(*f, &model, settings);
    ASSERT_FALSE(status.ok()) << name << " " << settings.begin()->first;
    EXPECT_NE(status.message().find(settings.begin()->first), std::string::npos)
        << status.message();
  }
  Searcher edge("greedy");
  EXPECT_TRUE(edge.Init(*f, &model, {{"options", 1}, {"noise", 1}}).ok());
}

TEST(SearchModelStrategyTest, ModelErrorsComeOutOfPropose) {
  Fixture f = TinySpace();
  SyntheticModel::Config config = ConfigFor(*f);
  config.fail_always = true;
  for (const std::string& name : ModelStrategies()) {
    SyntheticModel model(config);
    Searcher run(name);
    ASSERT_TRUE(run.Init(*f, &model, SmallSettings(name)).ok()) << name;
    StatusOr<std::vector<SearchProposal>> proposals = run->Propose(3);
    ASSERT_FALSE(proposals.ok()) << name;
    EXPECT_NE(proposals.status().message().find("synthetic model failed"), std::string::npos)
        << name << ": " << proposals.status().message();
    EXPECT_GE(model.calls(), 1) << name;
  }
}

// After a failed call of its model a strategy may be called again, and goes on.
TEST(SearchModelStrategyTest, ProposeGoesOnAfterAModelError) {
  Fixture f = TinySpace();
  for (const std::string& name : ModelStrategies()) {
    for (int failing_call : {0, 1}) {
      SyntheticModel::Config config = ConfigFor(*f);
      config.fail_calls = {failing_call};
      SyntheticModel model(config);
      Searcher run(name);
      ASSERT_TRUE(run.Init(*f, &model, SmallSettings(name)).ok()) << name;
      // Strategies that score a batch per Propose fail on a later Propose.
      bool failed = false;
      for (int attempt = 0; attempt < 3 && !failed; ++attempt) failed = !run->Propose(2).ok();
      ASSERT_TRUE(failed) << name << " call " << failing_call;
      const std::vector<SearchProposal> proposals = run.Propose(2);
      EXPECT_FALSE(proposals.empty()) << name << " after a failure on call " << failing_call;
      for (const SearchProposal& p : proposals) ExpectValid(*f, model, run.acquisition(), p);
    }
  }
}

// ---------------------------------------------------------------------------------
// PipelineSearch

PipelineSearch::Options SearchOptions(const std::string& strategy,
                                      const std::map<std::string, double>& settings,
                                      double epsilon, uint64_t seed = 11) {
  PipelineSearch::Options options;
  options.strategy = strategy;
  options.settings = Settings(strategy, settings);
  options.acquisition = FindStrategy(strategy)->uses_model
                            ? FindStrategy(strategy)->default_acquisition
                            : "exploit";
  options.seed = seed;
  options.epsilon = epsilon;
  return options;
}

std::unique_ptr<PipelineSearch> CreateSearch(const ScheduleSpace& space,
                                             const PipelineSearch::Options& options) {
  StatusOr<std::unique_ptr<PipelineSearch>> search = PipelineSearch::Create(space, options);
  EXPECT_TRUE(search.ok()) << search.status().ToString();
  return search.ok() ? std::move(search).value() : nullptr;
}

// A model owned by the search, with a pointer kept to look at it.
std::unique_ptr<SyntheticModel> NewModel(const ScheduleSpace& space, const std::string& version,
                                         SyntheticModel** view,
                                         std::set<int> fail_calls = {}) {
  SyntheticModel::Config config = ConfigFor(space);
  config.version = version;
  config.fail_calls = std::move(fail_calls);
  auto model = std::make_unique<SyntheticModel>(config);
  *view = model.get();
  return model;
}

void ExpectRandomCandidate(const ScheduleSpace& space, const Candidate& c) {
  EXPECT_EQ(c.origin(), "random");
  EXPECT_EQ(c.model_version(), "");
  EXPECT_FALSE(c.has_prediction());
  EXPECT_EQ(c.acquisition(), "");
  EXPECT_EQ(c.acquisition_score(), 0);
  EXPECT_EQ(c.pipeline_id(), space.pipeline_id());
  EXPECT_EQ(c.schedule().pipeline_id(), space.pipeline_id());
  EXPECT_TRUE(space.Check(c.schedule()).ok()) << space.Check(c.schedule()).ToString();
  EXPECT_EQ(c.schedule_hash(), ScheduleHash(space, c.schedule()));
}

void ExpectGuidedCandidate(const ScheduleSpace& space, const SyntheticModel& model,
                           const std::string& strategy, const Candidate& c) {
  EXPECT_EQ(c.origin(), strategy);
  EXPECT_EQ(c.model_version(), model.version());
  EXPECT_EQ(c.pipeline_id(), space.pipeline_id());
  EXPECT_EQ(c.schedule().stages_size(), static_cast<int>(space.decision_order().size()));
  EXPECT_FALSE(c.schedule().partial());
  EXPECT_TRUE(space.Check(c.schedule()).ok()) << space.Check(c.schedule()).ToString();
  EXPECT_EQ(c.schedule_hash(), ScheduleHash(space, c.schedule()));
  ASSERT_TRUE(c.has_prediction());
  EXPECT_DOUBLE_EQ(c.prediction().mean_seconds(), model.Seconds(c.schedule()));
  EXPECT_EQ(c.acquisition(), "exploit");
  EXPECT_DOUBLE_EQ(c.acquisition_score(), -c.prediction().mean_seconds());
}

int CountOrigin(const std::vector<Candidate>& candidates, const std::string& origin) {
  int count = 0;
  for (const Candidate& c : candidates) count += c.origin() == origin ? 1 : 0;
  return count;
}

TEST(SearchPipelineTest, CreateRefusesUnknownNames) {
  Fixture f = TinySpace();
  PipelineSearch::Options options = SearchOptions("greedy", {}, 0);
  options.strategy = "hill-climbing";
  StatusOr<std::unique_ptr<PipelineSearch>> search = PipelineSearch::Create(*f, options);
  ASSERT_FALSE(search.ok());
  EXPECT_NE(search.status().message().find("hill-climbing"), std::string::npos);
  EXPECT_NE(search.status().message().find("greedy"), std::string::npos);
  options = SearchOptions("greedy", {}, 0);
  options.acquisition = "ucb";
  search = PipelineSearch::Create(*f, options);
  ASSERT_FALSE(search.ok());
  EXPECT_NE(search.status().message().find("ucb"), std::string::npos);
  EXPECT_NE(search.status().message().find("thompson"), std::string::npos);
  // An acquisition's setting out of range.
  options = SearchOptions("model-guided", {}, 0);
  options.acquisition = "lcb";
  options.settings["kappa"] = 12;
  search = PipelineSearch::Create(*f, options);
  ASSERT_FALSE(search.ok());
  EXPECT_NE(search.status().message().find("kappa"), std::string::npos);
}

TEST(SearchPipelineTest, RandomCandidatesBeforeTheFirstModel) {
  Fixture f = ReductionSpace();
  std::unique_ptr<PipelineSearch> search = CreateSearch(*f, SearchOptions("greedy", {}, 0));
  ASSERT_NE(search, nullptr);
  std::string failure = "stale";
  const std::vector<Candidate> candidates = search->Propose(6, &failure);
  EXPECT_EQ(failure, "");
  ASSERT_EQ(candidates.size(), 6u);
  for (const Candidate& c : candidates) ExpectRandomCandidate(*f, c);

  // A null model is no model.
  ASSERT_TRUE(search->SetModel(nullptr).ok());
  for (const Candidate& c : search->Propose(3, &failure)) ExpectRandomCandidate(*f, c);
}

TEST(SearchPipelineTest, CandidatesOfTheStrategyCarryTheModel) {
  Fixture f = ReductionSpace();
  for (const std::string strategy : {"greedy", "model-guided", "relaxed"}) {
    std::unique_ptr<PipelineSearch> search =
        CreateSearch(*f, SearchOptions(strategy, strategy == std::string("greedy")
                                                     ? std::map<std::string, double>{{"noise", 0.5}}
                                                     : SmallSettings(strategy),
                                       0));
    ASSERT_NE(search, nullptr);
    SyntheticModel* model = nullptr;
    ASSERT_TRUE(search->SetModel(NewModel(*f, "campaign-synthetic-1", &model)).ok());
    std::string failure;
    const std::vector<Candidate> candidates = search->Propose(4, &failure);
    EXPECT_EQ(failure, "") << strategy;
    ASSERT_EQ(candidates.size(), 4u) << strategy;
    for (const Candidate& c : candidates) ExpectGuidedCandidate(*f, *model, strategy, c);
    EXPECT_GT(model->calls(), 0);
  }
}

// A replay campaign's pipeline: random candidates and a model-guided search's sample
// come from the pool only, every pool schedule once, and the search ends with the pool.
TEST(SearchPipelineTest, APoolIsTheWholeProposalSpace) {
  Fixture f = ReductionSpace();
  std::set<std::string> pool_hashes;
  PipelineSearch::Options options = SearchOptions("model-guided", {{"sample_size", 4}}, 0);
  for (uint64_t seed = 100; options.pool.size() < 9; ++seed) {
    PoolSchedule pooled;
    pooled.schedule = f->RandomSchedule(seed);
    pooled.hash = ScheduleHash(*f, pooled.schedule);
    if (pool_hashes.insert(pooled.hash).second) options.pool.push_back(std::move(pooled));
  }
  std::unique_ptr<PipelineSearch> search = CreateSearch(*f, options);
  ASSERT_NE(search, nullptr);
  std::string failure;
  std::set<std::string> proposed;
  for (const Candidate& c : search->Propose(3, &failure)) {  // before a model: random
    EXPECT_EQ(c.origin(), "random");
    proposed.insert(c.schedule_hash());
  }
  SyntheticModel* model = nullptr;
  ASSERT_TRUE(search->SetModel(NewModel(*f, "v1", &model)).ok());
  for (int round = 0; round < 5; ++round) {
    for (const Candidate& c : search->Propose(2, &failure)) {
      EXPECT_EQ(failure, "");
      EXPECT_TRUE(pool_hashes.count(c.schedule_hash())) << c.schedule_hash();
      EXPECT_TRUE(proposed.insert(c.schedule_hash()).second) << "proposed twice";
    }
  }
  EXPECT_EQ(proposed, pool_hashes);
  EXPECT_TRUE(search->Propose(2, &failure).empty());
  EXPECT_TRUE(search->Exhausted());
}

TEST(SearchPipelineTest, CandidatesRecordTheirAcquisitionAndItsSettings) {
  Fixture f = ReductionSpace();
  PipelineSearch::Options options = SearchOptions("model-guided", {{"sample_size", 16}}, 0);
  options.acquisition = "lcb";
  options.settings["kappa"] = 2;
  std::unique_ptr<PipelineSearch> search = CreateSearch(*f, options);
  ASSERT_NE(search, nullptr);
  SyntheticModel::Config config = ConfigFor(*f);
  config.spread = true;
  ASSERT_TRUE(search->SetModel(std::make_unique<SyntheticModel>(config)).ok());
  std::string failure;
  const std::vector<Candidate> candidates = search->Propose(4, &failure);
  EXPECT_EQ(failure, "");
  ASSERT_EQ(candidates.size(), 4u);
  for (const Candidate& c : candidates) {
    EXPECT_EQ(c.origin(), "model-guided");
    EXPECT_EQ(c.acquisition(), "lcb");
    EXPECT_DOUBLE_EQ(c.acquisition_score(),
                     2 * c.prediction().stddev_seconds() - c.prediction().mean_seconds());
  }
  EXPECT_GE(candidates[0].acquisition_score(), candidates[3].acquisition_score());
}

TEST(SearchPipelineTest, EpsilonIsTheShareOfRandomCandidates) {
  Fixture f = ReductionSpace();
  for (double epsilon : {0.0, 0.5, 1.0}) {
    std::unique_ptr<PipelineSearch> search =
        CreateSearch(*f, SearchOptions("model-guided", {{"sample_size", 16}}, epsilon));
    ASSERT_NE(search, nullptr);
    SyntheticModel* model = nullptr;
    ASSERT_TRUE(search->SetModel(NewModel(*f, "v1", &model)).ok());
    std::vector<Candidate> all;
    std::string failure;
    for (int batch = 0; batch < 5; ++batch) {
      for (Candidate& c : search->Propose(8, &failure)) all.push_back(std::move(c));
      EXPECT_EQ(failure, "");
    }
    ASSERT_EQ(all.size(), 40u);
    const int random = CountOrigin(all, "random");
    if (epsilon == 0) {
      EXPECT_EQ(random, 0);
    } else if (epsilon == 1) {
      EXPECT_EQ(random, 40);
    } else {
      EXPECT_GT(random, 5);
      EXPECT_LT(random, 35);
    }
    for (const Candidate& c : all) {
      if (c.origin() == "random") {
        ExpectRandomCandidate(*f, c);
      } else {
        ExpectGuidedCandidate(*f, *model, "model-guided", c);
      }
    }
  }
}

TEST(SearchPipelineTest, AFailingModelFallsBackToRandomUntilTheNextModel) {
  Fixture f = ReductionSpace();
  std::unique_ptr<PipelineSearch> search =
      CreateSearch(*f, SearchOptions("greedy", {{"noise", 0.5}}, 0));
  ASSERT_NE(search, nullptr);
  SyntheticModel* failing = nullptr;
  ASSERT_TRUE(search->SetModel(NewModel(*f, "flaky-3", &failing, {0})).ok());
  std::string failure;
  std::vector<Candidate> candidates = search->Propose(4, &failure);
  ASSERT_EQ(candidates.size(), 4u);
  for (const Candidate& c : candidates) ExpectRandomCandidate(*f, c);
  EXPECT_NE(failure.find("greedy"), std::string::npos) << failure;
  EXPECT_NE(failure.find("flaky-3"), std::string::npos) << failure;
  EXPECT_NE(failure.find("synthetic model failed"), std::string::npos) << failure;

  // The model would answer now, but the search stays random until SetModel.
  const int calls = failing->calls();
  candidates = search->Propose(4, &failure);
  EXPECT_EQ(failure, "");
  ASSERT_EQ(candidates.size(), 4u);
  for (const Candidate& c : candidates) ExpectRandomCandidate(*f, c);
  EXPECT_EQ(failing->calls(), calls);

  SyntheticModel* good = nullptr;
  ASSERT_TRUE(search->SetModel(NewModel(*f, "good-4", &good)).ok());
  candidates = search->Propose(4, &failure);
  EXPECT_EQ(failure, "");
  ASSERT_EQ(candidates.size(), 4u);
  for (const Candidate& c : candidates) ExpectGuidedCandidate(*f, *good, "greedy", c);
}

TEST(SearchPipelineTest, ARefusedModelMeansRandomCandidates) {
  Fixture f = ReductionSpace();
  std::unique_ptr<PipelineSearch> search = CreateSearch(*f, SearchOptions("beam", {}, 0));
  ASSERT_NE(search, nullptr);
  SyntheticModel::Config config = ConfigFor(*f);
  config.partial = PartialMeaning::kCompleteOnly;
  config.version = "whole-9";
  const Status refused = search->SetModel(std::make_unique<SyntheticModel>(config));
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.message().find("beam"), std::string::npos) << refused.message();
  std::string failure;
  const std::vector<Candidate> candidates = search->Propose(3, &failure);
  EXPECT_EQ(failure, "");
  ASSERT_EQ(candidates.size(), 3u);
  for (const Candidate& c : candidates) ExpectRandomCandidate(*f, c);
}

TEST(SearchPipelineTest, NeverProposesAKnownOrMeasuredSchedule) {
  Fixture f = ReductionSpace();
  // Random: a second search with the same seed would propose the same schedules.
  std::unique_ptr<PipelineSearch> first = CreateSearch(*f, SearchOptions("greedy", {}, 0, 5));
  std::string failure;
  std::vector<Candidate> taken = first->Propose(10, &failure);
  ASSERT_EQ(taken.size(), 10u);
  std::unique_ptr<PipelineSearch> second = CreateSearch(*f, SearchOptions("greedy", {}, 0, 5));
  std::set<std::string> hashes;
  for (size_t i = 0; i < taken.size(); ++i) {
    hashes.insert(taken[i].schedule_hash());
    if (i < 5) {
      second->MarkKnown(taken[i].schedule_hash());
    } else {
      second->Notify(Measured(*f, taken[i].schedule(), 1e-3 * (1 + i)));
    }
  }
  std::vector<Candidate> all;
  for (int batch = 0; batch < 3; ++batch) {
    for (Candidate& c : second->Propose(10, &failure)) all.push_back(std::move(c));
  }
  ASSERT_EQ(all.size(), 30u);
  std::set<std::string> seen;
  for (const Candidate& c : all) {
    EXPECT_EQ(hashes.count(c.schedule_hash()), 0u);
    EXPECT_TRUE(seen.insert(c.schedule_hash()).second);
  }

  // Guided: the strategy skips them too.
  std::unique_ptr<PipelineSearch> guided =
      CreateSearch(*f, SearchOptions("greedy", {{"noise", 0.5}}, 0, 6));
  SyntheticModel* model = nullptr;
  ASSERT_TRUE(guided->SetModel(NewModel(*f, "v1", &model)).ok());
  const std::vector<Candidate> guided_taken = guided->Propose(6, &failure);
  ASSERT_EQ(guided_taken.size(), 6u);
  std::unique_ptr<PipelineSearch> again =
      CreateSearch(*f, SearchOptions("greedy", {{"noise", 0.5}}, 0, 6));
  hashes.clear();
  for (size_t i = 0; i < guided_taken.size(); ++i) {
    hashes.insert(guided_taken[i].schedule_hash());
    if (i < 3) again->MarkKnown(guided_taken[i].schedule_hash());
  }
  ASSERT_TRUE(again->SetModel(NewModel(*f, "v1", &model)).ok());
  for (size_t i = 3; i < guided_taken.size(); ++i) {
    again->Notify(Measured(*f, guided_taken[i].schedule(), 1e-3));
  }
  const std::vector<Candidate> guided_all = again->Propose(6, &failure);
  ASSERT_EQ(guided_all.size(), 6u);
  EXPECT_GT(CountOrigin(guided_all, "greedy"), 0);
  for (const Candidate& c : guided_all) EXPECT_EQ(hashes.count(c.schedule_hash()), 0u);
}

TEST(SearchPipelineTest, SetModelReplaysEarlierResults) {
  Fixture f = VggSpace();
  std::unique_ptr<PipelineSearch> search =
      CreateSearch(*f, SearchOptions("anneal", {{"steps", 1}, {"neighbors", 6}}, 0));
  ASSERT_NE(search, nullptr);
  const ScheduleSpec best = f->RandomSchedule(31337);
  search->Notify(Measured(*f, f->RandomSchedule(1), 2e-3));
  search->Notify(Measured(*f, best, 1e-3));
  SearchResult failed = Measured(*f, f->RandomSchedule(2), 0);
  failed.ok = false;
  search->Notify(failed);
  SyntheticModel* model = nullptr;
  ASSERT_TRUE(search->SetModel(NewModel(*f, "v1", &model)).ok());
  std::string failure;
  const std::vector<Candidate> candidates = search->Propose(4, &failure);
  EXPECT_EQ(failure, "");
  ASSERT_FALSE(candidates.empty());
  for (const Candidate& c : candidates) {
    ExpectGuidedCandidate(*f, *model, "anneal", c);
    // The walk started from the best measured schedule.
    EXPECT_TRUE(OneMoveFrom(best, c.schedule()));
  }
}

TEST(SearchPipelineTest, ExhaustsATinySpace) {
  Fixture f = SingleStageSpace();
  const size_t total = AllSchedules(*f).size();
  for (const std::string strategy : {"greedy", "model-guided"}) {
    std::unique_ptr<PipelineSearch> search =
        CreateSearch(*f, SearchOptions(strategy, SmallSettings(strategy), 0.3));
    ASSERT_NE(search, nullptr);
    SyntheticModel* model = nullptr;
    ASSERT_TRUE(search->SetModel(NewModel(*f, "v1", &model)).ok());
    std::vector<Candidate> all;
    std::string failure;
    for (int batch = 0; batch < 10 && !search->Exhausted(); ++batch) {
      for (Candidate& c : search->Propose(4, &failure)) all.push_back(std::move(c));
      EXPECT_EQ(failure, "");
    }
    EXPECT_TRUE(search->Exhausted()) << strategy;
    EXPECT_EQ(all.size(), total) << strategy;
    std::set<std::string> hashes;
    for (const Candidate& c : all) EXPECT_TRUE(hashes.insert(c.schedule_hash()).second);
    EXPECT_TRUE(search->Propose(4, &failure).empty());
  }
}

}  // namespace
}  // namespace schedfarm
