// The store on a real RocksDB in a scratch directory: key order, record round trips,
// scans, best-k against a brute-force sort, atomic batches, reopen, a writer process
// killed with SIGKILL, the one-writer rule, the secondary reader, corrupt records.
// (Suite "storage": `ctest -R storage` runs these.)
#include "storage/store.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <rocksdb/db.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <map>
#include <random>
#include <set>
#include <tuple>

#include "storage/keys.h"
#include "test_records.h"

namespace schedfarm {
namespace {

std::unique_ptr<Store> OpenOrDie(const std::string& path) {
  auto store = Store::Open(path);
  EXPECT_TRUE(store.ok()) << store.status().ToString();
  return store.ok() ? std::move(*store) : nullptr;
}

Store::Committed CommitOrDie(Store& store, const Store::Batch& batch) {
  auto committed = store.Commit(batch);
  EXPECT_TRUE(committed.ok()) << committed.status().ToString();
  return committed.ok() ? *committed : Store::Committed();
}

// Every measurement of the campaign as (seq, schedule hash).
std::vector<std::pair<uint64_t, std::string>> Measurements(const Store& store,
                                                           const std::string& campaign,
                                                           uint64_t from = 0) {
  std::vector<std::pair<uint64_t, std::string>> out;
  Status s = store.ScanMeasurements(campaign, from, [&](const StoredMeasurement& m) {
    out.emplace_back(m.seq, m.measurement.candidate().schedule_hash());
    return true;
  });
  EXPECT_TRUE(s.ok()) << s.ToString();
  return out;
}

// Writes `value` under `key` of column family `cf` directly with RocksDB.
void RawPut(const std::string& path, const std::string& cf, const std::string& key,
            const std::string& value) {
  std::vector<std::string> names;
  ASSERT_TRUE(rocksdb::DB::ListColumnFamilies(rocksdb::DBOptions(), path, &names).ok());
  std::vector<rocksdb::ColumnFamilyDescriptor> descriptors;
  for (const std::string& name : names) descriptors.emplace_back(name, rocksdb::Options());
  std::vector<rocksdb::ColumnFamilyHandle*> handles;
  rocksdb::DB* db = nullptr;
  ASSERT_TRUE(rocksdb::DB::Open(rocksdb::Options(), path, descriptors, &handles, &db).ok());
  const size_t index = std::find(names.begin(), names.end(), cf) - names.begin();
  ASSERT_LT(index, names.size()) << cf;
  EXPECT_TRUE(db->Put(rocksdb::WriteOptions(), handles[index], key, value).ok());
  for (auto* h : handles) EXPECT_TRUE(db->DestroyColumnFamilyHandle(h).ok());
  EXPECT_TRUE(db->Close().ok());
  delete db;
}

TEST(Store, KeysSortAsTheirFields) {
  std::mt19937_64 rng(7);
  std::uniform_real_distribution<double> dist(-1e3, 1e3);
  std::vector<double> values = {0.0, 1e-300, -1e-300, 1e300, -1e300, 2.5e-7, -2.5e-7};
  for (int i = 0; i < 200; ++i) values.push_back(dist(rng) * std::pow(10.0, i % 7 - 3));
  for (double a : values) {
    for (double b : {values[0], values[3], values[11], values[150]}) {
      if (a == b) continue;
      EXPECT_EQ(a < b,
                store_keys::BestByPipelineKey("p", a, 1) < store_keys::BestByPipelineKey("p", b, 1))
          << a << " vs " << b;
    }
  }
  // Big-endian seqs sort numerically; a campaign's prefix does not cover a longer id.
  EXPECT_LT(store_keys::MeasurementKey("c", 255), store_keys::MeasurementKey("c", 256));
  EXPECT_LT(store_keys::MeasurementKey("c", uint64_t{1} << 40),
            store_keys::MeasurementKey("ca", 0));
  EXPECT_NE(store_keys::MeasurementKey("ca", 1).rfind(store_keys::IdPrefix("c"), 0), 0u);
  EXPECT_FALSE(store_keys::CheckId("campaign id", std::string("a\0b", 3)).ok());
  EXPECT_FALSE(store_keys::CheckId("campaign id", "").ok());
}

TEST(Store, EveryRecordRoundTrips) {
  ScratchDir dir;
  auto store = OpenOrDie(dir.Sub("db"));
  ASSERT_TRUE(store);
  PipelineSpec pipeline;
  pipeline.set_name("block");
  pipeline.add_outputs("y");
  Candidate c = MakeCandidate("c1", "p1", 1);
  Measurement m = MakeMeasurement(c, OK, 0.002);
  Model model;
  model.set_kind("gcn");
  model.set_version("v3");
  model.set_training_set_size(1234);
  (*model.mutable_metrics())["kendall_tau"] = 0.81;
  model.set_weights(std::string("\0\1\2weights", 10));
  WorkerRecord worker;
  worker.mutable_host()->set_worker_id("w-9");
  worker.mutable_host()->set_cores(16);
  worker.set_results_ok(12);
  (*worker.mutable_failures_by_status())["CRASH"] = 2;
  Event event;
  event.set_kind("campaign_submitted");
  event.set_campaign("c1");

  Store::Batch batch;
  batch.PutPipeline("p1", pipeline);
  batch.PutCampaign(MakeCampaign("c1", 1));
  batch.PutCandidate(MakeCandidateRecord(c, CANDIDATE_MEASURED, 2));
  batch.AddMeasurement(m);
  batch.PutModel(model);
  batch.PutWorker(worker);
  batch.AddEvent(event);
  Store::Committed committed = CommitOrDie(*store, batch);
  ASSERT_EQ(committed.measurement_seqs, std::vector<uint64_t>{1});
  ASSERT_EQ(committed.event_seqs, std::vector<uint64_t>{1});

  auto same = [](const google::protobuf::Message& a, const google::protobuf::Message& b) {
    return a.SerializeAsString() == b.SerializeAsString();
  };
  EXPECT_TRUE(same(**store->GetPipeline("p1"), pipeline));
  EXPECT_TRUE(same(**store->GetCampaign("c1"), MakeCampaign("c1", 1)));
  EXPECT_TRUE(same(**store->GetCandidate("c1", "p1", c.schedule_hash()),
                   MakeCandidateRecord(c, CANDIDATE_MEASURED, 2)));
  EXPECT_TRUE(same(**store->GetMeasurement("c1", 1), m));
  EXPECT_TRUE(same(**store->GetModel("gcn", "v3"), model));
  EXPECT_TRUE(same(**store->GetWorker("w-9"), worker));
  std::vector<Event> events;
  ASSERT_TRUE(store
                  ->ScanEvents(0,
                               [&](const Event& e) {
                                 events.push_back(e);
                                 return true;
                               })
                  .ok());
  ASSERT_EQ(events.size(), 1u);
  event.set_seq(1);
  EXPECT_TRUE(same(events[0], event));

  EXPECT_FALSE(store->GetPipeline("p2")->has_value());
  EXPECT_FALSE(store->GetCampaign("c2")->has_value());
  EXPECT_FALSE(store->GetCandidate("c1", "p1", "other")->has_value());
  EXPECT_FALSE(store->GetMeasurement("c1", 2)->has_value());
  EXPECT_FALSE(store->GetModel("gcn", "v4")->has_value());
  EXPECT_FALSE(store->GetWorker("w-1")->has_value());
}

TEST(Store, ScansFollowCampaignAndSequence) {
  ScratchDir dir;
  auto store = OpenOrDie(dir.Sub("db"));
  ASSERT_TRUE(store);
  // Campaigns whose ids prefix each other, interleaved over many batches.
  const std::vector<std::string> campaigns = {"a", "ab", "b"};
  std::map<std::string, std::vector<std::pair<uint64_t, std::string>>> expected;
  std::map<std::string, std::set<std::string>> expected_candidates;
  for (int i = 0; i < 60; ++i) {
    Store::Batch batch;
    const std::string& campaign = campaigns[(i * 7) % 3];
    Candidate c = MakeCandidate(campaign, i % 2 ? "p1" : "p2", i);
    batch.AddMeasurement(MakeMeasurement(c, i % 5 ? OK : CRASH, 0.001 * (i + 1)));
    batch.PutCandidate(MakeCandidateRecord(c, CANDIDATE_MEASURED, 1));
    Event e;
    e.set_kind("result");
    e.set_campaign(campaign);
    batch.AddEvent(e);
    Store::Committed committed = CommitOrDie(*store, batch);
    ASSERT_EQ(committed.measurement_seqs.size(), 1u);
    EXPECT_EQ(committed.event_seqs, std::vector<uint64_t>{static_cast<uint64_t>(i + 1)});
    expected[campaign].emplace_back(committed.measurement_seqs[0], c.schedule_hash());
    expected_candidates[campaign].insert(c.pipeline_id() + "/" + c.schedule_hash());
  }
  for (const std::string& campaign : campaigns) {
    EXPECT_EQ(Measurements(*store, campaign), expected[campaign]) << campaign;
    const auto& all = expected[campaign];
    // From a seq in the middle: the tail only.
    const uint64_t from = all[all.size() / 2].first;
    const std::vector<std::pair<uint64_t, std::string>> tail(all.begin() + all.size() / 2,
                                                             all.end());
    EXPECT_EQ(Measurements(*store, campaign, from), tail);
    std::set<std::string> candidates;
    std::string previous;
    ASSERT_TRUE(store
                    ->ScanCandidates(campaign,
                                     [&](const CandidateRecord& r) {
                                       EXPECT_EQ(r.candidate().campaign(), campaign);
                                       const std::string id = r.candidate().pipeline_id() + "/" +
                                                              r.candidate().schedule_hash();
                                       EXPECT_LT(previous, id);
                                       previous = id;
                                       candidates.insert(id);
                                       return true;
                                     })
                    .ok());
    EXPECT_EQ(candidates, expected_candidates[campaign]);
  }
  EXPECT_TRUE(Measurements(*store, "c").empty());
  // The visitor stops the scan.
  int visited = 0;
  ASSERT_TRUE(
      store->ScanMeasurements("a", 0, [&](const StoredMeasurement&) { return ++visited < 3; })
          .ok());
  EXPECT_EQ(visited, 3);
  std::vector<uint64_t> event_seqs;
  ASSERT_TRUE(store
                  ->ScanEvents(41,
                               [&](const Event& e) {
                                 event_seqs.push_back(e.seq());
                                 return true;
                               })
                  .ok());
  ASSERT_EQ(event_seqs.size(), 20u);
  for (size_t i = 0; i < event_seqs.size(); ++i) EXPECT_EQ(event_seqs[i], 41 + i);
  EXPECT_EQ(store->last_measurement_seq(), 60u);
  EXPECT_EQ(store->last_event_seq(), 60u);
}

TEST(Store, ValueRoundsScanInRoundOrderAndReplace) {
  ScratchDir dir;
  auto store = OpenOrDie(dir.Sub("db"));
  ASSERT_TRUE(store);
  auto round_of = [](const std::string& campaign, int round, ValueRoundState state) {
    ValueRound r;
    r.set_campaign(campaign);
    r.set_round(round);
    r.set_state(state);
    return r;
  };
  Store::Batch batch;
  // Out of order, past one byte, and a campaign whose id prefixes another.
  for (int round : {300, 2, 0, 1}) batch.PutValueRound(round_of("vi", round, VALUE_ROUND_PLANNED));
  batch.PutValueRound(round_of("vi2", 0, VALUE_ROUND_FITTED));
  CommitOrDie(*store, batch);
  Store::Batch replace;
  replace.PutValueRound(round_of("vi", 2, VALUE_ROUND_FITTED));
  CommitOrDie(*store, replace);
  std::vector<std::pair<int, ValueRoundState>> seen;
  ASSERT_TRUE(store
                  ->ScanValueRounds("vi",
                                    [&](const ValueRound& r) {
                                      EXPECT_EQ(r.campaign(), "vi");
                                      seen.emplace_back(r.round(), r.state());
                                      return true;
                                    })
                  .ok());
  const std::vector<std::pair<int, ValueRoundState>> expected = {{0, VALUE_ROUND_PLANNED},
                                                                 {1, VALUE_ROUND_PLANNED},
                                                                 {2, VALUE_ROUND_FITTED},
                                                                 {300, VALUE_ROUND_PLANNED}};
  EXPECT_EQ(seen, expected);
  Store::Batch bad;
  bad.PutValueRound(round_of("vi", -1, VALUE_ROUND_PLANNED));
  auto refused = store->Commit(bad);
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.status().message().find("value round -1 is negative"), std::string::npos)
      << refused.status().ToString();
}

TEST(Store, BestKMatchesABruteForceSort) {
  ScratchDir dir;
  auto store = OpenOrDie(dir.Sub("db"));
  ASSERT_TRUE(store);
  std::mt19937 rng(11);
  // (median, seq, campaign, pipeline) of every OK measurement.
  std::vector<std::tuple<double, uint64_t, std::string, std::string>> ok;
  for (int b = 0; b < 30; ++b) {
    Store::Batch batch;
    std::vector<std::tuple<double, std::string, std::string, bool>> added;
    for (int r = 0; r < 10; ++r) {
      const std::string campaign = rng() % 2 ? "c1" : "c2";
      const std::string pipeline = rng() % 3 ? "p1" : "p2";
      const bool is_ok = rng() % 10 < 7;
      // Few distinct medians, so ties are common and broken by seq.
      const double median = 1e-4 * (1 + rng() % 40);
      batch.AddMeasurement(MakeMeasurement(MakeCandidate(campaign, pipeline, b * 10 + r),
                                           is_ok ? OK : WRONG_ANSWER, median));
      added.emplace_back(median, campaign, pipeline, is_ok);
    }
    Store::Committed committed = CommitOrDie(*store, batch);
    ASSERT_EQ(committed.measurement_seqs.size(), added.size());
    for (size_t i = 0; i < added.size(); ++i) {
      auto [median, campaign, pipeline, is_ok] = added[i];
      if (is_ok) ok.emplace_back(median, committed.measurement_seqs[i], campaign, pipeline);
    }
  }
  std::sort(ok.begin(), ok.end());
  for (const std::string pipeline : {"p1", "p2", "p3"}) {
    for (const std::string campaign : {"", "c1", "c2"}) {
      for (size_t k : {0, 1, 7, 50, 1000}) {
        std::vector<uint64_t> want;
        for (const auto& [median, seq, c, p] : ok) {
          if (p == pipeline && (campaign.empty() || c == campaign) && want.size() < k) {
            want.push_back(seq);
          }
        }
        auto best = store->BestMeasurements(pipeline, k, campaign);
        ASSERT_TRUE(best.ok()) << best.status().ToString();
        std::vector<uint64_t> got;
        for (const StoredMeasurement& m : *best) {
          got.push_back(m.seq);
          EXPECT_EQ(m.measurement.status(), OK);
          EXPECT_EQ(m.measurement.candidate().pipeline_id(), pipeline);
        }
        EXPECT_EQ(got, want) << pipeline << " campaign '" << campaign << "' k=" << k;
      }
    }
  }
}

TEST(Store, ABatchIsWrittenWholeOrNotAtAll) {
  ScratchDir dir;
  auto store = OpenOrDie(dir.Sub("db"));
  ASSERT_TRUE(store);
  Candidate c = MakeCandidate("c1", "p1", 1);
  Store::Batch bad;
  bad.PutCampaign(MakeCampaign("c1", 1));
  bad.AddMeasurement(MakeMeasurement(c, OK, 0.001));
  Candidate no_hash = c;
  no_hash.clear_schedule_hash();
  bad.PutCandidate(MakeCandidateRecord(no_hash, CANDIDATE_MEASURED, 1));
  bad.AddEvent(Event());
  auto refused = store->Commit(bad);
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.status().message().find("candidate's schedule hash is empty"),
            std::string::npos)
      << refused.status().message();
  EXPECT_FALSE(store->GetCampaign("c1")->has_value());
  EXPECT_TRUE(Measurements(*store, "c1").empty());
  EXPECT_EQ(store->last_measurement_seq(), 0u);
  EXPECT_EQ(store->last_event_seq(), 0u);

