// The writer process of the kill -9 test: `store_crash_writer DB CAMPAIGN` commits, in
// a loop until killed, batches of 1-3 results (measurement, candidate record, campaign
// counters) and writes each acknowledged measurement seq to stdout as 8 raw bytes.
#include <unistd.h>

#include <cstdio>
#include <string>

#include "storage/store.h"
#include "test_records.h"

int main(int argc, char** argv) {
  using namespace schedfarm;
  if (argc != 3) {
    std::fprintf(stderr, "usage: store_crash_writer DB CAMPAIGN\n");
    return 2;
  }
  const std::string campaign_id = argv[2];
  auto store = Store::Open(argv[1]);
  if (!store.ok()) {
    std::fprintf(stderr, "%s\n", store.status().message().c_str());
    return 1;
  }
  auto existing = (*store)->GetCampaign(campaign_id);
  if (!existing.ok()) {
    std::fprintf(stderr, "%s\n", existing.status().message().c_str());
    return 1;
  }
  Campaign campaign = existing->value_or(MakeCampaign(campaign_id, 0));
  const std::string tag = std::to_string(::getpid());
  for (int i = 0;; ++i) {
    Store::Batch batch;
    const int results = 1 + i % 3;
    for (int r = 0; r < results; ++r) {
      Candidate c = MakeCandidate(campaign_id, "p1", i * 3 + r);
      c.set_schedule_hash(tag + "-" + std::to_string(i) + "-" + std::to_string(r));
      batch.AddMeasurement(MakeMeasurement(c, OK, 0.001 * (1 + (i * 7 + r) % 13)));
      CandidateRecord record = MakeCandidateRecord(c, CANDIDATE_MEASURED, 1);
      record.set_lease_id("lease-" + c.schedule_hash());
      batch.PutCandidate(record);
    }
    campaign.mutable_counters()->set_measured(campaign.counters().measured() + results);
    batch.PutCampaign(campaign);
    auto committed = (*store)->Commit(batch);
    if (!committed.ok()) {
      std::fprintf(stderr, "%s\n", committed.status().message().c_str());
      return 1;
    }
    for (uint64_t seq : committed->measurement_seqs) {
      if (::write(STDOUT_FILENO, &seq, sizeof(seq)) != sizeof(seq)) return 1;
    }
  }
}
