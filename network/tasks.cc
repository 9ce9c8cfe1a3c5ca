#include "network/tasks.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <set>

#include "network/channels_first.h"
#include "pipeline/spec.h"
#include "pipeline/tensor.h"

namespace schedfarm {
namespace {

// Weights of a task pipeline: the same for every task, so that tasks differing only
// in their weights' values have one id.
constexpr uint64_t kTaskWeightSeed = 1;
constexpr double kTaskWeightScale = 0.1;

// The task's stages as a pipeline; `outputs` in the order given.
PipelineSpec TaskSpec(const PipelineGraph& network, const NetworkTask& task, int index,
                      const std::vector<std::string>& outputs) {
  const PipelineSpec& net = network.spec();
  PipelineSpec spec;
  spec.set_name(net.name() + ".task" + std::to_string(index));
  spec.set_source("task " + std::to_string(index) + " of " + net.source());
  spec.set_boundary_layout(net.boundary_layout());
  std::set<int> in_task(task.stages.begin(), task.stages.end());
  std::set<int> declared;
  for (int s : task.stages) {
    for (int v : network.stage_inputs(s)) {
      const Value& value = network.value(v);
      if (value.kind == Value::Kind::kStage && in_task.count(value.index)) continue;
      if (!declared.insert(v).second) continue;
      TensorDecl* decl;
      if (value.kind == Value::Kind::kParameter) {
        Parameter* p = spec.add_parameters();
        p->mutable_random()->set_seed(kTaskWeightSeed);
        p->mutable_random()->set_scale(kTaskWeightScale);
        decl = p->mutable_tensor();
      } else {
        decl = spec.add_inputs();
      }
      decl->set_name(value.name);
      decl->set_dtype(value.dtype);
      for (int64_t e : value.shape) decl->add_shape(e);
    }
    *spec.add_stages() = network.stage(s);
  }
  for (const std::string& out : outputs) spec.add_outputs(out);
  return spec;
}

std::string Summary(const PipelineGraph& network, const NetworkTask& task) {
  std::string text;
  for (int s : task.stages) {
    const Stage& stage = network.stage(s);
    if (text.empty()) {
      text = OpDisplayName(stage) + " " +
             ShapeToString(Shape(stage.shape().begin(), stage.shape().end()));
    } else {
      text += " + " + OpDisplayName(stage);
    }
  }
  return text;
}

}  // namespace

StatusOr<PipelineSpec> NetworkWithRandomWeights(const PipelineSpec& network) {
  PipelineSpec random = network;
  for (int i = 0; i < random.parameters_size(); ++i) {
    Parameter& p = *random.mutable_parameters(i);
    if (p.init_case() != Parameter::kRawData) continue;
    StatusOr<HostTensor> values = MaterializeParameter(p);
    if (!values.ok()) return values.status().WithContext("parameter '" + p.tensor().name() + "'");
    double sum = 0, squares = 0;
    for (double v : values->data) sum += v;
    const double n = std::max<double>(1, static_cast<double>(values->data.size()));
    const double mean = sum / n;
    for (double v : values->data) squares += (v - mean) * (v - mean);
    // Uniform in [mean - a, mean + a] has the RMS deviation a / sqrt(3).
    const double scale = std::sqrt(3 * squares / n);
    p.mutable_random()->set_seed(kTaskWeightSeed + 1 + static_cast<uint64_t>(i));
    p.mutable_random()->set_scale(scale);
    p.mutable_random()->set_offset(mean);
  }
  return random;
}

StatusOr<PipelineSpec> NetworkWithTileCopies(const PipelineSpec& network) {
  SCHEDFARM_ASSIGN_OR_RETURN(PipelineGraph graph, PipelineGraph::Build(network));
  SCHEDFARM_ASSIGN_OR_RETURN(NetworkPartition partition, PartitionNetwork(graph));
  std::set<std::string> names;
  for (const TensorDecl& input : network.inputs()) names.insert(input.name());
  for (const Parameter& p : network.parameters()) names.insert(p.tensor().name());
  for (const Stage& stage : network.stages()) names.insert(stage.name());
  std::map<std::string, std::string> copy_of;  // anchor -> its copy
  for (const NetworkTask& task : partition.tasks) {
    if (task.anchor < 0) continue;
    const Stage& anchor = graph.stage(task.anchor);
    const std::vector<int>& readers = graph.consumers(task.anchor);
    const bool moved = std::any_of(readers.begin(), readers.end(), [&](int r) {
      const OpKind op = graph.stage(r).op();
      return op != UNARY && op != BINARY && op != CONCAT;
    });
    if ((anchor.op() != CONV && anchor.op() != MATMUL && anchor.op() != POOL) ||
        (!moved && !std::count(task.outputs.begin(), task.outputs.end(), anchor.name()))) {
      continue;
    }
    std::string name = anchor.name() + "_out";
    while (names.count(name)) name += "_";
    names.insert(name);
    copy_of[anchor.name()] = name;
  }
  PipelineSpec out = network;
  out.clear_stages();
  for (const Stage& stage : network.stages()) {
    Stage* s = out.add_stages();
    *s = stage;
    for (std::string& input : *s->mutable_inputs()) {
      const auto it = copy_of.find(input);
      if (it != copy_of.end()) input = it->second;
    }
    const auto it = copy_of.find(stage.name());
    if (it == copy_of.end()) continue;
    Stage* copy = out.add_stages();
    copy->set_name(it->second);
    copy->set_op(UNARY);
    copy->mutable_attrs()->set_unary(IDENTITY);
    copy->add_inputs(stage.name());
    copy->set_dtype(stage.dtype());
    *copy->mutable_shape() = stage.shape();
    copy->set_label("tile_copy");
  }
  for (std::string& output : *out.mutable_outputs()) {
    const auto it = copy_of.find(output);
    if (it != copy_of.end()) output = it->second;
  }
  return out;
}

StatusOr<PipelineSpec> TunedNetwork(const PipelineSpec& network) {
  SCHEDFARM_ASSIGN_OR_RETURN(const PipelineSpec channels_first, NetworkChannelsFirst(network));
  return NetworkWithTileCopies(channels_first);
}

StatusOr<PipelineSpec> TimedNetwork(const PipelineSpec& imported, BoundaryLayout layout) {
  SCHEDFARM_ASSIGN_OR_RETURN(const PipelineSpec tuned, TunedNetwork(imported));
  SCHEDFARM_ASSIGN_OR_RETURN(PipelineSpec timed, NetworkWithRandomWeights(tuned));
  timed.set_boundary_layout(layout);
  return timed;
}

bool IsAnchorOp(OpKind op) {
  return op == CONV || op == MATMUL || op == POOL || op == REDUCE;
}

std::string TaskKind(const PipelineGraph& task) {
  std::string kind = "elementwise";
  bool concat = false;
  for (int s : task.topological_order()) {
    const Stage& stage = task.stage(s);
    concat |= stage.op() == CONCAT;
    if (kind != "elementwise" || !IsAnchorOp(stage.op())) continue;
    const std::vector<int>& inputs = task.stage_inputs(s);
    switch (stage.op()) {
      case CONV: {
        const int64_t groups = std::max<int64_t>(1, stage.attrs().groups());
        const int64_t channels = task.value(inputs[0]).shape[1];
        kind = groups == 1 ? "conv" : groups == channels ? "depthwise conv" : "grouped conv";
        break;
      }
      case MATMUL: {
        bool computed = true;
        for (int i = 0; i < 2; ++i) {
          computed &= task.value(inputs[i]).kind != Value::Kind::kParameter;
        }
        kind = computed ? "batched matmul" : "matmul";
        break;
      }
      case POOL:
        kind = "pool";
        break;
      default: {  // REDUCE
        const Shape& shape = task.value(inputs[0]).shape;
        std::vector<int64_t> spatial;
        for (size_t d = 2; d < shape.size(); ++d) spatial.push_back(static_cast<int64_t>(d));
        const std::vector<int64_t> axes(stage.attrs().axes().begin(), stage.attrs().axes().end());
        kind = shape.size() == 4 && axes == spatial ? "global pool" : "reduction";
      }
    }
  }
  return concat ? kind + " into concat" : kind;
}

StatusOr<NetworkPartition> PartitionNetwork(const PipelineGraph& network) {
  NetworkPartition partition;
  partition.task_of_stage.assign(network.num_stages(), -1);
  for (int s : network.topological_order()) {
    int newest = -1;
    for (int v : network.stage_inputs(s)) {
      const Value& value = network.value(v);
      if (value.kind == Value::Kind::kStage) {
        newest = std::max(newest, partition.task_of_stage[value.index]);
      }
    }
    if (IsAnchorOp(network.stage(s).op()) || newest < 0) {
      NetworkTask task;
      task.anchor = IsAnchorOp(network.stage(s).op()) ? s : -1;
      partition.tasks.push_back(task);
      newest = static_cast<int>(partition.tasks.size()) - 1;
    }
    partition.task_of_stage[s] = newest;
    partition.tasks[newest].stages.push_back(s);
  }

  const std::vector<int>& network_outputs = network.output_stages();
  std::map<std::string, int> distinct_by_id;
  std::vector<std::string> boundaries;  // task outputs that are not network outputs
  for (int t = 0; t < static_cast<int>(partition.tasks.size()); ++t) {
    NetworkTask& task = partition.tasks[t];
    for (int s : task.stages) {
      const bool network_output =
          std::find(network_outputs.begin(), network_outputs.end(), s) != network_outputs.end();
      bool read_outside = false;
      for (int c : network.consumers(s)) read_outside |= partition.task_of_stage[c] != t;
      if (network_output || read_outside) task.outputs.push_back(network.stage(s).name());
      if (read_outside && !network_output) boundaries.push_back(network.stage(s).name());
    }
    // Outputs in canonical order, so that equal tasks list them alike.
    const std::string where = "task " + std::to_string(t) + " (first stage '" +
                              network.stage(task.stages.front()).name() + "')";
    StatusOr<PipelineGraph> first = PipelineGraph::Build(TaskSpec(network, task, t, task.outputs));
    if (!first.ok()) return Status::Error(where + ": " + first.status().message());
    std::vector<std::string> ordered;
    for (int s : CanonicalStageOrder(*first)) {
      const std::string& name = first->stage(s).name();
      if (std::count(task.outputs.begin(), task.outputs.end(), name)) ordered.push_back(name);
    }
    task.outputs = ordered;
    StatusOr<PipelineGraph> graph = PipelineGraph::Build(TaskSpec(network, task, t, ordered));
    if (!graph.ok()) return Status::Error(where + ": " + graph.status().message());
    for (int s : CanonicalStageOrder(*graph)) task.canonical.push_back(graph->stage(s).name());

    const std::string id = PipelineId(*graph);
    auto [it, added] = distinct_by_id.emplace(id, static_cast<int>(partition.distinct.size()));
    if (added) {
      DistinctTask distinct;
      distinct.pipeline_id = id;
      distinct.spec = graph->spec();
      distinct.summary = Summary(network, task);
      partition.distinct.push_back(std::move(distinct));
    }
    task.distinct = it->second;
    partition.distinct[it->second].occurrences.push_back(t);
  }

  partition.assembly = network.spec();
  partition.assembly.set_name(network.spec().name() + ".assembled");
  partition.assembly.set_source("assembled " + network.spec().source());
  partition.assembly.set_checked_outputs(network.spec().outputs_size());
  for (const std::string& name : boundaries) partition.assembly.add_outputs(name);
  return partition;
}

}  // namespace schedfarm
