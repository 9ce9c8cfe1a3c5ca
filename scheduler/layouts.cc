#include "scheduler/layouts.h"

namespace schedfarm {

StatusOr<PackedWeights> PackableWeights(const PipelineGraph& graph, int s) {
  const Stage& stage = graph.stage(s);
  const std::string where = "stage '" + stage.name() + "': pack_weights";
  if (stage.op() != CONV && !(stage.op() == MATMUL && stage.attrs().trans_b())) {
    return Status::Error(where + ": only a CONV's filter or the b of a MATMUL with trans_b " +
                         "is packed (its " + OpKind_Name(stage.op()) + " reads no such weights)");
  }
  const int weights = graph.stage_inputs(s)[1];
  const Value& value = graph.value(weights);
  if (value.kind != Value::Kind::kParameter) {
    return Status::Error(where + ": its weights '" + value.name + "' are " +
                         (value.kind == Value::Kind::kInput ? "a pipeline input" : "a stage") +
                         ", not a constant: only parameters are packed when the pipeline is " +
                         "loaded");
  }
  for (int other = 0; other < graph.num_stages(); ++other) {
    if (other == s) continue;
    for (int input : graph.stage_inputs(other)) {
      if (input == weights) {
        return Status::Error(where + ": its weights '" + value.name + "' are also read by " +
                             "stage '" + graph.stage(other).name() +
                             "': a packed layout serves one reader");
      }
    }
  }
  const int rank = static_cast<int>(value.shape.size());
  const int axis = stage.op() == CONV ? 0 : rank - 2;
  PackedWeights packed;
  packed.parameter = value.index;
  packed.storage_order = StorageOrderWithInnermost(rank, rank - 1 - axis);
  return packed;
}

Status PaddedCopyAllowed(const PipelineGraph& graph, int s, ComputeLocation producer) {
  const Stage& stage = graph.stage(s);
  const std::string where = "stage '" + stage.name() + "': padded_copy";
  if (stage.op() != CONV) {
    return Status::Error(where + ": only a CONV reads a zero-padded input (its " +
                         OpKind_Name(stage.op()) + " does not)");
  }
  const Value& input = graph.value(graph.stage_inputs(s)[0]);
  if (ClampedAxes(stage, 0, graph.input_shapes(s)).empty()) {
    return Status::Error(where + ": its input '" + input.name + "' is not padded");
  }
  if (input.kind == Value::Kind::kStage && producer != ROOT) {
    return Status::Error(where + ": its input '" + input.name + "' is a stage computed " +
                         (producer == COMPUTE_LOCATION_UNSPECIFIED
                              ? std::string("where the space decides")
                              : ComputeLocation_Name(producer)) +
                         ", not a pipeline input or a stage at root: the copy, at root, must " +
                         "follow it");
  }
  if (input.kind == Value::Kind::kParameter) {
    return Status::Error(where + ": its input '" + input.name + "' is a parameter, not a " +
                         "pipeline input or a stage at root");
  }
  return Status::Ok();
}

std::vector<int> StorageOrderWithInnermost(int rank, int innermost) {
  std::vector<int> order = {innermost};
  for (int d = 0; d < rank; ++d) {
    if (d != innermost) order.push_back(d);
  }
  return order;
}

}  // namespace schedfarm
