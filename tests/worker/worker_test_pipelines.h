// Small pipelines and schedules shared by the worker's tests (each compiles in a
// fraction of a second, so the tests can afford many real Halide compiles), and their
// scratch directories.
#pragma once

#include <google/protobuf/text_format.h>
#include <unistd.h>

#include <filesystem>
#include <string>

#include "gtest/gtest.h"
#include "pipeline/builder.h"
#include "pipeline/graph.h"
#include "schedfarm.pb.h"

namespace schedfarm {
namespace worker_testing {

// A fresh directory under the test's temporary directory.
inline std::string TempDir(const std::string& name) {
  const std::filesystem::path dir =
      std::filesystem::path(testing::TempDir()) / (name + "." + std::to_string(getpid()));
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  return dir.string();
}

// x [16, 24] matmul w [24, 20], plus a bias, relu: stages "matmul", "add", "relu".
inline PipelineSpec TinyMatMul() {
  PipelineBuilder b("tiny_matmul");
  const std::string x = b.Input("x", {16, 24});
  b.Output(b.Relu(b.Add(b.MatMul(x, b.RandomParameter("w", {24, 20}, 0.2)),
                        b.RandomParameter("bias", {20}, 0.5))));
  StatusOr<PipelineSpec> spec = b.Finish();
  EXPECT_TRUE(spec.ok()) << spec.status().ToString();
  return spec.ok() ? *spec : PipelineSpec();
}

// A square matmul whose unscheduled realization takes tens of milliseconds at n=384.
inline PipelineSpec SlowMatMul(int64_t n) {
  PipelineBuilder b("slow_matmul");
  const std::string x = b.Input("x", {n, n});
  b.Output(b.MatMul(x, b.RandomParameter("w", {n, n}, 0.1)));
  StatusOr<PipelineSpec> spec = b.Finish();
  EXPECT_TRUE(spec.ok()) << spec.status().ToString();
  return spec.ok() ? *spec : PipelineSpec();
}

// x [rows, 1] + y [1, cols] -> "add" [rows, cols] (4 bytes a value), summed over
// axis 1: a small pipeline whose intermediate is as big as one likes once "add" is
// computed at root (HugeIntermediateSchedule) instead of inlined.
inline PipelineSpec HugeIntermediate(int64_t rows, int64_t cols) {
  PipelineBuilder b("huge_intermediate");
  const std::string x = b.Input("x", {rows, 1});
  const std::string y = b.Input("y", {1, cols});
  b.Output(b.Reduce(SUM, b.Add(x, y), {1}, false));
  StatusOr<PipelineSpec> spec = b.Finish();
  EXPECT_TRUE(spec.ok()) << spec.status().ToString();
  return spec.ok() ? *spec : PipelineSpec();
}

inline ScheduleSpec ParseSchedule(const std::string& text) {
  ScheduleSpec spec;
  EXPECT_TRUE(google::protobuf::TextFormat::ParseFromString(text, &spec)) << text;
  return spec;
}

// TinyMatMul with the output split and vectorized, the matmul computed at root.
inline constexpr char kTinyMatMulSchedule[] = R"pb(
  stages {
    stage: "relu"
    compute: ROOT
    pure {
      splits { dim: "d1" factors: 4 }
      vectorize { stage: "relu" dim: "d1" level: 1 }
    }
  }
  stages { stage: "add" compute: INLINE }
  stages { stage: "matmul" compute: ROOT }
)pb";

// TinyMatMul's output rounded up to a multiple of 8 columns: its buffer has 20, so
// every realization fails at run time.
inline constexpr char kTinyMatMulRoundUpSchedule[] = R"pb(
  stages {
    stage: "relu"
    compute: ROOT
    pure {
      splits { dim: "d1" factors: 8 }
      tail: TAIL_ROUND_UP
    }
  }
)pb";

inline constexpr char kHugeIntermediateSchedule[] = R"pb(
  partial: true
  stages { stage: "reduce_sum" compute: ROOT }
  stages { stage: "add" compute: ROOT }
)pb";

inline PipelineGraph MustBuild(const PipelineSpec& spec) {
  StatusOr<PipelineGraph> graph = PipelineGraph::Build(spec);
  EXPECT_TRUE(graph.ok()) << graph.status().ToString();
  return graph.ok() ? *graph : PipelineGraph();
}

}  // namespace worker_testing
}  // namespace schedfarm
