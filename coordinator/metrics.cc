#include "coordinator/metrics.h"

#include <time.h>

#include <prometheus/counter.h>
#include <prometheus/exposer.h>
#include <prometheus/gauge.h>
#include <prometheus/histogram.h>
#include <prometheus/registry.h>

#include <chrono>
#include <set>

#include "common/elapsed.h"
#include "common/mutex.h"

namespace schedfarm {
namespace {

using prometheus::BuildCounter;
using prometheus::BuildGauge;
using prometheus::BuildHistogram;

// Latency buckets from 1 ms to about 2 minutes.
prometheus::Histogram::BucketBoundaries LatencyBuckets() {
  return {0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120};
}

// Turn buckets from 50 us to 2.5 s, finer around 50 ms (the loop's stall limit).
prometheus::Histogram::BucketBoundaries TurnBuckets() {
  return {0.00005, 0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.02,
          0.03,    0.04,   0.05,    0.075,  0.1,   0.25,   0.5,   1,    2.5};
}

// CPU seconds of the calling thread.
double ThreadCpuSeconds() {
  timespec t{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return static_cast<double>(t.tv_sec) + 1e-9 * static_cast<double>(t.tv_nsec);
}

}  // namespace

struct CoordinatorMetrics::Impl {
  std::unique_ptr<prometheus::Exposer> exposer;
  std::shared_ptr<prometheus::Registry> registry = std::make_shared<prometheus::Registry>();
  prometheus::Family<prometheus::Gauge>& campaigns =
      BuildGauge().Name("schedfarm_campaigns").Help("Campaigns by state").Register(*registry);
  prometheus::Family<prometheus::Gauge>& finished =
      BuildGauge()
          .Name("schedfarm_campaign_benchmarks_finished")
          .Help("Benchmarks finished (measured, failed or quarantined) of each active campaign")
          .Register(*registry);
  prometheus::Family<prometheus::Gauge>& budget =
      BuildGauge()
          .Name("schedfarm_campaign_benchmarks_budget")
          .Help("Benchmark budget of each active campaign")
          .Register(*registry);
  prometheus::Family<prometheus::Gauge>& queued =
      BuildGauge()
          .Name("schedfarm_campaign_queue_depth")
          .Help("Candidates waiting for a lease, per active campaign")
          .Register(*registry);
  prometheus::Family<prometheus::Gauge>& rate =
      BuildGauge()
          .Name("schedfarm_campaign_results_per_second")
          .Help("Results recorded per second over the last minute, per active campaign")
          .Register(*registry);
  prometheus::Gauge& leases_in_flight = BuildGauge()
                                            .Name("schedfarm_leases_in_flight")
                                            .Help("Leases sent and not yet ended")
                                            .Register(*registry)
                                            .Add({});
  prometheus::Counter& leases_sent = BuildCounter()
                                         .Name("schedfarm_leases_sent_total")
                                         .Help("Leases sent to workers")
                                         .Register(*registry)
                                         .Add({});
  prometheus::Family<prometheus::Counter>& results =
      BuildCounter()
          .Name("schedfarm_results_total")
          .Help("Results recorded, by measurement status (every status but OK is a failure)")
          .Register(*registry);
  prometheus::Histogram& lease_seconds =
      BuildHistogram()
          .Name("schedfarm_lease_duration_seconds")
          .Help("From a lease sent to its result received")
          .Register(*registry)
          .Add({}, LatencyBuckets());
  prometheus::Histogram& ack_seconds =
      BuildHistogram()
          .Name("schedfarm_result_ack_seconds")
          .Help("From a result received to its acknowledgement, after its durable write")
          .Register(*registry)
          .Add({}, LatencyBuckets());
  prometheus::Histogram& write_seconds =
      BuildHistogram()
          .Name("schedfarm_store_write_seconds")
          .Help("Duration of each synced group-commit write to the store")
          .Register(*registry)
          .Add({}, LatencyBuckets());
  prometheus::Family<prometheus::Gauge>& workers =
      BuildGauge().Name("schedfarm_workers").Help("Workers by state").Register(*registry);
  prometheus::Gauge& models = BuildGauge()
                                  .Name("schedfarm_model_versions")
                                  .Help("Model versions stored by farm-learner")
                                  .Register(*registry)
                                  .Add({});
  prometheus::Family<prometheus::Counter>& frames_dropped =
      BuildCounter()
          .Name("schedfarm_frames_dropped_total")
          .Help("Frames not delivered to a peer, by reason")
          .Register(*registry);
  prometheus::Counter& peers_dropped = BuildCounter()
                                           .Name("schedfarm_peers_dropped_total")
                                           .Help("Peers dropped for not reading their messages")
                                           .Register(*registry)
                                           .Add({});
  prometheus::Family<prometheus::Counter>& leases_requeued =
      BuildCounter()
          .Name("schedfarm_leases_requeued_total")
          .Help("Leases ended without a result whose candidate went back to the queue, by reason")
          .Register(*registry);
  prometheus::Histogram& turn_seconds =
      BuildHistogram()
          .Name("schedfarm_coordinator_loop_iteration_seconds")
          .Help(
              "Duration of each turn of the coordinator's loop, from the poll's return to its "
              "last send")
          .Register(*registry)
          .Add({}, TurnBuckets());
  prometheus::Gauge& turn_max = BuildGauge()
                                    .Name("schedfarm_coordinator_loop_iteration_max_seconds")
                                    .Help("The longest turn of the coordinator's loop since start")
                                    .Register(*registry)
                                    .Add({});
  prometheus::Histogram& turn_cpu_seconds =
      BuildHistogram()
          .Name("schedfarm_coordinator_loop_iteration_cpu_seconds")
          .Help("CPU time of the loop's thread in each turn: the turn's own work, without the "
                "time it waited for a core")
          .Register(*registry)
          .Add({}, TurnBuckets());
  // The loop thread's.
  std::chrono::steady_clock::time_point turn_start;
  double turn_cpu_start = 0;
  double longest_turn = 0;
  Mutex mu;                                            // Refresh's label sets
  std::set<std::string> active SCHEDFARM_GUARDED_BY(mu);  // campaigns with gauges
};

StatusOr<std::unique_ptr<CoordinatorMetrics>> CoordinatorMetrics::Start(
    const std::string& address) {
  auto impl = std::make_unique<Impl>();
  try {
    impl->exposer = std::make_unique<prometheus::Exposer>(address);
  } catch (const std::exception& e) {
    return Status::Error("--metrics-endpoint " + address + ": cannot serve metrics there (" +
                         e.what() + ")");
  }
  // Every reason from the start, at 0, so that a scrape shows what has not happened yet.
  for (const char* reason : {"unroutable", "send_error", "worker_dead", "peer_dropped"}) {
    impl->frames_dropped.Add({{"reason", reason}});
  }
  for (const char* reason : {"unsent", "worker_lost", "refused"}) {
    impl->leases_requeued.Add({{"reason", reason}});
  }
  impl->exposer->RegisterCollectable(impl->registry);
  return std::unique_ptr<CoordinatorMetrics>(new CoordinatorMetrics(std::move(impl)));
}

CoordinatorMetrics::CoordinatorMetrics(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
CoordinatorMetrics::~CoordinatorMetrics() = default;

int CoordinatorMetrics::port() const {
  const std::vector<int> ports = impl_->exposer->GetListeningPorts();
  return ports.empty() ? 0 : ports.front();
}

void CoordinatorMetrics::LeaseSent() { impl_->leases_sent.Increment(); }

void CoordinatorMetrics::ResultRecorded(const std::string& status, double lease_seconds) {
  impl_->results.Add({{"status", status}}).Increment();
  if (lease_seconds >= 0) impl_->lease_seconds.Observe(lease_seconds);
}

void CoordinatorMetrics::ResultAcknowledged(double seconds) { impl_->ack_seconds.Observe(seconds); }

void CoordinatorMetrics::StoreWrite(double seconds) { impl_->write_seconds.Observe(seconds); }

void CoordinatorMetrics::FramesDropped(const std::string& reason, int64_t frames) {
  impl_->frames_dropped.Add({{"reason", reason}}).Increment(static_cast<double>(frames));
}

void CoordinatorMetrics::PeerDropped(int64_t frames) {
  impl_->peers_dropped.Increment();
  FramesDropped("peer_dropped", frames);
}

void CoordinatorMetrics::LeaseRequeued(const std::string& reason) {
  impl_->leases_requeued.Add({{"reason", reason}}).Increment();
}

void CoordinatorMetrics::TurnStarted() {
  impl_->turn_start = std::chrono::steady_clock::now();
  impl_->turn_cpu_start = ThreadCpuSeconds();
}

void CoordinatorMetrics::TurnEnded() {
  Impl& m = *impl_;
  const double seconds = SecondsSince(m.turn_start);
  m.turn_seconds.Observe(seconds);
  m.turn_cpu_seconds.Observe(ThreadCpuSeconds() - m.turn_cpu_start);
  if (seconds <= m.longest_turn) return;
  m.longest_turn = seconds;
  m.turn_max.Set(seconds);
}

void CoordinatorMetrics::Refresh(const Snapshot& snapshot) {
  Impl& m = *impl_;
  MutexLock lock(m.mu);
  for (const char* state : {"pending", "running", "paused", "done", "cancelled", "failed"}) {
    auto it = snapshot.campaigns_by_state.find(state);
    m.campaigns.Add({{"state", state}})
        .Set(static_cast<double>(it == snapshot.campaigns_by_state.end() ? 0 : it->second));
  }
  std::set<std::string> now_active;
  for (const Campaign& c : snapshot.campaigns) {
    now_active.insert(c.id);
    m.finished.Add({{"campaign", c.id}}).Set(static_cast<double>(c.finished));
    m.budget.Add({{"campaign", c.id}}).Set(static_cast<double>(c.budget));
    m.queued.Add({{"campaign", c.id}}).Set(static_cast<double>(c.queued));
    m.rate.Add({{"campaign", c.id}}).Set(c.results_per_second);
  }
  for (const std::string& id : m.active) {  // ended campaigns leave the per-campaign gauges
    if (now_active.count(id)) continue;
    for (auto* family : {&m.finished, &m.budget, &m.queued, &m.rate}) {
      family->Remove(&family->Add({{"campaign", id}}));
    }
  }
  m.active = std::move(now_active);
  m.leases_in_flight.Set(static_cast<double>(snapshot.leases_in_flight));
  for (const char* state : {"busy", "idle", "draining", "left", "dead"}) {
    auto it = snapshot.workers_by_state.find(state);
    m.workers.Add({{"state", state}})
        .Set(static_cast<double>(it == snapshot.workers_by_state.end() ? 0 : it->second));
  }
  m.models.Set(static_cast<double>(snapshot.models));
}

}  // namespace schedfarm
