// farm-worker as a process, driven by a stand-in coordinator (a ROUTER peer speaking
// the real wire code) on loopback: registration, credits, heartbeats, leases run in
// the real sandbox with real Halide compiles, results kept until acknowledged,
// reconnects, the SIGTERM drain, orphans, and every kind of bad job message.
#include <google/protobuf/util/json_util.h>
#include <gtest/gtest.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <set>
#include <thread>

#include "pipeline/builder.h"
#include "pipeline/graph.h"
#include "pipeline/spec.h"
#include "scheduler/schedule_space.h"
#include "scheduler/templates.h"
#include "tests/support/stand_in_coordinator.h"
#include "tests/worker/worker_test_pipelines.h"

namespace schedfarm {
namespace {

using testing_support::ProcessAlive;
using testing_support::StandInCoordinator;
using testing_support::WorkerProcess;

Lease MakeLease(const std::string& lease_id, uint64_t schedule_seed = 1) {
  Lease lease;
  lease.set_lease_id(lease_id);
  *lease.mutable_pipeline() = worker_testing::TinyMatMul();
  const PipelineGraph graph = PipelineGraph::Build(lease.pipeline()).value();
  Candidate& candidate = *lease.mutable_candidate();
  candidate.set_campaign("test-campaign");
  candidate.set_pipeline_id(PipelineId(graph));
  *candidate.mutable_schedule() = ScheduleSpace(graph).RandomSchedule(schedule_seed);
  candidate.set_origin("random");
  lease.mutable_settings()->set_samples(3);
  lease.mutable_settings()->set_min_sample_seconds(0.001);
  lease.mutable_settings()->set_max_samples(5);
  return lease;
}

Envelope LeaseEnvelope(const Lease& lease) {
  Envelope envelope;
  *envelope.mutable_lease() = lease;
  return envelope;
}

std::vector<std::string> WorkerArgs(const StandInCoordinator& coordinator,
                                    std::vector<std::string> extra = {}) {
  std::vector<std::string> args = {"--coordinator",
                                   coordinator.endpoint(),
                                   "--id",
                                   "test-worker",
                                   "--children",
                                   "2",
                                   "--compile-slots",
                                   "1",
                                   "--memory-limit-mb",
                                   "4096"};
  args.insert(args.end(), extra.begin(), extra.end());
  return args;
}

bool IsResult(const StandInCoordinator::Received& r) { return r.envelope.has_result(); }
bool IsError(const StandInCoordinator::Received& r) { return r.envelope.has_error(); }

// Waits for the worker to register and returns its routing id.
std::string AwaitRegistration(StandInCoordinator& coordinator) {
  coordinator.set_keep_registrations(true);
  auto reg = coordinator.ReceiveUntil(
      [](const StandInCoordinator::Received& r) { return r.envelope.has_register_(); }, 20000);
  coordinator.set_keep_registrations(false);
  return reg ? reg->peer : "";
}

TEST(WorkerDaemon, RegistersWithItsFingerprintAndAsksForWork) {
  StandInCoordinator coordinator;
  WorkerProcess worker(FARM_WORKER_BIN, WorkerArgs(coordinator, {"--heartbeat-ms", "200",
                                                                 "--labels", "bench,quiet"}));
  coordinator.set_keep_registrations(true);
  auto reg = coordinator.ReceiveUntil(
      [](const StandInCoordinator::Received& r) { return r.envelope.has_register_(); }, 20000);
  ASSERT_TRUE(reg) << worker.Log();
  const Register& registration = reg->envelope.register_();
  EXPECT_EQ(reg->envelope.version(), kProtocolVersion);
  EXPECT_EQ(registration.host().worker_id(), "test-worker");
  EXPECT_FALSE(registration.host().cpu_model().empty());
  EXPECT_GE(registration.host().cores(), 1);
  EXPECT_NE(registration.host().halide_target().find("x86-64"), std::string::npos);
  EXPECT_GT(registration.host().l1d_bytes(), 0);
  EXPECT_FALSE(registration.host().cache_sources().at("l1d").empty());
  EXPECT_EQ(registration.host().library_versions().count("halide"), 1u);
  EXPECT_EQ(registration.host().library_versions().count("zeromq"), 1u);
  EXPECT_EQ(registration.credits(), 3);  // 2 children + 1 prefetch
  ASSERT_EQ(registration.host().labels_size(), 2);
  EXPECT_EQ(registration.host().labels(0), "bench");
  EXPECT_EQ(registration.host().labels(1), "quiet");

  // After the Welcome: a WorkRequest with the same credits, then heartbeats.
  auto request = coordinator.ReceiveUntil(
      [](const StandInCoordinator::Received& r) { return r.envelope.has_work_request(); }, 5000);
  ASSERT_TRUE(request) << worker.Log();
  EXPECT_EQ(request->envelope.work_request().credits(), 3);
  const int before = coordinator.heartbeats();
  coordinator.ReceiveUntil([](const StandInCoordinator::Received&) { return false; }, 1200);
  EXPECT_GE(coordinator.heartbeats() - before, 4);  // every 200 ms
  EXPECT_EQ(coordinator.registrations(), 1);        // answered, so never silent
}

TEST(WorkerDaemon, RunsALeaseAndResendsTheResultUntilAcknowledged) {
  StandInCoordinator coordinator;
  WorkerProcess worker(FARM_WORKER_BIN, WorkerArgs(coordinator, {"--result-resend-ms", "500"}));
  const std::string peer = AwaitRegistration(coordinator);
  ASSERT_FALSE(peer.empty()) << worker.Log();
  const Lease lease = MakeLease("lease-1");
  coordinator.Send(peer, LeaseEnvelope(lease));

  auto result = coordinator.ReceiveUntil(IsResult, 60000);
  ASSERT_TRUE(result) << worker.Log();
  const Measurement& m = result->envelope.result().measurement();
  EXPECT_EQ(m.status(), OK) << m.error();
  EXPECT_EQ(m.lease_id(), "lease-1");
  EXPECT_EQ(m.candidate().pipeline_id(), lease.candidate().pipeline_id());
  EXPECT_EQ(m.host().worker_id(), "test-worker");
  EXPECT_GT(m.compile_seconds(), 0);
  EXPECT_GE(m.samples_seconds_size(), 3);
  EXPECT_GT(m.stats().min_seconds(), 0);
  EXPECT_LE(m.stats().min_seconds(), m.stats().median_seconds());
  EXPECT_EQ(m.settings().samples(), 3);
  EXPECT_GT(m.finished_unix_ms(), 0);

  // Not acknowledged: sent again.
  auto again = coordinator.ReceiveUntil(IsResult, 5000);
  ASSERT_TRUE(again) << worker.Log();
  EXPECT_EQ(again->envelope.result().measurement().lease_id(), "lease-1");

  // Acknowledged: no more copies.
  Envelope ack;
  ack.mutable_ack()->set_lease_id("lease-1");
  ack.mutable_ack()->set_durable(true);
  coordinator.Send(peer, ack);
  coordinator.ReceiveUntil(IsResult, 300);  // one may have crossed the Ack
  EXPECT_FALSE(coordinator.ReceiveUntil(IsResult, 1500));

  // A lease sent again after its result went out gets the result, not a second run.
  coordinator.Send(peer, LeaseEnvelope(MakeLease("lease-2", 2)));
  auto second = coordinator.ReceiveUntil(IsResult, 60000);
  ASSERT_TRUE(second);
  coordinator.Send(peer, LeaseEnvelope(MakeLease("lease-2", 2)));
  auto repeated = coordinator.ReceiveUntil(IsResult, 5000);
  ASSERT_TRUE(repeated);
  EXPECT_EQ(repeated->envelope.result().measurement().finished_unix_ms(),
            second->envelope.result().measurement().finished_unix_ms());
}

TEST(WorkerDaemon, RefusesBadJobMessagesAndCarriesOn) {
  StandInCoordinator coordinator;
  WorkerProcess worker(FARM_WORKER_BIN, WorkerArgs(coordinator, {"--max-message-kb", "64"}));
  const std::string peer = AwaitRegistration(coordinator);
  ASSERT_FALSE(peer.empty()) << worker.Log();

  // Truncated: unparseable, so only logged and dropped.
  const std::string good = EncodeEnvelope(LeaseEnvelope(MakeLease("truncated")));
  coordinator.SendRaw(peer, good.substr(0, good.size() / 2));

  // Oversized: refused before parsing.
  coordinator.SendRaw(peer, std::string(100 << 10, 'x'));
  auto oversized = coordinator.ReceiveUntil(IsError, 5000);
  ASSERT_TRUE(oversized) << worker.Log();
  EXPECT_NE(oversized->envelope.error().error().find("exceeds the limit of 65536 bytes"),
            std::string::npos)
      << oversized->envelope.error().error();

  // Unknown protocol version.
  Envelope future = LeaseEnvelope(MakeLease("future"));
  future.set_version(static_cast<SchemaVersion>(7));
  coordinator.SendRaw(peer, future.SerializeAsString());
  auto version = coordinator.ReceiveUntil(IsError, 5000);
  ASSERT_TRUE(version);
  EXPECT_EQ(version->envelope.error().lease_id(), "future");
  EXPECT_NE(version->envelope.error().error().find("protocol version 7"), std::string::npos);

  // A pipeline the worker cannot build.
  Lease unbuildable = MakeLease("unbuildable");
  unbuildable.mutable_pipeline()->mutable_stages(0)->set_inputs(0, "no_such_tensor");
  unbuildable.mutable_candidate()->clear_pipeline_id();
  coordinator.Send(peer, LeaseEnvelope(unbuildable));
  auto bad_pipeline = coordinator.ReceiveUntil(IsError, 5000);
  ASSERT_TRUE(bad_pipeline);
  EXPECT_EQ(bad_pipeline->envelope.error().lease_id(), "unbuildable");
  EXPECT_NE(bad_pipeline->envelope.error().error().find("no_such_tensor"), std::string::npos)
      << bad_pipeline->envelope.error().error();

  // A schedule the space refuses (an output computed inline).
  Lease illegal = MakeLease("illegal");
  illegal.mutable_candidate()->mutable_schedule()->mutable_stages(0)->set_compute(INLINE);
  coordinator.Send(peer, LeaseEnvelope(illegal));
  auto bad_schedule = coordinator.ReceiveUntil(IsError, 5000);
  ASSERT_TRUE(bad_schedule);
  EXPECT_EQ(bad_schedule->envelope.error().lease_id(), "illegal");
  EXPECT_NE(bad_schedule->envelope.error().error().find("schedule refused"), std::string::npos);

  // A candidate of another pipeline than the one the lease carries.
  Lease mismatched = MakeLease("mismatched");
  mismatched.mutable_candidate()->set_pipeline_id("0123456789abcdef0123456789abcdef");
  coordinator.Send(peer, LeaseEnvelope(mismatched));
  auto bad_id = coordinator.ReceiveUntil(IsError, 5000);
  ASSERT_TRUE(bad_id);
  EXPECT_EQ(bad_id->envelope.error().lease_id(), "mismatched");

  // Impossible measurement settings.
  Lease bad_settings = MakeLease("bad-settings");
  bad_settings.mutable_settings()->set_samples(-4);
  coordinator.Send(peer, LeaseEnvelope(bad_settings));
  auto settings_error = coordinator.ReceiveUntil(IsError, 5000);
  ASSERT_TRUE(settings_error);
  EXPECT_NE(settings_error->envelope.error().error().find("samples"), std::string::npos);

  // The worker carries on: a good lease still runs, and the truncated frame was logged.
  coordinator.Send(peer, LeaseEnvelope(MakeLease("good")));
  auto result = coordinator.ReceiveUntil(IsResult, 60000);
  ASSERT_TRUE(result) << worker.Log();
  EXPECT_EQ(result->envelope.result().measurement().status(), OK);
  EXPECT_NE(worker.Log().find("event=frame_dropped"), std::string::npos) << worker.Log();
}

// A lease of a 3x3 convolution under its register-tile template for 64-byte vectors
// (4 x 16 lanes x 4 columns, 21 of 32 registers); `columns` replaces the tile's 4
// columns (8: 37 registers).
Lease RegisterTileLease(const std::string& id, int columns = 4) {
  PipelineBuilder b("conv_tile");
  b.Output(b.Conv2d(b.Input("x", {1, 16, 12, 12}), 128, 3, 1, 1));
  Lease lease = MakeLease(id);
  *lease.mutable_pipeline() = b.Finish().value();
  const PipelineGraph graph = PipelineGraph::Build(lease.pipeline()).value();
  TargetParams avx512;
  avx512.vector_bytes = 64;
  StatusOr<ScheduleSpec> tiled = TemplateSchedule(ScheduleSpace(graph, avx512));
  EXPECT_TRUE(tiled.ok()) << tiled.status().ToString();
  EXPECT_EQ(tiled->stages(0).update().vector_width(), 64);
  for (DimSplit& split : *tiled->mutable_stages(0)->mutable_update()->mutable_splits()) {
    if (split.dim() == "d3") split.set_factors(0, columns);
  }
  lease.mutable_candidate()->set_pipeline_id(PipelineId(graph));
  *lease.mutable_candidate()->mutable_schedule() = *tiled;
  return lease;
}

// A worker checks a schedule in the space of the target it compiles for. The tile of
// 64-byte vectors runs on a worker whose target has them (this host's, where its peak
// ISA is AVX-512), and a tile too large for 32 registers is refused there.
TEST(WorkerDaemon, RunsRegisterTilesOfItsOwnTarget) {
  StandInCoordinator coordinator;
  WorkerProcess worker(FARM_WORKER_BIN, WorkerArgs(coordinator));
  coordinator.set_keep_registrations(true);
  auto reg = coordinator.ReceiveUntil(
      [](const StandInCoordinator::Received& r) { return r.envelope.has_register_(); }, 20000);
  coordinator.set_keep_registrations(false);
  ASSERT_TRUE(reg) << worker.Log();
  if (reg->envelope.register_().host().peak_isa() != "avx512") {
    GTEST_SKIP() << "this host's Halide target has no 64-byte vectors (peak ISA '"
                 << reg->envelope.register_().host().peak_isa()
                 << "'); WorkerDaemon.RefusesRegisterTilesOverItsTargetsRegisters runs anywhere";
  }
  coordinator.Send(reg->peer, LeaseEnvelope(RegisterTileLease("tile")));
  auto result = coordinator.ReceiveUntil(IsResult, 120000);
  ASSERT_TRUE(result) << worker.Log();
  EXPECT_EQ(result->envelope.result().measurement().status(), OK)
      << result->envelope.result().measurement().error();

  coordinator.Send(reg->peer, LeaseEnvelope(RegisterTileLease("too-large", 8)));
  auto refused = coordinator.ReceiveUntil(IsError, 5000);
  ASSERT_TRUE(refused) << worker.Log();
  EXPECT_NE(refused->envelope.error().error().find("need 37 vector registers; the target has 32"),
            std::string::npos)
      << refused->envelope.error().error();
}

// The refusal an AVX2 worker must make, on any host with AVX2: the worker's target forced
// to AVX2 (HL_JIT_TARGET, which Halide's JIT and the worker's space read) takes the tile
// of 64-byte vectors for 8 x 4 vectors of 8 lanes, over its 16 registers, and refuses
// the lease naming them.
TEST(WorkerDaemon, RefusesRegisterTilesOverItsTargetsRegisters) {
  if (!__builtin_cpu_supports("avx2") || !__builtin_cpu_supports("fma")) {
    GTEST_SKIP() << "this host has no AVX2 with FMA to run an AVX2 worker on";
  }
  StandInCoordinator coordinator;
  setenv("HL_JIT_TARGET", "x86-64-linux-avx-avx2-f16c-fma-sse41", 1);
  WorkerProcess worker(FARM_WORKER_BIN, WorkerArgs(coordinator));
  unsetenv("HL_JIT_TARGET");
  coordinator.set_keep_registrations(true);
  auto reg = coordinator.ReceiveUntil(
      [](const StandInCoordinator::Received& r) { return r.envelope.has_register_(); }, 20000);
  coordinator.set_keep_registrations(false);
  ASSERT_TRUE(reg) << worker.Log();
  EXPECT_EQ(reg->envelope.register_().host().peak_isa(), "avx2");
  EXPECT_EQ(reg->envelope.register_().host().halide_target().find("avx512"), std::string::npos)
      << reg->envelope.register_().host().halide_target();
  for (const int columns : {4, 8}) {
    coordinator.Send(reg->peer,
                     LeaseEnvelope(RegisterTileLease("tile-" + std::to_string(columns), columns)));
    auto refused = coordinator.ReceiveUntil(IsError, 5000);
    ASSERT_TRUE(refused) << columns << " columns: " << worker.Log();
    EXPECT_NE(refused->envelope.error().error().find("vector registers; the target has 16"),
              std::string::npos)
        << columns << " columns: " << refused->envelope.error().error();
  }
}

TEST(WorkerDaemon, ReconnectsAndDeliversResultsAfterTheCoordinatorComesBack) {
  const std::string endpoint = "ipc://" + (std::filesystem::temp_directory_path() /
                                           ("schedfarm-daemon-test-" + std::to_string(getpid())))
                                              .string();
  StandInCoordinator coordinator(endpoint);
  WorkerProcess worker(FARM_WORKER_BIN, WorkerArgs(coordinator, {"--heartbeat-ms", "100"}));
  const std::string peer = AwaitRegistration(coordinator);
  ASSERT_FALSE(peer.empty()) << worker.Log();
  coordinator.Send(peer, LeaseEnvelope(MakeLease("across-restart")));
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  coordinator.Close();  // the coordinator goes away while the lease runs
  std::this_thread::sleep_for(std::chrono::milliseconds(2500));
  coordinator.Rebind();

  auto result = coordinator.ReceiveUntil(IsResult, 30000);
  ASSERT_TRUE(result) << worker.Log();
  EXPECT_EQ(result->envelope.result().measurement().lease_id(), "across-restart");
  EXPECT_EQ(coordinator.registrations(), 2);  // once before the coordinator left, once after
  EXPECT_NE(worker.Log().find("event=coordinator_silent"), std::string::npos);
}

TEST(WorkerDaemon, DrainsOnSigtermAndLeavesNoProcessBehind) {
  StandInCoordinator coordinator;
  WorkerProcess worker(FARM_WORKER_BIN, WorkerArgs(coordinator));
  const std::string peer = AwaitRegistration(coordinator);
  ASSERT_FALSE(peer.empty()) << worker.Log();
  const std::vector<pid_t> children = worker.SandboxPids();
  ASSERT_EQ(children.size(), 2u) << worker.Log();
  coordinator.Send(peer, LeaseEnvelope(MakeLease("drain-1", 1)));
  coordinator.Send(peer, LeaseEnvelope(MakeLease("drain-2", 2)));
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  worker.Signal(SIGTERM);

  // Both leases finish; no more credits are offered; each result is acknowledged.
  std::set<std::string> finished;
  bool zero_credits = false;
  while (finished.size() < 2) {
    auto message = coordinator.ReceiveUntil(
        [](const StandInCoordinator::Received& r) {
          return r.envelope.has_result() || r.envelope.has_work_request();
        },
        60000);
    ASSERT_TRUE(message) << worker.Log();
    if (message->envelope.has_work_request()) {
      zero_credits = zero_credits || message->envelope.work_request().credits() == 0;
      continue;
    }
    const Measurement& m = message->envelope.result().measurement();
    EXPECT_EQ(m.status(), OK) << m.error();
    finished.insert(m.lease_id());
    Envelope ack;
    ack.mutable_ack()->set_lease_id(m.lease_id());
    coordinator.Send(peer, ack);
  }
  EXPECT_TRUE(zero_credits);
  auto goodbye = coordinator.ReceiveUntil(
      [](const StandInCoordinator::Received& r) { return r.envelope.has_disconnect(); }, 10000);
  ASSERT_TRUE(goodbye) << worker.Log();
  const std::optional<int> status = worker.Wait(10000);
  ASSERT_TRUE(status) << worker.Log();
  EXPECT_TRUE(WIFEXITED(*status) && WEXITSTATUS(*status) == 0) << worker.Log();
  for (pid_t child : children) EXPECT_FALSE(ProcessAlive(child)) << "sandbox child " << child;
}

TEST(WorkerDaemon, KilledWorkerTakesItsSandboxDown) {
  StandInCoordinator coordinator;
  WorkerProcess worker(FARM_WORKER_BIN, WorkerArgs(coordinator));
  ASSERT_FALSE(AwaitRegistration(coordinator).empty()) << worker.Log();
  const std::vector<pid_t> children = worker.SandboxPids();
  ASSERT_EQ(children.size(), 2u) << worker.Log();
  worker.Signal(SIGKILL);
  ASSERT_TRUE(worker.Wait(5000));
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  bool any_alive = true;
  while (any_alive && std::chrono::steady_clock::now() < deadline) {
    any_alive = false;
    for (pid_t child : children) any_alive = any_alive || ProcessAlive(child);
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  EXPECT_FALSE(any_alive);
}

TEST(WorkerCli, RejectsBadArgumentsWithUsage) {
  struct Case {
    std::vector<std::string> args;
    std::string message;
  };
  const std::vector<Case> cases = {
      {{"--bogus"}, "unknown argument '--bogus'"},
      {{"--children", "two", "--coordinator", "tcp://127.0.0.1:1"},
       "--children must be an integer"},
      {{"--children", "0", "--coordinator", "tcp://127.0.0.1:1"},
       "--children must be an integer in [1,"},
      {{"--id"}, "--id needs a value"},
      {{"--labels", "a,,b", "--coordinator", "tcp://127.0.0.1:1"}, "--labels: empty label"},
      {{}, "--coordinator is required"},
  };
  for (const Case& c : cases) {
    WorkerProcess worker(FARM_WORKER_BIN, c.args);
    const std::optional<int> status = worker.Wait(10000);
    ASSERT_TRUE(status);
    EXPECT_TRUE(WIFEXITED(*status) && WEXITSTATUS(*status) == 2) << worker.Log();
    EXPECT_NE(worker.Log().find(c.message), std::string::npos) << worker.Log();
    EXPECT_NE(worker.Log().find("usage: farm-worker"), std::string::npos);
  }
}

TEST(WorkerCli, PrintsTheHostFingerprintAsJson) {
  FILE* out = popen((std::string(FARM_WORKER_BIN) + " --fingerprint --id host-7").c_str(), "r");
  ASSERT_NE(out, nullptr);
  std::string json;
  char buffer[4096];
  for (size_t n; (n = fread(buffer, 1, sizeof(buffer), out)) > 0;) json.append(buffer, n);
  EXPECT_EQ(pclose(out), 0);
  EXPECT_NE(json.find("\"workerId\": \"host-7\""), std::string::npos) << json;
  EXPECT_NE(json.find("\"halideTarget\""), std::string::npos) << json;
  EXPECT_NE(json.find("\"cpuModel\""), std::string::npos) << json;
  // With the fp32 peak it measured, at 1 thread and at its cores, per core between 1
  // and 10,000 GFLOP/s, and the memory bandwidth between 0.5 and 5,000 GB/s.
  HostFingerprint host;
  ASSERT_TRUE(google::protobuf::util::JsonStringToMessage(json, &host).ok()) << json;
  EXPECT_FALSE(host.peak_isa().empty()) << json;
  for (const int threads : {1, host.cores()}) {
    ASSERT_TRUE(host.peak_gflops().count(threads)) << threads << ": " << json;
    EXPECT_GE(host.peak_gflops().at(threads) / threads, 1) << json;
    EXPECT_LE(host.peak_gflops().at(threads) / threads, 10000) << json;
    ASSERT_TRUE(host.bandwidth_gbps().count(threads)) << threads << ": " << json;
    EXPECT_GE(host.bandwidth_gbps().at(threads), 0.5) << json;
    EXPECT_LE(host.bandwidth_gbps().at(threads), 5000) << json;
  }
}

}  // namespace
}  // namespace schedfarm
