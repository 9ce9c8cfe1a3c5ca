#include "network/channels_first.h"

#include <algorithm>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "pipeline/graph.h"
#include "pipeline/tensor.h"

namespace schedfarm {
namespace {

const std::vector<int64_t> kToChannelsLast = {0, 2, 3, 1};
const std::vector<int64_t> kToChannelsFirst = {0, 3, 1, 2};

bool IsTransposeBy(const Stage& stage, const std::vector<int64_t>& perm) {
  return stage.op() == TRANSPOSE && stage.shape_size() == 4 &&
         std::vector<int64_t>(stage.attrs().perm().begin(), stage.attrs().perm().end()) == perm;
}

// An NHWC shape as NCHW.
Shape ChannelsFirst(const Shape& nhwc) { return {nhwc[0], nhwc[3], nhwc[1], nhwc[2]}; }

// A parameter that varies along the last axis only ([C], [1, 1, 1, C]...), as an
// elementwise operand of an NHWC tensor.
bool VariesAlongChannelsOnly(const Shape& shape) {
  if (shape.size() > 4) return false;
  for (size_t d = 0; d + 1 < shape.size(); ++d) {
    if (shape[d] != 1) return false;
  }
  return true;
}

// One island: its opening transpose, its stages and its closing transposes.
struct Island {
  int opening = -1;
  std::set<int> stages;
  std::set<int> closing;
};

class Rewriter {
 public:
  explicit Rewriter(const PipelineGraph& graph) : graph_(graph) {
    for (const std::string& output : graph.spec().outputs()) outputs_.insert(output);
  }

  // The island opened by stage `opening`, or none when a stage of it cannot be rewritten.
  std::optional<Island> IslandAt(int opening) const {
    Island island;
    island.opening = opening;
    std::vector<int> pending = graph_.consumers(opening);
    while (!pending.empty()) {
      const int s = pending.back();
      pending.pop_back();
      if (island.stages.count(s) || island.closing.count(s)) continue;
      if (IsTransposeBy(graph_.stage(s), kToChannelsFirst)) {
        island.closing.insert(s);
        continue;
      }
      if (!Rewritable(s) || outputs_.count(graph_.stage(s).name())) return std::nullopt;
      island.stages.insert(s);
      for (int c : graph_.consumers(s)) pending.push_back(c);
    }
    // Every stage of it reads the opening transpose, the island or parameters only.
    const auto inside = [&](int v) {
      const Value& value = graph_.value(v);
      return value.kind == Value::Kind::kStage &&
             (value.index == opening || island.stages.count(value.index));
    };
    for (int s : island.stages) {
      const Stage& stage = graph_.stage(s);
      const std::vector<int>& inputs = graph_.stage_inputs(s);
      for (size_t i = 0; i < inputs.size(); ++i) {
        if (inside(inputs[i])) continue;
        const Value& value = graph_.value(inputs[i]);
        if (value.kind != Value::Kind::kParameter) return std::nullopt;
        if (stage.op() == BINARY && !VariesAlongChannelsOnly(value.shape)) return std::nullopt;
        if (stage.op() == MATMUL && i == 0) return std::nullopt;
      }
      if (stage.op() == MATMUL && !inside(inputs[0])) return std::nullopt;
    }
    for (int s : island.closing) {
      if (!inside(graph_.stage_inputs(s)[0])) return std::nullopt;
    }
    return island;
  }

  // `network` with the islands rewritten.
  StatusOr<PipelineSpec> Rewrite(const std::vector<Island>& islands) {
    std::map<std::string, std::string> renamed;  // a dropped transpose -> what replaces it
    std::set<int> in_island;
    for (const Island& island : islands) {
      const Stage& opening = graph_.stage(island.opening);
      renamed[opening.name()] = opening.inputs(0);
      for (int s : island.closing) {
        const std::string& read = graph_.stage(s).inputs(0);
        const auto through = renamed.find(read);
        renamed[graph_.stage(s).name()] = through == renamed.end() ? read : through->second;
      }
      in_island.insert(island.stages.begin(), island.stages.end());
    }
    const auto resolve = [&](const std::string& name) {
      const auto it = renamed.find(name);
      return it == renamed.end() ? name : it->second;
    };
    PipelineSpec out = graph_.spec();
    out.clear_stages();
    for (int s = 0; s < graph_.num_stages(); ++s) {
      if (renamed.count(graph_.stage(s).name())) continue;  // a dropped transpose
      Stage stage = graph_.stage(s);
      for (std::string& input : *stage.mutable_inputs()) input = resolve(input);
      if (in_island.count(s)) SCHEDFARM_RETURN_IF_ERROR(RewriteStage(s, &stage, &out));
      *out.add_stages() = std::move(stage);
    }
    for (std::string& output : *out.mutable_outputs()) output = resolve(output);
    return out;
  }

 private:
  bool Rewritable(int s) const {
    const Stage& stage = graph_.stage(s);
    if (stage.shape_size() != 4) return false;
    switch (stage.op()) {
      case UNARY:
      case BINARY:
        return true;
      case REDUCE: {
        const auto& axes = stage.attrs().axes();
        return stage.attrs().keepdims() && axes.size() == 1 && (axes[0] == 3 || axes[0] == -1);
      }
      case MATMUL: {
        const std::vector<int>& inputs = graph_.stage_inputs(s);
        const Shape& b = graph_.value(inputs[1]).shape;
        const bool bias_ok =
            inputs.size() == 2 || graph_.value(inputs[2]).shape == Shape{b.size() == 2 ? b[1] : 0};
        return !stage.attrs().trans_a() && !stage.attrs().trans_b() && b.size() == 2 &&
               EffectiveAlpha(stage) == 1 && EffectiveBeta(stage) == 1 && bias_ok;
      }
      default:
        return false;
    }
  }

