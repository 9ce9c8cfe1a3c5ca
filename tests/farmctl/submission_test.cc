// Submissions built from every example campaign (configs/campaigns/*.yaml): the file's
// text and name, every pipeline in the order of the file's list, each equal to what its
// builder gives for the item's settings; and the errors of a bad campaign file (its
// file:line:column) and of a pipeline that cannot be built (the item named).
#include "farmctl/submission.h"

#include <google/protobuf/util/message_differencer.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "campaign/campaign_pipelines.h"
#include "campaign/campaign_yaml.h"
#include "network/tasks.h"
#include "pipeline/graph.h"
#include "pipeline/random_pipeline.h"
#include "pipeline/spec.h"
#include "pipeline/zoo.h"
#include "tests/support/scratch_dir.h"

namespace schedfarm {
namespace {

namespace fs = std::filesystem;
using google::protobuf::util::MessageDifferencer;

std::string ReadText(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

// Writes `text` to `path` and returns the path.
std::string WriteFile(const std::string& path, const std::string& text) {
  std::ofstream(path, std::ios::binary) << text;
  return path;
}

// Checks that `got` holds the pipelines of `config` in order, each as its builder makes it.
void ExpectPipelinesOf(const CampaignConfig& config, const SubmitCampaign& got) {
  if (config.has_replay()) {  // the dataset's pipelines of the split, in order
    ASSERT_EQ(got.pipelines_size(), config.replay().pipeline_ids_size());
    for (int i = 0; i < got.pipelines_size(); ++i) {
      EXPECT_EQ(PipelineId(PipelineGraph::Build(got.pipelines(i)).value()),
                config.replay().pipeline_ids(i));
    }
    EXPECT_EQ(got.replay().dataset_id(), config.replay().dataset_id());
    return;
  }
  if (config.has_network()) {  // the network, its assembly and its distinct tasks
    StatusOr<PipelineSpec> network = MakeZooBlock(config.network().zoo().block(), [&] {
      ZooOptions options;
      options.spatial_scale = config.network().zoo().spatial_scale();
      options.channel_scale = config.network().zoo().channel_scale();
      return options;
    }());
    ASSERT_TRUE(network.ok());
    // As a network campaign times it: random weights, tile copies, its layout.
    StatusOr<PipelineSpec> timed = TimedNetwork(*network, config.network_layout());
    ASSERT_TRUE(timed.ok()) << timed.status().ToString();
    StatusOr<PipelineGraph> graph = PipelineGraph::Build(*timed);
    ASSERT_TRUE(graph.ok());
    StatusOr<NetworkPartition> partition = PartitionNetwork(*graph, config.fusion());
    ASSERT_TRUE(partition.ok());
    const std::vector<PipelineSpec> expected = NetworkCampaignPipelines(*timed, *partition);
    ASSERT_EQ(got.pipelines_size(), static_cast<int>(expected.size()));
    for (size_t i = 0; i < expected.size(); ++i) {
      EXPECT_TRUE(MessageDifferencer::Equals(got.pipelines(static_cast<int>(i)), expected[i]))
          << "pipeline " << i;
    }
    return;
  }
  int next = 0;
  for (const PipelineSource& source : config.pipelines()) {
    ASSERT_LT(next, got.pipelines_size());
    if (source.has_zoo()) {
      ZooOptions options;
      options.spatial_scale = source.zoo().spatial_scale();
      options.channel_scale = source.zoo().channel_scale();
      options.batch = source.zoo().batch();
      options.dtype = source.zoo().dtype();
      options.math = source.zoo().math();
      StatusOr<PipelineSpec> expected = MakeZooBlock(source.zoo().block(), options);
      ASSERT_TRUE(expected.ok());
      EXPECT_TRUE(MessageDifferencer::Equals(got.pipelines(next), *expected))
          << "pipeline " << next << " is not zoo block " << source.zoo().block();
      ++next;
    } else if (source.has_random()) {
      RandomPipelineOptions options;
      options.max_ops = source.random().max_ops();
      options.max_elements = source.random().max_elements();
      options.max_flops = source.random().max_flops();
      options.min_depth = source.random().min_depth();
      options.math = source.random().math();
      for (uint64_t i = 0; i < source.random().count(); ++i, ++next) {
        ASSERT_LT(next, got.pipelines_size());
        const uint64_t seed = source.random().first_seed() + i;
        EXPECT_EQ(got.pipelines(next).source(), "random:" + std::to_string(seed));
        // Comparing every spec would double the test's time; the first and last suffice.
        if (i == 0 || i + 1 == source.random().count()) {
          StatusOr<PipelineSpec> expected = RandomPipeline(seed, options);
          ASSERT_TRUE(expected.ok());
          EXPECT_TRUE(MessageDifferencer::Equals(got.pipelines(next), *expected))
              << "pipeline " << next << " is not random seed " << seed;
        }
      }
    } else {
      const std::string path = source.has_onnx_path() ? source.onnx_path() : source.yaml_path();
      EXPECT_GT(got.pipelines(next).stages_size(), 0) << path;
      ++next;
    }
  }
  EXPECT_EQ(next, got.pipelines_size());
}

TEST(FarmctlSubmissionTest, EveryExampleCampaignBuilds) {
  int files = 0;
  for (const auto& entry : fs::directory_iterator("configs/campaigns")) {
    if (entry.path().extension() != ".yaml") continue;
    ++files;
    const std::string path = entry.path().string();
    SCOPED_TRACE(path);
    StatusOr<SubmitCampaign> submit = BuildSubmission(path);
    ASSERT_TRUE(submit.ok()) << submit.status().ToString();
    EXPECT_EQ(submit->yaml_source(), ReadText(path));
    EXPECT_EQ(submit->file_name(), path);
    StatusOr<CampaignConfig> config = LoadCampaignFile(path);
    ASSERT_TRUE(config.ok());
    ExpectPipelinesOf(*config, *submit);
    // What the coordinator checks a submission with.
    const std::vector<PipelineSpec> sent(submit->pipelines().begin(), submit->pipelines().end());
    EXPECT_TRUE(CheckCampaignPipelines(*config, sent).ok());
    if (entry.path().filename() == "random.yaml") {
      EXPECT_EQ(submit->pipelines_size(), 120);  // seeds 0..99 and 1000..1019
    }
  }
  EXPECT_GE(files, 5);
}

TEST(FarmctlSubmissionTest, QuickstartHasItsThreeZooBlocksInOrder) {
  StatusOr<SubmitCampaign> submit = BuildSubmission("configs/campaigns/quickstart.yaml");
  ASSERT_TRUE(submit.ok()) << submit.status().ToString();
  ASSERT_EQ(submit->pipelines_size(), 3);
  EXPECT_EQ(submit->pipelines(0).source(), "zoo:vgg_block");
  EXPECT_EQ(submit->pipelines(1).source(), "zoo:squeezenet_fire");
  EXPECT_EQ(submit->pipelines(2).source(), "zoo:resnet18_basic");
}

TEST(FarmctlSubmissionTest, BadCampaignFileNamesLineAndColumn) {
  ScratchDir dir;
  const std::string path = WriteFile(dir.Sub("bad.yaml"),
                                     "name: bad\n"
                                     "pipelines:\n"
                                     "  - zoo: {block: vgg_block}\n"
                                     "budget: {benchmarks: 10}\n"
                                     "measurment: {samples: 3}\n");
  StatusOr<SubmitCampaign> submit = BuildSubmission(path);
  ASSERT_FALSE(submit.ok());
  const std::string& message = submit.status().message();
  EXPECT_EQ(message.rfind(path + ":5:1: ", 0), 0u) << message;
  EXPECT_NE(message.find("measurement"), std::string::npos) << message;
}

TEST(FarmctlSubmissionTest, MissingFileIsAnError) {
  StatusOr<SubmitCampaign> submit = BuildSubmission("configs/campaigns/no_such_campaign.yaml");
  ASSERT_FALSE(submit.ok());
  EXPECT_NE(submit.status().message().find(
                "campaign file: 'configs/campaigns/no_such_campaign.yaml': cannot open: No such file"),
            std::string::npos)
      << submit.status().message();
}

TEST(FarmctlSubmissionTest, PipelineThatCannotBeBuiltNamesTheItem) {
  ScratchDir dir;
  const std::string model = WriteFile(dir.Sub("broken.onnx"), "this is not an ONNX model");
  const std::string path = WriteFile(dir.Sub("campaign.yaml"),
                                     "name: broken\n"
                                     "pipelines:\n"
                                     "  - zoo: {block: vgg_block, spatial_scale: 0.25}\n"
                                     "  - onnx: {path: broken.onnx}\n"
                                     "budget: {benchmarks: 10}\n");
  StatusOr<SubmitCampaign> submit = BuildSubmission(path);
  ASSERT_FALSE(submit.ok());
  const std::string& message = submit.status().message();
  EXPECT_EQ(message.rfind(path + ": pipelines[1] (onnx " + model + "): ", 0), 0u) << message;
}

}  // namespace
}  // namespace schedfarm
