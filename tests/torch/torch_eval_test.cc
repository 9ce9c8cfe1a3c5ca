// Unit tests of the libtorch oracle: each op against values computed by hand or by a
// naive loop written here, independently of ATen.
#include "pipeline/torch/torch_eval.h"

#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <string>
#include <vector>

#include "pipeline/builder.h"
#include "pipeline/graph.h"
#include "pipeline/tensor.h"
#include "pipeline/torch/native_calls.h"
#include "pipeline/zoo.h"
#include "tests/torch/op_coverage.h"

namespace schedfarm {
namespace {

HostTensor MakeTensor(const Shape& shape, std::vector<double> data, DataType dtype = FLOAT32) {
  HostTensor t;
  t.dtype = dtype;
  t.shape = shape;
  t.data = std::move(data);
  return t;
}

// Values in [-1, 1) rounded to dtype, different for each `seed`.
HostTensor RandomTensor(const Shape& shape, uint64_t seed, DataType dtype = FLOAT32) {
  HostTensor t = MakeTensor(shape, {}, dtype);
  for (int64_t i = 0; i < NumElements(shape); ++i) {
    t.data.push_back(RoundToDtype(DeterministicUniform(seed, i), dtype));
  }
  return t;
}

// Finishes `b`, evaluates it with the oracle on `inputs` and returns all outputs.
std::vector<HostTensor> EvaluateAll(PipelineBuilder& b, const std::vector<HostTensor>& inputs) {
  StatusOr<PipelineSpec> spec = b.Finish();
  EXPECT_TRUE(spec.ok()) << spec.status().ToString();
  if (!spec.ok()) return {};
  StatusOr<PipelineGraph> graph = PipelineGraph::Build(*spec);
  EXPECT_TRUE(graph.ok()) << graph.status().ToString();
  if (!graph.ok()) return {};
  StatusOr<std::vector<HostTensor>> outputs = EvaluateWithTorch(*graph, inputs);
  EXPECT_TRUE(outputs.ok()) << outputs.status().ToString();
  if (!outputs.ok()) return {};
  return *outputs;
}

HostTensor Evaluate(PipelineBuilder& b, const std::vector<HostTensor>& inputs) {
  std::vector<HostTensor> outputs = EvaluateAll(b, inputs);
  return outputs.empty() ? HostTensor{} : outputs[0];
}

void ExpectValues(const HostTensor& actual, const Shape& shape, const std::vector<double>& expected,
                  double tolerance = 1e-6) {
  ASSERT_EQ(actual.shape, shape);
  ASSERT_EQ(actual.data.size(), expected.size());
  for (size_t i = 0; i < expected.size(); ++i) {
    if (std::isnan(expected[i])) {
      EXPECT_TRUE(std::isnan(actual.data[i])) << "index " << i;
    } else {
      EXPECT_NEAR(actual.data[i], expected[i], tolerance * std::max(1.0, std::fabs(expected[i])))
          << "index " << i;
    }
  }
}

Attributes ConvAttrs(const std::vector<int64_t>& strides, const std::vector<int64_t>& pads,
                     const std::vector<int64_t>& dilations, int64_t groups) {
  Attributes a;
  for (int64_t v : strides) a.add_strides(v);
  for (int64_t v : pads) a.add_pads(v);
  for (int64_t v : dilations) a.add_dilations(v);
  a.set_groups(groups);
  return a;
}

// Row-major strides of a shape.
std::vector<int64_t> Strides(const Shape& shape) {
  std::vector<int64_t> strides(shape.size(), 1);
  for (size_t d = shape.size(); d-- > 1;) strides[d - 1] = strides[d] * shape[d];
  return strides;
}

// Calls f(index) for every multi-index of `shape` in row-major order.
void ForEachIndex(const Shape& shape, const std::function<void(const std::vector<int64_t>&)>& f) {
  std::vector<int64_t> index(shape.size(), 0);
  for (int64_t flat = 0; flat < NumElements(shape); ++flat) {
    int64_t rest = flat;
    for (size_t d = shape.size(); d-- > 0;) {
      index[d] = rest % shape[d];
      rest /= shape[d];
    }
    f(index);
  }
}

double At(const HostTensor& t, const std::vector<int64_t>& index) {
  std::vector<int64_t> strides = Strides(t.shape);
  int64_t flat = 0;
  for (size_t d = 0; d < index.size(); ++d) flat += index[d] * strides[d];
  return t.data[flat];
}

// Direct convolution by the formula of ops.h.
HostTensor NaiveConv(const HostTensor& x, const HostTensor& w, const HostTensor* bias,
                     const Shape& out_shape, const std::vector<int64_t>& strides,
                     const std::vector<int64_t>& pads, const std::vector<int64_t>& dilations,
                     int64_t groups) {
  const size_t ns = x.shape.size() - 2;
  const int64_t in_per_group = w.shape[1], out_per_group = w.shape[0] / groups;
  HostTensor out = MakeTensor(out_shape, {}, x.dtype);
  Shape kernel(w.shape.begin() + 2, w.shape.end());
  ForEachIndex(out_shape, [&](const std::vector<int64_t>& o) {
    double acc = bias ? bias->data[o[1]] : 0.0;
    const int64_t g = o[1] / out_per_group;
    for (int64_t c = 0; c < in_per_group; ++c) {
      ForEachIndex(kernel, [&](const std::vector<int64_t>& k) {
        std::vector<int64_t> xi = {o[0], g * in_per_group + c};
        std::vector<int64_t> wi = {o[1], c};
        for (size_t s = 0; s < ns; ++s) {
          int64_t i = o[2 + s] * strides[s] - pads[s] + k[s] * dilations[s];
          if (i < 0 || i >= x.shape[2 + s]) return;
          xi.push_back(i);
          wi.push_back(k[s]);
        }
        acc += At(x, xi) * At(w, wi);
      });
    }
    out.data.push_back(acc);
  });
  return out;
}

// Pooling by the formula of ops.h (ONNX): max over the positions inside the input;
// average over them, divided with count_include_pad by the positions inside the
// padded extent.
HostTensor NaivePool(const HostTensor& x, const Shape& out_shape, bool is_max,
                     const std::vector<int64_t>& kernel, const std::vector<int64_t>& strides,
                     const std::vector<int64_t>& pads, const std::vector<int64_t>& dilations,
                     bool count_include_pad) {
  const size_t ns = x.shape.size() - 2;
  HostTensor out = MakeTensor(out_shape, {}, x.dtype);
  ForEachIndex(out_shape, [&](const std::vector<int64_t>& o) {
    double acc = is_max ? -INFINITY : 0.0;
    int64_t inside = 0, in_padded = 0;
    ForEachIndex(kernel, [&](const std::vector<int64_t>& k) {
      std::vector<int64_t> xi = {o[0], o[1]};
      bool in_input = true, in_extent = true;
      for (size_t s = 0; s < ns; ++s) {
        int64_t i = o[2 + s] * strides[s] - pads[s] + k[s] * dilations[s];
        in_input = in_input && i >= 0 && i < x.shape[2 + s];
        in_extent = in_extent && i >= -pads[s] && i < x.shape[2 + s] + pads[ns + s];
        xi.push_back(i);
      }
      in_padded += in_extent;
      if (!in_input) return;
      ++inside;
      acc = is_max ? std::max(acc, At(x, xi)) : acc + At(x, xi);
    });
    if (!is_max) acc /= static_cast<double>(count_include_pad ? in_padded : inside);
    out.data.push_back(acc);
  });
  return out;
}

// ---------------------------------------------------------------------------
// CONV
// ---------------------------------------------------------------------------

TEST(TorchEvalConvTest, Conv1dAsymmetricPadsByHand) {
  PipelineBuilder b("conv1d");
  auto x = b.Input("x", {1, 1, 4});
  auto w = b.ConstantParameter("w", {1, 1, 2}, {2, 1});
  // padded x: [0, 1, 2, 3, 4, 0, 0]; windows start at 0, 2, 4.
  auto y = b.AddStage(CONV, {x, w}, ConvAttrs({2}, {1, 2}, {1}, 1));
  b.Output(y);
  HostTensor out = Evaluate(b, {MakeTensor({1, 1, 4}, {1, 2, 3, 4})});
  ExpectValues(out, {1, 1, 3}, {2 * 0 + 1, 2 * 2 + 3, 2 * 4 + 0});
}

TEST(TorchEvalConvTest, Conv1dDilationAndBiasByHand) {
  PipelineBuilder b("conv1d_dilated");
  auto x = b.Input("x", {1, 1, 5});
  auto w = b.ConstantParameter("w", {2, 1, 2}, {1, 10, -1, 1});
  auto bias = b.ConstantParameter("b", {2}, {0.5, -0.5});
  auto y = b.AddStage(CONV, {x, w, bias}, ConvAttrs({1}, {0, 0}, {3}, 1));
  b.Output(y);
  HostTensor out = Evaluate(b, {MakeTensor({1, 1, 5}, {1, 2, 3, 4, 5})});
  // Output o reads x[o] and x[o + 3].
  ExpectValues(out, {1, 2, 2}, {1 + 40 + 0.5, 2 + 50 + 0.5, -1 + 4 - 0.5, -2 + 5 - 0.5});
}

TEST(TorchEvalConvTest, Conv2dGroupsStridesDilationsAgainstLoop) {
  PipelineBuilder b("conv2d");
  auto x = b.Input("x", {2, 4, 7, 6});
  auto w = b.RandomParameter("w", {6, 2, 3, 2}, 0.5);
  auto bias = b.RandomParameter("bias", {6}, 0.1);
  const std::vector<int64_t> strides = {2, 1}, pads = {1, 0, 2, 1}, dilations = {1, 2};
  auto y = b.AddStage(CONV, {x, w, bias}, ConvAttrs(strides, pads, dilations, 2));
  b.Output(y);
  HostTensor xv = RandomTensor({2, 4, 7, 6}, 11);
  StatusOr<PipelineSpec> spec = b.Finish();
  ASSERT_TRUE(spec.ok()) << spec.status().ToString();
  StatusOr<HostTensor> wv = MaterializeParameter(spec->parameters(0));
  StatusOr<HostTensor> bv = MaterializeParameter(spec->parameters(1));
  ASSERT_TRUE(wv.ok() && bv.ok());
  StatusOr<PipelineGraph> graph = PipelineGraph::Build(*spec);
  ASSERT_TRUE(graph.ok()) << graph.status().ToString();
  auto out = EvaluateWithTorch(*graph, {xv});
  ASSERT_TRUE(out.ok()) << out.status().ToString();
  // O = floor((S + pads - dilation*(K-1) - 1) / stride) + 1
  const Shape out_shape = {2, 6, (7 + 3 - 2 - 1) / 2 + 1, (6 + 1 - 2 - 1) / 1 + 1};
  HostTensor expected = NaiveConv(xv, *wv, &*bv, out_shape, strides, pads, dilations, 2);
  ExpectValues((*out)[0], out_shape, expected.data, 1e-5);
}

TEST(TorchEvalConvTest, Conv3dAgainstLoopInFloat64) {
  PipelineBuilder b("conv3d", FLOAT64);
  auto x = b.Input("x", {1, 2, 4, 5, 3});
  auto w = b.RandomParameter("w", {3, 2, 2, 3, 2}, 0.5);
  const std::vector<int64_t> strides = {1, 2, 1}, pads = {0, 1, 1, 1, 0, 0}, dilations = {2, 1, 1};
  auto y = b.AddStage(CONV, {x, w}, ConvAttrs(strides, pads, dilations, 1));
  b.Output(y);
  HostTensor xv = RandomTensor({1, 2, 4, 5, 3}, 12, FLOAT64);
  StatusOr<PipelineSpec> spec = b.Finish();
  ASSERT_TRUE(spec.ok()) << spec.status().ToString();
  StatusOr<HostTensor> wv = MaterializeParameter(spec->parameters(0));
  ASSERT_TRUE(wv.ok());
  StatusOr<PipelineGraph> graph = PipelineGraph::Build(*spec);
  ASSERT_TRUE(graph.ok()) << graph.status().ToString();
  auto out = EvaluateWithTorch(*graph, {xv});
  ASSERT_TRUE(out.ok()) << out.status().ToString();
  const Shape out_shape = {1, 3, (4 + 1 - 2 - 1) / 1 + 1, (5 + 1 - 2 - 1) / 2 + 1,
                           (3 + 1 - 1 - 1) / 1 + 1};
  HostTensor expected = NaiveConv(xv, *wv, nullptr, out_shape, strides, pads, dilations, 1);
  EXPECT_EQ((*out)[0].dtype, FLOAT64);
  ExpectValues((*out)[0], out_shape, expected.data, 1e-12);
}

// ---------------------------------------------------------------------------
// MATMUL
// ---------------------------------------------------------------------------

Attributes MatMulAttrs(bool trans_a, bool trans_b) {
  Attributes a;
  a.set_trans_a(trans_a);
  a.set_trans_b(trans_b);
  return a;
}

TEST(TorchEvalMatMulTest, TransposedOperandsByHand) {
  PipelineBuilder b("matmul");
  auto x = b.Input("a", {2, 2});  // used as a^T
  auto y = b.Input("b", {3, 2});  // used as b^T
  b.Output(b.AddStage(MATMUL, {x, y}, MatMulAttrs(true, true)));
  // a^T = [[1, 3], [2, 4]], b^T = [[1, 0, 2], [1, 1, 0]].
  HostTensor out =
      Evaluate(b, {MakeTensor({2, 2}, {1, 2, 3, 4}), MakeTensor({3, 2}, {1, 1, 0, 1, 2, 0})});
  ExpectValues(out, {2, 3}, {1 + 3, 3, 2, 2 + 4, 4, 4});
}

TEST(TorchEvalMatMulTest, AlphaBetaAndBroadcastC) {
  PipelineBuilder b("gemm");
  auto x = b.Input("a", {2, 2});
  auto y = b.Input("b", {2, 2});
  auto c = b.Input("c", {2});
  Attributes attrs = MatMulAttrs(false, false);
  attrs.set_alpha(2.0);
  attrs.set_beta(-1.0);
  b.Output(b.AddStage(MATMUL, {x, y, c}, attrs));
  // a*b = [[19, 22], [43, 50]]; c broadcast along rows.
  HostTensor out = Evaluate(b, {MakeTensor({2, 2}, {1, 2, 3, 4}), MakeTensor({2, 2}, {5, 6, 7, 8}),
                                MakeTensor({2}, {1, 10})});
  ExpectValues(out, {2, 2}, {38 - 1, 44 - 10, 86 - 1, 100 - 10});
}

TEST(TorchEvalMatMulTest, BatchBroadcastAgainstLoop) {
  PipelineBuilder b("bmm");
  auto x = b.Input("a", {2, 1, 3, 4});
  auto y = b.Input("b", {3, 4, 5});
  b.Output(b.AddStage(MATMUL, {x, y}, MatMulAttrs(false, false)));
  HostTensor av = RandomTensor({2, 1, 3, 4}, 21), bv = RandomTensor({3, 4, 5}, 22);
  HostTensor out = Evaluate(b, {av, bv});
  std::vector<double> expected;
  ForEachIndex({2, 3, 3, 5}, [&](const std::vector<int64_t>& i) {
    double acc = 0;
    for (int64_t k = 0; k < 4; ++k) acc += At(av, {i[0], 0, i[2], k}) * At(bv, {i[1], k, i[3]});
    expected.push_back(acc);
  });
  ExpectValues(out, {2, 3, 3, 5}, expected, 1e-5);
}

// ---------------------------------------------------------------------------
// POOL
// ---------------------------------------------------------------------------

TEST(TorchEvalPoolTest, MaxPoolCeilModeByHand) {
  PipelineBuilder b("maxpool");
  auto x = b.Input("x", {1, 1, 5});
  b.Output(b.AddStage(POOL, {x}, PoolAttrs(MAX_POOL, {2}, {2}, {0, 0}, {1}, true, false)));
  // ceil((5 - 2) / 2) + 1 = 3 windows: [0, 1], [2, 3], [4] (the last one partial).
  HostTensor out = Evaluate(b, {MakeTensor({1, 1, 5}, {3, -1, -4, -2, -7})});
  ExpectValues(out, {1, 1, 3}, {3, -2, -7});
}

TEST(TorchEvalPoolTest, CeilModeDropsWindowStartingInRightPadding) {
  PipelineBuilder b("maxpool_drop");
  auto x = b.Input("x", {1, 1, 4});
  // Padded extent 4 + 1 + 1 = 6, window 2, stride 3: ceil(4 / 3) + 1 = 3 windows, but
  // the third would start at input position 5 (padded 6 >= 4 + 1), in the right
  // padding: dropped.
  b.Output(b.AddStage(POOL, {x}, PoolAttrs(MAX_POOL, {2}, {3}, {1, 1}, {1}, true, false)));
  HostTensor out = Evaluate(b, {MakeTensor({1, 1, 4}, {1, 5, 2, 8})});
  // Windows at -1: {pad, 1} and 2: {2, 8}.
  ExpectValues(out, {1, 1, 2}, {1, 8});
}

TEST(TorchEvalPoolTest, AvgPoolCountIncludePadByHand) {
  for (bool include : {false, true}) {
    PipelineBuilder b("avgpool");
    auto x = b.Input("x", {1, 1, 4});
    b.Output(b.AddStage(POOL, {x}, PoolAttrs(AVG_POOL, {3}, {2}, {1, 1}, {1}, false, include)));
    // Windows [-1, 1] and [1, 3] of the padded input [0, 1, 2, 3, 4, 0].
    HostTensor out = Evaluate(b, {MakeTensor({1, 1, 4}, {1, 2, 3, 4})});
    if (include) {
      ExpectValues(out, {1, 1, 2}, {3.0 / 3, 9.0 / 3});
    } else {
      ExpectValues(out, {1, 1, 2}, {3.0 / 2, 9.0 / 3});
    }
  }
}

TEST(TorchEvalPoolTest, AvgPoolCeilModeCountsPaddingButNotBeyond) {
  for (bool include : {false, true}) {
    PipelineBuilder b("avgpool_ceil");
    auto x = b.Input("x", {1, 1, 6});
    b.Output(b.AddStage(POOL, {x}, PoolAttrs(AVG_POOL, {3}, {2}, {1, 1}, {1}, true, include)));
    // Padded extent [-1, 7): ceil((8 - 3) / 2) + 1 = 4 windows starting at -1, 1, 3, 5;
    // the last covers 5 (input), 6 (right pad) and 7 (beyond the padded extent).
    HostTensor out = Evaluate(b, {MakeTensor({1, 1, 6}, {1, 2, 3, 4, 5, 6})});
    if (include) {
      ExpectValues(out, {1, 1, 4}, {3.0 / 3, 9.0 / 3, 15.0 / 3, 6.0 / 2});
    } else {
      ExpectValues(out, {1, 1, 4}, {3.0 / 2, 9.0 / 3, 15.0 / 3, 6.0 / 1});
    }
  }
}

TEST(TorchEvalPoolTest, AvgPoolCeilModeExtraWindowBeyondPadding) {
  for (bool include : {false, true}) {
    PipelineBuilder b("avgpool_ceil_extra");
    auto x = b.Input("x", {1, 1, 6});
    b.Output(b.AddStage(POOL, {x}, PoolAttrs(AVG_POOL, {3}, {2}, {0, 0}, {1}, true, include)));
    // ceil((6 - 3) / 2) + 1 = 3 windows at 0, 2, 4; the last covers 4, 5 and a position
    // beyond the padded extent, which never counts.
    HostTensor out = Evaluate(b, {MakeTensor({1, 1, 6}, {1, 2, 3, 4, 5, 6})});
    ExpectValues(out, {1, 1, 3}, {6.0 / 3, 12.0 / 3, 11.0 / 2});
  }
}

TEST(TorchEvalPoolTest, Pool2dDilatedPaddedAgainstLoop) {
  const std::vector<int64_t> kernel = {3, 2}, strides = {2, 1}, pads = {2, 0, 1, 1},
                             dilations = {2, 3};
  for (PoolFn fn : {MAX_POOL, AVG_POOL}) {
    for (bool ceil_mode : {false, true}) {
      for (bool include : {false, true}) {
        if (fn == MAX_POOL && include) continue;
        PipelineBuilder b("pool2d");
        auto x = b.Input("x", {2, 3, 9, 8});
        auto y = b.AddStage(POOL, {x},
                            PoolAttrs(fn, kernel, strides, pads, dilations, ceil_mode, include));
        b.Output(y);
        Shape out_shape = b.ShapeOf(y);
        ASSERT_EQ(out_shape.size(), 4u);
        HostTensor xv = RandomTensor({2, 3, 9, 8}, 31);
        HostTensor out = Evaluate(b, {xv});
        HostTensor expected =
            NaivePool(xv, out_shape, fn == MAX_POOL, kernel, strides, pads, dilations, include);
        SCOPED_TRACE(std::string(fn == MAX_POOL ? "max" : "avg") +
                     (ceil_mode ? " ceil" : " floor") + (include ? " include_pad" : ""));
        ExpectValues(out, out_shape, expected.data, 1e-6);
      }
    }
  }
}

TEST(TorchEvalPoolTest, Pool3dAgainstLoop) {
  const std::vector<int64_t> kernel = {2, 2, 3}, strides = {1, 2, 2}, pads = {1, 0, 1, 0, 1, 1},
                             dilations = {1, 1, 1};
  PipelineBuilder b("pool3d");
  auto x = b.Input("x", {1, 2, 3, 5, 6});
  auto y =
      b.AddStage(POOL, {x}, PoolAttrs(AVG_POOL, kernel, strides, pads, dilations, true, false));
  b.Output(y);
  Shape out_shape = b.ShapeOf(y);
  HostTensor xv = RandomTensor({1, 2, 3, 5, 6}, 32);
  HostTensor out = Evaluate(b, {xv});
  HostTensor expected = NaivePool(xv, out_shape, false, kernel, strides, pads, dilations, false);
  ExpectValues(out, out_shape, expected.data, 1e-6);
}

// Every way a pool maps onto torch (native_calls.h) against the loop, in 1 to 3 dims:
// torch's own operator, a constant pad first, and unfolded windows.
TEST(TorchEvalPoolTest, EveryFormAgainstLoop) {
  struct Case {
    std::string name;
    Shape input;
    Attributes attrs;
    PoolForm form;
  };
  const std::vector<Case> cases = {
      {"max symmetric",
       {1, 2, 9, 8},
       PoolAttrs(MAX_POOL, {3, 3}, {2, 2}, {1, 1, 1, 1}, {1, 2}, true, false),
       PoolForm::kNative},
      {"avg symmetric 1-d",
       {1, 2, 9},
       PoolAttrs(AVG_POOL, {3}, {2}, {1, 1}, {1}, true, true),
       PoolForm::kNative},
      {"avg symmetric excluding pads",
       {1, 2, 7, 8},
       PoolAttrs(AVG_POOL, {3, 2}, {2, 2}, {1, 1, 1, 1}, {1, 1}, true, false),
       PoolForm::kNative},
      {"max asymmetric 3-d",
       {1, 2, 5, 6, 7},
       PoolAttrs(MAX_POOL, {2, 3, 2}, {1, 2, 2}, {1, 0, 0, 0, 2, 1}, {1, 1, 2}, true, false),
       PoolForm::kPadFirst},
      {"max pad over half the kernel",
       {1, 2, 9},
       PoolAttrs(MAX_POOL, {3}, {2}, {2, 2}, {1}, false, false),
       PoolForm::kPadFirst},
      {"avg asymmetric including pads",
       {1, 2, 9, 8},
       PoolAttrs(AVG_POOL, {3, 2}, {2, 3}, {2, 1, 0, 1}, {1, 1}, true, true),
       PoolForm::kPadFirst},
      {"avg asymmetric excluding pads",
       {1, 2, 9, 8},
       PoolAttrs(AVG_POOL, {3, 2}, {2, 3}, {2, 1, 0, 1}, {1, 1}, true, false),
       PoolForm::kWindows},
      {"avg dilated",
       {1, 2, 9, 8},
       PoolAttrs(AVG_POOL, {2, 2}, {1, 2}, {1, 1, 1, 1}, {3, 2}, false, true),
       PoolForm::kWindows},
  };
  auto ints = [](const google::protobuf::RepeatedField<int64_t>& field) {
    return std::vector<int64_t>(field.begin(), field.end());
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    PipelineBuilder b("pool_forms");
    auto y = b.AddStage(POOL, {b.Input("x", c.input)}, c.attrs);
    b.Output(y);
    Stage stage;
    *stage.mutable_attrs() = c.attrs;
    const Shape out_shape = b.ShapeOf(y);
    for (int64_t extent : out_shape) stage.add_shape(extent);
    EXPECT_EQ(PlanPool(stage, c.input).form, c.form);
    const HostTensor xv = RandomTensor(c.input, 33);
    const HostTensor expected = NaivePool(
        xv, out_shape, c.attrs.pool() == MAX_POOL, ints(c.attrs.kernel()), ints(c.attrs.strides()),
        ints(c.attrs.pads()), ints(c.attrs.dilations()), c.attrs.count_include_pad());
    ExpectValues(Evaluate(b, {xv}), out_shape, expected.data, 1e-6);
  }
}

// ---------------------------------------------------------------------------
// REDUCE
// ---------------------------------------------------------------------------

TEST(TorchEvalReduceTest, EveryFunctionByHand) {
  struct Case {
    ReduceFn fn;
    std::vector<int64_t> axes;
    bool keepdims;
    Shape shape;
    std::vector<double> expected;
  };
  // x = [[1, -2, 3], [4, 5, -6]]
  const std::vector<Case> cases = {
      {SUM, {1}, false, {2}, {2, 3}},
      {SUM, {0, 1}, true, {1, 1}, {5}},
      {MEAN, {0}, true, {1, 3}, {2.5, 1.5, -1.5}},
      {REDUCE_MAX, {1}, true, {2, 1}, {3, 5}},
      {REDUCE_MIN, {0}, false, {3}, {1, -2, -6}},
      {SUM_SQUARE, {1}, false, {2}, {14, 77}},
  };
  for (const Case& c : cases) {
    PipelineBuilder b("reduce");
    auto x = b.Input("x", {2, 3});
    Attributes a;
    a.set_reduce(c.fn);
    for (int64_t axis : c.axes) a.add_axes(axis);
    a.set_keepdims(c.keepdims);
    b.Output(b.AddStage(REDUCE, {x}, a));
    SCOPED_TRACE(ReduceFn_Name(c.fn));
    ExpectValues(Evaluate(b, {MakeTensor({2, 3}, {1, -2, 3, 4, 5, -6})}), c.shape, c.expected);
  }
}

// ---------------------------------------------------------------------------
// UNARY
// ---------------------------------------------------------------------------

TEST(TorchEvalUnaryTest, EveryFunctionAgainstFormula) {
  const std::vector<double> xs = {-3.5, -1.25, -0.5, 0.0, 0.25, 0.75, 2.0, 4.5};
  const std::vector<double> positive = {0.125, 0.5, 1.0, 2.0, 3.0, 7.5, 9.0, 16.0};
  auto sigmoid = [](double v) { return 1 / (1 + std::exp(-v)); };
  struct Case {
    UnaryFn fn;
    bool positive_only;
    std::function<double(double)> f;
  };
  const std::vector<Case> cases = {
      {RELU, false, [](double v) { return std::max(v, 0.0); }},
      {SIGMOID, false, sigmoid},
      {TANH, false, [](double v) { return std::tanh(v); }},
      {GELU, false, [](double v) { return 0.5 * v * (1 + std::erf(v / std::sqrt(2.0))); }},
      {EXP, false, [](double v) { return std::exp(v); }},
      {LOG, true, [](double v) { return std::log(v); }},
      {SQRT, true, [](double v) { return std::sqrt(v); }},
      {RSQRT, true, [](double v) { return 1 / std::sqrt(v); }},
      {NEG, false, [](double v) { return -v; }},
      {ABS, false, [](double v) { return std::fabs(v); }},
      {RECIPROCAL, true, [](double v) { return 1 / v; }},
      {ERF, false, [](double v) { return std::erf(v); }},
      {LEAKY_RELU, false, [](double v) { return v > 0 ? v : 0.01 * v; }},
      {ELU, false, [](double v) { return v > 0 ? v : std::exp(v) - 1; }},
      {SOFTPLUS, false, [](double v) { return std::log(1 + std::exp(v)); }},
      {HARD_SIGMOID, false, [](double v) { return std::clamp(0.2 * v + 0.5, 0.0, 1.0); }},
      {HARD_SWISH, false, [](double v) { return v * std::clamp(v + 3, 0.0, 6.0) / 6; }},
      {SILU, false, [&](double v) { return v * sigmoid(v); }},
      {IDENTITY, false, [](double v) { return v; }},
      {SQUARE, false, [](double v) { return v * v; }},
      {FLOOR, false, [](double v) { return std::floor(v); }},
      {CEIL, false, [](double v) { return std::ceil(v); }},
      {SIN, false, [](double v) { return std::sin(v); }},
      {COS, false, [](double v) { return std::cos(v); }},
      {SIGN, false, [](double v) { return v > 0 ? 1.0 : (v < 0 ? -1.0 : 0.0); }},
      {SCALE, false, [](double v) { return v; }},
  };
  for (DataType dtype : {FLOAT32, FLOAT64}) {
    for (const Case& c : cases) {
      const std::vector<double>& in = c.positive_only ? positive : xs;
      PipelineBuilder b("unary", dtype);
      auto x = b.Input("x", {8});
      b.Output(b.Unary(c.fn, x));
      std::vector<double> expected;
      for (double v : in) expected.push_back(c.f(v));
      SCOPED_TRACE(UnaryFn_Name(c.fn) + " " + DataTypeName(dtype));
      ExpectValues(Evaluate(b, {MakeTensor({8}, in, dtype)}), {8}, expected,
                   dtype == FLOAT64 ? 1e-14 : 1e-6);
    }
  }
}

TEST(TorchEvalUnaryTest, ParametersOverrideDefaults) {
  const std::vector<double> xs = {-4.0, -1.5, 0.0, 0.5, 2.0, 6.0};
  struct Case {
    UnaryFn fn;
    double alpha, beta;
    std::function<double(double)> f;
  };
  const std::vector<Case> cases = {
      {LEAKY_RELU, 0.3, 0.0, [](double v) { return v > 0 ? v : 0.3 * v; }},
      {ELU, 0.5, 0.0, [](double v) { return v > 0 ? v : 0.5 * (std::exp(v) - 1); }},
      {HARD_SIGMOID, 0.25, 0.25, [](double v) { return std::clamp(0.25 * v + 0.25, 0.0, 1.0); }},
      {SCALE, -2.0, 0.5, [](double v) { return -2 * v + 0.5; }},
  };
  for (const Case& c : cases) {
    PipelineBuilder b("unary_params", FLOAT64);
    auto x = b.Input("x", {6});
    b.Output(b.UnaryWithParams(c.fn, x, c.alpha, c.beta));
    std::vector<double> expected;
    for (double v : xs) expected.push_back(c.f(v));
    SCOPED_TRACE(UnaryFn_Name(c.fn));
    ExpectValues(Evaluate(b, {MakeTensor({6}, xs, FLOAT64)}), {6}, expected, 1e-14);
  }
  PipelineBuilder b("clip", FLOAT64);
  auto x = b.Input("x", {6});
  b.Output(b.Clip(x, -1.0, 0.75));
  ExpectValues(Evaluate(b, {MakeTensor({6}, xs, FLOAT64)}), {6}, {-1, -1, 0, 0.5, 0.75, 0.75});
}

TEST(TorchEvalUnaryTest, PadeStagesAreEvaluatedExactly) {
  PipelineBuilder b("pade", FLOAT64);
  b.set_math(PADE);
  auto x = b.Input("x", {3});
  b.Output(b.Tanh(x));
  ExpectValues(Evaluate(b, {MakeTensor({3}, {-2, 0.5, 3}, FLOAT64)}), {3},
               {std::tanh(-2.0), std::tanh(0.5), std::tanh(3.0)}, 1e-15);
}

// ---------------------------------------------------------------------------
// BINARY
// ---------------------------------------------------------------------------

TEST(TorchEvalBinaryTest, EveryFunctionWithBroadcasting) {
  const std::vector<double> a = {1, 2}, b3 = {0.5, 2, 3};  // a: [2, 1], b: [3]
  struct Case {
    BinaryFn fn;
    std::function<double(double, double)> f;
  };
  const std::vector<Case> cases = {
      {ADD, [](double p, double q) { return p + q; }},
      {SUB, [](double p, double q) { return p - q; }},
      {MUL, [](double p, double q) { return p * q; }},
      {DIV, [](double p, double q) { return p / q; }},
      {MAX, [](double p, double q) { return std::max(p, q); }},
      {MIN, [](double p, double q) { return std::min(p, q); }},
      {POW, [](double p, double q) { return std::pow(p, q); }},
  };
  for (const Case& c : cases) {
    PipelineBuilder b("binary");
    auto x = b.Input("a", {2, 1});
    auto y = b.Input("b", {3});
    b.Output(b.Binary(c.fn, x, y));
    std::vector<double> expected;
    for (double p : a) {
      for (double q : b3) expected.push_back(c.f(p, q));
    }
    SCOPED_TRACE(BinaryFn_Name(c.fn));
    ExpectValues(Evaluate(b, {MakeTensor({2, 1}, a), MakeTensor({3}, b3)}), {2, 3}, expected);
  }
}

// ---------------------------------------------------------------------------
// Data movement: PAD, CONCAT, SLICE, TRANSPOSE, RESHAPE, UPSAMPLE
// ---------------------------------------------------------------------------

TEST(TorchEvalPadTest, ModesByHand) {
  const HostTensor x = MakeTensor({2, 3}, {1, 2, 3, 4, 5, 6});
  struct Case {
    PadMode mode;
    std::vector<double> expected;  // pads: dim 0 (1, 0), dim 1 (2, 1) -> [3, 6]
  };
  const std::vector<Case> cases = {
      {CONSTANT, {9, 9, 9, 9, 9, 9, 9, 9, 1, 2, 3, 9, 9, 9, 4, 5, 6, 9}},
      {EDGE, {1, 1, 1, 2, 3, 3, 1, 1, 1, 2, 3, 3, 4, 4, 4, 5, 6, 6}},
      {REFLECT, {6, 5, 4, 5, 6, 5, 3, 2, 1, 2, 3, 2, 6, 5, 4, 5, 6, 5}},
  };
  for (const Case& c : cases) {
    PipelineBuilder b("pad");
    auto in = b.Input("x", {2, 3});
    b.Output(b.Pad(in, {1, 2, 0, 1}, c.mode, 9.0));
    SCOPED_TRACE(PadMode_Name(c.mode));
    ExpectValues(Evaluate(b, {x}), {3, 6}, c.expected);
  }
}

TEST(TorchEvalPadTest, ReflectAndEdgeOnRank4AgainstLoop) {
  for (PadMode mode : {EDGE, REFLECT}) {
    PipelineBuilder b("pad4");
    auto in = b.Input("x", {2, 3, 4, 5});
    const std::vector<int64_t> pads = {1, 0, 2, 3, 0, 2, 1, 4};
    b.Output(b.Pad(in, pads, mode));
    HostTensor xv = RandomTensor({2, 3, 4, 5}, 41);
    const Shape out_shape = {3, 5, 7, 12};
    std::vector<double> expected;
    ForEachIndex(out_shape, [&](const std::vector<int64_t>& o) {
      std::vector<int64_t> i(4);
      for (int d = 0; d < 4; ++d) {
        int64_t j = o[d] - pads[d], n = xv.shape[d];
        if (mode == EDGE) {
          j = std::clamp<int64_t>(j, 0, n - 1);
        } else {
          j = j < 0 ? -j : (j >= n ? 2 * (n - 1) - j : j);
        }
        i[d] = j;
      }
      expected.push_back(At(xv, i));
    });
    SCOPED_TRACE(PadMode_Name(mode));
    ExpectValues(Evaluate(b, {xv}), out_shape, expected);
  }
}

TEST(TorchEvalDataMovementTest, ConcatAlongMiddleAxis) {
  PipelineBuilder b("concat");
  auto x = b.Input("x", {2, 1, 2});
  auto y = b.Input("y", {2, 2, 2});
  b.Output(b.Concat({x, y, x}, 1));
  HostTensor out = Evaluate(b, {MakeTensor({2, 1, 2}, {1, 2, 3, 4}),
                                MakeTensor({2, 2, 2}, {10, 11, 12, 13, 14, 15, 16, 17})});
  ExpectValues(out, {2, 4, 2}, {1, 2, 10, 11, 12, 13, 1, 2, 3, 4, 14, 15, 16, 17, 3, 4});
}

TEST(TorchEvalDataMovementTest, SliceWithNegativeAndPositiveSteps) {
  PipelineBuilder b("slice");
  auto x = b.Input("x", {3, 6});
  Attributes a;
  a.add_axes(0);
  a.add_starts(2);
  a.add_steps(-2);
  a.add_axes(1);
  a.add_starts(1);
  a.add_steps(3);
  b.Output(b.AddStageWithShape(SLICE, {x}, a, {2, 2}));
  std::vector<double> xs;
  for (int i = 0; i < 18; ++i) xs.push_back(i);
  // rows 2, 0; columns 1, 4.
  ExpectValues(Evaluate(b, {MakeTensor({3, 6}, xs)}), {2, 2}, {13, 16, 1, 4});
}

TEST(TorchEvalDataMovementTest, TransposeOutputDimReadsInputDimPerm) {
  PipelineBuilder b("transpose");
  auto x = b.Input("x", {2, 3, 4});
  b.Output(b.Transpose(x, {1, 2, 0}));
  HostTensor xv = RandomTensor({2, 3, 4}, 51);
  std::vector<double> expected;
  ForEachIndex({3, 4, 2}, [&](const std::vector<int64_t>& o) {
    expected.push_back(At(xv, {o[2], o[0], o[1]}));
  });
  ExpectValues(Evaluate(b, {xv}), {3, 4, 2}, expected);
}

TEST(TorchEvalDataMovementTest, ReshapeKeepsRowMajorOrder) {
  PipelineBuilder b("reshape");
  auto x = b.Input("x", {2, 3, 2});
  // Transposed first, so the reshape reads a non-contiguous tensor.
  b.Output(b.Reshape(b.Transpose(x, {1, 0, 2}), {6, 2}));
  std::vector<double> xs;
  for (int i = 0; i < 12; ++i) xs.push_back(i);
  ExpectValues(Evaluate(b, {MakeTensor({2, 3, 2}, xs)}), {6, 2},
               {0, 1, 6, 7, 2, 3, 8, 9, 4, 5, 10, 11});
}

TEST(TorchEvalDataMovementTest, UpsampleNearest) {
  PipelineBuilder b("upsample");
  auto x = b.Input("x", {2, 2});
  b.Output(b.Upsample(x, {2, 3}));
  ExpectValues(Evaluate(b, {MakeTensor({2, 2}, {1, 2, 3, 4})}), {4, 6},
               {1, 1, 1, 2, 2, 2, 1, 1, 1, 2, 2, 2, 3, 3, 3, 4, 4, 4, 3, 3, 3, 4, 4, 4});
}

// ---------------------------------------------------------------------------
// Pipelines, dtypes and errors
// ---------------------------------------------------------------------------

TEST(TorchEvalPipelineTest, DiamondWithTwoOutputsInSpecOrder) {
  PipelineBuilder b("diamond");
  auto x = b.Input("x", {4});
  auto r = b.Relu(x);
  auto n = b.Unary(NEG, x);
  auto s = b.Add(r, n);
  b.Output(s);
  b.Output(r);
  std::vector<HostTensor> outputs = EvaluateAll(b, {MakeTensor({4}, {-1, 2, -3, 4})});
  ASSERT_EQ(outputs.size(), 2u);
  ExpectValues(outputs[0], {4}, {1, 0, 3, 0});
  ExpectValues(outputs[1], {4}, {0, 2, 0, 4});
}

TEST(TorchEvalPipelineTest, Float32StagesRoundAndFloat64StagesDoNot) {
  const double tiny = 1e-10;
  for (DataType dtype : {FLOAT32, FLOAT64}) {
    PipelineBuilder b("precision", dtype);
    auto x = b.Input("x", {1});
    auto c = b.ConstantParameter("c", {1}, {tiny});
    b.Output(b.Sub(b.Add(x, c), x));
    HostTensor out = Evaluate(b, {MakeTensor({1}, {1.0}, dtype)});
    ASSERT_EQ(out.data.size(), 1u);
    EXPECT_EQ(out.dtype, dtype);
    if (dtype == FLOAT32) {
      EXPECT_EQ(out.data[0], 0.0);  // 1 + 1e-10 rounds to 1 in float
    } else {
      EXPECT_NEAR(out.data[0], tiny, 1e-15);
    }
  }
}

TEST(TorchEvalPipelineTest, BadInputsAreErrorsNamingTheInput) {
  PipelineBuilder b("bad_inputs");
  auto x = b.Input("x", {2, 3});
  b.Output(b.Relu(x));
  StatusOr<PipelineSpec> spec = b.Finish();
  ASSERT_TRUE(spec.ok()) << spec.status().ToString();
  StatusOr<PipelineGraph> graph = PipelineGraph::Build(*spec);
  ASSERT_TRUE(graph.ok()) << graph.status().ToString();

  auto none = EvaluateWithTorch(*graph, {});
  ASSERT_FALSE(none.ok());
  EXPECT_NE(none.status().message().find("0 input tensors given"), std::string::npos)
      << none.status().message();

  auto wrong_shape = EvaluateWithTorch(*graph, {MakeTensor({3, 2}, std::vector<double>(6, 0))});
  ASSERT_FALSE(wrong_shape.ok());
  EXPECT_NE(wrong_shape.status().message().find("input 'x'"), std::string::npos)
      << wrong_shape.status().message();

  auto short_data = EvaluateWithTorch(*graph, {MakeTensor({2, 3}, {1, 2})});
  ASSERT_FALSE(short_data.ok());
  EXPECT_NE(short_data.status().message().find("input 'x'"), std::string::npos)
      << short_data.status().message();
}

// Finite, and of order 1: the zoo's weight scales keep activations from exploding or
// vanishing through a block.
TEST(TorchEvalPipelineTest, EveryZooBlockEvaluatesToValuesOfOrderOne) {
  for (const std::string& name : ZooNames()) {
    SCOPED_TRACE(name);
    StatusOr<PipelineSpec> spec = MakeZooBlock(name);
    ASSERT_TRUE(spec.ok()) << spec.status().ToString();
    StatusOr<PipelineGraph> graph = PipelineGraph::Build(*spec);
    ASSERT_TRUE(graph.ok()) << graph.status().ToString();
    auto outputs = EvaluateWithTorch(*graph, DeterministicInputs(*spec));
    ASSERT_TRUE(outputs.ok()) << outputs.status().ToString();
    ASSERT_EQ(static_cast<int>(outputs->size()), spec->outputs_size());
    for (size_t i = 0; i < outputs->size(); ++i) {
      const Value& value = graph->value(graph->stage_value(graph->output_stages()[i]));
      EXPECT_EQ((*outputs)[i].shape, value.shape);
      double sum_sq = 0;
      for (double v : (*outputs)[i].data) {
        ASSERT_TRUE(std::isfinite(v));
        sum_sq += v * v;
      }
      const double rms = std::sqrt(sum_sq / static_cast<double>((*outputs)[i].data.size()));
      EXPECT_GT(rms, 0.05);
      EXPECT_LT(rms, 20);
    }
  }
}

// Channels-last (TorchLayout::kChannelsLast) changes strides, never values: every zoo
// block gives the imported layout's outputs, read back in logical order.
TEST(TorchEvalLayoutTest, EveryZooBlockGivesTheSameOutputsChannelsLast) {
  for (const std::string& name : ZooNames()) {
    SCOPED_TRACE(name);
    StatusOr<PipelineSpec> spec = MakeZooBlock(name);
    ASSERT_TRUE(spec.ok()) << spec.status().ToString();
    StatusOr<PipelineGraph> graph = PipelineGraph::Build(*spec);
    ASSERT_TRUE(graph.ok()) << graph.status().ToString();
    const std::vector<HostTensor> inputs = DeterministicInputs(*spec);
    StatusOr<std::vector<HostTensor>> nchw = EvaluateWithTorch(*graph, inputs);
    ASSERT_TRUE(nchw.ok()) << nchw.status().ToString();
    StatusOr<TorchProgram> program =
        TorchProgram::Prepare(*graph, inputs, TorchLayout::kChannelsLast);
    ASSERT_TRUE(program.ok()) << program.status().ToString();
    ASSERT_TRUE(program->Run().ok());
    const std::vector<HostTensor> channels_last = program->Outputs();
    ASSERT_EQ(channels_last.size(), nchw->size());
    for (size_t i = 0; i < nchw->size(); ++i) {
      EXPECT_EQ(channels_last[i].shape, (*nchw)[i].shape);
      const Comparison c =
          CompareTensors(channels_last[i], (*nchw)[i], DefaultTolerance((*nchw)[i].dtype));
      EXPECT_TRUE(c.match) << "output " << i << ": " << c.message;
    }
  }
}

// The layout is in effect inside the program: in a ResNet-18 basic block the
// convolutions and the elementwise stages after them come out of ATen channels-last,
// and so does the output; in the imported layout none does.
TEST(TorchEvalLayoutTest, ChannelsLastIsKeptFromStageToStage) {
  StatusOr<PipelineSpec> spec = MakeZooBlock("resnet18_basic");
  ASSERT_TRUE(spec.ok()) << spec.status().ToString();
  StatusOr<PipelineGraph> graph = PipelineGraph::Build(*spec);
  ASSERT_TRUE(graph.ok()) << graph.status().ToString();
  ASSERT_TRUE(HasFourDimTensors(*graph));
  int convolutions = 0;
  for (int s = 0; s < graph->num_stages(); ++s) convolutions += graph->stage(s).op() == CONV;
  ASSERT_GE(convolutions, 2);
  const std::vector<HostTensor> inputs = DeterministicInputs(*spec);

  StatusOr<TorchProgram> nchw = TorchProgram::Prepare(*graph, inputs);
  ASSERT_TRUE(nchw.ok()) << nchw.status().ToString();
  ASSERT_TRUE(nchw->Run().ok());
  const TorchLayoutCensus imported = nchw->Census();
  EXPECT_EQ(imported.four_d_stages, graph->num_stages());
  EXPECT_EQ(imported.channels_last_stages, 0);
  EXPECT_EQ(imported.channels_last_outputs, 0);

  StatusOr<TorchProgram> cl = TorchProgram::Prepare(*graph, inputs, TorchLayout::kChannelsLast);
  ASSERT_TRUE(cl.ok()) << cl.status().ToString();
  ASSERT_TRUE(cl->Run().ok());
  const TorchLayoutCensus census = cl->Census();
  EXPECT_EQ(census.four_d_stages, graph->num_stages());
  EXPECT_EQ(census.channels_last_stages, graph->num_stages())
      << "every stage of the block should keep channels-last";
  EXPECT_EQ(census.channels_last_outputs, spec->outputs_size());
}

TEST(TorchEvalLayoutTest, OnlyPipelinesWithFourDimTensorsHaveAChannelsLastLayout) {
  EXPECT_STREQ(TorchLayoutName(TorchLayout::kAsImported), "nchw");
  EXPECT_STREQ(TorchLayoutName(TorchLayout::kChannelsLast), "channels_last");
  StatusOr<PipelineSpec> wavenet = MakeZooBlock("wavenet_residual");  // 1-D convolutions
  ASSERT_TRUE(wavenet.ok()) << wavenet.status().ToString();
  StatusOr<PipelineGraph> graph = PipelineGraph::Build(*wavenet);
  ASSERT_TRUE(graph.ok());
  EXPECT_FALSE(HasFourDimTensors(*graph));
  StatusOr<PipelineSpec> resnet = MakeZooBlock("resnet18_basic");
  ASSERT_TRUE(resnet.ok()) << resnet.status().ToString();
  graph = PipelineGraph::Build(*resnet);
  ASSERT_TRUE(graph.ok());
  EXPECT_TRUE(HasFourDimTensors(*graph));
}

}  // namespace
}  // namespace schedfarm
