// RunAutoscheduler and its settings: the three plugins load and schedule, results are
// timed and checked against the reference, runs are deterministic, and bad input is
// an error. Adams2019 runs with beam 1 (its greedy search) to keep the test fast.
#include "scheduler/autoschedule/autoschedulers.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <regex>
#include <string>
#include <thread>

#include "tests/scheduler/autoschedule/test_blocks.h"

namespace schedfarm {
namespace {

using autoschedule_test::Mlp;

AutoscheduleOptions FastOptions() {
  AutoscheduleOptions options;
  options.threads = 2;
  options.beam_size = 1;
  options.run.timing_samples = 2;
  return options;
}

TEST(AutoschedulersTest, NamesAreTheThreeHalidePlugins) {
  EXPECT_EQ(AutoschedulerNames(),
            (std::vector<std::string>{"adams2019", "li2018", "mullapudi2016"}));
}

TEST(AutoschedulersTest, MachineParamsFollowThreadsAndCache) {
  const HostMachineParams two = DetectMachineParams(2);
  EXPECT_EQ(two.parallelism, 2);
  EXPECT_GT(two.last_level_cache_bytes, 0u);
  EXPECT_FALSE(two.cache_source.empty());
  EXPECT_FLOAT_EQ(two.balance, 40);
  EXPECT_EQ(MachineParamsString(two), "2," + std::to_string(two.last_level_cache_bytes) + ",40");
  const unsigned cores = std::thread::hardware_concurrency();
  EXPECT_EQ(DetectMachineParams(0).parallelism, cores > 0 ? static_cast<int>(cores) : 1);
  const TargetParams target = HalideTargetParams(3);
  EXPECT_EQ(target.cores, 3);
  EXPECT_TRUE(target.vector_bytes == 16 || target.vector_bytes == 32 || target.vector_bytes == 64)
      << target.vector_bytes;
}

TEST(AutoschedulersTest, EachAutoschedulerGivesACorrectTimedBaseline) {
  const PipelineGraph graph = Mlp();
  RunOptions once;
  once.timing_samples = 0;
  StatusOr<RunResult> reference = RunReference(graph, once);
  ASSERT_TRUE(reference.ok()) << reference.status().ToString();
  for (const std::string& name : AutoschedulerNames()) {
    SCOPED_TRACE(name);
    StatusOr<BaselineResult> result =
        RunAutoscheduler(graph, name, FastOptions(), reference->outputs);
    ASSERT_TRUE(result.ok()) << result.status().ToString();
    EXPECT_EQ(result->autoscheduler, name);
    EXPECT_TRUE(result->correct) << result->mismatch;
    EXPECT_TRUE(result->mismatch.empty());
    EXPECT_FALSE(result->schedule_source.empty());
    EXPECT_EQ(result->machine_params.rfind("2,", 0), 0u) << result->machine_params;
    EXPECT_FALSE(result->target.empty());
    EXPECT_GT(result->autoschedule_seconds, 0);
    EXPECT_GT(result->run.compile_seconds, 0);
    ASSERT_EQ(result->run.sample_seconds.size(), 2u);
    EXPECT_GT(result->run.min_seconds, 0);
    ASSERT_EQ(result->run.outputs.size(), 1u);
    EXPECT_TRUE(
        CompareTensors(result->run.outputs[0], reference->outputs[0], DefaultTolerance(FLOAT32))
            .match);
    EXPECT_FALSE(result->imported.has_value());  // import_schedule not asked
  }
}

TEST(AutoschedulersTest, AWrongAnswerIsReportedNotAnError) {
  const PipelineGraph graph = Mlp();
  RunOptions once;
  once.timing_samples = 0;
  StatusOr<RunResult> reference = RunReference(graph, once);
  ASSERT_TRUE(reference.ok()) << reference.status().ToString();
  std::vector<HostTensor> wrong = reference->outputs;
  wrong[0].data[5] += 1.0;
  AutoscheduleOptions options = FastOptions();
  options.run.timing_samples = 0;
  StatusOr<BaselineResult> result = RunAutoscheduler(graph, "mullapudi2016", options, wrong);
  ASSERT_TRUE(result.ok()) << result.status().ToString();
  EXPECT_FALSE(result->correct);
  EXPECT_NE(result->mismatch.find("output '" + graph.spec().outputs(0) + "'"), std::string::npos)
      << result->mismatch;
}

// `source` without the numbers Halide appends to make names unique in the process
// (Func "$n" suffixes printed as "_n", Li2018's "v<n>" Vars), which differ between two
// lowerings of one pipeline.
std::string WithoutUniqueNumbers(const std::string& source) {
  static const std::regex kNumber("(_|\\$|\\bv)[0-9]+\\b");
  return std::regex_replace(source, kNumber, "");
}

TEST(AutoschedulersTest, SchedulesAreDeterministic) {
  const PipelineGraph graph = autoschedule_test::ConvRelu();
  AutoscheduleOptions options = FastOptions();
  options.beam_size = 2;  // several passes of beam search, still fast
  for (const std::string& name : AutoschedulerNames()) {
    SCOPED_TRACE(name);
    std::string first, second;
    StatusOr<ImportedSchedule> a = ImportAutoschedule(graph, name, options, &first);
    StatusOr<ImportedSchedule> b = ImportAutoschedule(graph, name, options, &second);
    ASSERT_TRUE(a.ok()) << a.status().ToString();
    ASSERT_TRUE(b.ok()) << b.status().ToString();
    EXPECT_FALSE(first.empty());
    EXPECT_EQ(WithoutUniqueNumbers(first), WithoutUniqueNumbers(second));
    EXPECT_EQ(a->spec.SerializeAsString(), b->spec.SerializeAsString());
  }
}

TEST(AutoschedulersTest, EnvironmentIsRestored) {
  setenv("HL_BEAM_SIZE", "7", 1);
  unsetenv("HL_SEED");
  StatusOr<ImportedSchedule> imported = ImportAutoschedule(Mlp(), "adams2019", FastOptions());
  ASSERT_TRUE(imported.ok()) << imported.status().ToString();
  ASSERT_NE(std::getenv("HL_BEAM_SIZE"), nullptr);
  EXPECT_STREQ(std::getenv("HL_BEAM_SIZE"), "7");
  EXPECT_EQ(std::getenv("HL_SEED"), nullptr);
  unsetenv("HL_BEAM_SIZE");
}

TEST(AutoschedulersTest, BadSettingsAreErrors) {
  const PipelineGraph graph = Mlp();
  StatusOr<BaselineResult> unknown = RunAutoscheduler(graph, "Adams2019", FastOptions());
  ASSERT_FALSE(unknown.ok());
  EXPECT_NE(unknown.status().message().find("unknown autoscheduler 'Adams2019'"), std::string::npos)
      << unknown.status().message();
  EXPECT_NE(unknown.status().message().find("mullapudi2016"), std::string::npos);
  AutoscheduleOptions no_beam = FastOptions();
  no_beam.beam_size = 0;
  StatusOr<ImportedSchedule> bad = ImportAutoschedule(graph, "adams2019", no_beam);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("beam size"), std::string::npos) << bad.status().message();
  std::vector<HostTensor> too_many(3);
  StatusOr<BaselineResult> mismatched = RunAutoscheduler(graph, "li2018", FastOptions(), too_many);
  ASSERT_FALSE(mismatched.ok());
  EXPECT_NE(mismatched.status().message().find("3 reference outputs for 1 outputs"),
            std::string::npos)
      << mismatched.status().message();
}

}  // namespace
}  // namespace schedfarm