  // The same records with a valid candidate land together, across column families.
  Store::Batch good;
  good.PutCampaign(MakeCampaign("c1", 1));
  good.AddMeasurement(MakeMeasurement(c, OK, 0.001));
  good.PutCandidate(MakeCandidateRecord(c, CANDIDATE_MEASURED, 1));
  Store::Committed committed = CommitOrDie(*store, good);
  EXPECT_EQ(committed.measurement_seqs, std::vector<uint64_t>{1});
  EXPECT_EQ((*store->GetCampaign("c1"))->counters().measured(), 1);
  EXPECT_EQ((*store->GetCandidate("c1", "p1", c.schedule_hash()))->state(), CANDIDATE_MEASURED);
  EXPECT_EQ(Measurements(*store, "c1").size(), 1u);
}

TEST(Store, ReopenKeepsRecordsAndSequencesContinue) {
  ScratchDir dir;
  std::vector<std::pair<uint64_t, std::string>> before;
  {
    auto store = OpenOrDie(dir.Sub("db"));
    ASSERT_TRUE(store);
    for (int i = 0; i < 5; ++i) {
      Store::Batch batch;
      batch.AddMeasurement(MakeMeasurement(MakeCandidate("c1", "p1", i), OK, 0.001));
      batch.AddEvent(Event());
      batch.AddEvent(Event());
      CommitOrDie(*store, batch);
    }
    Store::Batch campaign_only;
    campaign_only.PutCampaign(MakeCampaign("c1", 5));
    CommitOrDie(*store, campaign_only);
    before = Measurements(*store, "c1");
  }
  auto store = OpenOrDie(dir.Sub("db"));
  ASSERT_TRUE(store);
  EXPECT_EQ(Measurements(*store, "c1"), before);
  EXPECT_EQ((*store->GetCampaign("c1"))->counters().measured(), 5);
  EXPECT_EQ(store->last_measurement_seq(), 5u);
  EXPECT_EQ(store->last_event_seq(), 10u);
  Store::Batch batch;
  batch.AddMeasurement(MakeMeasurement(MakeCandidate("c2", "p1", 9), OK, 0.001));
  batch.AddEvent(Event());
  Store::Committed committed = CommitOrDie(*store, batch);
  EXPECT_EQ(committed.measurement_seqs, std::vector<uint64_t>{6});
  EXPECT_EQ(committed.event_seqs, std::vector<uint64_t>{11});
}

