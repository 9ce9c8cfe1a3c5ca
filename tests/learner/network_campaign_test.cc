// A network campaign on a farm of real processes on loopback: the coordinator, one
// worker and farm-learner. The network (a zoo block run as a small network) is split
// into tasks; the coordinator times the network's reference schedule and a Halide
// autoscheduler and libtorch on the whole network, the learner spreads rounds of random schedules
// over the distinct tasks with the task scheduler and proposes the schedule assembled
// from the tasks' best, which the worker compiles, checks against the reference and
// times. A submission whose tasks are not the network's split is refused.
#include <gtest/gtest.h>

#include <chrono>
#include <map>
#include <set>
#include <string>
#include <thread>

#include "campaign/campaign_pipelines.h"
#include "campaign/campaign_yaml.h"
#include "network/tasks.h"
#include "pipeline/graph.h"
#include "pipeline/spec.h"
#include "tests/support/farm_rig.h"
#include "tests/support/scratch_dir.h"

namespace schedfarm {
namespace {

using testing_support::ChildProcess;
using testing_support::CoordinatorProcess;
using testing_support::TestClient;

constexpr char kCampaign[] = R"(name: network
network: {zoo: {block: resnet50_bottleneck, spatial_scale: 0.25, channel_scale: 0.25}}
strategy: {name: random, settings: {batch: 3, model: roofline}}
budget: {benchmarks: 24}
measurement: {samples: 2, max_samples: 2, min_sample_time: 1ms}
baselines: [li2018, libtorch]
)";

// The campaign's pipelines as farmctl builds them: the network, its assembly, its tasks.
std::vector<PipelineSpec> NetworkPipelines(const CampaignConfig& config) {
  StatusOr<PipelineSpec> network = BuildZooPipeline(config.network().zoo());
  EXPECT_TRUE(network.ok()) << network.status().message();
  StatusOr<PipelineGraph> graph = PipelineGraph::Build(*network);
  EXPECT_TRUE(graph.ok());
  StatusOr<NetworkPartition> partition = PartitionNetwork(*graph);
  EXPECT_TRUE(partition.ok()) << partition.status().message();
  return NetworkCampaignPipelines(*network, *partition);
}

std::optional<ClientReply> Submit(TestClient& client, const std::vector<PipelineSpec>& pipelines) {
  ClientRequest submit;
  submit.mutable_submit()->set_yaml_source(kCampaign);
  submit.mutable_submit()->set_file_name("network.yaml");
  for (const PipelineSpec& spec : pipelines) *submit.mutable_submit()->add_pipelines() = spec;
  return client.Call(submit);
}

TEST(NetworkCampaignTest, TasksAreTunedAndTheAssembledNetworkIsCheckedAndTimed) {
  ScratchDir dir;
  CoordinatorProcess coordinator{FARM_COORDINATOR_BIN, dir.Sub("store")};
  ASSERT_FALSE(coordinator.endpoint().empty()) << coordinator.Log();
  ChildProcess worker{FARM_WORKER_BIN,
                      {"--coordinator", coordinator.endpoint(), "--id", "w", "--compile-slots",
                       "1", "--children", "1"}};
  ChildProcess learner{FARM_LEARNER_BIN,
                       {"--coordinator", coordinator.endpoint(), "--models", "roofline",
                        "--threads", "1", "--poll-ms", "200"}};
  TestClient client{coordinator.endpoint()};

  StatusOr<CampaignConfig> config = ParseCampaignYaml(kCampaign, "network.yaml");
  ASSERT_TRUE(config.ok()) << config.status().message();
  const std::vector<PipelineSpec> pipelines = NetworkPipelines(*config);
  ASSERT_GE(pipelines.size(), 4u);  // the network, its assembly and at least two tasks
  std::optional<ClientReply> reply = Submit(client, pipelines);
  ASSERT_TRUE(reply && reply->code() == CLIENT_OK) << (reply ? reply->error() : "no reply");
  const std::string id = reply->submitted().id();

  bool done = false;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(400);
  while (!done && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(500));
    std::optional<ClientReply> status = client.Status(id);
    done = status && status->status().campaigns_size() == 1 &&
           status->status().campaigns(0).campaign().state() == CAMPAIGN_DONE;
  }
  ASSERT_TRUE(done) << "learner log:\n" << learner.Log();

  std::vector<std::string> ids;
  for (const PipelineSpec& spec : pipelines) {
    ids.push_back(PipelineId(*PipelineGraph::Build(spec)));
  }
  std::map<std::string, int> measured_by_origin;
  std::set<std::string> tasks_measured, keys;
  int assembled_ok = 0, rows = 0;
  for (const StoredMeasurementRecord& row : client.Export(id)) {
    const Measurement& m = row.measurement();
    const Candidate& c = m.candidate();
    ++rows;
    EXPECT_TRUE(keys.insert(c.pipeline_id() + c.schedule_hash()).second) << "measured twice";
    if (m.status() == OK) ++measured_by_origin[c.origin()];
    if (c.origin() == "reference" || c.origin() == "li2018" || c.origin() == "libtorch") {
      EXPECT_EQ(c.pipeline_id(), ids[0]) << "baselines run on the whole network";
    } else if (c.origin() == kAssembledOrigin) {
      EXPECT_EQ(c.pipeline_id(), ids[1]);
      EXPECT_GT(c.prediction().mean_seconds(), 0) << "the tasks' estimate";
      assembled_ok += m.status() == OK;
      EXPECT_EQ(m.status(), OK) << m.error();
    } else {
      EXPECT_EQ(c.origin(), "random");
      EXPECT_NE(c.pipeline_id(), ids[0]);
      EXPECT_NE(c.pipeline_id(), ids[1]);
      if (m.status() == OK) tasks_measured.insert(c.pipeline_id());
    }
  }
  EXPECT_LE(rows, 24);
  EXPECT_EQ(measured_by_origin["reference"], 1);
  EXPECT_EQ(measured_by_origin["libtorch"], 1) << "the libtorch baseline on the whole network";
  EXPECT_GE(assembled_ok, 1) << "learner log:\n" << learner.Log();
  EXPECT_EQ(tasks_measured.size(), pipelines.size() - 2) << "every distinct task had a round";
}

TEST(NetworkCampaignTest, ASubmissionThatIsNotTheNetworksSplitIsRefused) {
  ScratchDir dir;
  CoordinatorProcess coordinator{FARM_COORDINATOR_BIN, dir.Sub("store")};
  ASSERT_FALSE(coordinator.endpoint().empty()) << coordinator.Log();
  TestClient client{coordinator.endpoint()};
  StatusOr<CampaignConfig> config = ParseCampaignYaml(kCampaign, "network.yaml");
  ASSERT_TRUE(config.ok());
  std::vector<PipelineSpec> pipelines = NetworkPipelines(*config);

  std::vector<PipelineSpec> missing = pipelines;
  missing.pop_back();
  std::optional<ClientReply> reply = Submit(client, missing);
  ASSERT_TRUE(reply.has_value());
  EXPECT_NE(reply->code(), CLIENT_OK);
  EXPECT_NE(reply->error().find("the network, its assembly and its distinct tasks"),
            std::string::npos)
      << reply->error();

  std::vector<PipelineSpec> swapped = pipelines;
  std::swap(swapped[2], swapped[3]);
  reply = Submit(client, swapped);
  ASSERT_TRUE(reply.has_value());
  EXPECT_NE(reply->code(), CLIENT_OK);
  EXPECT_NE(reply->error().find("network task 0"), std::string::npos) << reply->error();
}

}  // namespace
}  // namespace schedfarm
