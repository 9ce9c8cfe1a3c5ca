// The primitive operations of a PipelineSpec: what each op reads, its output shape,
// its loop nest (the pure and reduction dimensions of its Halide Func, which the
// schedule space, the lowering and the features all name the same way), its cost,
// and its access pattern. Halide-free and Torch-free.
//
// Op semantics (inputs are in Stage.inputs order; shapes are row-major, outermost
// dimension first; "S" are spatial dims, 1 to 3 of them):
//   CONV      x [N, C, S...], w [M, C/groups, K...], optional bias [M] -> [N, M, O...]
//             O = floor((S + pad_begin + pad_end - dilation*(K-1) - 1) / stride) + 1.
//             Attributes: strides, pads (begins then ends), dilations, groups.
//             Access: stencil over x, broadcast of w and bias.
//   MATMUL    a [..., m, k], b [..., k, n] (or transposed by trans_a / trans_b), batch
//             dims broadcast; optional c broadcast to [..., m, n]; alpha * a*b + beta * c.
//             Access: a and b broadcast along n and m, reduction over k.
//   POOL      x [N, C, S...] -> [N, C, O...]; MAX_POOL or AVG_POOL over `kernel` with
//             strides, pads (each smaller than the dilated kernel), dilations.
//             O as CONV; with ceil_mode, O = ceil(...) + 1, minus one if the last
//             window would start at or past S + pad_begin (PyTorch's rule). AVG_POOL
//             divides by the number of window taps inside [0, S) per spatial dim, or
//             with count_include_pad inside [-pad_begin, S + pad_end). Padded taps
//             read 0 (AVG) or are ignored (MAX). Access: stencil.
//   REDUCE    SUM, MEAN, REDUCE_MAX, REDUCE_MIN, SUM_SQUARE over `axes` (sorted,
//             unique), keepdims. Access: reduction.
//   UNARY     elementwise function of x (see UnaryFn); math = EXACT or PADE (read only
//             by transcendental functions). alpha/beta are read by LEAKY_RELU (alpha,
//             default 0.01), ELU (alpha, 1), HARD_SIGMOID (alpha 0.2, beta 0.5) and
//             SCALE (alpha 1, beta 0); clip_min/clip_max by CLIP. Access: pointwise.
//   BINARY    elementwise a op b with numpy broadcasting. Access: pointwise or
//             broadcast.
//   PAD       pads (begins then ends per dim, each >= 0) with CONSTANT (pad_value),
//             EDGE or REFLECT. Access: pointwise with clamped (edge) indices.
//   CONCAT    inputs joined along `axis`. Access: pointwise (piecewise).
//   SLICE     for each listed axis a: out[i] = x[starts[a] + i * steps[a]], the
//             output extent taken from the stage's shape. Access: strided.
//   TRANSPOSE out[i_0..i_r] = x[i_perm^-1...]: output dim d is input dim perm[d].
//             Access: transposed.
//   RESHAPE   same elements in row-major order, new shape. Access: gather (index
//             arithmetic with division and modulo).
//   UPSAMPLE  nearest: out[i] = x[floor(i / scale)] per dim. Access: broadcast.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/status.h"
#include "schedfarm.pb.h"

namespace schedfarm {

using Shape = std::vector<int64_t>;

// Inferred output shape of `stage` given its inputs' shapes, or an error saying which
// attribute or input shape is wrong (without the stage name: callers add context).
StatusOr<Shape> InferOutputShape(const Stage& stage, const std::vector<Shape>& input_shapes);

// Checks the op's attributes and the number of its inputs, independently of shapes.
Status CheckAttributes(const Stage& stage);

// One loop dimension of a stage's Func.
struct LoopDim {
  std::string name;  // "d<i>" for output axis i, "r<...>" for reduction dims
  int64_t extent = 0;
};

// The loop nest of a stage, innermost first (Halide's order). `pure` has one dim per
// output axis: output axis i (row-major, 0 outermost) is pure[rank-1-i], named "d<i>".
// `reduction` is empty for ops without an update definition; otherwise:
//   CONV:   rk<s> for kernel spatial dim s (innermost is the last kernel dim), then
//           rc (input channels of one group), outermost.
//   MATMUL: rk.
//   POOL:   rk<s> for window dim s.
//   REDUCE: r<a> for each reduced input axis a.
struct StageLoops {
  std::vector<LoopDim> pure;
  std::vector<LoopDim> reduction;
};
StageLoops LoopNestOf(const Stage& stage, const std::vector<Shape>& input_shapes);

// Access pattern of a stage on one of its inputs, for features and documentation.
enum class AccessPattern { kPointwise, kBroadcast, kStrided, kTransposed, kStencil,
                           kReduction, kGather };
AccessPattern AccessPatternOf(const Stage& stage, int input_index,
                              const std::vector<Shape>& input_shapes);
const char* AccessPatternName(AccessPattern pattern);

// The axes (row-major) of input `input_index` that the op reads through clamped
// indices, because it reads outside [0, extent) or selects among pieces: CONV's padded
// spatial axes of x, POOL's spatial axes of x whose windows leave it, PAD's padded
// axes, CONCAT's axis of every input. Empty for other ops and inputs. The lowering
// (pipeline/halide/lowering.h) clamps exactly these (CONCAT's wraps, modulo the input's
// extent); the schedule space needs to know them (Halide's bounds of a clamped region are
// loose, see docs/SCHEDULES.md).
std::vector<int> ClampedAxes(const Stage& stage, int input_index,
                             const std::vector<Shape>& input_shapes);

// Arithmetic and memory traffic of a stage, counted at the algorithm level (no
// schedule): flops counts multiply-adds as 2; bytes are the sizes of the inputs read
// and of the output written.
struct StageCost {
  double flops = 0;
  double bytes_read = 0;
  double bytes_written = 0;
};
StageCost CostOf(const Stage& stage, const std::vector<Shape>& input_shapes);

// alpha / beta of a stage with their documented defaults when unset (MATMUL: 1, 1).
double EffectiveAlpha(const Stage& stage);
double EffectiveBeta(const Stage& stage);
// True for the unary functions whose math mode matters (exp, tanh, sigmoid, erf,
// gelu, silu, elu, softplus, log... see ops.cc).
bool IsTranscendental(UnaryFn fn);

// Number of elements of a shape (1 for rank 0).
int64_t NumElements(const Shape& shape);
// Bytes per element of a dtype (0 for unspecified).
int BytesPerElement(DataType dtype);
// Short names used in errors, YAML and displays.
const char* DataTypeName(DataType dtype);   // "f32", "f64"
std::string ShapeToString(const Shape& shape);  // "[1, 3, 224, 224]"
std::string OpDisplayName(const Stage& stage);  // "conv", "unary.relu", "reduce.sum" ...

}  // namespace schedfarm
