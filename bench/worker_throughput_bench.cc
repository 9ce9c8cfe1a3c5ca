// Worker throughput, end to end: a stream of zoo candidates (random schedules of zoo
// blocks at reduced size) fed by a local stand-in coordinator to a real farm-worker
// process, against a plain in-process loop that measures the same candidates one after
// another (MeasureInProcess: no daemon, no sandbox, no protocol), in the same run.
// Reference outputs are computed once beforehand into a cache directory that both
// read, so neither side pays for them.
//
// Targets: with compiles in parallel to the benchmark (--compile-slots 1 beside the
// benchmark core), the worker is at least as fast as the plain loop; with one sandbox
// process and no overlap, its per-candidate overhead is under 5% of the plain loop's
// time per candidate.
//
// Usage: worker_throughput_bench [--candidates N] [--samples K]
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#include "bench/zoo_candidates.h"
#include "common/elapsed.h"
#include "pipeline/graph.h"
#include "protocol/measurement_settings.h"
#include "tests/support/stand_in_coordinator.h"
#include "worker/measure.h"

namespace schedfarm {
namespace {

using Clock = std::chrono::steady_clock;
using testing_support::StandInCoordinator;
using testing_support::WorkerProcess;

// One line per measured candidate, and the error of a failed one.
void PrintCandidate(const BenchCandidate& c, const Measurement& m, const char* when,
                    double seconds) {
  std::printf("  %-40s %-14s compile %5.2f s, median %8.3f ms x %2d samples, %s %5.1f s\n",
              c.name.c_str(), MeasurementStatus_Name(m.status()).c_str(), m.compile_seconds(),
              1000 * m.stats().median_seconds(), m.samples_seconds_size(), when, seconds);
  if (m.status() != OK) std::printf("    %s\n", m.error().substr(0, 300).c_str());
  std::fflush(stdout);
}

struct RunFigures {
  double seconds = 0;
  int ok = 0;
  int failed = 0;
  double compile_seconds = 0;
};

RunFigures PlainLoop(const std::vector<BenchCandidate>& candidates,
                     const MeasurementSettings& settings, const std::string& cache_dir) {
  ReferenceCache cache(cache_dir);
  RunFigures figures;
  const Clock::time_point start = Clock::now();
  for (const BenchCandidate& c : candidates) {
    const PipelineGraph graph = PipelineGraph::Build(c.pipeline).value();
    const Clock::time_point candidate_start = Clock::now();
    const Measurement m = MeasureInProcess(graph, c.schedule, settings, cache);
    (m.status() == OK ? figures.ok : figures.failed)++;
    figures.compile_seconds += m.compile_seconds();
    PrintCandidate(c, m, "took", SecondsSince(candidate_start));
  }
  figures.seconds = SecondsSince(start);
  return figures;
}

// Runs the candidates through a farm-worker started with `worker_args`, handing out
// leases as its credits allow; times from the first lease to the last result.
RunFigures ThroughWorker(const std::vector<BenchCandidate>& candidates,
                         const MeasurementSettings& settings,
                         const std::vector<std::string>& worker_args) {
  StandInCoordinator coordinator;
  std::vector<std::string> args = {"--coordinator", coordinator.endpoint(), "--id", "bench"};
  args.insert(args.end(), worker_args.begin(), worker_args.end());
  WorkerProcess worker(FARM_WORKER_BIN, args);
  RunFigures figures;
  std::string peer;
  int window = 0;  // the worker's credits: leases it wants in hand
  coordinator.set_keep_registrations(true);
  while (peer.empty()) {
    auto message = coordinator.Receive(60000);
    if (!message) {
      std::fprintf(stderr, "the worker did not register:\n%s\n", worker.Log().c_str());
      std::exit(1);
    }
    if (message->envelope.has_register_()) {
      peer = message->peer;
      window = message->envelope.register_().credits();
    }
  }
  coordinator.set_keep_registrations(false);

  size_t next = 0;
  int finished = 0;
  const Clock::time_point start = Clock::now();
  while (finished < static_cast<int>(candidates.size())) {
    while (static_cast<int>(next) - finished < window && next < candidates.size()) {
      Envelope envelope;
      Lease& lease = *envelope.mutable_lease();
      lease.set_lease_id("lease-" + std::to_string(next));
      *lease.mutable_pipeline() = candidates[next].pipeline;
      lease.mutable_candidate()->set_pipeline_id(candidates[next].pipeline_id);
      *lease.mutable_candidate()->mutable_schedule() = candidates[next].schedule;
      *lease.mutable_settings() = settings;
      coordinator.Send(peer, envelope);
      ++next;
    }
    auto message = coordinator.Receive(600000);
    if (!message) {
      std::fprintf(stderr, "no message from the worker in 10 minutes:\n%s\n", worker.Log().c_str());
      std::exit(1);
    }
    if (message->envelope.has_work_request()) {
      window = message->envelope.work_request().credits();
    } else if (message->envelope.has_result()) {
      const Measurement& m = message->envelope.result().measurement();
      Envelope ack;
      ack.mutable_ack()->set_lease_id(m.lease_id());
      coordinator.Send(peer, ack);
      (m.status() == OK ? figures.ok : figures.failed)++;
      figures.compile_seconds += m.compile_seconds();
      ++finished;
      PrintCandidate(candidates[std::stoul(m.lease_id().substr(6))], m, "done at",
                     SecondsSince(start));
    }
  }
  figures.seconds = SecondsSince(start);
  return figures;
}

void Print(const char* name, const RunFigures& f, int n) {
  std::printf(
      "%-34s %7.1f s  %6.2f candidates/min  %5.2f s/candidate  (%d ok, %d failed, "
      "compile %.1f s)\n",
      name, f.seconds, 60.0 * n / f.seconds, f.seconds / n, f.ok, f.failed, f.compile_seconds);
  std::fflush(stdout);
}

int Main(int argc, char** argv) {
  int count = 12;
  int samples = 10;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (std::strcmp(argv[i], "--candidates") == 0) count = std::atoi(argv[i + 1]);
    if (std::strcmp(argv[i], "--samples") == 0) samples = std::atoi(argv[i + 1]);
  }
  if (count < 1 || samples < 1) {
    std::fprintf(stderr, "usage: worker_throughput_bench [--candidates N] [--samples K]\n");
    return 2;
  }
  MeasurementSettings settings;
  settings.set_samples(samples);
  settings = WithDefaults(settings);

