// farm-space-report: the size of the schedule space of every zoo block, in the shape
// of Table 2 of the value-learning paper. For each block it walks N random schedules
// (uniform option at every decision) and reports the decisions (stages), the average,
// geometric-mean, minimum and maximum branching factor met along the walks, and the
// estimated number of complete schedules by Knuth's estimator: the product of the
// branching factors along a random path, averaged over the paths.
//
// Usage: farm-space-report [--samples N] [--seed S] [--vector-bytes B] [--blocks a,b,...]
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <sstream>
#include <string>
#include <vector>

#include "pipeline/graph.h"
#include "pipeline/zoo.h"
#include "scheduler/schedule_space.h"

namespace schedfarm {
namespace {

struct Options {
  int samples = 1000;
  uint64_t seed = 1;
  TargetParams target;
  std::vector<std::string> blocks;
};

struct Row {
  std::string block;
  int decisions = 0;
  double mean_branch = 0;
  double log10_geomean_branch = 0;
  int64_t min_branch = 0;
  int64_t max_branch = 0;
  double log10_size = 0;
};

// "3.3e290" from a base-10 logarithm.
std::string Scientific(double log10_value) {
  double exponent = std::floor(log10_value);
  double mantissa = std::pow(10.0, log10_value - exponent);
  if (mantissa >= 9.95) {
    mantissa /= 10;
    exponent += 1;
  }
  char buf[64];
  std::snprintf(buf, sizeof(buf), "%.1fe%.0f", mantissa, exponent);
  return buf;
}

StatusOr<Row> Measure(const std::string& block, const Options& options) {
  SCHEDFARM_ASSIGN_OR_RETURN(PipelineSpec spec, MakeZooBlock(block));
  SCHEDFARM_ASSIGN_OR_RETURN(PipelineGraph graph, PipelineGraph::Build(spec));
  const ScheduleSpace space(graph, options.target);
  Row row;
  row.block = block;
  row.decisions = graph.num_stages();
  row.min_branch = INT64_MAX;
  double sum_branch = 0, sum_log_branch = 0;
  int64_t steps = 0;
  std::vector<double> log_products;
  SpaceRng rng(options.seed);
  for (int i = 0; i < options.samples; ++i) {
    ScheduleSpec partial = space.Empty();
    double log_product = 0;
    while (space.NextStage(partial) >= 0) {
      const int64_t branch = space.CountOptions(partial);
      if (branch < 1) {
        return Status::Error("block '" + block + "': a decision without options at stage '" +
                             graph.stage(space.NextStage(partial)).name() + "'");
      }
      const double log_branch = std::log10(static_cast<double>(branch));
      sum_branch += static_cast<double>(branch);
      sum_log_branch += log_branch;
      log_product += log_branch;
      row.min_branch = std::min(row.min_branch, branch);
      row.max_branch = std::max(row.max_branch, branch);
      ++steps;
      *partial.add_stages() = space.SampleOption(partial, rng);
    }
    log_products.push_back(log_product);
  }
  // log10 of the mean of 10^log_product, without overflow.
  const double top = *std::max_element(log_products.begin(), log_products.end());
  double scaled = 0;
  for (double l : log_products) scaled += std::pow(10.0, l - top);
  row.log10_size = top + std::log10(scaled / static_cast<double>(log_products.size()));
  row.mean_branch = sum_branch / static_cast<double>(steps);
  row.log10_geomean_branch = sum_log_branch / static_cast<double>(steps);
  return row;
}

int Usage(const char* error) {
  std::fprintf(stderr,
               "%s\nusage: farm-space-report [--samples N] [--seed S] [--vector-bytes B] "
               "[--blocks a,b,...]\n",
               error);
  return 2;
}

int Main(int argc, char** argv) {
  Options options;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (i + 1 >= argc) return Usage(("missing value after " + arg).c_str());
    const std::string value = argv[++i];
    char* end = nullptr;
    if (arg == "--samples") {
      options.samples = static_cast<int>(std::strtol(value.c_str(), &end, 10));
      if (*end != '\0' || options.samples < 1) return Usage("--samples takes a count >= 1");
    } else if (arg == "--seed") {
      options.seed = std::strtoull(value.c_str(), &end, 10);
      if (*end != '\0') return Usage("--seed takes an unsigned integer");
    } else if (arg == "--vector-bytes") {
      options.target.vector_bytes = static_cast<int>(std::strtol(value.c_str(), &end, 10));
      if (*end != '\0' || options.target.vector_bytes < 1) {
        return Usage("--vector-bytes takes a byte count >= 1");
      }
    } else if (arg == "--blocks") {
      std::stringstream list(value);
      std::string name;
      while (std::getline(list, name, ',')) options.blocks.push_back(name);
    } else {
      return Usage(("unknown argument " + arg).c_str());
    }
  }
  if (options.blocks.empty()) options.blocks = ZooNames();

  std::printf(
      "Schedule space of the zoo blocks: %d random schedules per block (Knuth's "
      "estimator), %d-byte vectors\n\n",
      options.samples, options.target.vector_bytes);
  std::printf("%-30s %9s %14s %14s %12s %12s %16s\n", "Block", "Decisions", "Avg. Branch",
              "Geo. Branch", "Min Branch", "Max Branch", "Est. Space Size");
  std::vector<Row> rows;
  for (const std::string& block : options.blocks) {
    StatusOr<Row> row = Measure(block, options);
    if (!row.ok()) {
      std::fprintf(stderr, "%s\n", row.status().ToString().c_str());
      return 1;
    }
    std::printf("%-30s %9d %14.4g %14.4g %12lld %12lld %16s\n", row->block.c_str(), row->decisions,
                row->mean_branch, std::pow(10.0, row->log10_geomean_branch),
                static_cast<long long>(row->min_branch), static_cast<long long>(row->max_branch),
                Scientific(row->log10_size).c_str());
    rows.push_back(*row);
  }
  double decisions = 0, branch = 0, log_geo = 0, log_size = 0;
  for (const Row& r : rows) {
    decisions += r.decisions;
    branch += r.mean_branch;
    log_geo += r.log10_geomean_branch;
    log_size += r.log10_size;
  }
  const double n = static_cast<double>(rows.size());
  std::printf("%-30s %9.0f %14.4g %14.4g %12s %12s %16s\n", "Average", decisions / n, branch / n,
              std::pow(10.0, log_geo / n), "", "", Scientific(log_size / n).c_str());
  std::printf(
      "\n(Average row: arithmetic means of decisions and average branch factors; "
      "geometric means of the geometric branch factors and of the space sizes.)\n");
  return 0;
}

}  // namespace
}  // namespace schedfarm

int main(int argc, char** argv) { return schedfarm::Main(argc, argv); }
