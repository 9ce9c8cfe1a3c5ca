// farm-pretrain as a user runs it: a GBT pretrained on a recorded dataset is written
// with its host, datasets and held-out figures; one trained on datasets of two host
// kinds records both and is named after both; --hold-out prints the figures of the
// pipelines it holds out and --score-on those of each dataset's held-out pipelines, and
// neither writes anything; a hold-out that leaves a side empty, an unknown kind and a
// corrupt model file are refused, naming what is wrong.
#include <gtest/gtest.h>

#include <filesystem>
#include <string>

#include "common/files.h"
#include "dataset/dataset.h"
#include "pretrained/pretrained.h"
#include "tests/support/scratch_dir.h"
#include "tests/support/shell.h"
#include "tests/support/synthetic_dataset.h"

namespace schedfarm {
namespace {

using testing_support::RunShell;
using testing_support::ShellRun;

bool Contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

// The synthetic dataset of 20 random pipelines, its part's campaign file a real one.
std::string WriteDataset(const ScratchDir& dir, const std::string& name,
                         const std::string& cpu_model = "") {
  Dataset dataset = testing_support::SyntheticDataset(20, 8);
  dataset.mutable_parts(0)->set_yaml_source(
      "name: synthetic\npipelines:\n  - random: {seeds: [1, 20], max_ops: 4}\n"
      "budget: {benchmarks: 160}\n");
  if (!cpu_model.empty()) {
    dataset.mutable_host()->set_cpu_model(cpu_model);
    for (Measurement& m : *dataset.mutable_measurements())
      m.mutable_host()->set_cpu_model(cpu_model);
  }
  const std::string path = dir.Sub(name);
  EXPECT_TRUE(WriteDataset(path, dataset).ok());
  return path;
}

ShellRun Pretrain(const std::string& args, const ScratchDir& dir) {
  return RunShell(std::string(FARM_PRETRAIN_BIN) + " " + args, dir);
}

TEST(FarmPretrainTest, WritesAModelWithItsHostDatasetsAndHeldOutFigures) {
  ScratchDir dir;
  const std::string dataset = WriteDataset(dir, "a.sfds");
  const ShellRun run = Pretrain("--kind gbt --dataset " + dataset + " --output-dir " + dir.path() +
                                    " --threads 1 --epochs 20",
                                dir);
  ASSERT_EQ(run.exit_code, 0) << run.output;
  const std::string path = PretrainedPath(dir.path(), "gbt-test-cpu-9000");
  ASSERT_TRUE(Contains(run.output, "wrote " + path)) << run.output;
  StatusOr<PretrainedModel> model = ReadPretrained(path);
  ASSERT_TRUE(model.ok()) << model.status().message();
  EXPECT_EQ(model->name(), "gbt-test-cpu-9000");
  EXPECT_EQ(model->model().kind(), "gbt");
  EXPECT_EQ(model->host().cpu_model(), "Test CPU 9000");
  EXPECT_TRUE(model->host().worker_id().empty());
  ASSERT_EQ(model->hosts_size(), 1) << "the host description of a model that knows the host";
  EXPECT_EQ(model->hosts(0).cpu_model(), "Test CPU 9000");
  ASSERT_EQ(model->datasets_size(), 1);
  EXPECT_EQ(model->datasets(0).file(), "a.sfds");
  EXPECT_EQ(model->datasets(0).measurements(), 161);
  EXPECT_EQ(model->model().held_out_pipelines_size(), 4) << "a fifth of 20";
  EXPECT_EQ(model->model().training_set_size() + model->model().held_out_size(), 160);
  EXPECT_GT(model->model().metrics().count("pairwise_accuracy"), 0u);
  const ShellRun shown = Pretrain("--show " + path, dir);
  EXPECT_EQ(shown.exit_code, 0) << shown.output;
  EXPECT_TRUE(Contains(shown.output, "pretrained model gbt-test-cpu-9000: kind gbt"))
      << shown.output;
}

TEST(FarmPretrainTest, HoldOutPrintsTheFiguresOfThePipelinesItHoldsOut) {
  ScratchDir dir;
  const std::string dataset = WriteDataset(dir, "a.sfds");
  // random:1 and random:10 to random:19: 11 of the 20 pipelines.
  const ShellRun run = Pretrain(
      "--kind gbt --dataset " + dataset + " --hold-out random:1 --threads 1 --epochs 20", dir);
  ASSERT_EQ(run.exit_code, 0) << run.output;
  EXPECT_TRUE(Contains(run.output, "gbt trained without the pipelines of 'random:1'"))
      << run.output;
  EXPECT_TRUE(Contains(run.output, "gbt held out")) << run.output;
  EXPECT_TRUE(Contains(run.output, "(11 of 20 pipelines)")) << run.output;
  EXPECT_TRUE(PretrainedNames(dir.path()).empty()) << "nothing written";
  const ShellRun none =
      Pretrain("--kind gbt --dataset " + dataset + " --hold-out zoo: --threads 1", dir);
  EXPECT_EQ(none.exit_code, 1) << none.output;
  EXPECT_TRUE(Contains(none.output, "--hold-out 'zoo:' holds out 0 of the 20 pipelines"))
      << none.output;
}

TEST(FarmPretrainTest, DatasetsOfTwoHostKindsTrainOneModelOfBoth) {
  ScratchDir dir;
  const std::string a = WriteDataset(dir, "a.sfds");
  const std::string b = WriteDataset(dir, "b.sfds", "Other CPU");
  const ShellRun run = Pretrain("--kind gbt --dataset " + a + " --dataset " + b + " --output-dir " +
                                    dir.path() + " --threads 1 --epochs 20",
                                dir);
  ASSERT_EQ(run.exit_code, 0) << run.output;
  StatusOr<PretrainedModel> model =
      ReadPretrained(PretrainedPath(dir.path(), "gbt-other-cpu+test-cpu-9000"));
  ASSERT_TRUE(model.ok()) << model.status().message() << "\n" << run.output;
  ASSERT_EQ(model->hosts_size(), 2);
  EXPECT_EQ(model->hosts(0).cpu_model(), "Test CPU 9000");
  EXPECT_EQ(model->hosts(1).cpu_model(), "Other CPU");
  EXPECT_EQ(model->datasets_size(), 2);
  EXPECT_EQ(model->model().training_set_size() + model->model().held_out_size(), 320);
}

TEST(FarmPretrainTest, ScoreOnPrintsEachDatasetsHeldOutFigures) {
  ScratchDir dir;
  const std::string a = WriteDataset(dir, "a.sfds");
  const std::string b = WriteDataset(dir, "b.sfds", "Other CPU");
  // Trained on a's host, scored on both: one split over the pipelines of both files
  // (the same 20), a fifth held out of each.
  const ShellRun run = Pretrain("--kind gbt --dataset " + a + " --score-on " + a + " --score-on " +
                                    b + " --threads 1 --epochs 20",
                                dir);
  ASSERT_EQ(run.exit_code, 0) << run.output;
  EXPECT_TRUE(Contains(run.output, "gbt trained on a.sfds")) << run.output;
  EXPECT_TRUE(Contains(run.output, "gbt on a.sfds (Test CPU 9000, 32 held-out samples)"))
      << run.output;
  EXPECT_TRUE(Contains(run.output, "gbt on b.sfds (Other CPU, 32 held-out samples)")) << run.output;
  EXPECT_TRUE(PretrainedNames(dir.path()).empty()) << "nothing written";
}

TEST(FarmPretrainTest, BadInputsAreRefusedNamingWhatIsWrong) {
  ScratchDir dir;
  const std::string a = WriteDataset(dir, "a.sfds");
  const ShellRun kind = Pretrain("--kind lstm --dataset " + a + " --output-dir " + dir.path(), dir);
  EXPECT_EQ(kind.exit_code, 1) << kind.output;
  EXPECT_TRUE(Contains(kind.output, "unknown model kind 'lstm'")) << kind.output;
  const ShellRun usage = Pretrain("--dataset " + a + " --output-dir " + dir.path(), dir);
  EXPECT_EQ(usage.exit_code, 2) << usage.output;
  EXPECT_TRUE(Contains(usage.output,
                       "--kind, --dataset and one of --output-dir, --hold-out and --score-on"))
      << usage.output;
  const ShellRun two = Pretrain(
      "--kind gbt --dataset " + a + " --output-dir " + dir.path() + " --score-on " + a, dir);
  EXPECT_EQ(two.exit_code, 2) << two.output;
  const ShellRun fraction = Pretrain(
      "--kind gbt --dataset " + a + " --output-dir " + dir.path() + " --held-out 1.5", dir);
  EXPECT_EQ(fraction.exit_code, 2) << fraction.output;
  EXPECT_TRUE(Contains(fraction.output, "--held-out must be a number in (0, 1), got '1.5'"))
      << fraction.output;
  const ShellRun missing =
      Pretrain("--kind gbt --dataset " + dir.Sub("none.sfds") + " --output-dir " + dir.path(), dir);
  EXPECT_EQ(missing.exit_code, 1) << missing.output;
  EXPECT_TRUE(Contains(missing.output, dir.Sub("none.sfds"))) << missing.output;
  const std::string corrupt = dir.Sub("corrupt.sfpm");
  ASSERT_TRUE(WriteFileAtomically(corrupt, "SFPM and then not a model").ok());
  const ShellRun shown = Pretrain("--show " + corrupt, dir);
  EXPECT_EQ(shown.exit_code, 1) << shown.output;
  EXPECT_TRUE(Contains(shown.output, "pretrained model '" + corrupt + "'")) << shown.output;
}

}  // namespace
}  // namespace schedfarm
