#include "pipeline/graph.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <queue>

namespace schedfarm {
namespace {

Status CheckTensorShape(const Shape& shape, DataType dtype, const PipelineLimits& limits) {
  if (dtype != FLOAT32 && dtype != FLOAT64) {
    return Status::Error("dtype must be f32 or f64, got " +
                         (DataType_IsValid(dtype) ? DataType_Name(dtype) : std::to_string(dtype)));
  }
  if (static_cast<int>(shape.size()) > limits.max_rank) {
    return Status::Error("rank " + std::to_string(shape.size()) + " exceeds the limit of " +
                         std::to_string(limits.max_rank));
  }
  double elements = 1;
  for (int64_t d : shape) {
    if (d < 1) return Status::Error("shape " + ShapeToString(shape) + " has an extent < 1");
    elements *= static_cast<double>(d);
  }
  if (elements > static_cast<double>(limits.max_tensor_elements)) {
    return Status::Error("shape " + ShapeToString(shape) + " has " +
                         std::to_string(static_cast<long double>(elements)) +
                         " elements, over the limit of " +
                         std::to_string(limits.max_tensor_elements));
  }
  return Status::Ok();
}

Shape ShapeOf(const google::protobuf::RepeatedField<int64_t>& field) {
  return Shape(field.begin(), field.end());
}

}  // namespace

StatusOr<PipelineGraph> PipelineGraph::Build(PipelineSpec spec, const PipelineLimits& limits) {
  PipelineGraph g;
  const std::string where = "pipeline '" + spec.name() + "'";
  auto fail = [&](const std::string& message) { return Status::Error(where + ": " + message); };

  if (spec.stages_size() == 0) return fail("has no stages");
  if (!BoundaryLayout_IsValid(spec.boundary_layout())) {
    return fail("boundary_layout " + std::to_string(spec.boundary_layout()) +
                " is not a layout (LAYOUT_NATURAL or LAYOUT_CHANNELS_LAST)");
  }
  if (spec.stages_size() > limits.max_stages) {
    return fail("has " + std::to_string(spec.stages_size()) + " stages, over the limit of " +
                std::to_string(limits.max_stages));
  }
  double total_bytes = 0;
  auto add_value = [&](Value v, const std::string& what) -> Status {
    if (v.name.empty()) return fail(what + " has no name");
    if (g.value_by_name_.count(v.name)) return fail("name '" + v.name + "' is defined twice");
    Status shape_ok = CheckTensorShape(v.shape, v.dtype, limits);
    if (!shape_ok.ok()) return fail(what + " '" + v.name + "': " + shape_ok.message());
    total_bytes += static_cast<double>(NumElements(v.shape)) * BytesPerElement(v.dtype);
    g.value_by_name_[v.name] = static_cast<int>(g.values_.size());
    g.values_.push_back(std::move(v));
    return Status::Ok();
  };

  for (int i = 0; i < spec.inputs_size(); ++i) {
    const TensorDecl& t = spec.inputs(i);
    SCHEDFARM_RETURN_IF_ERROR(
        add_value({Value::Kind::kInput, i, t.name(), t.dtype(), ShapeOf(t.shape())}, "input"));
  }
  for (int i = 0; i < spec.parameters_size(); ++i) {
    const Parameter& p = spec.parameters(i);
    const TensorDecl& t = p.tensor();
    SCHEDFARM_RETURN_IF_ERROR(add_value(
        {Value::Kind::kParameter, i, t.name(), t.dtype(), ShapeOf(t.shape())}, "parameter"));
    const std::string what = "parameter '" + t.name() + "'";
    if (p.init_case() == Parameter::kRawData) {
      size_t expected = static_cast<size_t>(NumElements(ShapeOf(t.shape()))) *
                        static_cast<size_t>(BytesPerElement(t.dtype()));
      if (p.raw_data().size() != expected) {
        return fail(what + ": raw_data has " + std::to_string(p.raw_data().size()) +
                    " bytes, shape " + ShapeToString(ShapeOf(t.shape())) + " of " +
                    DataTypeName(t.dtype()) + " needs " + std::to_string(expected));
      }
    } else if (p.init_case() == Parameter::kRandom) {
      if (!std::isfinite(p.random().scale()) || !std::isfinite(p.random().offset())) {
        return fail(what + ": random init scale and offset must be finite");
      }
    } else {
      return fail(what + " has neither random init nor raw_data");
    }
  }
  for (int s = 0; s < spec.stages_size(); ++s) {
    const Stage& st = spec.stages(s);
    g.stage_values_.push_back(static_cast<int>(g.values_.size()));
    SCHEDFARM_RETURN_IF_ERROR(
        add_value({Value::Kind::kStage, s, st.name(), st.dtype(), ShapeOf(st.shape())}, "stage"));
  }
  if (total_bytes > static_cast<double>(limits.max_total_bytes)) {
    return fail("tensors need " + std::to_string(static_cast<int64_t>(total_bytes)) +
                " bytes, over the limit of " + std::to_string(limits.max_total_bytes));
  }

  // Resolve references.
  const int num_stages = spec.stages_size();
  g.stage_inputs_.resize(num_stages);
  g.consumers_.resize(num_stages);
  std::vector<int> pending(num_stages, 0);
  for (int s = 0; s < num_stages; ++s) {
    const Stage& st = spec.stages(s);
    const std::string what = "stage '" + st.name() + "'";
    Status attrs_ok = CheckAttributes(st);
    if (!attrs_ok.ok()) return fail(what + ": " + attrs_ok.message());
    for (int i = 0; i < st.inputs_size(); ++i) {
      auto it = g.value_by_name_.find(st.inputs(i));
      if (it == g.value_by_name_.end()) {
        return fail(what + ": input " + std::to_string(i) + " '" + st.inputs(i) +
                    "' does not name an input, parameter or stage");
      }
      const Value& v = g.values_[it->second];
      g.stage_inputs_[s].push_back(it->second);
      if (v.kind == Value::Kind::kStage) {
        if (v.index == s) return fail(what + " reads its own output (a cycle)");
        g.consumers_[v.index].push_back(s);
        ++pending[s];
      }
    }
  }
  for (auto& c : g.consumers_) {
    std::sort(c.begin(), c.end());
    c.erase(std::unique(c.begin(), c.end()), c.end());
  }
  // Count distinct producer stages so repeated inputs are handled.
  std::fill(pending.begin(), pending.end(), 0);
  for (int s = 0; s < num_stages; ++s) {
    for (int c : g.consumers_[s]) ++pending[c];
  }

  // Topological order (Kahn, smallest declaration index first); leftovers are cycles.
  std::priority_queue<int, std::vector<int>, std::greater<int>> ready;
  for (int s = 0; s < num_stages; ++s) {
    if (pending[s] == 0) ready.push(s);
  }
  while (!ready.empty()) {
    int s = ready.top();
    ready.pop();
    g.topo_order_.push_back(s);
    for (int c : g.consumers_[s]) {
      if (--pending[c] == 0) ready.push(c);
    }
  }
  if (static_cast<int>(g.topo_order_.size()) != num_stages) {
    // Walk producers from a stage left over until a stage repeats: that is a cycle.
    int start = 0;
    while (pending[start] == 0) ++start;
    std::vector<int> path;
    std::vector<int> seen_at(num_stages, -1);
    int s = start;
    while (seen_at[s] < 0) {
      seen_at[s] = static_cast<int>(path.size());
      path.push_back(s);
      for (int v : g.stage_inputs_[s]) {
        const Value& value = g.values_[v];
        if (value.kind == Value::Kind::kStage && pending[value.index] > 0) {
          s = value.index;
          break;
        }
      }
    }
    std::string cycle;
    for (size_t i = seen_at[s]; i < path.size(); ++i) {
      cycle = " -> '" + spec.stages(path[i]).name() + "'" + cycle;
    }
    cycle = "'" + spec.stages(s).name() + "'" + cycle;
    return fail("stages form a cycle: " + cycle);
  }

  // Types and shapes, producers first.
  for (int s : g.topo_order_) {
    const Stage& st = spec.stages(s);
    const std::string what = "stage '" + st.name() + "' (" + OpDisplayName(st) + ")";
    std::vector<Shape> shapes;
    for (int v : g.stage_inputs_[s]) {
      if (g.values_[v].dtype != st.dtype()) {
        return fail(what + ": input '" + g.values_[v].name + "' is " +
                    DataTypeName(g.values_[v].dtype) + " but the stage is " +
                    DataTypeName(st.dtype()));
      }
      shapes.push_back(g.values_[v].shape);
    }
    StatusOr<Shape> inferred = InferOutputShape(st, shapes);
    if (!inferred.ok()) {
      std::string inputs;
      for (size_t i = 0; i < shapes.size(); ++i) {
        inputs += (i ? ", " : "") + ShapeToString(shapes[i]);
      }
      return fail(what + ": " + inferred.status().message() + " (input shapes " + inputs + ")");
    }
    Shape declared = ShapeOf(st.shape());
    if (*inferred != declared) {
      return fail(what + ": declared shape " + ShapeToString(declared) +
                  " but its inputs give " + ShapeToString(*inferred));
    }
  }

  if (spec.outputs_size() == 0) return fail("has no outputs");
  for (const std::string& out : spec.outputs()) {
    auto it = g.value_by_name_.find(out);
    if (it == g.value_by_name_.end() || g.values_[it->second].kind != Value::Kind::kStage) {
      return fail("output '" + out + "' does not name a stage");
    }
    int s = g.values_[it->second].index;
    if (std::count(g.output_stages_.begin(), g.output_stages_.end(), s)) {
      return fail("output '" + out + "' is listed twice");
    }
    g.output_stages_.push_back(s);
  }
  if (spec.checked_outputs() < 0 || spec.checked_outputs() > spec.outputs_size()) {
    return fail("checked_outputs is " + std::to_string(spec.checked_outputs()) + ", outside 0.." +
                std::to_string(spec.outputs_size()) + " (its outputs)");
  }
  g.spec_ = std::move(spec);
  return g;
}

int PipelineGraph::FindValue(const std::string& name) const {
  auto it = value_by_name_.find(name);
  return it == value_by_name_.end() ? -1 : it->second;
}

std::vector<Shape> PipelineGraph::input_shapes(int s) const {
  std::vector<Shape> shapes;
  for (int v : stage_inputs_[s]) shapes.push_back(values_[v].shape);
  return shapes;
}

StageCost PipelineGraph::total_cost() const {
  StageCost total;
  for (int s = 0; s < num_stages(); ++s) {
    StageCost c = cost(s);
    total.flops += c.flops;
    total.bytes_read += c.bytes_read;
    total.bytes_written += c.bytes_written;
  }
  return total;
}

double PipelineGraph::compulsory_bytes() const {
  double bytes = 0;
  for (const Value& value : values_) {
    if (value.kind != Value::Kind::kStage) {
      bytes += static_cast<double>(NumElements(value.shape)) * BytesPerElement(value.dtype);
    }
  }
  for (int s : output_stages()) {
    const Value& value = values_[stage_value(s)];
    bytes += static_cast<double>(NumElements(value.shape)) * BytesPerElement(value.dtype);
  }
  return bytes;
}

}  // namespace schedfarm
