// farm-baselines, run as a process: usage errors, and one small run with its table.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>

namespace {

struct CliResult {
  int code = -1;
  std::string out;
  std::string err;
};

std::string ReadAll(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

// Output files are named after the running test: ctest runs tests in parallel.
CliResult RunCli(const std::string& args) {
  const std::string base = ::testing::TempDir() + "/farm_baselines_" +
                           ::testing::UnitTest::GetInstance()->current_test_info()->name();
  const std::string out = base + ".out", err = base + ".err";
  const std::string command =
      std::string(FARM_BASELINES_BIN) + " " + args + " >" + out + " 2>" + err + " </dev/null";
  const int status = std::system(command.c_str());
  CliResult r;
  r.code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  r.out = ReadAll(out);
  r.err = ReadAll(err);
  return r;
}

bool Contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

TEST(FarmBaselinesCli, UsageErrors) {
  CliResult r = RunCli("");
  EXPECT_EQ(r.code, 2);
  EXPECT_TRUE(Contains(r.err, "no SOURCE given")) << r.err;
  EXPECT_TRUE(Contains(r.err, "usage: farm-baselines")) << r.err;
  r = RunCli("--autoschedulers adams2019,tvm vgg_block");
  EXPECT_EQ(r.code, 2);
  EXPECT_TRUE(Contains(r.err, "unknown autoscheduler 'tvm'")) << r.err;
  r = RunCli("--threads 0 vgg_block");
  EXPECT_EQ(r.code, 2);
  EXPECT_TRUE(Contains(r.err, "option --threads: '0' is not an integer in [1, 4096]")) << r.err;
  r = RunCli("no_such_block");
  EXPECT_EQ(r.code, 2);
  EXPECT_TRUE(Contains(r.err, "unknown SOURCE 'no_such_block'")) << r.err;
  r = RunCli("random:-1");
  EXPECT_EQ(r.code, 2);
  EXPECT_TRUE(Contains(r.err, "the seed must be a non-negative integer")) << r.err;
  r = RunCli("--bogus 1 vgg_block");
  EXPECT_EQ(r.code, 2);
  EXPECT_TRUE(Contains(r.err, "unknown option '--bogus'")) << r.err;
  r = RunCli("--spatial-scale 0 vgg_block");
  EXPECT_EQ(r.code, 2);
  EXPECT_TRUE(Contains(r.err, "option --spatial-scale: '0' is not a number in [0.001, 64]"))
      << r.err;
  r = RunCli("--channel-scale half vgg_block");
  EXPECT_EQ(r.code, 2);
  EXPECT_TRUE(Contains(r.err, "option --channel-scale: 'half' is not a number")) << r.err;
  r = RunCli("--spatial-scale 0.5 random:3");
  EXPECT_EQ(r.code, 2);
  EXPECT_TRUE(Contains(r.err, "option --spatial-scale applies to zoo blocks only")) << r.err;
  r = RunCli("--help");
  EXPECT_EQ(r.code, 0);
  EXPECT_TRUE(Contains(r.out, "--beam-size B")) << r.out;
  EXPECT_TRUE(Contains(r.out, "--spatial-scale X")) << r.out;
}

// The pipeline id farm-baselines prints for its (only) pipeline.
std::string PipelineIdIn(const std::string& out) {
  const size_t at = out.find(", id ");
  return at == std::string::npos ? "" : out.substr(at + 5, out.find(')', at) - at - 5);
}

// The zoo options build the block at another size: another pipeline id.
TEST(FarmBaselinesCli, ZooOptionsScaleTheBlock) {
  const std::string run = "--samples 1 --threads 1 --autoschedulers li2018 --channel-scale 0.5 ";
  const CliResult quarter = RunCli(run + "--spatial-scale 0.25 vgg_block");
  ASSERT_EQ(quarter.code, 0) << quarter.err << quarter.out;
  EXPECT_TRUE(Contains(quarter.out, "li2018: 1 pipelines, 0 failed, 1 correct")) << quarter.out;
  const CliResult eighth = RunCli(run + "--spatial-scale 0.125 vgg_block");
  ASSERT_EQ(eighth.code, 0) << eighth.err << eighth.out;
  EXPECT_FALSE(PipelineIdIn(quarter.out).empty()) << quarter.out;
  EXPECT_NE(PipelineIdIn(quarter.out), PipelineIdIn(eighth.out));
}

TEST(FarmBaselinesCli, MissingFileFailsThatPipelineOnly) {
  const CliResult r = RunCli("--samples 1 --threads 2 --autoschedulers mullapudi2016 " +
                             ::testing::TempDir() + "/missing.yaml random:5");
  EXPECT_EQ(r.code, 1);
  EXPECT_TRUE(Contains(r.err, "missing.yaml': cannot open")) << r.err;
  EXPECT_TRUE(Contains(r.out, "pipeline random_5")) << r.out;
}

TEST(FarmBaselinesCli, PrintsTheBaselineTable) {
  const CliResult r = RunCli(
      "--samples 2 --threads 2 --beam-size 1 --autoschedulers mullapudi2016,li2018 "
      "random:3 random:7");
  ASSERT_EQ(r.code, 0) << r.err << r.out;
  EXPECT_TRUE(Contains(r.out, "machine params  2,")) << r.out;
  EXPECT_TRUE(Contains(r.out, "pipeline random_3 (random:3")) << r.out;
  EXPECT_TRUE(Contains(r.out, "pipeline random_7 (random:7")) << r.out;
  // One row per schedule. Mullapudi2016 is correct on both; Li2018's row is either
  // correct or a reported error (its schedules of some pipelines do not compile).
  std::istringstream lines(r.out);
  std::string line;
  int reference_rows = 0, mullapudi_correct = 0, li_rows = 0;
  while (std::getline(lines, line)) {
    if (line.rfind("  reference ", 0) == 0) ++reference_rows;
    if (line.rfind("  mullapudi2016 ", 0) == 0 && Contains(line, " yes ")) ++mullapudi_correct;
    if (line.rfind("  li2018 ", 0) == 0 && (Contains(line, " yes ") || Contains(line, " ERROR "))) {
      ++li_rows;
    }
  }
  EXPECT_EQ(reference_rows, 2) << r.out;
  EXPECT_EQ(mullapudi_correct, 2) << r.out;
  EXPECT_EQ(li_rows, 2) << r.out;
  EXPECT_TRUE(Contains(r.out, "summary (min ms")) << r.out;
  EXPECT_TRUE(Contains(r.out, "mullapudi2016: 2 pipelines, 0 failed, 2 correct")) << r.out;
  EXPECT_FALSE(Contains(r.out, "adams2019:")) << r.out;
}

}  // namespace
