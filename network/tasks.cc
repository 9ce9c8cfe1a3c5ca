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

// The task's stages as a pipeline; `outputs` in the order given. Its weights are the
// network's with `network_weights`, else random (kTaskWeightSeed).
PipelineSpec TaskSpec(const PipelineGraph& network, const NetworkTask& task, int index,
                      const std::vector<std::string>& outputs, bool network_weights = false) {
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
      if (value.kind == Value::Kind::kParameter && network_weights) {
        *spec.add_parameters() = net.parameters(value.index);
        continue;
      }
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

// "conv [1,64,56,56] + add + relu"; a fused task's anchors each start a part, after " > ".
std::string Summary(const PipelineGraph& network, const NetworkTask& task) {
  std::string text;
  for (int s : task.stages) {
    const Stage& stage = network.stage(s);
    const bool starts = std::count(task.anchors.begin(), task.anchors.end(), s) > 0;
    if (text.empty() || (starts && task.anchors.size() > 1)) {
      text += (text.empty() ? "" : " > ") + OpDisplayName(stage) + " " +
              ShapeToString(Shape(stage.shape().begin(), stage.shape().end()));
    } else {
      text += " + " + OpDisplayName(stage);
    }
  }
  return text;
}

// Whether stage `s` is a convolution or a pool: the anchors a fused task chains.
bool Fusible(const PipelineGraph& network, int s) {
  return s >= 0 && (network.stage(s).op() == CONV || network.stage(s).op() == POOL);
}

// The tasks the fused task `block` (fine tasks, block[t] == head) grows by, or none: the
// tasks reading its outputs, when each reader is their anchor (a convolution or a pool),
// no output is a network output, and each of those tasks reads nothing but the block's
// outputs and tasks before the head (so the fused task can take the head's place).
std::vector<int> NextTasks(const PipelineGraph& network, const std::vector<NetworkTask>& tasks,
                           const std::vector<int>& task_of_stage, const std::vector<int>& block,
                           int head) {
  const std::vector<int>& network_outputs = network.output_stages();
  std::set<int> next;
  for (size_t t = head; t < tasks.size(); ++t) {
    if (block[t] != head) continue;
    for (int s : tasks[t].stages) {
      for (int c : network.consumers(s)) {
        const int reader = task_of_stage[c];
        if (block[reader] == head) continue;
        if (block[reader] >= 0 || c != tasks[reader].anchor || !Fusible(network, c)) return {};
        next.insert(reader);
      }
      if (std::count(network_outputs.begin(), network_outputs.end(), s)) return {};
    }
  }
  for (int t : next) {
    for (int s : tasks[t].stages) {
      for (int v : network.stage_inputs(s)) {
        const Value& value = network.value(v);
        if (value.kind != Value::Kind::kStage) continue;
        const int from = task_of_stage[value.index];
        if (from >= head && block[from] != head && !next.count(from)) return {};
      }
    }
  }
  return std::vector<int>(next.begin(), next.end());
}

// The fused tasks of FUSION_BLOCKS (PartitionNetwork) from one task per anchor, each in
// the place of its first; task_of_stage is updated.
std::vector<NetworkTask> FusedTasks(const PipelineGraph& network,
                                    const std::vector<NetworkTask>& tasks,
                                    std::vector<int>* task_of_stage) {
  const int n = static_cast<int>(tasks.size());
  std::vector<int> block(n, -1);  // fine task -> the first task of its fused task
  for (int head = 0; head < n; ++head) {
    if (block[head] >= 0) continue;
    block[head] = head;
    if (!Fusible(network, tasks[head].anchor)) continue;
    for (int anchors = 1;;) {
      const std::vector<int> next = NextTasks(network, tasks, *task_of_stage, block, head);
      if (next.empty() || anchors + static_cast<int>(next.size()) > kMaxFusedAnchors) break;
      for (int t : next) block[t] = head;
      anchors += static_cast<int>(next.size());
    }
  }
  std::vector<int> position(network.num_stages());
  const std::vector<int>& order = network.topological_order();
  for (size_t i = 0; i < order.size(); ++i) position[order[i]] = static_cast<int>(i);
  auto topological = [&](int a, int b) { return position[a] < position[b]; };
  std::vector<NetworkTask> fused;
  std::vector<int> index_of_head(n, -1);
  for (int head = 0; head < n; ++head) {
    if (block[head] != head) continue;
    NetworkTask task;
    task.anchor = tasks[head].anchor;
    for (int t = head; t < n; ++t) {
      if (block[t] != head) continue;
      task.stages.insert(task.stages.end(), tasks[t].stages.begin(), tasks[t].stages.end());
      task.anchors.insert(task.anchors.end(), tasks[t].anchors.begin(), tasks[t].anchors.end());
    }
    std::sort(task.stages.begin(), task.stages.end(), topological);
    std::sort(task.anchors.begin(), task.anchors.end(), topological);
    index_of_head[head] = static_cast<int>(fused.size());
    fused.push_back(std::move(task));
  }
  for (int& t : *task_of_stage) t = index_of_head[block[t]];
  return fused;
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

namespace {

// The kind of anchor stage `s` of a task (TaskKind).
std::string AnchorKind(const PipelineGraph& task, int s) {
  const Stage& stage = task.stage(s);
  const std::vector<int>& inputs = task.stage_inputs(s);
  switch (stage.op()) {
    case CONV: {
      const int64_t groups = std::max<int64_t>(1, stage.attrs().groups());
      const int64_t channels = task.value(inputs[0]).shape[1];
      return groups == 1 ? "conv" : groups == channels ? "depthwise conv" : "grouped conv";
    }
    case MATMUL: {
      bool computed = true;
      for (int i = 0; i < 2; ++i) computed &= task.value(inputs[i]).kind != Value::Kind::kParameter;
      return computed ? "batched matmul" : "matmul";
    }
    case POOL:
      return "pool";
    default: {  // REDUCE
      const Shape& shape = task.value(inputs[0]).shape;
      std::vector<int64_t> spatial;
      for (size_t d = 2; d < shape.size(); ++d) spatial.push_back(static_cast<int64_t>(d));
      const std::vector<int64_t> axes(stage.attrs().axes().begin(), stage.attrs().axes().end());
      return shape.size() == 4 && axes == spatial ? "global pool" : "reduction";
    }
  }
}

}  // namespace

std::string TaskKind(const PipelineGraph& task) {
  std::vector<std::string> anchors;
  bool concat = false;
  for (int s : task.topological_order()) {
    concat |= task.stage(s).op() == CONCAT;
    if (IsAnchorOp(task.stage(s).op())) anchors.push_back(AnchorKind(task, s));
  }
  std::string kind = anchors.empty() ? "elementwise" : anchors.size() == 1 ? anchors[0] : "fused";
  for (size_t i = 0; anchors.size() > 1 && i < anchors.size(); ++i) {
    kind += (i == 0 ? " " : " > ") + anchors[i];
  }
  return concat ? kind + " into concat" : kind;
}

StatusOr<NetworkPartition> PartitionNetwork(const PipelineGraph& network, NetworkFusion fusion) {
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
      if (task.anchor >= 0) task.anchors = {s};
      partition.tasks.push_back(task);
      newest = static_cast<int>(partition.tasks.size()) - 1;
    }
    partition.task_of_stage[s] = newest;
    partition.tasks[newest].stages.push_back(s);
  }
  if (fusion == FUSION_BLOCKS) {
    partition.tasks = FusedTasks(network, partition.tasks, &partition.task_of_stage);
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

PipelineSpec OccurrenceSpec(const PipelineGraph& network, const NetworkPartition& partition,
                            int t) {
  const NetworkTask& task = partition.tasks[t];
  return TaskSpec(network, task, t, task.outputs, /*network_weights=*/true);
}

}  // namespace schedfarm
