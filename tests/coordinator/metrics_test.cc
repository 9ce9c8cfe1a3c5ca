// The coordinator's Prometheus metrics (--metrics-endpoint), scraped over real HTTP
// while a real farm-worker runs a small campaign: the gauges follow the campaign and
// the workers, and at the end the counters and histograms agree with the store (every
// result counted by status, one lease latency and one acknowledgement latency per
// result). An endpoint that cannot be bound stops the coordinator with its address.
#include <sys/wait.h>

#include <gtest/gtest.h>

#include <chrono>
#include <map>
#include <optional>
#include <string>
#include <thread>

#include "campaign/campaign_pipelines.h"
#include "campaign/campaign_yaml.h"
#include "tests/support/farm_rig.h"
#include "tests/support/metrics_scrape.h"
#include "tests/support/scratch_dir.h"

namespace schedfarm {
namespace {

using testing_support::ChildProcess;
using testing_support::CoordinatorProcess;
using testing_support::HttpGet;
using testing_support::MetricsPort;
using testing_support::Sample;
using testing_support::TestClient;

constexpr char kCampaign[] = R"(name: scraped
pipelines:
  - zoo: {block: vgg_block, spatial_scale: 0.25, channel_scale: 0.25}
strategy: {name: random, settings: {seed: 3}}
budget: {benchmarks: 6}
measurement: {samples: 2, max_samples: 2, min_sample_time: 1ms}
)";

TEST(CoordinatorMetricsTest, ScrapedWhileACampaignRunsAndAgreeingWithTheStore) {
  ScratchDir dir;
  CoordinatorProcess coordinator(FARM_COORDINATOR_BIN, dir.Sub("store"), "tcp://127.0.0.1:*",
                                 {"--metrics-endpoint", "127.0.0.1:0"});
  ASSERT_FALSE(coordinator.endpoint().empty()) << coordinator.Log();
  const int port = MetricsPort(coordinator.Log());
  ASSERT_GT(port, 0) << coordinator.Log();
  std::optional<std::string> scrape = HttpGet(port, "/metrics");
  ASSERT_TRUE(scrape.has_value());
  EXPECT_EQ(Sample(*scrape, "schedfarm_campaigns{state=\"running\"}"), 0) << *scrape;

  TestClient client(coordinator.endpoint());
  ClientRequest submit;
  submit.mutable_submit()->set_yaml_source(kCampaign);
  submit.mutable_submit()->set_file_name("scraped.yaml");
  StatusOr<CampaignConfig> config = ParseCampaignYaml(kCampaign, "scraped.yaml");
  ASSERT_TRUE(config.ok()) << config.status().message();
  *submit.mutable_submit()->add_pipelines() = *BuildZooPipeline(config->pipelines(0).zoo());
  std::optional<ClientReply> reply = client.Call(submit);
  ASSERT_TRUE(reply && reply->code() == CLIENT_OK) << (reply ? reply->error() : "no reply");
  const std::string id = reply->submitted().id();
  const std::string campaign_label = "{campaign=\"" + id + "\"}";

  // While it runs (the gauges refresh about once a second): the campaign and its budget.
  bool seen_running = false;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  while (!seen_running && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    scrape = HttpGet(port, "/metrics");
    seen_running = scrape && Sample(*scrape, "schedfarm_campaigns{state=\"running\"}") == 1 &&
                   Sample(*scrape, "schedfarm_campaign_benchmarks_budget" + campaign_label) == 6;
  }
  ASSERT_TRUE(seen_running) << (scrape ? *scrape : "no scrape");

  ChildProcess worker(FARM_WORKER_BIN, {"--coordinator", coordinator.endpoint(), "--id", "w",
                                        "--compile-slots", "1", "--children", "1"});
  bool done = false;
  const auto end = std::chrono::steady_clock::now() + std::chrono::seconds(240);
  while (!done && std::chrono::steady_clock::now() < end) {
    std::this_thread::sleep_for(std::chrono::milliseconds(500));
    std::optional<ClientReply> status = client.Status(id);
    done = status && status->status().campaigns_size() == 1 &&
           status->status().campaigns(0).campaign().state() == CAMPAIGN_DONE;
  }
  ASSERT_TRUE(done) << worker.Log();
  std::this_thread::sleep_for(std::chrono::milliseconds(1500));  // a refresh after the end

  // The store's measurements, by status, against the counters.
  std::map<std::string, int> by_status;
  int results = 0;
  for (const StoredMeasurementRecord& row : client.Export(id)) {
    ++by_status[MeasurementStatus_Name(row.measurement().status())];
    ++results;
  }
  ASSERT_EQ(results, 6);
  scrape = HttpGet(port, "/metrics");
  ASSERT_TRUE(scrape.has_value());
  for (const auto& [status, count] : by_status) {
    EXPECT_EQ(Sample(*scrape, "schedfarm_results_total{status=\"" + status + "\"}"), count)
        << status << "\n" << *scrape;
  }
  EXPECT_EQ(Sample(*scrape, "schedfarm_lease_duration_seconds_count"), results) << *scrape;
  EXPECT_EQ(Sample(*scrape, "schedfarm_result_ack_seconds_count"), results) << *scrape;
  EXPECT_GE(Sample(*scrape, "schedfarm_leases_sent_total"), results) << *scrape;
  EXPECT_GT(Sample(*scrape, "schedfarm_store_write_seconds_count"), 0) << *scrape;
  EXPECT_GT(Sample(*scrape, "schedfarm_lease_duration_seconds_sum"), 0) << *scrape;
  EXPECT_EQ(Sample(*scrape, "schedfarm_campaigns{state=\"done\"}"), 1) << *scrape;
  EXPECT_EQ(Sample(*scrape, "schedfarm_campaigns{state=\"running\"}"), 0) << *scrape;
  EXPECT_EQ(Sample(*scrape, "schedfarm_campaign_benchmarks_budget" + campaign_label), -1)
      << "an ended campaign leaves the per-campaign gauges";
  EXPECT_EQ(Sample(*scrape, "schedfarm_leases_in_flight"), 0) << *scrape;
  EXPECT_EQ(Sample(*scrape, "schedfarm_workers{state=\"idle\"}") +
                Sample(*scrape, "schedfarm_workers{state=\"busy\"}"),
            1)
      << *scrape;
  EXPECT_FALSE(HttpGet(port, "/nothing-here").has_value()) << "only /metrics is served";
}

TEST(CoordinatorMetricsTest, AnEndpointThatCannotBeBoundStopsTheCoordinator) {
  ScratchDir dir;
  CoordinatorProcess first(FARM_COORDINATOR_BIN, dir.Sub("a"), "tcp://127.0.0.1:*",
                           {"--metrics-endpoint", "127.0.0.1:0"});
  const int port = MetricsPort(first.Log());
  ASSERT_GT(port, 0) << first.Log();
  const std::string taken = "127.0.0.1:" + std::to_string(port);
  ChildProcess second(FARM_COORDINATOR_BIN, {"--store", dir.Sub("b"), "--endpoint",
                                             "tcp://127.0.0.1:*", "--metrics-endpoint", taken});
  const std::optional<int> exit = second.Wait(20000);
  ASSERT_TRUE(exit.has_value()) << second.Log();
  EXPECT_EQ(WEXITSTATUS(*exit), 1) << second.Log();
  EXPECT_NE(second.Log().find("--metrics-endpoint " + taken + ": cannot serve metrics there"),
            std::string::npos)
      << second.Log();
}

}  // namespace
}  // namespace schedfarm