// Runs the crash writer on `db` with its stdout into a pipe; returns its pid.
pid_t StartWriter(const std::string& db, const std::string& campaign, int* read_fd,
                  int stderr_fd = -1) {
  int fds[2];
  if (::pipe(fds) != 0) return -1;
  pid_t pid = ::fork();
  if (pid == 0) {
    ::dup2(fds[1], STDOUT_FILENO);
    if (stderr_fd >= 0) ::dup2(stderr_fd, STDERR_FILENO);
    ::close(fds[0]);
    ::close(fds[1]);
    ::execl(STORE_CRASH_WRITER_BIN, STORE_CRASH_WRITER_BIN, db.c_str(), campaign.c_str(),
            static_cast<char*>(nullptr));
    ::_exit(127);
  }
  ::close(fds[1]);
  *read_fd = fds[0];
  return pid;
}

// Every seq the writer acknowledged before its pipe closed.
std::vector<uint64_t> ReadAcks(int fd) {
  std::string bytes;
  char buf[4096];
  ssize_t n;
  while ((n = ::read(fd, buf, sizeof(buf))) > 0) bytes.append(buf, n);
  ::close(fd);
  std::vector<uint64_t> seqs(bytes.size() / 8);
  std::memcpy(seqs.data(), bytes.data(), seqs.size() * 8);
  return seqs;
}

