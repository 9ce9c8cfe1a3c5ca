// Tests of the acquisition functions on hand-made predictions: each rule's score,
// Select's default order and the batch rules (thompson, random), the settings and the
// registry's checks of who may use them.
#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "search/registry.h"

namespace schedfarm {
namespace {

std::unique_ptr<AcquisitionFunction> Make(const std::string& name,
                                          const StrategySettings& settings = {}) {
  StatusOr<std::unique_ptr<AcquisitionFunction>> made = MakeAcquisition(name, settings);
  EXPECT_TRUE(made.ok()) << made.status().ToString();
  return made.ok() ? std::move(made).value() : nullptr;
}

std::vector<size_t> Select(const AcquisitionFunction& acquisition,
                           const std::vector<RuntimePrediction>& predictions, size_t n,
                           uint64_t seed, double incumbent_seconds = 0) {
  SpaceRng rng(seed);
  return acquisition.Select(predictions, incumbent_seconds, n, rng);
}

// The keys strategy.settings holds besides the strategies' and acquisitions' own
// (campaign/campaign_yaml.cc).
const std::set<std::string> kCommonKeys = {
    "seed",  "epsilon",     "batch",     "remeasure", "retrain_every", "retrain_growth",
    "model", "acquisition", "model_from"};

TEST(SearchAcquisitionTest, TheRegistryHasEveryRuleWithItsSettings) {
  for (const char* name :
       {"exploit", "uncertainty", "lcb", "ei", "thompson", "random", "diversity"}) {
    const AcquisitionInfo* info = FindAcquisition(name);
    ASSERT_NE(info, nullptr) << name;
    EXPECT_FALSE(info->summary.empty()) << name;
    std::unique_ptr<AcquisitionFunction> made = Make(name);
    ASSERT_NE(made, nullptr) << name;
    EXPECT_EQ(made->name(), name);
    EXPECT_EQ(made->needs_spread(), info->needs_spread) << name;
  }
  EXPECT_FALSE(FindAcquisition("exploit")->needs_spread);
  EXPECT_FALSE(FindAcquisition("random")->needs_spread);
  for (const char* name : {"uncertainty", "lcb", "ei", "thompson"}) {
    EXPECT_TRUE(FindAcquisition(name)->needs_spread) << name;
  }
  // A campaign writes an acquisition's settings beside the strategy's: no name is taken
  // twice.
  for (const AcquisitionInfo& acquisition : Acquisitions()) {
    for (const SettingSpec& spec : acquisition.settings) {
      EXPECT_EQ(kCommonKeys.count(spec.name), 0u) << acquisition.name << "." << spec.name;
      for (const StrategyInfo& strategy : SearchStrategies()) {
        for (const SettingSpec& own : strategy.settings) {
          EXPECT_NE(own.name, spec.name) << acquisition.name << " and " << strategy.name;
        }
      }
      EXPECT_LE(spec.min, spec.default_value) << spec.name;
      EXPECT_LE(spec.default_value, spec.max) << spec.name;
    }
  }
  const std::vector<SettingSpec>& lcb = FindAcquisition("lcb")->settings;
  ASSERT_EQ(lcb.size(), 1u);
  EXPECT_EQ(lcb[0].name, "kappa");
  EXPECT_EQ(lcb[0].default_value, 1);
  EXPECT_EQ(lcb[0].min, 0);
  EXPECT_EQ(lcb[0].max, 10);
}

TEST(SearchAcquisitionTest, ExploitAndUncertaintyScoreAsDocumented) {
  std::unique_ptr<AcquisitionFunction> exploit = Make("exploit");
  std::unique_ptr<AcquisitionFunction> uncertainty = Make("uncertainty");
  ASSERT_TRUE(exploit && uncertainty);
  const RuntimePrediction fast(1e-3, 1e-3);
  const RuntimePrediction slow(2e-3, 1e-3);
  EXPECT_GT(exploit->Score(fast, 0), exploit->Score(slow, 0));
  EXPECT_DOUBLE_EQ(exploit->Score(slow, 5), -2e-3);
  // Relative spread: the fast one is twice as uncertain.
  EXPECT_GT(uncertainty->Score(fast, 0), uncertainty->Score(slow, 0));
  EXPECT_DOUBLE_EQ(uncertainty->Score(slow, 0), 0.5);
}

TEST(SearchAcquisitionTest, LcbIsTheNegatedLowerBoundAndKappaChangesTheOrder) {
  const RuntimePrediction sure(1.0e-3, 0.1e-3);
  const RuntimePrediction unsure(1.2e-3, 0.5e-3);
  std::unique_ptr<AcquisitionFunction> lcb0 = Make("lcb", {{"kappa", 0}});
  std::unique_ptr<AcquisitionFunction> lcb1 = Make("lcb");  // kappa 1 by default
  std::unique_ptr<AcquisitionFunction> lcb3 = Make("lcb", {{"kappa", 3}, {"sample_size", 8}});
  ASSERT_TRUE(lcb0 && lcb1 && lcb3);
  EXPECT_DOUBLE_EQ(lcb0->Score(unsure, 0), -1.2e-3);
  EXPECT_DOUBLE_EQ(lcb1->Score(unsure, 0), -(1.2e-3 - 0.5e-3));
  EXPECT_DOUBLE_EQ(lcb3->Score(sure, 7), -(1.0e-3 - 3 * 0.1e-3));
  // kappa 0 is exploit: the lower mean first; with kappa 1 the lower bound of the
  // uncertain one (0.7 ms) beats the sure one's (0.9 ms).
  EXPECT_GT(lcb0->Score(sure, 0), lcb0->Score(unsure, 0));
  EXPECT_LT(lcb1->Score(sure, 0), lcb1->Score(unsure, 0));
  EXPECT_EQ(Select(*lcb0, {unsure, sure}, 2, 1), (std::vector<size_t>{1, 0}));
  EXPECT_EQ(Select(*lcb1, {unsure, sure}, 2, 1), (std::vector<size_t>{0, 1}));
}

// The expected improvement in log runtime of a log-normal with the prediction's mean
// and stddev, by the formula of docs/SEARCH.md.
double LogNormalEi(double mean, double stddev, double incumbent) {
  const double variance = std::log(1 + (stddev / mean) * (stddev / mean));
  const double sigma = std::sqrt(variance);
  const double gain = std::log(incumbent) - (std::log(mean) - variance / 2);
  const double z = gain / sigma;
  return gain * 0.5 * std::erfc(-z / std::sqrt(2.0)) +
         sigma * std::exp(-z * z / 2) / std::sqrt(8 * std::atan(1.0));
}

TEST(SearchAcquisitionTest, EiIsTheExpectedLogImprovementOverTheIncumbent) {
  std::unique_ptr<AcquisitionFunction> ei = Make("ei");
  ASSERT_NE(ei, nullptr);
  const double incumbent = 1e-3;
  // At equal mean above the incumbent, the wider prediction is more likely to beat it.
  const RuntimePrediction narrow(2e-3, 0.5e-3);
  const RuntimePrediction wide(2e-3, 2e-3);
  EXPECT_GT(ei->Score(wide, incumbent), ei->Score(narrow, incumbent));
  EXPECT_GT(ei->Score(narrow, incumbent), 0);
  EXPECT_NEAR(ei->Score(wide, incumbent), LogNormalEi(2e-3, 2e-3, incumbent), 1e-12);
  EXPECT_NEAR(ei->Score(narrow, incumbent), LogNormalEi(2e-3, 0.5e-3, incumbent), 1e-12);
  // At equal spread, the faster mean improves more.
  EXPECT_GT(ei->Score(RuntimePrediction(0.5e-3, 0.1e-3), incumbent),
            ei->Score(RuntimePrediction(0.8e-3, 0.16e-3), incumbent));
  // No spread: the sure improvement, ln(inc / mean), or nothing.
  EXPECT_NEAR(ei->Score(RuntimePrediction(0.5e-3, 0), incumbent), std::log(2.0), 1e-12);
  EXPECT_EQ(ei->Score(RuntimePrediction(2e-3, 0), incumbent), 0);
  // In log runtime, the score of a runtime scaled with its incumbent does not change.
  EXPECT_NEAR(ei->Score(RuntimePrediction(2.0, 2.0), 1.0), ei->Score(wide, incumbent), 1e-12);
  // Nothing measured yet: the fastest predicted first.
  EXPECT_DOUBLE_EQ(ei->Score(wide, 0), -2e-3);
  EXPECT_EQ(Select(*ei, {narrow, RuntimePrediction(1e-3, 0.1e-3), wide}, 3, 1),
            (std::vector<size_t>{1, 0, 2}));
}

TEST(SearchAcquisitionTest, DefaultSelectTakesTheHighestScoresTiesInIndexOrder) {
  std::unique_ptr<AcquisitionFunction> exploit = Make("exploit");
  ASSERT_NE(exploit, nullptr);
  std::vector<RuntimePrediction> predictions;
  for (double mean : {3e-3, 1e-3, 2e-3, 1e-3, 5e-3}) predictions.emplace_back(mean, 0);
  EXPECT_EQ(Select(*exploit, predictions, 3, 1), (std::vector<size_t>{1, 3, 2}));
  EXPECT_EQ(Select(*exploit, predictions, 3, 99), Select(*exploit, predictions, 3, 1))
      << "no randomness";
  EXPECT_EQ(Select(*exploit, predictions, 10, 1), (std::vector<size_t>{1, 3, 2, 0, 4}));
  EXPECT_TRUE(Select(*exploit, predictions, 0, 1).empty());
  EXPECT_TRUE(Select(*exploit, {}, 4, 1).empty());
}

// Four schedules, four members: member m predicts schedule m fastest.
std::vector<RuntimePrediction> EachMemberItsOwnFavourite() {
  std::vector<RuntimePrediction> predictions;
  for (int i = 0; i < 4; ++i) {
    std::vector<double> members;
    for (int m = 0; m < 4; ++m) members.push_back(m == i ? 1e-3 : 2e-3 + 1e-4 * i);
    predictions.push_back(EnsemblePrediction(members));
  }
  return predictions;
}

TEST(SearchAcquisitionTest, ThompsonFollowsADrawnMemberPerPick) {
  std::unique_ptr<AcquisitionFunction> thompson = Make("thompson");
  ASSERT_NE(thompson, nullptr);
  const std::vector<RuntimePrediction> predictions = EachMemberItsOwnFavourite();
  // Each pick is the favourite of a uniform member: each schedule first a quarter of
  // the time (400 draws: 100 expected, stddev 8.7).
  std::map<size_t, int> first;
  for (uint64_t seed = 0; seed < 400; ++seed) ++first[Select(*thompson, predictions, 1, seed)[0]];
  ASSERT_EQ(first.size(), 4u);
  for (const auto& [index, count] : first) {
    EXPECT_GT(count, 60) << index;
    EXPECT_LT(count, 140) << index;
  }
  // One seed, one batch; other seeds, other batches; always distinct picks.
  std::set<std::vector<size_t>> batches;
  for (uint64_t seed = 0; seed < 20; ++seed) {
    const std::vector<size_t> batch = Select(*thompson, predictions, 4, seed);
    EXPECT_EQ(batch, Select(*thompson, predictions, 4, seed)) << seed;
    EXPECT_EQ(std::set<size_t>(batch.begin(), batch.end()).size(), 4u) << seed;
    batches.insert(batch);
  }
  EXPECT_GT(batches.size(), 5u);
  // The score recorded is the negated mean.
  EXPECT_DOUBLE_EQ(thompson->Score(predictions[2], 1), -predictions[2].mean_seconds);
}

TEST(SearchAcquisitionTest, ThompsonWithoutMembersIsTheFastestMeanFirst) {
  std::unique_ptr<AcquisitionFunction> thompson = Make("thompson");
  ASSERT_NE(thompson, nullptr);
  std::vector<RuntimePrediction> single;
  for (double mean : {3e-3, 1e-3, 2e-3}) single.emplace_back(mean, 0);
  for (uint64_t seed : {1, 2, 3}) {
    EXPECT_EQ(Select(*thompson, single, 3, seed), (std::vector<size_t>{1, 2, 0}));
  }
  // Members that agree: the same.
  std::vector<RuntimePrediction> agreeing;
  for (double s : {3e-3, 1e-3, 2e-3}) agreeing.push_back(EnsemblePrediction({s, s, s}));
  EXPECT_EQ(Select(*thompson, agreeing, 2, 7), (std::vector<size_t>{1, 2}));
}

TEST(SearchAcquisitionTest, RandomPicksUniformlyAndReadsNoPrediction) {
  std::unique_ptr<AcquisitionFunction> random = Make("random");
  ASSERT_NE(random, nullptr);
  EXPECT_FALSE(random->needs_spread());
  // Predictions as no model made them: their values play no part.
  const std::vector<RuntimePrediction> blank(10);
  EXPECT_EQ(random->Score(blank[0], 0), 0);
  EXPECT_EQ(random->Score(RuntimePrediction(1e-3, 5e-4), 2e-3), 0);
  std::map<size_t, int> picked;
  std::set<std::vector<size_t>> batches;
  for (uint64_t seed = 0; seed < 2000; ++seed) {
    const std::vector<size_t> batch = Select(*random, blank, 3, seed);
    ASSERT_EQ(batch.size(), 3u);
    EXPECT_EQ(std::set<size_t>(batch.begin(), batch.end()).size(), 3u) << seed;
    EXPECT_EQ(batch, Select(*random, blank, 3, seed)) << seed;
    for (size_t i : batch) ++picked[i];
    batches.insert(batch);
  }
  // 6000 picks of 10: 600 each expected (stddev about 23).
  ASSERT_EQ(picked.size(), 10u);
  for (const auto& [index, count] : picked) {
    EXPECT_GT(count, 500) << index;
    EXPECT_LT(count, 700) << index;
  }
  EXPECT_GT(batches.size(), 500u);
  EXPECT_EQ(Select(*random, blank, 20, 1).size(), 10u);
}

// A prediction with features, as the learner's cost model gives them.
RuntimePrediction WithFeatures(double mean, std::vector<float> features) {
  RuntimePrediction p(mean, 0);
  p.features = std::move(features);
  return p;
}

TEST(SearchAcquisitionTest, DiversityKeepsABatchsPicksApartInFeatureSpace) {
  std::unique_ptr<AcquisitionFunction> diversity = Make("diversity", {{"min_distance", 0.5}});
  ASSERT_NE(diversity, nullptr);
  EXPECT_FALSE(diversity->needs_spread());
  EXPECT_EQ(diversity->Score(RuntimePrediction(2e-3, 1e-3), 0), -2e-3) << "exploit's score";
  EXPECT_TRUE(FindAcquisition("diversity")->shares_by_error);
  EXPECT_FALSE(FindAcquisition("exploit")->shares_by_error);
  // Two clusters in the first feature (the second never varies): 0-2 near 0, 3-5 near
  // 10. Fastest first is 0, 1, 3, 2, 4, 5; clusters are about 2 standard deviations
  // apart, members of one a few hundredths.
  const std::vector<RuntimePrediction> predictions = {
      WithFeatures(1.0, {0.0f, 7.0f}),  WithFeatures(1.1, {0.1f, 7.0f}),
      WithFeatures(1.3, {0.2f, 7.0f}),  WithFeatures(1.2, {10.0f, 7.0f}),
      WithFeatures(1.4, {10.1f, 7.0f}), WithFeatures(1.5, {10.2f, 7.0f})};
  EXPECT_EQ(Select(*diversity, predictions, 2, 1), (std::vector<size_t>{0, 3}))
      << "the second fastest is too close to the first";
  // More picks than clusters: the best predicted of the rest fill the batch.
  EXPECT_EQ(Select(*diversity, predictions, 4, 1), (std::vector<size_t>{0, 3, 1, 2}));
  EXPECT_EQ(Select(*diversity, predictions, 10, 1).size(), 6u);
  // Distance 0 is exploit; without features nothing is too close.
  std::unique_ptr<AcquisitionFunction> none = Make("diversity", {{"min_distance", 0}});
  EXPECT_EQ(Select(*none, predictions, 2, 1), (std::vector<size_t>{0, 1}));
  std::vector<RuntimePrediction> blank;
  for (const RuntimePrediction& p : predictions) blank.emplace_back(p.mean_seconds, 0);
  EXPECT_EQ(Select(*diversity, blank, 2, 1), (std::vector<size_t>{0, 1}));
  EXPECT_FALSE(MakeAcquisition("diversity", {{"min_distance", -1}}).ok());
}

TEST(SearchAcquisitionTest, SettingsAreCheckedAndResolved) {
  // Out of range: an error naming the acquisition and the setting.
  StatusOr<std::unique_ptr<AcquisitionFunction>> bad = MakeAcquisition("lcb", {{"kappa", 11}});
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("acquisition 'lcb'"), std::string::npos)
      << bad.status().message();
  EXPECT_NE(bad.status().message().find("kappa"), std::string::npos) << bad.status().message();
  EXPECT_FALSE(MakeAcquisition("lcb", {{"kappa", -1}}).ok());
  // The strategy's settings beside it are not the acquisition's business.
  EXPECT_TRUE(MakeAcquisition("lcb", {{"kappa", 10}, {"sample_size", 0}}).ok());

