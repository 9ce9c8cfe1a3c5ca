#include "scheduler/schedule_plan.h"

#include <algorithm>
#include <cstdint>
#include <limits>
#include <map>
#include <set>

#include "pipeline/spec.h"
#include "scheduler/schedule_space.h"

namespace schedfarm {
namespace {

// One loop dimension of a definition, before splits.
struct Dim {
  std::string name;
  int64_t extent = 0;
  bool reduction = false;
};

// The dims of the pure definition, or of the update (pure dims, then reduction dims).
std::vector<Dim> DefinitionDims(const StageLoops& loops, bool update) {
  std::vector<Dim> dims;
  for (const LoopDim& d : loops.pure) dims.push_back({d.name, d.extent, false});
  if (update) {
    for (const LoopDim& d : loops.reduction) dims.push_back({d.name, d.extent, true});
  }
  return dims;
}

std::string DefinitionName(bool update) { return update ? "update" : "pure definition"; }

std::string DimList(const std::vector<Dim>& dims) {
  std::string out;
  for (const Dim& d : dims) out += (out.empty() ? "" : ", ") + d.name;
  return out;
}

// A definition's dims with the factors of their splits (innermost first).
class SplitDims {
 public:
  SplitDims(std::vector<Dim> dims, const DefinitionSchedule& def) : dims_(std::move(dims)) {
    for (const DimSplit& split : def.splits()) {
      factors_[split.dim()].assign(split.factors().begin(), split.factors().end());
    }
  }

  const Dim* Find(const std::string& name) const {
    for (const Dim& d : dims_) {
      if (d.name == name) return &d;
    }
    return nullptr;
  }
  const std::vector<Dim>& dims() const { return dims_; }
  const std::vector<int64_t>& Factors(const std::string& dim) const {
    static const std::vector<int64_t> kNone;
    const auto it = factors_.find(dim);
    return it == factors_.end() ? kNone : it->second;
  }
  int Levels(const std::string& dim) const { return static_cast<int>(Factors(dim).size()) + 1; }

  // Extent of one level: the factor for inner levels, the rest for level 0.
  int64_t LevelExtent(const Dim& dim, int level) const {
    const std::vector<int64_t>& factors = Factors(dim.name);
    const int levels = static_cast<int>(factors.size()) + 1;
    if (level > 0) return factors[levels - 1 - level];
    int64_t extent = dim.extent;
    for (int64_t f : factors) extent = (extent + f - 1) / f;
    return extent;
  }

 private:
  std::vector<Dim> dims_;
  std::map<std::string, std::vector<int64_t>> factors_;
};

// The default location of an undecided stage is INLINE where legal.
bool InlinedByDefault(const PipelineGraph& graph, int stage) {
  const std::vector<int>& outputs = graph.output_stages();
  return graph.loops(stage).reduction.empty() &&
         std::find(outputs.begin(), outputs.end(), stage) == outputs.end();
}

PlanCall MakeCall(PlanCall::Kind kind, std::vector<PlanVar> vars = {}) {
  PlanCall call;
  call.kind = kind;
  call.vars = std::move(vars);
  return call;
}

class Planner {
 public:
  explicit Planner(const PipelineGraph& graph) : graph_(graph) {}

  StatusOr<std::vector<StagePlan>> Plan(const ScheduleSpec& spec) {
    decisions_.assign(graph_.num_stages(), nullptr);
    for (const StageSchedule& decision : spec.stages()) {
      const int s = FindStage(decision.stage());
      if (s < 0) {
        return Status::Error("schedule of pipeline '" + graph_.spec().name() +
                             "': no stage named '" + decision.stage() + "'");
      }
      if (decisions_[s] != nullptr) {
        return Status::Error(Where(s) + ": decided twice");
      }
      decisions_[s] = &decision;
    }
    std::vector<StagePlan> plans;
    const std::vector<int>& topo = graph_.topological_order();
    for (auto it = topo.rbegin(); it != topo.rend(); ++it) {
      StatusOr<StagePlan> plan = PlanStage(*it);
      if (!plan.ok()) return plan.status();
      plans.push_back(std::move(*plan));
    }
    return plans;
  }

 private:
  int FindStage(const std::string& name) const {
    const int id = graph_.FindValue(name);
    if (id < 0 || graph_.value(id).kind != Value::Kind::kStage) return -1;
    return graph_.value(id).index;
  }

