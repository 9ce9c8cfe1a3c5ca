// Accuracy of the lowered transcendental functions, EXACT and PADE, over dense grids:
// the measured maximum errors are printed and bounded.
#include <cmath>
#include <cstdio>
#include <limits>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "pipeline/builder.h"
#include "tests/halide/test_util.h"

namespace schedfarm {
namespace {

double Sigmoid(double x) { return 1 / (1 + std::exp(-x)); }

struct Case {
  UnaryFn fn;
  double lo, hi;  // grid range
  bool relative;  // error relative to |f(x)| (exp) rather than absolute
  double (*f)(double);
  double bound_f32, bound_f64;  // asserted maximum error (a few times the measured one)
};

const std::vector<Case>& Cases() {
  static const std::vector<Case> cases = {
      // exp: the range where f32 results are normal numbers.
      {EXP, -87.0, 88.0, true, [](double x) { return std::exp(x); }, 1e-6, 3e-14},
      {TANH, -20, 20, false, [](double x) { return std::tanh(x); }, 5e-7, 3e-14},
      {SIGMOID, -30, 30, false, Sigmoid, 5e-7, 3e-14},
      {ERF, -7, 7, false, [](double x) { return std::erf(x); }, 5e-7, 3e-14},
      {GELU, -10, 10, false, [](double x) { return 0.5 * x * (1 + std::erf(x / std::sqrt(2.0))); },
       1.5e-6, 3e-14},
      {SILU, -20, 20, false, [](double x) { return x * Sigmoid(x); }, 5e-6, 3e-14},
      {ELU, -20, 5, false, [](double x) { return x > 0 ? x : std::expm1(x); }, 5e-7, 3e-14},
      {SOFTPLUS, -20, 20, false, [](double x) { return std::log1p(std::exp(x)); }, 2e-6, 3e-14},
  };
  return cases;
}

constexpr int kGridPoints = 100001;

// One pipeline with a grid input per case; returns the max error per case.
std::vector<double> MeasureErrors(DataType dtype, MathMode math) {
  PipelineBuilder b("accuracy", dtype);
  b.set_math(math);
  std::vector<HostTensor> inputs;
  for (const Case& c : Cases()) {
    const std::string x = b.Input("x_" + UnaryFn_Name(c.fn), {kGridPoints});
    b.Output(b.Unary(c.fn, x));
    HostTensor grid{dtype, {kGridPoints}, {}};
    for (int i = 0; i < kGridPoints; ++i) {
      grid.data.push_back(RoundToDtype(c.lo + (c.hi - c.lo) * i / (kGridPoints - 1), dtype));
    }
    inputs.push_back(grid);
  }
  const PipelineGraph graph = BuildGraph(b.Finish());
  RunOptions options;
  options.timing_samples = 0;
  StatusOr<RunResult> run = RunReference(graph, options, inputs);
  EXPECT_TRUE(run.ok()) << run.status().ToString();
  std::vector<double> errors;
  if (!run.ok()) return errors;
  for (size_t k = 0; k < Cases().size(); ++k) {
    const Case& c = Cases()[k];
    double worst = 0;
    for (int i = 0; i < kGridPoints; ++i) {
      const double expected = c.f(inputs[k].data[i]);
      double err = std::fabs(run->outputs[k].data[i] - expected);
      if (c.relative) err /= std::fabs(expected);
      if (!(err <= worst)) worst = err;  // NaN propagates
    }
    errors.push_back(worst);
  }
  return errors;
}

void CheckErrors(DataType dtype, MathMode math) {
  const std::vector<double> errors = MeasureErrors(dtype, math);
  ASSERT_EQ(errors.size(), Cases().size());
  for (size_t k = 0; k < Cases().size(); ++k) {
    const Case& c = Cases()[k];
    const double bound = dtype == FLOAT64 ? c.bound_f64 : c.bound_f32;
    std::printf("%-4s %-5s %-8s on [%g, %g]: max %s error %.3g\n", DataTypeName(dtype),
                math == PADE ? "pade" : "exact", UnaryFn_Name(c.fn).c_str(), c.lo, c.hi,
                c.relative ? "relative" : "absolute", errors[k]);
    EXPECT_LE(errors[k], bound) << UnaryFn_Name(c.fn);
  }
}

TEST(HalideMath, PadeF32) { CheckErrors(FLOAT32, PADE); }
TEST(HalideMath, PadeF64) { CheckErrors(FLOAT64, PADE); }
TEST(HalideMath, ExactF32) { CheckErrors(FLOAT32, EXACT); }
TEST(HalideMath, ExactF64) { CheckErrors(FLOAT64, EXACT); }

// Overflow, underflow and signed zeros at the ends of exp's range.
TEST(HalideMath, PadeExpLimits) {
  for (DataType dtype : {FLOAT32, FLOAT64}) {
    PipelineBuilder b("exp_limits", dtype);
    b.set_math(PADE);
    b.Output(b.Exp(b.Input("x", {6})));
    const double inf = std::numeric_limits<double>::infinity();
    HostTensor x{dtype, {6}, {1000.0, -1000.0, 0.0, inf, -inf, 1.0}};
    RunOptions options;
    options.timing_samples = 0;
    StatusOr<RunResult> run = RunReference(BuildGraph(b.Finish()), options, {x});
    ASSERT_TRUE(run.ok()) << run.status().ToString();
    const std::vector<double>& y = run->outputs[0].data;
    EXPECT_EQ(y[0], inf);
    EXPECT_EQ(y[1], 0.0);
    EXPECT_EQ(y[2], 1.0);
    EXPECT_EQ(y[3], inf);
    EXPECT_EQ(y[4], 0.0);
    EXPECT_NEAR(y[5], std::exp(1.0), dtype == FLOAT32 ? 1e-6 : 1e-15);
  }
}

}  // namespace
}  // namespace schedfarm
