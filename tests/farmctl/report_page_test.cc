// `farmctl report` end to end: a model-guided campaign runs on the real coordinator, a
// real farm-worker (Halide compiles, a baseline, a pipeline whose every run is out of
// memory) and a real farm-learner; `farmctl report` writes its page; headless Chromium
// renders it (tests/farmctl/report_page_check.py) and every chart is laid out and drawn
// with data. A page with a chart broken on purpose fails the same check, and a report of
// an unknown campaign or to an unwritable file fails with exit code 1.
#include <gtest/gtest.h>

#include <fstream>
#include <string>

#include "common/files.h"
#include "tests/support/farm_rig.h"
#include "tests/support/scratch_dir.h"
#include "tests/support/shell.h"

namespace schedfarm {
namespace {

using testing_support::ChildProcess;
using testing_support::CoordinatorProcess;

using CommandRun = testing_support::ShellRun;
using testing_support::RunShell;

CommandRun Farmctl(const std::string& args, const std::string& endpoint, const ScratchDir& dir) {
  return RunShell(std::string(FARMCTL_BIN) + " --coordinator " + endpoint + " --retry-s 20 " + args,
                  dir);
}

// Three small blocks, model-guided under GBT retrained every 6 results (one block held
// out for the metrics), Mullapudi2016 as the baseline, and a pipeline whose 2 GiB input
// cannot be allocated under the worker's 1 GiB limit: failures over time.
std::string CampaignYaml(const ScratchDir& dir) {
  std::ofstream(dir.Sub("poison.yaml")) << "name: poison\n"
                                           "inputs:\n  - {name: x, shape: [16384, 32768]}\n"
                                           "stages:\n  - {name: y, op: relu, inputs: [x]}\n"
                                           "outputs: [y]\n";
  return "name: report\n"
         "pipelines:\n"
         "  - zoo: {block: vgg_block, spatial_scale: 0.25, channel_scale: 0.25}\n"
         "  - zoo: {block: squeezenet_fire, spatial_scale: 0.25, channel_scale: 0.25}\n"
         "  - zoo: {block: resnet18_basic, spatial_scale: 0.25, channel_scale: 0.25}\n"
         "  - yaml: {path: " +
         dir.Sub("poison.yaml") +
         "}\n"
         "strategy: {name: model-guided, settings: {model: gbt, batch: 4, retrain_every: 6}}\n"
         "budget: {benchmarks: 36}\n"
         "baselines: [mullapudi2016]\n"
         "measurement: {samples: 2, max_samples: 2, min_sample_time: 1ms, compile_timeout: 60s}\n";
}

TEST(ReportPageTest, ChromiumRendersEveryChartWithData) {
  if (RunShell("command -v chromium", ScratchDir()).exit_code != 0) {
    GTEST_SKIP() << "chromium is not installed (ops/setup.sh installs it): the page cannot be "
                    "rendered";
  }
  ScratchDir dir;
  CoordinatorProcess coordinator(FARM_COORDINATOR_BIN, dir.Sub("store"), "tcp://127.0.0.1:*",
                                 {"--retry-backoff-ms", "100", "--quarantine-after", "3"});
  const std::string endpoint = coordinator.endpoint();
  ASSERT_FALSE(endpoint.empty()) << coordinator.Log();
  std::ofstream(dir.Sub("report.yaml")) << CampaignYaml(dir);
  const CommandRun submitted = Farmctl("submit " + dir.Sub("report.yaml"), endpoint, dir);
  ASSERT_EQ(submitted.exit_code, 0) << submitted.output;
  const size_t at = submitted.output.find("campaign ") + 9;
  const std::string id = submitted.output.substr(at, submitted.output.find(' ', at) - at);
  ChildProcess worker(FARM_WORKER_BIN, {"--coordinator", endpoint, "--compile-slots", "1",
                                        "--memory-limit-mb", "1024"});
  ChildProcess learner(FARM_LEARNER_BIN, {"--coordinator", endpoint, "--models", "gbt,roofline",
                                          "--min-samples", "6", "--nice", "10"});
  const CommandRun watched = Farmctl("watch " + id, endpoint, dir);
  ASSERT_EQ(watched.exit_code, 0) << watched.output << worker.Log() << learner.Log();

  const std::string page = dir.Sub("report.html");
  const CommandRun report = Farmctl("report " + id + " --output " + page, endpoint, dir);
  ASSERT_EQ(report.exit_code, 0) << report.output;
  EXPECT_NE(report.output.find("wrote " + page), std::string::npos) << report.output;
  const std::string html = ReadFileBytes(page).value();
  EXPECT_EQ(html.find("<script"), std::string::npos) << "self-contained, no scripts";
  EXPECT_EQ(html.find(" src="), std::string::npos) << "self-contained, nothing loaded";
  EXPECT_NE(html.find("OUT_OF_MEMORY"), std::string::npos);

  const std::string check = std::string("python3 ") + SCHEDFARM_SOURCE_DIR +
                            "/tests/farmctl/report_page_check.py ";
  const CommandRun rendered =
      RunShell(check + page + " --expect best-so-far-1 --expect best-so-far-2 --expect best-so-far-3" +
                " --expect runtime-distribution --expect failures-over-time" +
                " --expect worker-throughput --expect model-pairwise_accuracy" +
                " --screenshot " + dir.Sub("report.png"),
            dir);
  ASSERT_EQ(rendered.exit_code, 0) << rendered.output << learner.Log();
  EXPECT_NE(rendered.output.find(" 0 problems"), std::string::npos) << rendered.output;

  // The same page with the failure chart's lines not drawn (and one chart missing):
  // the check fails and names both.
  std::string broken = html;
  const size_t failures = broken.find("id=\"failures-over-time\"");
  ASSERT_NE(failures, std::string::npos);
  for (size_t line = broken.find("<polyline", failures);
       line != std::string::npos && line < broken.find("</figure>", failures);
       line = broken.find("<polyline", line + 1)) {
    broken.replace(broken.find("stroke-width=\"2\"", line), 16, "stroke-width=\"0\"");
  }
  std::ofstream(dir.Sub("broken.html")) << broken;
  const CommandRun refused = RunShell(check + dir.Sub("broken.html") + " --expect no-such-chart", dir);
  EXPECT_EQ(refused.exit_code, 1) << refused.output;
  EXPECT_NE(refused.output.find("chart no-such-chart is missing"), std::string::npos)
      << refused.output;
  EXPECT_NE(refused.output.find("failures-over-time: series colour"), std::string::npos)
      << refused.output;

  const CommandRun unknown = Farmctl("report no-such-campaign --output " + page, endpoint, dir);
  EXPECT_EQ(unknown.exit_code, 1) << unknown.output;
  EXPECT_NE(unknown.output.find("CLIENT_NOT_FOUND"), std::string::npos) << unknown.output;
  const CommandRun unwritable = Farmctl("report " + id + " --output " + dir.Sub("no/such/dir/r.html"),
                                 endpoint, dir);
  EXPECT_EQ(unwritable.exit_code, 1) << unwritable.output;
  EXPECT_NE(unwritable.output.find("no/such/dir/r.html"), std::string::npos) << unwritable.output;
}

}  // namespace
}  // namespace schedfarm