  std::string Where(int s) const {
    return "schedule of pipeline '" + graph_.spec().name() + "', stage '" + graph_.stage(s).name() +
           "'";
  }

  bool IsOutput(int s) const {
    const std::vector<int>& outputs = graph_.output_stages();
    return std::find(outputs.begin(), outputs.end(), s) != outputs.end();
  }

  ComputeLocation ComputeOf(int s) const {
    const ComputeLocation c =
        decisions_[s] != nullptr ? decisions_[s]->compute() : COMPUTE_LOCATION_UNSPECIFIED;
    if (c != COMPUTE_LOCATION_UNSPECIFIED) return c;
    return InlinedByDefault(graph_, s) ? INLINE : ROOT;
  }

  const DefinitionSchedule& DefinitionOf(int s, bool update) const {
    static const DefinitionSchedule kEmpty;
    if (decisions_[s] == nullptr) return kEmpty;
    return update ? decisions_[s]->update() : decisions_[s]->pure();
  }

  // The Var or RVar of loop `ref` of a definition of stage s; errors start with `where`.
  StatusOr<PlanVar> ResolveLoop(int s, bool update, const LoopRef& ref,
                                const std::string& where) const {
    if (!ref.stage().empty() && ref.stage() != graph_.stage(s).name()) {
      return Status::Error(where + ": the loop belongs to stage '" + ref.stage() +
                           "', not to this one");
    }
    if (ref.update() != update) {
      return Status::Error(where + ": the loop of dim '" + ref.dim() +
                           "' is marked as a loop of the " + DefinitionName(ref.update()));
    }
    const SplitDims dims(DefinitionDims(graph_.loops(s), update), DefinitionOf(s, update));
    const Dim* dim = dims.Find(ref.dim());
    if (dim == nullptr) {
      return Status::Error(where + ": no dim '" + ref.dim() + "' (dims: " + DimList(dims.dims()) +
                           ")");
    }
    const int levels = dims.Levels(dim->name);
    if (ref.level() < 0 || ref.level() >= levels) {
      return Status::Error(where + ": dim '" + dim->name + "' has " + std::to_string(levels) +
                           " level(s), level " + std::to_string(ref.level()) + " asked");
    }
    return PlanVar{LoopVarName(dim->name, ref.level(), levels), dim->reduction};
  }

  StatusOr<DefinitionPlan> PlanDefinition(int s, bool update) const {
    const DefinitionSchedule& def = DefinitionOf(s, update);
    const std::string where = Where(s) + ", " + DefinitionName(update);
    DefinitionPlan plan;
    plan.update = update;
    const SplitDims dims(DefinitionDims(graph_.loops(s), update), def);

    // TAIL_AUTO spelled out (ResolvedTail): Halide's own Auto would round up or shift
    // inwards where that reads inputs out of bounds.
    if (!TailStrategy_IsValid(def.tail())) {
      return Status::Error(where + ": unknown tail strategy " + std::to_string(def.tail()));
    }
    const TailStrategy tail = ResolvedTail(def.tail(), update, IsOutput(s));
    std::set<std::string> split_dims;
    for (const DimSplit& split : def.splits()) {
      const Dim* dim = dims.Find(split.dim());
      if (dim == nullptr) {
        return Status::Error(where + ", split: no dim '" + split.dim() +
                             "' (dims: " + DimList(dims.dims()) + ")");
      }
      if (!split_dims.insert(dim->name).second) {
        return Status::Error(where + ", split: dim '" + dim->name + "' is split twice");
      }
      for (int64_t f : split.factors()) {
        if (f < 1 || f > std::numeric_limits<int32_t>::max()) {
          return Status::Error(where + ", split of dim '" + dim->name + "': factor " +
                               std::to_string(f) + " is not a positive 32-bit integer");
        }
      }
      // Inner-first: the first factor splits the dim, each further factor splits the
      // outer part left by the previous split; the outermost part keeps level 0's name.
      const int levels = dims.Levels(dim->name);
      const PlanVar outer{LoopVarName(dim->name, 0, levels), dim->reduction};
      PlanVar old{dim->name, dim->reduction};
      for (int j = 0; j + 1 < levels; ++j) {
        PlanCall call;
        call.kind = PlanCall::Kind::kSplit;
        call.vars = {old, outer, {LoopVarName(dim->name, levels - 1 - j, levels), dim->reduction}};
        call.factor = split.factors(j);
        call.tail = tail;
        plan.calls.push_back(call);
        old = outer;
      }
    }

    if (def.loop_order_size() > 0) {
      PlanCall call;
      call.kind = PlanCall::Kind::kReorder;
      for (const LoopRef& ref : def.loop_order()) {
        StatusOr<PlanVar> var = ResolveLoop(s, update, ref, where + ", loop order");
        if (!var.ok()) return var.status();
        if (std::find(call.vars.begin(), call.vars.end(), *var) != call.vars.end()) {
          return Status::Error(where + ", loop order: loop '" + var->name + "' named twice");
        }
        call.vars.push_back(*var);
      }
      if (call.vars.size() > 1) plan.calls.push_back(call);
    }

    if (def.has_vectorize()) {
      StatusOr<PlanVar> var = ResolveLoop(s, update, def.vectorize(), where + ", vectorize");
      if (!var.ok()) return var.status();
      const Dim* dim = dims.Find(def.vectorize().dim());
      const int64_t extent = dims.LevelExtent(*dim, def.vectorize().level());
      if (def.vector_width() != 0 && def.vector_width() != extent) {
        return Status::Error(where + ", vectorize: vector width " +
                             std::to_string(def.vector_width()) + " differs from the extent " +
                             std::to_string(extent) + " of loop '" + var->name +
                             "' (the whole loop is vectorized)");
      }
      plan.calls.push_back(MakeCall(PlanCall::Kind::kVectorize, {*var}));
    } else if (def.vector_width() != 0) {
      return Status::Error(where + ": vector width " + std::to_string(def.vector_width()) +
                           " without a vectorized loop");
    }
    for (const LoopRef& ref : def.unroll()) {
      StatusOr<PlanVar> var = ResolveLoop(s, update, ref, where + ", unroll");
      if (!var.ok()) return var.status();
      plan.calls.push_back(MakeCall(PlanCall::Kind::kUnroll, {*var}));
    }
    for (const LoopRef& ref : def.parallel()) {
      StatusOr<PlanVar> var = ResolveLoop(s, update, ref, where + ", parallel");
      if (!var.ok()) return var.status();
      plan.calls.push_back(MakeCall(PlanCall::Kind::kParallel, {*var}));
    }
    return plan;
  }

