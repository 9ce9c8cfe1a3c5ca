#include "campaign/campaign_yaml.h"

#include <google/protobuf/util/message_differencer.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <set>
#include <map>
#include <string>
#include <vector>

#include "common/files.h"
#include "tests/support/scratch_dir.h"
#include "tests/support/synthetic_dataset.h"

namespace schedfarm {
namespace {

namespace fs = std::filesystem;

const std::string kExamples = std::string(SCHEDFARM_SOURCE_DIR) + "/configs/campaigns";
// Snippets are parsed as if they were a file beside the examples.
const std::string kFile = kExamples + "/snippet.yaml";

// The smallest valid campaign: four lines, each error test changes one of them.
const std::string kName = "name: t\n";
const std::string kPipelines = "pipelines:\n  - zoo: {block: vgg_block}\n";
const std::string kBudget = "budget: {benchmarks: 10}\n";

StatusOr<CampaignConfig> Parse(const std::string& text) { return ParseCampaignYaml(text, kFile); }

// The snippet is rejected at exactly line:column with a message containing each of
// `parts`.
void ExpectError(const std::string& text, int line, int column,
                 const std::vector<std::string>& parts) {
  StatusOr<CampaignConfig> config = Parse(text);
  ASSERT_FALSE(config.ok()) << text;
  const std::string& message = config.status().message();
  const std::string where =
      kFile + ":" + std::to_string(line) + ":" + std::to_string(column) + ": ";
  EXPECT_EQ(message.rfind(where, 0), 0u) << "expected at " << where << "\ngot: " << message;
  for (const std::string& part : parts) {
    EXPECT_NE(message.find(part), std::string::npos) << "'" << part << "' not in: " << message;
  }
}

TEST(CampaignExamplesTest, EveryExampleValidates) {
  int examples = 0;
  for (const fs::directory_entry& entry : fs::directory_iterator(kExamples)) {
    if (entry.path().extension() != ".yaml") continue;
    ++examples;
    StatusOr<CampaignConfig> config = LoadCampaignFile(entry.path().string());
    ASSERT_TRUE(config.ok()) << config.status().message();
    EXPECT_TRUE(config->pipelines_size() > 0 || config->has_replay() || config->has_network())
        << entry.path();
    EXPECT_GT(config->budget().benchmarks(), 0) << entry.path();
  }
  EXPECT_GE(examples, 5);
}

TEST(CampaignExamplesTest, QuickstartIsSmall) {
  StatusOr<CampaignConfig> config = LoadCampaignFile(kExamples + "/quickstart.yaml");
  ASSERT_TRUE(config.ok()) << config.status().message();
  EXPECT_EQ(config->name(), "quickstart");
  EXPECT_LE(config->budget().benchmarks(), 50);
  // Under the pretrained GBT, beside quickstart_random.yaml: the same pipelines and
  // budget under random schedules.
  EXPECT_EQ(config->strategy().name(), "model-guided");
  EXPECT_EQ(config->strategy().model_from(), "pretrained");
  StatusOr<CampaignConfig> random = LoadCampaignFile(kExamples + "/quickstart_random.yaml");
  ASSERT_TRUE(random.ok()) << random.status().message();
  EXPECT_EQ(random->strategy().name(), "random");
  EXPECT_EQ(random->budget().benchmarks(), config->budget().benchmarks());
  ASSERT_EQ(random->pipelines_size(), config->pipelines_size());
  for (int i = 0; i < config->pipelines_size(); ++i) {
    EXPECT_EQ(random->pipelines(i).DebugString(), config->pipelines(i).DebugString());
  }
  // The fast baselines only: Adams2019 at its real beam takes minutes on some blocks.
  EXPECT_EQ(config->baselines_size(), 2);
  for (const std::string& baseline : config->baselines()) EXPECT_NE(baseline, "adams2019");
  for (const PipelineSource& p : config->pipelines()) {
    ASSERT_TRUE(p.has_zoo());
    EXPECT_LT(p.zoo().spatial_scale(), 1.0);
  }
}

// A file past the size limit is refused before it is parsed, with its size.
TEST(CampaignYamlTest, AFileLargerThanTheLimitIsRefusedUnparsed) {
  const std::string comment = "# " + std::string(kMaxCampaignFileBytes, 'x') + "\n";
  StatusOr<CampaignConfig> config = Parse(kName + kPipelines + kBudget + comment);
  ASSERT_FALSE(config.ok());
  EXPECT_EQ(config.status().message(),
            kFile + ": " + std::to_string(kName.size() + kPipelines.size() + kBudget.size() +
                                          comment.size()) +
                " bytes; a campaign file is at most 1 MiB (its pipelines are files of their "
                "own)");
  EXPECT_TRUE(Parse(kName + kPipelines + kBudget + "# short\n").ok());
}

TEST(CampaignYamlTest, NetworkCampaigns) {
  StatusOr<CampaignConfig> config = Parse(
      kName + "network: {zoo: {block: resnet18_basic}}\n" + kBudget + "baselines: [li2018]\n");
  ASSERT_TRUE(config.ok()) << config.status().message();
  EXPECT_EQ(config->network().zoo().block(), "resnet18_basic");
  EXPECT_EQ(config->pipelines_size(), 0);
  // The learner spreads every strategy's rounds over the tasks, random included.
  EXPECT_EQ(config->strategy().name(), "random");
  EXPECT_TRUE(LearnerProposes(*config));
  EXPECT_GT(config->strategy().batch(), 0);

  ExpectError(kName + kPipelines + "network: {zoo: {block: vgg_block}}\n" + kBudget, 4, 10,
              {"one of pipelines, replay or network, not several"});
  ExpectError(kName + "network: {random: {seeds: [1, 2]}}\n" + kBudget, 2, 10,
              {"network must be one pipeline"});
  ExpectError(kName + "network: {zoo: {block: nope}}\n" + kBudget, 2, 24, {"nope"});
  ExpectError(kName + "network: {zoo: {block: vgg_block}}\n" + kBudget +
                  "strategy: {name: value-iteration}\n",
              4, 11, {"value-iteration does not tune networks"});
  ExpectError(kName + kBudget, 1, 1, {"network: a whole network"});

  // The layout its tasks exchange tensors in: natural unless given.
  EXPECT_EQ(config->network_layout(), LAYOUT_NATURAL);
  StatusOr<CampaignConfig> channels_last = Parse(
      kName + "network: {zoo: {block: resnet18_basic}}\n" + kBudget + "layout: channels_last\n");
  ASSERT_TRUE(channels_last.ok()) << channels_last.status().message();
  EXPECT_EQ(channels_last->network_layout(), LAYOUT_CHANNELS_LAST);
  ExpectError(kName + "network: {zoo: {block: resnet18_basic}}\n" + kBudget + "layout: nhwc\n",
              4, 9, {"unknown layout 'nhwc'", "channels_last"});
  ExpectError(kName + kPipelines + kBudget + "layout: channels_last\n", 5, 9,
              {"only a network campaign has one"});

  // Fused tasks unless told not to; other campaigns have no fusion.
  EXPECT_EQ(config->fusion(), FUSION_BLOCKS);
  StatusOr<CampaignConfig> unfused =
      Parse(kName + "network: {zoo: {block: resnet18_basic}}\n" + kBudget + "fusion: none\n");
  ASSERT_TRUE(unfused.ok()) << unfused.status().message();
  EXPECT_EQ(unfused->fusion(), FUSION_NONE);
  EXPECT_FALSE(Parse(kName + kPipelines + kBudget)->has_fusion());
  ExpectError(kName + "network: {zoo: {block: resnet18_basic}}\n" + kBudget + "fusion: all\n", 4, 9,
              {"unknown fusion 'all'", "blocks"});
  ExpectError(kName + kPipelines + kBudget + "fusion: none\n", 5, 9,
              {"fusion: only a network campaign has one"});
}

TEST(CampaignYamlTest, LearnerStrategiesHaveDefaultsAndCheckedSettings) {
  StatusOr<CampaignConfig> config =
      Parse(kName + kPipelines + kBudget + "strategy: {name: model-guided}\n");
  ASSERT_TRUE(config.ok()) << config.status().message();
  EXPECT_EQ(config->strategy().name(), "model-guided");
  EXPECT_DOUBLE_EQ(config->strategy().epsilon(), 0.05);
  EXPECT_EQ(config->strategy().model(), "gcn");
  EXPECT_GT(config->strategy().batch(), 0);
  config =
      Parse(kName + kPipelines + kBudget +
            "strategy: {name: uncertainty, settings: {epsilon: 0.2, batch: 4, model: lann}}\n");
  ASSERT_TRUE(config.ok()) << config.status().message();
  EXPECT_EQ(config->strategy().name(), "uncertainty");
  EXPECT_DOUBLE_EQ(config->strategy().epsilon(), 0.2);
  EXPECT_EQ(config->strategy().batch(), 4);
  EXPECT_EQ(config->strategy().model(), "lann");
  config = Parse(kName + kPipelines + kBudget +
                 "strategy: {name: model-guided, settings: {model: gnn}}\n");
  ASSERT_FALSE(config.ok());
  EXPECT_NE(config.status().message().find("unknown model kind 'gnn'"), std::string::npos)
      << config.status().message();
  config = Parse(kName + kPipelines + kBudget +
                 "strategy: {name: random, settings: {retrain_every: 500}}\n");
  ASSERT_TRUE(config.ok()) << config.status().message();
  EXPECT_EQ(config->strategy().retrain_every(), 500) << "the learner's cadence on random data";
  config =
      Parse(kName + kPipelines + kBudget + "strategy: {name: random, settings: {epsilon: 0.1}}\n");
  ASSERT_FALSE(config.ok()) << "random has no epsilon";
  EXPECT_NE(config.status().message().find("epsilon"), std::string::npos);
  config = Parse(kName + kPipelines + kBudget +
                 "strategy: {name: model-guided, settings: {epsilon: 1.5}}\n");
  ASSERT_FALSE(config.ok());
  config = Parse(kName + kPipelines + kBudget +
                 "strategy: {name: model-guided, settings: {remeasure: 0.25}}\n");
  ASSERT_TRUE(config.ok()) << config.status().message();
  EXPECT_DOUBLE_EQ(config->strategy().remeasure(), 0.25);
  config = Parse(kName + kPipelines + kBudget +
                 "strategy: {name: model-guided, settings: {remeasure: 2}}\n");
  ASSERT_FALSE(config.ok());
  EXPECT_NE(config.status().message().find("strategy.settings.remeasure"), std::string::npos)
      << config.status().message();
  config = Parse(kName + kPipelines + kBudget +
                 "strategy: {name: random, settings: {remeasure: 0.1}}\n");
  ASSERT_FALSE(config.ok()) << "random proposed by the coordinator re-measures nothing";
}

// Every strategy of the registry parses with its own settings, every default filled in.
TEST(CampaignYamlTest, SearchStrategiesResolveTheirSettings) {
  StatusOr<CampaignConfig> config = Parse(
      kName + kPipelines + kBudget +
      "strategy: {name: greedy, settings: {options: 50, noise: 0, model: lann, seed: 7}}\n");
  ASSERT_TRUE(config.ok()) << config.status().message();
  const Strategy& greedy = config->strategy();
  EXPECT_EQ(greedy.name(), "greedy");
  EXPECT_EQ(greedy.acquisition(), "exploit");
  EXPECT_EQ(greedy.seed(), 7u);
  ASSERT_EQ(greedy.settings_size(), 2);
  EXPECT_EQ(greedy.settings(0).name(), "noise");
  EXPECT_EQ(greedy.settings(0).value(), 0);
  EXPECT_EQ(greedy.settings(1).name(), "options");
  EXPECT_EQ(greedy.settings(1).value(), 50);
  config = Parse(kName + kPipelines + kBudget + "strategy: {name: relaxed}\n");
  ASSERT_TRUE(config.ok()) << config.status().message();
  ASSERT_EQ(config->strategy().settings_size(), 3);
  EXPECT_EQ(config->strategy().settings(0).name(), "alpha");
  EXPECT_DOUBLE_EQ(config->strategy().settings(0).value(), 1.05);
  for (const char* name : {"beam", "anneal", "model-guided", "uncertainty"}) {
    config = Parse(kName + kPipelines + kBudget + "strategy: {name: " + name + "}\n");
    ASSERT_TRUE(config.ok()) << name << ": " << config.status().message();
    EXPECT_GT(config->strategy().settings_size(), 0) << name;
    EXPECT_EQ(config->strategy().model(), "gcn") << name;
  }
  // The canonical JSON keeps the settings.
  StatusOr<CampaignConfig> back = CampaignConfigFromJson(CampaignConfigToJson(*config));
  ASSERT_TRUE(back.ok()) << back.status().message();
  EXPECT_TRUE(google::protobuf::util::MessageDifferencer::Equals(*back, *config));
}

TEST(CampaignYamlErrorTest, SearchStrategySettings) {
  ExpectError(kName + kPipelines + kBudget + "strategy: {name: greedy, settings: {options: 0}}\n",
              5, 46, {"strategy.settings.options must be between 1 and 1000000, got 0"});
  ExpectError(kName + kPipelines + kBudget + "strategy: {name: relaxed, settings: {alpha: 0.9}}\n",
              5, 45, {"strategy.settings.alpha must be between 1 and 10, got 0.9"});
  ExpectError(kName + kPipelines + kBudget +
                  "strategy:\n  name: anneal\n  settings:\n    temperature: -1\n",
              8, 18, {"strategy.settings.temperature must be between", "got -1"});
  ExpectError(kName + kPipelines + kBudget + "strategy: {name: beam, settings: {alpha: 2}}\n", 5,
              35, {"unknown key 'alpha'", "strategy 'beam'", "width"});
  ExpectError(kName + kPipelines + kBudget + "strategy: {name: greedy, settings: {width: 2}}\n",
              5, 37, {"unknown key 'width'"});
  ExpectError(kName + kPipelines + kBudget +
                  "strategy: {name: beam, settings: {acquisition: ucb}}\n",
              5, 48, {"unknown acquisition 'ucb'", "did you mean 'lcb'?"});
  // An acquisition that reads the ensemble's spread needs a model kind that has one.
  ExpectError(kName + kPipelines + kBudget +
                  "strategy: {name: greedy, settings: {acquisition: uncertainty, "
                  "model: bilstm}}\n",
              5, 70, {"acquisition 'uncertainty' reads the ensemble's spread",
                      "model kind 'bilstm' has none", "gcn", "gbt", "roofline"});
  ExpectError(kName + kPipelines + kBudget + "strategy: {name: uncertainty, settings: {model: bilstm}}\n",
              5, 49, {"model kind 'bilstm' has none"});
}

// An acquisition's settings sit beside the strategy's: checked against the acquisition
// chosen, with the defaults of its own filled in.
TEST(CampaignYamlTest, AcquisitionsResolveTheirSettings) {
  StatusOr<CampaignConfig> config =
      Parse(kName + kPipelines + kBudget +
            "strategy: {name: model-guided, settings: {acquisition: lcb, kappa: 2.5}}\n");
  ASSERT_TRUE(config.ok()) << config.status().message();
  std::map<std::string, double> settings;
  for (const StrategySetting& s : config->strategy().settings()) settings[s.name()] = s.value();
  EXPECT_EQ(config->strategy().acquisition(), "lcb");
  EXPECT_EQ(settings, (std::map<std::string, double>{{"kappa", 2.5}, {"sample_size", 256}}));
  config = Parse(kName + kPipelines + kBudget +
                 "strategy: {name: uncertainty, settings: {acquisition: lcb, model: gbt}}\n");
  ASSERT_TRUE(config.ok()) << config.status().message();
  ASSERT_EQ(config->strategy().settings_size(), 2);
  EXPECT_EQ(config->strategy().settings(0).name(), "kappa");
  EXPECT_EQ(config->strategy().settings(0).value(), 1);
  for (const char* acquisition : {"ei", "thompson", "random"}) {
    config = Parse(kName + kPipelines + kBudget + "strategy: {name: model-guided, settings: " +
                   "{acquisition: " + acquisition + ", model: gbt}}\n");
    ASSERT_TRUE(config.ok()) << acquisition << ": " << config.status().message();
    EXPECT_EQ(config->strategy().acquisition(), acquisition);
    EXPECT_EQ(config->strategy().settings_size(), 1) << acquisition << ": sample_size alone";
  }
  // The canonical JSON keeps them.
  config = Parse(kName + kPipelines + kBudget +
                 "strategy: {name: model-guided, settings: {acquisition: lcb, kappa: 0}}\n");
  ASSERT_TRUE(config.ok()) << config.status().message();
  StatusOr<CampaignConfig> back = CampaignConfigFromJson(CampaignConfigToJson(*config));
  ASSERT_TRUE(back.ok()) << back.status().message();
  EXPECT_TRUE(google::protobuf::util::MessageDifferencer::Equals(*back, *config));
}

TEST(CampaignYamlErrorTest, AcquisitionSettings) {
  ExpectError(kName + kPipelines + kBudget +
                  "strategy: {name: model-guided, settings: {acquisition: lcb, kappa: 11}}\n",
              5, 68, {"strategy.settings.kappa must be between 0 and 10, got 11"});
  ExpectError(kName + kPipelines + kBudget +
                  "strategy: {name: model-guided, settings: {acquisition: ei, kappa: 2}}\n",
              5, 60, {"strategy.settings.kappa is a setting of acquisition 'lcb'",
                      "the acquisition is 'ei'"});
  ExpectError(kName + kPipelines + kBudget + "strategy: {name: greedy, settings: {kappa: 2}}\n",
              5, 37, {"kappa is a setting of acquisition 'lcb'", "the acquisition is 'exploit'"});
  ExpectError(kName + kPipelines + kBudget +
                  "strategy: {name: model-guided, settings: {acquisition: bayesian}}\n",
              5, 56, {"unknown acquisition 'bayesian'", "exploit", "uncertainty", "lcb", "ei",
                      "thompson", "random"});
  // A strategy without a model has no acquisition.
  ExpectError(kName + kPipelines + kBudget + "strategy: {name: random, settings: {kappa: 2}}\n",
              5, 37, {"unknown key 'kappa'"});
  // The batch rules need a strategy that picks batches.
  ExpectError(kName + kPipelines + kBudget +
                  "strategy: {name: greedy, settings: {acquisition: thompson}}\n",
              5, 50, {"acquisition 'thompson' picks a batch", "strategy 'greedy'",
                      "model-guided"});
  // The BiLSTM has no spread for ei to read.
  ExpectError(kName + kPipelines + kBudget +
                  "strategy: {name: model-guided, settings: {acquisition: ei, model: bilstm}}\n",
              5, 67, {"acquisition 'ei' reads the ensemble's spread",
                      "model kind 'bilstm' has none"});
}

// value-iteration: settings in range, enough pipelines for a round and the held-out
// ones, something to train V0 on, and the value alone as the ranking.
TEST(CampaignYamlErrorTest, ValueIterationSettings) {
  const std::string eight = "pipelines:\n  - random: {seeds: [1, 8]}\n";
  ExpectError(kName + eight + kBudget + "strategy: {name: value-iteration, settings: {beam: 0}}\n",
              5, 52, {"strategy.settings.beam must be between 1 and 1024, got 0"});
  ExpectError(kName + eight + kBudget + "strategy: {name: value-iteration, settings: {rounds: 0}}\n",
              5, 54, {"strategy.settings.rounds must be between 1 and 10, got 0"});
  ExpectError(kName + eight + kBudget +
                  "strategy: {name: value-iteration, settings: {read_at_defaults: 2}}\n",
              5, 64, {"strategy.settings.read_at_defaults must be between 0 and 1, got 2"});
  ExpectError(kName + kPipelines + kBudget +
                  "strategy: {name: value-iteration, settings: {pipelines_per_round: 3}}\n",
              5, 67, {"pipelines_per_round (3) plus held_out (2) is more than the campaign's 1"});
  ExpectError(kName + kPipelines + kBudget + "strategy: {name: value-iteration}\n", 5, 18,
              {"pipelines_per_round (4) plus held_out (2)"});
  ExpectError(kName + eight + kBudget + "strategy: {name: value-iteration, settings: {warmup: 0}}\n",
              5, 54, {"warmup 0 leaves nothing to train V0 on", "model_from"});
  ExpectError(kName + eight + kBudget +
                  "strategy: {name: value-iteration, settings: {model: gcn, acquisition: "
                  "uncertainty}}\n",
              5, 71, {"value-iteration ranks by the value alone"});
}

// model_from: pretrained is always accepted (whether a model fits the workers is the
// learner's to say); a named pretrained model must be in the pretrained models' folder,
// and the error lists those that are.
TEST(CampaignYamlTest, ANamedPretrainedModelMustExist) {
  ScratchDir models;
  ASSERT_TRUE(WriteFileAtomically(models.Sub("gbt-amd-epyc.sfpm"), "x").ok());
  setenv("SCHEDFARM_PRETRAINED_DIR", models.path().c_str(), 1);
  const std::string greedy = kName + kPipelines + kBudget + "strategy: {name: greedy, settings: ";
  EXPECT_TRUE(Parse(greedy + "{model: gbt, model_from: pretrained}}\n").ok());
  EXPECT_TRUE(Parse(greedy + "{model: gbt, model_from: 'pretrained:gbt-amd-epyc'}}\n").ok());
  ExpectError(greedy + "{model: gbt, model_from: 'pretrained:gbt-intel'}}\n", 5, 61,
              {"no pretrained model 'gbt-intel'", "there are: gbt-amd-epyc"});
  ExpectError(greedy + "{model: gbt, model_from: 'pretrained:'}}\n", 5, 61,
              {"'pretrained' or 'pretrained:NAME'"});
  // The coordinator does not read the folder: it takes the name as farmctl checked it.
  EXPECT_TRUE(ParseCampaignYaml(greedy + "{model: gbt, model_from: 'pretrained:gbt-intel'}}\n",
                                kFile, /*check_files=*/false)
                  .ok());
  unsetenv("SCHEDFARM_PRETRAINED_DIR");
}

TEST(CampaignYamlTest, ValueIterationDefaults) {
  StatusOr<CampaignConfig> config =
      Parse(kName + "pipelines:\n  - random: {seeds: [1, 8]}\n" + kBudget +
            "strategy: {name: value-iteration, settings: {warmup: 0, model_from: dataset}}\n");
  ASSERT_TRUE(config.ok()) << config.status().message();
  const Strategy& strategy = config->strategy();
  EXPECT_EQ(strategy.model(), "bilstm") << "the value function's kind by default";
  EXPECT_EQ(strategy.acquisition(), "exploit");
  std::map<std::string, double> settings;
  for (const StrategySetting& s : strategy.settings()) settings[s.name()] = s.value();
  EXPECT_EQ(settings.size(), 9u);
  EXPECT_EQ(settings["rounds"], 2);
  EXPECT_EQ(settings["warmup"], 0);
  EXPECT_EQ(settings["held_out"], 2);
  EXPECT_EQ(settings["read_at_defaults"], 1) << "prefixes read at their default completion";
}

TEST(CampaignYamlTest, DefaultsFilled) {
  StatusOr<CampaignConfig> config = Parse(kName + kPipelines + kBudget);
  ASSERT_TRUE(config.ok()) << config.status().message();
  EXPECT_EQ(config->strategy().name(), "random");
  EXPECT_EQ(config->strategy().seed(), 0u);
  EXPECT_EQ(config->budget().wall_time_seconds(), 0);
  const MeasurementSettings& m = config->measurement();
  EXPECT_EQ(m.samples(), 10);
  EXPECT_EQ(m.min_sample_seconds(), 0.01);
  EXPECT_EQ(m.threads(), 1);
  EXPECT_EQ(m.target_cv(), 0.03);
  EXPECT_EQ(m.max_samples(), 30);
  EXPECT_EQ(m.compile_timeout_ms(), 120000);
  EXPECT_EQ(m.run_timeout_ms(), 60000);
  EXPECT_FALSE(m.flush_cache());
  EXPECT_EQ(config->baselines_size(), 0);
  EXPECT_EQ(config->workers().min_cores(), 1);
  EXPECT_EQ(config->workers().isa_size(), 0);
  const ZooPipeline& zoo = config->pipelines(0).zoo();
  EXPECT_EQ(zoo.block(), "vgg_block");
  EXPECT_EQ(zoo.spatial_scale(), 1.0);
  EXPECT_EQ(zoo.channel_scale(), 1.0);
  EXPECT_EQ(zoo.batch(), 1);
  EXPECT_EQ(zoo.dtype(), FLOAT32);
  EXPECT_EQ(zoo.math(), EXACT);
}

TEST(CampaignYamlTest, TemplatesByDefaultExceptReplayAndValueIteration) {
  StatusOr<CampaignConfig> config = Parse(kName + kPipelines + kBudget);
  ASSERT_TRUE(config.ok()) << config.status().message();
  ASSERT_TRUE(config->has_templates());
  EXPECT_TRUE(config->templates());
  config = Parse(kName + kPipelines + kBudget + "templates: false\n");
  ASSERT_TRUE(config.ok()) << config.status().message();
  EXPECT_FALSE(config->templates());
  config = Parse(kName + "pipelines:\n  - random: {seeds: [1, 8]}\n" + kBudget +
                 "strategy: {name: value-iteration, settings: {warmup: 0, model_from: d}}\n");
  ASSERT_TRUE(config.ok()) << config.status().message();
  EXPECT_FALSE(config->templates());
  ExpectError(kName + "pipelines:\n  - random: {seeds: [1, 8]}\n" + kBudget +
                  "strategy: {name: value-iteration, settings: {warmup: 0, model_from: d}}\n" +
                  "templates: true\n",
              6, 12, {"templates: value iteration benchmarks its own rounds"});
  ExpectError(kName + kPipelines + kBudget + "templates: often\n", 5, 12,
              {"templates", "true or false"});
}

TEST(CampaignYamlTest, RandomSeedsAsRangeOrCount) {
  StatusOr<CampaignConfig> config =
      Parse(kName +
            "pipelines:\n  - random: {seeds: [5, 14]}\n"
            "  - random: {seeds: {first: 100, count: 3}, max_ops: 12, min_depth: 4}\n" +
            kBudget);
  ASSERT_TRUE(config.ok()) << config.status().message();
  EXPECT_EQ(config->pipelines(0).random().first_seed(), 5u);
  EXPECT_EQ(config->pipelines(0).random().count(), 10u);
  EXPECT_EQ(config->pipelines(0).random().max_ops(), 30);
  EXPECT_EQ(config->pipelines(1).random().first_seed(), 100u);
  EXPECT_EQ(config->pipelines(1).random().count(), 3u);
  EXPECT_EQ(config->pipelines(1).random().max_ops(), 12);
  EXPECT_EQ(config->pipelines(1).random().min_depth(), 4);
}

TEST(CampaignYamlTest, DurationsParsed) {
  StatusOr<CampaignConfig> config =
      Parse(kName + kPipelines + "budget: {benchmarks: 10, wall_time: 2h}\n" +
            "measurement:\n  min_sample_time: 500ms\n  compile_timeout: 2m\n"
            "  run_timeout: 1.5s\n");
  ASSERT_TRUE(config.ok()) << config.status().message();
  EXPECT_EQ(config->budget().wall_time_seconds(), 7200);
  EXPECT_EQ(config->measurement().min_sample_seconds(), 0.5);
  EXPECT_EQ(config->measurement().compile_timeout_ms(), 120000);
  EXPECT_EQ(config->measurement().run_timeout_ms(), 1500);

  config = Parse(kName + kPipelines + "budget: {benchmarks: 10, wall_time: 90}\n" +
                 "measurement: {run_timeout: 30, min_sample_time: 0.02}\n");
  ASSERT_TRUE(config.ok()) << config.status().message();
  EXPECT_EQ(config->budget().wall_time_seconds(), 90);
  EXPECT_EQ(config->measurement().run_timeout_ms(), 30000);
  EXPECT_EQ(config->measurement().min_sample_seconds(), 0.02);
}

TEST(CampaignYamlTest, PathsResolvedAgainstTheCampaignFile) {
  StatusOr<CampaignConfig> config =
      Parse(kName + "pipelines:\n  - yaml: {path: ../pipelines/conv_block.yaml}\n" + kBudget);
  ASSERT_TRUE(config.ok()) << config.status().message();
  const fs::path expected =
      fs::canonical(std::string(SCHEDFARM_SOURCE_DIR) + "/configs/pipelines/conv_block.yaml");
  EXPECT_EQ(fs::canonical(config->pipelines(0).yaml_path()), expected);
  EXPECT_TRUE(fs::path(config->pipelines(0).yaml_path()).is_absolute());
}

// A mapping with one required key may be written as that key's value: `zoo: NAME`,
// `onnx: PATH`, `yaml: PATH`, with the errors at the value.
TEST(CampaignYamlTest, OneKeyMappingsTakeTheirValueAsShorthand) {
  StatusOr<CampaignConfig> config = Parse(kName +
                                          "pipelines:\n  - zoo: resnet18_basic\n"
                                          "  - yaml: ../pipelines/conv_block.yaml\n" +
                                          kBudget);
  ASSERT_TRUE(config.ok()) << config.status().message();
  StatusOr<CampaignConfig> longhand = Parse(kName +
                                            "pipelines:\n  - zoo: {block: resnet18_basic}\n"
                                            "  - yaml: {path: ../pipelines/conv_block.yaml}\n" +
                                            kBudget);
  ASSERT_TRUE(longhand.ok()) << longhand.status().message();
  EXPECT_TRUE(google::protobuf::util::MessageDifferencer::Equals(*config, *longhand));
  EXPECT_EQ(config->pipelines(0).zoo().block(), "resnet18_basic");
  EXPECT_EQ(config->pipelines(0).zoo().spatial_scale(), 1.0) << "the defaults, as longhand";
  ExpectError(kName + "pipelines:\n  - zoo: resnet18_basik\n" + kBudget, 3, 10,
              {"unknown zoo block 'resnet18_basik'", "did you mean 'resnet18_basic'?"});
  ExpectError(kName + "network: {onnx: missing.onnx}\n" + kBudget, 2, 17,
              {"network.onnx: file 'missing.onnx' not found"});
}

TEST(CampaignYamlTest, CanonicalJsonRoundTrip) {
  for (const fs::directory_entry& entry : fs::directory_iterator(kExamples)) {
    if (entry.path().extension() != ".yaml") continue;
    StatusOr<CampaignConfig> config = LoadCampaignFile(entry.path().string());
    ASSERT_TRUE(config.ok()) << config.status().message();
    const std::string json = CampaignConfigToJson(*config);
    EXPECT_NE(json.find("\"name\":\"" + config->name() + "\""), std::string::npos) << json;
    StatusOr<CampaignConfig> back = CampaignConfigFromJson(json);
    ASSERT_TRUE(back.ok()) << back.status().message();
    EXPECT_TRUE(google::protobuf::util::MessageDifferencer::Equals(*back, *config)) << json;
    EXPECT_EQ(CampaignConfigToJson(*back), json);
  }
  EXPECT_FALSE(CampaignConfigFromJson("{\"name\": 3,").ok());
}

TEST(CampaignYamlErrorTest, UnknownKeyWithHint) {
  ExpectError(kName + "pipeline:\n  - zoo: {block: vgg_block}\n" + kBudget, 2, 1,
              {"unknown key 'pipeline'", "did you mean 'pipelines'?"});
  ExpectError(kName + kPipelines + kBudget + "colour: red\n", 5, 1,
              {"unknown key 'colour'", "known keys: name, pipelines"});
  ExpectError(kName + kPipelines + kBudget + "measurement: {sample: 3}\n", 5, 15,
              {"measurement: unknown key 'sample'", "did you mean 'samples'?"});
}

TEST(CampaignYamlErrorTest, WrongType) {
  ExpectError(kName + kPipelines + "budget: {benchmarks: ten}\n", 4, 22,
              {"budget.benchmarks must be an integer, got 'ten'"});
  ExpectError(kName + "pipelines: {zoo: vgg_block}\n" + kBudget, 2, 12,
              {"pipelines must be a non-empty list, is a mapping"});
  ExpectError(kName + kPipelines + kBudget + "measurement: {flush_cache: 1}\n", 5, 28,
              {"measurement.flush_cache must be true or false"});
  ExpectError(kName + kPipelines + kBudget + "baselines: adams2019\n", 5, 12,
              {"baselines must be a list, is a scalar"});
}

TEST(CampaignYamlErrorTest, MissingField) {
  ExpectError(kName + kPipelines, 1, 1, {"campaign: missing field 'budget'"});
  ExpectError(kName + "pipelines:\n  - zoo: {batch: 2}\n" + kBudget, 3, 10,
              {"pipelines[0].zoo: missing field 'block'"});
  ExpectError(kName + kPipelines + "budget: {}\n", 4, 9, {"budget: missing field 'benchmarks'"});
  // A wall time alone is a budget: benchmarks without a limit.
  StatusOr<CampaignConfig> timed = Parse(kName + kPipelines + "budget: {wall_time: 1h}\n");
  ASSERT_TRUE(timed.ok()) << timed.status().message();
  EXPECT_EQ(timed->budget().benchmarks(), 0);
  EXPECT_EQ(BenchmarkLimit(timed->budget()), kMaxBenchmarks);
}

TEST(CampaignYamlErrorTest, ImpossibleValues) {
  ExpectError(kName + kPipelines + "budget: {benchmarks: -5}\n", 4, 22,
              {"budget.benchmarks must be between 1 and"});
  ExpectError(kName + kPipelines + kBudget + "measurement:\n  samples: 20\n  max_samples: 5\n", 7,
              16, {"measurement.max_samples must be at least samples (20)"});
  ExpectError(kName + kPipelines + kBudget + "measurement:\n  threads: 5000\n", 6, 12,
              {"measurement.threads must be in [0, 1024]"});
  ExpectError(kName + "pipelines:\n  - zoo: {block: vgg_block, batch: 0}\n" + kBudget, 3, 36,
              {"pipelines[0].zoo.batch must be between 1 and 256, got 0"});
  ExpectError(kName + kPipelines + "budget: {benchmarks: 10, wall_time: -3s}\n", 4, 37,
              {"budget.wall_time must not be negative"});
}

TEST(CampaignYamlErrorTest, UnknownNames) {
  ExpectError(kName + "pipelines:\n  - zoo: {block: vgg_blok}\n" + kBudget, 3, 18,
              {"unknown zoo block 'vgg_blok'", "did you mean 'vgg_block'?"});
  ExpectError(kName + "pipelines:\n  - zoo: {block: lenet}\n" + kBudget, 3, 18,
              {"unknown zoo block 'lenet'", "known: ", "resnet18_basic", "vgg_block"});
  ExpectError(kName + kPipelines + kBudget + "baselines: [adams2019, adams2020]\n", 5, 24,
              {"unknown baseline 'adams2020'", "did you mean 'adams2019'?"});
  ExpectError(kName + kPipelines + kBudget + "workers: {isa: [avx-2]}\n", 5, 17,
              {"unknown ISA flag 'avx-2'", "did you mean 'avx2'?"});
  ExpectError(kName + kPipelines + kBudget + "strategy: {name: bayesian}\n", 5, 18,
              {"unknown strategy 'bayesian' (known: random, model-guided, uncertainty, greedy, "
               "beam, anneal, relaxed, value-iteration)"});
  ExpectError(kName + kPipelines + kBudget + "baselines: [li2018, li2018]\n", 5, 21,
              {"baseline 'li2018' is listed twice"});
}

TEST(CampaignYamlErrorTest, SeedRangeReversed) {
  ExpectError(kName + "pipelines:\n  - random: {seeds: [10, 3]}\n" + kBudget, 3, 21,
              {"pipelines[0].random.seeds: seed range reversed, last 3 is below first 10"});
}

TEST(CampaignYamlErrorTest, Files) {
  ExpectError(kName + "pipelines:\n  - yaml: {path: ../pipelines/missing.yaml}\n" + kBudget, 3, 18,
              {"pipelines[0].yaml.path: file '../pipelines/missing.yaml' not found",
               "campaign file's directory"});
  ExpectError(kName + "pipelines:\n  - onnx: {path: ../pipelines/conv_block.yaml}\n" + kBudget, 3,
              18, {"pipelines[0].onnx.path must name a .onnx file"});
  ExpectError(kName + "pipelines:\n  - onnx: {path: no_such_model.onnx}\n" + kBudget, 3, 18,
              {"file 'no_such_model.onnx' not found"});
}

TEST(CampaignYamlErrorTest, OneKindPerPipeline) {
  ExpectError(
      kName + "pipelines:\n  - zoo: {block: vgg_block}\n    random: {seeds: [1, 2]}\n" + kBudget, 4,
      5, {"pipelines[0] must have exactly one of zoo, onnx, yaml, random, has 2"});
}

TEST(CampaignYamlErrorTest, BadDurationAndSyntax) {
  ExpectError(kName + kPipelines + "budget: {benchmarks: 10, wall_time: 2 hours}\n", 4, 37,
              {"budget.wall_time must be a duration such as 90s", "got '2 hours'"});
  ExpectError(kName + kPipelines + "budget: {benchmarks: 10\n", 5, 1, {"YAML syntax error"});
  StatusOr<CampaignConfig> empty = Parse("");
  ASSERT_FALSE(empty.ok());
  EXPECT_EQ(empty.status().message().rfind(kFile + ":1:1: empty document", 0), 0u);
}

// Found by fuzzing: a campaign that is not UTF-8 was accepted, and its config (and the
// submission that carries the text) could not be parsed again by the receiver.
TEST(CampaignYamlErrorTest, TextThatIsNotUtf8) {
  ExpectError(kName + "pipelines:\n  - onnx: {path: /\xD6\xD6usr/m.onnx}\n" + kBudget, 3, 19,
              {"not UTF-8 text (byte 0xD6)"});
  // yaml-cpp reads the escape \N as a Latin-1 byte, and a NUL followed by '_' too.
  ExpectError(kName + "pipelines:\n  - onnx: {path: \"/m\\N.onnx\"}\n" + kBudget, 3, 18,
              {"pipelines[0].onnx.path is not UTF-8 text once read"});
  ExpectError(kName + "pipelines:\n  - onnx: {path: /a" + std::string(1, '\0') + "_b.onnx}\n" +
                  kBudget,
              3, 18, {"is not UTF-8 text once read"});
}

TEST(CampaignYamlErrorTest, InvalidPipelineFileIsQuoted) {
  const fs::path dir = fs::temp_directory_path() / ("campaign_test_" + std::to_string(::getpid()));
  fs::create_directories(dir / "pipes");
  std::ofstream(dir / "pipes" / "bad.yaml") << "name: bad\nstages: 3\n";
  const fs::path campaign = dir / "c.yaml";
  std::ofstream(campaign) << kName << "pipelines:\n  - yaml: {path: pipes/bad.yaml}\n" << kBudget;
  StatusOr<CampaignConfig> config = LoadCampaignFile(campaign.string());
  fs::remove_all(dir);
  ASSERT_FALSE(config.ok());
  const std::string& message = config.status().message();
  EXPECT_EQ(message.rfind(campaign.string() + ":3:18: pipelines[0].yaml.path: the pipeline does "
                                              "not validate: ",
                          0),
            0u)
      << message;
  EXPECT_NE(message.find("bad.yaml:"), std::string::npos) << message;
  EXPECT_FALSE(LoadCampaignFile((dir / "gone.yaml").string()).ok());
}

}  // namespace
}  // namespace schedfarm

