// The views of farmctl rendered from hand-made replies: the status table with the best
// runtime per pipeline and the speedups over the baselines, a network campaign's task
// table, the watch view (progress bar,
// throughput, workers by state, failures by class), the workers table, the best
// schedules as Halide source, and the one-line JSON.
#include "farmctl/render.h"

#include <google/protobuf/util/json_util.h>
#include <google/protobuf/util/message_differencer.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <iterator>
#include <sstream>

#include "campaign/campaign_yaml.h"
#include "farmctl/task_table.h"
#include "pipeline/graph.h"
#include "pipeline/spec.h"
#include "pipeline/zoo.h"
#include "protocol/state_names.h"
#include "scheduler/schedule_source.h"
#include "scheduler/schedule_space.h"

namespace schedfarm {
namespace {

bool Contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

// The line of `text` that contains `part` ("" when none).
std::string LineWith(const std::string& text, const std::string& part) {
  std::istringstream lines(text);
  for (std::string line; std::getline(lines, line);) {
    if (Contains(line, part)) return line;
  }
  return "";
}

PipelineProgress Progress(const std::string& id, const std::string& name, int64_t measured,
                          double best, std::map<std::string, double> baselines) {
  PipelineProgress p;
  p.set_pipeline_id(id);
  p.set_name(name);
  p.set_measured(measured);
  p.set_best_seconds(best);
  p.set_best_origin(best > 0 ? "random" : "");
  p.set_farm_best_seconds(best);
  p.set_farm_best_origin(best > 0 ? "random" : "");
  for (const auto& [name, seconds] : baselines) (*p.mutable_baseline_seconds())[name] = seconds;
  return p;
}

// Campaign "c-1" (quickstart, running, 12 of 40 finished, wall time 10 minutes) with two
// pipelines, and a done campaign "c-0" with none; 2 busy, 1 idle and 1 dead worker.
StatusReply SampleStatus() {
  StatusReply reply;
  CampaignStatus* running = reply.add_campaigns();
  Campaign* c = running->mutable_campaign();
  c->set_id("c-1");
  c->set_name("quickstart");
  c->set_state(CAMPAIGN_RUNNING);
  c->set_budget(40);
  c->set_running_seconds(125);
  CampaignConfig config;
  config.mutable_budget()->set_benchmarks(40);
  config.mutable_budget()->set_wall_time_seconds(600);
  c->set_config_json(CampaignConfigToJson(config));
  CampaignCounters* n = c->mutable_counters();
  n->set_finished(12);
  n->set_measured(10);
  n->set_failed(1);
  n->set_quarantined(1);
  n->set_queued(5);
  n->set_leased(3);
  n->set_results(15);
  running->set_results_per_second(0.5);
  *running->add_pipelines() = Progress("0123456789abcdef0123456789abcdef", "vgg_block", 4, 0.00123,
                                       {{"adams2019", 0.0025}, {"li2018", 0.00123}});
  *running->add_pipelines() =
      Progress("fedcba9876543210fedcba9876543210", "squeezenet_fire", 0, 0, {{"adams2019", 0.004}});
  (*running->mutable_failures_by_status())["CRASH"] = 3;
  (*running->mutable_failures_by_status())["COMPILE_ERROR"] = 1;
  (*running->mutable_failures_by_status())["OK"] = 10;
  CampaignStatus* done = reply.add_campaigns();
  done->mutable_campaign()->set_id("c-0");
  done->mutable_campaign()->set_name("old");
  done->mutable_campaign()->set_state(CAMPAIGN_DONE);
  done->mutable_campaign()->set_budget(5);
  done->mutable_campaign()->mutable_counters()->set_finished(5);
  (*reply.mutable_workers_by_state())["WORKER_BUSY"] = 2;
  (*reply.mutable_workers_by_state())["WORKER_IDLE"] = 1;
  (*reply.mutable_workers_by_state())["WORKER_LEFT"] = 3;
  (*reply.mutable_workers_by_state())["WORKER_DEAD"] = 1;
  return reply;
}

TEST(FarmctlRenderTest, Durations) {
  EXPECT_EQ(FormatDuration(0), "-");
  EXPECT_EQ(FormatDuration(-1), "-");
  EXPECT_EQ(FormatDuration(850e-9), "850 ns");
  EXPECT_EQ(FormatDuration(12.3e-6), "12.3 us");
  EXPECT_EQ(FormatDuration(0.00456), "4.56 ms");
  EXPECT_EQ(FormatDuration(1.23), "1.23 s");
  EXPECT_EQ(FormatElapsed(12.7), "12s");
  EXPECT_EQ(FormatElapsed(185), "3m05s");
  EXPECT_EQ(FormatElapsed(7440), "2h04m");
  EXPECT_EQ(CampaignStateText(CAMPAIGN_PAUSED), "paused");
  EXPECT_EQ(WorkerStateText(WORKER_DRAINING), "draining");
  EXPECT_EQ(WorkerStateText(WORKER_LEFT), "left");
}

TEST(FarmctlRenderTest, StatusShowsBudgetBestAndSpeedups) {
  const std::string text = RenderStatus(SampleStatus());
  const std::string row = LineWith(text, "c-1 ");
  EXPECT_TRUE(Contains(row, "quickstart")) << text;
  EXPECT_TRUE(Contains(row, "running")) << row;
  EXPECT_TRUE(Contains(row, "12/40")) << row;
  EXPECT_TRUE(Contains(row, "30%")) << row;
  EXPECT_TRUE(Contains(row, "0.50")) << row;
  EXPECT_TRUE(Contains(row, "2m05s")) << row;
  const std::string done = LineWith(text, "c-0 ");
  EXPECT_TRUE(Contains(done, "done")) << text;
  EXPECT_TRUE(Contains(done, "5/5")) << done;
  EXPECT_TRUE(Contains(done, "100%")) << done;
  EXPECT_TRUE(Contains(text, "workers: 2 busy, 1 idle, 0 draining, 3 left, 1 dead")) << text;
  // Best 1.23 ms against adams2019 at 2.5 ms (2.03x) and li2018 at the same time (1.00x).
  const std::string vgg = LineWith(text, "vgg_block");
  EXPECT_TRUE(Contains(vgg, "0123456789ab")) << vgg;
  EXPECT_FALSE(Contains(vgg, "0123456789abc")) << "ids are shortened: " << vgg;
  EXPECT_TRUE(Contains(vgg, "1.23 ms")) << vgg;
  EXPECT_TRUE(Contains(vgg, "2.5 ms (2.03x)")) << vgg;
  EXPECT_TRUE(Contains(vgg, "1.23 ms (1.00x)")) << vgg;
  EXPECT_EQ(vgg.substr(vgg.size() - 12), "1.00x li2018") << "the fastest contender: " << vgg;
  // Nothing measured yet: no best, no speedup, and the missing baseline is "-".
  const std::string fire = LineWith(text, "squeezenet_fire");
  EXPECT_TRUE(Contains(fire, "4 ms")) << fire;
  EXPECT_FALSE(Contains(fire, "x)")) << fire;
  const std::string header = LineWith(text, "PIPELINE");
  EXPECT_LT(header.find("adams2019"), header.find("li2018")) << header;
  EXPECT_LT(header.find("li2018"), header.find("VS FASTEST")) << header;
}

// A baseline faster than every schedule of the farm is a contender, never the farm's
// best: the farm's best and its origin stay the farm's, and the farm's ratio to the
// fastest contender says it is behind.
TEST(FarmctlRenderTest, AFasterBaselineIsTheFastestContenderNotTheFarmsBest) {
  StatusReply reply = SampleStatus();
  PipelineProgress& vgg = *reply.mutable_campaigns(0)->mutable_pipelines(0);
  (*vgg.mutable_baseline_seconds())["onnxruntime"] = 0.000615;
  vgg.set_best_seconds(0.000615);
  vgg.set_best_origin("onnxruntime");
  const std::string row = LineWith(RenderStatus(reply), "vgg_block");
  EXPECT_TRUE(Contains(row, " 1.23 ms ")) << row;
  EXPECT_TRUE(Contains(row, " random ")) << row;
  EXPECT_TRUE(Contains(row, "615 us (0.50x)")) << row;
  EXPECT_EQ(row.substr(row.size() - 17), "0.50x onnxruntime") << row;
  EXPECT_EQ(FastestContender(vgg).name, "onnxruntime");
  EXPECT_EQ(VersusFastest(FastestContender(vgg), 0), "-");
}

// The best's GFLOP/s (the pipeline's FLOPs over its runtime) and their share of the
// measuring hosts' peak; "-" for what is unknown: no peak, or nothing measured.
TEST(FarmctlRenderTest, StatusShowsGflopsAndTheShareOfThePeak) {
  StatusReply reply = SampleStatus();
  CampaignStatus& running = *reply.mutable_campaigns(0);
  PipelineProgress& vgg = *running.mutable_pipelines(0);
  vgg.set_flops(41.5e9 * vgg.best_seconds());    // 41.5 GFLOP/s
  vgg.set_farm_best_peak_gflops(132.1);          // 31.4% of it
  vgg.set_bytes(12.5e9 * vgg.best_seconds());    // 12.5 GB/s
  vgg.set_farm_best_bandwidth_gbps(50);          // 25% of it
  running.mutable_pipelines(1)->set_flops(1e9);  // nothing measured yet
  PipelineProgress no_peak = Progress("aaaa5555bbbb6666", "mlp", 2, 0.002, {{"adams2019", 0.003}});
  no_peak.set_flops(1e8);  // 50 GFLOP/s, a host without a peak at the campaign's threads
  *running.add_pipelines() = no_peak;
  const std::string text = RenderStatus(reply);
  const std::string header = LineWith(text, "PIPELINE");
  EXPECT_LT(header.find("BEST"), header.find("GFLOP/S")) << header;
  EXPECT_LT(header.find("GFLOP/S"), header.find("PEAK")) << header;
  EXPECT_LT(header.find("PEAK"), header.find("GB/S")) << header;
  EXPECT_LT(header.find("GB/S"), header.find("BANDWIDTH")) << header;
  const std::string row = LineWith(text, "vgg_block");
  EXPECT_TRUE(Contains(row, " 41.5 ")) << text;
  EXPECT_TRUE(Contains(row, " 31.4% ")) << text;
  EXPECT_TRUE(Contains(row, " 12.5 ")) << text;
  EXPECT_TRUE(Contains(row, " 25% ")) << text;
  const auto cells_of = [&](const std::string& name) {
    std::istringstream line(LineWith(text, name));
    return std::vector<std::string>{std::istream_iterator<std::string>(line),
                                    std::istream_iterator<std::string>()};
  };
  // mlp, id, 2 measured, "2 ms", then 50 GFLOP/s and no share, no bytes: no GB/s.
  const std::vector<std::string> mlp = cells_of("mlp");
  ASSERT_GE(mlp.size(), 9u) << text;
  EXPECT_EQ(mlp[5], "50") << text;
  EXPECT_EQ(mlp[6], "-") << "no share without a peak: " << text;
  EXPECT_EQ(mlp[7], "-") << "no GB/s without bytes: " << text;
  EXPECT_EQ(mlp[8], "-") << text;
  // squeezenet_fire, id, 0 measured, then "-" for the best, its GFLOP/s, GB/s, their
  // shares and origin.
  const std::vector<std::string> fire = cells_of("squeezenet_fire");
  ASSERT_GE(fire.size(), 9u) << text;
  EXPECT_EQ(std::vector<std::string>(fire.begin() + 3, fire.begin() + 9),
            std::vector<std::string>(6, "-"));
  EXPECT_TRUE(Contains(LineWith(RenderWatch(reply), "vgg_block"), " 31.4% "));

  EXPECT_EQ(FormatRate(std::nullopt), "-");
  EXPECT_EQ(FormatRate(0.0512), "0.0512");
  EXPECT_EQ(FormatRate(1050.4), "1050");
  EXPECT_EQ(FormatShare(std::nullopt), "-");
  EXPECT_EQ(FormatShare(0.0052), "0.52%");
  EXPECT_EQ(FormatShare(1.5), "150%");
}

TEST(FarmctlRenderTest, StatusLimitsPipelinesPerCampaign) {
  const std::string text = RenderStatus(SampleStatus(), 1);
  EXPECT_TRUE(Contains(text, "vgg_block"));
  EXPECT_FALSE(Contains(text, "squeezenet_fire")) << text;
  EXPECT_TRUE(Contains(text, "1 more pipelines (farmctl status c-1)")) << text;
  EXPECT_TRUE(Contains(RenderStatus(StatusReply()), "no campaigns"));
}

// A network campaign: the network, its assembly, then two distinct tasks. Task A (weight
// 2, 20 MFLOP) has the farm's best at 1 ms and libtorch at 2 ms channels-last (3 ms
// NCHW); task B (weight 1, 6 MFLOP) 2 ms and no libtorch result yet.
StatusReply NetworkStatus() {
  StatusReply reply;
  CampaignStatus* status = reply.add_campaigns();
  Campaign* c = status->mutable_campaign();
  c->set_id("n-1");
  c->set_name("net");
  c->set_state(CAMPAIGN_RUNNING);
  CampaignConfig config;
  config.mutable_network()->set_yaml_path("net.yaml");
  config.add_baselines("libtorch");
  config.add_baselines("onnxruntime");
  c->set_config_json(CampaignConfigToJson(config));
  *status->add_pipelines() =
      Progress("net0", "net", 2, 0.01, {{"libtorch", 0.003}, {"onnxruntime", 0.002}});
  *status->add_pipelines() = Progress("asm0", "net.assembled", 1, 0.005, {});
  PipelineProgress a = Progress("taska", "net.task0", 5, 0.0009, {{"libtorch", 0.002}});
  a.set_best_origin("libtorch");
  a.set_farm_best_seconds(0.001);
  a.set_task_weight(2);
  a.set_flops(2e7);
  a.set_farm_best_peak_gflops(100);
  a.set_bytes(8e6);
  a.set_farm_best_bandwidth_gbps(32);
  a.set_kind("conv");
  (*a.mutable_libtorch_layout_seconds())["channels_last"] = 0.002;
  (*a.mutable_libtorch_layout_seconds())["nchw"] = 0.003;
  (*a.mutable_libtorch_layout_seconds())["frozen"] = 0.004;
  *status->add_pipelines() = a;
  PipelineProgress b = Progress("taskb", "net.task1", 3, 0.002, {});
  b.set_farm_best_seconds(0.002);
  b.set_task_weight(1);
  b.set_flops(6e6);
  b.set_bytes(4e6);
  *status->add_pipelines() = b;
  return reply;
}

// The network end to end: every baseline with the farm's speedup over it, the fastest
// contender named, and the farm's best (the assembled network) against it.
TEST(FarmctlRenderTest, StatusShowsTheNetworkEndToEndAgainstTheFastestContender) {
  const std::string status = RenderStatus(NetworkStatus());
  const size_t table = status.find("campaign n-1 (net): the network end to end (2 distinct tasks)");
  ASSERT_NE(table, std::string::npos) << status;
  const std::string text = status.substr(table);
  EXPECT_TRUE(Contains(LineWith(text, "  reference "), "no result")) << text;
  const std::string libtorch = LineWith(text, "  libtorch ");
  EXPECT_TRUE(Contains(libtorch, "3 ms")) << libtorch;
  EXPECT_TRUE(Contains(libtorch, "0.60x")) << libtorch;
  const std::string onnxruntime = LineWith(text, "  onnxruntime (fastest contender) ");
  EXPECT_TRUE(Contains(onnxruntime, "2 ms")) << text;
  EXPECT_TRUE(Contains(onnxruntime, "0.40x")) << onnxruntime;
  EXPECT_TRUE(Contains(LineWith(text, "farm's best (assembled)"), "5 ms")) << text;
  EXPECT_TRUE(Contains(text, "the farm's best against the fastest contender: 0.40x onnxruntime"))
      << text;
}

TEST(FarmctlRenderTest, StatusShowsANetworkCampaignsTaskTable) {
  const std::string text = RenderStatus(NetworkStatus());
  ASSERT_TRUE(Contains(text, "campaign n-1 (net): the distinct tasks")) << text;
  const std::string header = LineWith(text.substr(text.find("the distinct tasks")), "VS FASTEST");
  for (const char* column : {"TASK", "KIND", "WEIGHT", "FLOPS", "FARM'S BEST", "LIBTORCH", "LAYOUT",
                             "ONNXRUNTIME", "GFLOP/S", "PEAK", "GB/S", "BANDWIDTH"}) {
    EXPECT_TRUE(Contains(header, column)) << header;
  }
  const std::string task_a = LineWith(text.substr(text.find("the distinct tasks")), "net.task0");
  EXPECT_TRUE(Contains(task_a, " 2 ")) << task_a;
  EXPECT_TRUE(Contains(task_a, "20 MFLOP")) << task_a;
  EXPECT_TRUE(Contains(task_a, "1 ms")) << "the farm's own best, not libtorch's: " << task_a;
  EXPECT_TRUE(Contains(task_a, "channels_last (nchw 3 ms, frozen 4 ms)")) << task_a;
  EXPECT_TRUE(Contains(task_a, "2.00x libtorch")) << task_a;
  EXPECT_TRUE(Contains(task_a, "net.task0  conv ")) << "its kind beside it: " << task_a;
  EXPECT_TRUE(Contains(task_a, " 20 ")) << "20 MFLOP in 1 ms: " << task_a;
  EXPECT_TRUE(Contains(task_a, " 20% ")) << "of a 100 GFLOP/s peak: " << task_a;
  EXPECT_TRUE(Contains(task_a, " 8 ")) << "8 MB in 1 ms: " << task_a;
  EXPECT_EQ(task_a.substr(task_a.size() - 4), " 25%") << "of a 32 GB/s bandwidth: " << task_a;
  const std::string task_b = LineWith(text.substr(text.find("the distinct tasks")), "net.task1");
  EXPECT_TRUE(Contains(task_b, "6 MFLOP")) << task_b;
  EXPECT_FALSE(Contains(task_b, "x ")) << "no contender, no ratio: " << task_b;
  EXPECT_TRUE(Contains(task_b, "net.task1  -")) << "no kind: " << task_b;
  EXPECT_TRUE(Contains(task_b, " 2 ")) << "4 MB in 2 ms: " << task_b;
  EXPECT_EQ(task_b.back(), '-') << "no bandwidth, no share: " << task_b;
  // All tasks: weight 3, 46 MFLOP and 20 MB, 2 x 1 ms + 2 ms = 4 ms, 11.5 GFLOP/s and
  // 5 GB/s; libtorch's sum waits for task B.
  const std::string all = LineWith(text, "all tasks");
  EXPECT_TRUE(Contains(all, "46 MFLOP")) << all;
  EXPECT_TRUE(Contains(all, "4 ms")) << all;
  EXPECT_TRUE(Contains(all, " 11.5 ")) << all;
  EXPECT_TRUE(Contains(all, " 11.5% ")) << "the hosts' peak: " << all;
  EXPECT_TRUE(Contains(all, " 5 ")) << all;
  EXPECT_EQ(all.substr(all.size() - 6), " 15.6%") << "the hosts' bandwidth: " << all;

  const std::vector<TaskRow> rows = NetworkTaskRows(NetworkStatus().campaigns(0));
  ASSERT_EQ(rows.size(), 3u);
  EXPECT_EQ(rows[0].libtorch_layout, "channels_last");
  const std::vector<std::pair<std::string, double>> others = {{"nchw", 0.003}, {"frozen", 0.004}};
  EXPECT_EQ(rows[0].other_layouts, others);
  EXPECT_DOUBLE_EQ(rows[0].BaselineSeconds("libtorch"), 0.002);
  EXPECT_EQ(FastestContender(rows[0].baseline_seconds).name, "libtorch");
  EXPECT_DOUBLE_EQ(rows[1].FarmThroughput().gflops.value_or(0), 3.0);
  EXPECT_EQ(rows[2].BaselineSeconds("libtorch"), 0) << "task B has none: no sum";
  EXPECT_TRUE(NetworkTaskRows(SampleStatus().campaigns(0)).empty()) << "not a network campaign";

  const std::string limited = RenderStatus(NetworkStatus(), 1);
  EXPECT_TRUE(Contains(limited, "1 more tasks (farmctl status n-1)")) << limited;
  EXPECT_TRUE(Contains(limited, "all tasks")) << limited;
}

TEST(FarmctlRenderTest, WatchShowsProgressThroughputWorkersAndFailures) {
  const std::string text = RenderWatch(SampleStatus(), 20);
  EXPECT_TRUE(Contains(LineWith(text, "campaign c-1"), "running  run time 2m05s")) << text;
  // 12 of 40 is 30%, 2m05s of 10m 21%: the nearer end, 6 of 20 cells.
  EXPECT_TRUE(Contains(text, "[######--------------]  12/40 benchmarks, 2m05s/10m00s (30%)"))
      << text;
  EXPECT_TRUE(Contains(text, "0.50 results/s")) << text;
  EXPECT_TRUE(Contains(text, "queued 5  leased 3")) << text;
  EXPECT_TRUE(Contains(text, "workers: 2 busy, 1 idle, 0 draining, 3 left, 1 dead")) << text;
  EXPECT_TRUE(Contains(text, "failures: COMPILE_ERROR 1, CRASH 3\n")) << text;
  EXPECT_TRUE(Contains(LineWith(text, "vgg_block"), "2.5 ms (2.03x)")) << text;
  EXPECT_FALSE(Contains(text, "c-0")) << "only the first campaign is watched";
}

// A campaign bounded by its wall time only: the benchmarks without a limit, the run
// time against the wall time, and the bar and share by time.
TEST(FarmctlRenderTest, ATimeBudgetShowsTheTimeUsedAndNoBenchmarkLimit) {
  StatusReply reply = SampleStatus();
  Campaign* c = reply.mutable_campaigns(0)->mutable_campaign();
  CampaignConfig config;
  config.mutable_budget()->set_wall_time_seconds(1800);
  c->set_config_json(CampaignConfigToJson(config));
  c->set_budget(1000000000);
  c->mutable_counters()->set_finished(325);
  c->set_running_seconds(725);
  const std::string watch = RenderWatch(reply, 20);
  // 12m05s of 30m is 40%: 8 of 20 cells.
  EXPECT_TRUE(Contains(watch, "[########------------]  325 benchmarks, 12m05s/30m00s (40%)"))
      << watch;
  EXPECT_FALSE(Contains(watch, "1000000000")) << watch;
  const std::string row = LineWith(RenderStatus(reply), "c-1 ");
  EXPECT_TRUE(Contains(row, "325, 12m05s/30m00s")) << row;
  EXPECT_TRUE(Contains(row, "40%")) << row;
  EXPECT_EQ(RenderCampaignLine(*c),
            "campaign c-1 (quickstart): running, 325 benchmarks, 12m05s/30m00s, 0 pipelines\n");
}

TEST(FarmctlRenderTest, WatchBarIsFullAtTheBudgetAndNeverOverflows) {
  StatusReply reply = SampleStatus();
  reply.mutable_campaigns(0)->mutable_campaign()->mutable_counters()->set_finished(45);
  reply.mutable_campaigns(0)->clear_failures_by_status();
  const std::string text = RenderWatch(reply, 10);
  EXPECT_TRUE(Contains(text, "[##########]  45/40 benchmarks")) << text;
  EXPECT_TRUE(Contains(text, "failures: none")) << text;
}

TEST(FarmctlRenderTest, WorkersTable) {
  WorkersReply reply;
  WorkerStatus* busy = reply.add_workers();
  busy->set_state(WORKER_BUSY);
  busy->set_credits(3);
  busy->set_leases(2);
  WorkerRecord* r = busy->mutable_record();
  r->mutable_host()->set_worker_id("w-alpha");
  r->mutable_host()->set_hostname("alpha");
  r->mutable_host()->set_cores(8);
  r->mutable_host()->set_cpu_model("Xeon Gold");
  r->mutable_host()->add_labels("bench");
  r->mutable_host()->add_labels("avx512");
  r->set_results_ok(17);
  (*r->mutable_failures_by_status())["CRASH"] = 2;
  (*r->mutable_failures_by_status())["WRONG_ANSWER"] = 1;
  r->set_last_seen_unix_ms(1'000'000 - 3'000);
  r->set_audits_agreed(4);
  r->set_audits_deviated(1);
  WorkerStatus* dead = reply.add_workers();
  dead->set_state(WORKER_DEAD);
  dead->mutable_record()->mutable_host()->set_worker_id("w-beta");
  WorkerStatus* left = reply.add_workers();
  left->set_state(WORKER_LEFT);
  left->mutable_record()->mutable_host()->set_worker_id("w-gamma");
  const std::string text = RenderWorkers(reply, 1'000'000);
  EXPECT_TRUE(Contains(text, "3 workers: 1 busy, 0 idle, 0 draining, 1 left, 1 dead")) << text;
  EXPECT_TRUE(Contains(LineWith(text, "w-gamma"), " left ")) << text;
  std::istringstream alpha(LineWith(text, "w-alpha"));
  const std::vector<std::string> cells{std::istream_iterator<std::string>(alpha),
                                       std::istream_iterator<std::string>()};
  // WORKER HOST STATE CORES CREDITS LEASES OK FAILED AUDITS TRUST LAST SEEN LABELS CPU;
  // 3 = 2 + 1 failures.
  EXPECT_EQ(cells, (std::vector<std::string>{"w-alpha", "alpha", "busy", "8", "3", "2", "17", "3",
                                             "4/1", "ok", "3s", "ago", "bench,avx512", "Xeon",
                                             "Gold"}))
      << text;
  const std::string beta = LineWith(text, "w-beta");
  EXPECT_TRUE(Contains(beta, "dead")) << beta;
  EXPECT_TRUE(Contains(beta, "never")) << beta;
  EXPECT_FALSE(Contains(text, "flagged")) << text;
  dead->mutable_record()->set_flagged(true);
  dead->mutable_record()->set_flag_reason("deviated from other hosts in 3 of 3 audits");
  const std::string flagged = RenderWorkers(reply, 1'000'000);
  EXPECT_TRUE(Contains(LineWith(flagged, "w-beta"), "FLAGGED")) << flagged;
  EXPECT_TRUE(Contains(flagged, "flagged w-beta: deviated from other hosts in 3 of 3 audits"))
      << flagged;
  EXPECT_TRUE(Contains(flagged, "farmctl workers --clear WORKER")) << flagged;
  EXPECT_TRUE(Contains(RenderWorkers(WorkersReply(), 0), "0 workers"));
}

TEST(FarmctlRenderTest, CampaignLine) {
  Campaign c;
  c.set_id("c-7");
  c.set_name("zoo_sizes");
  c.set_state(CAMPAIGN_PAUSED);
  c.set_budget(2000);
  c.mutable_counters()->set_finished(31);
  c.add_pipeline_ids("a");
  c.add_pipeline_ids("b");
  EXPECT_EQ(RenderCampaignLine(c),
            "campaign c-7 (zoo_sizes): paused, 31/2000 benchmarks, 2 pipelines\n");
}

// A measurement of `spec` with `schedule` and a median runtime.
StoredMeasurementRecord Record(uint64_t seq, const std::string& pipeline_id, ScheduleSpec schedule,
                               const std::string& origin, double median) {
  StoredMeasurementRecord record;
  record.set_seq(seq);
  Measurement* m = record.mutable_measurement();
  m->set_status(OK);
  m->mutable_stats()->set_median_seconds(median);
  m->mutable_stats()->set_min_seconds(median * 0.9);
  m->add_samples_seconds(median);
  m->mutable_host()->set_worker_id("w-1");
  Candidate* c = m->mutable_candidate();
  c->set_pipeline_id(pipeline_id);
  c->set_origin(origin);
  c->set_schedule_hash("hash" + std::to_string(seq));
  *c->mutable_schedule() = std::move(schedule);
  return record;
}

TEST(FarmctlRenderTest, BestPrintsHalideSourceAndBaselineSource) {
  ZooOptions small;
  small.spatial_scale = 0.25;
  small.channel_scale = 0.25;
  StatusOr<PipelineSpec> spec = MakeZooBlock("vgg_block", small);
  ASSERT_TRUE(spec.ok()) << spec.status().ToString();
  StatusOr<PipelineGraph> graph = PipelineGraph::Build(*spec);
  ASSERT_TRUE(graph.ok());
  const std::string id = PipelineId(*graph);
  const ScheduleSpec schedule = ScheduleSpace(*graph).RandomSchedule(7);
  StatusOr<std::string> expected = ScheduleSource(*graph, schedule);
  ASSERT_TRUE(expected.ok()) << expected.status().ToString();

  BestReply reply;
  *reply.add_pipelines() = *spec;
  *reply.add_best() = Record(4, id, schedule, "random", 0.002);
  StoredMeasurementRecord baseline = Record(9, id, ScheduleSpec(), "adams2019", 0.003);
  baseline.mutable_measurement()->set_schedule_source("// the autoscheduler's own source\n");
  *reply.add_best() = baseline;
  StoredMeasurementRecord again = Record(12, id, schedule, "remeasure", 0.0031);
  again.mutable_measurement()->mutable_candidate()->set_schedule_hash("hash4");
  again.mutable_measurement()->mutable_candidate()->set_repeat(1);
  *reply.add_best() = again;
  StatusOr<std::string> text = RenderBest(reply);
  ASSERT_TRUE(text.ok()) << text.status().ToString();
  EXPECT_TRUE(Contains(*text, "// pipeline " + spec->name() + " (" + id + ")")) << *text;
  EXPECT_TRUE(Contains(LineWith(*text, "// #3"), "schedule hash4 (measured again: repeat 1)"))
      << *text;
  EXPECT_FALSE(Contains(LineWith(*text, "// #1"), "measured again")) << *text;
  const std::string first = LineWith(*text, "// #1");
  EXPECT_TRUE(Contains(first, "median 2 ms")) << first;
  EXPECT_TRUE(Contains(first, "origin random")) << first;
  EXPECT_TRUE(Contains(first, "worker w-1")) << first;
  EXPECT_TRUE(Contains(*text, *expected)) << *text;
  EXPECT_TRUE(Contains(LineWith(*text, "// #2"), "origin adams2019")) << *text;
  EXPECT_TRUE(Contains(*text, "// the autoscheduler's own source\n")) << *text;
  EXPECT_LT(text->find(*expected), text->find("// #2"));
}

TEST(FarmctlRenderTest, BestNamesLibtorchsLayouts) {
  BestReply reply;
  ZooOptions small;
  small.spatial_scale = 0.25;
  small.channel_scale = 0.25;
  StatusOr<PipelineSpec> spec = MakeZooBlock("vgg_block", small);
  ASSERT_TRUE(spec.ok());
  StatusOr<PipelineGraph> graph = PipelineGraph::Build(*spec);
  ASSERT_TRUE(graph.ok());
  *reply.add_pipelines() = *spec;
  StoredMeasurementRecord libtorch =
      Record(3, PipelineId(*graph), ScheduleSpec(), "libtorch", 0.001);
  Measurement& m = *libtorch.mutable_measurement();
  m.set_torch_layout("channels_last");
  for (const auto& [layout, seconds] :
       {std::pair{"nchw", 0.002}, std::pair{"channels_last", 0.001}, std::pair{"frozen", 0.0015}}) {
    TorchLayoutRun* run = m.add_torch_layouts();
    run->set_layout(layout);
    run->set_status(OK);
    run->mutable_stats()->set_median_seconds(seconds);
  }
  m.set_runtime_version("libtorch 1.13.0");
  *reply.add_best() = libtorch;
  StoredMeasurementRecord onnxruntime =
      Record(4, PipelineId(*graph), ScheduleSpec(), "onnxruntime", 0.0015);
  onnxruntime.mutable_measurement()->set_runtime_version("onnxruntime 1.30.0");
  *reply.add_best() = onnxruntime;
  StatusOr<std::string> text = RenderBest(reply);
  ASSERT_TRUE(text.ok()) << text.status().ToString();
  EXPECT_TRUE(Contains(*text,
                       "no Halide schedule (libtorch 1.13.0); layout channels_last (nchw 2 ms, "
                       "channels_last 1 ms, frozen 1.5 ms)"))
      << *text;
  EXPECT_TRUE(Contains(*text, "// #2: median 1.5 ms")) << *text;
  EXPECT_TRUE(Contains(*text,
                       "// ONNX Runtime's run of the pipeline written as an ONNX model: no "
                       "Halide schedule (onnxruntime 1.30.0)\n"))
      << *text;
}

TEST(FarmctlRenderTest, BestRefusesAMeasurementOfAnUnknownPipeline) {
  BestReply reply;
  *reply.add_best() = Record(3, "ffff", ScheduleSpec(), "random", 0.001);
  StatusOr<std::string> text = RenderBest(reply);
  ASSERT_FALSE(text.ok());
  EXPECT_TRUE(Contains(text.status().message(), "measurement 3")) << text.status().message();
  EXPECT_TRUE(Contains(text.status().message(), "ffff")) << text.status().message();
  EXPECT_EQ(*RenderBest(BestReply()), "no measured schedule yet\n");
}

TEST(FarmctlRenderTest, JsonIsOneLineAndReadsBack) {
  ClientReply reply;
  reply.set_request_id("r1");
  *reply.mutable_status() = SampleStatus();
  const std::string json = ToJsonLine(reply);
  EXPECT_EQ(json.find('\n'), std::string::npos);
  EXPECT_TRUE(Contains(json, "\"request_id\":\"r1\"")) << json;
  EXPECT_TRUE(Contains(json, "\"results_per_second\":0.5")) << json;
  ClientReply back;
  ASSERT_TRUE(google::protobuf::util::JsonStringToMessage(json, &back).ok());
  EXPECT_TRUE(google::protobuf::util::MessageDifferencer::Equals(back, reply));
}

}  // namespace
}  // namespace schedfarm

namespace schedfarm {
namespace {

TEST(FarmctlRenderTest, ModelEvalShowsTheNewestOfEachKindOnItsSplit) {
  ModelsReply reply;
  auto add = [&](const std::string& kind, const std::string& version, int64_t created,
                 double mape) {
    Model* model = reply.add_models();
    model->set_kind(kind);
    model->set_version(version);
    model->set_created_unix_ms(created);
    model->set_training_set_size(120);
    model->add_held_out_pipelines("aaaabbbbccccdddd");
    (*model->mutable_metrics())["mape"] = mape;
    (*model->mutable_metrics())["samples"] = 30;
  };
  add("gcn", "c-gcn-2", 300, 12.5);  // newest first, as the coordinator sends them
  add("gbt", "c-gbt-2", 290, 40.25);
  add("gcn", "c-gcn-1", 100, 99.0);
  const std::string text = RenderModelEval(reply);
  EXPECT_NE(text.find("held-out pipelines: aaaabbbbcccc"), std::string::npos) << text;
  EXPECT_NE(text.find("gcn (c-gcn-2, trained on 120)"), std::string::npos) << text;
  EXPECT_NE(text.find("gbt (c-gbt-2, trained on 120)"), std::string::npos) << text;
  EXPECT_EQ(text.find("c-gcn-1"), std::string::npos) << "an older version is not shown";
  EXPECT_NE(text.find("12.5"), std::string::npos) << text;
  EXPECT_NE(text.find("40.2"), std::string::npos) << text;
  EXPECT_NE(RenderModelEval(ModelsReply()).find("no models yet"), std::string::npos);
}

TEST(FarmctlRenderTest, ModelListShowsEveryVersionWithItsMetrics) {
  ModelsReply reply;
  Model* newest = reply.add_models();
  newest->set_kind("gbt");
  newest->set_version("c-gbt-2");
  newest->set_created_unix_ms(1795663215681);  // 2026-11-26 03:20:15 UTC
  newest->set_training_set_size(2375);
  newest->set_held_out_size(591);
  newest->set_feature_schema_version(3);
  (*newest->mutable_metrics())["pairwise_accuracy"] = 0.625;
  (*newest->mutable_metrics())["kendall_tau"] = 0.25;
  (*newest->mutable_metrics())["top1_regret"] = 3.64;
  (*newest->mutable_metrics())["mape"] = 31.44;
  Model* older = reply.add_models();
  older->set_kind("gbt");
  older->set_version("c-gbt-1");
  const std::string text = RenderModelList(reply);
  const std::string line = LineWith(text, "c-gbt-2");
  for (const char* part : {"2026-11-26 03:20:15", "2375", "591", "0.625", "0.250", "3.64",
                           "31.4"}) {
    EXPECT_TRUE(Contains(line, part)) << part << " in " << line;
  }
  EXPECT_LT(text.find("c-gbt-2"), text.find("c-gbt-1")) << "in the reply's order, newest first";
  EXPECT_TRUE(Contains(LineWith(text, "c-gbt-1"), " - ")) << "no metrics: dashes";
  EXPECT_NE(RenderModelList(ModelsReply()).find("no models yet"), std::string::npos);
}

}  // namespace
}  // namespace schedfarm
