// PipelineBuilder: the operator library. Builds a PipelineSpec one operator at a
// time, inferring every output shape; composite operators (softmax, layer norm,
// batch norm, gemm, linear...) expand into primitive stages (pipeline/ops.h).
//
// Each method returns the name of the tensor it produced. The first error (a bad
// attribute, a shape mismatch) is remembered and later calls do nothing; Finish()
// returns it, so call sites read as straight-line code:
//   PipelineBuilder b("block");
//   auto x = b.Input("x", {1, 64, 56, 56});
//   auto y = b.Relu(b.Conv2d(x, 64, 3, /*stride=*/1, /*pad=*/1));
//   b.Output(y);
//   StatusOr<PipelineSpec> spec = b.Finish();
#pragma once

#include <map>
#include <string>
#include <vector>

#include "common/status.h"
#include "pipeline/ops.h"
#include "schedfarm.pb.h"

namespace schedfarm {

class PipelineBuilder {
 public:
  explicit PipelineBuilder(std::string pipeline_name, DataType dtype = FLOAT32,
                           uint64_t weight_seed = 1);

  // Transcendental functions of later operators: EXACT (default) or PADE.
  void set_math(MathMode math) { math_ = math; }
  // Provenance recorded in the spec ("zoo:resnet18_basic", ...).
  void set_source(std::string source) { spec_.set_source(std::move(source)); }

  // --- tensors -----------------------------------------------------------------
  std::string Input(const std::string& name, const Shape& shape);
  // A parameter with deterministic pseudo-random values uniform in
  // [offset - scale, offset + scale]; its seed derives from the builder's weight seed
  // and the parameter's position.
  std::string RandomParameter(const std::string& name, const Shape& shape, double scale,
                              double offset = 0.0);
  // A parameter with the given values (row-major).
  std::string ConstantParameter(const std::string& name, const Shape& shape,
                                const std::vector<double>& values);
  // Marks a tensor as a pipeline output (it must be a stage).
  void Output(const std::string& tensor);

  // --- primitive ops ----------------------------------------------------------
  // Adds one stage as given (op, inputs, attributes); the output shape is inferred.
  std::string AddStage(OpKind op, const std::vector<std::string>& inputs,
                       const Attributes& attrs, const std::string& label = "");
  // Same, with a declared output shape (SLICE and RESHAPE take their extents from it).
  std::string AddStageWithShape(OpKind op, const std::vector<std::string>& inputs,
                                const Attributes& attrs, const Shape& shape,
                                const std::string& label = "");

  // --- operator library ---------------------------------------------------------
  // N-d convolution with explicit weights (x [N,C,S...], w [M,C/g,K...]).
  std::string Conv(const std::string& x, const std::string& w, const std::string& bias,
                   const std::vector<int64_t>& strides, const std::vector<int64_t>& pads,
                   const std::vector<int64_t>& dilations, int64_t groups);
  // 2-d convolution creating its own random weights (He-scaled) and optional bias.
  std::string Conv2d(const std::string& x, int64_t out_channels, int64_t kernel,
                     int64_t stride = 1, int64_t pad = 0, int64_t groups = 1,
                     int64_t dilation = 1, bool bias = true);
  // Depthwise 2-d convolution (groups = channels).
  std::string DepthwiseConv2d(const std::string& x, int64_t kernel, int64_t stride = 1,
                              int64_t pad = 0, int64_t dilation = 1);
  // 1-d and 3-d convolutions with their own weights; pads given as begin, end.
  std::string Conv1d(const std::string& x, int64_t out_channels, int64_t kernel,
                     int64_t stride, int64_t pad_begin, int64_t pad_end, int64_t dilation,
                     bool bias = true);
  std::string Conv3d(const std::string& x, int64_t out_channels, int64_t kernel,
                     int64_t stride = 1, int64_t pad = 0, bool bias = true);

  std::string MatMul(const std::string& a, const std::string& b, bool trans_a = false,
                     bool trans_b = false);
  // alpha * op(a) * op(b) + beta * c, as ONNX Gemm (c may be "").
  std::string Gemm(const std::string& a, const std::string& b, const std::string& c,
                   double alpha, double beta, bool trans_a, bool trans_b);
  // x [..., in] -> [..., out] with random weights and bias.
  std::string Linear(const std::string& x, int64_t out_features, bool bias = true);
  std::string BatchMatMul(const std::string& a, const std::string& b) { return MatMul(a, b); }

  std::string MaxPool(const std::string& x, const std::vector<int64_t>& kernel,
                      const std::vector<int64_t>& strides, const std::vector<int64_t>& pads,
                      bool ceil_mode = false, const std::vector<int64_t>& dilations = {});
  std::string AvgPool(const std::string& x, const std::vector<int64_t>& kernel,
                      const std::vector<int64_t>& strides, const std::vector<int64_t>& pads,
                      bool count_include_pad = false, bool ceil_mode = false);
  std::string MaxPool2d(const std::string& x, int64_t kernel, int64_t stride, int64_t pad = 0);
  std::string AvgPool2d(const std::string& x, int64_t kernel, int64_t stride, int64_t pad = 0);
  // Mean over all spatial dims, keeping them as extent 1: [N,C,S...] -> [N,C,1...].
  std::string GlobalAvgPool(const std::string& x);
  std::string GlobalMaxPool(const std::string& x);

