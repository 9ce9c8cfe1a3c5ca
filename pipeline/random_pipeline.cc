#include "pipeline/random_pipeline.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <optional>
#include <set>

#include "common/random.h"
#include "pipeline/builder.h"
#include "pipeline/graph.h"
#include "pipeline/ops.h"

namespace schedfarm {
namespace {

// Decisions use only integer arithmetic and correctly rounded double operations
// (+, -, *, /, sqrt), never libm or std:: distributions, so that a seed gives the same
// pipeline with every compiler and standard library.

// A SplitMix64 stream with the draws the generator makes.
class Rng {
 public:
  explicit Rng(uint64_t seed) : stream_(seed) {}

  uint64_t Next() { return stream_.Next(); }
  // Uniform in [lo, hi] (lo <= hi).
  int64_t Int(int64_t lo, int64_t hi) {
    const uint64_t span = static_cast<uint64_t>(hi - lo) + 1;
    return lo + static_cast<int64_t>(Next() % span);
  }
  // Uniform in [0, 1).
  double Unit() { return stream_.Unit(); }
  bool Chance(double p) { return Unit() < p; }
  template <typename T>
  T Pick(const std::vector<T>& v) {
    return v[static_cast<size_t>(Int(0, static_cast<int64_t>(v.size()) - 1))];
  }
  // Roughly log-uniform in [lo, hi] (1 <= lo <= hi): a uniform octave, then uniform
  // within it.
  int64_t LogInt(int64_t lo, int64_t hi) {
    int lo_bit = 0, hi_bit = 0;
    while ((int64_t{2} << lo_bit) <= lo) ++lo_bit;
    while ((int64_t{2} << hi_bit) <= hi) ++hi_bit;
    const int bit = static_cast<int>(Int(lo_bit, hi_bit));
    const int64_t a = std::max(lo, int64_t{1} << bit);
    const int64_t b = std::min(hi, (int64_t{2} << bit) - 1);
    return Int(a, b);
  }
  // Index drawn with probability proportional to weights[i].
  size_t Weighted(const std::vector<int>& weights) {
    int total = 0;
    for (int w : weights) total += w;
    int64_t r = Int(0, total - 1);
    for (size_t i = 0; i < weights.size(); ++i) {
      if (r < weights[i]) return i;
      r -= weights[i];
    }
    return weights.size() - 1;
  }

 private:
  SplitMixStream stream_;
};

// Values are kept bounded: every tensor carries a rough bound of its typical
// magnitude, and an operator whose result would exceed this is not drawn.
constexpr double kMaxMagnitude = 1e4;
// Share of max_flops the generator plans with (its estimates are rounded up; the
// exact cost of the result is checked at the end).
constexpr double kFlopsPlanningShare = 0.8;

double ElementsOf(const Shape& s) {
  double n = 1;
  for (int64_t d : s) n *= static_cast<double>(d);
  return n;
}

std::optional<Shape> BroadcastShapes(const Shape& a, const Shape& b) {
  const size_t rank = std::max(a.size(), b.size());
  Shape out(rank);
  for (size_t i = 0; i < rank; ++i) {
    const int64_t da = i < rank - a.size() ? 1 : a[i - (rank - a.size())];
    const int64_t db = i < rank - b.size() ? 1 : b[i - (rank - b.size())];
    if (da != db && da != 1 && db != 1) return std::nullopt;
    out[i] = da == 1 ? db : da;
  }
  return out;
}

// Operators the generator draws from (each is one operator of the library, or a
// domain-safe form of one: log(|x| + 1), a / (|b| + 1)...).
enum GenOp {
  kConv2d,
  kConv1d,
  kLinear,
  kGemm,
  kMatMul,
  kMaxPool,
  kAvgPool,
  kGlobalPool,
  kBatchNorm,
  kLayerNorm,
  kSoftmax,
  kLogSoftmax,
  kUnary,
  kSafeUnary,
  kBinary,
  kSafeBinary,
  kPad,
  kConcat,
  kSlice,
  kTranspose,
  kReshape,
  kReduce,
  kUpsample,
  kNumGenOps
};
// Relative frequencies, indexed by GenOp.
const std::vector<int>& GenOpWeights() {
  static const std::vector<int> weights = {
      14,  // conv2d
      4,   // conv1d
      6,   // linear
      2,   // gemm
      4,   // matmul
      4,   // max pool
      3,   // avg pool
      2,   // global pool
      5,   // batch norm
      3,   // layer norm
      3,   // softmax
      1,   // log softmax
      16,  // unary
      3,   // safe unary
      10,  // binary
      2,   // safe binary
      3,   // pad
      4,   // concat
      3,   // slice
      3,   // transpose
      4,   // reshape
      3,   // reduce
      2,   // upsample
  };
  return weights;
}
// Most library operators one GenOp emits (domain-safe forms and shape adapters).
constexpr int kMaxOpsPerGenOp = 5;

// What the generator knows about a tensor it made.
struct Info {
  Shape shape;
  double magnitude = 1;
  int depth = 0;  // longest path from an input, in library operators
  int uses = 0;
};

class Generator {
 public:
  Generator(uint64_t seed, int attempt, const RandomPipelineOptions& options)
      : rng_(SplitMix64(seed) ^ SplitMix64(0x6a09e667f3bcc909ull + static_cast<uint64_t>(attempt))),
        options_(options),
        builder_("random_" + std::to_string(seed), FLOAT32, SplitMix64(seed * 31 + attempt) | 1),
        flops_budget_(options.max_flops * kFlopsPlanningShare) {
    builder_.set_math(options.math);
    builder_.set_source("random:" + std::to_string(seed));
  }

  // One candidate: a valid pipeline that obeys the size knobs, or why it was
  // rejected (a filter, or too few operators left).
  StatusOr<PipelineSpec> Run();

 private:
  // --- bookkeeping --------------------------------------------------------------------
  bool Fits(const Shape& s) const {
    return ElementsOf(s) <= static_cast<double>(options_.max_elements);
  }
  bool Affordable(double flops) const { return flops_ + flops <= flops_budget_; }
  const Info& info(const std::string& t) const { return info_.at(t); }
  const Shape& shape(const std::string& t) const { return info_.at(t).shape; }
  double mag(const std::string& t) const { return info_.at(t).magnitude; }
  // Records one library operator's result.
  std::string Track(const std::string& result, const std::vector<std::string>& operands,
                    double magnitude, double flops);
  // Makes `result` available to later operators.
  void Publish(const std::string& result) {
    if (!result.empty()) available_.push_back(result);
  }
  std::string NewInput(const Shape& shape);
  std::string PickRecent();
  // Draws one operator on producer x; false if it does not apply (nothing emitted).
  bool Apply(GenOp op, const std::string& x);

