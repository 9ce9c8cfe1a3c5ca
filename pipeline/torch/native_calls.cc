#include "pipeline/torch/native_calls.h"

#include <algorithm>
#include <limits>

namespace schedfarm {
namespace {

std::vector<int64_t> ToVector(const google::protobuf::RepeatedField<int64_t>& field) {
  return std::vector<int64_t>(field.begin(), field.end());
}

// The first and second half of a pads attribute (begins, then ends).
std::vector<int64_t> Begins(const std::vector<int64_t>& pads) {
  return std::vector<int64_t>(pads.begin(), pads.begin() + pads.size() / 2);
}
std::vector<int64_t> Ends(const std::vector<int64_t>& pads) {
  return std::vector<int64_t>(pads.begin() + pads.size() / 2, pads.end());
}

// The taps of each window along one spatial dim that lie in [lo, hi).
std::vector<int64_t> TapsInside(int64_t windows, int64_t stride, int64_t pad_begin, int64_t kernel,
                                int64_t dilation, int64_t lo, int64_t hi) {
  std::vector<int64_t> taps(windows, 0);
  for (int64_t o = 0; o < windows; ++o) {
    for (int64_t k = 0; k < kernel; ++k) {
      const int64_t i = o * stride - pad_begin + k * dilation;
      taps[o] += i >= lo && i < hi;
    }
  }
  return taps;
}

}  // namespace

std::vector<int64_t> AtenPadArgument(const std::vector<int64_t>& begins,
                                     const std::vector<int64_t>& ends) {
  std::vector<int64_t> result;
  for (size_t i = begins.size(); i-- > 0;) {
    result.push_back(begins[i]);
    result.push_back(ends[i]);
  }
  return result;
}

ConvCall PlanConv(const Stage& stage) {
  const Attributes& a = stage.attrs();
  ConvCall call;
  call.strides = ToVector(a.strides());
  call.dilations = ToVector(a.dilations());
  call.groups = a.groups();
  const std::vector<int64_t> pads = ToVector(a.pads());
  const std::vector<int64_t> begins = Begins(pads), ends = Ends(pads);
  if (begins == ends) {  // symmetric: torch's own padding, as an eager model runs it
    call.padding = begins;
  } else {
    call.pad_first = AtenPadArgument(begins, ends);
    call.padding.assign(begins.size(), 0);
  }
  return call;
}

MatMulForm PlanMatMul(const Stage& stage, const std::vector<Shape>& in) {
  const Attributes& a = stage.attrs();
  if (in.size() < 3 || in[1].size() != 2) return MatMulForm::kMatmul;
  const bool unscaled = (!a.has_alpha() || a.alpha() == 1.0) && (!a.has_beta() || a.beta() == 1.0);
  const int64_t n = a.trans_b() ? in[1][0] : in[1][1];
  if (unscaled) return in[2] == Shape{n} ? MatMulForm::kLinear : MatMulForm::kMatmul;
  // addmm scaled only: TorchScript decomposes an unscaled addmm into an add and an mm
  // whose shape propagation (libtorch 1.13) fails on some shapes (a c of several rows,
  // a transposed a).
  const bool row_bias = in[2] == Shape{n} || in[2] == Shape{1, n};
  if (in[0].size() == 2 && row_bias) return MatMulForm::kAddmm;
  return MatMulForm::kMatmul;
}

PoolCall PlanPool(const Stage& stage, const Shape& input_shape) {
  const Attributes& a = stage.attrs();
  const size_t ns = input_shape.size() - 2;
  PoolCall call;
  call.max = a.pool() == MAX_POOL;
  call.kernel = ToVector(a.kernel());
  call.strides = ToVector(a.strides());
  call.dilations = ToVector(a.dilations());
  call.windows.assign(stage.shape().begin() + 2, stage.shape().end());
  const std::vector<int64_t> pads = ToVector(a.pads());
  const std::vector<int64_t> begins = Begins(pads), ends = Ends(pads);

  bool narrow_pads = true;  // torch's padding: at most half the kernel
  for (size_t s = 0; s < ns; ++s) narrow_pads = narrow_pads && begins[s] <= call.kernel[s] / 2;
  const bool undilated =
      std::all_of(call.dilations.begin(), call.dilations.end(), [](int64_t d) { return d == 1; });
  if (begins == ends && narrow_pads && (call.max || undilated)) {
    call.form = PoolForm::kNative;
    call.padding = begins;
    return call;
  }
  if (call.max || (undilated && a.count_include_pad())) {
    call.form = PoolForm::kPadFirst;
    call.pad_first = AtenPadArgument(begins, ends);
    call.pad_value = call.max ? -std::numeric_limits<double>::infinity() : 0.0;
    call.padding.assign(ns, 0);
    return call;
  }

  // Windows unfolded: pad each dim at the end enough for the last window, at least by
  // its own pad; count the taps of each window inside the input (or the padded extent).
  call.form = PoolForm::kWindows;
  std::vector<int64_t> padded_ends(ns);
  call.counts.dtype = stage.dtype();
  call.counts.shape = call.windows;
  call.counts.data.assign(1, 1.0);
  for (size_t s = 0; s < ns; ++s) {
    const int64_t extent = input_shape[2 + s];
    call.spans.push_back(call.dilations[s] * (call.kernel[s] - 1) + 1);
    const int64_t needed =
        (call.windows[s] - 1) * call.strides[s] + call.spans[s] - begins[s] - extent;
    padded_ends[s] = std::max(ends[s], needed);
    const int64_t lo = a.count_include_pad() ? -begins[s] : 0;
    const int64_t hi = a.count_include_pad() ? extent + ends[s] : extent;
    const std::vector<int64_t> taps = TapsInside(call.windows[s], call.strides[s], begins[s],
                                                 call.kernel[s], call.dilations[s], lo, hi);
    // The counts so far, times this dim's taps (row-major: this dim innermost).
    std::vector<double> counts;
    for (double before : call.counts.data) {
      for (int64_t t : taps) counts.push_back(before * static_cast<double>(t));
    }
    call.counts.data = std::move(counts);
  }
  call.pad_first = AtenPadArgument(begins, padded_ends);
  return call;
}

std::vector<SliceCall> PlanSlice(const Stage& stage, const Shape& input_shape) {
  const Attributes& a = stage.attrs();
  std::vector<SliceCall> calls;
  for (int i = 0; i < a.axes_size(); ++i) {
    SliceCall call;
    call.axis = a.axes(i);
    const int64_t count = stage.shape(call.axis);
    int64_t start = a.starts(i), step = a.steps(i);
    if (step < 0) {  // the same elements, read forwards from the flipped input
      call.flip = true;
      start = input_shape[call.axis] - 1 - start;
      step = -step;
    }
    call.start = start;
    call.step = step;
    call.end = start + (count - 1) * step + 1;
    calls.push_back(call);
  }
  return calls;
}

std::vector<EdgePadCall> PlanEdgePad(const Stage& stage, const Shape& input_shape) {
  const std::vector<int64_t> pads = ToVector(stage.attrs().pads());
  const std::vector<int64_t> begins = Begins(pads), ends = Ends(pads);
  const bool edge = stage.attrs().pad_mode() == EDGE;
  std::vector<EdgePadCall> calls;
  for (size_t d = 0; d < begins.size(); ++d) {
    if (begins[d] == 0 && ends[d] == 0) continue;
    EdgePadCall call;
    call.dim = static_cast<int64_t>(d);
    call.begin = begins[d];
    call.end = ends[d];
    const int64_t extent = input_shape[d];
    call.before_start = edge ? 0 : 1;
    call.after_start = edge ? extent - 1 : extent - 1 - ends[d];
    calls.push_back(call);
  }
  return calls;
}

}  // namespace schedfarm