  // compute_at / store_at `ref`, a loop of another stage (the host).
  StatusOr<PlanCall> PlanAt(int s, PlanCall::Kind kind, const LoopRef& ref) const {
    const std::string directive = kind == PlanCall::Kind::kComputeAt ? "compute_at" : "store_at";
    const int host = FindStage(ref.stage());
    if (host < 0) {
      return Status::Error(Where(s) + ", " + directive + ": no stage named '" + ref.stage() + "'");
    }
    if (host == s) {
      return Status::Error(Where(s) + ", " + directive + ": a loop of the stage itself");
    }
    if (ComputeOf(host) == INLINE) {
      return Status::Error(Where(s) + ", " + directive + ": host stage '" + ref.stage() +
                           "' is inlined and has no loops");
    }
    if (ref.update() && graph_.loops(host).reduction.empty()) {
      return Status::Error(Where(s) + ", " + directive + ": host stage '" + ref.stage() +
                           "' has no update definition");
    }
    StatusOr<PlanVar> var =
        ResolveLoop(host, ref.update(), ref,
                    Where(s) + ", " + directive + " (a loop of the " +
                        DefinitionName(ref.update()) + " of stage '" + ref.stage() + "')");
    if (!var.ok()) return var.status();
    PlanCall call;
    call.kind = kind;
    call.vars = {*var};
    call.host = host;
    return call;
  }

