// `farmctl local` end to end: the real farmctl binary starts a coordinator and a worker
// on this machine, runs a small campaign to its end and prints the status table and
// the best schedules as Halide source, runs two campaigns and compares them; a bad
// campaign file starts nothing.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "common/cpus.h"
#include "storage/store.h"
#include "tests/support/scratch_dir.h"
#include "tests/support/shell.h"
#include "tests/support/synthetic_dataset.h"

namespace schedfarm {
namespace {

// The cpus farmctl's learner should get: every cpu this process may use but the last
// (a worker's benchmark core), or all of them when there is only one.
std::string LearnerCpus() {
  std::vector<int> cpus = AllowedCpus();
  if (cpus.size() > 1) cpus.pop_back();
  return CpuList(cpus);
}

using CliRun = testing_support::ShellRun;

CliRun RunFarmctl(const std::string& args, const ScratchDir& dir) {
  return testing_support::RunShell(std::string(FARMCTL_BIN) + " " + args, dir);
}

std::string ReadText(const std::string& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

// `farmctl local` of a model-guided replay campaign of a synthetic dataset (8 pipelines
// of 10 schedules, 2 held out), a GBT retrained every 12 results, in `dir`/farm.
CliRun RunReplayCampaign(const ScratchDir& dir, const std::string& settings, int budget) {
  EXPECT_TRUE(WriteDataset(dir.Sub("d.sfds"), testing_support::SyntheticDataset(8, 10)).ok());
  std::ofstream(dir.Sub("replay.yaml"))
      << "name: replay\n"
         "replay: {dataset: d.sfds, held_out: 0.25}\n"
         "strategy: {name: model-guided, settings: {model: gbt, batch: 8, retrain_every: 12"
      << settings << "}}\nbudget: {benchmarks: " << budget << "}\n";
  return RunFarmctl("local " + dir.Sub("replay.yaml") + " --dir " + dir.Sub("farm"), dir);
}

// A replay campaign runs on the real coordinator, learner and a replay worker: every
// candidate comes from the dataset and is answered from it, and the learner scores its
// models on the held-out pipelines' recorded schedules.
TEST(FarmctlLocalTest, RunsAReplayCampaignFromADataset) {
  ScratchDir dir;
  const CliRun run = RunReplayCampaign(dir, "", 100);
  ASSERT_EQ(run.exit_code, 0) << run.output;
  EXPECT_NE(run.output.find("1 worker (1 replaying a dataset)"), std::string::npos) << run.output;
  // The pool (60 schedules) ends the campaign before its budget.
  EXPECT_NE(run.output.find("60/100 benchmarks"), std::string::npos) << run.output;
  EXPECT_NE(run.output.find("  done  "), std::string::npos) << run.output;
  EXPECT_FALSE(std::filesystem::exists(dir.Sub("farm/logs/local-1.log")))
      << "no measuring worker for a replay campaign";
  const std::string worker = ReadText(dir.Sub("farm/logs/replay-1.log"));
  EXPECT_NE(worker.find("event=replay_started"), std::string::npos) << worker;
  EXPECT_NE(worker.find("status=OK"), std::string::npos) << worker;
  EXPECT_EQ(worker.find("NOT_IN_DATASET"), std::string::npos) << worker;
  const std::string learner = ReadText(dir.Sub("farm/logs/learner.log"));
  EXPECT_NE(learner.find("event=replay_loaded"), std::string::npos) << learner;
  EXPECT_NE(learner.find(" pool=60 held_out_samples=20"), std::string::npos)
      << "6 searched pipelines x 10, 2 held out x 10:\n"
      << learner;
  EXPECT_NE(learner.find("event=model_trained"), std::string::npos) << learner;
  EXPECT_NE(learner.find(" held_out=20 "), std::string::npos) << learner;
  EXPECT_NE(learner.find("event=search_exhausted"), std::string::npos) << learner;
}

// Diversity with near-tie re-measurement, on the real farm in replay: re-measurements
// are candidates of their own (the schedule's repeat N, after measurement N-1), answered
// from the dataset, each schedule at most 3 times, on top of the whole pool.
TEST(FarmctlLocalTest, ReplayCampaignReMeasuresNearTies) {
  ScratchDir dir;
  const CliRun run = RunReplayCampaign(dir, ", acquisition: diversity, remeasure: 0.5", 200);
  ASSERT_EQ(run.exit_code, 0) << run.output;
  EXPECT_NE(run.output.find("  done  "), std::string::npos) << run.output;

  // The farm has stopped: its store tells what was measured.
  StatusOr<std::unique_ptr<Store>> store = Store::Open(dir.Sub("farm/store"));
  ASSERT_TRUE(store.ok()) << store.status().message();
  std::string campaign;
  ASSERT_TRUE((*store)->ScanCampaigns([&](const Campaign& c) {
                        campaign = c.id();
                        return true;
                      }).ok());
  std::map<std::string, int> measurements;  // per schedule
  std::set<std::pair<std::string, int>> slots;
  int repeats = 0;
  ASSERT_TRUE((*store)->ScanMeasurements(campaign, 0, [&](const StoredMeasurement& row) {
                        const Measurement& m = row.measurement;
                        const Candidate& c = m.candidate();
                        EXPECT_EQ(m.status(), OK) << c.schedule_hash() << " repeat " << c.repeat();
                        EXPECT_TRUE(slots.insert({c.schedule_hash(), c.repeat()}).second)
                            << "one measurement per schedule and repeat";
                        EXPECT_TRUE(c.repeat() == 0 || slots.count({c.schedule_hash(), c.repeat() - 1}))
                            << "repeat N after measurement N-1";
                        if (c.repeat() > 0) {
                          ++repeats;
                          EXPECT_EQ(c.origin(), "remeasure");
                          EXPECT_EQ(c.acquisition(), "near-tie");
                          EXPECT_LE(c.acquisition_score(), 0);
                        } else {
                          EXPECT_NE(c.origin(), "remeasure");
                        }
                        ++measurements[c.schedule_hash()];
                        return true;
                      }).ok());
  EXPECT_EQ(measurements.size(), 60u) << "the whole pool";
  EXPECT_GT(repeats, 0) << "the pool's near-ties are measured again";
  EXPECT_EQ(slots.size(), 60u + static_cast<size_t>(repeats));
  for (const auto& [hash, count] : measurements) EXPECT_LE(count, 3) << hash;
}

TEST(FarmctlLocalTest, RunsACampaignToItsEndOnThisMachine) {
  ScratchDir dir;
  std::ofstream(dir.Sub("tiny.yaml")) << "name: tiny\n"
                                         "pipelines:\n"
                                         "  - zoo: {block: vgg_block, spatial_scale: 0.25, "
                                         "channel_scale: 0.25}\n"
                                         "budget: {benchmarks: 3}\n"
                                         "measurement: {samples: 2, min_sample_time: 1ms}\n";
  const CliRun run = RunFarmctl("local " + dir.Sub("tiny.yaml") + " --dir " + dir.Sub("farm"), dir);
  ASSERT_EQ(run.exit_code, 0) << run.output;
  EXPECT_NE(run.output.find("on a local farm"), std::string::npos) << run.output;
  EXPECT_NE(run.output.find("3/3 benchmarks (100%)"), std::string::npos) << run.output;
  EXPECT_NE(run.output.find("done"), std::string::npos) << run.output;
  EXPECT_NE(run.output.find(".compute_root()"), std::string::npos) << "the best schedule's source";
  EXPECT_TRUE(std::filesystem::exists(dir.Sub("farm/store")));
  EXPECT_TRUE(std::filesystem::exists(dir.Sub("farm/logs/coordinator.log")));
  std::ifstream learner(dir.Sub("farm/logs/learner.log"));
  std::stringstream learner_log;
  learner_log << learner.rdbuf();
  EXPECT_NE(learner_log.str().find("event=campaign_followed"), std::string::npos)
      << "the local farm has a learner:\n"
      << learner_log.str();
  EXPECT_NE(learner_log.str().find(" cpus=" + LearnerCpus() + "\n"), std::string::npos)
      << "the learner keeps off the benchmark core:\n"
      << learner_log.str();
  if (std::filesystem::exists("/proc/self/autogroup")) {
    EXPECT_NE(learner_log.str().find(" nice=10 autogroup=lowered "), std::string::npos)
        << "the learner leads its session and lowers its autogroup:\n"
        << learner_log.str();
  }
  std::ifstream log(dir.Sub("farm/logs/local-1.log"));
  std::stringstream worker_log;
  worker_log << log.rdbuf();
  EXPECT_NE(worker_log.str().find("event=drained"), std::string::npos)
      << "the worker was stopped cleanly:\n"
      << worker_log.str();
}

TEST(FarmctlLocalTest, RunsTwoCampaignsAndComparesThem) {
  ScratchDir dir;
  for (const std::string name : {"first", "second"}) {
    std::ofstream(dir.Sub(name + ".yaml"))
        << "name: " << name << "\n"
        << "pipelines:\n"
           "  - zoo: {block: vgg_block, spatial_scale: 0.25, channel_scale: 0.25}\n"
           "strategy: {name: random, settings: {seed: "
        << (name == "first" ? 1 : 2)
        << "}}\n"
           "budget: {benchmarks: 2}\n"
           "measurement: {samples: 2, min_sample_time: 1ms}\n";
  }
  const CliRun run = RunFarmctl(
      "local " + dir.Sub("first.yaml") + " " + dir.Sub("second.yaml") + " --dir " + dir.Sub("farm"),
      dir);
  ASSERT_EQ(run.exit_code, 0) << run.output;
  EXPECT_NE(run.output.find("2 campaigns on a local farm"), std::string::npos) << run.output;
  EXPECT_NE(run.output.find("(first): running"), std::string::npos) << run.output;
  EXPECT_NE(run.output.find("(second): running"), std::string::npos) << run.output;
  // Each one watched to its end, then the comparison: both random, so headed by name.
  EXPECT_NE(run.output.find("campaign first-"), std::string::npos) << run.output;
  EXPECT_NE(run.output.find("campaign second-"), std::string::npos) << run.output;
  const size_t title =
      run.output.find("best runtime per pipeline: 2 campaigns, 0 baselines, 1 pipeline");
  ASSERT_NE(title, std::string::npos) << run.output;
  const size_t header = run.output.find("\n  PIPELINE ", title);
  ASSERT_NE(header, std::string::npos) << run.output;
  const std::string columns = run.output.substr(header, run.output.find('\n', header + 1) - header);
  EXPECT_NE(columns.find(" first  "), std::string::npos) << columns;
  EXPECT_EQ(columns.substr(columns.size() - 7), " second") << columns;
  EXPECT_NE(run.output.find("  geomean (1 of 1) "), std::string::npos) << run.output;
}

TEST(FarmctlLocalTest, BadCampaignFileStartsNothing) {
  ScratchDir dir;
  std::ofstream(dir.Sub("bad.yaml")) << "name: bad\nbudget: {benchmarks: 3}\n";
  const CliRun run = RunFarmctl("local " + dir.Sub("bad.yaml") + " --dir " + dir.Sub("farm"), dir);
  EXPECT_EQ(run.exit_code, 3) << run.output;
  EXPECT_NE(run.output.find("bad.yaml"), std::string::npos) << run.output;
  EXPECT_FALSE(std::filesystem::exists(dir.Sub("farm")));
  const CliRun usage = RunFarmctl("local", dir);
  EXPECT_EQ(usage.exit_code, 2) << usage.output;
  const CliRun workers = RunFarmctl("local x.yaml --workers 0", dir);
  EXPECT_EQ(workers.exit_code, 2) << workers.output;
  EXPECT_NE(workers.output.find("--workers"), std::string::npos) << workers.output;
}

}  // namespace
}  // namespace schedfarm
