// Internals of the ONNX importer shared by its .cc files: tensors known at import
// time (decoded from TensorProto or computed by folding), a node's attributes with
// error context, shape helpers that follow ONNX's rules, the constant folder, and the
// operator names the writer shares with it. Not a public header: only
// pipeline/onnx/*.cc include it.
#pragma once

#include <onnx/onnx_pb.h>

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "common/status.h"
#include "pipeline/ops.h"

namespace schedfarm {
namespace onnx_import {

// Element types of onnx.TensorProto.DataType that the importer handles: FLOAT and
// DOUBLE as data; integer and BOOL types only as constants (shapes, axes, indices).
bool IsFloatType(int32_t elem_type);
bool IsIntegerType(int32_t elem_type);  // BOOL counts as an integer type
const char* ElemTypeName(int32_t elem_type);

// A tensor whose values are known at import. Float types hold their values in `f`
// (already rounded to float precision for FLOAT), integer and BOOL types in `i`.
struct ConstTensor {
  int32_t elem_type = onnx::TensorProto::FLOAT;
  Shape shape;
  std::vector<double> f;
  std::vector<int64_t> i;

  bool is_float() const { return IsFloatType(elem_type); }
  int64_t size() const { return static_cast<int64_t>(is_float() ? f.size() : i.size()); }
  double AsDouble(int64_t k) const { return is_float() ? f[k] : static_cast<double>(i[k]); }
  int64_t AsInt(int64_t k) const;  // float values truncate toward zero
  std::vector<int64_t> Ints() const;
  std::vector<double> Doubles() const;
};

// A tensor of `shape` with zeroed values.
ConstTensor MakeConst(int32_t elem_type, const Shape& shape);
ConstTensor IntVector(const std::vector<int64_t>& values);  // INT64, rank 1

// Decodes a TensorProto (raw_data or the typed fields). `what` names the tensor in
// errors ("initializer 'w'"). Element types other than FLOAT, DOUBLE, the integer
// types and BOOL, external data and sizes over `max_elements` are errors.
StatusOr<ConstTensor> DecodeTensor(const onnx::TensorProto& proto, const std::string& what,
                                   int64_t max_elements = int64_t{1} << 31);

// Converts a value to `elem_type` as ONNX Cast does (float to integer truncates;
// FLOAT rounds to float precision; BOOL is value != 0).
double CastValue(double v, int32_t elem_type);

// One node under import: its attributes, the model's opset and error messages that
// name the node ("node 'conv1' (op Conv): ...").
class NodeContext {
 public:
  NodeContext(const onnx::NodeProto& node, int index, int64_t opset);

  const onnx::NodeProto& node() const { return node_; }
  const std::string& op() const { return node_.op_type(); }
  int64_t opset() const { return opset_; }
  std::string Label() const;
  Status Error(const std::string& message) const;
  // An error that says the importer does not support something ("unsupported ...").
  Status Unsupported(const std::string& message) const;

  // Number of inputs, counting empty names (absent optional inputs) before the last.
  int num_inputs() const { return node_.input_size(); }
  // Whether input k is given (present and not the empty name).
  bool HasInput(int k) const { return k < node_.input_size() && !node_.input(k).empty(); }
  const std::string& input(int k) const { return node_.input(k); }

  // Attribute accessors; types were checked against the op's table before the
  // handler runs (CheckAttributes), so these do not fail.
  bool Has(const std::string& name) const { return Find(name) != nullptr; }
  int64_t Int(const std::string& name, int64_t fallback) const;
  double Float(const std::string& name, double fallback) const;
  std::string String(const std::string& name, const std::string& fallback) const;
  std::vector<int64_t> Ints(const std::string& name) const;
  std::vector<double> Floats(const std::string& name) const;
  const onnx::AttributeProto* Find(const std::string& name) const;

 private:
  const onnx::NodeProto& node_;
  int index_;
  int64_t opset_;
};

// ONNX operators without attributes that are exactly one UNARY stage, both ways.
const std::vector<std::pair<std::string, UnaryFn>>& UnaryOperators();

// An allowed attribute of an op: its name and onnx.AttributeProto type.
struct AttrSpec {
  const char* name;
  onnx::AttributeProto::AttributeType type;
};
// Checks that every attribute of the node is in `allowed` with the right type.
Status CheckAttributes(const NodeContext& ctx, const std::vector<AttrSpec>& allowed);

// --- shape helpers (ONNX rules) -------------------------------------------------
// Axis in [-rank, rank) to [0, rank).
StatusOr<int64_t> NormalizeAxis(int64_t axis, int64_t rank);
// Sorted, unique, normalized axes.
StatusOr<std::vector<int64_t>> NormalizeAxes(const std::vector<int64_t>& axes, int64_t rank);
// Multidirectional (numpy) broadcasting.
StatusOr<Shape> BroadcastShapes(const Shape& a, const Shape& b);
// Reshape's target: 0 copies the input dim (unless allowzero), -1 is inferred.
StatusOr<Shape> ReshapeTarget(const Shape& input, const std::vector<int64_t>& target,
                              bool allowzero);
// Broadcasting of binary ops before opset 7 (attribute broadcast = 1): b's shape
// matches a contiguous run of a's dims starting at `axis` (default: the trailing
// dims). Returns b's shape padded with 1s to a's rank, for numpy broadcasting.
StatusOr<Shape> LegacyBroadcastShape(const Shape& a, const Shape& b, bool has_axis, int64_t axis);
StatusOr<Shape> SqueezeShape(const Shape& input, const std::vector<int64_t>& axes);
StatusOr<Shape> UnsqueezeShape(const Shape& input, const std::vector<int64_t>& axes);

// A Slice resolved against the input shape: per sliced axis its first index and
// step (after ONNX clamping), and the output shape (which may have zero extents).
struct ResolvedSlice {
  std::vector<int64_t> axes;
  std::vector<int64_t> starts;
  std::vector<int64_t> steps;
  Shape output;
};
StatusOr<ResolvedSlice> ResolveSlice(const Shape& input, const std::vector<int64_t>& starts,
                                     const std::vector<int64_t>& ends,
                                     const std::vector<int64_t>& axes,
                                     const std::vector<int64_t>& steps);

// --- constant folding -------------------------------------------------------------
// Largest tensor the folder produces; bigger results are left to pipeline stages.
inline constexpr int64_t kMaxFoldElements = int64_t{1} << 22;

// Whether the folder knows `op_type` (it may still decline a node, see FoldNode).
bool IsFoldable(const std::string& op_type);

// Evaluates `ctx`'s node on constant inputs (nullptr for absent optional inputs).
// Returns the node's outputs, an empty vector when the folder declines (an output
// over kMaxFoldElements, or types it does not compute), or an error for an invalid
// node.
StatusOr<std::vector<ConstTensor>> FoldNode(const NodeContext& ctx,
                                            const std::vector<const ConstTensor*>& inputs);

}  // namespace onnx_import
}  // namespace schedfarm
