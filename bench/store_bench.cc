// The raw rate of the store's synced, batched writes: each result is a Measurement with
// 10 samples plus its candidate's record, and each batch carries the campaign with its
// counters once (the coordinator's group commit). Prints results per second for
// batches of 1, 16 and 256 results: the ceiling for the coordinator's ingest rate.
//
// store_bench [SECONDS_PER_SIZE]   (default 2)
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>

#include "common/elapsed.h"
#include "storage/store.h"

namespace schedfarm {
namespace {

Measurement MakeResult(int64_t index) {
  Measurement m;
  Candidate* c = m.mutable_candidate();
  c->set_campaign("bench");
  c->set_pipeline_id("5f0c9a1e77d2b4c3a8e9f6d1b2c3a4e5");
  c->set_schedule_hash("h" + std::to_string(index));
  c->set_origin("random");
  for (const char* name : {"conv1", "relu1", "pool1"}) {
    StageSchedule* stage = c->mutable_schedule()->add_stages();
    stage->set_stage(name);
    stage->set_compute(ROOT);
    DimSplit* split = stage->mutable_pure()->add_splits();
    split->set_dim("d0");
    split->add_factors(8);
    split->add_factors(4);
    stage->mutable_pure()->mutable_vectorize()->set_stage(name);
    stage->mutable_pure()->mutable_vectorize()->set_dim("d0");
    stage->mutable_pure()->mutable_vectorize()->set_level(2);
    stage->mutable_pure()->set_vector_width(8);
    stage->mutable_pure()->add_parallel()->set_dim("d3");
  }
  HostFingerprint* host = m.mutable_host();
  host->set_worker_id("worker-17");
  host->set_hostname("xeon-17");
  host->set_cpu_model("Intel(R) Xeon(R) Gold 6230 CPU @ 2.10GHz");
  host->set_cores(40);
  for (const char* isa : {"sse41", "avx", "avx2", "fma", "avx512f"}) host->add_isa_flags(isa);
  host->set_halide_target("x86-64-linux-avx512");
  m.set_status(OK);
  m.set_compile_seconds(0.8);
  for (int i = 0; i < 10; ++i) m.add_samples_seconds(0.00125 + 1e-6 * i);
  m.mutable_stats()->set_min_seconds(0.00125);
  m.mutable_stats()->set_median_seconds(0.0012545 + 1e-9 * (index % 1000));
  m.mutable_stats()->set_mean_seconds(0.0012545);
  m.mutable_stats()->set_stddev_seconds(3e-6);
  m.mutable_stats()->set_cv(0.0024);
  m.set_output_checksum("9b1f3c2a");
  m.set_lease_id("lease-" + std::to_string(index));
  m.set_finished_unix_ms(1700000000000 + index);
  m.mutable_settings()->set_samples(10);
  m.set_repeats_per_sample(8);
  return m;
}

int Run(double seconds) {
  const std::filesystem::path dir =
      std::filesystem::temp_directory_path() / ("store_bench_" + std::to_string(::getpid()));
  std::printf(
      "synced batched writes: Measurement (10 samples) + CandidateRecord per result,\n"
      "the Campaign with its counters once per batch; %.1f s per batch size\n\n",
      seconds);
  std::printf("%10s %12s %14s %14s\n", "batch", "batches/s", "results/s", "ms/commit");
  for (int batch_size : {1, 16, 256}) {
    std::filesystem::remove_all(dir);
    auto opened = Store::Open(dir.string());
    if (!opened.ok()) {
      std::fprintf(stderr, "%s\n", opened.status().message().c_str());
      return 1;
    }
    std::unique_ptr<Store> store = std::move(*opened);
    Campaign campaign;
    campaign.set_id("bench");
    campaign.set_yaml_source(std::string(2000, 'y'));  // a campaign file of realistic size
    campaign.set_state(CAMPAIGN_RUNNING);
    campaign.set_budget(1000000);
    int64_t results = 0, batches = 0;
    const auto start = std::chrono::steady_clock::now();
    double elapsed = 0;
    while (elapsed < seconds) {
      Store::Batch batch;
      for (int r = 0; r < batch_size; ++r) {
        Measurement m = MakeResult(results + r);
        CandidateRecord record;
        *record.mutable_candidate() = m.candidate();
        record.set_state(CANDIDATE_MEASURED);
        record.set_attempts(1);
        record.set_lease_id(m.lease_id());
        batch.AddMeasurement(m);
        batch.PutCandidate(record);
      }
      campaign.mutable_counters()->set_measured(results + batch_size);
      batch.PutCampaign(campaign);
      auto committed = store->Commit(batch);
      if (!committed.ok()) {
        std::fprintf(stderr, "%s\n", committed.status().message().c_str());
        return 1;
      }
      results += batch_size;
      ++batches;
      elapsed = SecondsSince(start);
    }
    std::printf("%10d %12.0f %14.0f %14.3f\n", batch_size, batches / elapsed, results / elapsed,
                1e3 * elapsed / batches);
    store.reset();
  }
  std::filesystem::remove_all(dir);
  return 0;
}

}  // namespace
}  // namespace schedfarm

int main(int argc, char** argv) {
  const double seconds = argc > 1 ? std::atof(argv[1]) : 2.0;
  if (!(seconds > 0)) {
    std::fprintf(stderr, "usage: store_bench [SECONDS_PER_SIZE > 0]\n");
    return 2;
  }
  return schedfarm::Run(seconds);
}
