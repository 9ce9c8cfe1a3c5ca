// The farm end to end on loopback: the real farm-coordinator and real farm-worker
// processes with real Halide compiles and a real RocksDB store. A campaign runs to
// completion; workers and the coordinator are killed, stopped and restarted mid-job;
// a poison candidate is quarantined; bad submissions are refused with their place.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <map>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "campaign/campaign_pipelines.h"
#include "campaign/campaign_yaml.h"
#include "coordinator/host_audit.h"
#include "pipeline/graph.h"
#include "pipeline/yaml_io.h"
#include "protocol/security.h"
#include "scheduler/schedule_space.h"
#include "scheduler/templates.h"
#include "storage/store.h"
#include "tests/support/farm_rig.h"
#include "tests/support/scratch_dir.h"

namespace schedfarm {
namespace {

using testing_support::ChildProcess;
using testing_support::CoordinatorProcess;
using testing_support::TestClient;

// A small zoo block: each candidate compiles in well under a second. Random schedules
// only: these tests count the farm's candidates, not the template's.
constexpr char kTinyCampaign[] = R"(name: tiny
templates: false
pipelines:
  - zoo: {block: vgg_block, spatial_scale: 0.25, channel_scale: 0.25}
strategy: {name: random, settings: {seed: 7}}
budget: {benchmarks: BUDGET}
measurement: {samples: SAMPLES, max_samples: SAMPLES, min_sample_time: SAMPLE_TIME, compile_timeout: 60s, run_timeout: 20s}
)";

std::string Campaign(int budget, int samples = 2, const std::string& sample_time = "1ms") {
  std::string text = kTinyCampaign;
  auto replace = [&](const std::string& from, const std::string& to) {
    for (size_t at = text.find(from); at != std::string::npos; at = text.find(from)) {
      text.replace(at, from.size(), to);
    }
  };
  replace("BUDGET", std::to_string(budget));
  replace("SAMPLES", std::to_string(samples));
  replace("SAMPLE_TIME", sample_time);
  return text;
}

// A submission of `yaml` with the pipelines its zoo and random entries name.
ClientRequest Submission(const std::string& yaml) {
  ClientRequest request;
  SubmitCampaign* submit = request.mutable_submit();
  submit->set_yaml_source(yaml);
  submit->set_file_name("test.yaml");
  StatusOr<CampaignConfig> config = ParseCampaignYaml(yaml, "test.yaml");
  EXPECT_TRUE(config.ok()) << config.status().message();
  if (!config.ok()) return request;
  for (const PipelineSource& source : config->pipelines()) {
    if (source.has_zoo()) {
      StatusOr<PipelineSpec> spec = BuildZooPipeline(source.zoo());
      EXPECT_TRUE(spec.ok());
      if (spec.ok()) *submit->add_pipelines() = *spec;
    }
    if (source.has_yaml_path()) {
      StatusOr<PipelineSpec> spec = PipelineFromYamlFile(source.yaml_path());
      EXPECT_TRUE(spec.ok()) << spec.status().message();
      if (spec.ok()) *submit->add_pipelines() = *spec;
    }
    for (uint64_t k = 0; source.has_random() && k < source.random().count(); ++k) {
      StatusOr<PipelineSpec> spec =
          BuildRandomPipeline(source.random(), source.random().first_seed() + k);
      EXPECT_TRUE(spec.ok());
      if (spec.ok()) *submit->add_pipelines() = *spec;
    }
  }
  return request;
}

class FarmTest : public ::testing::Test {
 protected:
  void StartCoordinator(const std::vector<std::string>& extra = {},
                        const std::string& endpoint = "tcp://127.0.0.1:*") {
    coordinator_ = std::make_unique<CoordinatorProcess>(FARM_COORDINATOR_BIN, dir_.Sub("store"),
                                                        endpoint, extra);
    ASSERT_FALSE(coordinator_->endpoint().empty()) << coordinator_->Log();
    client_ = std::make_unique<TestClient>(coordinator_->endpoint());
  }

  std::unique_ptr<ChildProcess> StartWorker(const std::string& id,
                                            const std::vector<std::string>& extra = {}) {
    std::vector<std::string> args = {"--coordinator",
                                     coordinator_->endpoint(),
                                     "--id",
                                     id,
                                     "--compile-slots",
                                     "1",
                                     "--children",
                                     "1",
                                     "--result-resend-ms",
                                     "1000"};
    args.insert(args.end(), extra.begin(), extra.end());
    return std::make_unique<ChildProcess>(FARM_WORKER_BIN, args);
  }

  std::string Submit(const std::string& yaml) {
    std::optional<ClientReply> reply = client_->Call(Submission(yaml));
    EXPECT_TRUE(reply.has_value());
    if (!reply) return "";
    EXPECT_EQ(reply->code(), CLIENT_OK) << reply->error();
    return reply->submitted().id();
  }

