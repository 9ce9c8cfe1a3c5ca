// PipelineGraph: a validated PipelineSpec with its names resolved into a DAG.
// Build() is the one validator of pipelines: every reader of specs (YAML, ONNX,
// protobuf from the wire, the generator) goes through it, so a spec that passes is
// safe to lower. Immutable after Build(); safe to share across threads.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "common/status.h"
#include "pipeline/ops.h"
#include "schedfarm.pb.h"

namespace schedfarm {

// Limits that keep a pipeline within what Halide and a benchmark host can run.
struct PipelineLimits {
  int max_rank = 6;
  int64_t max_tensor_elements = int64_t{1} << 31;   // Halide's 32-bit buffer indexing
  int64_t max_total_bytes = int64_t{8} << 30;       // all tensors together
  int max_stages = 4096;
};

// A tensor of the graph: an input, a parameter or a stage's output.
struct Value {
  enum class Kind { kInput, kParameter, kStage };
  Kind kind = Kind::kInput;
  int index = 0;  // into spec.inputs(), spec.parameters() or spec.stages()
  std::string name;
  DataType dtype = DATA_TYPE_UNSPECIFIED;
  Shape shape;
};

class PipelineGraph {
 public:
  // Validates `spec` and resolves it. Errors name the pipeline, the stage (or input,
  // parameter, output) and what is wrong: unknown or duplicate names, dangling
  // references, cycles (listing the stages on the cycle), bad attributes, shape
  // mismatches between declared and inferred shapes, zero/negative extents, sizes
  // over `limits`, raw_data of the wrong length.
  static StatusOr<PipelineGraph> Build(PipelineSpec spec, const PipelineLimits& limits = {});

  const PipelineSpec& spec() const { return spec_; }
  const std::vector<Value>& values() const { return values_; }
  const Value& value(int id) const { return values_[id]; }
  // Value id of a name, or -1.
  int FindValue(const std::string& name) const;

  int num_stages() const { return spec_.stages_size(); }
  const Stage& stage(int s) const { return spec_.stages(s); }
  int stage_value(int s) const { return stage_values_[s]; }
  // Value ids read by stage s, in Stage.inputs order.
  const std::vector<int>& stage_inputs(int s) const { return stage_inputs_[s]; }
  // Shapes of the inputs of stage s, in order.
  std::vector<Shape> input_shapes(int s) const;
  // Stages that read the output of stage s.
  const std::vector<int>& consumers(int s) const { return consumers_[s]; }
  // Stages in a topological order (producers before consumers); deterministic.
  const std::vector<int>& topological_order() const { return topo_order_; }
  // Stage indices of the pipeline outputs, in spec.outputs order.
  const std::vector<int>& output_stages() const { return output_stages_; }

  StageLoops loops(int s) const { return LoopNestOf(stage(s), input_shapes(s)); }
  StageCost cost(int s) const { return CostOf(stage(s), input_shapes(s)); }
  // Sum of the stages' costs.
  StageCost total_cost() const;
  // The bytes the pipeline cannot avoid moving: its inputs and weights read once and its
  // outputs written once (the bandwidth roofline's numerator).
  double compulsory_bytes() const;

 private:
  PipelineSpec spec_;
  std::vector<Value> values_;
  std::map<std::string, int> value_by_name_;
  std::vector<int> stage_values_;
  std::vector<std::vector<int>> stage_inputs_;
  std::vector<std::vector<int>> consumers_;
  std::vector<int> topo_order_;
  std::vector<int> output_stages_;
};

}  // namespace schedfarm