  // ResolvedSettings: the strategy's and its acquisition's, defaults filled in.
  Strategy config;
  config.set_name("model-guided");
  config.set_acquisition("lcb");
  StrategySettings settings = ResolvedSettings(config);
  EXPECT_EQ(settings.size(), 2u);
  EXPECT_EQ(settings.at("kappa"), 1);
  EXPECT_EQ(settings.at("sample_size"), 256);
  StrategySetting* kappa = config.add_settings();
  kappa->set_name("kappa");
  kappa->set_value(2.5);
  EXPECT_EQ(ResolvedSettings(config).at("kappa"), 2.5);
  config.set_acquisition("ei");
  settings = ResolvedSettings(config);
  EXPECT_EQ(settings.count("kappa"), 0u) << "not ei's";
}

TEST(SearchAcquisitionTest, BatchRulesNeedAStrategyThatSelects) {
  for (const AcquisitionInfo& acquisition : Acquisitions()) {
    for (const StrategyInfo& strategy : SearchStrategies()) {
      if (!strategy.uses_model) continue;
      const Status status = CheckStrategyAcquisition(strategy, acquisition);
      EXPECT_EQ(status.ok(), !acquisition.select_only || strategy.selects)
          << strategy.name << " " << acquisition.name;
    }
  }
  EXPECT_TRUE(FindAcquisition("thompson")->select_only);
  EXPECT_TRUE(FindAcquisition("random")->select_only);
  EXPECT_TRUE(FindAcquisition("diversity")->select_only);
  EXPECT_TRUE(FindStrategy("model-guided")->selects);
  EXPECT_TRUE(FindStrategy("uncertainty")->selects);
  const Status refused =
      CheckStrategyAcquisition(*FindStrategy("greedy"), *FindAcquisition("thompson"));
  ASSERT_FALSE(refused.ok());
  for (const char* part : {"'thompson'", "'greedy'", "model-guided", "uncertainty"}) {
    EXPECT_NE(refused.message().find(part), std::string::npos) << refused.message();
  }
}

// The BiLSTM value function (one member) has no spread and is refused for every rule
// that reads one; the GBT and the roofline have one (their bootstrap ensembles).
TEST(SearchAcquisitionTest, SpreadRulesRefuseTheBilstm) {
  const StrategyInfo& guided = *FindStrategy("model-guided");
  const ModelKindInfo& bilstm = *FindModelKind("bilstm");
  EXPECT_FALSE(bilstm.has_spread);
  for (const char* kind : {"gbt", "roofline", "gcn", "sage"}) {
    EXPECT_TRUE(FindModelKind(kind)->has_spread) << kind;
  }
  for (const char* name : {"uncertainty", "lcb", "ei", "thompson"}) {
    const Status refused = CheckStrategyModel(guided, bilstm, *FindAcquisition(name));
    ASSERT_FALSE(refused.ok()) << name;
    EXPECT_NE(refused.message().find("model kind 'bilstm' has none"), std::string::npos)
        << refused.message();
    EXPECT_NE(refused.message().find("roofline"), std::string::npos) << refused.message();
    EXPECT_TRUE(CheckStrategyModel(guided, *FindModelKind("roofline"), *FindAcquisition(name)).ok())
        << name;
  }
  for (const char* name : {"exploit", "random"}) {
    EXPECT_TRUE(CheckStrategyModel(guided, bilstm, *FindAcquisition(name)).ok()) << name;
  }
}

}  // namespace
}  // namespace schedfarm