TEST(Store, AcknowledgedBatchesSurviveKillDashNine) {
  ScratchDir dir;
  const std::string db = dir.Sub("db");
  std::mt19937 rng(5);
  std::set<uint64_t> acked;
  for (int round = 0; round < 20; ++round) {
    int fd = -1;
    pid_t pid = StartWriter(db, "crash", &fd);
    ASSERT_GT(pid, 0);
    // Once the writer is in its loop (its first ack), kill it at a random moment.
    uint64_t first = 0;
    const ssize_t got = ::read(fd, &first, sizeof(first));
    if (got != static_cast<ssize_t>(sizeof(first))) {  // leave no writer behind
      ::kill(pid, SIGKILL);
      ::waitpid(pid, nullptr, 0);
    }
    ASSERT_EQ(got, static_cast<ssize_t>(sizeof(first)))
        << "round " << round << ": the writer acknowledged nothing";
    ::usleep(rng() % 200000);
    ASSERT_EQ(::kill(pid, SIGKILL), 0);
    std::vector<uint64_t> seqs = ReadAcks(fd);
    seqs.push_back(first);
    int wstatus = 0;
    ASSERT_EQ(::waitpid(pid, &wstatus, 0), pid);
    ASSERT_TRUE(WIFSIGNALED(wstatus)) << "the writer exited by itself: " << wstatus;
    acked.insert(seqs.begin(), seqs.end());

    auto store = OpenOrDie(db);
    ASSERT_TRUE(store);
    std::set<uint64_t> present;
    size_t candidates = 0;
    ASSERT_TRUE(store
                    ->ScanMeasurements(
                        "crash", 0,
                        [&](const StoredMeasurement& m) {
                          present.insert(m.seq);
                          // Its candidate record was in the same batch: it must be there, naming
                          // its lease.
                          const Candidate& c = m.measurement.candidate();
                          auto record =
                              store->GetCandidate("crash", c.pipeline_id(), c.schedule_hash());
                          EXPECT_TRUE(record.ok() && record->has_value()) << "seq " << m.seq;
                          if (record.ok() && record->has_value()) {
                            EXPECT_EQ((*record)->state(), CANDIDATE_MEASURED);
                            EXPECT_EQ((*record)->lease_id(), m.measurement.lease_id());
                          }
                          return true;
                        })
                    .ok());
    ASSERT_TRUE(store
                    ->ScanCandidates("crash",
                                     [&](const CandidateRecord&) {
                                       ++candidates;
                                       return true;
                                     })
                    .ok());
    for (uint64_t seq : acked)
      EXPECT_TRUE(present.count(seq)) << "round " << round << " seq " << seq;
    EXPECT_EQ(candidates, present.size()) << "round " << round;
    // The counters were in the same batches as the measurements.
    auto campaign = store->GetCampaign("crash");
    ASSERT_TRUE(campaign.ok() && campaign->has_value());
    EXPECT_EQ((*campaign)->counters().measured(), static_cast<int64_t>(present.size()));
    // Sequence numbers never repeat across crashes.
    EXPECT_EQ(store->last_measurement_seq(), *present.rbegin());
    if (::testing::Test::HasFailure()) return;
  }
}

