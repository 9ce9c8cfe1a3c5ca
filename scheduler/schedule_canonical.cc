// Canonical form, canonical text and hash of a ScheduleSpec.
#include <string>

#include "common/sha256.h"
#include "scheduler/schedule_space.h"
#include "scheduler/space_internal.h"

namespace schedfarm {
namespace {

// Version tag at the head of the canonical text; bump if the text changes (every
// stored schedule hash changes with it).
constexpr const char* kScheduleFormVersion = "schedfarm.schedule.v2";

LoopRef Ref(const std::string& stage, const SpaceDefinition& def, const SpaceLoop& loop) {
  LoopRef ref;
  ref.set_stage(stage);
  ref.set_dim(def.dims[loop.dim].name);
  ref.set_level(loop.level);
  ref.set_update(def.update);
  return ref;
}

void CanonicalDefinition(const std::string& stage, bool output, const SpaceDefinition& def,
                         const ResolvedDefinition& res, TailStrategy tail,
                         DefinitionSchedule* out) {
  bool all_divide = true;
  for (size_t d = 0; d < def.dims.size(); ++d) {
    if (res.factors[d].empty()) continue;
    DimSplit* split = out->add_splits();
    split->set_dim(def.dims[d].name);
    int64_t product = 1;
    for (int64_t f : res.factors[d]) {
      split->add_factors(f);
      product = product > def.dims[d].extent ? product : product * f;
    }
    if (def.dims[d].extent % product != 0) all_divide = false;
  }
  for (const SpaceLoop& loop : res.loops) {
    if (loop.extent <= 1) continue;
    const LoopRef ref = Ref(stage, def, loop);
    *out->add_loop_order() = ref;
    if (loop.vectorized) {
      *out->mutable_vectorize() = ref;
      out->set_vector_width(loop.extent);
    }
    if (loop.parallel) *out->add_parallel() = ref;
    if (loop.unrolled) *out->add_unroll() = ref;
  }
  // Elsewhere than on outputs, the only legal tails mean GuardWithIf.
  out->set_tail(all_divide || !output ? TAIL_AUTO : ResolvedTail(tail, def.update, output));
}

std::string RefText(const LoopRef& ref) {
  return ref.stage() + ":" + ref.dim() + ":" + std::to_string(ref.level()) +
         (ref.update() ? ":u" : ":p");
}

void DefinitionText(const char* which, const DefinitionSchedule& d, std::string* out) {
  *out += "  ";
  *out += which;
  *out += " splits";
  for (const DimSplit& s : d.splits()) {
    *out += " " + s.dim() + "=";
    for (int i = 0; i < s.factors_size(); ++i) {
      *out += (i ? "," : "") + std::to_string(s.factors(i));
    }
  }
  *out += " order";
  for (const LoopRef& r : d.loop_order()) *out += " " + RefText(r);
  if (d.has_vectorize()) {
    *out += " vectorize " + RefText(d.vectorize()) + "/" + std::to_string(d.vector_width());
  }
  *out += " unroll";
  for (const LoopRef& r : d.unroll()) *out += " " + RefText(r);
  *out += " parallel";
  for (const LoopRef& r : d.parallel()) *out += " " + RefText(r);
  *out += " tail " + std::string(TailStrategy_Name(d.tail())) + "\n";
}

}  // namespace

ScheduleSpec CanonicalSchedule(const ScheduleSpace& space, const ScheduleSpec& spec) {
  ScheduleSpec out;
  out.set_pipeline_id(space.pipeline_id());
  const int n = static_cast<int>(space.decision_order().size());
  out.set_partial(spec.stages_size() < n);
  SpecState state(space, spec);
  for (int pos = 0; pos < spec.stages_size() && pos < n; ++pos) {
    const StageSchedule& d = spec.stages(pos);
    const int stage = space.decision_order()[pos];
    const auto& info = ScheduleSpaceImpl::Info(space, stage);  // private type: auto
    const StageState& st = state.At(pos);
    StageSchedule* cs = out.add_stages();
    cs->set_stage(info.name);
    cs->set_compute(st.location);
    if (st.location == INLINE) continue;
    if (st.location == AT) {
      *cs->mutable_compute_at() = d.compute_at();
    }
    // A dim stored innermost after dims of extent 1 only is the natural order.
    const int innermost = info.defs[0].FindDim(d.storage_innermost());
    for (int dim = 0; dim < innermost; ++dim) {
      if (info.defs[0].dims[dim].extent > 1) {
        cs->set_storage_innermost(d.storage_innermost());
        break;
      }
    }
    cs->set_pack_weights(d.pack_weights());
    cs->set_padded_copy(d.padded_copy());
    CanonicalDefinition(info.name, info.is_output, info.defs[0], st.defs[0], d.pure().tail(),
                        cs->mutable_pure());
    if (info.has_update) {
      CanonicalDefinition(info.name, info.is_output, info.defs[1], st.defs[1], d.update().tail(),
                          cs->mutable_update());
    }
  }
  return out;
}

std::string CanonicalScheduleText(const ScheduleSpace& space, const ScheduleSpec& spec) {
  const ScheduleSpec c = CanonicalSchedule(space, spec);
  std::string text = std::string(kScheduleFormVersion) + "\n";
  text += "pipeline " + c.pipeline_id() + "\n";
  text += std::string("partial ") + (c.partial() ? "1" : "0") + "\n";
  for (const StageSchedule& s : c.stages()) {
    text += "stage " + s.stage() + " " + ComputeLocation_Name(s.compute());
    if (s.compute() == AT) text += " " + RefText(s.compute_at());
    // Layouts are named only when chosen, so that the hashes of schedules without
    // them stay those of the space before layouts.
    if (!s.storage_innermost().empty()) text += " storage " + s.storage_innermost();
    if (s.pack_weights()) text += " packed";
    if (s.padded_copy()) text += " padded-copy";
    text += "\n";
    if (s.compute() == INLINE) continue;
    DefinitionText("pure", s.pure(), &text);
    if (s.has_update()) DefinitionText("update", s.update(), &text);
  }
  return text;
}

std::string ScheduleHash(const ScheduleSpace& space, const ScheduleSpec& spec) {
  return Sha256Hex(CanonicalScheduleText(space, spec)).substr(0, 32);
}

}  // namespace schedfarm