  // Inference batch norm over dim 1: (x - mean) / sqrt(var + eps) * gamma + beta.
  // With constant parameters this folds to x * scale + shift at build time.
  std::string BatchNorm(const std::string& x, const std::string& gamma,
                        const std::string& beta, const std::string& mean,
                        const std::string& var, double epsilon);
  // Batch norm with its own random (folded) scale and shift.
  std::string BatchNorm(const std::string& x);
  // Layer norm over the last `normalized_dims` dims, with gamma/beta of those dims
  // ("" for none).
  std::string LayerNorm(const std::string& x, const std::string& gamma, const std::string& beta,
                        int normalized_dims, double epsilon);
  // Layer norm over the last dim with its own random gamma and beta.
  std::string LayerNorm(const std::string& x, double epsilon = 1e-5);
  std::string Softmax(const std::string& x, int64_t axis);
  std::string LogSoftmax(const std::string& x, int64_t axis);

  std::string Unary(UnaryFn fn, const std::string& x);
  std::string Relu(const std::string& x) { return Unary(RELU, x); }
  std::string Relu6(const std::string& x) { return Clip(x, 0.0, 6.0); }
  std::string Sigmoid(const std::string& x) { return Unary(SIGMOID, x); }
  std::string Tanh(const std::string& x) { return Unary(TANH, x); }
  std::string Gelu(const std::string& x) { return Unary(GELU, x); }
  std::string Exp(const std::string& x) { return Unary(EXP, x); }
  std::string Clip(const std::string& x, double lo, double hi);
  // UNARY with alpha/beta parameters (LEAKY_RELU, ELU, HARD_SIGMOID, SCALE).
  std::string UnaryWithParams(UnaryFn fn, const std::string& x, double alpha, double beta);

  std::string Binary(BinaryFn fn, const std::string& a, const std::string& b);
  std::string Add(const std::string& a, const std::string& b) { return Binary(ADD, a, b); }
  std::string Sub(const std::string& a, const std::string& b) { return Binary(SUB, a, b); }
  std::string Mul(const std::string& a, const std::string& b) { return Binary(MUL, a, b); }
  std::string Div(const std::string& a, const std::string& b) { return Binary(DIV, a, b); }
  std::string Max(const std::string& a, const std::string& b) { return Binary(MAX, a, b); }

  std::string Reduce(ReduceFn fn, const std::string& x, std::vector<int64_t> axes,
                     bool keepdims);
  // pads: begins then ends per dim.
  std::string Pad(const std::string& x, const std::vector<int64_t>& pads,
                  PadMode mode = CONSTANT, double value = 0.0);
  std::string Concat(const std::vector<std::string>& xs, int64_t axis);
  // numpy-style slice of one axis: [start, end) by step, with negative indices and
  // clamping as in ONNX Slice.
  std::string Slice(const std::string& x, int64_t axis, int64_t start, int64_t end,
                    int64_t step = 1);
  // Splits along axis into parts of the given sizes.
  std::vector<std::string> Split(const std::string& x, int64_t axis,
                                 const std::vector<int64_t>& sizes);
  std::string Transpose(const std::string& x, const std::vector<int64_t>& perm);
  std::string Reshape(const std::string& x, const Shape& shape);
  // [d0, ..., dn] -> [d0 * ... * d(axis-1), d(axis) * ... * dn].
  std::string Flatten(const std::string& x, int64_t axis = 1);
  std::string Upsample(const std::string& x, const std::vector<int64_t>& scales);

  // Shape and dtype of a tensor built so far (empty shape if unknown).
  Shape ShapeOf(const std::string& tensor) const;
  bool ok() const { return error_.ok(); }
  const Status& error() const { return error_; }
  // Remembers `error` (the first one wins) so that Finish() fails with it.
  void Fail(const std::string& error);

  // Validates and returns the spec, or the first error.
  StatusOr<PipelineSpec> Finish();

 private:
  std::string FreshName(const std::string& base);
  std::string Emit(Stage stage);
  const Parameter* FindParameter(const std::string& name) const;
  std::vector<double> ParameterValues(const std::string& name) const;
  // x * scale + shift as two stages labelled batch_norm.
  std::string ScaleShift(const std::string& x, const std::string& scale, const std::string& shift);

  PipelineSpec spec_;
  DataType dtype_;
  uint64_t weight_seed_;
  MathMode math_ = EXACT;
  Status error_;
  std::map<std::string, Shape> shapes_;
  int next_id_ = 0;
};

}  // namespace schedfarm
