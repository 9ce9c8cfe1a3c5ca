// Power loss: a writer commits batches of results through a file system that loses
// power at a random moment (tests/storage/power_loss_fs.h); what was never synced is
// gone, as after a real power cut. Reopened on the real file system, the store holds
// every batch whose Commit returned before the cut (100% of acknowledged results), and
// its measurements are a prefix of the commit order: no gap, nothing torn, and new
// commits continue the sequence.
#include <gtest/gtest.h>

#include <chrono>
#include <random>
#include <set>
#include <thread>

#include "power_loss_fs.h"
#include "storage/store.h"
#include "test_records.h"

namespace schedfarm {
namespace {

using testing_support::PowerLossFileSystem;

struct CutResult {
  std::set<uint64_t> acknowledged;
  uint64_t attempted = 0;  // commits begun
  uint64_t dropped_bytes = 0;
};

// Where the power fails: at a moment, instead of a sync, or halfway through an append.
struct CutPlan {
  std::chrono::milliseconds after{0};
  int at_sync = 0;
  int in_append = 0;
};

// Commits batches of 1-3 results, with their candidate records and the campaign's
// counters, until the power is cut as `plan` says; then closes the store and leaves on
// disk what survived.
CutResult WriteUntilThePowerFails(const std::string& path, const CutPlan& plan) {
  auto fs = std::make_shared<PowerLossFileSystem>();
  if (plan.at_sync > 0) fs->CutAtSync(plan.at_sync);
  if (plan.in_append > 0) fs->CutInAppend(plan.in_append);
  std::unique_ptr<rocksdb::Env> env = rocksdb::NewCompositeEnv(fs);
  CutResult result;
  {
    StatusOr<std::unique_ptr<Store>> store = Store::Open(path, env.get());
    EXPECT_TRUE(store.ok()) << store.status().message();
    if (!store.ok()) return result;
    std::optional<Campaign> existing = *(*store)->GetCampaign("c1");
    Campaign campaign = existing.value_or(MakeCampaign("c1", 0));
    std::thread cutter([&] {
      if (plan.after.count() == 0) return;
      std::this_thread::sleep_for(plan.after);
      fs->Cut();
    });
    for (int i = 0; !fs->cut(); ++i) {
      Store::Batch batch;
      const int results = 1 + i % 3;
      for (int r = 0; r < results; ++r) {
        Candidate c = MakeCandidate("c1", "p1", i * 3 + r);
        c.set_schedule_hash("h-" + std::to_string(result.attempted) + "-" + std::to_string(r));
        batch.AddMeasurement(MakeMeasurement(c, OK, 0.001 * (1 + (i * 7 + r) % 13)));
        batch.PutCandidate(MakeCandidateRecord(c, CANDIDATE_MEASURED, 1));
      }
      campaign.mutable_counters()->set_measured(campaign.counters().measured() + results);
      batch.PutCampaign(campaign);
      ++result.attempted;
      StatusOr<Store::Committed> committed = (*store)->Commit(batch);
      // A commit that returns after the cut was never acknowledged: the process that
      // would acknowledge it lost its power too.
      if (!committed.ok() || fs->cut()) break;
      result.acknowledged.insert(committed->measurement_seqs.begin(),
                                 committed->measurement_seqs.end());
    }
    cutter.join();
  }  // closed while the power is off: nothing more reaches the disk
  result.dropped_bytes = fs->Restore();
  return result;
}

TEST(StorePowerLoss, AcknowledgedResultsSurviveAndTheRestIsAPrefix) {
  ScratchDir dir;
  const std::string path = dir.Sub("db");
  std::mt19937 random(20261126);
  uint64_t acknowledged_total = 0, dropped_total = 0;
  // Each round writes on to the store the previous rounds left.
  for (int round = 0; round < 9; ++round) {
    SCOPED_TRACE("round " + std::to_string(round));
    CutPlan plan;
    std::string where;
    if (round % 3 == 0) {
      plan.after = std::chrono::milliseconds(20 + random() % 300);
      where = "after " + std::to_string(plan.after.count()) + " ms";
    } else if (round % 3 == 1) {
      plan.at_sync = 1 + static_cast<int>(random() % 400);
      where = "instead of sync " + std::to_string(plan.at_sync);
    } else {
      plan.in_append = 1 + static_cast<int>(random() % 400);
      where = "halfway through append " + std::to_string(plan.in_append);
    }
    const CutResult cut = WriteUntilThePowerFails(path, plan);
    acknowledged_total += cut.acknowledged.size();
    dropped_total += cut.dropped_bytes;

    StatusOr<std::unique_ptr<Store>> store = Store::Open(path);
    ASSERT_TRUE(store.ok()) << store.status().message();
    std::set<uint64_t> present;
    int64_t ok_rows = 0;
    ASSERT_TRUE((*store)->ScanMeasurements("c1", 0, [&](const StoredMeasurement& m) {
                          present.insert(m.seq);
                          ok_rows += m.measurement.status() == OK;
                          return true;
                        }).ok());
    for (uint64_t seq : cut.acknowledged) {
      EXPECT_TRUE(present.count(seq)) << "acknowledged measurement " << seq << " lost";
    }
    // A prefix: 1..n without a gap, and the sequence goes on from n.
    ASSERT_FALSE(present.empty());
    EXPECT_EQ(*present.begin(), 1u);
    EXPECT_EQ(*present.rbegin(), present.size()) << "a gap in the measurements";
    EXPECT_EQ((*store)->last_measurement_seq(), present.size());
    // The campaign's counters were written in the same batches as the results.
    std::optional<Campaign> campaign = *(*store)->GetCampaign("c1");
    ASSERT_TRUE(campaign.has_value());
    EXPECT_EQ(campaign->counters().measured(), ok_rows);
    Store::Batch next;
    next.AddMeasurement(MakeMeasurement(MakeCandidate("c1", "p1", 1), OK, 0.002));
    campaign->mutable_counters()->set_measured(ok_rows + 1);
    next.PutCampaign(*campaign);
    StatusOr<Store::Committed> committed = (*store)->Commit(next);
    ASSERT_TRUE(committed.ok()) << committed.status().message();
    EXPECT_EQ(committed->measurement_seqs.at(0), present.size() + 1);
    std::cout << "round " << round << ": power cut " << where << ", "
              << cut.attempted << " commits begun, " << cut.acknowledged.size()
              << " results acknowledged, " << present.size() << " present, "
              << cut.dropped_bytes << " unsynced bytes dropped\n";
  }
  EXPECT_GT(acknowledged_total, 0u);
  EXPECT_GT(dropped_total, 0u) << "no round lost unsynced data: the test tested nothing";
}

}  // namespace
}  // namespace schedfarm
