// Legality of ScheduleSpecs: definitions resolved into loops (splits, reorder,
// vectorize, unroll, parallel) and decisions resolved into compute locations, with
// errors that name the stage, the directive and why.
#include <algorithm>
#include <limits>
#include <string>
#include <utility>

#include "scheduler/schedule_space.h"
#include "scheduler/layouts.h"
#include "scheduler/space_internal.h"

namespace schedfarm {
namespace {

const char* DefName(bool update) { return update ? "update" : "pure"; }

std::string StageWhere(const std::string& name) { return "stage '" + name + "'"; }

// "not at all", "once", "twice", "3 times".
std::string Times(int n) {
  if (n <= 0) return "not at all";
  if (n == 1) return "once";
  if (n == 2) return "twice";
  return std::to_string(n) + " times";
}

std::string DimList(const SpaceDefinition& def) {
  std::string out;
  for (const SpaceDim& d : def.dims) out += (out.empty() ? "" : ", ") + d.name;
  return out.empty() ? "none" : out;
}

std::string FactorList(const DimSplit& split) {
  std::string out;
  for (int64_t f : split.factors()) out += (out.empty() ? "" : ", ") + std::to_string(f);
  return "[" + out + "]";
}

bool SameRef(const LoopRef& a, const LoopRef& b) {
  return a.stage() == b.stage() && a.dim() == b.dim() && a.level() == b.level() &&
         a.update() == b.update();
}

}  // namespace

std::string LoopVarName(const std::string& dim, int level, int num_levels) {
  return num_levels <= 1 ? dim : dim + "_" + std::to_string(level);
}

TailStrategy ResolvedTail(TailStrategy tail, bool update, bool output) {
  if (tail != TAIL_AUTO) return tail;
  return output && !update ? TAIL_SHIFT_INWARDS : TAIL_GUARD_WITH_IF;
}

std::string LoopText(const SpaceDefinition& def, int dim, int level, int num_levels) {
  return "'" + LoopVarName(def.dims[dim].name, level, num_levels) + "'";
}

namespace {

// Rule 8: in an update, the vectorized loop and the unrolled pure loops around it, up
// to the first other loop of extent > 1, are a tile of accumulators held in registers
// across the reduction loops outside them; the tile must fit the vector registers.
Status CheckRegisterTile(const SpaceDefinition& sdef, const ResolvedDefinition& def) {
  int64_t vectors = 0, rows = 1;
  std::string tile;
  bool reduction_outside = false;
  for (const SpaceLoop& loop : def.loops) {  // innermost first
    if (loop.extent <= 1) continue;
    const std::string text = LoopText(sdef, loop.dim, loop.level, def.num_levels[loop.dim]);
    if (tile.empty() && !loop.reduction && loop.vectorized) {
      vectors = (loop.extent + sdef.lanes - 1) / sdef.lanes;
      tile = "loop " + text + " vectorized (" + std::to_string(vectors) + " vectors)";
    } else if (!tile.empty() && !loop.reduction && loop.unrolled) {
      rows *= loop.extent;
      tile += " x loop " + text + " unrolled (" + std::to_string(loop.extent) + ")";
    } else if (tile.empty()) {
      return Status::Ok();  // the innermost loop is not vectorized: no tile
    } else if (loop.reduction) {
      reduction_outside = true;
      break;
    } else {
      reduction_outside = std::any_of(&loop, def.loops.data() + def.loops.size(),
                                      [](const SpaceLoop& l) { return l.reduction && l.extent > 1; });
      break;
    }
  }
  if (vectors == 0 || rows == 1 || !reduction_outside) return Status::Ok();
  if (RegisterTileFits(vectors, rows, sdef.vector_registers)) return Status::Ok();
  return Status::Error(
      "update: the register tile of " + tile + " is " + std::to_string(vectors * rows) +
      " accumulators of the stage, which with a row of " + std::to_string(vectors) +
      " operand vectors and a broadcast need " + std::to_string(vectors * rows + vectors + 1) +
      " vector registers; the target has " + std::to_string(sdef.vector_registers) +
      " (rule 8, register tiles): vectorize fewer lanes or unroll less");
}

// Rule 9: in an update, a pure innermost loop (of extent > 1) directly inside a level
// of a reduction dim split with a tail is vectorized. LLVM 14's loop vectorizer, which
// Halide 14 runs, groups the loads and stores of such a loop across the guarded tail's
// copies of the body and misorders them (docs/SCHEDULES.md, rule 9).
Status CheckReductionTail(const SpaceDefinition& sdef, const ResolvedDefinition& def) {
  const SpaceLoop* loops[2] = {nullptr, nullptr};
  int n = 0;
  for (const SpaceLoop& loop : def.loops) {  // innermost first
    if (loop.extent <= 1) continue;
    loops[n++] = &loop;
    if (n == 2) break;
  }
  if (n < 2 || loops[0]->reduction || loops[0]->vectorized || !loops[1]->reduction ||
      !loops[1]->tail) {
    return Status::Ok();
  }
  return Status::Error(
      "update: loop " +
      LoopText(sdef, loops[0]->dim, loops[0]->level, def.num_levels[loops[0]->dim]) +
      " is innermost and not vectorized, directly inside loop " +
      LoopText(sdef, loops[1]->dim, loops[1]->level, def.num_levels[loops[1]->dim]) +
      " of a reduction split with a tail (rule 9, LLVM 14 misorders the grouped loads " +
      "and stores it vectorizes such a loop with): vectorize the inner loop, split the " +
      "reduction by a factor that divides it, or move the reduction loops");
}

}  // namespace

// ---------------------------------------------------------------------------------
// Definitions

Status ScheduleSpaceImpl::ResolveDefinition(const ScheduleSpace& space, int stage, bool update,
                                            const DefinitionSchedule& schedule,
                                            ResolvedDefinition* out) {
  const ScheduleSpace::StageInfo& info = space.stages_[stage];
  const SpaceDefinition& def = info.defs[update ? 1 : 0];
  // Error texts are built only on the error paths (this runs in the sampling loop).
  auto where = [&] { return StageWhere(info.name) + ": " + DefName(update); };
  const size_t num_dims = def.dims.size();
  out->num_levels.assign(num_dims, 1);
  out->factors.assign(num_dims, {});
  out->loops.clear();  // filled on success (REQUIRES of the callers that do not check)

  // Splits.
  std::vector<bool> seen(num_dims, false);
  bool all_divide = true;
  for (const DimSplit& split : schedule.splits()) {
    const int d = def.FindDim(split.dim());
    if (d < 0) {
      return Status::Error(where() + ".splits: no dim '" + split.dim() +
                           "' in this definition (dims: " + DimList(def) + ")");
    }
    if (seen[d]) return Status::Error(where() + ".splits: dim '" + split.dim() + "' split twice");
    seen[d] = true;
    const int64_t extent = def.dims[d].extent;
    int64_t product = 1;
    for (int64_t f : split.factors()) {
      if (f < 2) {
        return Status::Error(where() + ".splits: dim '" + split.dim() + "' factor " +
                             std::to_string(f) +
                             " is below 2 (leave a dim unsplit instead of splitting by 1)");
      }
      product = product > std::numeric_limits<int64_t>::max() / f
                    ? std::numeric_limits<int64_t>::max()
                    : product * f;
    }
    if (product > extent && schedule.tail() != TAIL_GUARD_WITH_IF) {
      return Status::Error(where() + ".splits: dim '" + split.dim() + "' split by " +
                           FactorList(split) + " (product " + std::to_string(product) +
                           ") exceeds its extent " + std::to_string(extent) +
                           "; only tail TAIL_GUARD_WITH_IF allows factors beyond the extent");
    }
    if (extent % product != 0) all_divide = false;
    out->factors[d].assign(split.factors().begin(), split.factors().end());
    out->num_levels[d] = split.factors_size() + 1;
  }
  if (!info.is_output && schedule.splits_size() > 0 &&
      (schedule.tail() == TAIL_SHIFT_INWARDS || schedule.tail() == TAIL_ROUND_UP)) {
    return Status::Error(where() + ".tail: " + TailStrategy_Name(schedule.tail()) +
                         " is legal on outputs only: this stage's region may be smaller " +
                         "than its splits, and the points computed outside it read the " +
                         "inputs out of bounds (use TAIL_AUTO or TAIL_GUARD_WITH_IF)");
  }
  if (update && schedule.splits_size() > 0 && schedule.tail() == TAIL_SHIFT_INWARDS) {
    return Status::Error(where() + ".tail: TAIL_SHIFT_INWARDS is not legal in an update " +
                         "definition (Halide: it may change the meaning of the algorithm)");
  }
  if (!all_divide && schedule.tail() == TAIL_ROUND_UP) {
    return Status::Error(where() + ".tail: TAIL_ROUND_UP with a split that does not divide " +
                         "its extent would write past the output's buffer");
  }
  std::vector<SpaceLoop> loops = NaturalLoops(def, out->num_levels, out->factors);

  // Finds the loop `ref` names in `loops`.
  auto lookup = [&](const LoopRef& ref, const std::string& directive, int* position) {
    auto at = [&] { return where() + "." + directive + ": "; };
    if (ref.stage() != info.name) {
      return Status::Error(at() + "names a loop of stage '" + ref.stage() + "', not of this stage");
    }
    if (ref.update() != update) {
      return Status::Error(at() + "names a loop of the " + DefName(ref.update()) + " definition");
    }
    const int d = def.FindDim(ref.dim());
    if (d < 0) {
      return Status::Error(at() + "no dim '" + ref.dim() +
                           "' in this definition (dims: " + DimList(def) + ")");
    }
    if (ref.level() < 0 || ref.level() >= out->num_levels[d]) {
      return Status::Error(at() + "dim '" + ref.dim() + "' has " +
                           std::to_string(out->num_levels[d]) + " level(s), no level " +
                           std::to_string(ref.level()));
    }
    *position = -1;
    for (size_t i = 0; i < loops.size(); ++i) {
      if (loops[i].dim == d && loops[i].level == ref.level()) *position = static_cast<int>(i);
    }
    return Status::Ok();
  };
  auto name_of = [&](const SpaceLoop& loop) {
    return LoopText(def, loop.dim, loop.level, out->num_levels[loop.dim]);
  };

  // Loop order: the named loops take their slots in the natural order.
  std::vector<int> named;
  named.reserve(schedule.loop_order_size());
  std::vector<bool> used(loops.size(), false);
  for (const LoopRef& ref : schedule.loop_order()) {
    int q = 0;
    SCHEDFARM_RETURN_IF_ERROR(lookup(ref, "loop_order", &q));
    if (used[q]) {
      return Status::Error(where() + ".loop_order: loop " + name_of(loops[q]) + " listed twice");
    }
    used[q] = true;
    named.push_back(q);
  }
  std::vector<int> slots = named;
  std::sort(slots.begin(), slots.end());
  std::vector<SpaceLoop> reordered = loops;
  for (size_t j = 0; j < named.size(); ++j) reordered[slots[j]] = loops[named[j]];
  // Reduction loops come first in the natural order, so their natural positions must
  // increase from the innermost outwards.
  int last = -1;
  const SpaceLoop* last_loop = nullptr;
  for (const SpaceLoop& loop : reordered) {
    if (!loop.reduction) continue;
    int natural = 0;
    while (loops[natural].dim != loop.dim || loops[natural].level != loop.level) ++natural;
    if (natural < last) {
      return Status::Error(where() + ".loop_order: puts reduction loop " + name_of(*last_loop) +
                           " inside reduction loop " + name_of(loop) +
                           "; reduction loops keep their natural order (Halide cannot "
                           "reorder RVars)");
    }
    last = natural;
    last_loop = &loop;
  }
  loops.swap(reordered);

  // Vectorize.
  int vpos = -1;
  if (schedule.has_vectorize()) {
    SCHEDFARM_RETURN_IF_ERROR(lookup(schedule.vectorize(), "vectorize", &vpos));
    const SpaceLoop& loop = loops[vpos];
    if (loop.reduction) {
      return Status::Error(where() + ".vectorize: " + name_of(loop) +
                           " is a reduction loop (vectorizing it needs rfactor)");
    }
    if (loop.extent < 2) {
      return Status::Error(where() + ".vectorize: " + name_of(loop) +
                           " has extent 1 (Halide vectorizes constant extents > 1)");
    }
    if (schedule.vector_width() != loop.extent) {
      return Status::Error(where() + ".vector_width: " + std::to_string(schedule.vector_width()) +
                           " but the vectorized loop " + name_of(loop) + " has extent " +
                           std::to_string(loop.extent));
    }
    loops[vpos].vectorized = true;
  } else if (schedule.vector_width() != 0) {
    return Status::Error(where() + ".vector_width: set to " +
                         std::to_string(schedule.vector_width()) + " without vectorize");
  }

  // Unroll.
  for (const LoopRef& ref : schedule.unroll()) {
    int q = 0;
    SCHEDFARM_RETURN_IF_ERROR(lookup(ref, "unroll", &q));
    if (loops[q].unrolled) {
      return Status::Error(where() + ".unroll: loop " + name_of(loops[q]) + " listed twice");
    }
    if (loops[q].vectorized) {
      return Status::Error(where() + ".unroll: loop " + name_of(loops[q]) + " is vectorized");
    }
    loops[q].unrolled = true;
  }

  // Parallel.
  for (const LoopRef& ref : schedule.parallel()) {
    int q = 0;
    SCHEDFARM_RETURN_IF_ERROR(lookup(ref, "parallel", &q));
    const SpaceLoop& loop = loops[q];
    auto at = [&] { return where() + ".parallel: loop " + name_of(loop); };
    if (loop.parallel) return Status::Error(at() + " listed twice");
    if (loop.reduction) {
      return Status::Error(at() + " is a reduction loop (iterations depend on each other)");
    }
    if (loop.vectorized) return Status::Error(at() + " is vectorized");
    if (q < vpos) {
      return Status::Error(at() + " is inside the vectorized loop " + name_of(loops[vpos]));
    }
    if (loop.unrolled) return Status::Error(at() + " is unrolled");
    loops[q].parallel = true;
  }
  out->loops = std::move(loops);
  return Status::Ok();
}

std::vector<ScheduledLoop> ScheduleSpaceImpl::ToScheduledLoops(const ScheduleSpace& space,
                                                               int stage, bool update,
                                                               const ResolvedDefinition& def) {
  const ScheduleSpace::StageInfo& info = space.stages_[stage];
  const SpaceDefinition& sdef = info.defs[update ? 1 : 0];
  std::vector<ScheduledLoop> out;
  for (const SpaceLoop& loop : def.loops) {
    ScheduledLoop s;
    s.ref.set_stage(info.name);
    s.ref.set_dim(sdef.dims[loop.dim].name);
    s.ref.set_level(loop.level);
    s.ref.set_update(update);
    s.extent = loop.extent;
    s.reduction = loop.reduction;
    s.vectorized = loop.vectorized;
    s.unrolled = loop.unrolled;
    s.parallel = loop.parallel;
    out.push_back(std::move(s));
  }
  return out;
}

std::vector<ScheduledLoop> ScheduleSpace::DefinitionLoops(int stage, bool update,
                                                          const StageSchedule& decision) const {
  if (update && !stages_[stage].has_update) return {};
  ResolvedDefinition def;
  // REQUIRES a legal decision; on an illegal one the loops resolved so far are kept.
  ScheduleSpaceImpl::ResolveDefinition(*this, stage, update,
                                       update ? decision.update() : decision.pure(), &def);
  return ScheduleSpaceImpl::ToScheduledLoops(*this, stage, update, def);
}

std::vector<ScheduledLoop> ScheduleSpace::LoopsOf(int stage, const StageSchedule& decision) const {
  return DefinitionLoops(stage, stages_[stage].has_update, decision);
}

// ---------------------------------------------------------------------------------
// Decisions

SpecState::SpecState(const ScheduleSpace& space, const ScheduleSpec& spec, bool strict)
    : space_(space),
      spec_(&spec),
      strict_(strict),
      states_(space.decision_order().size()),
      uses_(space.decision_order().size()) {}

Status SpecState::Resolve(int pos) {
  auto state = std::make_unique<StageState>();
  Status status = ScheduleSpaceImpl::CheckDecision(space_, *this, pos, state.get());
  states_[pos] = std::move(state);
  return status;
}

ComputeLocation SpecState::Location(int pos) const {
  const ComputeLocation location = spec_->stages(pos).compute();
  if (location != COMPUTE_LOCATION_UNSPECIFIED) return location;
  return space_.InlineLegal(space_.decision_order()[pos]) ? INLINE : ROOT;
}

const StageState& SpecState::At(int pos) {
  if (!states_[pos]) {
    states_[pos] = std::make_unique<StageState>();
    ScheduleSpaceImpl::ResolveUnchecked(space_, *this, pos, states_[pos].get());
  }
  return *states_[pos];
}

const std::vector<StageUse>& SpecState::Uses(int stage) {
  if (uses_[stage]) return *uses_[stage];
  auto uses = std::make_unique<std::vector<StageUse>>();
  auto add = [&](int host, int defs) {
    for (StageUse& u : *uses) {
      if (u.stage == host) {
        u.defs |= defs;
        return;
      }
    }
    uses->push_back({host, defs});
  };
  for (const StageReader& reader : ScheduleSpaceImpl::Info(space_, stage).readers) {
    if (Location(space_.position(reader.stage)) == INLINE) {
      for (const StageUse& u : Uses(reader.stage)) add(u.stage, u.defs);
    } else {
      add(reader.stage, reader.defs);
    }
  }
  uses_[stage] = std::move(uses);
  return *uses_[stage];
}

void ScheduleSpaceImpl::ExtendChain(const StageState& host, int host_stage, bool update, int q,
                                    StageState* out) {
  const std::vector<SpaceLoop>& loops = host.defs[update ? 1 : 0].loops;
  out->chain.reserve(host.chain.size() + loops.size() - q);
  out->chain = host.chain;
  for (int i = static_cast<int>(loops.size()) - 1; i >= q; --i) {
    const SpaceLoop& l = loops[i];
    out->chain.push_back({host_stage, update, l.dim, l.level});
  }
}

bool SpecState::ReadClamped(int stage) {
  const auto& info = ScheduleSpaceImpl::Info(space_, stage);
  if (info.read_clamped) return true;
  for (const StageReader& reader : info.readers) {
    if (Location(space_.position(reader.stage)) == INLINE && ReadClamped(reader.stage)) {
      return true;
    }
  }
  return false;
}

bool SpecState::ReadAligned(int stage) {
  for (const StageReader& reader : ScheduleSpaceImpl::Info(space_, stage).readers) {
    if (!reader.aligned) return false;
    if (Location(space_.position(reader.stage)) == INLINE && !ReadAligned(reader.stage)) {
      return false;
    }
  }
  return true;
}

uint32_t SpecState::TiledDims(int stage) {
  uint32_t tiled = ~0u;
  for (const StageReader& reader : ScheduleSpaceImpl::Info(space_, stage).readers) {
    tiled &= reader.tiled;
    if (Location(space_.position(reader.stage)) == INLINE) tiled &= TiledDims(reader.stage);
  }
  return tiled;
}

int64_t ScheduleSpaceImpl::Recomputations(const ScheduleSpace& space, int stage, int host,
                                          const ResolvedDefinition& host_def, int q,
                                          std::vector<int>* dims) {
  uint32_t indexing = 0;
  for (const StageReader& reader : space.stages_[stage].readers) {
    if (reader.stage != host) return 1;
    indexing = reader.indexing;
  }
  int64_t times = 1;
  for (size_t i = q; i < host_def.loops.size(); ++i) {
    const SpaceLoop& loop = host_def.loops[i];
    if (loop.extent <= 1 || (indexing >> loop.dim & 1)) continue;
    times *= loop.extent;
    if (dims != nullptr && std::find(dims->begin(), dims->end(), loop.dim) == dims->end()) {
      dims->push_back(loop.dim);
    }
  }
  return times;
}

StageWindow ScheduleSpaceImpl::RootWindow(const ScheduleSpace& space, int stage) {
  const SpaceDefinition& pure = space.stages_[stage].defs[0];
  StageWindow window;
  window.extent.resize(pure.num_pure);
  for (int d = 0; d < pure.num_pure; ++d) window.extent[d] = pure.dims[d].extent;
  window.host_splits.assign(pure.num_pure, 0);
  return window;
}

StageWindow ScheduleSpaceImpl::WindowAt(const ScheduleSpace& space, SpecState& state, int stage,
                                        int host, bool host_update, int q) {
  StageWindow window = RootWindow(space, stage);
  const StageState& hs = state.At(space.position_[host]);
  const ResolvedDefinition& hdef = hs.defs[host_update ? 1 : 0];
  // Rule 6: the region lies in the host's tiles along each dim it is tiled along
  // (StageReader::tiled) that has a host loop inside loop q.
  const size_t shared = std::min(window.host_splits.size(), hs.nested_splits.size());
  const uint32_t tiled = state.TiledDims(stage);
  for (int i = 0; i < q; ++i) {
    const SpaceLoop& loop = hdef.loops[i];
    if (loop.reduction || loop.extent <= 1 || static_cast<size_t>(loop.dim) >= shared) continue;
    if (loop.dim >= 32 || !(tiled >> loop.dim & 1)) continue;
    window.host_splits[loop.dim] = hs.nested_splits[loop.dim];
    window.host_tails |= hs.nested_tails & (1u << loop.dim);
  }
  // Aligned readers read in their pure definitions: a host's update is never aligned.
  if (host_update || !state.ReadAligned(stage)) return window;
  for (size_t d = 0; d < window.extent.size(); ++d) {
    if (d < 32 && !(tiled >> d & 1)) continue;  // a concatenation's axis
    // The span of the host's levels of dim d inside loop q: its whole window when
    // level 0 is among them, else 1 + (extent - 1) * stride summed over those levels
    // (their product when they are the innermost ones, as in the space's orders).
    const std::vector<int64_t>& factors = hdef.factors[d];
    const int num_levels = hdef.num_levels[d];
    int64_t span = 1;
    for (int i = 0; i < q; ++i) {
      const SpaceLoop& loop = hdef.loops[i];
      if (loop.dim != static_cast<int>(d)) continue;
      if (loop.level == 0) {
        span = hs.window.extent[d];
        break;
      }
      int64_t stride = 1;
      for (int k = 0; k < num_levels - 1 - loop.level; ++k) stride *= factors[k];
      span += (loop.extent - 1) * stride;
    }
    window.extent[d] = std::min(window.extent[d], span);
  }
  return window;
}

void ScheduleSpaceImpl::SetNestedSplits(const ScheduleSpace& space, int stage, StageState* out) {
  out->nested_splits = out->window.host_splits;
  out->nested_tails = out->window.host_tails;
  for (int u = 0; u < (space.stages_[stage].has_update ? 2 : 1); ++u) {
    const ResolvedDefinition& def = out->defs[u];
    for (size_t d = 0; d < out->nested_splits.size() && d < def.num_levels.size(); ++d) {
      out->nested_splits[d] =
          std::max(out->nested_splits[d], out->window.host_splits[d] + def.num_levels[d] - 1);
      if (d < 32 && LeavesTail(out->window.extent[d], def.factors[d])) {
        out->nested_tails |= 1u << d;
      }
    }
  }
}

bool StageWindow::TooManySplits(int d, const std::vector<int64_t>& factors) const {
  if (static_cast<int>(factors.size()) + host_splits[d] <= kMaxNestedSplits) return false;
  return (d < 32 && (host_tails >> d & 1)) || LeavesTail(extent[d], factors);
}

bool StageWindow::Fits(int d, const std::vector<int64_t>& factors) const {
  return FactorProduct(factors) <= extent[d] && !TooManySplits(d, factors);
}

int64_t FactorProduct(const std::vector<int64_t>& factors) {
  int64_t product = 1;
  for (int64_t f : factors) {
    product = product > std::numeric_limits<int64_t>::max() / f
                  ? std::numeric_limits<int64_t>::max()
                  : product * f;
  }
  return product;
}

void ScheduleSpaceImpl::SetClampedWindow(const ScheduleSpace& space, SpecState& state, int stage,
                                         int host, const ResolvedDefinition& host_def, int q,
                                         StageState* out) {
  if (!host_def.PureLoopInside(q) || !state.ReadClamped(stage)) {
    out->clamped_window = false;
    return;
  }
  // Loose unless the loop is of a stage that does not read this one (a consumer's
  // consumer: a fused task's output strip) and no reduction loop encloses it.
  const std::vector<StageUse>& uses = state.Uses(stage);
  const bool read_by_host =
      std::any_of(uses.begin(), uses.end(), [&](const StageUse& u) { return u.stage == host; });
  const bool in_reduction =
      std::any_of(out->chain.begin(), out->chain.end(), [&](const ChainLoop& l) {
        return l.update && l.dim >= space.stages_[l.stage].defs[1].num_pure;
      });
  out->clamped_window = read_by_host || in_reduction;
}

void ScheduleSpaceImpl::ResolveUnchecked(const ScheduleSpace& space, SpecState& state, int pos,
                                         StageState* out) {
  const StageSchedule& d = state.spec().stages(pos);
  const int stage = space.order_[pos];
  const ScheduleSpace::StageInfo& info = space.stages_[stage];
  out->location = state.Location(pos);
  out->window = RootWindow(space, stage);
  for (int u = 0; u < (info.has_update ? 2 : 1); ++u) {
    ResolveDefinition(space, stage, u == 1, u == 1 ? d.update() : d.pure(), &out->defs[u]);
  }
  // AT: the chain, clamped window and window of the host loop (none on an illegal spec).
  const auto at_host = [&] {
    const LoopRef& at = d.compute_at();
    const int value = space.graph_.FindValue(at.stage());
    if (value < 0 || space.graph_.value(value).kind != Value::Kind::kStage) return;
    const int host = space.graph_.value(value).index;
    const int host_pos = space.position_[host];
    if (host_pos >= pos) return;
    const StageState& hs = state.At(host_pos);
    const bool update = at.update() && space.stages_[host].has_update;
    const int dim = space.stages_[host].defs[update ? 1 : 0].FindDim(at.dim());
    const int q = dim < 0 ? -1 : hs.defs[update ? 1 : 0].Find(dim, at.level());
    if (q < 0) return;
    ExtendChain(hs, host, update, q, out);
    SetClampedWindow(space, state, stage, host, hs.defs[update ? 1 : 0], q, out);
    out->window = WindowAt(space, state, stage, host, update, q);
  };
  if (out->location == AT) at_host();
  SetNestedSplits(space, stage, out);
}

Status ScheduleSpaceImpl::CheckDecision(const ScheduleSpace& space, SpecState& state, int pos,
                                        StageState* out) {
  const StageSchedule& d = state.spec().stages(pos);
  const int stage = space.order_[pos];
  const ScheduleSpace::StageInfo& info = space.stages_[stage];
  auto where = [&] { return StageWhere(info.name); };
  for (int u = 0; u < 2; ++u) {
    out->defs[u].num_levels.assign(info.defs[u].dims.size(), 1);
    out->defs[u].factors.assign(info.defs[u].dims.size(), {});
    out->defs[u].loops = NaturalLoops(info.defs[u], out->defs[u].num_levels, out->defs[u].factors);
  }
  ComputeLocation location = d.compute();
  if (location == COMPUTE_LOCATION_UNSPECIFIED) location = info.inline_legal ? INLINE : ROOT;
  out->location = location;
  out->window = RootWindow(space, stage);
  if (location != INLINE && location != ROOT && location != AT) {
    return Status::Error(where() + ": compute: unknown location " + std::to_string(location));
  }
  if (location != AT && d.has_compute_at()) {
    return Status::Error(where() + ": compute_at: set but the stage is computed " +
                         ComputeLocation_Name(location));
  }
  if (d.store() != AT && d.has_store_at()) {
    return Status::Error(where() + ": store_at: set but store is not AT");
  }
  if (d.store() == INLINE) {
    return Status::Error(where() + ": store: INLINE is not a storage location");
  }
  if (d.store() != COMPUTE_LOCATION_UNSPECIFIED && d.store() != ROOT && d.store() != AT) {
    return Status::Error(where() + ": store: unknown location " + std::to_string(d.store()));
  }
  if (!info.has_update && d.has_update() && d.update().ByteSizeLong() > 0) {
    return Status::Error(where() + ": update: the stage has no update definition");
  }

  if (location == INLINE &&
      (!d.storage_innermost().empty() || d.pack_weights() || d.padded_copy())) {
    return Status::Error(where() + ": " +
                         (d.pack_weights()  ? "pack_weights"
                          : d.padded_copy() ? "padded_copy"
                                            : "storage_innermost") +
                         ": set on an inlined stage, which has no buffer of its own");
  }
  if (!d.storage_innermost().empty()) {
    if (info.is_output) {
      return Status::Error(
          where() + ": storage_innermost: '" + d.storage_innermost() +
          "' on an output, whose buffer the caller passes in the pipeline's layout");
    }
    if (info.defs[0].FindDim(d.storage_innermost()) < 0) {  // the pure definition's dims
      return Status::Error(where() + ": storage_innermost: no pure dim '" +
                           d.storage_innermost() + "' (dims: d0 to d" +
                           std::to_string(info.defs[0].num_pure - 1) + ")");
    }
  }
  if (d.pack_weights() && !info.packable) {
    return PackableWeights(space.graph_, stage).status();  // says why not
  }
  if (d.padded_copy() && !info.copyable) {
    // A copy of a stage computed at root (an assembled network's task boundary).
    const Value& input = space.graph_.value(space.graph_.stage_inputs(stage)[0]);
    ComputeLocation producer = COMPUTE_LOCATION_UNSPECIFIED;
    if (input.kind == Value::Kind::kStage) {
      const int at = space.position_[input.index];
      if (at < state.spec().stages_size()) producer = state.spec().stages(at).compute();
    }
    SCHEDFARM_RETURN_IF_ERROR(PaddedCopyAllowed(space.graph_, stage, producer));  // says why not
  }
  if (location == INLINE) {
    if (info.has_update) {
      return Status::Error(where() + ": compute: INLINE, but a stage with an update definition " +
                           "cannot be inlined");
    }
    if (info.is_output) {
      return Status::Error(where() + ": compute: INLINE, but outputs are computed at root");
    }
    if (d.store() != COMPUTE_LOCATION_UNSPECIFIED) {
      return Status::Error(where() + ": store: set on an inlined stage");
    }
    if (d.pure().ByteSizeLong() > 0) {
      return Status::Error(where() + ": pure: directives on an inlined stage");
    }
    return Status::Ok();
  }
  if (location == ROOT && d.store() == AT) {
    return Status::Error(where() + ": store: AT, but a stage computed at root is stored at root");
  }

  for (int u = 0; u < (info.has_update ? 2 : 1); ++u) {
    SCHEDFARM_RETURN_IF_ERROR(
        ResolveDefinition(space, stage, u == 1, u == 1 ? d.update() : d.pure(), &out->defs[u]));
  }
  // Halide 14's code for a guarded vectorized tail of strided loads with an unrolled
  // loop can crash (rule 7 of docs/SCHEDULES.md); weights read transposed are read dense
  // once packed.
  const bool dense_once_packed = !info.strided_loads && d.pack_weights();
  for (int u = 0; u < (info.has_update ? 2 : 1) && state.strict(); ++u) {
    const ResolvedDefinition& def = out->defs[u];
    const int vpos = def.VectorizedPosition();
    if (!info.defs[u].guarded_strided || dense_once_packed || vpos < 0 ||
        def.loops[vpos].level == 0) {
      continue;
    }
    for (const SpaceLoop& loop : def.loops) {
      if (!loop.unrolled) continue;
      const SpaceLoop& vloop = def.loops[vpos];
      const SpaceDefinition& sdef = info.defs[u];
      return Status::Error(
          where() + ": " + DefName(u == 1) + ".unroll: loop " +
          LoopText(sdef, loop.dim, loop.level, def.num_levels[loop.dim]) +
          " is unrolled with the vectorized split level " +
          LoopText(sdef, vloop.dim, vloop.level, def.num_levels[vloop.dim]) +
          " of a stage that loads with a stride or a gather and has guarded tails: Halide " +
          "14's code for the tail (predicated strided loads) can crash when unrolled; " +
          "unroll nothing or vectorize no split level");
    }
  }
  if (info.has_update && state.strict()) {
    SCHEDFARM_RETURN_IF_ERROR(CheckRegisterTile(info.defs[1], out->defs[1]).WithContext(where()));
    SCHEDFARM_RETURN_IF_ERROR(CheckReductionTail(info.defs[1], out->defs[1]).WithContext(where()));
  }
  if (location == ROOT) {
    SetNestedSplits(space, stage, out);
    return Status::Ok();
  }

  // AT: the host loop.
  if (info.is_output) {
    return Status::Error(where() + ": compute: AT, but outputs are computed at root");
  }
  for (int u = 0; u < (info.has_update ? 2 : 1); ++u) {
    for (const SpaceLoop& loop : out->defs[u].loops) {
      if (loop.reduction || loop.level > 0 || loop.extent <= 1) continue;
      if (!loop.vectorized && !loop.unrolled) continue;
      const SpaceDefinition& def = info.defs[u];
      return Status::Error(
          where() + ": " + DefName(u == 1) + "." + (loop.vectorized ? "vectorize" : "unroll") +
          ": loop " + LoopText(def, loop.dim, loop.level, out->defs[u].num_levels[loop.dim]) +
          " of a stage computed at a consumer loop spans the region that loop asks for, " +
          "whose extent Halide does not know as a constant; only the inner levels of a " +
          "split can be vectorized or unrolled there");
    }
  }
  if (!d.has_compute_at()) {
    return Status::Error(where() + ": compute_at: missing (compute is AT)");
  }
  const LoopRef& at = d.compute_at();
  auto at_where = [&] {
    return where() + ": compute_at " + at.stage() + "." + at.dim() + " level " +
           std::to_string(at.level()) + (at.update() ? " (update)" : "");
  };
  const int value = space.graph_.FindValue(at.stage());
  if (value < 0 || space.graph_.value(value).kind != Value::Kind::kStage) {
    return Status::Error(at_where() + ": no stage named '" + at.stage() + "'");
  }
  const int host = space.graph_.value(value).index;
  const int host_pos = space.position_[host];
  if (host_pos >= pos) {
    return Status::Error(at_where() + ": '" + at.stage() + "' is decided after this stage, so " +
                         "it does not consume it");
  }
  const StageState& hs = state.At(host_pos);
  if (hs.location == INLINE) {
    return Status::Error(at_where() + ": '" + at.stage() + "' is inlined and has no loops");
  }
  const ScheduleSpace::StageInfo& hinfo = space.stages_[host];
  if (at.update() && !hinfo.has_update) {
    return Status::Error(at_where() + ": '" + at.stage() + "' has no update definition");
  }
  const int hu = at.update() ? 1 : 0;
  const SpaceDefinition& hdef = hinfo.defs[hu];
  const ResolvedDefinition& hres = hs.defs[hu];
  const int dim = hdef.FindDim(at.dim());
  if (dim < 0) {
    return Status::Error(at_where() + ": no dim '" + at.dim() +
                         "' in that definition (dims: " + DimList(hdef) + ")");
  }
  const int q = hres.Find(dim, at.level());
  if (q < 0) {
    return Status::Error(at_where() + ": dim '" + at.dim() + "' has " +
                         std::to_string(hres.num_levels[dim]) + " level(s) after the host's " +
                         "splits, no level " + std::to_string(at.level()));
  }
  const SpaceLoop& loop = hres.loops[q];
  if (loop.vectorized) return Status::Error(at_where() + ": the loop is vectorized");
  if (loop.unrolled) return Status::Error(at_where() + ": the loop is unrolled");
  const int vpos = hres.VectorizedPosition();
  if (q < vpos) return Status::Error(at_where() + ": the loop is inside the vectorized loop");

  // The loop must enclose every use of the stage.
  const ChainLoop target{host, hu == 1, dim, at.level()};
  const std::vector<StageUse>& uses = state.Uses(stage);
  if (uses.empty()) {
    return Status::Error(at_where() + ": no stage reads this one, so no loop encloses its uses");
  }
  for (const StageUse& use : uses) {
    const StageState& us = state.At(space.position_[use.stage]);
    for (int u = 0; u < 2; ++u) {
      if (!(use.defs >> u & 1)) continue;
      bool found = std::find(us.chain.begin(), us.chain.end(), target) != us.chain.end();
      if (use.stage == host && u == hu) found = true;  // every loop of that definition
      if (!found) {
        return Status::Error(at_where() + ": the loop does not enclose the use of this stage in '" +
                             space.stages_[use.stage].name + "' (" + DefName(u == 1) +
                             " definition)");
      }
    }
  }

  // Halide 14 overestimates the region a stage covers at a loop of a host whose own
  // region is clamped and spans loops of its host (rule 4 of docs/SCHEDULES.md).
  if (state.strict() && hs.clamped_window && hres.PureLoopInside(q)) {
    return Status::Error(
        at_where() + ": '" + at.stage() + "' is computed at a loop of its consumer with " +
        "pure loops inside and read through clamped indices (padding), and this loop of " +
        "it has pure loops inside: Halide 14's bounds of the region computed there are " +
        "loose and require the pipeline's inputs beyond their extent; compute the stage " +
        "inside every pure loop of '" + at.stage() + "' or at root");
  }
  // Loops along which the host reads none of the stage recompute all it reads of it in
  // every iteration (rule 10 of docs/SCHEDULES.md).
  std::vector<int> repeating;
  const int64_t recomputed =
      state.strict() ? Recomputations(space, stage, host, hres, q, &repeating) : 1;
  if (recomputed > 1) {
    std::string loops;
    for (int d : repeating) loops += (loops.empty() ? "'" : ", '") + hdef.dims[d].name + "'";
    return Status::Error(
        at_where() + ": '" + at.stage() + "' reads none of '" + info.name + "' along " + loops +
        " (a dense convolution's output channels each read every input channel, a matmul's " +
        "columns all of a and its rows all of b), and this loop lies inside its loops of " +
        "those dims, so '" + info.name + "' would be computed " + std::to_string(recomputed) +
        " times over: compute it outside them, or at root");
  }
  ExtendChain(hs, host, hu == 1, q, out);
  SetClampedWindow(space, state, stage, host, hres, q, out);

  // A split larger than the window of the compute location only makes a loop of
  // extent 1 and a partly false guard, and Halide 14 mislowers some of them (rule 5 of
  // docs/SCHEDULES.md).
  out->window = WindowAt(space, state, stage, host, hu == 1, q);
  for (int u = 0; u < (info.has_update ? 2 : 1) && state.strict(); ++u) {
    for (size_t d = 0; d < out->window.extent.size(); ++d) {
      const std::string& name = info.defs[u].dims[d].name;
      const std::string at_loop =
          at.stage() + "." + LoopVarName(at.dim(), at.level(), hres.num_levels[dim]);
      const int64_t product = FactorProduct(out->defs[u].factors[d]);
      const int64_t window = out->window.extent[d];
      if (product > window) {
        return Status::Error(
            where() + ": " + DefName(u == 1) + ".splits: dim '" + name + "' split by " +
            std::to_string(product) + " at " + at_loop + ", which gives this stage a window of " +
            std::to_string(window) + " along it: a split larger than the window only makes a " +
            "loop of extent 1 and a partly false guard, and Halide 14 mislowers some of them; " +
            "split '" + name + "' by at most " + std::to_string(window));
      }
      // Halide 14's bounds of a region inside nested tiles grow past the inputs
      // (rule 6 of docs/SCHEDULES.md).
      const int splits = out->defs[u].num_levels[d] - 1;
      const int host_splits = out->window.host_splits[d];
      if (out->window.TooManySplits(static_cast<int>(d), out->defs[u].factors[d])) {
        return Status::Error(
            where() + ": " + DefName(u == 1) + ".splits: dim '" + name + "' split " +
            Times(splits) + " at " + at_loop + ", inside tiles of " + std::to_string(host_splits) +
            " splits of its hosts along it, one with a tail: " +
            "Halide 14 bounds regions inside more than " + std::to_string(kMaxNestedSplits) +
            " nested splits with tails beyond the pipeline's inputs; split '" + name +
            "' at most " + Times(std::max(0, kMaxNestedSplits - host_splits)) + " here");
      }
    }
  }
  SetNestedSplits(space, stage, out);

  // Storage outside the compute loop makes Halide 14 apply its sliding-window and
  // storage-folding passes, which compute wrong values for schedules of this space.
  if (d.store() == AT && !d.has_store_at()) {
    return Status::Error(where() + ": store_at: missing (store is AT)");
  }
  if (d.store() == ROOT || (d.store() == AT && !SameRef(d.store_at(), at))) {
    return Status::Error(where() + ": store: storage outside the compute loop is not part of " +
                         "the space (Halide 14's sliding window computes wrong values for " +
                         "such schedules); store at the compute loop");
  }
  return Status::Ok();
}

Status ScheduleSpace::Check(const ScheduleSpec& spec) const { return Check(spec, true); }

Status ScheduleSpace::CheckMeasured(const ScheduleSpec& spec) const { return Check(spec, false); }

Status ScheduleSpace::Check(const ScheduleSpec& spec, bool strict) const {
  if (!spec.pipeline_id().empty() && spec.pipeline_id() != pipeline_id_) {
    return Status::Error("schedule: pipeline_id " + spec.pipeline_id() +
                         " is not this pipeline's id " + pipeline_id_);
  }
  const int n = static_cast<int>(order_.size());
  if (spec.stages_size() > n) {
    return Status::Error("schedule: lists " + std::to_string(spec.stages_size()) +
                         " stages, the pipeline has " + std::to_string(n));
  }
  for (int i = 0; i < spec.stages_size(); ++i) {
    const std::string& name = spec.stages(i).stage();
    if (name == stages_[order_[i]].name) continue;
    const int value = graph_.FindValue(name);
    if (value < 0 || graph_.value(value).kind != Value::Kind::kStage) {
      return Status::Error("schedule: decision " + std::to_string(i) + " names '" + name +
                           "', which is not a stage of the pipeline");
    }
    return Status::Error("schedule: decision " + std::to_string(i) + " is for stage '" + name +
                         "' but decision order puts '" + stages_[order_[i]].name +
                         "' there (stages are decided outputs first, each once; '" + name +
                         "' is decision " + std::to_string(position_[graph_.value(value).index]) +
                         ")");
  }
  if (!spec.partial() && spec.stages_size() < n) {
    return Status::Error("schedule: complete (partial = false) but it decides " +
                         std::to_string(spec.stages_size()) + " of " + std::to_string(n) +
                         " stages; the first missing is '" +
                         stages_[order_[spec.stages_size()]].name + "'");
  }
  SpecState state(*this, spec, strict);
  for (int i = 0; i < spec.stages_size(); ++i) SCHEDFARM_RETURN_IF_ERROR(state.Resolve(i));
  return Status::Ok();
}

}  // namespace schedfarm