  bool Conv2d(const std::string& x);
  bool Conv1d(const std::string& x);
  bool Linear(const std::string& x);
  bool Gemm(const std::string& x);
  bool MatMul(const std::string& x);
  bool Pool(const std::string& x, bool max);
  bool GlobalPool(const std::string& x);
  bool Normalize(const std::string& x, GenOp op);
  bool UnaryOp(const std::string& x);
  bool SafeUnaryOp(const std::string& x);
  bool BinaryOp(const std::string& x, bool safe);
  bool PadOp(const std::string& x);
  bool ConcatOp(const std::string& x);
  bool SliceOp(const std::string& x);
  bool TransposeOp(const std::string& x);
  bool ReshapeOp(const std::string& x);
  bool ReduceOp(const std::string& x);
  bool UpsampleOp(const std::string& x);

  // A second operand for a binary op on x: a recent tensor (reduced where needed so
  // that it broadcasts) or a parameter broadcast along some of x's dims.
  std::string BroadcastPartner(const std::string& x, double param_offset, double param_scale);
  // t reduced (mean) and reshaped so that it broadcasts to `target` without growing it.
  std::string AdaptTo(const std::string& t, const Shape& target);
  // Channel count for a new conv or linear layer.
  int64_t OutChannels(int64_t c);