TEST(Store, ASecondWriterIsRefused) {
  ScratchDir dir;
  const std::string db = dir.Sub("db");
  auto store = OpenOrDie(db);
  ASSERT_TRUE(store);
  // In this process.
  auto second = Store::Open(db);
  ASSERT_FALSE(second.ok());
  EXPECT_NE(second.status().message().find("already open for writing"), std::string::npos)
      << second.status().message();
  // In another process: the writer fails to open and says why on stderr.
  const std::string err_path = dir.Sub("stderr");
  int err_fd = ::open(err_path.c_str(), O_CREAT | O_WRONLY | O_TRUNC, 0644);
  ASSERT_GE(err_fd, 0);
  int fd = -1;
  pid_t pid = StartWriter(db, "c1", &fd, err_fd);
  ::close(err_fd);
  EXPECT_TRUE(ReadAcks(fd).empty());
  int wstatus = 0;
  ASSERT_EQ(::waitpid(pid, &wstatus, 0), pid);
  ASSERT_TRUE(WIFEXITED(wstatus));
  EXPECT_EQ(WEXITSTATUS(wstatus), 1);
  std::string err;
  FILE* f = std::fopen(err_path.c_str(), "r");
  ASSERT_TRUE(f);
  char buf[1024];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof(buf), f)) > 0) err.append(buf, n);
  std::fclose(f);
  EXPECT_NE(err.find("already open for writing"), std::string::npos) << err;
  EXPECT_NE(err.find("LOCK"), std::string::npos) << err;
}