  const std::vector<BenchCandidate> candidates = ZooCandidates(count);
  const std::string cache_dir =
      (std::filesystem::temp_directory_path() / ("schedfarm-bench-" + std::to_string(getpid())))
          .string();
  std::filesystem::create_directories(cache_dir);
  {
    ReferenceCache warm(cache_dir);
    for (const BenchCandidate& c : candidates) {
      (void)warm.Get(PipelineGraph::Build(c.pipeline).value());
    }
  }
  std::printf(
      "%d candidates (random schedules of 6 zoo blocks, quarter spatial size, half "
      "channels),\n%d samples of >= %.0f ms, 1 thread; %ld cores\n",
      count, samples, 1000 * settings.min_sample_seconds(), sysconf(_SC_NPROCESSORS_ONLN));

  const RunFigures plain = PlainLoop(candidates, settings, cache_dir);
  Print("plain in-process loop", plain, count);
  const RunFigures serial = ThroughWorker(
      candidates, settings,
      {"--children", "1", "--compile-slots", "1", "--prefetch", "1", "--cache-dir", cache_dir});
  Print("worker, 1 sandbox, no overlap", serial, count);
  const RunFigures parallel = ThroughWorker(
      candidates, settings, {"--children", "2", "--compile-slots", "1", "--cache-dir", cache_dir});
  Print("worker, compile beside benchmark", parallel, count);

  const double overhead = (serial.seconds - plain.seconds) / plain.seconds;
  std::printf("\nparallel worker / plain loop throughput: %.2fx (target >= 1.00x)\n",
              plain.seconds / parallel.seconds);
  std::printf(
      "serial worker overhead per candidate: %+.1f%% of the plain loop's %.2f s "
      "(target < 5%%)\n",
      100 * overhead, plain.seconds / count);
  std::filesystem::remove_all(cache_dir);
  return 0;
}

}  // namespace
}  // namespace schedfarm

int main(int argc, char** argv) { return schedfarm::Main(argc, argv); }