  StatusOr<StagePlan> PlanStage(int s) const {
    StagePlan plan;
    plan.stage = s;
    const StageSchedule* decision = decisions_[s];
    const bool has_update = !graph_.loops(s).reduction.empty();
    const ComputeLocation compute = ComputeOf(s);
    if (IsOutput(s)) {
      // Halide sees an output's extents only at run time; bound to its shape, every
      // loop extent is the static one the schedule space reasons with (so that
      // whole loops can be vectorized and unrolled).
      for (const LoopDim& d : graph_.loops(s).pure) {
        PlanCall call;
        call.kind = PlanCall::Kind::kBound;
        call.vars = {{d.name, false}};
        call.extent = d.extent;
        plan.location.push_back(call);
      }
    }
    switch (compute) {
      case INLINE:
        if (IsOutput(s)) return Status::Error(Where(s) + ": an output cannot be inlined");
        if (has_update) {
          return Status::Error(Where(s) + ": a stage with an update definition cannot be inlined");
        }
        if (decision != nullptr &&
            (decision->store() != COMPUTE_LOCATION_UNSPECIFIED ||
             decision->pure().ByteSizeLong() > 0 || decision->update().ByteSizeLong() > 0)) {
          return Status::Error(Where(s) + ": inlined, but has storage or loop directives");
        }
        plan.inlined = true;
        plan.location.push_back(MakeCall(PlanCall::Kind::kComputeInline));
        return plan;
      case ROOT:
        plan.location.push_back(MakeCall(PlanCall::Kind::kComputeRoot));
        break;
      case AT: {
        if (IsOutput(s)) return Status::Error(Where(s) + ": an output is computed at root");
        StatusOr<PlanCall> at = PlanAt(s, PlanCall::Kind::kComputeAt, decision->compute_at());
        if (!at.ok()) return at.status();
        plan.location.push_back(*at);
        break;
      }
      default:
        return Status::Error(Where(s) + ": unknown compute location " + std::to_string(compute));
    }
    const ComputeLocation store =
        decision != nullptr ? decision->store() : COMPUTE_LOCATION_UNSPECIFIED;
    switch (store) {
      case COMPUTE_LOCATION_UNSPECIFIED:
        break;
      case ROOT:
        plan.location.push_back(MakeCall(PlanCall::Kind::kStoreRoot));
        break;
      case AT: {
        StatusOr<PlanCall> at = PlanAt(s, PlanCall::Kind::kStoreAt, decision->store_at());
        if (!at.ok()) return at.status();
        plan.location.push_back(*at);
        break;
      }
      default:
        return Status::Error(Where(s) + ": storage cannot be " + ComputeLocation_Name(store));
    }
    if (decision != nullptr && !decision->storage_innermost().empty()) {
      if (IsOutput(s)) {
        return Status::Error(Where(s) + ", storage_innermost: an output is stored as the " +
                             "caller's buffer is");
      }
      const std::vector<LoopDim> pure = graph_.loops(s).pure;
      int innermost = -1;
      for (size_t d = 0; d < pure.size(); ++d) {
        if (pure[d].name == decision->storage_innermost()) innermost = static_cast<int>(d);
      }
      if (innermost < 0) {
        return Status::Error(Where(s) + ", storage_innermost: no pure dim '" +
                             decision->storage_innermost() + "'");
      }
      PlanCall call = MakeCall(PlanCall::Kind::kReorderStorage);
      for (int d : StorageOrderWithInnermost(static_cast<int>(pure.size()), innermost)) {
        call.vars.push_back({pure[d].name, false});
      }
      plan.location.push_back(call);
    }
    if (decision != nullptr && decision->pack_weights()) {
      StatusOr<PackedWeights> packed = PackableWeights(graph_, s);
      if (!packed.ok()) return packed.status().WithContext(Where(s));
      plan.packed = *packed;
    }
    if (decision != nullptr && decision->padded_copy()) {
      const Value& input = graph_.value(graph_.stage_inputs(s)[0]);
      const Status allowed = PaddedCopyAllowed(
          graph_, s,
          input.kind == Value::Kind::kStage ? ComputeOf(input.index) : COMPUTE_LOCATION_UNSPECIFIED);
      if (!allowed.ok()) return allowed.WithContext(Where(s));
      plan.padded_copy = PaddedCopyCalls(graph_, s);
    }
    for (bool update : {false, true}) {
      if (update && !has_update) {
        if (decision != nullptr && decision->update().ByteSizeLong() > 0) {
          return Status::Error(Where(s) + ": update directives, but the stage has no update");
        }
        continue;
      }
      StatusOr<DefinitionPlan> def = PlanDefinition(s, update);
      if (!def.ok()) return def.status();
      if (!def->calls.empty()) plan.definitions.push_back(std::move(*def));
    }
    // Halide warns about an update left alone when the pure definition is scheduled.
    if (has_update && plan.definitions.size() == 1 && !plan.definitions[0].update) {
      plan.definitions.push_back({true, {MakeCall(PlanCall::Kind::kUnscheduled)}});
    }
    return plan;
  }