TEST(Store, TheSecondarySeesNewWritesAfterCatchingUp) {
  ScratchDir dir;
  auto primary = OpenOrDie(dir.Sub("db"));
  ASSERT_TRUE(primary);
  Store::Batch first;
  first.PutCampaign(MakeCampaign("c1", 1));
  first.AddMeasurement(MakeMeasurement(MakeCandidate("c1", "p1", 1), OK, 0.003));
  CommitOrDie(*primary, first);

  auto opened = Store::OpenSecondary(dir.Sub("db"), dir.Sub("secondary"));
  ASSERT_TRUE(opened.ok()) << opened.status().ToString();
  std::unique_ptr<Store> secondary = std::move(*opened);
  EXPECT_EQ(Measurements(*secondary, "c1").size(), 1u);
  EXPECT_EQ(secondary->last_measurement_seq(), 1u);

  Store::Batch second;
  second.PutCampaign(MakeCampaign("c1", 2));
  second.AddMeasurement(MakeMeasurement(MakeCandidate("c1", "p1", 2), OK, 0.001));
  CommitOrDie(*primary, second);
  EXPECT_EQ(Measurements(*secondary, "c1").size(), 1u);  // not yet caught up
  ASSERT_TRUE(secondary->CatchUp().ok());
  EXPECT_EQ(Measurements(*secondary, "c1").size(), 2u);
  EXPECT_EQ((*secondary->GetCampaign("c1"))->counters().measured(), 2);
  EXPECT_EQ(secondary->last_measurement_seq(), 2u);
  auto best = secondary->BestMeasurements("p1", 1);
  ASSERT_TRUE(best.ok());
  ASSERT_EQ(best->size(), 1u);
  EXPECT_EQ((*best)[0].seq, 2u);

  // It is read-only; the primary cannot catch up.
  auto write = secondary->Commit(second);
  ASSERT_FALSE(write.ok());
  EXPECT_NE(write.status().message().find("read-only"), std::string::npos);
  EXPECT_FALSE(primary->CatchUp().ok());
}

