// The A/A repeatability test: the same schedules measured twice on this host through
// the worker's sandbox (the farm's real measurement path), all of pass A, then all of
// pass B, and the distribution of the relative difference of the two medians of each
// schedule. The value-learning paper saw 2.4% average noise on a dedicated Xeon;
// this prints the figure for this host beside it.
//
// Usage: aa_repeatability [--candidates N] [--samples K] [--threads T]
#include <poll.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#include "bench/zoo_candidates.h"
#include "protocol/measurement_settings.h"
#include "worker/sandbox.h"

namespace schedfarm {
namespace {

double Quantile(std::vector<double> values, double q) {
  std::sort(values.begin(), values.end());
  const double position = q * (values.size() - 1);
  const size_t low = static_cast<size_t>(position);
  const size_t high = std::min(low + 1, values.size() - 1);
  return values[low] + (position - low) * (values[high] - values[low]);
}

std::vector<Measurement> MeasureAll(SandboxPool& pool,
                                    const std::vector<BenchCandidate>& candidates,
                                    const MeasurementSettings& settings, const char* pass) {
  for (size_t i = 0; i < candidates.size(); ++i) {
    SandboxJob job;
    job.set_job_id(std::string(pass) + std::to_string(i));
    *job.mutable_pipeline() = candidates[i].pipeline;
    *job.mutable_schedule() = candidates[i].schedule;
    *job.mutable_settings() = settings;
    pool.Submit(job);
  }
  std::vector<Measurement> results(candidates.size());
  size_t done = 0;
  while (done < candidates.size()) {
    pollfd ready = {pool.notify_fd(), POLLIN, 0};
    poll(&ready, 1, -1);
    for (SandboxOutcome& outcome : pool.TakeFinished()) {
      results[std::stoul(outcome.job_id.substr(1))] = outcome.measurement;
      ++done;
    }
  }
  return results;
}

int Main(int argc, char** argv) {
  int count = 24;
  int samples = 10;
  int threads = 1;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (std::strcmp(argv[i], "--candidates") == 0) count = std::atoi(argv[i + 1]);
    if (std::strcmp(argv[i], "--samples") == 0) samples = std::atoi(argv[i + 1]);
    if (std::strcmp(argv[i], "--threads") == 0) threads = std::atoi(argv[i + 1]);
  }
  if (count < 2 || samples < 2 || threads < 1) {
    std::fprintf(stderr,
                 "usage: aa_repeatability [--candidates N>=2] [--samples K>=2] "
                 "[--threads T>=1]\n");
    return 2;
  }
  MeasurementSettings settings;
  settings.set_samples(samples);
  settings.set_threads(threads);
  settings = WithDefaults(settings);

  const std::string cache_dir =
      (std::filesystem::temp_directory_path() / ("schedfarm-aa-" + std::to_string(getpid())))
          .string();
  std::filesystem::create_directories(cache_dir);
  SandboxOptions options;
  options.child_executable = FARM_WORKER_BIN;
  options.children = 2;
  options.compile_slots = 1;
  options.cache_dir = cache_dir;
  StatusOr<std::unique_ptr<SandboxPool>> pool = SandboxPool::Start(options);
  if (!pool.ok()) {
    std::fprintf(stderr, "sandbox: %s\n", pool.status().message().c_str());
    return 1;
  }
  const std::vector<BenchCandidate> candidates = ZooCandidates(count);
  std::printf(
      "A/A: %d schedules of 6 zoo blocks (quarter spatial size, half channels),\n"
      "measured twice through the sandbox (%d samples of >= %.0f ms, target CV %.2f, %d "
      "thread(s))\n\n",
      count, samples, 1000 * settings.min_sample_seconds(), settings.target_cv(), threads);
  const std::vector<Measurement> a = MeasureAll(**pool, candidates, settings, "a");
  const std::vector<Measurement> b = MeasureAll(**pool, candidates, settings, "b");

  std::printf("%-40s %12s %12s %9s %7s %7s %5s %5s\n", "schedule", "median A ms", "median B ms",
              "B/A - 1", "CV A", "CV B", "n A", "n B");
  std::vector<double> differences, abs_differences, cvs;
  for (size_t i = 0; i < candidates.size(); ++i) {
    if (a[i].status() != OK || b[i].status() != OK) {
      std::printf("%-40s %s / %s\n", candidates[i].name.c_str(),
                  MeasurementStatus_Name(a[i].status()).c_str(),
                  MeasurementStatus_Name(b[i].status()).c_str());
      continue;
    }
    const double ma = a[i].stats().median_seconds();
    const double mb = b[i].stats().median_seconds();
    const double d = mb / ma - 1;
    differences.push_back(d);
    abs_differences.push_back(std::fabs(d));
    cvs.push_back(a[i].stats().cv());
    cvs.push_back(b[i].stats().cv());
    std::printf("%-40s %12.3f %12.3f %+8.2f%% %6.2f%% %6.2f%% %5d %5d\n",
                candidates[i].name.c_str(), 1000 * ma, 1000 * mb, 100 * d, 100 * a[i].stats().cv(),
                100 * b[i].stats().cv(), a[i].samples_seconds_size(), b[i].samples_seconds_size());
  }
  std::filesystem::remove_all(cache_dir);
  if (differences.size() < 2) {
    std::printf("\nfewer than 2 schedules measured in both passes\n");
    return 1;
  }
  double mean_abs = 0, mean = 0, mean_cv = 0;
  for (double d : abs_differences) mean_abs += d / abs_differences.size();
  for (double d : differences) mean += d / differences.size();
  for (double cv : cvs) mean_cv += cv / cvs.size();
  std::printf(
      "\n|relative difference of medians| over %zu schedules: mean %.2f%%, median %.2f%%, "
      "p90 %.2f%%, max %.2f%%\n",
      abs_differences.size(), 100 * mean_abs, 100 * Quantile(abs_differences, 0.5),
      100 * Quantile(abs_differences, 0.9),
      100 * *std::max_element(abs_differences.begin(), abs_differences.end()));
  std::printf("signed mean (drift between passes) %+.2f%%; mean CV within a measurement %.2f%%\n",
              100 * mean, 100 * mean_cv);
  std::printf(
      "reference: 2.4%% average noise on a dedicated Xeon (value-learning paper); "
      "this host / reference: %.2fx\n",
      mean_abs / 0.024);
  return 0;
}

}  // namespace
}  // namespace schedfarm

int main(int argc, char** argv) { return schedfarm::Main(argc, argv); }