  const PipelineGraph& graph_;
  std::vector<const StageSchedule*> decisions_;
};

// A planned tail (TAIL_AUTO is resolved by then).
const char* TailSource(TailStrategy tail) {
  switch (tail) {
    case TAIL_SHIFT_INWARDS:
      return "TailStrategy::ShiftInwards";
    case TAIL_ROUND_UP:
      return "TailStrategy::RoundUp";
    default:
      return "TailStrategy::GuardWithIf";
  }
}

}  // namespace

std::vector<PlanCall> PaddedCopyCalls(const PipelineGraph& graph, int s) {
  const Value& input = graph.value(graph.stage_inputs(s)[0]);
  const Shape& shape = input.shape;
  const int rank = static_cast<int>(shape.size());
  // The copy is BoundaryConditions::constant_exterior's Func, whose Vars are its
  // source's: Halide dim h is the implicit Var "_<h>" of a pipeline input, the pure
  // Var "d<rank - 1 - h>" of a stage.
  auto dim = [&](int h) {
    return PlanVar{input.kind == Value::Kind::kStage ? "d" + std::to_string(rank - 1 - h)
                                                     : "_" + std::to_string(h),
                   false};
  };
  const bool channels_last = BoundaryChannelsLast(graph.spec(), shape.size());
  std::vector<int> order = channels_last ? StorageOrderWithInnermost(rank, 2)
                                         : StorageOrderWithInnermost(rank, 0);
  std::vector<PlanCall> calls = {MakeCall(PlanCall::Kind::kComputeRoot)};
  std::vector<PlanVar> loops;
  for (int h : order) loops.push_back(dim(h));
  if (channels_last) {
    calls.push_back(MakeCall(PlanCall::Kind::kReorderStorage, loops));
    calls.push_back(MakeCall(PlanCall::Kind::kReorder, loops));
  }
  int outermost = -1;
  for (int i = rank - 1; i >= 0 && outermost < 0; --i) {
    if (shape[rank - 1 - order[i]] > 1) outermost = order[i];
  }
  const int innermost = order[0];
  if (outermost >= 0 && outermost != innermost) {
    calls.push_back(MakeCall(PlanCall::Kind::kParallel, {dim(outermost)}));
  }
  if (shape[rank - 1 - innermost] >= kPaddedCopyLanes) {
    const PlanVar v = dim(innermost);
    PlanCall split = MakeCall(PlanCall::Kind::kSplit,
                              {v, {v.name + "_0", false}, {v.name + "_1", false}});
    split.factor = kPaddedCopyLanes;
    split.tail = TAIL_SHIFT_INWARDS;
    calls.push_back(split);
    calls.push_back(MakeCall(PlanCall::Kind::kVectorize, {split.vars[2]}));
  }
  return calls;
}

StatusOr<std::vector<StagePlan>> PlanSchedule(const PipelineGraph& graph,
                                              const ScheduleSpec& spec) {
  return Planner(graph).Plan(spec);
}

std::string CallSource(const PlanCall& call, const std::string& host) {
  const auto var = [&](size_t i) { return call.vars[i].name; };
  switch (call.kind) {
    case PlanCall::Kind::kBound:
      return "bound(" + var(0) + ", 0, " + std::to_string(call.extent) + ")";
    case PlanCall::Kind::kComputeInline:
      return "compute_inline()";
    case PlanCall::Kind::kComputeRoot:
      return "compute_root()";
    case PlanCall::Kind::kComputeAt:
      return "compute_at(" + host + ", " + var(0) + ")";
    case PlanCall::Kind::kStoreRoot:
      return "store_root()";
    case PlanCall::Kind::kStoreAt:
      return "store_at(" + host + ", " + var(0) + ")";
    case PlanCall::Kind::kSplit:
      return "split(" + var(0) + ", " + var(1) + ", " + var(2) + ", " +
             std::to_string(call.factor) + ", " + TailSource(call.tail) + ")";
    case PlanCall::Kind::kReorder:
    case PlanCall::Kind::kReorderStorage: {
      std::string out =
          call.kind == PlanCall::Kind::kReorder ? "reorder({" : "reorder_storage({";
      for (size_t i = 0; i < call.vars.size(); ++i) out += (i ? ", " : "") + var(i);
      return out + "})";
    }
    case PlanCall::Kind::kVectorize:
      return "vectorize(" + var(0) + ")";
    case PlanCall::Kind::kUnroll:
      return "unroll(" + var(0) + ")";
    case PlanCall::Kind::kParallel:
      return "parallel(" + var(0) + ")";
    case PlanCall::Kind::kUnscheduled:
      return "unscheduled()";
  }
  return "";
}

}  // namespace schedfarm