namespace schedfarm {
namespace {

// A replay campaign beside a synthetic dataset of 10 pipelines.
class ReplayCampaignYaml : public testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(WriteDataset(dir_.Sub("d.sfds"), testing_support::SyntheticDataset(10, 2)).ok());
  }
  StatusOr<CampaignConfig> Parse(const std::string& text) {
    return ParseCampaignYaml(text, dir_.Sub("c.yaml"));
  }
  void ExpectErrorAt(const std::string& text, int line, int column, const std::string& part) {
    StatusOr<CampaignConfig> config = Parse(text);
    ASSERT_FALSE(config.ok()) << text;
    const std::string where = dir_.Sub("c.yaml") + ":" + std::to_string(line) + ":" +
                              std::to_string(column) + ": ";
    EXPECT_EQ(config.status().message().rfind(where, 0), 0u) << config.status().message();
    EXPECT_NE(config.status().message().find(part), std::string::npos)
        << config.status().message();
  }
  ScratchDir dir_;
};

TEST_F(ReplayCampaignYaml, SplitsTheDatasetsPipelines) {
  StatusOr<CampaignConfig> config =
      Parse(kName + "replay: {dataset: d.sfds, held_out: 0.3}\n" + kBudget);
  ASSERT_TRUE(config.ok()) << config.status().message();
  EXPECT_FALSE(config->templates()) << "a replay proposes only its dataset's schedules";
  ExpectErrorAt(kName + "replay: {dataset: d.sfds}\n" + kBudget + "templates: true\n", 4, 12,
                "templates: a replay campaign proposes only its dataset's schedules");
  const ReplaySource& replay = config->replay();
  EXPECT_EQ(replay.dataset(), dir_.Sub("d.sfds"));
  EXPECT_EQ(replay.dataset_id(), ReadDataset(dir_.Sub("d.sfds")).value().id);
  EXPECT_EQ(replay.pipeline_ids_size(), 7);
  EXPECT_EQ(replay.held_out_pipelines_size(), 3);
  std::set<std::string> all(replay.pipeline_ids().begin(), replay.pipeline_ids().end());
  all.insert(replay.held_out_pipelines().begin(), replay.held_out_pipelines().end());
  EXPECT_EQ(all.size(), 10u);
  EXPECT_EQ(config->pipelines_size(), 0);
  // farm-learner proposes even random candidates: from the dataset's schedules.
  EXPECT_EQ(config->strategy().name(), "random");
  EXPECT_TRUE(LearnerProposes(*config));
  EXPECT_GT(config->strategy().batch(), 0);
  EXPECT_FALSE(config->strategy().model().empty());

  StatusOr<CampaignConfig> same =
      Parse(kName + "replay: {dataset: d.sfds, held_out: 0.3}\n" + kBudget);
  EXPECT_EQ(CampaignConfigToJson(*same), CampaignConfigToJson(*config));
  StatusOr<CampaignConfig> other =
      Parse(kName + "replay: {dataset: d.sfds, held_out: 0.3, split_seed: 9}\n" + kBudget);
  ASSERT_TRUE(other.ok());
  EXPECT_EQ(other->replay().pipeline_ids_size(), 7);

  StatusOr<CampaignConfig> settings = Parse(
      kName + "replay: {dataset: d.sfds}\n" + kBudget +
      "strategy: {name: random, settings: {model: gbt, batch: 32, retrain_every: 50}}\n");
  ASSERT_TRUE(settings.ok()) << settings.status().message();
  EXPECT_EQ(settings->strategy().model(), "gbt");
  EXPECT_EQ(settings->strategy().batch(), 32);
}

