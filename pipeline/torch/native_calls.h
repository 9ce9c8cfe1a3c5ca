// How a stage maps onto libtorch's native operators, decided from the stage and its
// input shapes without Torch: the eager TorchProgram (torch_eval.h) makes these calls
// with ATen and the TorchScript generator (torch_script.h) writes them as source, so
// both compute every stage the same way, with ops.h's semantics where they differ
// from torch's own (asymmetric pads, pools torch has no operator for).
#pragma once

#include <cstdint>
#include <vector>

#include "pipeline/ops.h"
#include "pipeline/tensor.h"
#include "schedfarm.pb.h"

namespace schedfarm {

// at::constant_pad_nd's argument for begin/end pads of the last begins.size() dims
// (ATen lists the last dim first).
std::vector<int64_t> AtenPadArgument(const std::vector<int64_t>& begins,
                                     const std::vector<int64_t>& ends);

// CONV: at::convolution (torch.conv1d/2d/3d) with its own symmetric padding, after a
// zero constant pad when the stage's pads are asymmetric.
struct ConvCall {
  std::vector<int64_t> pad_first;  // constant_pad_nd argument; empty when none
  std::vector<int64_t> padding;    // the operator's padding per spatial dim
  std::vector<int64_t> strides, dilations;
  int64_t groups = 1;
};
ConvCall PlanConv(const Stage& stage);

// MATMUL with c and b 2-D: at::linear when unscaled with a 1-D bias (a transposed
// first, as a view, if trans_a), at::addmm when scaled with a 2-D and a bias of its
// rows ([n] or [1, n]); otherwise at::matmul, then alpha and beta * c as written.
enum class MatMulForm { kLinear, kAddmm, kMatmul };
MatMulForm PlanMatMul(const Stage& stage, const std::vector<Shape>& input_shapes);

// POOL. kNative: at::max_poolNd / at::avg_poolNd with the stage's own padding, ceil mode
// and count_include_pad (symmetric pads of at most half the kernel; AVG undilated).
// kPadFirst (the other MAX pools, and AVG with count_include_pad undilated): a constant
// pad of the stage's pads (-inf for MAX, 0 for AVG), then the operator with no padding
// and the stage's ceil mode, its windows narrowed to the stage's count (torch's ceil
// rule may keep one more). kWindows (AVG that no operator computes: dilated, or
// excluding the padding from asymmetric or wide pads): zero padding that covers every
// window, each window unfolded and summed, divided by `counts`.
enum class PoolForm { kNative, kPadFirst, kWindows };
struct PoolCall {
  PoolForm form = PoolForm::kNative;
  bool max = true;
  std::vector<int64_t> kernel, strides, dilations;
  std::vector<int64_t> padding;    // kNative: the operator's padding per spatial dim
  std::vector<int64_t> pad_first;  // kPadFirst, kWindows: constant_pad_nd argument
  double pad_value = 0;
  std::vector<int64_t> spans;    // kWindows: each window's dilated extent
  std::vector<int64_t> windows;  // the stage's output extent per spatial dim
  // kWindows: the number of taps each window averages, shaped like the output's spatial
  // dims (broadcast over N and C), in the stage's dtype.
  HostTensor counts;
};
PoolCall PlanPool(const Stage& stage, const Shape& input_shape);

// SLICE along one axis: the input flipped along it first when the step is negative,
// then at::slice(axis, start, end, step) with a positive step (a view).
struct SliceCall {
  int64_t axis = 0;
  bool flip = false;
  int64_t start = 0, end = 0, step = 1;
};
std::vector<SliceCall> PlanSlice(const Stage& stage, const Shape& input_shape);

// PAD with EDGE or REFLECT along one dim: the input joined along it (at::cat) between
// `begin` slices before and `end` after. EDGE repeats one slice (at::narrow of 1 at
// `before_start` or `after_start`, then at::repeat_interleave); REFLECT mirrors the
// slices next to the edge (at::narrow of `begin` from `before_start`, or of `end` from
// `after_start`, then flip). One call per padded dim, in dim order.
struct EdgePadCall {
  int64_t dim = 0, begin = 0, end = 0;
  int64_t before_start = 0, after_start = 0;
};
std::vector<EdgePadCall> PlanEdgePad(const Stage& stage, const Shape& input_shape);

}  // namespace schedfarm