TEST(Store, ACorruptRecordIsAnErrorNamingItsPlace) {
  ScratchDir dir;
  const std::string db = dir.Sub("db");
  {
    auto store = OpenOrDie(db);
    ASSERT_TRUE(store);
    Store::Batch batch;
    batch.AddMeasurement(MakeMeasurement(MakeCandidate("c1", "p1", 1), OK, 0.001));
    CommitOrDie(*store, batch);
  }
  // A truncated length-delimited field: no protobuf parser accepts it.
  RawPut(db, "measurements", store_keys::MeasurementKey("c1", 1), "\x0a\xff");
  RawPut(db, "campaigns", "c9", "\x0a\xff");
  auto store = OpenOrDie(db);
  ASSERT_TRUE(store);
  auto m = store->GetMeasurement("c1", 1);
  ASSERT_FALSE(m.ok());
  EXPECT_NE(m.status().message().find(
                "column family measurements, key 'c1\\x00\\x00\\x00\\x00\\x00\\x00\\x00\\x00"
                "\\x01': not a valid schedfarm.Measurement"),
            std::string::npos)
      << m.status().message();
  Status scan = store->ScanMeasurements("c1", 0, [](const StoredMeasurement&) { return true; });
  EXPECT_FALSE(scan.ok());
  EXPECT_NE(scan.ToString().find("column family measurements"), std::string::npos);
  auto best = store->BestMeasurements("p1", 3);
  EXPECT_FALSE(best.ok());
  auto campaign = store->GetCampaign("c9");
  ASSERT_FALSE(campaign.ok());
  EXPECT_NE(campaign.status().message().find("column family campaigns, key 'c9'"),
            std::string::npos)
      << campaign.status().message();
}

TEST(Store, AnotherLayoutVersionIsRefused) {
  ScratchDir dir;
  const std::string db = dir.Sub("db");
  { ASSERT_TRUE(OpenOrDie(db)); }
  std::string v2;
  store_keys::AppendU64(&v2, 2);
  RawPut(db, "default", store_keys::kLayoutVersionKey, v2);
  auto store = Store::Open(db);
  ASSERT_FALSE(store.ok());
  EXPECT_NE(store.status().message().find("is not 1"), std::string::npos)
      << store.status().message();
}

}  // namespace
}  // namespace schedfarm
