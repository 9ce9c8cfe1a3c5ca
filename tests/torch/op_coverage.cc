#include "tests/torch/op_coverage.h"

#include <utility>

namespace schedfarm {

Attributes PoolAttrs(PoolFn fn, const std::vector<int64_t>& kernel,
                     const std::vector<int64_t>& strides, const std::vector<int64_t>& pads,
                     const std::vector<int64_t>& dilations, bool ceil_mode,
                     bool count_include_pad) {
  Attributes a;
  a.set_pool(fn);
  for (int64_t v : kernel) a.add_kernel(v);
  for (int64_t v : strides) a.add_strides(v);
  for (int64_t v : pads) a.add_pads(v);
  for (int64_t v : dilations) a.add_dilations(v);
  a.set_ceil_mode(ceil_mode);
  a.set_count_include_pad(count_include_pad);
  return a;
}

namespace {

// Pools in 1-3 dims with asymmetric pads, dilations, ceil mode (including windows that
// reach past the right padding) and both count_include_pad settings.
void PoolCoverage(PipelineBuilder& b) {
  auto x2 = b.Input("x2", {2, 3, 11, 10});
  auto x1 = b.Input("x1", {1, 2, 13});
  auto x3 = b.Input("x3", {1, 2, 5, 6, 7});
  b.Output(b.AddStage(POOL, {x2},
                      PoolAttrs(MAX_POOL, {3, 2}, {2, 1}, {2, 0, 1, 1}, {2, 3}, true, false)));
  b.Output(b.AddStage(POOL, {x2},
                      PoolAttrs(AVG_POOL, {3, 2}, {2, 1}, {2, 0, 1, 1}, {2, 3}, true, true)));
  b.Output(b.AddStage(POOL, {x2},
                      PoolAttrs(AVG_POOL, {3, 2}, {2, 1}, {2, 0, 1, 1}, {2, 3}, false, false)));
  b.Output(b.AddStage(POOL, {x2},
                      PoolAttrs(AVG_POOL, {3, 3}, {2, 2}, {1, 1, 1, 1}, {1, 1}, true, true)));
  b.Output(b.AddStage(POOL, {x1}, PoolAttrs(MAX_POOL, {4}, {3}, {3, 1}, {1}, true, false)));
  b.Output(b.AddStage(POOL, {x1}, PoolAttrs(AVG_POOL, {4}, {3}, {3, 1}, {1}, true, false)));
  b.Output(b.AddStage(
      POOL, {x3},
      PoolAttrs(AVG_POOL, {2, 3, 2}, {2, 1, 3}, {1, 1, 0, 0, 1, 1}, {1, 1, 1}, true, true)));
  // Those torch computes as they are: ResNet's stem pool, a 1-d and a 3-d one.
  b.Output(b.AddStage(POOL, {x2},
                      PoolAttrs(MAX_POOL, {3, 3}, {2, 2}, {1, 1, 1, 1}, {1, 1}, false, false)));
  b.Output(b.AddStage(POOL, {x1}, PoolAttrs(AVG_POOL, {3}, {2}, {1, 1}, {1}, true, false)));
  b.Output(b.AddStage(
      POOL, {x3},
      PoolAttrs(MAX_POOL, {2, 3, 2}, {1, 2, 2}, {1, 1, 0, 1, 1, 0}, {1, 2, 1}, true, false)));
}

// Convolutions in 1-3 dims with groups, strides, dilations and asymmetric pads.
void ConvCoverage(PipelineBuilder& b) {
  auto x1 = b.Input("x1", {2, 4, 17});
  auto x2 = b.Input("x2", {2, 6, 11, 10});
  auto x3 = b.Input("x3", {1, 4, 5, 6, 7});
  auto w1 = b.RandomParameter("w1", {6, 2, 3}, 0.5);
  auto b1 = b.RandomParameter("b1", {6}, 0.1);
  b.Output(b.Conv(x1, w1, b1, {2}, {3, 1}, {2}, 2));
  auto wd = b.RandomParameter("wd", {6, 1, 3, 3}, 0.5);
  b.Output(b.Conv(x2, wd, "", {2, 1}, {0, 2, 1, 0}, {1, 2}, 6));
  auto w2 = b.RandomParameter("w2", {5, 6, 2, 4}, 0.3);
  auto b2 = b.RandomParameter("b2", {5}, 0.1);
  b.Output(b.Conv(x2, w2, b2, {1, 3}, {1, 1, 2, 2}, {2, 1}, 1));
  auto w3 = b.RandomParameter("w3", {4, 2, 2, 3, 2}, 0.4);
  b.Output(b.Conv(x3, w3, "", {1, 2, 1}, {1, 0, 1, 0, 2, 0}, {2, 1, 3}, 2));
}

// MATMUL with transposes, batch broadcasting, alpha/beta and a broadcast c, in each form
// torch computes it (pipeline/torch/native_calls.h).
void MatMulCoverage(PipelineBuilder& b) {
  auto a4 = b.Input("a4", {3, 1, 7, 5});
  auto b3 = b.Input("b3", {4, 6, 7});
  b.Output(b.MatMul(a4, b3, /*trans_a=*/true, /*trans_b=*/true));
  auto a2 = b.Input("a2", {5, 7});
  auto w = b.RandomParameter("w", {7, 6}, 0.5);
  auto c = b.RandomParameter("c", {6}, 1.0);
  b.Output(b.Gemm(a2, w, c, 0.5, -2.0, false, false));
  auto c2 = b.RandomParameter("c2", {5, 1}, 1.0);
  b.Output(b.Gemm(a2, w, c2, 1.0, 1.0, false, false));
  // Those with a bias torch computes as linear: a transposed, and batched.
  auto wt = b.RandomParameter("wt", {6, 5}, 0.5);
  b.Output(b.Gemm(a2, wt, c, 1.0, 1.0, true, true));
  b.Output(b.Linear(b.Input("x3", {2, 5, 7}), 4));
}

// PAD in every mode, strided and reversed SLICE, TRANSPOSE, RESHAPE, UPSAMPLE, CONCAT.
void DataMovementCoverage(PipelineBuilder& b) {
  auto x = b.Input("x", {3, 4, 5, 6});
  const std::vector<int64_t> pads = {1, 0, 2, 3, 0, 2, 1, 4};
  b.Output(b.Pad(x, pads, CONSTANT, 0.5));
  b.Output(b.Pad(x, pads, EDGE));
  b.Output(b.Pad(x, pads, REFLECT));
  Attributes slice;
  for (int64_t axis : {0, 2, 3}) slice.add_axes(axis);
  for (int64_t start : {2, 4, 1}) slice.add_starts(start);
  for (int64_t step : {-1, -2, 2}) slice.add_steps(step);
  b.Output(b.AddStageWithShape(SLICE, {x}, slice, {3, 4, 3, 3}));
  b.Output(b.Reshape(b.Transpose(x, {2, 0, 3, 1}), {15, 24}));
  b.Output(b.Upsample(x, {1, 2, 1, 3}));
  b.Output(b.Concat({x, b.Relu(x)}, 2));
}

// Every REDUCE function over several axis sets, every BINARY function with broadcasting.
void ReduceBinaryCoverage(PipelineBuilder& b) {
  auto x = b.Input("x", {3, 4, 5, 6});
  const std::vector<std::pair<std::vector<int64_t>, bool>> axes = {
      {{1, 3}, true}, {{0}, false}, {{0, 1, 2, 3}, false}, {{2}, true}, {{1, 2}, false}};
  int i = 0;
  for (ReduceFn fn : {SUM, MEAN, REDUCE_MAX, REDUCE_MIN, SUM_SQUARE}) {
    b.Output(b.Reduce(fn, x, axes[i].first, axes[i].second));
    ++i;
  }
  auto p = b.Input("p", {3, 1, 5, 1});
  auto q = b.Input("q", {4, 1, 6});
  auto q_positive = b.UnaryWithParams(SCALE, b.Unary(ABS, q), 1.0, 0.5);
  auto p_positive = b.UnaryWithParams(SCALE, b.Unary(ABS, p), 1.0, 0.5);
  for (BinaryFn fn : {ADD, SUB, MUL, MAX, MIN}) b.Output(b.Binary(fn, p, q));
  b.Output(b.Div(p, q_positive));
  b.Output(b.Binary(POW, p_positive, q));
}

// Every UNARY function over [-6, 6) (positive-domain ones over [0.05, 6.05)).
void UnaryCoverage(PipelineBuilder& b) {
  auto x = b.UnaryWithParams(SCALE, b.Input("x", {4, 64}), 6.0, 0.0);
  auto positive = b.UnaryWithParams(SCALE, b.Unary(ABS, x), 1.0, 0.05);
  for (int fn = RELU; fn <= SCALE; ++fn) {
    const UnaryFn f = static_cast<UnaryFn>(fn);
    if (f == CLIP) continue;
    const bool positive_only = f == LOG || f == SQRT || f == RSQRT || f == RECIPROCAL;
    b.Output(b.Unary(f, positive_only ? positive : x));
  }
  b.Output(b.Clip(x, -1.5, 4.0));
  b.Output(b.UnaryWithParams(LEAKY_RELU, x, 0.2, 0.0));
  b.Output(b.UnaryWithParams(ELU, x, 0.7, 0.0));
  b.Output(b.UnaryWithParams(HARD_SIGMOID, x, 0.1, 0.6));
}

}  // namespace

const std::map<std::string, std::function<void(PipelineBuilder&)>>& OpCoverageBuilders() {
  static const std::map<std::string, std::function<void(PipelineBuilder&)>> builders = {
      {"pool", PoolCoverage},
      {"conv", ConvCoverage},
      {"matmul", MatMulCoverage},
      {"data_movement", DataMovementCoverage},
      {"reduce_binary", ReduceBinaryCoverage},
      {"unary", UnaryCoverage},
  };
  return builders;
}

std::vector<OpCoverageCase> OpCoverageCases() {
  return {{"pool", FLOAT32, EXACT},          {"pool", FLOAT64, EXACT},
          {"conv", FLOAT32, EXACT},          {"conv", FLOAT64, EXACT},
          {"matmul", FLOAT32, EXACT},        {"matmul", FLOAT64, EXACT},
          {"data_movement", FLOAT32, EXACT}, {"reduce_binary", FLOAT32, EXACT},
          {"reduce_binary", FLOAT64, EXACT}, {"unary", FLOAT32, EXACT},
          {"unary", FLOAT32, PADE},          {"unary", FLOAT64, EXACT},
          {"unary", FLOAT64, PADE}};
}

std::string OpCoverageCaseName(const testing::TestParamInfo<OpCoverageCase>& info) {
  return info.param.name + (info.param.dtype == FLOAT64 ? "_f64" : "_f32") +
         (info.param.math == PADE ? "_pade" : "_exact");
}

}  // namespace schedfarm