TEST_F(ReplayCampaignYaml, BadReplaySections) {
  ExpectErrorAt(kName + kPipelines + "replay: {dataset: d.sfds}\n" + kBudget, 4, 9,
                "one of pipelines, replay or network, not several");
  ExpectErrorAt(kName + "replay: {dataset: none.sfds}\n" + kBudget, 2, 19, "not found");
  ExpectErrorAt(kName + "replay: {dataset: d.yaml}\n" + kBudget, 2, 19, "must name a .sfds file");
  ExpectErrorAt(kName + "replay: {held_out: 0.2}\n" + kBudget, 2, 9, "dataset");
  ExpectErrorAt(kName + "replay: {dataset: d.sfds, held_out: 0.95}\n" + kBudget, 2, 37,
                "replay.held_out must be between");
  ExpectErrorAt(kName + "replay: {dataset: d.sfds, hold: 1}\n" + kBudget, 2, 27, "unknown key 'hold'");
  const std::string bytes = ReadFileBytes(dir_.Sub("d.sfds")).value();
  ASSERT_TRUE(WriteFileAtomically(dir_.Sub("t.sfds"), bytes.substr(0, bytes.size() - 3)).ok());
  ExpectErrorAt(kName + "replay: {dataset: t.sfds}\n" + kBudget, 2, 19,
                "t.sfds': truncated or corrupt");
}

}  // namespace
}  // namespace schedfarm
