// farmctl against the real farm-coordinator process on a store in a scratch directory:
// submit, status (table and --json), pause, resume, cancel, watch, best, export and
// workers with their exit codes; a command that outlives a kill -9 and restart of the
// coordinator on the same store and endpoint; and a small campaign run to the end by a
// real farm-worker, its best schedules printed as Halide source, its best's GFLOP/s and
// share of the worker's measured peak in the status, and its rows exported with theirs;
// a backup taken while a worker's results are written, restored into a new coordinator.
#include <google/protobuf/struct.pb.h>
#include <google/protobuf/util/json_util.h>
#include <gtest/gtest.h>
#include <signal.h>

#include <chrono>
#include <fstream>
#include <set>
#include <sstream>
#include <thread>

#include "farmctl/cli.h"
#include "farmctl/render.h"
#include "storage/export.h"
#include "storage/throughput.h"
#include "tests/support/farm_rig.h"
#include "tests/support/scratch_dir.h"

namespace schedfarm {
namespace {

using testing_support::CoordinatorProcess;

constexpr char kCampaign[] = "configs/campaigns/quickstart.yaml";

struct CliResult {
  int code;
  std::string out;
  std::string err;
};

CliResult Farmctl(std::vector<std::string> args, const std::string& endpoint) {
  args.insert(args.end(), {"--coordinator", endpoint, "--retry-s", "20"});
  std::ostringstream out, err;
  const int code = RunFarmctl(args, {out, err, false});
  return {code, out.str(), err.str()};
}

ClientReply ParseReply(const std::string& json) {
  ClientReply reply;
  const auto status = google::protobuf::util::JsonStringToMessage(json, &reply);
  EXPECT_TRUE(status.ok()) << status.ToString() << ": " << json;
  return reply;
}

bool Contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

std::string ReadText(const std::string& path) {
  std::ifstream in(path);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

TEST(FarmctlCoordinatorTest, CampaignLifecycle) {
  ScratchDir dir;
  CoordinatorProcess coordinator(FARM_COORDINATOR_BIN, dir.Sub("store"));
  const std::string endpoint = coordinator.endpoint();
  ASSERT_FALSE(endpoint.empty()) << coordinator.Log();

  const CliResult submitted = Farmctl({"submit", kCampaign, "--json"}, endpoint);
  ASSERT_EQ(submitted.code, kExitOk) << submitted.err << coordinator.Log();
  const Campaign campaign = ParseReply(submitted.out).submitted();
  const std::string id = campaign.id();
  ASSERT_FALSE(id.empty());
  EXPECT_EQ(campaign.name(), "quickstart");
  EXPECT_EQ(campaign.budget(), 40);
  EXPECT_EQ(campaign.pipeline_ids_size(), 3);

  const CliResult status = Farmctl({"status", id, "--json"}, endpoint);
  ASSERT_EQ(status.code, kExitOk) << status.err;
  const StatusReply reply = ParseReply(status.out).status();
  ASSERT_EQ(reply.campaigns_size(), 1);
  EXPECT_EQ(reply.campaigns(0).campaign().id(), id);
  EXPECT_EQ(reply.campaigns(0).campaign().state(), CAMPAIGN_RUNNING);
  EXPECT_EQ(reply.campaigns(0).pipelines_size(), 3);

  const CliResult table = Farmctl({"status"}, endpoint);
  ASSERT_EQ(table.code, kExitOk) << table.err;
  EXPECT_TRUE(Contains(table.out, id)) << table.out;
  EXPECT_TRUE(Contains(table.out, "0/40")) << table.out;

  const CliResult paused = Farmctl({"pause", id}, endpoint);
  EXPECT_EQ(paused.code, kExitOk) << paused.err;
  EXPECT_TRUE(Contains(paused.out, "campaign " + id + " (quickstart): paused")) << paused.out;
  const CliResult again = Farmctl({"pause", id}, endpoint);
  EXPECT_EQ(again.code, kExitFailed);
  EXPECT_TRUE(Contains(again.err, "CLIENT_FAILED_PRECONDITION")) << again.err;
  const CliResult resumed = Farmctl({"resume", id}, endpoint);
  EXPECT_EQ(resumed.code, kExitOk) << resumed.err;
  EXPECT_TRUE(Contains(resumed.out, "): running")) << resumed.out;

  const CliResult unknown = Farmctl({"status", "no-such-campaign"}, endpoint);
  EXPECT_EQ(unknown.code, kExitFailed);
  EXPECT_TRUE(Contains(unknown.err, "CLIENT_NOT_FOUND")) << unknown.err;

  const CliResult best = Farmctl({"best", id}, endpoint);
  EXPECT_EQ(best.code, kExitOk) << best.err;
  EXPECT_TRUE(Contains(best.out, "no measured schedule yet")) << best.out;
  const CliResult workers = Farmctl({"workers"}, endpoint);
  EXPECT_EQ(workers.code, kExitOk) << workers.err;
  EXPECT_TRUE(Contains(workers.out, "0 workers")) << workers.out;
  const CliResult clear = Farmctl({"workers", "--clear", "nobody"}, endpoint);
  EXPECT_EQ(clear.code, kExitFailed) << clear.err;
  EXPECT_TRUE(Contains(clear.err, "no worker 'nobody'")) << clear.err;

  const CliResult cancelled = Farmctl({"cancel", id}, endpoint);
  EXPECT_EQ(cancelled.code, kExitOk) << cancelled.err;
  EXPECT_TRUE(Contains(cancelled.out, "): cancelled")) << cancelled.out;
  const CliResult watched = Farmctl({"watch", id}, endpoint);
  EXPECT_EQ(watched.code, kExitCampaignUnsuccessful) << watched.err;
  EXPECT_TRUE(Contains(watched.out, "cancelled")) << watched.out;

  // No worker ran a job: the export is the header alone.
  const std::string csv = dir.Sub("rows.csv");
  const CliResult exported = Farmctl({"export", id, "--output", csv}, endpoint);
  EXPECT_EQ(exported.code, kExitOk) << exported.err;
  std::ostringstream header;
  WriteExportHeader(ExportFormat::kCsv, header);
  EXPECT_EQ(ReadText(csv), header.str());
  const CliResult missing = Farmctl({"export", "no-such-campaign"}, endpoint);
  EXPECT_EQ(missing.code, kExitFailed);

  // A second submission is a second campaign.
  const CliResult second = Farmctl({"submit", kCampaign, "--json"}, endpoint);
  ASSERT_EQ(second.code, kExitOk) << second.err;
  EXPECT_NE(ParseReply(second.out).submitted().id(), id);
}

TEST(FarmctlCoordinatorTest, StatusOutlivesACoordinatorRestart) {
  ScratchDir dir;
  auto coordinator = std::make_unique<CoordinatorProcess>(FARM_COORDINATOR_BIN, dir.Sub("store"));
  const std::string endpoint = coordinator->endpoint();
  ASSERT_FALSE(endpoint.empty()) << coordinator->Log();
  const CliResult submitted = Farmctl({"submit", kCampaign, "--json"}, endpoint);
  ASSERT_EQ(submitted.code, kExitOk) << submitted.err;
  const std::string id = ParseReply(submitted.out).submitted().id();

  coordinator->process().Signal(SIGKILL);
  ASSERT_TRUE(coordinator->process().Wait(10000).has_value());
  std::thread restart([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(1500));
    coordinator =
        std::make_unique<CoordinatorProcess>(FARM_COORDINATOR_BIN, dir.Sub("store"), endpoint);
  });
  const CliResult status = Farmctl({"status", id, "--json"}, endpoint);
  restart.join();
  ASSERT_EQ(status.code, kExitOk) << status.err << coordinator->Log();
  const StatusReply reply = ParseReply(status.out).status();
  ASSERT_EQ(reply.campaigns_size(), 1);
  EXPECT_EQ(reply.campaigns(0).campaign().id(), id);
  EXPECT_EQ(reply.campaigns(0).campaign().state(), CAMPAIGN_RUNNING);
}

// A tiny zoo block: each candidate compiles in well under a second.
constexpr char kTinyCampaign[] = R"(name: tiny
pipelines:
  - zoo: {block: vgg_block, spatial_scale: 0.25, channel_scale: 0.25}
strategy: {name: random, settings: {seed: 5}}
budget: {benchmarks: 3}
measurement: {samples: 2, max_samples: 2, min_sample_time: 1ms, compile_timeout: 60s, run_timeout: 20s}
)";

TEST(FarmctlCoordinatorTest, WorkerResultsReachWatchBestAndExport) {
  ScratchDir dir;
  CoordinatorProcess coordinator(FARM_COORDINATOR_BIN, dir.Sub("store"));
  const std::string endpoint = coordinator.endpoint();
  ASSERT_FALSE(endpoint.empty()) << coordinator.Log();
  const std::string file = dir.Sub("tiny.yaml");
  std::ofstream(file) << kTinyCampaign;
  const CliResult submitted = Farmctl({"submit", file, "--json"}, endpoint);
  ASSERT_EQ(submitted.code, kExitOk) << submitted.err;
  const std::string id = ParseReply(submitted.out).submitted().id();
  testing_support::ChildProcess worker(FARM_WORKER_BIN,
                                       {"--coordinator", endpoint, "--compile-slots", "1"});

  const CliResult watched = Farmctl({"watch", id}, endpoint);
  ASSERT_EQ(watched.code, kExitOk) << watched.err << worker.Log();
  EXPECT_TRUE(Contains(watched.out, "3/3 benchmarks (100%)")) << watched.out;
  EXPECT_TRUE(Contains(watched.out, "running -> done")) << watched.out;

  const StatusReply status = ParseReply(Farmctl({"status", id, "--json"}, endpoint).out).status();
  ASSERT_EQ(status.campaigns_size(), 1);
  const CampaignStatus& done = status.campaigns(0);
  EXPECT_EQ(done.campaign().state(), CAMPAIGN_DONE);
  ASSERT_EQ(done.pipelines_size(), 1);
  ASSERT_GT(done.pipelines(0).best_seconds(), 0);

  const CliResult best = Farmctl({"best", id}, endpoint);
  ASSERT_EQ(best.code, kExitOk) << best.err;
  EXPECT_TRUE(Contains(best.out, "// pipeline vgg_block (" + done.pipelines(0).pipeline_id() + ")"))
      << best.out;
  EXPECT_TRUE(Contains(best.out, "// #1: median ")) << best.out;
  EXPECT_TRUE(Contains(best.out, "schedule " + done.pipelines(0).best_schedule_hash())) << best.out;
  EXPECT_TRUE(Contains(best.out, "Halide schedule of pipeline 'vgg_block'")) << best.out;
  EXPECT_TRUE(Contains(best.out, "max_pool")) << best.out;

  // The worker measured its fp32 peak and memory bandwidth when it started, at 1 thread
  // (the campaign's) among others: the best carries the pipeline's FLOPs and bytes and
  // those roofs, and the status table shows the best's GFLOP/s and GB/s and their shares
  // of them (below the peak; a small pipeline's bytes can come from the caches faster
  // than the memory's bandwidth).
  const WorkersReply workers = ParseReply(Farmctl({"workers", "--json"}, endpoint).out).workers();
  ASSERT_EQ(workers.workers_size(), 1);
  const HostFingerprint& host = workers.workers(0).record().host();
  ASSERT_TRUE(host.peak_gflops().count(1)) << worker.Log();
  const double peak = host.peak_gflops().at(1);
  ASSERT_TRUE(host.bandwidth_gbps().count(1)) << worker.Log();
  const double bandwidth = host.bandwidth_gbps().at(1);
  const PipelineProgress& vgg = done.pipelines(0);
  EXPECT_GT(vgg.flops(), 0);
  EXPECT_GT(vgg.bytes(), 0);
  EXPECT_NEAR(vgg.farm_best_peak_gflops(), peak, 1e-9 * peak);
  EXPECT_NEAR(vgg.farm_best_bandwidth_gbps(), bandwidth, 1e-9 * bandwidth);
  const Throughput best_throughput = FarmBestThroughput(vgg);
  ASSERT_TRUE(best_throughput.gflops && best_throughput.peak_share);
  EXPECT_GT(*best_throughput.peak_share, 0);
  EXPECT_LT(*best_throughput.peak_share, 1);
  ASSERT_TRUE(best_throughput.gbps && best_throughput.bandwidth_share);
  const std::string table = Farmctl({"status", id}, endpoint).out;
  std::string row;
  std::istringstream table_lines(table);
  for (std::string line; std::getline(table_lines, line);) {
    if (Contains(line, "vgg_block")) row = line;
  }
  EXPECT_TRUE(Contains(row, " " + FormatRate(best_throughput.gflops) + " ")) << table;
  EXPECT_TRUE(Contains(row, " " + FormatShare(best_throughput.peak_share) + " ")) << table;
  EXPECT_TRUE(Contains(row, " " + FormatRate(best_throughput.gbps) + " ")) << table;
  EXPECT_TRUE(Contains(row, " " + FormatShare(best_throughput.bandwidth_share) + " ")) << table;

  // One JSON line per recorded result, each of this campaign; an OK one with its GFLOP/s
  // and GB/s at its median and their shares of the worker's peak and bandwidth.
  const CliResult exported = Farmctl({"export", id, "--format", "jsonl"}, endpoint);
  ASSERT_EQ(exported.code, kExitOk) << exported.err;
  std::istringstream lines(exported.out);
  int64_t rows = 0, ok_rows = 0;
  for (std::string line; std::getline(lines, line); ++rows) {
    EXPECT_TRUE(Contains(line, "\"campaign\":\"" + id + "\"")) << line;
    google::protobuf::Struct object;
    ASSERT_TRUE(google::protobuf::util::JsonStringToMessage(line, &object).ok()) << line;
    const auto& fields = object.fields();
    if (fields.at("status").string_value() != "OK") continue;
    ++ok_rows;
    const double gflops = vgg.flops() / fields.at("median_seconds").number_value() / 1e9;
    EXPECT_EQ(fields.at("flops").number_value(), vgg.flops()) << line;
    EXPECT_NEAR(fields.at("gflops").number_value(), gflops, 1e-9 * gflops) << line;
    EXPECT_NEAR(fields.at("peak_gflops").number_value(), peak, 1e-12 * peak) << line;
    EXPECT_NEAR(fields.at("peak_share").number_value(), gflops / peak, 1e-9) << line;
    const double gbps = vgg.bytes() / fields.at("median_seconds").number_value() / 1e9;
    EXPECT_EQ(fields.at("bytes").number_value(), vgg.bytes()) << line;
    EXPECT_NEAR(fields.at("gbps").number_value(), gbps, 1e-9 * gbps) << line;
    EXPECT_NEAR(fields.at("bandwidth_share").number_value(), gbps / bandwidth, 1e-9) << line;
  }
  EXPECT_EQ(rows, done.campaign().counters().results());
  EXPECT_GE(rows, 3);
  EXPECT_GE(ok_rows, 1);
}

// The lease ids of a campaign's exported rows, one JSON line each.
std::set<std::string> ExportedLeases(const std::string& id, const std::string& endpoint) {
  const CliResult exported = Farmctl({"export", id, "--format", "jsonl"}, endpoint);
  EXPECT_EQ(exported.code, kExitOk) << exported.err;
  std::set<std::string> leases;
  std::istringstream lines(exported.out);
  for (std::string line; std::getline(lines, line);) {
    const size_t at = line.find("\"lease_id\":\"");
    EXPECT_NE(at, std::string::npos) << line;
    if (at == std::string::npos) continue;
    const size_t start = at + 12;
    EXPECT_TRUE(leases.insert(line.substr(start, line.find('"', start) - start)).second) << line;
  }
  return leases;
}

// farmctl backup while a real worker's results are being written: a coordinator started
// on the copy holds exactly the results the copy counted, each one the original's.
TEST(FarmctlCoordinatorTest, BackupWhileACampaignRunsRestoresIntoANewCoordinator) {
  ScratchDir dir;
  CoordinatorProcess coordinator(FARM_COORDINATOR_BIN, dir.Sub("store"));
  const std::string endpoint = coordinator.endpoint();
  ASSERT_FALSE(endpoint.empty()) << coordinator.Log();
  std::string yaml = kTinyCampaign;
  yaml.replace(yaml.find("benchmarks: 3"), 13, "benchmarks: 12");
  std::ofstream(dir.Sub("tiny.yaml")) << yaml;
  const CliResult submitted = Farmctl({"submit", dir.Sub("tiny.yaml"), "--json"}, endpoint);
  ASSERT_EQ(submitted.code, kExitOk) << submitted.err;
  const std::string id = ParseReply(submitted.out).submitted().id();
  testing_support::ChildProcess worker(FARM_WORKER_BIN,
                                       {"--coordinator", endpoint, "--compile-slots", "1"});
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(120);
  int64_t results = 0;
  while (results < 3 && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    const StatusReply status = ParseReply(Farmctl({"status", id, "--json"}, endpoint).out).status();
    if (status.campaigns_size() == 1) results = status.campaigns(0).campaign().counters().results();
  }
  ASSERT_GE(results, 3) << worker.Log();

  const std::string copy = dir.Sub("backup");
  const CliResult backup = Farmctl({"backup", copy, "--json"}, endpoint);
  ASSERT_EQ(backup.code, kExitOk) << backup.err << coordinator.Log();
  const BackupReply taken = ParseReply(backup.out).backup();
  EXPECT_EQ(taken.dir(), copy);
  EXPECT_EQ(taken.campaigns(), 1);
  EXPECT_GE(taken.measurements(), 3);
  std::cout << "backup of " << taken.measurements() << " measurements in " << taken.seconds()
            << " s\n";
  const CliResult again = Farmctl({"backup", copy}, endpoint);
  EXPECT_EQ(again.code, kExitFailed);
  EXPECT_TRUE(Contains(again.err, "exists already")) << again.err;
  const CliResult relative = Farmctl({"backup", "relative/dir"}, endpoint);
  EXPECT_EQ(relative.code, kExitUsage);
  EXPECT_TRUE(Contains(relative.err, "must be an absolute path")) << relative.err;

  const CliResult watched = Farmctl({"watch", id}, endpoint);
  ASSERT_EQ(watched.code, kExitOk) << watched.err;
  const std::set<std::string> original = ExportedLeases(id, endpoint);

  CoordinatorProcess restored(FARM_COORDINATOR_BIN, copy);
  ASSERT_FALSE(restored.endpoint().empty()) << restored.Log();
  const StatusReply status =
      ParseReply(Farmctl({"status", id, "--json"}, restored.endpoint()).out).status();
  ASSERT_EQ(status.campaigns_size(), 1);
  EXPECT_EQ(status.campaigns(0).campaign().counters().results(), taken.measurements());
  const std::set<std::string> copied = ExportedLeases(id, restored.endpoint());
  EXPECT_EQ(static_cast<int64_t>(copied.size()), taken.measurements());
  for (const std::string& lease : copied) EXPECT_TRUE(original.count(lease)) << lease;
  EXPECT_GE(original.size(), copied.size());
}

}  // namespace
}  // namespace schedfarm
