// A network campaign on a farm of real processes on loopback: the coordinator, one
// worker and farm-learner. The network (a zoo block run as a small network, its tasks
// exchanging tensors channels-last) is split into tasks; the coordinator times the
// network's reference schedule, a Halide autoscheduler, libtorch and ONNX Runtime on the
// whole network and on every distinct task, the learner proposes the network assembled
// from the tasks' templates at once, spreads rounds of random schedules over the
// distinct tasks with the task scheduler and proposes the schedule assembled from the
// tasks' best, which the worker compiles, checks against the reference and times; farmctl status
// and report then show the task table, each task with the contenders' times and the farm's ratio to
// the fastest. Where ONNX Runtime is not installed the test says so and counts as skipped. A
// submission whose tasks are not the network's split is refused.
#include <gtest/gtest.h>

#include <chrono>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <thread>

#include "campaign/campaign_pipelines.h"
#include "campaign/campaign_yaml.h"
#include "common/files.h"
#include "farmctl/cli.h"
#include "network/tasks.h"
#include "pipeline/graph.h"
#include "pipeline/spec.h"
#include "scheduler/autoscheduler_names.h"
#include "scheduler/templates.h"
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
budget: {benchmarks: 42}
measurement: {samples: 2, max_samples: 2, min_sample_time: 1ms}
baselines: [li2018, libtorch, onnxruntime]
layout: channels_last
fusion: none
)";

// A network of fused tasks (docs/NETWORKS.md, "Fused tasks"): MnasNet's block, whose
// expansion and depthwise convolution are one task and whose squeeze-and-excitation and
// projection another.
constexpr char kFusedCampaign[] = R"(name: fused
network: {zoo: {block: mnasnet_block, spatial_scale: 0.25, channel_scale: 0.5}}
strategy: {name: random, settings: {batch: 2, model: roofline}}
budget: {benchmarks: 24}
measurement: {samples: 2, max_samples: 2, min_sample_time: 1ms}
baselines: [libtorch]
layout: channels_last
)";

// The campaign's pipelines as farmctl builds them: the network with its tile copies, its
// assembly, its tasks.
std::vector<PipelineSpec> NetworkPipelines(const CampaignConfig& config) {
  StatusOr<PipelineSpec> network = BuildZooPipeline(config.network().zoo());
  EXPECT_TRUE(network.ok()) << network.status().message();
  network = TimedNetwork(*network, config.network_layout());
  EXPECT_TRUE(network.ok()) << network.status().message();
  StatusOr<PipelineGraph> graph = PipelineGraph::Build(*network);
  EXPECT_TRUE(graph.ok());
  StatusOr<NetworkPartition> partition = PartitionNetwork(*graph, config.fusion());
  EXPECT_TRUE(partition.ok()) << partition.status().message();
  return NetworkCampaignPipelines(*network, *partition);
}

std::optional<ClientReply> Submit(TestClient& client, const std::vector<PipelineSpec>& pipelines,
                                  const char* yaml = kCampaign) {
  ClientRequest submit;
  submit.mutable_submit()->set_yaml_source(yaml);
  submit.mutable_submit()->set_file_name("network.yaml");
  for (const PipelineSpec& spec : pipelines) *submit.mutable_submit()->add_pipelines() = spec;
  return client.Call(submit);
}

// A farm on loopback: the coordinator, one worker and farm-learner.
struct NetworkFarm {
  ScratchDir dir;
  CoordinatorProcess coordinator{FARM_COORDINATOR_BIN, dir.Sub("store")};
  ChildProcess worker{FARM_WORKER_BIN,
                      {"--coordinator", coordinator.endpoint(), "--id", "w", "--compile-slots", "1",
                       "--children", "1"}};
  ChildProcess learner{FARM_LEARNER_BIN,
                       {"--coordinator", coordinator.endpoint(), "--models", "roofline",
                        "--threads", "1", "--poll-ms", "200"}};
  TestClient client{coordinator.endpoint()};

  // Whether campaign `id` is done within `seconds`.
  bool WaitUntilDone(const std::string& id, int seconds) {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(seconds);
    while (std::chrono::steady_clock::now() < deadline) {
      std::this_thread::sleep_for(std::chrono::milliseconds(500));
      std::optional<ClientReply> status = client.Status(id);
      if (status && status->status().campaigns_size() == 1 &&
          status->status().campaigns(0).campaign().state() == CAMPAIGN_DONE) {
        return true;
      }
    }
    return false;
  }
};