  // The campaign's status once `done` holds for it, within timeout_s.
  std::optional<CampaignStatus> WaitFor(const std::string& id,
                                        const std::function<bool(const CampaignStatus&)>& done,
                                        int timeout_s) {
    if (id.empty()) {
      ADD_FAILURE() << "no campaign to wait for";
      return std::nullopt;
    }
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(timeout_s);
    std::optional<CampaignStatus> last;
    while (std::chrono::steady_clock::now() < deadline) {
      std::optional<ClientReply> reply = client_->Status(id);
      if (reply && reply->code() == CLIENT_OK && reply->status().campaigns_size() == 1) {
        last = reply->status().campaigns(0);
        if (done(*last)) return last;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    ADD_FAILURE() << "timed out; last status: " << (last ? last->DebugString() : "none")
                  << "\ncoordinator log:\n"
                  << coordinator_->Log();
    return std::nullopt;
  }

  // Waits until `count` workers are registered and alive.
  void WaitForWorkers(int count) {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
    while (std::chrono::steady_clock::now() < deadline) {
      ClientRequest request;
      request.mutable_workers();
      std::optional<ClientReply> reply = client_->Call(request);
      int alive = 0;
      if (reply) {
        for (const WorkerStatus& w : reply->workers().workers()) alive += w.state() != WORKER_DEAD;
      }
      if (alive >= count) return;
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    ADD_FAILURE() << "fewer than " << count << " workers registered";
  }

  static bool Done(const CampaignStatus& s) { return s.campaign().state() == CAMPAIGN_DONE; }

  // Every measurement of the campaign once `count` are durable (status counts a result
  // as soon as it is taken; the export reads the store).
  std::vector<StoredMeasurementRecord> ExportWhenDurable(const std::string& id, int64_t count) {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    std::vector<StoredMeasurementRecord> rows = Export(id);
    while (static_cast<int64_t>(rows.size()) < count &&
           std::chrono::steady_clock::now() < deadline) {
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
      rows = Export(id);
    }
    return rows;
  }

  // Every measurement of the campaign, through export pages of 3 rows.
  std::vector<StoredMeasurementRecord> Export(const std::string& id) {
    return client_->Export(id, 3);
  }

  // A live read-only view of the coordinator's store.
  std::unique_ptr<Store> StoreView() {
    StatusOr<std::unique_ptr<Store>> view =
        Store::OpenSecondary(dir_.Sub("store"), dir_.Sub("view" + std::to_string(views_++)));
    EXPECT_TRUE(view.ok()) << view.status().message();
    return view.ok() ? std::move(*view) : nullptr;
  }

  std::vector<CandidateRecord> Candidates(const std::string& id) {
    std::vector<CandidateRecord> records;
    std::unique_ptr<Store> view = StoreView();
    if (!view) return records;
    EXPECT_TRUE(view->ScanCandidates(id,
                                     [&](const CandidateRecord& r) {
                                       records.push_back(r);
                                       return true;
                                     })
                    .ok());
    return records;
  }

  std::vector<Event> Events() {
    std::vector<Event> events;
    std::unique_ptr<Store> view = StoreView();
    if (!view) return events;
    EXPECT_TRUE(view->ScanEvents(0,
                                 [&](const Event& e) {
                                   events.push_back(e);
                                   return true;
                                 })
                    .ok());
    return events;
  }

  static bool HasEvent(const std::vector<Event>& events, const std::string& kind,
                       const std::string& worker) {
    for (const Event& e : events) {
      if (e.kind() == kind && e.worker_id() == worker) return true;
    }
    return false;
  }

  // Checks that no lease is recorded twice and no candidate has two OK results.
  static void ExpectExactlyOnce(const std::vector<StoredMeasurementRecord>& rows) {
    std::set<std::string> leases;
    std::map<std::string, int> ok_by_candidate;
    for (const StoredMeasurementRecord& row : rows) {
      const Measurement& m = row.measurement();
      EXPECT_TRUE(leases.insert(m.lease_id()).second) << "lease recorded twice: " << m.lease_id();
      if (m.status() == OK) {
        ++ok_by_candidate[m.candidate().pipeline_id() + "/" + m.candidate().schedule_hash()];
      }
    }
    for (const auto& [candidate, count] : ok_by_candidate) {
      EXPECT_EQ(count, 1) << "candidate " << candidate << " has " << count << " OK results";
    }
  }

  ScratchDir dir_;
  int views_ = 0;
  std::unique_ptr<CoordinatorProcess> coordinator_;
  std::unique_ptr<TestClient> client_;
};

TEST_F(FarmTest, CampaignRunsToCompletion) {
  StartCoordinator();
  std::unique_ptr<ChildProcess> a = StartWorker("worker-a");
  std::unique_ptr<ChildProcess> b = StartWorker("worker-b");
  WaitForWorkers(2);  // both share the work
  const std::string id = Submit(Campaign(6));
  ASSERT_FALSE(id.empty());
  std::optional<CampaignStatus> status = WaitFor(id, Done, 240);
  ASSERT_TRUE(status.has_value());
  const CampaignCounters& counters = status->campaign().counters();
  EXPECT_EQ(counters.finished(), 6);
  EXPECT_EQ(counters.measured() + counters.failed() + counters.quarantined(), 6);
  EXPECT_GE(counters.measured(), 4) << "random schedules of a small block mostly run";
  ASSERT_EQ(status->pipelines_size(), 1);
  EXPECT_GT(status->pipelines(0).best_seconds(), 0);

  const std::vector<StoredMeasurementRecord> rows = ExportWhenDurable(id, counters.results());
  EXPECT_EQ(static_cast<int64_t>(rows.size()), counters.results());
  ExpectExactlyOnce(rows);
  std::set<std::string> hosts;
  for (const StoredMeasurementRecord& row : rows)
    hosts.insert(row.measurement().host().worker_id());
  EXPECT_EQ(hosts, (std::set<std::string>{"worker-a", "worker-b"}));

  ClientRequest workers;
  workers.mutable_workers();
  std::optional<ClientReply> reply = client_->Call(workers);
  ASSERT_TRUE(reply.has_value());
  ASSERT_EQ(reply->workers().workers_size(), 2);
  int64_t ok = 0;
  for (const WorkerStatus& worker : reply->workers().workers()) {
    EXPECT_EQ(worker.state(), WORKER_IDLE);
    ok += worker.record().results_ok();
  }
  EXPECT_EQ(ok, counters.measured());
}

// Workers of two vector widths in one campaign: one of the host's own Halide target and
// one whose target is narrower (HL_JIT_TARGET: AVX2 on an AVX-512 host, SSE on an AVX2
// one; it compiles and runs that code for real). The campaign keeps a space per width
// (docs/CAMPAIGN_YAML.md, "workers"): each width's templates and random schedules are
// measured only by workers of that width, none fails, and each template's register
// tile fits its width's registers (rule 8 of the strict check), the widths' templates
// being different schedules.
TEST_F(FarmTest, WorkersOfTwoVectorWidthsEachGetTilesTheirRegistersHold) {
  StartCoordinator();
  std::unique_ptr<ChildProcess> own = StartWorker("own");
  WaitForWorkers(1);
  ClientRequest request;
  request.mutable_workers();
  std::optional<ClientReply> reply = client_->Call(request);
  ASSERT_TRUE(reply && reply->workers().workers_size() == 1);
  const int wide =
      VectorBytesOfHalideTarget(reply->workers().workers(0).record().host().halide_target());
  if (wide < 32) GTEST_SKIP() << "this host's Halide target has no vector ISA wider than SSE";
  const int narrow = wide == 64 ? 32 : 16;
  setenv("HL_JIT_TARGET",
         narrow == 32 ? "x86-64-linux-avx-avx2-f16c-fma-sse41" : "x86-64-linux-sse41", 1);
  std::unique_ptr<ChildProcess> narrower = StartWorker("narrow");
  unsetenv("HL_JIT_TARGET");
  WaitForWorkers(2);
  // The tiny campaign with its templates.
  std::string yaml = Campaign(12);
  yaml.erase(yaml.find("templates: false\n"), std::string("templates: false\n").size());
  const std::string id = Submit(yaml);
  ASSERT_FALSE(id.empty());
  std::optional<CampaignStatus> status = WaitFor(id, Done, 300);
  ASSERT_TRUE(status.has_value()) << own->Log() << narrower->Log();
  ASSERT_EQ(status->campaign().widths_size(), 2);

  StatusOr<CampaignConfig> config = ParseCampaignYaml(yaml, "tiny.yaml");
  ASSERT_TRUE(config.ok());
  StatusOr<PipelineSpec> spec = BuildZooPipeline(config->pipelines(0).zoo());
  ASSERT_TRUE(spec.ok());
  StatusOr<PipelineGraph> graph = PipelineGraph::Build(*spec);
  ASSERT_TRUE(graph.ok());
  std::map<int, std::set<std::string>> templates;  // by width: their hashes
  std::map<int, int> measured;                     // by width
  for (const StoredMeasurementRecord& row :
       ExportWhenDurable(id, status->campaign().counters().results())) {
    const Measurement& m = row.measurement();
    const Candidate& candidate = m.candidate();
    EXPECT_EQ(m.status(), OK) << candidate.origin() << ": " << m.error();
    if (candidate.vector_bytes() == 0) continue;
    EXPECT_EQ(VectorBytesOfHalideTarget(m.host().halide_target()), candidate.vector_bytes())
        << "a candidate of a width went to a worker of another";
    ++measured[candidate.vector_bytes()];
    if (candidate.origin() != kTemplateOrigin) continue;
    templates[candidate.vector_bytes()].insert(candidate.schedule_hash());
    TargetParams target;
    target.cores = 1;
    target.vector_bytes = candidate.vector_bytes();
    const Status fits = ScheduleSpace(*graph, target).Check(candidate.schedule());
    EXPECT_TRUE(fits.ok()) << "width " << candidate.vector_bytes() << ": " << fits.message();
  }
  EXPECT_GT(measured[wide], 0);
  EXPECT_GT(measured[narrow], 0);
  ASSERT_FALSE(templates[wide].empty());
  ASSERT_FALSE(templates[narrow].empty());
  EXPECT_NE(templates[wide], templates[narrow]) << "each width's template is its own";
}

// Hosts that lie (coordinator/host_audit.h): three workers of one CPU model, one of
// them reporting half of every time it measures. Every OK result is audited on another
// host; the liar is flagged, the honest hosts are not, and the liar's results leave
// the best until it is cleared.
TEST_F(FarmTest, AHostReportingHalfItsTimesIsFlaggedAndLeavesTheBest) {
  // 35%, not the default 20%: three workers share this test's two cores, and an honest
  // one timing beside the others' benchmarks is up to a third slower now and then.
  StartCoordinator({"--audit-every", "1", "--audit-tolerance-pct", "35"});
  std::unique_ptr<ChildProcess> a = StartWorker("honest-a");
  std::unique_ptr<ChildProcess> b = StartWorker("honest-b");
  std::unique_ptr<ChildProcess> liar = StartWorker("liar", {"--test-time-scale", "0.5"});
  WaitForWorkers(3);
  const std::string id = Submit(Campaign(9, 5, "1ms"));
  std::optional<CampaignStatus> status = WaitFor(id, Done, 400);
  ASSERT_TRUE(status.has_value());
  const CampaignCounters& counters = status->campaign().counters();
  EXPECT_EQ(counters.finished(), 9) << "audits are beyond the budget";
  EXPECT_GT(counters.audits(), 0);

  ClientRequest workers;
  workers.mutable_workers();
  std::optional<ClientReply> reply = client_->Call(workers);
  ASSERT_TRUE(reply.has_value());
  std::map<std::string, WorkerRecord> records;
  for (const WorkerStatus& w : reply->workers().workers()) {
    records[w.record().host().worker_id()] = w.record();
  }
  ASSERT_EQ(records.size(), 3u);
  // The scale is in the liar's fingerprint (so in each of its results), in no other.
  EXPECT_EQ(records["liar"].host().test_time_scale(), 0.5);
  EXPECT_EQ(records["honest-a"].host().test_time_scale(), 0);
  EXPECT_TRUE(records["liar"].flagged()) << records["liar"].ShortDebugString() << "\n"
                                         << coordinator_->Log();
  EXPECT_NE(records["liar"].flag_reason().find("times 0."), std::string::npos)
      << records["liar"].flag_reason();
  for (const char* honest : {"honest-a", "honest-b"}) {
    EXPECT_FALSE(records[honest].flagged()) << records[honest].ShortDebugString();
    EXPECT_GT(records[honest].audits_agreed(), 0) << honest;
  }
  for (const auto& [id, record] : records) {
    std::printf("%s: audits agreed %lld, deviated %lld, times %.2fx the others'\n", id.c_str(),
                static_cast<long long>(record.audits_agreed()),
                static_cast<long long>(record.audits_deviated()), AuditTimeRatio(record));
  }

  // The best excludes the liar's results, which its halved times would have won.
  ClientRequest best;
  best.mutable_best()->set_campaign(id);
  best.mutable_best()->set_k(100);
  reply = client_->Call(best);
  ASSERT_TRUE(reply.has_value());
  ASSERT_EQ(reply->code(), CLIENT_OK) << reply->error();
  ASSERT_GT(reply->best().best_size(), 0);
  for (const StoredMeasurementRecord& row : reply->best().best()) {
    EXPECT_NE(row.measurement().host().worker_id(), "liar");
  }
  const double trusted_best = reply->best().best(0).measurement().stats().median_seconds();
  ASSERT_EQ(status->pipelines_size(), 1);
  // Status pools a schedule's measurements (audits included) into their geometric mean.
  EXPECT_GE(status->pipelines(0).best_seconds(), trusted_best * 0.999)
      << "status's best is of trusted hosts too";
  bool liar_measured = false;
  for (const StoredMeasurementRecord& row : ExportWhenDurable(id, counters.results())) {
    const HostFingerprint& host = row.measurement().host();
    liar_measured |= host.worker_id() == "liar" && row.measurement().status() == OK;
    EXPECT_EQ(host.test_time_scale(), host.worker_id() == "liar" ? 0.5 : 0);
  }
  EXPECT_TRUE(liar_measured) << "the export keeps every result";
  EXPECT_TRUE(HasEvent(Events(), "host_flagged", "liar"));

  // Cleared, its results count again.
  ClientRequest clear;
  clear.mutable_clear_worker()->set_worker_id("liar");
  reply = client_->Call(clear);
  ASSERT_TRUE(reply.has_value());
  ASSERT_EQ(reply->code(), CLIENT_OK) << reply->error();
  ASSERT_EQ(reply->workers().workers_size(), 1);
  EXPECT_FALSE(reply->workers().workers(0).record().flagged());
  EXPECT_EQ(reply->workers().workers(0).record().audits_deviated(), 0);
  reply = client_->Call(best);
  ASSERT_TRUE(reply.has_value());
  bool liar_in_best = false;
  for (const StoredMeasurementRecord& row : reply->best().best()) {
    liar_in_best |= row.measurement().host().worker_id() == "liar";
  }
  EXPECT_TRUE(liar_in_best);
  clear.mutable_clear_worker()->set_worker_id("nobody");
  reply = client_->Call(clear);
  ASSERT_TRUE(reply.has_value());
  EXPECT_EQ(reply->code(), CLIENT_NOT_FOUND);
  EXPECT_NE(reply->error().find("nobody"), std::string::npos);
}

// Each job takes a few seconds: five samples of at least 300 ms.
constexpr int kSlowSamples = 5;
constexpr char kSlowSampleTime[] = "300ms";
const std::vector<std::string> kFastRetry = {"--retry-backoff-ms", "200"};

TEST_F(FarmTest, WorkerKilledMidJobIsRerunElsewhere) {
  StartCoordinator(kFastRetry);
  const std::string id = Submit(Campaign(2, kSlowSamples, kSlowSampleTime));
  std::unique_ptr<ChildProcess> doomed = StartWorker("doomed");
  ASSERT_TRUE(WaitFor(
      id, [](const CampaignStatus& s) { return s.campaign().counters().leased() > 0; }, 60));
  std::this_thread::sleep_for(std::chrono::milliseconds(1200));  // compiling or timing
  doomed->Signal(SIGKILL);
  ASSERT_TRUE(doomed->Wait(5000).has_value());
  std::unique_ptr<ChildProcess> rescuer = StartWorker("rescuer");
  std::optional<CampaignStatus> status = WaitFor(id, Done, 240);
  ASSERT_TRUE(status.has_value());
  EXPECT_EQ(status->campaign().counters().measured(), 2);

  const std::vector<StoredMeasurementRecord> rows =
      ExportWhenDurable(id, status->campaign().counters().results());
  ExpectExactlyOnce(rows);
  for (const StoredMeasurementRecord& row : rows) {
    EXPECT_EQ(row.measurement().host().worker_id(), "rescuer");
  }
  int lost = 0;
  for (const CandidateRecord& record : Candidates(id)) {
    EXPECT_EQ(record.state(), CANDIDATE_MEASURED);
    if (record.failures() == 1) {
      ++lost;
      EXPECT_EQ(record.last_status(), OK);
    }
  }
  EXPECT_GE(lost, 1) << "the killed worker's lease counts a lost attempt";
  const std::vector<Event> events = Events();
  EXPECT_TRUE(HasEvent(events, "worker_dead", "doomed"));
  EXPECT_TRUE(HasEvent(events, "lease_lost", "doomed"));
}

TEST_F(FarmTest, CoordinatorKilledAndRestartedKeepsEveryAcknowledgedResult) {
  StartCoordinator(kFastRetry);
  const std::string endpoint = coordinator_->endpoint();
  const std::string id = Submit(Campaign(6, 3, "50ms"));
  std::unique_ptr<ChildProcess> worker = StartWorker("steady");
  // Status counts a result as soon as it is taken; the worker's log shows the Acks,
  // which come after the durable write.
  auto acks = [&] {
    const std::string log = worker->Log();
    size_t count = 0;
    for (size_t at = log.find("event=result_acked"); at != std::string::npos;
         at = log.find("event=result_acked", at + 1)) {
      ++count;
    }
    return count;
  };
  const auto acked_deadline = std::chrono::steady_clock::now() + std::chrono::seconds(120);
  while (acks() < 2 && std::chrono::steady_clock::now() < acked_deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  coordinator_->process().Signal(SIGKILL);
  ASSERT_TRUE(coordinator_->process().Wait(5000).has_value());
  // Every lease the worker saw acknowledged before the kill.
  std::set<std::string> acked;
  const std::string log = worker->Log();
  for (size_t at = log.find("event=result_acked"); at != std::string::npos;
       at = log.find("event=result_acked", at + 1)) {
    const size_t lease = log.find("lease=", at) + 6;
    acked.insert(log.substr(lease, log.find_first_of(" \n", lease) - lease));
  }
  ASSERT_GE(acked.size(), 2u) << log;
  std::this_thread::sleep_for(std::chrono::milliseconds(1500));  // work goes on meanwhile
  StartCoordinator(kFastRetry, endpoint);
  std::optional<CampaignStatus> status = WaitFor(id, Done, 240);
  ASSERT_TRUE(status.has_value());
  EXPECT_EQ(status->campaign().counters().finished(), 6);
  const std::vector<StoredMeasurementRecord> rows =
      ExportWhenDurable(id, status->campaign().counters().results());
  ExpectExactlyOnce(rows);
  std::set<std::string> recorded;
  for (const StoredMeasurementRecord& row : rows) recorded.insert(row.measurement().lease_id());
  for (const std::string& lease : acked) {
    EXPECT_TRUE(recorded.count(lease)) << "acknowledged result of lease " << lease << " lost";
  }
  EXPECT_EQ(static_cast<int64_t>(rows.size()), status->campaign().counters().results());
  // The worker's counters, as `farmctl workers` shows them, agree with the store: they
  // are written with the results, so the kill lost none of them.
  ClientRequest request;
  request.mutable_workers();
  std::optional<ClientReply> reply = client_->Call(request);
  ASSERT_TRUE(reply.has_value());
  ASSERT_EQ(reply->workers().workers_size(), 1);
  const WorkerRecord& counted = reply->workers().workers(0).record();
  int64_t ok = 0, failed = 0;
  for (const StoredMeasurementRecord& row : rows) (row.measurement().status() == OK ? ok : failed)++;
  int64_t counted_failed = 0;
  for (const auto& [status_name, n] : counted.failures_by_status()) counted_failed += n;
  EXPECT_EQ(counted.results_ok(), ok);
  EXPECT_EQ(counted_failed, failed);
}

TEST_F(FarmTest, WorkerStoppedPastItsLivenessHasItsLateResultRecordedOnce) {
  StartCoordinator(kFastRetry);
  const std::string id = Submit(Campaign(1, kSlowSamples, kSlowSampleTime));
  std::unique_ptr<ChildProcess> sleeper = StartWorker("sleeper");
  ASSERT_TRUE(WaitFor(
      id, [](const CampaignStatus& s) { return s.campaign().counters().leased() > 0; }, 60));
  sleeper->Signal(SIGSTOP);
  std::unique_ptr<ChildProcess> other = StartWorker("other");
  // Past the liveness (3 x 1 s), the lease goes to the other worker.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (!HasEvent(Events(), "worker_dead", "sleeper") &&
         std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
  ASSERT_TRUE(HasEvent(Events(), "worker_dead", "sleeper")) << coordinator_->Log();
  std::this_thread::sleep_for(std::chrono::milliseconds(1000));
  sleeper->Signal(SIGCONT);
  std::optional<CampaignStatus> status = WaitFor(id, Done, 120);
  ASSERT_TRUE(status.has_value());
  // Both workers deliver a result for the one candidate; one is recorded.
  const auto settle = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  std::vector<Event> events = Events();
  while (!HasEvent(events, "duplicate_result", "sleeper") &&
         !HasEvent(events, "duplicate_result", "other") &&
         std::chrono::steady_clock::now() < settle) {
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    events = Events();
  }
  EXPECT_TRUE(HasEvent(events, "duplicate_result", "sleeper") ||
              HasEvent(events, "duplicate_result", "other"))
      << coordinator_->Log();
  const std::vector<StoredMeasurementRecord> rows = ExportWhenDurable(id, 1);
  ExpectExactlyOnce(rows);
  EXPECT_EQ(rows.size(), 1u);
  EXPECT_EQ(status->campaign().counters().measured(), 1);
}

TEST_F(FarmTest, PoisonCandidatesAreQuarantinedAndTheCampaignCompletes) {
  // A pipeline whose 2 GiB input cannot be allocated under the workers' 1 GiB limit:
  // every attempt of every schedule runs out of memory.
  const std::string poison = dir_.Sub("poison.yaml");
  std::ofstream(poison) << "name: poison\n"
                           "inputs:\n  - {name: x, shape: [16384, 32768]}\n"
                           "stages:\n  - {name: y, op: relu, inputs: [x]}\n"
                           "outputs: [y]\n";
  std::string yaml = Campaign(4);
  yaml.replace(yaml.find("strategy:"), 0, "  - yaml: {path: " + poison + "}\n");
  StartCoordinator({"--retry-backoff-ms", "100", "--quarantine-after", "3"});
  const std::string id = Submit(yaml);
  ASSERT_FALSE(id.empty());
  std::unique_ptr<ChildProcess> worker = StartWorker("victim", {"--memory-limit-mb", "1024"});
  std::optional<CampaignStatus> status = WaitFor(id, Done, 240);
  ASSERT_TRUE(status.has_value());
  const CampaignCounters& counters = status->campaign().counters();
  EXPECT_EQ(counters.quarantined(), 2);
  EXPECT_EQ(counters.measured() + counters.failed(), 2);
  EXPECT_EQ(status->failures_by_status().at("OUT_OF_MEMORY"), 6) << "3 attempts each";
  ExportWhenDurable(id, counters.results());  // the records of the last results too
  for (const CandidateRecord& record : Candidates(id)) {
    if (record.state() != CANDIDATE_QUARANTINED) continue;
    EXPECT_EQ(record.failures(), 3);
    EXPECT_EQ(record.last_status(), OUT_OF_MEMORY);
  }
  EXPECT_TRUE(HasEvent(Events(), "quarantined", "victim"));
}

TEST_F(FarmTest, BadSubmissionsAreRefusedWithTheirPlace) {
  StartCoordinator();
  struct Case {
    std::string yaml;
    std::string expected;
  };
  const std::string pipelines = "pipelines:\n  - zoo: {block: vgg_block, spatial_scale: 0.25}\n";
  const std::vector<Case> cases = {
      {"name: x\n" + pipelines + "budget: {benchmarks: 3}\nbudjet: 1\n", "test.yaml:5:1"},
      {"name: x\n" + pipelines + "budget: {benchmarks: many}\n", "test.yaml:4:22"},
      {"name: x\n" + pipelines, "budget"},
      {"name: x\n" + pipelines + "budget: {benchmarks: 0}\n", "test.yaml:4:22"},
      {"name: x\npipelines: [\n", "test.yaml:"},
  };
  for (const Case& c : cases) {
    ClientRequest request;
    request.mutable_submit()->set_yaml_source(c.yaml);
    request.mutable_submit()->set_file_name("test.yaml");
    std::optional<ClientReply> reply = client_->Call(request);
    ASSERT_TRUE(reply.has_value());
    EXPECT_EQ(reply->code(), CLIENT_INVALID_ARGUMENT) << c.yaml;
    EXPECT_NE(reply->error().find(c.expected), std::string::npos)
        << "error '" << reply->error() << "' lacks '" << c.expected << "'";
  }
  // A good file whose pipelines are missing or are not the ones it names.
  ClientRequest request = Submission(Campaign(3));
  request.mutable_submit()->clear_pipelines();
  std::optional<ClientReply> reply = client_->Call(request);
  ASSERT_TRUE(reply.has_value());
  EXPECT_EQ(reply->code(), CLIENT_INVALID_ARGUMENT);
  EXPECT_NE(reply->error().find("names 1 pipelines, 0 were submitted"), std::string::npos)
      << reply->error();
  request = Submission(Campaign(3));
  request.mutable_submit()->mutable_pipelines(0)->mutable_inputs(0)->set_shape(0, 2);
  reply = client_->Call(request);
  ASSERT_TRUE(reply.has_value());
  EXPECT_EQ(reply->code(), CLIENT_INVALID_ARGUMENT);
  EXPECT_NE(reply->error().find("pipelines[0] (zoo vgg_block)"), std::string::npos)
      << reply->error();
  // Nothing was created.
  reply = client_->Status();
  ASSERT_TRUE(reply.has_value());
  EXPECT_EQ(reply->status().campaigns_size(), 0);
}

TEST_F(FarmTest, PauseResumeCancelIdempotentSubmitAndCampaignsByName) {
  StartCoordinator();
  ClientRequest submit = Submission(Campaign(3));
  submit.set_request_id("fixed-request");
  std::optional<ClientReply> first = client_->Call(submit);
  std::optional<ClientReply> again = client_->Call(submit);
  ASSERT_TRUE(first && again);
  EXPECT_EQ(first->submitted().id(), again->submitted().id()) << "a retried submit is one campaign";
  const std::string id = first->submitted().id();
  auto control = [&](const std::string& what, const std::string& campaign) {
    ClientRequest request;
    CampaignRef* ref = what == "pause"    ? request.mutable_pause()
                       : what == "resume" ? request.mutable_resume()
                                          : request.mutable_cancel();
    ref->set_campaign(campaign);
    std::optional<ClientReply> reply = client_->Call(request);
    EXPECT_TRUE(reply.has_value());
    return reply.value_or(ClientReply());
  };
  EXPECT_EQ(control("pause", id).campaign().state(), CAMPAIGN_PAUSED);
  EXPECT_EQ(control("pause", id).code(), CLIENT_FAILED_PRECONDITION);
  EXPECT_EQ(control("resume", id).campaign().state(), CAMPAIGN_RUNNING);
  EXPECT_EQ(control("resume", id).code(), CLIENT_FAILED_PRECONDITION);
  EXPECT_EQ(control("cancel", id).campaign().state(), CAMPAIGN_CANCELLED);
  EXPECT_EQ(control("cancel", id).code(), CLIENT_FAILED_PRECONDITION);
  EXPECT_EQ(control("pause", "nope").code(), CLIENT_NOT_FOUND);
  // A retried pause (same request id) gets the first outcome, not a refusal.
  ClientRequest pause;
  pause.set_request_id("pause-once");
  pause.mutable_pause()->set_campaign(id);
  EXPECT_EQ(client_->Call(pause)->code(), CLIENT_FAILED_PRECONDITION) << "cancelled already";
  ClientRequest other;
  other.mutable_submit()->CopyFrom(Submission(Campaign(3)).submit());
  other.set_request_id("second-campaign");
  const std::string second = client_->Call(other)->submitted().id();
  pause.set_request_id("pause-second");
  pause.mutable_pause()->set_campaign(second);
  EXPECT_EQ(client_->Call(pause)->campaign().state(), CAMPAIGN_PAUSED);
  EXPECT_EQ(client_->Call(pause)->campaign().state(), CAMPAIGN_PAUSED) << "the retry";
  EXPECT_EQ(client_->Call(pause)->code(), CLIENT_OK);
  std::optional<ClientReply> status = client_->Status();
  ASSERT_TRUE(status.has_value());
  ASSERT_EQ(status->status().campaigns_size(), 2);
  // A client may name a campaign instead: the newest of that name (both are "tiny").
  std::optional<ClientReply> named = client_->Status("tiny");
  ASSERT_TRUE(named.has_value());
  ASSERT_EQ(named->status().campaigns_size(), 1);
  EXPECT_EQ(named->status().campaigns(0).campaign().id(), second);
  EXPECT_EQ(control("resume", "tiny").campaign().id(), second);
  ClientRequest best;
  best.mutable_best()->set_campaign("tiny");
  std::optional<ClientReply> best_reply = client_->Call(best);
  ASSERT_TRUE(best_reply.has_value());
  EXPECT_EQ(best_reply->code(), CLIENT_OK) << best_reply->error();
  EXPECT_EQ(best_reply->best().pipelines_size(), 1);
  ClientRequest page;
  page.mutable_export_measurements()->set_campaign("tiny");
  EXPECT_EQ(client_->Call(page)->code(), CLIENT_OK);
  std::optional<ClientReply> unknown = client_->Status("nope");
  ASSERT_TRUE(unknown.has_value());
  EXPECT_EQ(unknown->code(), CLIENT_NOT_FOUND);
  EXPECT_EQ(unknown->error(), "no campaign 'nope'");
  // SIGTERM stops the coordinator cleanly (exit 0), and the state survives a restart.
  coordinator_->process().Signal(SIGTERM);
  std::optional<int> exit_status = coordinator_->process().Wait(10000);
  ASSERT_TRUE(exit_status.has_value());
  EXPECT_TRUE(WIFEXITED(*exit_status) && WEXITSTATUS(*exit_status) == 0) << coordinator_->Log();
  EXPECT_NE(coordinator_->Log().find("event=stopped"), std::string::npos);
  StartCoordinator();
  status = client_->Status(id);
  ASSERT_TRUE(status.has_value());
  EXPECT_EQ(status->status().campaigns(0).campaign().state(), CAMPAIGN_CANCELLED);
}

TEST_F(FarmTest, LearnerApiProposesCandidatesAndKeepsModels) {
  StartCoordinator();
  std::string yaml = Campaign(3);
  yaml.replace(yaml.find("{name: random, settings: {seed: 7}}"),
               std::string("{name: random, settings: {seed: 7}}").size(), "{name: model-guided}");
  const std::string id = Submit(yaml);
  ASSERT_FALSE(id.empty());
  std::optional<ClientReply> status = client_->Status(id);
  ASSERT_TRUE(status.has_value());
  EXPECT_EQ(status->status().campaigns(0).campaign().counters().queued(), 0)
      << "a model-guided campaign waits for the learner's proposals";

  ClientRequest pipelines;
  pipelines.mutable_pipelines()->set_campaign(id);
  std::optional<ClientReply> reply = client_->Call(pipelines);
  ASSERT_TRUE(reply.has_value());
  ASSERT_EQ(reply->pipelines().pipelines_size(), 1);
  StatusOr<PipelineGraph> graph = PipelineGraph::Build(reply->pipelines().pipelines(0));
  ASSERT_TRUE(graph.ok());
  ScheduleSpace space(*graph);

  ClientRequest propose;
  propose.mutable_propose()->set_campaign(id);
  for (uint64_t seed : {1, 2, 1}) {
    Candidate* candidate = propose.mutable_propose()->add_candidates();
    candidate->set_pipeline_id(space.pipeline_id());
    *candidate->mutable_schedule() = space.RandomSchedule(seed);
    candidate->set_origin("model-guided");
  }
  Candidate* bad = propose.mutable_propose()->add_candidates();
  bad->set_pipeline_id(space.pipeline_id());
  *bad->mutable_schedule() = space.RandomSchedule(3);
  bad->mutable_schedule()->mutable_stages(0)->set_compute(INLINE);
  reply = client_->Call(propose);
  ASSERT_TRUE(reply.has_value());
  ASSERT_EQ(reply->code(), CLIENT_OK) << reply->error();
  EXPECT_EQ(reply->proposed().accepted(), 2);
  EXPECT_EQ(reply->proposed().duplicates(), 1);
  ASSERT_EQ(reply->proposed().refused_size(), 1);
  EXPECT_NE(reply->proposed().refused(0).find("candidates[3]"), std::string::npos);
  status = client_->Status(id);
  EXPECT_EQ(status->status().campaigns(0).campaign().counters().queued(), 2);

  // A search that failed is told with its batch and kept as an event of the campaign.
  ClientRequest failed;
  failed.mutable_propose()->set_campaign(id);
  failed.mutable_propose()->add_search_failures("pipeline p: strategy 'greedy' failed: boom");
  reply = client_->Call(failed);
  ASSERT_TRUE(reply.has_value());
  EXPECT_EQ(reply->code(), CLIENT_OK) << reply->error();
  bool recorded = false;
  for (const Event& e : Events()) {
    recorded = recorded || (e.kind() == "search_failed" && e.campaign() == id &&
                            e.text().find("boom") != std::string::npos);
  }
  EXPECT_TRUE(recorded);

  ClientRequest store;
  Model* model = store.mutable_store_model()->mutable_model();
  model->set_kind("gcn");
  model->set_version("v1");
  model->set_campaign(id);
  model->set_created_unix_ms(1000);
  model->set_weights("weights");
  (*model->mutable_metrics())["mape"] = 0.25;
  reply = client_->Call(store);
  ASSERT_TRUE(reply.has_value());
  EXPECT_EQ(reply->code(), CLIENT_OK) << reply->error();
  EXPECT_TRUE(reply->stored_model().weights().empty());
  model->set_campaign("nope");
  EXPECT_EQ(client_->Call(store)->code(), CLIENT_NOT_FOUND);
  ClientRequest models;
  models.mutable_models()->set_campaign(id);
  reply = client_->Call(models);
  ASSERT_TRUE(reply.has_value());
  ASSERT_EQ(reply->models().models_size(), 1);
  EXPECT_EQ(reply->models().models(0).metrics().at("mape"), 0.25);
  EXPECT_TRUE(reply->models().models(0).weights().empty());
  models.mutable_models()->set_with_weights(true);
  EXPECT_EQ(client_->Call(models)->models().models(0).weights(), "weights");
}

// Value iteration's API: rounds stored and listed across a restart, the dispatch state
// of candidates (live, then final from the store), and `complete`, which ends a
// learner-driven campaign once its candidates are final.
TEST_F(FarmTest, ValueRoundsCandidatesAndCompleteServeTheLearner) {
  StartCoordinator();
  std::string yaml = Campaign(10);
  yaml.replace(yaml.find("{name: random, settings: {seed: 7}}"),
               std::string("{name: random, settings: {seed: 7}}").size(), "{name: model-guided}");
  const std::string id = Submit(yaml);
  ASSERT_FALSE(id.empty());
  ClientRequest pipelines;
  pipelines.mutable_pipelines()->set_campaign(id);
  std::optional<ClientReply> reply = client_->Call(pipelines);
  ASSERT_TRUE(reply.has_value());
  StatusOr<PipelineGraph> graph = PipelineGraph::Build(reply->pipelines().pipelines(0));
  ASSERT_TRUE(graph.ok());
  ScheduleSpace space(*graph);
  ClientRequest propose;
  propose.mutable_propose()->set_campaign(id);
  ClientRequest candidates;
  candidates.mutable_candidates()->set_campaign(id);
  for (uint64_t seed : {1, 2}) {
    Candidate* candidate = propose.mutable_propose()->add_candidates();
    candidate->set_pipeline_id(space.pipeline_id());
    *candidate->mutable_schedule() = space.RandomSchedule(seed);
    CandidatesRequest::Key* key = candidates.mutable_candidates()->add_keys();
    key->set_pipeline_id(space.pipeline_id());
    key->set_schedule_hash(ScheduleHash(space, candidate->schedule()));
  }
  ASSERT_EQ(client_->Call(propose)->proposed().accepted(), 2);
  CandidatesRequest::Key* unknown = candidates.mutable_candidates()->add_keys();
  unknown->set_pipeline_id(space.pipeline_id());
  unknown->set_schedule_hash("no-such-schedule");
  reply = client_->Call(candidates);
  ASSERT_TRUE(reply.has_value());
  ASSERT_EQ(reply->code(), CLIENT_OK) << reply->error();
  ASSERT_EQ(reply->candidates().candidates_size(), 2) << "the unknown key is left out";
  for (const CandidateRecord& record : reply->candidates().candidates()) {
    EXPECT_EQ(record.state(), CANDIDATE_QUEUED);
  }

  auto round_of = [&](int round, ValueRoundState state) {
    ClientRequest request;
    ValueRound* r = request.mutable_store_value_round();
    r->set_campaign(id);
    r->set_round(round);
    r->set_state(state);
    r->set_fitted_model("bilstm-v" + std::to_string(round));
    return request;
  };
  EXPECT_EQ(client_->Call(round_of(1, VALUE_ROUND_PLANNED))->code(), CLIENT_OK);
  EXPECT_EQ(client_->Call(round_of(0, VALUE_ROUND_FITTED))->code(), CLIENT_OK);
  EXPECT_EQ(client_->Call(round_of(-1, VALUE_ROUND_FITTED))->code(), CLIENT_INVALID_ARGUMENT);
  reply = client_->Call(round_of(2, VALUE_ROUND_STATE_UNSPECIFIED));
  EXPECT_EQ(reply->code(), CLIENT_INVALID_ARGUMENT);
  EXPECT_NE(reply->error().find("neither planned nor fitted"), std::string::npos) << reply->error();
  ClientRequest elsewhere = round_of(0, VALUE_ROUND_FITTED);
  elsewhere.mutable_store_value_round()->set_campaign("nope");
  EXPECT_EQ(client_->Call(elsewhere)->code(), CLIENT_NOT_FOUND);

  // complete: refused for a campaign that proposes its own candidates; accepted here,
  // but the campaign runs until its two candidates are measured.
  const std::string random_id = Submit(Campaign(1));
  ClientRequest complete;
  complete.mutable_complete()->set_campaign(random_id);
  reply = client_->Call(complete);
  EXPECT_EQ(reply->code(), CLIENT_FAILED_PRECONDITION);
  EXPECT_NE(reply->error().find("proposes its own candidates"), std::string::npos)
      << reply->error();
  complete.mutable_complete()->set_campaign(id);
  reply = client_->Call(complete);
  ASSERT_EQ(reply->code(), CLIENT_OK) << reply->error();
  EXPECT_EQ(reply->campaign().state(), CAMPAIGN_RUNNING);
  std::unique_ptr<ChildProcess> worker = StartWorker("measurer");
  std::optional<CampaignStatus> done = WaitFor(
      id, [](const CampaignStatus& s) { return s.campaign().state() == CAMPAIGN_DONE; }, 240);
  ASSERT_TRUE(done.has_value());
  EXPECT_EQ(done->campaign().counters().finished(), 2);
  bool reason = false;
  for (const Event& e : Events()) {
    reason = reason || (e.kind() == "campaign_done" && e.campaign() == id &&
                        e.text() == "the strategy has nothing left");
  }
  EXPECT_TRUE(reason);
  reply = client_->Call(candidates);
  ASSERT_EQ(reply->candidates().candidates_size(), 2);
  for (const CandidateRecord& record : reply->candidates().candidates()) {
    EXPECT_EQ(record.state(), CANDIDATE_MEASURED) << "final records come from the store";
  }
  EXPECT_EQ(client_->Call(complete)->code(), CLIENT_FAILED_PRECONDITION) << "done already";

  // The rounds survive a restart, in round order.
  worker->Signal(SIGTERM);
  worker->Wait(20000);
  coordinator_->process().Signal(SIGTERM);
  ASSERT_TRUE(coordinator_->process().Wait(10000).has_value());
  StartCoordinator();
  ClientRequest rounds;
  rounds.mutable_value_rounds()->set_campaign(id);
  reply = client_->Call(rounds);
  ASSERT_TRUE(reply.has_value());
  ASSERT_EQ(reply->value_rounds().rounds_size(), 2);
  EXPECT_EQ(reply->value_rounds().rounds(0).round(), 0);
  EXPECT_EQ(reply->value_rounds().rounds(0).state(), VALUE_ROUND_FITTED);
  EXPECT_EQ(reply->value_rounds().rounds(1).round(), 1);
  EXPECT_EQ(reply->value_rounds().rounds(1).fitted_model(), "bilstm-v1");
  rounds.mutable_value_rounds()->set_campaign("nope");
  EXPECT_EQ(client_->Call(rounds)->code(), CLIENT_NOT_FOUND);
}

// One context for every secure call of the process, never terminated: after a refused
// CURVE handshake, zmq_ctx_term can wait forever on a loaded machine (libzmq issue
// 2733), as this test did once in about 70 runs beside a CPU hog.
zmq::context_t& SecureCallContext() {
  static zmq::context_t* context = new zmq::context_t;
  return *context;
}

// Sends `envelope` on a DEALER that uses the CURVE key pair `keys` and waits for any
// reply from the secure coordinator.
std::optional<Envelope> SecureCall(const std::string& endpoint, const CurveKeyPair& keys,
                                   const std::string& server_public_key, const Envelope& envelope,
                                   int timeout_ms) {
  zmq::socket_t socket(SecureCallContext(), zmq::socket_type::dealer);
  socket.set(zmq::sockopt::linger, 0);
  EXPECT_TRUE(MakeCurveClient(socket, keys, server_public_key).ok());
  socket.connect(endpoint);
  if (!socket.send(zmq::buffer(EncodeEnvelope(envelope)), zmq::send_flags::dontwait)) {
    return std::nullopt;
  }
  zmq::pollitem_t item = {socket.handle(), 0, ZMQ_POLLIN, 0};
  zmq::poll(&item, 1, std::chrono::milliseconds(timeout_ms));
  if (!(item.revents & ZMQ_POLLIN)) return std::nullopt;
  zmq::message_t message;
  if (!socket.recv(message, zmq::recv_flags::dontwait)) return std::nullopt;
  const DecodedFrame decoded = DecodeEnvelope(message.to_string_view());
  if (!decoded.ok()) return std::nullopt;
  return decoded.envelope;
}

TEST_F(FarmTest, SecureModeAdmitsOnlyAllowListedKeys) {
  const CurveKeyPair server = GenerateCurveKeyPair();
  const CurveKeyPair client = GenerateCurveKeyPair();
  const CurveKeyPair stranger = GenerateCurveKeyPair();
  const CurveKeyPair worker = GenerateCurveKeyPair();
  ASSERT_TRUE(WriteKeyPair(server, dir_.Sub("server")).ok());
  ASSERT_TRUE(WriteKeyPair(worker, dir_.Sub("worker")).ok());
  ASSERT_TRUE(WriteKeyPair(stranger, dir_.Sub("stranger")).ok());
  std::ofstream(dir_.Sub("allowed")) << client.public_key << " # the test client\n"
                                     << worker.public_key << " # a worker\n";
  StartCoordinator({"--curve-key", dir_.Sub("server"), "--allow-list", dir_.Sub("allowed")});
  EXPECT_NE(coordinator_->Log().find("secure=yes"), std::string::npos);

  Envelope status;
  status.mutable_client_request()->set_request_id("s1");
  status.mutable_client_request()->mutable_status();
  std::optional<Envelope> reply =
      SecureCall(coordinator_->endpoint(), client, server.public_key, status, 5000);
  ASSERT_TRUE(reply.has_value()) << "an allowed client is answered";
  EXPECT_TRUE(reply->has_client_reply());

  Envelope submit;
  *submit.mutable_client_request() = Submission(Campaign(1));
  submit.mutable_client_request()->set_request_id("s2");
  EXPECT_FALSE(SecureCall(coordinator_->endpoint(), stranger, server.public_key, submit, 1500))
      << "an unknown key cannot submit";
  Envelope reg;
  reg.mutable_register_()->mutable_host()->set_worker_id("intruder");
  reg.mutable_register_()->set_credits(4);
  EXPECT_FALSE(SecureCall(coordinator_->endpoint(), stranger, server.public_key, reg, 1500))
      << "an unknown key cannot register";
  Envelope result;
  Measurement* m = result.mutable_result()->mutable_measurement();
  m->set_lease_id("forged");
  m->set_status(OK);
  EXPECT_FALSE(SecureCall(coordinator_->endpoint(), stranger, server.public_key, result, 1500))
      << "an unknown key cannot send results";
  // Plain (unencrypted) clients get nothing either.
  TestClient plain(coordinator_->endpoint());
  ClientRequest plain_status;
  plain_status.mutable_status();
  EXPECT_FALSE(plain.Call(plain_status, 1500).has_value());

  // Real workers: the allow-listed one registers, the stranger never does.
  std::unique_ptr<ChildProcess> allowed = StartWorker(
      "allowed", {"--curve-key", dir_.Sub("worker"), "--server-key", dir_.Sub("server.pub")});
  std::unique_ptr<ChildProcess> intruder = StartWorker(
      "intruder", {"--curve-key", dir_.Sub("stranger"), "--server-key", dir_.Sub("server.pub")});
  Envelope workers;
  workers.mutable_client_request()->set_request_id("s3");
  workers.mutable_client_request()->mutable_workers();
  std::vector<std::string> seen;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (seen.empty() && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    reply = SecureCall(coordinator_->endpoint(), client, server.public_key, workers, 5000);
    ASSERT_TRUE(reply.has_value());
    for (const WorkerStatus& w : reply->client_reply().workers().workers()) {
      seen.push_back(w.record().host().worker_id());
    }
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(1500));  // time for the intruder too
  reply = SecureCall(coordinator_->endpoint(), client, server.public_key, workers, 5000);
  ASSERT_TRUE(reply.has_value());
  ASSERT_EQ(reply->client_reply().workers().workers_size(), 1);
  EXPECT_EQ(reply->client_reply().workers().workers(0).record().host().worker_id(), "allowed");
  reply = SecureCall(coordinator_->endpoint(), client, server.public_key, status, 5000);
  ASSERT_TRUE(reply.has_value());
  EXPECT_EQ(reply->client_reply().status().campaigns_size(), 0);
}

TEST_F(FarmTest, CoordinatorRefusesBadStartArguments) {
  ChildProcess no_list(FARM_COORDINATOR_BIN,
                       {"--store", dir_.Sub("s1"), "--curve-key", dir_.Sub("missing")});
  ASSERT_TRUE(no_list.Wait(10000).has_value());
  EXPECT_NE(no_list.Log().find("--curve-key and --allow-list go together"), std::string::npos);
  ChildProcess missing_key(FARM_COORDINATOR_BIN,
                           {"--store", dir_.Sub("s2"), "--curve-key", dir_.Sub("missing"),
                            "--allow-list", dir_.Sub("missing.list")});
  std::optional<int> status = missing_key.Wait(10000);
  ASSERT_TRUE(status.has_value());
  EXPECT_EQ(WEXITSTATUS(*status), 1);
  EXPECT_NE(missing_key.Log().find("event=start_failed"), std::string::npos);
  ChildProcess bad_flag(FARM_COORDINATOR_BIN, {"--store", dir_.Sub("s3"), "--liveness", "zero"});
  status = bad_flag.Wait(10000);
  ASSERT_TRUE(status.has_value());
  EXPECT_EQ(WEXITSTATUS(*status), 2);
  EXPECT_NE(bad_flag.Log().find("--liveness must be an integer"), std::string::npos);
}

}  // namespace
}  // namespace schedfarm
