// Helpers of the store tests: realistic records (a measurement with its samples, the
// candidate's record, the campaign) and a scratch directory removed at the end.
#pragma once

#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <string>

#include "schedfarm.pb.h"
#include "tests/support/scratch_dir.h"

namespace schedfarm {

inline Candidate MakeCandidate(const std::string& campaign, const std::string& pipeline_id,
                               int index) {
  Candidate c;
  c.set_campaign(campaign);
  c.set_pipeline_id(pipeline_id);
  c.set_schedule_hash("sched" + std::to_string(index));
  c.set_origin(index % 2 ? "random" : "adams2019");
  ScheduleSpec* schedule = c.mutable_schedule();
  schedule->set_pipeline_id(pipeline_id);
  StageSchedule* stage = schedule->add_stages();
  stage->set_stage("conv1");
  stage->set_compute(ROOT);
  DimSplit* split = stage->mutable_pure()->add_splits();
  split->set_dim("d0");
  split->add_factors(8 << (index % 3));
  stage->mutable_pure()->mutable_vectorize()->set_stage("conv1");
  stage->mutable_pure()->mutable_vectorize()->set_dim("d0");
  stage->mutable_pure()->mutable_vectorize()->set_level(1);
  stage->mutable_pure()->set_vector_width(8);
  return c;
}

// A measurement with 10 samples around `median`.
inline Measurement MakeMeasurement(const Candidate& candidate, MeasurementStatus status,
                                   double median) {
  Measurement m;
  *m.mutable_candidate() = candidate;
  m.mutable_host()->set_worker_id("w-1");
  m.mutable_host()->set_hostname("xeon-07");
  m.mutable_host()->set_cpu_model("Intel(R) Xeon(R) Gold 6230");
  m.mutable_host()->set_cores(40);
  m.mutable_host()->add_isa_flags("avx512f");
  m.mutable_host()->set_halide_target("x86-64-linux-avx512");
  m.set_status(status);
  m.set_compile_seconds(0.75);
  for (int i = 0; i < 10; ++i) m.add_samples_seconds(median * (1 + 0.001 * (i - 5)));
  m.mutable_stats()->set_min_seconds(median * 0.995);
  m.mutable_stats()->set_median_seconds(median);
  m.mutable_stats()->set_mean_seconds(median * 1.001);
  m.mutable_stats()->set_stddev_seconds(median * 0.003);
  m.mutable_stats()->set_cv(0.003);
  m.set_output_checksum("abc123");
  m.set_lease_id("lease-" + candidate.schedule_hash());
  m.set_finished_unix_ms(1700000000000);
  m.mutable_settings()->set_samples(10);
  m.set_repeats_per_sample(4);
  if (status != OK) m.set_error("error text, with \"quotes\"\nand a second line");
  return m;
}

inline CandidateRecord MakeCandidateRecord(const Candidate& candidate, CandidateState state,
                                           int attempts) {
  CandidateRecord r;
  *r.mutable_candidate() = candidate;
  r.set_state(state);
  r.set_attempts(attempts);
  r.set_next_attempt_unix_ms(1700000000000 + attempts);
  r.set_updated_unix_ms(1700000000000);
  return r;
}

inline Campaign MakeCampaign(const std::string& id, int64_t measured) {
  Campaign c;
  c.set_id(id);
  c.set_yaml_source("name: " + id + "\nbudget: 1000\n");
  c.set_state(CAMPAIGN_RUNNING);
  c.set_budget(1000);
  c.mutable_counters()->set_measured(measured);
  c.add_pipeline_ids("p1");
  return c;
}

}  // namespace schedfarm