TEST(NetworkCampaignTest, TasksAreTunedAndTheAssembledNetworkIsCheckedAndTimed) {
  NetworkFarm farm;
  ASSERT_FALSE(farm.coordinator.endpoint().empty()) << farm.coordinator.Log();
  const CoordinatorProcess& coordinator = farm.coordinator;
  const ChildProcess& learner = farm.learner;
  TestClient& client = farm.client;

  StatusOr<CampaignConfig> config = ParseCampaignYaml(kCampaign, "network.yaml");
  ASSERT_TRUE(config.ok()) << config.status().message();
  const std::vector<PipelineSpec> pipelines = NetworkPipelines(*config);
  ASSERT_GE(pipelines.size(), 4u);  // the network, its assembly and at least two tasks
  std::optional<ClientReply> reply = Submit(client, pipelines);
  ASSERT_TRUE(reply && reply->code() == CLIENT_OK) << (reply ? reply->error() : "no reply");
  const std::string id = reply->submitted().id();

  ASSERT_TRUE(farm.WaitUntilDone(id, 400)) << "learner log:\n" << learner.Log();

  std::vector<std::string> ids;
  for (const PipelineSpec& spec : pipelines) {
    ids.push_back(PipelineId(*PipelineGraph::Build(spec)));
  }
  const std::set<std::string> task_ids(ids.begin() + 2, ids.end());
  std::map<std::string, int> measured_by_origin;
  std::set<std::string> tasks_measured, keys, tasks_with_libtorch, tasks_with_li2018,
      tasks_with_onnxruntime, tasks_with_template;
  std::string onnxruntime_unavailable;  // why, on a machine without it
  int assembled_ok = 0, rows = 0;
  std::map<int64_t, double> assembled_by_time;  // each assembly's estimate, by its result's time
  std::vector<int64_t> task_baselines_finished;  // when each task's baseline was measured
  for (const StoredMeasurementRecord& row : client.Export(id)) {
    const Measurement& m = row.measurement();
    const Candidate& c = m.candidate();
    ++rows;
    EXPECT_TRUE(keys.insert(c.pipeline_id() + c.schedule_hash()).second) << "measured twice";
    if (m.status() == OK) ++measured_by_origin[c.origin()];
    if (c.origin() == "reference") {
      EXPECT_EQ(c.pipeline_id(), ids[0]) << "the reference schedule runs on the whole network";
    } else if (c.origin() == "li2018" || c.origin() == "libtorch") {
      EXPECT_NE(c.pipeline_id(), ids[1]) << "baselines run on the network and its tasks";
      if (task_ids.count(c.pipeline_id())) {
        (c.origin() == "li2018" ? tasks_with_li2018 : tasks_with_libtorch).insert(c.pipeline_id());
        task_baselines_finished.push_back(m.finished_unix_ms());
      }
      if (c.origin() == "libtorch") {
        // Every pipeline of the block has 4-D convolutions: both layouts and the frozen
        // module, the fastest reported.
        EXPECT_EQ(m.status(), OK) << m.error();
        ASSERT_EQ(m.torch_layouts_size(), 3) << m.DebugString();
        EXPECT_EQ(m.torch_layouts(1).layout(), "channels_last");
        EXPECT_GT(m.torch_layouts(1).channels_last_stages(), 0);
        EXPECT_EQ(m.torch_layouts(2).layout().rfind("frozen", 0), 0u)  // or frozen_unoptimized
            << m.torch_layouts(2).layout();
        double fastest = 0;
        for (const TorchLayoutRun& run : m.torch_layouts()) {
          EXPECT_EQ(run.status(), OK) << run.layout() << ": " << run.error();
          if (run.layout() == m.torch_layout()) fastest = run.stats().median_seconds();
        }
        EXPECT_EQ(m.stats().median_seconds(), fastest) << m.DebugString();
        for (const TorchLayoutRun& run : m.torch_layouts()) {
          EXPECT_LE(fastest, run.stats().median_seconds()) << run.layout();
        }
      }
    } else if (c.origin() == kOnnxRuntimeBaseline) {
      EXPECT_NE(c.pipeline_id(), ids[1]) << "baselines run on the network and its tasks";
      if (m.error().find("unavailable on this worker") != std::string::npos) {
        onnxruntime_unavailable = m.error();
        continue;
      }
      EXPECT_EQ(m.status(), OK) << m.error();
      EXPECT_EQ(m.runtime_version().rfind("onnxruntime 1.", 0), 0u) << m.runtime_version();
      if (task_ids.count(c.pipeline_id())) {
        tasks_with_onnxruntime.insert(c.pipeline_id());
        task_baselines_finished.push_back(m.finished_unix_ms());
      }
    } else if (c.origin() == kTemplateOrigin) {
      EXPECT_TRUE(task_ids.count(c.pipeline_id())) << "templates run on the tasks";
      EXPECT_EQ(m.status(), OK) << m.error();
      tasks_with_template.insert(c.pipeline_id());
    } else if (c.origin() == kAssembledOrigin) {
      EXPECT_EQ(c.pipeline_id(), ids[1]);
      // The templates' assembly has no estimate; every later one the tasks' estimate.
      assembled_by_time[m.finished_unix_ms()] = c.prediction().mean_seconds();
      assembled_ok += m.status() == OK;
      EXPECT_EQ(m.status(), OK) << m.error();
    } else {
      EXPECT_EQ(c.origin(), "random");
      EXPECT_NE(c.pipeline_id(), ids[0]);
      EXPECT_NE(c.pipeline_id(), ids[1]);
      if (m.status() == OK) tasks_measured.insert(c.pipeline_id());
    }
  }
  EXPECT_LE(rows, 42);
  EXPECT_EQ(measured_by_origin["reference"], 1);
  EXPECT_EQ(measured_by_origin["libtorch"], 1 + static_cast<int>(task_ids.size()))
      << "the libtorch baseline on the whole network and on every distinct task";
  EXPECT_EQ(tasks_with_libtorch, task_ids);
  EXPECT_EQ(tasks_with_li2018, task_ids);
  if (onnxruntime_unavailable.empty()) {
    EXPECT_EQ(measured_by_origin["onnxruntime"], 1 + static_cast<int>(task_ids.size()))
        << "ONNX Runtime on the whole network and on every distinct task";
    EXPECT_EQ(tasks_with_onnxruntime, task_ids);
  }
  // Every task of the block has a convolution: each had its template measured.
  EXPECT_EQ(tasks_with_template, task_ids);
  // The first assembly is the templates', proposed before the first round of search
  // and without an estimate; the tasks' best, once every task is known, is another only
  // where search beat a template.
  EXPECT_GE(assembled_ok, 1) << "learner log:\n" << learner.Log();
  ASSERT_FALSE(assembled_by_time.empty());
  EXPECT_EQ(assembled_by_time.begin()->second, 0) << "the templates' assembly first";
  int without_estimate = 0;
  for (const auto& [ms, estimate] : assembled_by_time) without_estimate += estimate == 0;
  EXPECT_EQ(without_estimate, 1);
  // It is queued ahead of the baselines the coordinator queued at submission: most of
  // the tasks' baselines are measured after it.
  const int64_t templates_measured = assembled_by_time.begin()->first;
  const auto baselines_before =
      std::count_if(task_baselines_finished.begin(), task_baselines_finished.end(),
                    [&](int64_t ms) { return ms < templates_measured; });
  EXPECT_LT(baselines_before * 2, static_cast<long>(task_baselines_finished.size()))
      << baselines_before << " of " << task_baselines_finished.size()
      << " task baselines were measured before the templates' assembly";
  const std::string log = learner.Log();
  const size_t templates = log.find("event=network_assembled");
  ASSERT_NE(templates, std::string::npos) << log;
  EXPECT_NE(log.find("which=templates", templates), std::string::npos) << log;
  EXPECT_LT(templates, log.find("what=\"task ")) << "before the first round of search:\n" << log;
  EXPECT_EQ(tasks_measured.size(), pipelines.size() - 2) << "every distinct task had a round";

  // farmctl status: the task table, every task with its weight, FLOPs, the farm's best,
  // libtorch's time and layout, the ratio and the GFLOP/s.
  std::ostringstream out, err;
  ASSERT_EQ(RunFarmctl({"--coordinator", coordinator.endpoint(), "status", id}, {out, err, false}),
            0)
      << err.str();
  const std::string text = out.str();
  const size_t table = text.find("the distinct tasks");
  ASSERT_NE(table, std::string::npos) << text;
  const std::string tasks = text.substr(table);
  EXPECT_NE(tasks.find("VS FASTEST"), std::string::npos) << tasks;
  EXPECT_NE(tasks.find("ONNXRUNTIME"), std::string::npos) << tasks;
  for (const PipelineSpec& spec :
       std::vector<PipelineSpec>(pipelines.begin() + 2, pipelines.end())) {
    std::istringstream lines(tasks);
    std::string row;
    for (std::string line; std::getline(lines, line);) {
      if (line.rfind("  " + spec.name() + " ", 0) == 0) row = line;  // tables are indented
    }
    ASSERT_FALSE(row.empty()) << spec.name() << " in\n" << tasks;
    EXPECT_NE(row.find("FLOP"), std::string::npos) << row;
    EXPECT_NE(row.find("x "), std::string::npos) << "the fastest contender / farm: " << row;
    EXPECT_TRUE(row.find("channels_last") != std::string::npos ||
                row.find("nchw") != std::string::npos)
        << row;
  }
  EXPECT_NE(tasks.find("all tasks"), std::string::npos) << tasks;

  // farmctl report: the same table in the page.
  ScratchDir report_dir;
  const std::string page = report_dir.Sub("report.html");
  ASSERT_EQ(RunFarmctl({"--coordinator", coordinator.endpoint(), "report", id, "--output", page},
                       {out, err, false}),
            0)
      << err.str();
  StatusOr<std::string> html = ReadFileBytes(page);
  ASSERT_TRUE(html.ok()) << html.status().message();
  const size_t html_table = html->find("<table id=\"tasks\">");
  ASSERT_NE(html_table, std::string::npos);
  const std::string html_tasks =
      html->substr(html_table, html->find("</table>", html_table) - html_table);
  for (const PipelineSpec& spec :
       std::vector<PipelineSpec>(pipelines.begin() + 2, pipelines.end())) {
    EXPECT_NE(html_tasks.find("<td>" + spec.name() + "</td>"), std::string::npos) << html_tasks;
  }
  if (!onnxruntime_unavailable.empty()) {
    GTEST_SKIP() << "ONNX Runtime is not installed here (ops/setup.sh installs it), so its "
                    "part of the campaign was not checked: "
                 << onnxruntime_unavailable;
  }
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

// A campaign of fused tasks: each fused task's templates (its cuts) are measured, and the
// network assembled from them (its first template: producers in the strips) is checked
// against the network's reference outputs and timed.
TEST(NetworkCampaignTest, FusedTasksAreTunedAndAssembled) {
  NetworkFarm farm;
  ASSERT_FALSE(farm.coordinator.endpoint().empty()) << farm.coordinator.Log();
  const ChildProcess& learner = farm.learner;
  TestClient& client = farm.client;
  StatusOr<CampaignConfig> config = ParseCampaignYaml(kFusedCampaign, "fused.yaml");
  ASSERT_TRUE(config.ok()) << config.status().message();
  EXPECT_EQ(config->fusion(), FUSION_BLOCKS) << "a network campaign fuses by default";
  const std::vector<PipelineSpec> pipelines = NetworkPipelines(*config);
  // The templates of the space of the worker's vector width, at the campaign's threads.
  const HostFingerprint host = testing_support::WorkerHost(client);
  ASSERT_FALSE(host.cpu_model().empty()) << farm.worker.Log();
  const TargetParams target = TargetOf(host, config->measurement().threads());
  std::map<std::string, size_t> templates_of;  // fused task id -> its templates
  for (size_t i = 2; i < pipelines.size(); ++i) {
    StatusOr<PipelineGraph> task = PipelineGraph::Build(pipelines[i]);
    ASSERT_TRUE(task.ok());
    if (TaskKind(*task).rfind("fused", 0) != 0) continue;
    templates_of[PipelineId(*task)] = TemplateSchedules(ScheduleSpace(*task, target)).size();
  }
  ASSERT_EQ(templates_of.size(), 2u);
  std::optional<ClientReply> reply = Submit(client, pipelines, kFusedCampaign);
  ASSERT_TRUE(reply && reply->code() == CLIENT_OK) << (reply ? reply->error() : "no reply");
  const std::string id = reply->submitted().id();
  ASSERT_TRUE(farm.WaitUntilDone(id, 300)) << "learner log:\n" << learner.Log();
  std::map<std::string, size_t> templates_measured;
  int assembled_ok = 0;
  for (const StoredMeasurementRecord& row : client.Export(id)) {
    const Measurement& m = row.measurement();
    if (m.candidate().origin() == kTemplateOrigin &&
        templates_of.count(m.candidate().pipeline_id())) {
      EXPECT_EQ(m.status(), OK) << m.error();
      ++templates_measured[m.candidate().pipeline_id()];
    }
    if (m.candidate().origin() == kAssembledOrigin) {
      EXPECT_EQ(m.status(), OK) << m.error();
      assembled_ok += m.status() == OK;
    }
  }
  EXPECT_EQ(templates_measured, templates_of) << "every cut of every fused task measured";
  EXPECT_GE(assembled_ok, 1) << "learner log:\n" << learner.Log();
}

}  // namespace
}  // namespace schedfarm
