// A farm on loopback for the learner's tests: the real farm-coordinator (its store in a
// scratch folder), one real farm-worker (one compile slot, one child), farm-learner
// with the flags given, and a client. The including test defines FARM_COORDINATOR_BIN,
// FARM_WORKER_BIN and FARM_LEARNER_BIN.
#pragma once

#include <chrono>
#include <functional>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "tests/support/farm_rig.h"
#include "tests/support/scratch_dir.h"

namespace schedfarm {
namespace testing_support {

// The farm's learner: `--coordinator ENDPOINT` and then `learner_flags`.
struct LearnerFarm {
  explicit LearnerFarm(std::vector<std::string> learner_flags)
      : learner(FARM_LEARNER_BIN, WithCoordinator(std::move(learner_flags))) {}

  ScratchDir dir;
  CoordinatorProcess coordinator{FARM_COORDINATOR_BIN, dir.Sub("store")};
  ChildProcess worker{FARM_WORKER_BIN,
                      {"--coordinator", coordinator.endpoint(), "--id", "w", "--compile-slots", "1",
                       "--children", "1"}};
  ChildProcess learner;
  TestClient client{coordinator.endpoint()};

  // The measurements of the campaign.
  std::vector<Measurement> Measurements(const std::string& campaign) {
    std::vector<Measurement> out;
    for (const StoredMeasurementRecord& row : client.Export(campaign)) {
      out.push_back(row.measurement());
    }
    return out;
  }

  // Whether every campaign ended DONE within `seconds`, asked every 500 ms; `tick`, if
  // any, is called every 100 ms meanwhile.
  bool WaitDone(const std::vector<std::string>& campaigns, int seconds,
                const std::function<void()>& tick = {}) {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(seconds);
    auto next_status = std::chrono::steady_clock::now() + std::chrono::milliseconds(500);
    while (std::chrono::steady_clock::now() < deadline) {
      if (tick) tick();
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
      if (std::chrono::steady_clock::now() < next_status) continue;
      next_status += std::chrono::milliseconds(500);
      bool done = true;
      for (const std::string& id : campaigns) {
        std::optional<ClientReply> status = client.Status(id);
        done = done && status && status->status().campaigns_size() == 1 &&
               status->status().campaigns(0).campaign().state() == CAMPAIGN_DONE;
      }
      if (done) return true;
    }
    return false;
  }

 private:
  std::vector<std::string> WithCoordinator(std::vector<std::string> flags) {
    flags.insert(flags.begin(), {"--coordinator", coordinator.endpoint()});
    return flags;
  }
};

}  // namespace testing_support
}  // namespace schedfarm