  // A parameter of the network under a new name with `shape` and `values` (row-major).
  std::string AddParameter(const Parameter& from, const Shape& shape,
                           const std::vector<double>& values, PipelineSpec* out) {
    std::string name = from.tensor().name() + "_nchw";
    while (graph_.FindValue(name) >= 0 || added_.count(name)) name += "_";
    added_.insert(name);
    Parameter* p = out->add_parameters();
    p->mutable_tensor()->set_name(name);
    p->mutable_tensor()->set_dtype(from.tensor().dtype());
    for (int64_t e : shape) p->mutable_tensor()->add_shape(e);
    p->set_raw_data(EncodeRawData(values, from.tensor().dtype()));
    return name;
  }

  StatusOr<std::string> ChannelsParameter(int value_id, PipelineSpec* out) {
    const auto done = channel_parameters_.find(value_id);
    if (done != channel_parameters_.end()) return done->second;
    const Parameter& p = graph_.spec().parameters(graph_.value(value_id).index);
    const Shape& shape = graph_.value(value_id).shape;
    std::string name = p.tensor().name();
    if (NumElements(shape) > 1) {  // a constant stays as it is
      SCHEDFARM_ASSIGN_OR_RETURN(const HostTensor values, MaterializeParameter(p));
      name = AddParameter(p, {1, shape.back(), 1, 1}, values.data, out);
    }
    channel_parameters_[value_id] = name;
    return name;
  }

  Status RewriteStage(int s, Stage* stage, PipelineSpec* out) {
    const Shape nhwc(stage->shape().begin(), stage->shape().end());
    stage->clear_shape();
    for (int64_t e : ChannelsFirst(nhwc)) stage->add_shape(e);
    const std::vector<int>& inputs = graph_.stage_inputs(s);
    switch (stage->op()) {
      case REDUCE:
        stage->mutable_attrs()->set_axes(0, 1);
        break;
      case BINARY:
        for (size_t i = 0; i < inputs.size(); ++i) {
          if (graph_.value(inputs[i]).kind != Value::Kind::kParameter) continue;
          SCHEDFARM_ASSIGN_OR_RETURN(*stage->mutable_inputs(static_cast<int>(i)),
                                     ChannelsParameter(inputs[i], out));
        }
        break;
      case MATMUL: {
        // a [N, H, W, C_in] x b [C_in, C_out] as a 1x1 convolution by b transposed.
        const Parameter& b = graph_.spec().parameters(graph_.value(inputs[1]).index);
        SCHEDFARM_ASSIGN_OR_RETURN(const HostTensor values, MaterializeParameter(b));
        const int64_t c_in = values.shape[0], c_out = values.shape[1];
        std::vector<double> weights(values.data.size());
        for (int64_t i = 0; i < c_in; ++i) {
          for (int64_t o = 0; o < c_out; ++o) weights[o * c_in + i] = values.data[i * c_out + o];
        }
        stage->set_inputs(1, AddParameter(b, {c_out, c_in, 1, 1}, weights, out));
        stage->set_op(CONV);
        Attributes conv;
        for (int d = 0; d < 2; ++d) {
          conv.add_strides(1);
          conv.add_dilations(1);
          conv.add_pads(0);
          conv.add_pads(0);
        }
        conv.set_groups(1);
        *stage->mutable_attrs() = conv;
        break;
      }
      default:
        break;
    }
    return Status::Ok();
  }

  const PipelineGraph& graph_;
  std::set<std::string> outputs_;
  std::map<int, std::string> channel_parameters_;  // value id -> its [1, C, 1, 1] form
  std::set<std::string> added_;
};

}  // namespace

StatusOr<PipelineSpec> NetworkChannelsFirst(const PipelineSpec& network) {
  SCHEDFARM_ASSIGN_OR_RETURN(PipelineGraph graph, PipelineGraph::Build(network));
  Rewriter rewriter(graph);
  std::vector<Island> islands;
  for (int s = 0; s < graph.num_stages(); ++s) {
    if (!IsTransposeBy(graph.stage(s), kToChannelsLast)) continue;
    if (graph.value(graph.stage_inputs(s)[0]).shape.size() != 4) continue;
    if (std::optional<Island> island = rewriter.IslandAt(s)) islands.push_back(std::move(*island));
  }
  if (islands.empty()) return network;
  SCHEDFARM_ASSIGN_OR_RETURN(PipelineSpec rewritten, rewriter.Rewrite(islands));
  // Parameters no stage reads any more (a matmul's weights, now transposed) are dropped.
  std::set<std::string> read;
  for (const Stage& stage : rewritten.stages())
    read.insert(stage.inputs().begin(), stage.inputs().end());
  PipelineSpec out = rewritten;
  out.clear_parameters();
  for (const Parameter& p : rewritten.parameters()) {
    if (read.count(p.tensor().name())) *out.add_parameters() = p;
  }
  SCHEDFARM_RETURN_IF_ERROR(PipelineGraph::Build(out).status());
  return out;
}

}  // namespace schedfarm
