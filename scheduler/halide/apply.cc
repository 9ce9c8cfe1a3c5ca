#include "scheduler/halide/apply.h"

#include <string>

#include "pipeline/halide/lowering.h"
#include "scheduler/schedule_plan.h"

namespace schedfarm {
namespace {

Halide::VarOrRVar ToHalide(const PlanVar& var) { return Halide::VarOrRVar(var.name, var.rvar); }

// A planned tail (TAIL_AUTO is resolved by then).
Halide::TailStrategy ToHalide(TailStrategy tail) {
  switch (tail) {
    case TAIL_SHIFT_INWARDS:
      return Halide::TailStrategy::ShiftInwards;
    case TAIL_ROUND_UP:
      return Halide::TailStrategy::RoundUp;
    default:
      return Halide::TailStrategy::GuardWithIf;
  }
}

// compute_at / store_at a loop of the host. The LoopLevel carries no stage index:
// Halide 14 validates compute locations against LoopLevels without one (an explicit
// index never matches), and places the Func in the loop of the host's definition
// that uses it; the schedule space offers AT only in that definition.
Halide::LoopLevel HostLoop(const LoweredPipeline& lowered, const PlanCall& call) {
  return Halide::LoopLevel(lowered.stages[call.host].func, ToHalide(call.vars[0]));
}

// Location calls; other kinds are MakeLoopCall's and do nothing here.
void MakeLocationCall(const LoweredPipeline& lowered, Halide::Func& func, const PlanCall& call) {
  switch (call.kind) {
    case PlanCall::Kind::kBound:
      func.bound(Halide::Var(call.vars[0].name), 0, static_cast<int>(call.extent));
      break;
    case PlanCall::Kind::kComputeInline:
      func.compute_inline();
      break;
    case PlanCall::Kind::kComputeRoot:
      func.compute_root();
      break;
    case PlanCall::Kind::kComputeAt:
      func.compute_at(HostLoop(lowered, call));
      break;
    case PlanCall::Kind::kStoreRoot:
      func.store_root();
      break;
    case PlanCall::Kind::kStoreAt:
      func.store_at(HostLoop(lowered, call));
      break;
    case PlanCall::Kind::kReorderStorage: {
      std::vector<Halide::Var> vars;
      for (const PlanVar& v : call.vars) vars.emplace_back(v.name);
      func.reorder_storage(vars);
      break;
    }
    default:
      break;
  }
}

// Loop calls; other kinds are MakeLocationCall's and do nothing here.
void MakeLoopCall(Halide::Stage& stage, const PlanCall& call) {
  switch (call.kind) {
    case PlanCall::Kind::kSplit:
      stage.split(ToHalide(call.vars[0]), ToHalide(call.vars[1]), ToHalide(call.vars[2]),
                  static_cast<int>(call.factor), ToHalide(call.tail));
      break;
    case PlanCall::Kind::kReorder: {
      std::vector<Halide::VarOrRVar> vars;
      for (const PlanVar& v : call.vars) vars.push_back(ToHalide(v));
      stage.reorder(vars);
      break;
    }
    case PlanCall::Kind::kVectorize:
      stage.vectorize(ToHalide(call.vars[0]));
      break;
    case PlanCall::Kind::kUnroll:
      stage.unroll(ToHalide(call.vars[0]));
      break;
    case PlanCall::Kind::kParallel:
      stage.parallel(ToHalide(call.vars[0]));
      break;
    case PlanCall::Kind::kUnscheduled:
      stage.unscheduled();
      break;
    default:
      break;
  }
}

// Makes one call, turning Halide's exceptions into a Status that names the call.
template <typename Body>
Status Guarded(const std::string& where, const PlanCall& call, const std::string& host, Body body) {
  const std::string what = where + ", " + CallSource(call, host);
  try {
    body();
  } catch (const Halide::Error& e) {
    return Status::Error(what + ": Halide refused it: " + e.what());
  } catch (const std::exception& e) {
    return Status::Error(what + ": " + e.what());
  }
  return Status::Ok();
}

// Stores the parameter buffer in `packed.storage_order`, in place: the Funcs that read
// it hold the same buffer, and Halide compiles their loads for the strides it has when
// the pipeline is compiled.
void PackWeights(LoweredPipeline& lowered, const PackedWeights& packed) {
  Halide::Buffer<>& weights = lowered.parameters[packed.parameter];
  *weights.get() = InStorageOrder(*weights.get(), packed.storage_order);
}

}  // namespace

Status ApplySchedule(const PipelineGraph& graph, LoweredPipeline& lowered,
                     const ScheduleSpec& spec) {
  if (lowered.stages.size() != static_cast<size_t>(graph.num_stages())) {
    return Status::Error("pipeline '" + graph.spec().name() + "': the lowered pipeline has " +
                         std::to_string(lowered.stages.size()) + " stages, the graph " +
                         std::to_string(graph.num_stages()));
  }
  SCHEDFARM_ASSIGN_OR_RETURN(std::vector<StagePlan> plans, PlanSchedule(graph, spec));
  for (const StagePlan& plan : plans) {
    Halide::Func& func = lowered.stages[plan.stage].func;
    const std::string where = "pipeline '" + graph.spec().name() + "', stage '" +
                              graph.stage(plan.stage).name() + "' (Func " + func.name() + ")";
    if (plan.packed.parameter >= 0) PackWeights(lowered, plan.packed);
    Halide::Func& copy = lowered.stages[plan.stage].padded_input;
    for (const PlanCall& call : plan.padded_copy) {
      SCHEDFARM_RETURN_IF_ERROR(Guarded(where + ", its padded copy", call, "", [&] {
        MakeLocationCall(lowered, copy, call);
        Halide::Stage stage(copy);
        MakeLoopCall(stage, call);
      }));
    }
    for (const PlanCall& call : plan.location) {
      const std::string host = call.host >= 0 ? lowered.stages[call.host].func.name() : "";
      SCHEDFARM_RETURN_IF_ERROR(
          Guarded(where, call, host, [&] { MakeLocationCall(lowered, func, call); }));
    }
    for (const DefinitionPlan& def : plan.definitions) {
      const std::string def_where = where + (def.update ? ", update(0)" : "");
      for (const PlanCall& call : def.calls) {
        SCHEDFARM_RETURN_IF_ERROR(Guarded(def_where, call, "", [&] {
          Halide::Stage stage = def.update ? func.update(0) : Halide::Stage(func);
          MakeLoopCall(stage, call);
        }));
      }
    }
  }
  return Status::Ok();
}

StatusOr<RunResult> RunWithSchedule(const PipelineGraph& graph, const ScheduleSpec& spec,
                                    const RunOptions& options, std::vector<HostTensor> inputs) {
  SCHEDFARM_ASSIGN_OR_RETURN(LoweredPipeline lowered, LowerToHalide(graph));
  SCHEDFARM_RETURN_IF_ERROR(ApplySchedule(graph, lowered, spec));
  return RunScheduled(graph, lowered, options, std::move(inputs));
}

}  // namespace schedfarm