  Rng rng_;
  const RandomPipelineOptions& options_;
  PipelineBuilder builder_;
  double flops_budget_;
  double flops_ = 0;
  int ops_ = 0;
  std::map<std::string, Info> info_;
  std::vector<std::string> available_;  // inputs and published results, oldest first
  std::vector<std::string> inputs_;
};

std::string Generator::Track(const std::string& result, const std::vector<std::string>& operands,
                             double magnitude, double flops) {
  if (result.empty()) return result;  // the builder failed; Finish() reports it
  Info i;
  i.shape = builder_.ShapeOf(result);
  i.magnitude = magnitude;
  for (const std::string& op : operands) {
    auto it = info_.find(op);
    if (it == info_.end()) continue;  // a parameter
    it->second.uses++;
    i.depth = std::max(i.depth, it->second.depth);
  }
  i.depth += 1;
  info_[result] = i;
  ++ops_;
  flops_ += flops;
  return result;
}

std::string Generator::NewInput(const Shape& s) {
  const std::string name = builder_.Input("x" + std::to_string(inputs_.size()), s);
  Info i;
  i.shape = s;
  info_[name] = i;
  inputs_.push_back(name);
  available_.push_back(name);
  return name;
}

std::string Generator::PickRecent() {
  const int64_t n = static_cast<int64_t>(available_.size());
  for (const std::string& in : inputs_) {  // inputs not read yet get their turn
    if (info(in).uses == 0 && rng_.Chance(0.25)) return in;
  }
  const double r = rng_.Unit();
  if (r < 0.55) return available_.back();
  if (r < 0.85) return available_[n - 1 - rng_.Int(0, std::min<int64_t>(3, n - 1))];
  return available_[rng_.Int(0, n - 1)];  // a skip connection
}

int64_t Generator::OutChannels(int64_t c) {
  const int64_t choice = rng_.Int(0, 3);
  int64_t m = choice == 0 ? c : choice == 1 ? 2 * c : choice == 2 ? c / 2 : rng_.LogInt(4, 64);
  return std::clamp<int64_t>(m, 1, 256);
}

bool Generator::Conv2d(const std::string& x) {
  const Shape& s = shape(x);
  if (s.size() != 4) return false;
  const int64_t c = s[1], h = s[2], w = s[3];
  int64_t k = rng_.Pick<int64_t>({1, 3, 3, 3, 5, 7});
  int64_t dilation = k > 1 && rng_.Chance(0.15) ? 2 : 1;
  const int64_t stride = rng_.Chance(0.25) ? 2 : 1;
  const bool same_pad = rng_.Chance(0.8);
  int64_t pad = 0;
  for (;;) {
    pad = same_pad ? (k - 1) * dilation / 2 : 0;
    if ((k - 1) * dilation + 1 <= std::min(h, w) + 2 * pad) break;
    if (dilation > 1) {
      dilation = 1;
    } else {
      k -= 2;
      if (k < 1) return false;
    }
  }
  const double variant = rng_.Unit();
  int64_t groups = 1, m = OutChannels(c);
  if (variant < 0.2 && c > 1) {  // depthwise, channel multiplier 1 or 2
    groups = c;
    m = rng_.Chance(0.8) ? c : 2 * c;
  } else if (variant < 0.3) {  // grouped
    std::vector<int64_t> divisors;
    for (int64_t g : {2, 3, 4, 8}) {
      if (c % g == 0 && c > g) divisors.push_back(g);
    }
    if (!divisors.empty()) {
      groups = rng_.Pick(divisors);
      m = groups * std::max<int64_t>(1, OutChannels(c) / groups);
    }
  }
  const bool bias = rng_.Chance(0.7);
  auto out_extent = [&](int64_t e) { return (e + 2 * pad - (k - 1) * dilation - 1) / stride + 1; };
  for (;;) {
    const Shape out = {s[0], m, out_extent(h), out_extent(w)};
    const double flops = 2 * ElementsOf(out) * static_cast<double>(c / groups * k * k) +
                         (bias ? ElementsOf(out) : 0);
    if (Fits(out) && Fits({m, c / groups, k, k}) && Affordable(flops)) {
      const std::string y = builder_.Conv2d(x, m, k, stride, pad, groups, dilation, bias);
      Publish(Track(y, {x}, 2 * mag(x) + 0.2, flops));
      return true;
    }
    if (m <= groups) return false;
    m = std::max(groups, m / 2 / groups * groups);
  }
}

bool Generator::Conv1d(const std::string& x) {
  const Shape& s = shape(x);
  if (s.size() != 3) return false;
  const int64_t c = s[1], len = s[2];
  int64_t k = rng_.Pick<int64_t>({1, 2, 3, 3, 5});
  int64_t dilation = k > 1 ? rng_.Pick<int64_t>({1, 1, 2, 4}) : 1;
  const int64_t stride = rng_.Chance(0.2) ? 2 : 1;
  const double padding = rng_.Unit();  // causal, centred or none
  int64_t pad_begin = 0, pad_end = 0;
  for (;;) {
    const int64_t span = (k - 1) * dilation;
    pad_begin = padding < 0.35 ? span : padding < 0.8 ? span / 2 : 0;
    pad_end = padding < 0.35 ? 0 : padding < 0.8 ? span - span / 2 : 0;
    if (span + 1 <= len + pad_begin + pad_end) break;
    if (dilation > 1) {
      dilation = 1;
    } else {
      k -= 1;
      if (k < 1) return false;
    }
  }
  int64_t m = OutChannels(c);
  const bool bias = rng_.Chance(0.7);
  for (;;) {
    const Shape out = {s[0], m, (len + pad_begin + pad_end - (k - 1) * dilation - 1) / stride + 1};
    const double flops = 2 * ElementsOf(out) * static_cast<double>(c * k) + ElementsOf(out);
    if (Fits(out) && Fits({m, c, k}) && Affordable(flops)) {
      const std::string y = builder_.Conv1d(x, m, k, stride, pad_begin, pad_end, dilation, bias);
      Publish(Track(y, {x}, 2 * mag(x) + 0.2, flops));
      return true;
    }
    if (m == 1) return false;
    m /= 2;
  }
}

bool Generator::Linear(const std::string& x) {
  Shape s = shape(x);
  if (s.size() < 2) return false;
  const int64_t in = s.back();
  const int64_t choice = rng_.Int(0, 3);
  int64_t out = choice == 0   ? in
                : choice == 1 ? 2 * in
                : choice == 2 ? in / 2
                              : rng_.LogInt(4, 256);
  out = std::clamp<int64_t>(out, 1, 1024);
  const bool bias = rng_.Chance(0.8);
  for (;;) {
    s.back() = out;
    const double flops = 2 * ElementsOf(s) * static_cast<double>(in) + ElementsOf(s);
    if (Fits(s) && Fits({in, out}) && Affordable(flops)) {
      Publish(Track(builder_.Linear(x, out, bias), {x}, 2 * mag(x) + 0.2, flops));
      return true;
    }
    if (out == 1) return false;
    out /= 2;
  }
}

bool Generator::Gemm(const std::string& x) {
  const Shape& s = shape(x);
  if (s.size() != 2) return false;
  const bool trans_a = rng_.Chance(0.3), trans_b = rng_.Chance(0.5);
  const int64_t m = trans_a ? s[1] : s[0], k = trans_a ? s[0] : s[1];
  int64_t n = rng_.LogInt(4, 256);
  const double alpha = rng_.Pick<double>({1.0, 1.0, 0.5});
  const double beta = rng_.Pick<double>({1.0, 1.0, 0.5});
  const bool with_c = rng_.Chance(0.8);
  for (;;) {
    const double flops = 2 * static_cast<double>(m * n * k) + static_cast<double>(m * n);
    if (Fits({m, n}) && Fits({k, n}) && Affordable(flops)) break;
    if (n == 1) return false;
    n /= 2;
  }
  const std::string w = builder_.RandomParameter("gemm_w", trans_b ? Shape{n, k} : Shape{k, n},
                                                 std::sqrt(3.0 / static_cast<double>(k)));
  const std::string c = with_c ? builder_.RandomParameter("gemm_c", {n}, 0.1) : "";
  const std::string y = builder_.Gemm(x, w, c, alpha, beta, trans_a, trans_b);
  Publish(Track(y, {x}, 2 * mag(x) + 0.2,
                2 * static_cast<double>(m * n * k) + static_cast<double>(m * n)));
  return true;
}

bool Generator::MatMul(const std::string& x) {
  const Shape& a = shape(x);
  if (a.size() < 2) return false;
  const int64_t m = a[a.size() - 2], k = a.back();
  const Shape a_batch(a.begin(), a.end() - 2);
  struct Choice {
    std::string b;
    bool trans_a, trans_b;
    Shape out;
  };
  std::vector<Choice> others, self;
  auto consider = [&](const std::string& t, bool trans_a, bool trans_b, std::vector<Choice>& to) {
    const Shape& b = shape(t);
    if (b.size() < 2) return;
    const int64_t ma = trans_a ? k : m, ka = trans_a ? m : k;
    const int64_t kb = trans_b ? b.back() : b[b.size() - 2];
    const int64_t n = trans_b ? b[b.size() - 2] : b.back();
    if (ka != kb) return;
    std::optional<Shape> out = BroadcastShapes(a_batch, Shape(b.begin(), b.end() - 2));
    if (!out) return;
    out->push_back(ma);
    out->push_back(n);
    const double flops = 2 * ElementsOf(*out) * static_cast<double>(ka);
    if (Fits(*out) && Affordable(flops)) to.push_back({t, trans_a, trans_b, *out});
  };
  const size_t first = available_.size() > 8 ? available_.size() - 8 : 0;
  for (size_t i = first; i < available_.size(); ++i) {
    if (available_[i] == x) continue;
    consider(available_[i], false, false, others);
    consider(available_[i], false, true, others);
  }
  consider(x, false, true, self);  // x * x^T: a Gram / self-attention score matrix
  consider(x, true, false, self);  // x^T * x
  std::vector<Choice>& pool = !others.empty() && (self.empty() || rng_.Chance(0.7)) ? others : self;
  if (pool.empty()) return false;
  const Choice choice = rng_.Pick(pool);
  const int64_t inner = choice.trans_a ? m : k;
  const double magnitude = mag(x) * mag(choice.b) * std::sqrt(static_cast<double>(inner));
  if (magnitude > kMaxMagnitude) return false;
  const std::string y = builder_.MatMul(x, choice.b, choice.trans_a, choice.trans_b);
  Publish(
      Track(y, {x, choice.b}, magnitude, 2 * ElementsOf(choice.out) * static_cast<double>(inner)));
  return true;
}

bool Generator::Pool(const std::string& x, bool max) {
  const Shape& s = shape(x);
  if (s.size() != 3 && s.size() != 4) return false;
  const size_t spatial = s.size() - 2;
  int64_t smallest = s[2];
  for (size_t d = 2; d < s.size(); ++d) smallest = std::min(smallest, s[d]);
  if (smallest < 2) return false;
  int64_t k = rng_.Pick<int64_t>({2, 3, 3});
  const int64_t pad = rng_.Chance(0.35) ? k / 2 : 0;
  if (k > smallest + 2 * pad) k = 2;
  const int64_t stride = rng_.Pick<int64_t>({1, 2, k});
  const bool ceil_mode = pad == 0 && stride <= k && rng_.Chance(0.15);
  const bool count_include_pad = !max && pad > 0 && rng_.Chance(0.5);
  Shape out = {s[0], s[1]};
  double window = 1;
  for (size_t d = 2; d < s.size(); ++d) {
    const int64_t span = s[d] + 2 * pad - k;
    int64_t o = span / stride + 1;
    if (ceil_mode) {
      o = (span + stride - 1) / stride + 1;
      if ((o - 1) * stride >= s[d] + pad) --o;
    }
    out.push_back(o);
    window *= static_cast<double>(k);
  }
  const double flops = ElementsOf(out) * window;
  if (!Fits(out) || !Affordable(flops)) return false;
  const std::vector<int64_t> kernel(spatial, k), strides(spatial, stride), pads(2 * spatial, pad);
  const std::string y =
      max ? builder_.MaxPool(x, kernel, strides, pads, ceil_mode)
          : builder_.AvgPool(x, kernel, strides, pads, count_include_pad, ceil_mode);
  Publish(Track(y, {x}, mag(x), flops));
  return true;
}

bool Generator::GlobalPool(const std::string& x) {
  const Shape& s = shape(x);
  if (s.size() < 3) return false;
  const double flops = ElementsOf(s);
  if (flops < 2 * static_cast<double>(s[0] * s[1])) return false;  // spatial extent 1
  if (!Affordable(flops)) return false;
  const std::string y = rng_.Chance(0.7) ? builder_.GlobalAvgPool(x) : builder_.GlobalMaxPool(x);
  Publish(Track(y, {x}, mag(x), flops));
  return true;
}

bool Generator::Normalize(const std::string& x, GenOp op) {
  const Shape& s = shape(x);
  const double n = ElementsOf(s);
  if (op == kBatchNorm) {
    if (s.size() < 2 || !Affordable(2 * n)) return false;
    Publish(Track(builder_.BatchNorm(x), {x}, 1.1 * mag(x) + 0.1, 2 * n));
    return true;
  }
  if (op == kLayerNorm) {
    // Normalizing a few values, or values of tiny variance, amplifies float32
    // rounding past any fixed tolerance: keep rows of 8 or more, and a larger epsilon.
    if (s.back() < 8 || !Affordable(20 * n)) return false;
    Publish(Track(builder_.LayerNorm(x, 1e-3), {x}, 5, 20 * n));
    return true;
  }
  int64_t axis = static_cast<int64_t>(s.size()) - 1;
  if (rng_.Chance(0.4)) axis = rng_.Int(0, axis);
  if (s[axis] < 2 || !Affordable(25 * n)) return false;
  if (op == kSoftmax) {
    Publish(Track(builder_.Softmax(x, axis), {x}, 1, 25 * n));
  } else {
    if (2 * mag(x) + 14 > kMaxMagnitude) return false;
    Publish(Track(builder_.LogSoftmax(x, axis), {x}, 2 * mag(x) + 14, 25 * n));
  }
  return true;
}

bool Generator::UnaryOp(const std::string& x) {
  static const std::vector<UnaryFn> kFns = {
      RELU,     RELU,   RELU,  SIGMOID,    TANH, GELU,     EXP,          NEG,        ABS,
      ERF,      CLIP,   CLIP,  LEAKY_RELU, ELU,  SOFTPLUS, HARD_SIGMOID, HARD_SWISH, SILU,
      IDENTITY, SQUARE, FLOOR, CEIL,       SIN,  COS,      SIGN,         SCALE};
  const UnaryFn fn = rng_.Pick(kFns);
  const double m = mag(x), n = ElementsOf(shape(x));
  if (!Affordable(10 * n)) return false;
  auto emit = [&](const std::string& y, double magnitude) {
    Publish(Track(y, {x}, magnitude, 10 * n));
    return true;
  };
  switch (fn) {
    case EXP: {
      if (m > 8) return false;  // e^8 ~ 3e3; larger arguments would overflow in chains
      const double bound = m <= 1 ? 2.72 : m <= 2 ? 7.4 : m <= 4 ? 54.6 : 2981;
      return emit(builder_.Exp(x), bound);
    }
    case SQUARE:
      if (m * m > kMaxMagnitude) return false;
      return emit(builder_.Unary(SQUARE, x), m * m);
    case CLIP: {
      const bool relu6 = rng_.Chance(0.5);
      const double lo = relu6 ? 0.0 : rng_.Pick<double>({-1.0, -0.5, 0.0});
      const double hi = relu6 ? 6.0 : rng_.Pick<double>({0.5, 1.0, 2.0});
      return emit(builder_.Clip(x, lo, hi), std::max(-lo, hi));
    }
    case LEAKY_RELU:
      return emit(builder_.UnaryWithParams(LEAKY_RELU, x, rng_.Pick<double>({0.01, 0.1, 0.2}), 0),
                  m);
    case ELU:
      return emit(builder_.UnaryWithParams(ELU, x, rng_.Pick<double>({1.0, 0.5}), 0), m + 1);
    case HARD_SIGMOID:
      return rng_.Chance(0.5) ? emit(builder_.Unary(HARD_SIGMOID, x), 1)
                              : emit(builder_.UnaryWithParams(HARD_SIGMOID, x, 1.0 / 6, 0.5), 1);
    case SCALE: {
      const double alpha = rng_.Pick<double>({-2.0, -0.5, 0.5, 1.5, 2.0});
      const double beta = rng_.Pick<double>({-1.0, 0.0, 0.25, 1.0});
      const double bound = std::abs(alpha) * m + std::abs(beta);
      if (bound > kMaxMagnitude) return false;
      return emit(builder_.UnaryWithParams(SCALE, x, alpha, beta), bound);
    }
    case SIGN:
    case FLOOR:
    case CEIL:
      // Steps only on inputs: a computed value carries rounding that legal schedules
      // change (a split sum, a fused multiply-add), and a step turns that last bit
      // into a whole unit, so no schedule could be compared with the reference.
      if (info(x).depth > 0) return false;
      return emit(builder_.Unary(fn, x), fn == SIGN ? 1 : m + 1);
    case SIGMOID:
    case TANH:
    case ERF:
    case HARD_SWISH:
    case SIN:
    case COS:
      return emit(builder_.Unary(fn, x), fn == HARD_SWISH ? m + 1 : 1);
    case SOFTPLUS:
      return emit(builder_.Unary(fn, x), m + 1);
    default:  // RELU, GELU, NEG, ABS, SILU, IDENTITY
      return emit(builder_.Unary(fn, x), m);
  }
}

bool Generator::SafeUnaryOp(const std::string& x) {
  const double m = mag(x), n = ElementsOf(shape(x));
  if (!Affordable(30 * n)) return false;
  const UnaryFn fn = rng_.Pick<UnaryFn>({LOG, SQRT, RSQRT, RECIPROCAL});
  const std::string a = Track(builder_.Unary(ABS, x), {x}, m, n);
  if (fn == SQRT) {  // sqrt(|x|)
    Publish(Track(builder_.Unary(SQRT, a), {a}, std::sqrt(m) + 1, 10 * n));
    return true;
  }
  // log(|x| + 1), 1 / sqrt(|x| + 1), 1 / (|x| + 1)
  const std::string shifted = Track(builder_.UnaryWithParams(SCALE, a, 1.0, 1.0), {a}, m + 1, n);
  Publish(Track(builder_.Unary(fn, shifted), {shifted}, fn == LOG ? m : 1, 10 * n));
  return true;
}

std::string Generator::AdaptTo(const std::string& t, const Shape& target) {
  const Shape& s = shape(t);
  std::optional<Shape> joint = BroadcastShapes(s, target);
  if (joint && *joint == target) return t;
  std::vector<int64_t> axes;
  if (s.size() == target.size()) {
    for (size_t d = 0; d < s.size(); ++d) {
      if (s[d] != target[d] && s[d] != 1) axes.push_back(static_cast<int64_t>(d));
    }
  } else {
    for (size_t d = 0; d < s.size(); ++d) axes.push_back(static_cast<int64_t>(d));
  }
  std::string r =
      Track(builder_.Reduce(MEAN, t, axes, /*keepdims=*/true), {t}, mag(t), ElementsOf(s));
  if (s.size() > target.size()) {
    r = Track(builder_.Reshape(r, Shape(target.size(), 1)), {r}, mag(t), 1);
  }
  return r;
}

std::string Generator::BroadcastPartner(const std::string& x, double param_offset,
                                        double param_scale) {
  const Shape& s = shape(x);
  // Never x itself: Halide folds sub(x, x), max(x, x) and min(x, x) away while the
  // features and cost models would count their work.
  if (rng_.Chance(0.65)) {
    std::string t = PickRecent();
    if (t == x) t = PickRecent();
    if (t != x) {
      const Shape& ts = shape(t);
      std::optional<Shape> joint = BroadcastShapes(s, ts);
      if (joint && Fits(*joint)) return t;
      if (ts.size() == s.size() || rng_.Chance(0.5)) {
        const std::string adapted = AdaptTo(t, s);
        if (adapted != x) return adapted;
      }
    }
  }
  // A parameter broadcast along some dims: per channel, per last dim, or one per element.
  Shape p(s.size(), 1);
  const int64_t pattern = rng_.Int(0, 3);
  if (pattern == 0 && s.size() >= 2) {
    p[1] = s[1];
  } else if (pattern == 1) {
    p = {s.back()};
  } else if (pattern == 2) {
    p = Shape(s.begin() + 1, s.end());
  } else {
    p = {1};
  }
  return builder_.RandomParameter("bin_p", p, param_scale, param_offset);
}

bool Generator::BinaryOp(const std::string& x, bool safe) {
  const double n = ElementsOf(shape(x));
  if (!Affordable(15 * n)) return false;
  if (safe) {
    const bool pow = rng_.Chance(0.4);
    const std::string b = BroadcastPartner(x, 0.0, 1.0);
    const std::optional<Shape> out = BroadcastShapes(shape(x), builder_.ShapeOf(b));
    if (!out || !Fits(*out)) return false;
    const double bm = info_.count(b) ? mag(b) : 1.0;
    if (pow) {  // (sigmoid(a) + 0.5) ^ clip(b, -2, 2), a base in (0.5, 1.5)
      std::string base = Track(builder_.Sigmoid(x), {x}, 1, 10 * n);
      base = Track(builder_.UnaryWithParams(SCALE, base, 1.0, 0.5), {base}, 1.5, n);
      const std::string e = Track(builder_.Clip(b, -2.0, 2.0), {b}, 2, n);
      Publish(Track(builder_.Binary(POW, base, e), {base, e}, 4, 10 * ElementsOf(*out)));
    } else {  // a / (|b| + 1)
      std::string d = Track(builder_.Unary(ABS, b), {b}, bm, n);
      d = Track(builder_.UnaryWithParams(SCALE, d, 1.0, 1.0), {d}, bm + 1, n);
      Publish(Track(builder_.Div(x, d), {x, d}, mag(x), ElementsOf(*out)));
    }
    return true;
  }
  static const std::vector<BinaryFn> kFns = {ADD, ADD, ADD, SUB, SUB, MUL, MUL, MUL, MAX, MIN};
  const BinaryFn fn = rng_.Pick(kFns);
  const std::string b = fn == MUL ? BroadcastPartner(x, 1.0, 0.5) : BroadcastPartner(x, 0.0, 1.0);
  const std::optional<Shape> out = BroadcastShapes(shape(x), builder_.ShapeOf(b));
  if (!out || !Fits(*out)) return false;
  const double bm = info_.count(b) ? mag(b) : 1.5;
  const double magnitude = fn == MUL                ? mag(x) * bm
                           : fn == ADD || fn == SUB ? mag(x) + bm
                                                    : std::max(mag(x), bm);
  if (magnitude > kMaxMagnitude) return false;
  const bool swap = info_.count(b) && rng_.Chance(0.3);
  const std::string y = swap ? builder_.Binary(fn, b, x) : builder_.Binary(fn, x, b);
  Publish(Track(y, {x, b}, magnitude, ElementsOf(*out)));
  return true;
}

bool Generator::PadOp(const std::string& x) {
  const Shape& s = shape(x);
  const size_t rank = s.size();
  std::vector<int64_t> pads(2 * rank, 0);
  std::vector<size_t> dims;
  if (rng_.Chance(0.7)) {
    for (size_t d = rank >= 3 ? rank - 2 : rank - 1; d < rank; ++d) dims.push_back(d);
  } else {
    dims.push_back(static_cast<size_t>(rng_.Int(0, static_cast<int64_t>(rank) - 1)));
  }
  for (size_t d : dims) {
    pads[d] = rng_.Int(0, 2);
    pads[rank + d] = rng_.Int(pads[d] == 0 ? 1 : 0, 2);
  }
  PadMode mode = rng_.Pick<PadMode>({CONSTANT, CONSTANT, EDGE, REFLECT});
  if (mode == REFLECT) {
    for (size_t d : dims) {
      if (pads[d] >= s[d] || pads[rank + d] >= s[d]) mode = EDGE;
    }
  }
  const double value = mode == CONSTANT ? rng_.Pick<double>({0.0, 0.0, 1.0, -0.5}) : 0.0;
  Shape out = s;
  for (size_t d = 0; d < rank; ++d) out[d] += pads[d] + pads[rank + d];
  if (!Fits(out) || !Affordable(ElementsOf(out))) return false;
  Publish(Track(builder_.Pad(x, pads, mode, value), {x}, std::max(mag(x), std::abs(value)),
                ElementsOf(out)));
  return true;
}

bool Generator::ConcatOp(const std::string& x) {
  const Shape& s = shape(x);
  const int64_t rank = static_cast<int64_t>(s.size());
  const int64_t axis = rank == 4 && rng_.Chance(0.6) ? 1 : rng_.Int(0, rank - 1);
  std::vector<std::string> partners;
  for (size_t i = available_.size(); i-- > 0 && available_.size() - i <= 10;) {
    const std::string& t = available_[i];
    if (t == x) continue;
    Shape ts = shape(t);
    if (ts.size() != s.size()) continue;
    ts[axis] = s[axis];
    if (ts == s) partners.push_back(t);
  }
  std::vector<std::string> parts = {x};
  if (partners.empty()) {
    if (!rng_.Chance(0.3)) return false;
    parts.push_back(x);
  } else {
    const int64_t count = std::min<int64_t>(rng_.Int(1, 2), partners.size());
    for (int64_t i = 0; i < count; ++i) parts.push_back(partners[i]);
  }
  Shape out = s;
  out[axis] = 0;
  double magnitude = 0;
  for (const std::string& p : parts) {
    out[axis] += shape(p)[axis];
    magnitude = std::max(magnitude, mag(p));
  }
  if (!Fits(out) || !Affordable(ElementsOf(out))) return false;
  Publish(Track(builder_.Concat(parts, axis), parts, magnitude, ElementsOf(out)));
  return true;
}

bool Generator::SliceOp(const std::string& x) {
  const Shape& s = shape(x);
  std::vector<int64_t> axes;
  for (size_t d = 0; d < s.size(); ++d) {
    if (s[d] >= 2) axes.push_back(static_cast<int64_t>(d));
  }
  if (axes.empty()) return false;
  const int64_t axis = rng_.Pick(axes);
  const int64_t e = s[axis];
  const int64_t step = rng_.Pick<int64_t>({1, 1, 1, 2, 3, -1});
  int64_t start, end;
  if (step > 0) {
    start = rng_.Int(0, e - 2);
    end = rng_.Int(start + 1, e);
    if (start == 0 && end == e && step == 1) start = 1;
  } else {  // reversed, ending at index end + 1 >= 1: no negative indices
    start = rng_.Int(1, e - 1);
    end = rng_.Int(0, start - 1);
  }
  Publish(Track(builder_.Slice(x, axis, start, end, step), {x}, mag(x), ElementsOf(s)));
  return true;
}

bool Generator::TransposeOp(const std::string& x) {
  const int64_t rank = static_cast<int64_t>(shape(x).size());
  std::vector<int64_t> perm(rank);
  for (int64_t i = 0; i < rank; ++i) perm[i] = i;
  if (rng_.Chance(0.5)) {
    std::swap(perm[rank - 1], perm[rank - 2]);
  } else {
    for (int64_t i = rank - 1; i > 0; --i) std::swap(perm[i], perm[rng_.Int(0, i)]);
    bool identity = true;
    for (int64_t i = 0; i < rank; ++i) identity = identity && perm[i] == i;
    if (identity) std::swap(perm[0], perm[rank - 1]);
  }
  Publish(Track(builder_.Transpose(x, perm), {x}, mag(x), ElementsOf(shape(x))));
  return true;
}

bool Generator::ReshapeOp(const std::string& x) {
  const Shape& s = shape(x);
  const size_t rank = s.size();
  std::vector<Shape> targets;
  if (rank >= 3) {
    for (size_t d = 0; d + 1 < rank; ++d) {  // merge two adjacent dims
      Shape t;
      for (size_t i = 0; i < rank; ++i) {
        if (i == d + 1) continue;
        t.push_back(i == d ? s[d] * s[d + 1] : s[i]);
      }
      targets.push_back(t);
    }
  }
  if (rank < 4) {
    for (size_t d = 0; d < rank; ++d) {  // split a dim in two
      for (int64_t f : {2, 3, 4}) {
        if (s[d] % f != 0 || s[d] == f) continue;
        Shape t = s;
        t[d] = s[d] / f;
        t.insert(t.begin() + static_cast<int64_t>(d) + 1, f);
        targets.push_back(t);
        break;
      }
    }
  }
  if (targets.empty()) return false;
  const std::string y = rank >= 3 && rng_.Chance(0.25)
                            ? builder_.Flatten(x, rng_.Int(1, static_cast<int64_t>(rank) - 1))
                            : builder_.Reshape(x, rng_.Pick(targets));
  Publish(Track(y, {x}, mag(x), ElementsOf(s)));
  return true;
}

bool Generator::ReduceOp(const std::string& x) {
  const Shape& s = shape(x);
  const int64_t rank = static_cast<int64_t>(s.size());
  if (rank < 2 || !Affordable(ElementsOf(s))) return false;
  const ReduceFn fn = rng_.Pick<ReduceFn>({SUM, MEAN, MEAN, REDUCE_MAX, REDUCE_MIN, SUM_SQUARE});
  const int64_t count = std::min<int64_t>(rng_.Int(1, 2), rank);
  std::vector<int64_t> axes;
  while (static_cast<int64_t>(axes.size()) < count) {
    const int64_t a = rng_.Int(0, rank - 1);
    if (std::find(axes.begin(), axes.end(), a) == axes.end()) axes.push_back(a);
  }
  std::sort(axes.begin(), axes.end());
  const bool keepdims = rank - count < 2 || rng_.Chance(0.5);
  double reduced = 1;
  for (int64_t a : axes) reduced *= static_cast<double>(s[a]);
  const double m = mag(x);
  const double magnitude = fn == SUM ? m * reduced : fn == SUM_SQUARE ? m * m * reduced : m;
  if (magnitude > kMaxMagnitude) return false;
  Publish(Track(builder_.Reduce(fn, x, axes, keepdims), {x}, magnitude, ElementsOf(s)));
  return true;
}

bool Generator::UpsampleOp(const std::string& x) {
  const Shape& s = shape(x);
  const size_t rank = s.size();
  std::vector<int64_t> scales(rank, 1);
  const int64_t factor = rng_.Pick<int64_t>({2, 2, 3});
  const size_t first = rank >= 3 && rng_.Chance(0.7) ? rank - 2 : rank - 1;
  Shape out = s;
  for (size_t d = first; d < rank; ++d) {
    scales[d] = factor;
    out[d] *= factor;
  }
  if (!Fits(out) || !Affordable(ElementsOf(out))) return false;
  Publish(Track(builder_.Upsample(x, scales), {x}, mag(x), ElementsOf(out)));
  return true;
}

bool Generator::Apply(GenOp op, const std::string& x) {
  switch (op) {
    case kConv2d:
      return Conv2d(x);
    case kConv1d:
      return Conv1d(x);
    case kLinear:
      return Linear(x);
    case kGemm:
      return Gemm(x);
    case kMatMul:
      return MatMul(x);
    case kMaxPool:
      return Pool(x, true);
    case kAvgPool:
      return Pool(x, false);
    case kGlobalPool:
      return GlobalPool(x);
    case kBatchNorm:
    case kLayerNorm:
    case kSoftmax:
    case kLogSoftmax:
      return Normalize(x, op);
    case kUnary:
      return UnaryOp(x);
    case kSafeUnary:
      return SafeUnaryOp(x);
    case kBinary:
      return BinaryOp(x, false);
    case kSafeBinary:
      return BinaryOp(x, true);
    case kPad:
      return PadOp(x);
    case kConcat:
      return ConcatOp(x);
    case kSlice:
      return SliceOp(x);
    case kTranspose:
      return TransposeOp(x);
    case kReshape:
      return ReshapeOp(x);
    case kReduce:
      return ReduceOp(x);
    case kUpsample:
      return UpsampleOp(x);
    case kNumGenOps:
      break;
  }
  return false;
}

// Removes the stages, parameters and inputs that no output depends on.
PipelineSpec PruneToOutputs(const PipelineSpec& spec) {
  std::map<std::string, int> stage_index;
  for (int s = 0; s < spec.stages_size(); ++s) stage_index[spec.stages(s).name()] = s;
  std::set<std::string> live;
  std::vector<std::string> work(spec.outputs().begin(), spec.outputs().end());
  while (!work.empty()) {
    const std::string name = work.back();
    work.pop_back();
    if (!live.insert(name).second) continue;
    auto it = stage_index.find(name);
    if (it == stage_index.end()) continue;
    for (const std::string& in : spec.stages(it->second).inputs()) work.push_back(in);
  }
  PipelineSpec out = spec;
  out.clear_inputs();
  out.clear_parameters();
  out.clear_stages();
  for (const TensorDecl& t : spec.inputs()) {
    if (live.count(t.name())) *out.add_inputs() = t;
  }
  for (const Parameter& p : spec.parameters()) {
    if (live.count(p.tensor().name())) *out.add_parameters() = p;
  }
  for (const Stage& st : spec.stages()) {
    if (live.count(st.name())) *out.add_stages() = st;
  }
  return out;
}

bool StageMatches(const Stage& stage, const std::string& op) {
  const std::string display = OpDisplayName(stage);
  const size_t dot = display.find('.');
  return display == op || stage.label() == op ||
         (dot != std::string::npos && display.substr(dot + 1) == op);
}

StatusOr<PipelineSpec> Generator::Run() {
  // Inputs: 1 to 4 tensors of 2 to max_rank dims, DNN-like extents.
  const int num_inputs = 1 + static_cast<int>(rng_.Weighted({50, 30, 12, 8}));
  const int64_t input_cap = std::max<int64_t>(1, options_.max_elements / 2);
  for (int i = 0; i < num_inputs; ++i) {
    Shape s;
    if (i > 0 && rng_.Chance(0.4)) {
      s = shape(inputs_[0]);
    } else {
      const int rank = static_cast<int>(rng_.Int(2, options_.max_rank));
      if (rank == 4) {  // [N, C, H, W]
        const int64_t hw = rng_.LogInt(8, 128);
        s = {rng_.Chance(0.8) ? 1 : 2, rng_.LogInt(1, 64), hw,
             rng_.Chance(0.7) ? hw : rng_.LogInt(8, 128)};
      } else if (rank == 3) {  // [N, C, L] or [N, tokens, features]
        s = {rng_.Chance(0.8) ? 1 : 2, rng_.LogInt(2, 128), rng_.LogInt(16, 1024)};
      } else {  // [rows, features]
        s = {rng_.LogInt(1, 1024), rng_.LogInt(16, 1024)};
      }
      while (ElementsOf(s) > static_cast<double>(input_cap)) {
        auto largest = std::max_element(s.begin(), s.end());
        *largest = (*largest + 1) / 2;
      }
    }
    NewInput(s);
  }

  const int target =
      static_cast<int>(rng_.Int(std::max(options_.min_ops, options_.min_depth), options_.max_ops));
  const std::vector<int>& weights = GenOpWeights();
  for (int tries = 0; ops_ < target && tries < 50 * target + 100; ++tries) {
    const GenOp op = static_cast<GenOp>(rng_.Weighted(weights));
    if (ops_ + kMaxOpsPerGenOp > options_.max_ops && op != kUnary && op != kConv2d &&
        op != kLinear && op != kPad && op != kSlice && op != kTranspose) {
      continue;  // only single-operator draws fit the remaining budget
    }
    const std::string x = PickRecent();
    const bool shrinks =
        op == kGlobalPool || op == kReduce || op == kSlice || op == kMaxPool || op == kAvgPool;
    if (shrinks && ElementsOf(shape(x)) * 64 < static_cast<double>(options_.max_elements) &&
        rng_.Chance(0.7)) {
      continue;  // keep small tensors from collapsing further, most of the time
    }
    Apply(op, x);
    if (!builder_.ok()) break;
  }
  if (!builder_.ok()) return builder_.error();
  if (ops_ == 0) return Status::Error("no operator could be placed");

  // Outputs: the latest result, plus unused results kept as outputs (up to
  // max_outputs), carried into the output by a binary op, or left out.
  std::string result;
  std::vector<std::string> dead;
  for (size_t i = available_.size(); i-- > 0;) {
    const std::string& t = available_[i];
    if (std::find(inputs_.begin(), inputs_.end(), t) != inputs_.end()) continue;
    if (result.empty()) {
      result = t;
    } else if (info(t).uses == 0) {
      dead.push_back(t);
    }
  }
  std::vector<std::string> extra_outputs;
  for (const std::string& t : dead) {
    const double r = rng_.Unit();
    if (r < 0.3 && 1 + static_cast<int>(extra_outputs.size()) < options_.max_outputs) {
      extra_outputs.push_back(t);
    } else if (r < 0.8 && ops_ + 3 <= options_.max_ops) {
      const std::string adapted = AdaptTo(t, shape(result));
      const BinaryFn fn = rng_.Pick<BinaryFn>({ADD, ADD, MAX});
      const double magnitude = fn == ADD ? mag(result) + mag(adapted) : mag(result);
      result = Track(builder_.Binary(fn, result, adapted), {result, adapted}, magnitude,
                     ElementsOf(shape(result)));
    }
  }
  builder_.Output(result);
  for (const std::string& t : extra_outputs) builder_.Output(t);

  StatusOr<PipelineSpec> built = builder_.Finish();
  if (!built.ok()) return built.status();
  PipelineSpec spec = PruneToOutputs(*built);
  StatusOr<PipelineGraph> graph = PipelineGraph::Build(spec);
  if (!graph.ok()) return graph.status();

  // Filters and knobs, on what was kept.
  int live_ops = 0, depth = 0;
  std::set<std::string> stage_names;
  for (const Stage& st : spec.stages()) stage_names.insert(st.name());
  for (const auto& [name, i] : info_) {
    if (stage_names.count(name)) ++live_ops;
  }
  for (const std::string& out : spec.outputs()) depth = std::max(depth, info(out).depth);
  if (live_ops < options_.min_ops || live_ops > options_.max_ops) {
    return Status::Error("kept " + std::to_string(live_ops) + " operators, outside [" +
                         std::to_string(options_.min_ops) + ", " +
                         std::to_string(options_.max_ops) + "]");
  }
  if (depth < options_.min_depth) {
    return Status::Error("depth " + std::to_string(depth) + " below min_depth");
  }
  for (const Value& v : graph->values()) {
    if (ElementsOf(v.shape) > static_cast<double>(options_.max_elements)) {
      return Status::Error("tensor '" + v.name + "' over max_elements");
    }
  }
  if (graph->total_cost().flops > options_.max_flops) {
    return Status::Error("pipeline over max_flops");
  }
  if (!options_.favoured_ops.empty()) {
    bool present = false;
    for (const Stage& st : spec.stages()) {
      for (const std::string& f : options_.favoured_ops) present = present || StageMatches(st, f);
    }
    if (!present) return Status::Error("no favoured operator");
  }
  return spec;
}

Status CheckOptions(const RandomPipelineOptions& o) {
  auto bad = [](const std::string& what) {
    return Status::Error("RandomPipelineOptions: " + what);
  };
  if (o.min_ops < 1 || o.max_ops > 200 || o.min_ops > o.max_ops) {
    return bad("need 1 <= min_ops <= max_ops <= 200, got min_ops " + std::to_string(o.min_ops) +
               ", max_ops " + std::to_string(o.max_ops));
  }
  if (o.max_rank < 2 || o.max_rank > 4) {
    return bad("max_rank must be in [2, 4], got " + std::to_string(o.max_rank));
  }
  if (o.max_elements < 16) {
    return bad("max_elements must be >= 16, got " + std::to_string(o.max_elements));
  }
  if (!(o.max_flops > 0)) return bad("max_flops must be > 0");
  if (o.min_depth < 0 || o.min_depth > o.max_ops) {
    return bad("min_depth must be in [0, max_ops], got " + std::to_string(o.min_depth));
  }
  if (o.max_outputs < 1) return bad("max_outputs must be >= 1");
  if (o.max_attempts < 1) return bad("max_attempts must be >= 1");
  return Status::Ok();
}

}  // namespace

StatusOr<PipelineSpec> RandomPipeline(uint64_t seed, const RandomPipelineOptions& options) {
  SCHEDFARM_RETURN_IF_ERROR(CheckOptions(options));
  std::map<std::string, int> rejections;
  for (int attempt = 0; attempt < options.max_attempts; ++attempt) {
    Generator generator(seed, attempt, options);
    StatusOr<PipelineSpec> spec = generator.Run();
    if (spec.ok()) return spec;
    rejections[spec.status().message()]++;
  }
  std::string reasons;
  for (const auto& [reason, count] : rejections) {
    reasons += (reasons.empty() ? "" : "; ") + std::to_string(count) + "x " + reason;
  }
  return Status::Error("random pipeline " + std::to_string(seed) + ": no candidate in " +
                       std::to_string(options.max_attempts) + " attempts passed the filters (" +
                       reasons + ")");
}

}  // namespace schedfarm
