#include "learner/schedule_eval.h"

#include <algorithm>

#include "common/int_math.h"

namespace schedfarm {
namespace features_internal {
namespace {

// Dim names are a few characters: compared inline. A pure dim "d<a>" of output axis a
// is dim rank - 1 - a (LoopNestOf).
int FindDim(const std::vector<DimInfo>& dims, int rank, const std::string& name) {
  const size_t n = name.size();
  const char* c = name.data();
  if (n == 2 && c[0] == 'd' && c[1] >= '0' && c[1] < '0' + rank) {
    const int i = rank - 1 - (c[1] - '0');
    if (dims[i].name[1] == c[1]) return i;
  }
  for (size_t i = 0; i < dims.size(); ++i) {
    const std::string& d = dims[i].name;
    if (d.size() != n) continue;
    size_t k = 0;
    while (k < n && d[k] == c[k]) ++k;
    if (k == n) return static_cast<int>(i);
  }
  return -1;
}

}  // namespace

// ---------------------------------------------------------------------------------
// Decisions

void ScheduleEvaluator::ResolveDefinition(int s, int def, const DefinitionSchedule* schedule,
                                          bool output) {
  const StageModel& m = model_->stages[s];
  const std::vector<DimInfo>& dims = m.defs[def];
  DefState& d = states_[s].defs[def];
  d.present = true;
  d.num_dims = static_cast<int>(dims.size());
  d.num_pure = m.rank;
  d.vectorized_position = -1;
  for (int i = 0; i < d.num_dims; ++i) d.levels[i] = 1;
  if (schedule != nullptr) {
    for (const DimSplit& split : schedule->splits()) {
      const int i = FindDim(dims, m.rank, split.dim());
      if (i < 0 || split.factors_size() == 0) continue;
      d.levels[i] = static_cast<int8_t>(split.factors_size() + 1);
      for (int k = 0; k < split.factors_size() && k < kMaxLevels - 1; ++k) {
        d.factors[i][k] = split.factors(k);
      }
    }
  }
  // Natural order, innermost first: reduction dims, then pure dims; each dim's levels
  // innermost first.
  int n = 0;
  auto add_dim = [&](int i) {
    for (int level = d.levels[i] - 1; level >= 0; --level) {
      LoopState& loop = d.loops[n];
      loop = LoopState();
      loop.dim = static_cast<int8_t>(i);
      loop.level = static_cast<int8_t>(level);
      loop.reduction = dims[i].reduction;
      d.pos[i][level] = static_cast<int8_t>(n);
      ++n;
    }
  };
  for (int i = d.num_pure; i < d.num_dims; ++i) add_dim(i);
  for (int i = 0; i < d.num_pure; ++i) add_dim(i);
  d.num_loops = n;
  // Reduction loops have their extents already (pure loops get theirs from the region).
  for (int q = 0; q < n; ++q) {
    LoopState& loop = d.loops[q];
    if (!loop.reduction) continue;
    const int i = loop.dim, levels = d.levels[i];
    int64_t product = 1;
    for (int k = 0; k < levels - 1; ++k) product *= d.factors[i][k];
    loop.extent =
        loop.level > 0 ? d.factors[i][levels - 1 - loop.level] : CeilDiv(dims[i].extent, product);
  }
  if (schedule != nullptr && schedule->loop_order_size() > 0) {
    // The named loops take the slots they occupy in the natural order, in the listed
    // order; the others keep theirs.
    int named[kMaxLoops], slots[kMaxLoops], count = 0;
    for (const LoopRef& ref : schedule->loop_order()) {
      const int i = FindDim(dims, m.rank, ref.dim());
      if (i < 0 || ref.level() < 0 || ref.level() >= d.levels[i] || count >= kMaxLoops) continue;
      named[count] = slots[count] = d.pos[i][ref.level()];
      ++count;
    }
    std::sort(slots, slots + count);
    std::copy(d.loops, d.loops + n, natural_);
    for (int j = 0; j < count; ++j) d.loops[slots[j]] = natural_[named[j]];
    for (int q = 0; q < n; ++q) d.pos[d.loops[q].dim][d.loops[q].level] = static_cast<int8_t>(q);
  }
  if (schedule != nullptr) {
    auto position = [&](const LoopRef& ref) {
      const int i = FindDim(dims, m.rank, ref.dim());
      if (i < 0 || ref.level() < 0 || ref.level() >= d.levels[i]) return -1;
      return static_cast<int>(d.pos[i][ref.level()]);
    };
    if (schedule->has_vectorize()) {
      const int q = position(schedule->vectorize());
      if (q >= 0) {
        d.loops[q].vectorized = true;
        d.vectorized_position = q;
      }
    }
    for (const LoopRef& ref : schedule->unroll()) {
      const int q = position(ref);
      if (q >= 0) d.loops[q].unrolled = true;
    }
    for (const LoopRef& ref : schedule->parallel()) {
      const int q = position(ref);
      if (q >= 0) d.loops[q].parallel = true;
    }
  }
  const TailStrategy tail =
      ResolvedTail(schedule != nullptr ? schedule->tail() : TAIL_AUTO, def == 1, output);
  d.shift_inwards = tail == TAIL_SHIFT_INWARDS;
}

void ScheduleEvaluator::Resolve(const ScheduleSpace& space, int s, const StageSchedule* decision) {
  const StageModel& m = model_->stages[s];
  StageState& st = states_[s];
  ComputeLocation location = decision != nullptr ? decision->compute() : ROOT;
  if (location == COMPUTE_LOCATION_UNSPECIFIED) location = m.inline_legal ? INLINE : ROOT;
  st.location = location;
  st.inlined = location == INLINE;
  st.host = -1;
  st.host_def = 0;
  st.host_position = -1;
  st.global_set = false;
  st.realizations = 0;
  st.outer_parallel = 1;
  st.depth = 0;
  st.inline_evaluations = 0;
  st.inline_sites = 0;
  st.site_stamp = -1;
  st.defs[0].present = st.defs[1].present = false;
  if (st.inlined) return;  // no loops of its own
  ResolveDefinition(s, 0, decision != nullptr ? &decision->pure() : nullptr, m.is_output);
  if (m.has_update) {
    ResolveDefinition(s, 1, decision != nullptr ? &decision->update() : nullptr, m.is_output);
  }
  if (location == AT) {
    const LoopRef& at = decision->compute_at();
    const int value = space.graph().FindValue(at.stage());
    const int host = space.graph().value(value).index;
    const int host_def = at.update() && model_->stages[host].has_update ? 1 : 0;
    const DefState& hd = states_[host].defs[host_def];
    const int dim =
        FindDim(model_->stages[host].defs[host_def], model_->stages[host].rank, at.dim());
    st.host = host;
    st.host_def = host_def;
    st.host_position = hd.pos[dim][at.level()];
  }
}

// ---------------------------------------------------------------------------------
// Extents, representative iterations and iteration boxes

// A dim split by factors f_0 (innermost) .. f_{n-2} has Halide variables v_0 (the dim)
// .. v_{n-1} (level 0): v_k = v_{k+1} * f_k + L_{n-1-k}, L_l the loop of level l, each
// v_k ranging over E_k = ceil(E_{k-1} / f_{k-1}) values (E_0 the dim's extent). With
// ShiftInwards (outputs), v_k = min(v_{k+1} * f_k, E_k - f_k) + L_{n-1-k}.

void ScheduleEvaluator::SetExtentsAndIndices(int s) {
  const StageModel& m = model_->stages[s];
  StageState& st = states_[s];
  for (int def = 0; def < 2; ++def) {
    DefState& d = st.defs[def];
    if (!d.present) continue;
    int64_t extent[kMaxDefDims];
    for (int i = 0; i < d.num_dims; ++i) {
      extent[i] = i < d.num_pure ? st.region[i].extent() : m.defs[def][i].extent;
    }
    for (int q = 0; q < d.num_loops; ++q) {
      LoopState& loop = d.loops[q];
      const int i = loop.dim, n = d.levels[i];
      if (loop.level > 0) {
        loop.extent = d.factors[i][n - 1 - loop.level];
      } else {
        int64_t product = 1;
        for (int k = 0; k < n - 1; ++k) product *= d.factors[i][k];
        loop.extent = CeilDiv(extent[i], product);
      }
      loop.index = (loop.extent - 1) / 2;
    }
    CountIterations(d, extent);
    if (d.shift_inwards) continue;
    // Guarded tails: v_k <= E_k - 1 is tested inside the innermost of the loops that
    // define v_k (levels 0 .. n-1-k); where it would fail, that loop's iteration moves
    // down to the last one that passes. Outer variables are tested first.
    for (int i = 0; i < d.num_dims; ++i) {
      const int n = d.levels[i];
      if (n == 1) continue;
      int64_t e[kMaxLevels];  // E_k
      e[0] = extent[i];
      for (int k = 1; k < n; ++k) e[k] = CeilDiv(e[k - 1], d.factors[i][k - 1]);
      for (int k = n - 2; k >= 0; --k) {
        const int top = n - 1 - k;  // v_k is defined by levels 0 .. top
        int nearest = 0;
        for (int l = 1; l <= top; ++l) {
          if (d.pos[i][l] < d.pos[i][nearest]) nearest = l;
        }
        // v_k = (..(L_0 * f_{n-2} + L_1) * f_{n-3} + ..) * f_k + L_top, and the stride
        // of level `nearest` in it.
        int64_t v = d.loops[d.pos[i][0]].index, stride = 1;
        for (int l = 1; l <= top; ++l) v = v * d.factors[i][n - 1 - l] + d.loops[d.pos[i][l]].index;
        for (int l = nearest; l < top; ++l) stride *= d.factors[i][n - 2 - l];
        LoopState& loop = d.loops[d.pos[i][nearest]];
        if (v > e[k] - 1) {
          const int64_t rest = v - loop.index * stride;
          loop.index = std::max<int64_t>(0, (e[k] - 1 - rest) / stride);
        }
      }
    }
  }
}

// With guarded tails, v_0 = sum_k L_k * s_k (s_k the stride of level k: the product of
// the extents of the levels inside it) must stay below the dim's extent E; that implies
// the guards of the other variables (v_k = floor(v_0 / s_{n-1-k})). The levels are the
// digits of a mixed-radix number: the tuples that pass are counted digit by digit,
// most significant first, against the digits of E - 1.
double ScheduleEvaluator::DimCount(const DefState& d, int i, int free_upto, int64_t extent) {
  const int n = d.levels[i];
  const int8_t* pos = d.pos[i];
  if (n == 1) return pos[0] <= free_upto ? static_cast<double>(d.loops[pos[0]].extent) : 1.0;
  if (d.shift_inwards) {  // every iteration runs
    double product = 1;
    for (int k = 0; k < n; ++k) {
      if (pos[k] <= free_upto) product *= static_cast<double>(d.loops[pos[k]].extent);
    }
    return product;
  }
  int num_free = 0;
  for (int k = 0; k < n; ++k) num_free += pos[k] <= free_upto;
  if (extent <= 0) return 0;
  if (num_free == 0) return 1;  // the representative path runs
  if (num_free == n) return static_cast<double>(extent);
  int64_t ext[kMaxLevels];
  bool free[kMaxLevels];
  int64_t stride[kMaxLevels];
  double rest[kMaxLevels + 1];  // iterations of the free levels inside level k
  int64_t highest = 0;          // v_0 with every free level at its last iteration
  stride[n - 1] = 1;
  rest[n] = 1;
  for (int k = n - 1; k >= 0; --k) {
    ext[k] = d.loops[pos[k]].extent;
    free[k] = pos[k] <= free_upto;
    if (k < n - 1) stride[k] = stride[k + 1] * ext[k + 1];
    rest[k] = rest[k + 1] * (free[k] ? static_cast<double>(ext[k]) : 1.0);
    highest += (free[k] ? ext[k] - 1 : d.loops[pos[k]].index) * stride[k];
  }
  const int64_t last = extent - 1;
  if (highest <= last) return rest[0];  // no tail inside: all of them run
  double count = 0;
  for (int k = 0; k < n; ++k) {
    const int64_t digit = k == 0 ? last / stride[0] : (last / stride[k]) % ext[k];
    if (free[k]) {
      count += static_cast<double>(std::min(digit, ext[k])) * rest[k + 1];
      if (digit >= ext[k]) return count;
    } else {
      const int64_t index = d.loops[pos[k]].index;
      if (index < digit) return count + rest[k + 1];
      if (index > digit) return count;
    }
  }
  return count + 1;  // v_0 = E - 1 itself
}

void ScheduleEvaluator::CountIterations(DefState& d, const int64_t* extent) {
  double count[kMaxDefDims];
  double total = 1;
  for (int i = 0; i < d.num_dims; ++i) {
    count[i] = DimCount(d, i, kMaxLoops, extent[i]);
    total *= count[i];
  }
  d.iterations = total;
  d.vectors = 0;
  d.scalars = total;
  if (d.vectorized_position < 0 || total == 0) return;
  // Vectors of the vectorized dim: the tuples of its other levels where every lane
  // passes the guard. With the vectorized level l of width w and stride s (levels inside
  // it), v_0 = H * s * w + lane * s + inner: blocks H below E / (s w) run all their
  // vectors; in the last block, those with inner + (w - 1) s < E mod (s w).
  const LoopState& v = d.loops[d.vectorized_position];
  const int i = v.dim;
  const int64_t w = v.extent;
  double full = count[i] / static_cast<double>(w);  // ShiftInwards, or an unsplit dim
  if (!d.shift_inwards && d.levels[i] > 1) {
    int64_t s = 1;
    for (int k = v.level + 1; k < d.levels[i]; ++k) s *= d.loops[d.pos[i][k]].extent;
    const int64_t block = s * w;
    const int64_t last_block = std::max<int64_t>(0, extent[i] % block - (w - 1) * s);
    full = static_cast<double>(extent[i] / block * s + std::min(s, last_block));
  }
  const double others = total / count[i];
  d.vectors = full * others;
  d.scalars = (count[i] - full * static_cast<double>(w)) * others;
}

Interval ScheduleEvaluator::DimInterval(const DefState& d, int i, int free_upto,
                                        int64_t extent) const {
  const int n = d.levels[i];
  Interval l[kMaxLevels];
  bool point = true;
  for (int k = 0; k < n; ++k) {
    const LoopState& loop = d.loops[d.pos[i][k]];
    l[k] = d.pos[i][k] <= free_upto ? Interval{0, loop.extent - 1, false, false}
                                    : Interval{loop.index, loop.index, true, true};
    point = point && l[k].point;
  }
  if (n == 1) return l[0];  // the loop variable itself
  int64_t e[kMaxLevels];    // E_k
  e[0] = extent;
  for (int k = 1; k < n; ++k) e[k] = CeilDiv(e[k - 1], d.factors[i][k - 1]);
  Interval v = l[0];  // v_{n-1}
  for (int k = n - 2; k >= 0; --k) {
    const int64_t f = d.factors[i][k];
    const Interval& inner = l[n - 1 - k];
    if (d.shift_inwards) {
      v = {std::min(v.lo * f, e[k] - f) + inner.lo, std::min(v.hi * f, e[k] - f) + inner.hi};
    } else {
      v = {v.lo * f + inner.lo, v.hi * f + inner.hi};
      v.hi = std::min(v.hi, e[k] - 1);  // the guard (a promise_clamped variable)
    }
  }
  v.point = point;
  v.symbol = false;  // a let of its levels
  return v;
}

void ScheduleEvaluator::IterationBox(int s, int def, int free_upto, Interval* pure,
                                     Interval* red) const {
  const StageModel& m = model_->stages[s];
  const StageState& st = states_[s];
  const DefState& d = st.defs[def];
  for (int i = 0; i < d.num_pure; ++i) {
    const Interval v = DimInterval(d, i, free_upto, st.region[i].extent());
    pure[i] = {st.region[i].lo + v.lo, st.region[i].lo + v.hi, v.point, v.symbol};
  }
  for (int i = d.num_pure; i < d.num_dims; ++i) {
    red[i - d.num_pure] = DimInterval(d, i, free_upto, m.defs[def][i].extent);
  }
}

void ScheduleEvaluator::WholeReduction(int s, int def, Interval* red) const {
  const DefState& d = states_[s].defs[def];
  for (int i = d.num_pure; i < d.num_dims; ++i) {
    red[i - d.num_pure] = DimInterval(d, i, kMaxLoops, model_->stages[s].defs[def][i].extent);
  }
}

void ScheduleEvaluator::UpdateIterationBox(int s, int def, int i, int free_upto, Interval* pure,
                                           Interval* red) const {
  const StageState& st = states_[s];
  const DefState& d = st.defs[def];
  if (i < d.num_pure) {
    const Interval v = DimInterval(d, i, free_upto, st.region[i].extent());
    pure[i] = {st.region[i].lo + v.lo, st.region[i].lo + v.hi, v.point, v.symbol};
  } else {
    red[i - d.num_pure] = DimInterval(d, i, free_upto, model_->stages[s].defs[def][i].extent);
  }
}

template <typename Leaf>
void ScheduleEvaluator::Walk(int s, int def_mask, const Interval* pure, const Interval* red,
                             Leaf& leaf) {
  for (const InputAccess& acc : model_->stages[s].inputs) {
    if (!(acc.defs & def_mask)) continue;
    Interval box[kMaxRank];
    for (int j = 0; j < acc.rank; ++j) box[j] = MapInterval(acc.coords[j], acc, pure, red);
    const bool through = acc.producer >= 0 && states_[acc.producer].inlined;
    leaf(acc, box, through);
    if (through) Walk(acc.producer, 1, box, nullptr, leaf);
  }
}

void ScheduleEvaluator::Touch(int s, int def, const Interval* pure, const Interval* red,
                              bool reset) {
  if (reset) {
    ++stamp_;
    touched_.clear();
  }
  auto leaf = [&](const InputAccess& acc, const Interval* box, bool through) {
    if (through) return;
    Interval* dst = &value_boxes_[acc.value * kMaxRank];
    if (value_stamp_[acc.value] != stamp_) {
      value_stamp_[acc.value] = stamp_;
      touched_.push_back(acc.value);
      std::copy(box, box + acc.rank, dst);
    } else {
      for (int j = 0; j < acc.rank; ++j) dst[j] = Hull(dst[j], box[j]);
    }
  };
  Walk(s, 1 << def, pure, red, leaf);
}

// ---------------------------------------------------------------------------------
// Regions and realizations

void ScheduleEvaluator::ComputeGlobalRegions() {
  for (int s : order_) {
    const StageModel& m = model_->stages[s];
    StageState& st = states_[s];
    if (st.inlined) continue;
    if (m.is_output || !st.global_set) {
      for (int j = 0; j < m.rank; ++j) st.global[j] = {0, m.shape[j] - 1, false, false};
      st.global_set = true;
    }
    // Every iteration of every realization: the pure dims cover the global region
    // exactly (guarded or shifted tails), reduction dims their split ranges.
    for (int def = 0; def < 2; ++def) {
      const DefState& d = st.defs[def];
      if (!d.present) continue;
      Interval red[kMaxDefDims];
      WholeReduction(s, def, red);
      // The consumer's loops run over its global region: a range, never a point.
      Interval pure[kMaxRank];
      for (int j = 0; j < m.rank; ++j) pure[j] = {st.global[j].lo, st.global[j].hi, false, false};
      auto leaf = [&](const InputAccess& acc, const Interval* box, bool) {
        if (acc.producer < 0) return;
        StageState& p = states_[acc.producer];
        if (!p.global_set) {
          std::copy(box, box + acc.rank, p.global);
          p.global_set = true;
        } else {
          for (int j = 0; j < acc.rank; ++j) p.global[j] = Hull(p.global[j], box[j]);
        }
      };
      Walk(s, 1 << def, pure, red, leaf);
    }
  }
}

void ScheduleEvaluator::ComputeRealizations() {
  for (int s : order_) {
    const StageModel& m = model_->stages[s];
    StageState& st = states_[s];
    if (st.inlined) continue;
    bool placed = false;
    if (st.location == AT && st.host >= 0) {
      const StageState& hs = states_[st.host];
      const DefState& hd = hs.defs[st.host_def];
      const int q = st.host_position;
      Interval pure[kMaxRank], red[kMaxDefDims];
      IterationBox(st.host, st.host_def, q - 1, pure, red);
      Touch(st.host, st.host_def, pure, red);
      // A stage computed at a loop of a consumer's consumer (a fused task's producer at
      // its output's strip loop) is read by stages computed inside that loop: through
      // each of them, over the region of it one iteration of the loop needs.
      for (size_t i = 0; value_stamp_[m.value] != stamp_ && i < order_.size() && order_[i] != s;
           ++i) {
        const int c = order_[i];
        const StageState& cs = states_[c];
        const StageModel& cm = model_->stages[c];
        if (c == st.host || cs.inlined || cs.location != AT || value_stamp_[cm.value] != stamp_) {
          continue;
        }
        Interval region[kMaxRank];
        std::copy(touched_box(cm.value), touched_box(cm.value) + cm.rank, region);
        for (int def = 0; def < 2; ++def) {
          if (!cs.defs[def].present) continue;
          Interval whole[kMaxDefDims];
          WholeReduction(c, def, whole);
          Touch(c, def, region, whole, /*reset=*/false);
        }
      }
      if (value_stamp_[m.value] == stamp_) {
        std::copy(touched_box(m.value), touched_box(m.value) + m.rank, st.region);
        st.realizations = hs.realizations;
        st.outer_parallel = hs.outer_parallel;
        for (int p = q; p < hd.num_loops; ++p) {
          st.realizations *= static_cast<double>(hd.loops[p].extent);
          if (hd.loops[p].parallel) st.outer_parallel *= static_cast<double>(hd.loops[p].extent);
        }
        st.depth = hs.depth + hd.num_loops - q;
        placed = true;
      }
    }
    if (!placed) {
      std::copy(st.global, st.global + m.rank, st.region);
      st.realizations = 1;
      st.outer_parallel = 1;
      st.depth = 0;
    }
    SetExtentsAndIndices(s);
  }
}

double ScheduleEvaluator::DefinitionIterations(int s, int def) const {
  const StageState& st = states_[s];
  const DefState& d = st.defs[def];
  if (!d.present || st.inlined) return 0;
  return st.realizations * d.iterations;
}

double ScheduleEvaluator::DimIterations(int s, int def, int dim, int free_upto) const {
  const StageState& st = states_[s];
  const DefState& d = st.defs[def];
  const int64_t extent =
      dim < d.num_pure ? st.region[dim].extent() : model_->stages[s].defs[def][dim].extent;
  return DimCount(d, dim, free_upto, extent);
}

double ScheduleEvaluator::LoopStarts(int s, int def, int position) const {
  const StageState& st = states_[s];
  const DefState& d = st.defs[def];
  double starts = 1;
  for (int i = 0; i < d.num_dims; ++i) {
    const int n = d.levels[i];
    // Levels 0..t all outside the loop: the guard of v_{n-1-t} (defined by them) is
    // tested before it starts, and v_{n-1-t} takes E_{n-1-t} values.
    int t = -1;
    if (!d.shift_inwards) {
      while (t + 1 < n && d.pos[i][t + 1] > position) ++t;
    }
    double count = 1;
    if (t >= 0) {
      int64_t e = i < d.num_pure ? st.region[i].extent() : model_->stages[s].defs[def][i].extent;
      for (int k = 0; k < n - 1 - t; ++k) e = CeilDiv(e, d.factors[i][k]);
      count = static_cast<double>(e);
    }
    for (int k = t + 1; k < n; ++k) {
      if (d.pos[i][k] > position) count *= static_cast<double>(d.loops[d.pos[i][k]].extent);
    }
    starts *= count;
  }
  return starts;
}

void ScheduleEvaluator::ComputeInlineCounts() {
  struct Propagate {
    ScheduleEvaluator* self;
    int site;
    void operator()(int t, int def_mask, double count) {
      for (const InputAccess& acc : self->model_->stages[t].inputs) {
        if (!(acc.defs & def_mask) || acc.producer < 0) continue;
        StageState& p = self->states_[acc.producer];
        if (!p.inlined) continue;
        p.inline_evaluations += count;
        if (p.site_stamp != site) {
          p.site_stamp = site;
          ++p.inline_sites;
        }
        (*this)(acc.producer, 1, count);
      }
    }
  };
  for (int s : order_) {
    if (states_[s].inlined) continue;
    Propagate propagate{this, s};
    for (int def = 0; def < 2; ++def) {
      if (states_[s].defs[def].present) propagate(s, 1 << def, DefinitionIterations(s, def));
    }
  }
}

const OpCounts& ScheduleEvaluator::InlineOps(int s) {
  if (inline_ops_ready_[s]) return inline_ops_[s];
  OpCounts ops = model_->stages[s].ops[0];
  for (const InputAccess& acc : model_->stages[s].inputs) {
    if (acc.producer >= 0 && states_[acc.producer].inlined) {
      ops.loads[kLoadStage] -= 1;
      ops += InlineOps(acc.producer);
    }
  }
  inline_ops_[s] = ops;
  inline_ops_ready_[s] = 1;
  return inline_ops_[s];
}

const OpCounts& ScheduleEvaluator::DefinitionOps(int s, int def) {
  const int k = 2 * s + def;
  if (def_ops_ready_[k]) return def_ops_[k];
  OpCounts ops = model_->stages[s].ops[def];
  for (const InputAccess& acc : model_->stages[s].inputs) {
    if (!(acc.defs & (1 << def))) continue;
    if (acc.producer >= 0 && states_[acc.producer].inlined) {
      ops.loads[kLoadStage] -= 1;
      ops += InlineOps(acc.producer);
    }
  }
  def_ops_[k] = ops;
  def_ops_ready_[k] = 1;
  return def_ops_[k];
}

void ScheduleEvaluator::Evaluate(const ScheduleSpace& space, const PipelineModel& model,
                                 const ScheduleSpec& spec) {
  model_ = &model;
  const int n = static_cast<int>(model.stages.size());
  states_.resize(n);
  order_.assign(space.decision_order().begin(), space.decision_order().end());
  value_boxes_.resize(static_cast<size_t>(model.num_values) * kMaxRank);
  value_stamp_.resize(model.num_values, 0);
  inline_ops_.resize(n);
  def_ops_.resize(2 * n);
  inline_ops_ready_.assign(n, 0);
  def_ops_ready_.assign(2 * n, 0);
  for (int pos = 0; pos < n; ++pos) {
    Resolve(space, order_[pos], pos < spec.stages_size() ? &spec.stages(pos) : nullptr);
  }
  ComputeGlobalRegions();
  ComputeRealizations();
  ComputeInlineCounts();
}

}  // namespace features_internal
}  // namespace schedfarm
