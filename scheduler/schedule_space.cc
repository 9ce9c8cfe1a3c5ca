// The schedule space: the option structure of each stage, counting, enumerating and
// sampling the options of the next stage, and whole random schedules. Legality
// (Check) lives in schedule_check.cc, the canonical form in schedule_canonical.cc.
#include "scheduler/schedule_space.h"

#include <algorithm>
#include <array>
#include <map>
#include <tuple>
#include <utility>

#include "common/int_math.h"
#include "pipeline/spec.h"
#include "scheduler/layouts.h"
#include "scheduler/space_internal.h"

namespace schedfarm {
namespace {

// (vectorize, unroll, parallel) combinations of a full definition: v * 6 + u * 3 + p.
constexpr int kNumCombos = 12;
// The largest count of a region kept by the counting summaries; 4 is enough to tell
// apart the innermost two and the outermost two loops of a definition.
constexpr int kCap = 4;

std::vector<std::vector<int64_t>> PureSplits(int64_t extent) {
  std::vector<std::vector<int64_t>> out = {{}};
  for (int64_t f : kSplitFactors) {
    if (f < extent) out.push_back({f});
  }
  for (int64_t f1 : kSplitFactors) {
    for (int64_t f2 : kSplitFactors) {
      if (f1 * f2 < extent) out.push_back({f1, f2});
    }
  }
  return out;
}

std::vector<std::vector<int64_t>> ReductionSplits(int64_t extent) {
  std::vector<std::vector<int64_t>> out = {{}};
  for (int64_t f : kSplitFactors) {
    if (f < extent) out.push_back({f});
  }
  return out;
}

// Extent of `level` of a dim split by `factors` (innermost first).
int64_t LevelExtent(int64_t extent, const std::vector<int64_t>& factors, int level) {
  const int num_levels = static_cast<int>(factors.size()) + 1;
  if (level > 0) return factors[num_levels - 1 - level];
  int64_t product = 1;
  for (int64_t f : factors) product *= f;
  return CeilDiv(extent, product);
}

// Which definitions of `consumer` read its input `index` (bit 0 pure, bit 1 update).
int ReadMask(const Stage& consumer, int index) {
  switch (consumer.op()) {
    case CONV:
    case MATMUL:
      return index == 2 ? 1 : 2;
    case POOL:
    case REDUCE:
      return 2;
    default:
      return 1;
  }
}

bool HasUpdate(const Stage& stage) {
  switch (stage.op()) {
    case CONV:
    case MATMUL:
    case POOL:
    case REDUCE:
      return true;
    default:
      return false;
  }
}

// What the option rules need to know of one loop of extent > 1.
struct Slot {
  bool pure = true;
  int vectors = 0;     // pure, a multiple of the lanes, at most 4 vectors: extent / lanes
  int unroll = 0;      // extent <= 16 (unrollable): its extent
  // A split level of a dim of a SpaceDefinition::guarded_strided definition: when it
  // is vectorized, no loop is unrolled (rule 7).
  bool strided_tail = false;
  // A level of a reduction dim split with a tail: a pure loop directly inside it is
  // vectorized (rule 9).
  bool reduction_tail = false;
};

// At a consumer loop (not `root`), the level 0 of a pure dim spans the region the
// consumer asks for, whose extent Halide may not know as a constant (the consumer's
// guarded tails): it is neither vectorized nor unrolled.
Slot SlotOf(const SpaceLoop& loop, const SpaceDefinition& def, bool root) {
  const int lanes = def.lanes;
  Slot s;
  s.pure = !loop.reduction;
  const bool constant = root || loop.reduction || loop.level > 0;
  if (constant && s.pure && loop.extent % lanes == 0 && loop.extent <= 4 * lanes) {
    s.vectors = static_cast<int>(loop.extent / lanes);
  }
  if (constant && loop.extent <= 16) s.unroll = static_cast<int>(loop.extent);
  s.strided_tail = def.guarded_strided && loop.level > 0;
  s.reduction_tail = loop.reduction && loop.tail;
  return s;
}

// Valid (vectorize, unroll, parallel) combinations of a loop sequence given by its
// loops of extent > 1, innermost first: bit v * 6 + u * 3 + p. `registers` bounds a
// register tile (rule 8).
uint16_t CombosOf(const Slot* s, int n, bool root, int registers) {
  const bool v_ok = n >= 1 && s[0].pure && s[0].vectors > 0;
  // Rule 9: a pure innermost loop directly inside a level of a reduction split with a
  // tail is vectorized (LLVM 14 misorders the grouped loads and stores it makes of it).
  const bool must_vectorize = n >= 2 && s[0].pure && s[1].reduction_tail;
  const bool u_ok = n >= 2 && s[1].unroll > 0;
  // A vectorized s[0] and an unrolled pure s[1] inside a reduction loop: a tile.
  bool tile_fits = true;
  if (v_ok && u_ok && s[1].pure) {
    for (int i = 2; i < n; ++i) {
      if (!s[i].pure) {
        tile_fits = RegisterTileFits(s[0].vectors, s[1].unroll, registers);
        break;
      }
    }
  }
  uint16_t mask = 0;
  for (int v = 0; v < 2; ++v) {
    if (v && !v_ok) continue;
    if (!v && must_vectorize) continue;
    for (int u = 0; u < 2; ++u) {
      if (u && !u_ok) continue;
      if (v && u && (s[0].strided_tail || !tile_fits)) continue;
      for (int p = 0; p < (root ? 3 : 1); ++p) {
        bool ok = true;
        // The p outermost loops are parallel: each pure, not vectorized (position 0
        // with v) and not unrolled (position 1 with u).
        for (int i = 1; i <= p && ok; ++i) {
          const int at = n - i;
          ok = at >= 0 && s[at].pure && !(v && at == 0) && !(u && at == 1);
        }
        if (ok) mask |= static_cast<uint16_t>(1u << (v * 6 + u * 3 + p));
      }
    }
  }
  return mask;
}

int PopCount(uint16_t mask) { return __builtin_popcount(mask); }

// Positions of the loops of extent > 1.
std::vector<int> EffectivePositions(const std::vector<SpaceLoop>& loops) {
  std::vector<int> eff;
  eff.reserve(loops.size());
  for (size_t i = 0; i < loops.size(); ++i) {
    if (loops[i].extent > 1) eff.push_back(static_cast<int>(i));
  }
  return eff;
}

SpaceDefinition MakeDefinition(const StageLoops& loops, bool update, bool restricted, int lanes,
                               int vector_registers) {
  SpaceDefinition def;
  def.update = update;
  def.restricted = restricted;
  def.lanes = lanes;
  def.vector_registers = vector_registers;
  for (const LoopDim& d : loops.pure) {
    SpaceDim dim;
    dim.name = d.name;
    dim.extent = d.extent;
    dim.splits = restricted ? std::vector<std::vector<int64_t>>{{}} : PureSplits(d.extent);
    if (d.extent > 1) def.pure_nt.push_back(static_cast<int>(def.dims.size()));
    def.dims.push_back(std::move(dim));
  }
  def.num_pure = static_cast<int>(def.dims.size());
  if (update) {
    for (const LoopDim& d : loops.reduction) {
      SpaceDim dim;
      dim.name = d.name;
      dim.extent = d.extent;
      dim.reduction = true;
      dim.splits = ReductionSplits(d.extent);
      if (d.extent > 1) def.red_nt.push_back(static_cast<int>(def.dims.size()));
      def.dims.push_back(std::move(dim));
    }
    def.has_reduction = !loops.reduction.empty();
  }
  return def;
}

// Loops of a restricted definition with vectorization on or off.
std::vector<SpaceLoop> RestrictedLoops(const SpaceDefinition& def, bool vectorize) {
  std::vector<int> num_levels(def.dims.size(), 1);
  std::vector<std::vector<int64_t>> factors(def.dims.size());
  const bool split = vectorize && def.dims[0].extent > def.lanes;
  if (split) {
    num_levels[0] = 2;
    factors[0] = {def.lanes};
  }
  std::vector<SpaceLoop> loops = ScheduleSpaceImpl::NaturalLoops(def, num_levels, factors);
  if (vectorize) loops[0].vectorized = true;  // d0 (unsplit) or its level 1: innermost
  return loops;
}

// Whether `consumer` reads its input `index` in its pure definition with each pure dim
// of the input following the consumer's dim of the same LoopNestOf index (trailing
// axes aligned, as numpy broadcasting aligns them), so that a window of w points of
// the consumer along a dim reads at most w points of the input along it: elementwise
// ops and broadcasts, PAD and CONCAT (shifted and clamped indices), SLICE with unit
// steps, nearest UPSAMPLE, the identity TRANSPOSE and a RESHAPE to the same shape.
bool ReadsWindowAligned(const Stage& consumer, int index, const std::vector<Shape>& shapes) {
  const Shape out(consumer.shape().begin(), consumer.shape().end());
  switch (consumer.op()) {
    case UNARY:
    case BINARY:
    case PAD:
    case CONCAT:
    case UPSAMPLE:
      return true;
    case SLICE:
    case TRANSPOSE:
      return AccessPatternOf(consumer, index, shapes) == AccessPattern::kPointwise;
    case RESHAPE:
      return shapes[index] == out;
    default:
      return false;
  }
}

// The pure dims of input `index` (bit i: LoopNestOf index i) along which the
// consumer's loops tile it as they tile the consumer (StageReader::tiled).
uint32_t TiledDims(const Stage& consumer, int index, const std::vector<Shape>& shapes) {
  if (consumer.op() == CONCAT) {
    // Along its axis the lowering reads each input modulo its extent, and Halide's region
    // of it there is the whole input.
    return ~(1u << (consumer.shape_size() - 1 - consumer.attrs().axis()));
  }
  if (ReadsWindowAligned(consumer, index, shapes)) return ~0u;
  if (consumer.op() != MATMUL) return 0;
  if (index == 2) return ~0u;  // c, broadcast to [..., m, n]
  // a [..., m, k] and b [..., k, n] against [..., m, n]: index 0 is k (a) or n (b),
  // index 1 m (a) or k (b); transposed, neither of the two follows.
  const bool transposed = index == 0 ? consumer.attrs().trans_a() : consumer.attrs().trans_b();
  if (transposed) return ~3u;
  return index == 0 ? ~1u : ~2u;
}

// The consumer's loop dims whose variables index input `index` (StageReader::indexing).
uint32_t IndexingDims(const Stage& consumer, int index) {
  if (consumer.op() == CONV && index == 0 && consumer.attrs().groups() <= 1) {
    return ~(1u << (consumer.shape_size() - 2));  // pure dims innermost first: M is rank - 2
  }
  // [..., m, n] = a [..., m, k] b [..., k, n]: pure dim 0 is n, 1 is m.
  if (consumer.op() == MATMUL && index < 2) return ~(1u << index);
  return ~0u;
}

}  // namespace

LoopRef MakeLoopRef(const std::string& stage, const std::string& dim, int level, bool update) {
  LoopRef ref;
  ref.set_stage(stage);
  ref.set_dim(dim);
  ref.set_level(level);
  ref.set_update(update);
  return ref;
}

int CampaignVectorBytes(const WorkerRequirements& workers) {
  for (const std::string& flag : workers.isa()) {
    if (flag == "avx512f") return 64;
  }
  return TargetParams().vector_bytes;
}

uint64_t MixSeed(uint64_t seed, uint64_t index) {
  return SplitMix64(seed + kSplitMixGamma * index);
}

uint64_t SpaceRng::Below(uint64_t n) {
  // Lemire's multiply-shift with rejection of the biased low range.
  unsigned __int128 m = static_cast<unsigned __int128>(Next()) * n;
  uint64_t low = static_cast<uint64_t>(m);
  if (low < n) {
    const uint64_t threshold = (0 - n) % n;
    while (low < threshold) {
      m = static_cast<unsigned __int128>(Next()) * n;
      low = static_cast<uint64_t>(m);
    }
  }
  return static_cast<uint64_t>(m >> 64);
}

// ---------------------------------------------------------------------------------
// Construction

ScheduleSpace::ScheduleSpace(const PipelineGraph& graph, const TargetParams& target)
    : graph_(graph),
      target_(target),
      pipeline_id_(PipelineId(graph)),
      at_memo_(std::make_shared<AtMemo>()) {
  const std::vector<int>& topo = graph.topological_order();
  order_.assign(topo.rbegin(), topo.rend());
  position_.assign(graph.num_stages(), -1);
  for (size_t i = 0; i < order_.size(); ++i) position_[order_[i]] = static_cast<int>(i);
  stages_.resize(graph.num_stages());
  // Producers first: a stage's strided_loads follows those of its producers.
  for (int s : topo) ScheduleSpaceImpl::InitStage(*this, s);
}

ScheduleSpace::ScheduleSpace(const ScheduleSpace& other) = default;
ScheduleSpace::ScheduleSpace(ScheduleSpace&& other) noexcept = default;
ScheduleSpace::~ScheduleSpace() = default;

const ScheduleSpace::StageInfo& ScheduleSpaceImpl::Info(const ScheduleSpace& space, int stage) {
  return space.stages_[stage];
}

void ScheduleSpaceImpl::InitStage(ScheduleSpace& space, int s) {
  const PipelineGraph& graph = space.graph_;
  const Stage& stage = graph.stage(s);
  ScheduleSpace::StageInfo& info = space.stages_[s];
  info.name = stage.name();
  info.has_update = HasUpdate(stage);
  const std::vector<int>& outputs = graph.output_stages();
  info.is_output = std::find(outputs.begin(), outputs.end(), s) != outputs.end();
  info.inline_legal = !info.has_update && !info.is_output;
  const std::vector<int>& inputs = graph.stage_inputs(s);
  for (size_t i = 0; i < inputs.size(); ++i) {
    const AccessPattern access = AccessPatternOf(stage, static_cast<int>(i), graph.input_shapes(s));
    const Value& input = graph.value(inputs[i]);
    const bool inlinable_strided = input.kind == Value::Kind::kStage &&
                                   space.stages_[input.index].inline_legal &&
                                   space.stages_[input.index].strided_loads;
    if (access != AccessPattern::kStrided && access != AccessPattern::kTransposed &&
        access != AccessPattern::kGather && !inlinable_strided) {
      continue;
    }
    if (i == 1 && PackableWeights(graph, s).ok()) {
      info.strided_unless_packed = true;
    } else {
      info.strided_loads = true;
    }
  }
  const int lanes = space.lanes(s);
  const StageLoops loops = graph.loops(s);
  const int registers = space.target().vector_registers();
  info.defs[0] =
      MakeDefinition(loops, /*update=*/false, /*restricted=*/info.has_update, lanes, registers);
  if (info.has_update) {
    info.defs[1] = MakeDefinition(loops, /*update=*/true, /*restricted=*/false, lanes, registers);
  }
  for (SpaceDefinition& def : info.defs) {
    def.guarded_strided = !info.is_output && (info.strided_loads || info.strided_unless_packed);
  }
  for (int c : graph.consumers(s)) {
    StageReader reader;
    reader.stage = c;
    reader.aligned = true;
    reader.tiled = ~0u;
    const Stage& consumer = graph.stage(c);
    const std::vector<Shape>& shapes = graph.input_shapes(c);
    const std::vector<int>& inputs = graph.stage_inputs(c);
    for (size_t i = 0; i < inputs.size(); ++i) {
      if (inputs[i] != graph.stage_value(s)) continue;
      const int index = static_cast<int>(i);
      reader.defs |= ReadMask(consumer, index);
      if (!ClampedAxes(consumer, index, shapes).empty()) info.read_clamped = true;
      reader.aligned = reader.aligned && ReadsWindowAligned(consumer, index, shapes);
      reader.tiled &= TiledDims(consumer, index, shapes);
      reader.indexing |= IndexingDims(consumer, index);
    }
    info.readers.push_back(reader);
  }

  if (!info.is_output) {
    for (int d = 1; d < info.defs[0].num_pure; ++d) {
      const int64_t extent = info.defs[0].dims[d].extent;
      if (extent > 1 && extent % lanes == 0) info.storage_dims.push_back(d);
    }
  }
  info.packable = PackableWeights(graph, s).ok();
  info.copyable = PaddedCopyAllowed(graph, s).ok();

  info.count_root = info.count_at = 1;
  for (int d = 0; d < (info.has_update ? 2 : 1); ++d) {
    SpaceDefinition& def = info.defs[d];
    if (def.restricted) {
      if (def.num_pure > 0 && lanes >= 2 && def.dims[0].extent % lanes == 0) {
        def.restricted_vec = true;
      }
      for (int v = 0; v < 2; ++v) {
        if (v && !def.restricted_vec) continue;
        const std::vector<SpaceLoop> rl = RestrictedLoops(def, v != 0);
        const std::vector<int> eff = EffectivePositions(rl);
        def.restricted_par[v] = !eff.empty() && !rl[eff.back()].vectorized;
      }
      def.count_root = static_cast<int64_t>(RestrictedChoices(def, true).size());
      def.count_at = static_cast<int64_t>(RestrictedChoices(def, false).size());
    } else {
      def.count_root = CountFull(def, true);
      def.count_at = CountFull(def, false);
    }
    info.count_root *= def.count_root;
    info.count_at *= def.count_at;
  }
}

int ScheduleSpace::lanes(int stage) const {
  const int bytes = BytesPerElement(graph_.stage(stage).dtype());
  return bytes > 0 ? std::max(1, target_.vector_bytes / bytes) : 1;
}

bool ScheduleSpace::InlineLegal(int stage) const { return stages_[stage].inline_legal; }

int64_t ScheduleSpace::DefinitionOptions(int stage, bool root) const {
  return root ? stages_[stage].count_root : stages_[stage].count_at;
}

// ---------------------------------------------------------------------------------
// Definitions: natural order, the tiered order family, counting

int SpaceDefinition::FindDim(const std::string& name) const {
  for (size_t i = 0; i < dims.size(); ++i) {
    if (dims[i].name == name) return static_cast<int>(i);
  }
  return -1;
}

int ResolvedDefinition::Find(int dim, int level) const {
  for (size_t i = 0; i < loops.size(); ++i) {
    if (loops[i].dim == dim && loops[i].level == level) return static_cast<int>(i);
  }
  return -1;
}

int ResolvedDefinition::VectorizedPosition() const {
  for (size_t i = 0; i < loops.size(); ++i) {
    if (loops[i].vectorized) return static_cast<int>(i);
  }
  return -1;
}

bool ResolvedDefinition::PureLoopInside(int q) const {
  for (int i = 0; i < q; ++i) {
    if (!loops[i].reduction && loops[i].extent > 1) return true;
  }
  return false;
}

std::vector<SpaceLoop> ScheduleSpaceImpl::NaturalLoops(
    const SpaceDefinition& def, const std::vector<int>& num_levels,
    const std::vector<std::vector<int64_t>>& factors) {
  std::vector<SpaceLoop> loops;
  loops.reserve(3 * def.dims.size());
  auto add_dim = [&](int d) {
    for (int level = num_levels[d] - 1; level >= 0; --level) {
      SpaceLoop loop;
      loop.dim = d;
      loop.level = level;
      loop.extent = LevelExtent(def.dims[d].extent, factors[d], level);
      loop.reduction = def.dims[d].reduction;
      loop.tail = LeavesTail(def.dims[d].extent, factors[d]);
      loops.push_back(loop);
    }
  };
  for (int d = def.num_pure; d < static_cast<int>(def.dims.size()); ++d) add_dim(d);
  for (int d = 0; d < def.num_pure; ++d) add_dim(d);
  return loops;
}

void ScheduleSpaceImpl::FullOrder(const SpaceDefinition& def, const FullChoice& choice,
                                  std::vector<SpaceLoop>* loops) {
  loops->clear();
  auto add = [&](int d, int level) {
    const std::vector<int64_t>& f = def.dims[d].splits[choice.split[d]];
    SpaceLoop loop;
    loop.dim = d;
    loop.level = level;
    loop.extent = LevelExtent(def.dims[d].extent, f, level);
    loop.reduction = def.dims[d].reduction;
    loop.tail = LeavesTail(def.dims[d].extent, f);
    loops->push_back(loop);
  };
  auto levels = [&](int d) {
    return static_cast<int>(def.dims[d].splits[choice.split[d]].size()) + 1;
  };
  auto reduction_block = [&]() {
    for (int d = def.num_pure; d < static_cast<int>(def.dims.size()); ++d) {
      for (int level = levels(d) - 1; level >= 0; --level) add(d, level);
    }
  };
  if (choice.placement == 0) reduction_block();
  const int chosen = choice.chosen >= 0 ? def.pure_nt[choice.chosen] : -1;
  if (chosen >= 0) add(chosen, levels(chosen) - 1);
  for (int d = 0; d < def.num_pure; ++d) {
    if (d != chosen) add(d, levels(d) - 1);
  }
  if (choice.placement == 1) reduction_block();
  for (int d = 0; d < def.num_pure; ++d) {
    if (levels(d) == 3) add(d, 1);
  }
  if (choice.placement == 2) reduction_block();
  for (int d = 0; d < def.num_pure; ++d) {
    if (levels(d) >= 2) add(d, 0);
  }
}

uint16_t ScheduleSpaceImpl::FullCombos(const SpaceDefinition& def,
                                       const std::vector<SpaceLoop>& order, bool root) {
  Slot slots[64];
  int n = 0;
  for (const SpaceLoop& loop : order) {
    if (loop.extent > 1 && n < 64) slots[n++] = SlotOf(loop, def, root);
  }
  return CombosOf(slots, n, root, def.vector_registers);
}

// Placement 1 differs from 0 only with reduction loops and an innermost tier of
// extent > 1; placement 2 from 1 only with a middle tier (every split level has
// extent >= 2, so the tiers' effective loops depend only on the dims and splits).
bool ScheduleSpaceImpl::PlacementDistinct(const SpaceDefinition& def, const FullChoice& choice) {
  if (choice.placement == 0) return true;
  if (def.red_nt.empty()) return false;
  if (choice.placement == 1) return !def.pure_nt.empty();
  for (int d : def.pure_nt) {
    if (def.dims[d].splits[choice.split[d]].size() == 2) return true;
  }
  return false;
}

// Counts the options of a full definition without enumerating them. An option's
// (vectorize, unroll, parallel) combinations depend only on the first two and last two
// loops of extent > 1 of its order and on how many there are (CombosOf). With k >= 2
// pure dims of extent > 1, the first two come from the reduction block, the chosen
// dim's innermost level, or the innermost level of the first other dim; every other
// dim only matters through its number of levels. So the count sums, over the chosen
// dim and the reduction placement, products of small tables: the chosen dim's and the
// next dim's split choices grouped by what the rules see, a polynomial in the number of
// middle/outer levels of the remaining dims, and the reduction block's summaries.
int64_t ScheduleSpaceImpl::CountFull(const SpaceDefinition& def, bool root) {
  // Reduction block summaries: (loops capped, first small, second small, first a
  // level of a split with a tail) -> count.
  std::map<std::tuple<int, bool, bool, bool>, int64_t> rtab = {{{0, false, false, false}, 1}};
  for (int d : def.red_nt) {
    std::map<std::tuple<int, bool, bool, bool>, int64_t> next;
    for (const auto& [key, mult] : rtab) {
      for (const std::vector<int64_t>& f : def.dims[d].splits) {
        auto [cnt, s1, s2, t1] = key;
        const int num_levels = static_cast<int>(f.size()) + 1;
        const bool tail = LeavesTail(def.dims[d].extent, f);
        for (int level = num_levels - 1; level >= 0; --level) {
          const bool small = LevelExtent(def.dims[d].extent, f, level) <= 16;
          if (cnt == 0) {
            s1 = small;
            t1 = tail;
          }
          if (cnt == 1) s2 = small;
          cnt = std::min(cnt + 1, kCap);
        }
        next[{cnt, s1, s2, t1}] += mult;
      }
    }
    rtab.swap(next);
  }

  Slot slots[64];
  int n = 0;
  // A reduction loop's unroll extent only matters as being unrollable (rule 8 tiles
  // are pure loops).
  auto add_reduction = [&](int cnt, bool s1, bool s2, bool t1) {
    for (int i = 0; i < cnt; ++i) {
      slots[n++] = {false, 0, (i == 0 ? s1 : (i == 1 && s2)) ? 1 : 0, false, i == 0 && t1};
    }
  };
  auto placeholders = [&](int count) {
    for (int i = 0; i < std::min(count, kCap); ++i) slots[n++] = {true, 0, 0};
  };

  const int k = static_cast<int>(def.pure_nt.size());
  const int placements = def.has_reduction ? 3 : 1;
  int64_t total = 0;
  if (k == 0) {
    for (const auto& [key, mult] : rtab) {
      n = 0;
      add_reduction(std::get<0>(key), std::get<1>(key), std::get<2>(key), std::get<3>(key));
      total += mult * PopCount(CombosOf(slots, n, root, def.vector_registers));
    }
    return total;
  }

  // Per pure dim of extent > 1: its split choices grouped by what the rules see.
  // key: levels, innermost level's vectors and unroll extent (Slot), the middle's and
  // the outer level's unroll extents, innermost level strided tail.
  using Key = std::array<int, 6>;
  std::vector<std::map<Key, int64_t>> keys(k);
  std::vector<std::array<int64_t, 4>> by_levels(k);
  for (int j = 0; j < k; ++j) {
    const SpaceDim& dim = def.dims[def.pure_nt[j]];
    by_levels[j] = {0, 0, 0, 0};
    for (const std::vector<int64_t>& f : dim.splits) {
      const int num_levels = static_cast<int>(f.size()) + 1;
      SpaceLoop inner;
      inner.extent = LevelExtent(dim.extent, f, num_levels - 1);
      inner.level = num_levels - 1;
      const Slot s = SlotOf(inner, def, root);
      auto unroll = [&](int64_t extent) { return extent <= 16 ? static_cast<int>(extent) : 0; };
      const int m_unroll = num_levels == 3 ? unroll(LevelExtent(dim.extent, f, 1)) : 0;
      const int o_unroll = root && num_levels >= 2 ? unroll(LevelExtent(dim.extent, f, 0)) : 0;
      // With k >= 2 the middle and outer levels are never among the first two loops.
      keys[j][{num_levels, s.vectors, s.unroll, k == 1 ? m_unroll : 0, k == 1 ? o_unroll : 0,
               s.strided_tail}] += 1;
      ++by_levels[j][num_levels];
    }
  }

  for (int ci = 0; ci < k; ++ci) {
    const int fi = k >= 2 ? (ci == 0 ? 1 : 0) : -1;
    // poly[nm][no]: ways for the remaining dims to have nm middle and no outer levels.
    int64_t poly[kCap + 1][kCap + 1] = {};
    poly[0][0] = 1;
    for (int j = 0; j < k; ++j) {
      if (j == ci || j == fi) continue;
      int64_t next[kCap + 1][kCap + 1] = {};
      for (int nm = 0; nm <= kCap; ++nm) {
        for (int no = 0; no <= kCap; ++no) {
          if (poly[nm][no] == 0) continue;
          for (int levels = 1; levels <= 3; ++levels) {
            next[std::min(nm + (levels == 3), kCap)][std::min(no + (levels >= 2), kCap)] +=
                poly[nm][no] * by_levels[j][levels];
          }
        }
      }
      std::copy(&next[0][0], &next[0][0] + (kCap + 1) * (kCap + 1), &poly[0][0]);
    }
    // The next dim's choices: (levels, innermost unroll extent) -> count; none when
    // k == 1.
    std::map<std::pair<int, int>, int64_t> ftab;
    if (fi >= 0) {
      for (const auto& [key, mult] : keys[fi]) ftab[{key[0], key[2]}] += mult;
    } else {
      ftab[{0, 0}] = 1;
    }
    for (const auto& [ckey, cmult] : keys[ci]) {
      const int cl = ckey[0];
      for (const auto& [fkey, fmult] : ftab) {
        const int fl = fkey.first;
        for (int nm = 0; nm <= kCap; ++nm) {
          for (int no = 0; no <= kCap; ++no) {
            if (poly[nm][no] == 0) continue;
            const int total_m = std::min(nm + (cl == 3) + (fl == 3), kCap);
            const int total_o = std::min(no + (cl >= 2) + (fl >= 2), kCap);
            const int64_t mult = cmult * fmult * poly[nm][no];
            for (int p = 0; p < placements; ++p) {
              for (const auto& [rkey, rmult] : rtab) {
                const auto [rcnt, s1, s2, t1] = rkey;
                if (p == 1 && rcnt == 0) continue;
                if (p == 2 && (rcnt == 0 || total_m == 0)) continue;
                n = 0;
                if (p == 0) add_reduction(rcnt, s1, s2, t1);
                slots[n++] = {true, ckey[1], ckey[2], ckey[5] != 0};
                if (fi >= 0) {
                  slots[n++] = {true, 0, fkey.second};
                  placeholders(k - 2);
                }
                if (p == 1) add_reduction(rcnt, s1, s2, t1);
                if (k == 1) {
                  if (cl == 3) slots[n++] = {true, 0, ckey[3]};
                } else {
                  placeholders(total_m);
                }
                if (p == 2) add_reduction(rcnt, s1, s2, t1);
                if (k == 1) {
                  if (cl >= 2) slots[n++] = {true, 0, ckey[4]};
                } else {
                  placeholders(total_o);
                }
                total += mult * rmult * PopCount(CombosOf(slots, n, root, def.vector_registers));
              }
            }
          }
        }
      }
    }
  }
  return total;
}

bool ScheduleSpaceImpl::ForEachFull(const SpaceDefinition& def, bool root,
                                    const std::function<bool(const FullChoice&)>& fn) {
  FullChoice choice;
  choice.split.assign(def.dims.size(), 0);
  std::vector<int> varying;
  for (size_t d = 0; d < def.dims.size(); ++d) {
    if (def.dims[d].splits.size() > 1) varying.push_back(static_cast<int>(d));
  }
  const int k = static_cast<int>(def.pure_nt.size());
  const int placements = def.has_reduction ? 3 : 1;
  std::vector<SpaceLoop> order;
  while (true) {
    // chosen = -1 (the only value) when no pure dim has extent > 1.
    for (int c = (k > 0 ? 0 : -1); c < std::max(k, 0); ++c) {
      for (int p = 0; p < placements; ++p) {
        choice.chosen = c;
        choice.placement = p;
        if (!PlacementDistinct(def, choice)) continue;
        FullOrder(def, choice, &order);
        const uint16_t mask = FullCombos(def, order, root);
        for (int combo = 0; combo < kNumCombos; ++combo) {
          if (!(mask >> combo & 1)) continue;
          choice.combo = combo;
          if (!fn(choice)) return false;
        }
      }
    }
    // Next split combination (odometer over the dims with several choices).
    size_t i = 0;
    for (; i < varying.size(); ++i) {
      int& idx = choice.split[varying[i]];
      if (++idx < static_cast<int>(def.dims[varying[i]].splits.size())) break;
      idx = 0;
    }
    if (i == varying.size()) return true;
  }
}

FullChoice ScheduleSpaceImpl::SampleFull(const SpaceDefinition& def, bool root, SpaceRng& rng) {
  FullChoice choice;
  choice.split.assign(def.dims.size(), 0);
  const int k = static_cast<int>(def.pure_nt.size());
  std::vector<SpaceLoop> order;
  order.reserve(3 * def.dims.size());
  // Rejection: propose every axis uniformly and independently; each option is
  // proposed by exactly one tuple (placements that repeat an order and invalid
  // combinations are rejected), so accepted proposals are uniform over the options.
  while (true) {
    for (size_t d = 0; d < def.dims.size(); ++d) {
      const size_t num = def.dims[d].splits.size();
      choice.split[d] = num > 1 ? static_cast<int>(rng.Below(num)) : 0;
    }
    choice.chosen = k > 0 ? static_cast<int>(rng.Below(k)) : -1;
    choice.placement = def.has_reduction ? static_cast<int>(rng.Below(3)) : 0;
    if (!PlacementDistinct(def, choice)) continue;
    FullOrder(def, choice, &order);
    const uint16_t mask = FullCombos(def, order, root);
    const int x = static_cast<int>(rng.Below(root ? kNumCombos : 4));
    const int combo = root ? x : (x >> 1) * 6 + (x & 1) * 3;
    if (mask >> combo & 1) {
      choice.combo = combo;
      return choice;
    }
  }
}

std::vector<RestrictedChoice> ScheduleSpaceImpl::RestrictedChoices(const SpaceDefinition& def,
                                                                   bool root) {
  std::vector<RestrictedChoice> out;
  for (int v = 0; v < 2; ++v) {
    if (v && !def.restricted_vec) continue;
    // Vectorizing the unsplit dim needs a constant extent: at root only.
    if (v && !root && def.dims[0].extent == def.lanes) continue;
    out.push_back({v != 0, false});
    if (root && def.restricted_par[v]) out.push_back({v != 0, true});
  }
  return out;
}

// ---------------------------------------------------------------------------------
// Building StageSchedules

void ScheduleSpaceImpl::FillFull(const ScheduleSpace& space, int stage, const SpaceDefinition& def,
                                 const FullChoice& choice, DefinitionSchedule* out) {
  const std::string& name = space.stages_[stage].name;
  for (size_t d = 0; d < def.dims.size(); ++d) {
    const std::vector<int64_t>& f = def.dims[d].splits[choice.split[d]];
    if (f.empty()) continue;
    DimSplit* split = out->add_splits();
    split->set_dim(def.dims[d].name);
    for (int64_t factor : f) split->add_factors(factor);
  }
  std::vector<SpaceLoop> order;
  FullOrder(def, choice, &order);
  out->mutable_loop_order()->Reserve(static_cast<int>(order.size()));
  auto ref = [&](const SpaceLoop& loop) {
    return MakeLoopRef(name, def.dims[loop.dim].name, loop.level, def.update);
  };
  for (const SpaceLoop& loop : order) *out->add_loop_order() = ref(loop);
  const std::vector<int> eff = EffectivePositions(order);
  const int v = choice.combo / 6;
  const int u = (choice.combo / 3) % 2;
  const int p = choice.combo % 3;
  if (v) {
    *out->mutable_vectorize() = ref(order[eff[0]]);
    out->set_vector_width(order[eff[0]].extent);
  }
  if (u) *out->add_unroll() = ref(order[eff[1]]);
  for (int i = p; i >= 1; --i) *out->add_parallel() = ref(order[eff[eff.size() - i]]);
}

void ScheduleSpaceImpl::FillRestricted(const ScheduleSpace& space, int stage,
                                       const SpaceDefinition& def, const RestrictedChoice& choice,
                                       DefinitionSchedule* out) {
  const std::string& name = space.stages_[stage].name;
  const std::vector<SpaceLoop> loops = RestrictedLoops(def, choice.vectorize);
  if (choice.vectorize && def.dims[0].extent > def.lanes) {
    DimSplit* split = out->add_splits();
    split->set_dim(def.dims[0].name);
    split->add_factors(def.lanes);
  }
  auto ref = [&](const SpaceLoop& loop) {
    return MakeLoopRef(name, def.dims[loop.dim].name, loop.level, false);
  };
  for (const SpaceLoop& loop : loops) *out->add_loop_order() = ref(loop);
  if (choice.vectorize) {
    *out->mutable_vectorize() = ref(loops[0]);
    out->set_vector_width(loops[0].extent);
  }
  if (choice.parallel) *out->add_parallel() = ref(loops[EffectivePositions(loops).back()]);
}

void ScheduleSpaceImpl::FillLayout(const ScheduleSpace& space, int stage, int64_t index,
                                   StageSchedule* out) {
  const ScheduleSpace::StageInfo& info = space.stages_[stage];
  const int64_t copies = info.copyable ? 2 : 1;
  const int64_t packings = info.packable ? 2 : 1;
  const int64_t storage = index / copies / packings;
  if (storage == 0) {
    out->clear_storage_innermost();
  } else {
    out->set_storage_innermost(info.defs[0].dims[info.storage_dims[storage - 1]].name);
  }
  out->set_pack_weights(index / copies % packings == 1);
  out->set_padded_copy(index % copies == 1);
}

void ScheduleSpaceImpl::FillLocation(const ScheduleSpace& space, const NextContext& ctx,
                                     int at_index, StageSchedule* out) {
  const SpaceDefinition& host_def = space.stages_[ctx.host].defs[ctx.host_update ? 1 : 0];
  const std::string& host_name = space.stages_[ctx.host].name;
  auto ref = [&](int position) {
    const SpaceLoop& loop = ctx.host_def->loops[position];
    return MakeLoopRef(host_name, host_def.dims[loop.dim].name, loop.level, ctx.host_update);
  };
  out->set_compute(AT);
  *out->mutable_compute_at() = ref(ctx.at_loops[at_index]);
}

// ---------------------------------------------------------------------------------
// The next stage

NextContext ScheduleSpaceImpl::Context(const ScheduleSpace& space, SpecState& state) {
  NextContext ctx;
  const int pos = state.spec().stages_size();
  if (pos >= static_cast<int>(space.order_.size())) return ctx;
  ctx.pos = pos;
  ctx.stage = space.order_[pos];
  const ScheduleSpace::StageInfo& info = space.stages_[ctx.stage];
  ctx.inline_ok = info.inline_legal;
  if (info.is_output) return ctx;
  const std::vector<StageUse> uses = state.Uses(ctx.stage);
  if (uses.size() != 1 || __builtin_popcount(uses[0].defs) != 1) return ctx;
  ctx.host = uses[0].stage;
  ctx.host_update = uses[0].defs == 2;
  const StageState& host = state.At(space.position_[ctx.host]);
  ctx.host_def = &host.defs[ctx.host_update ? 1 : 0];
  const std::vector<SpaceLoop>& loops = ctx.host_def->loops;
  const int vpos = ctx.host_def->VectorizedPosition();
  ctx.at_loops.reserve(loops.size());
  for (int q = 0; q < static_cast<int>(loops.size()); ++q) {
    const SpaceLoop& loop = loops[q];
    if (loop.extent <= 1 || loop.vectorized || loop.unrolled || q < vpos) continue;
    if (host.clamped_window && ctx.host_def->PureLoopInside(q)) continue;
    if (Recomputations(space, ctx.stage, ctx.host, *ctx.host_def, q) > 1) continue;
    ctx.at_loops.push_back(q);
    ctx.at_defs.push_back(DefinitionsAt(
        space, ctx.stage, WindowAt(space, state, ctx.stage, ctx.host, ctx.host_update, q)));
  }
  return ctx;
}

SpaceDefinition ScheduleSpaceImpl::WithinWindow(const SpaceDefinition& def,
                                                const StageWindow& window) {
  SpaceDefinition out = def;
  for (int d = 0; d < def.num_pure; ++d) {
    std::vector<std::vector<int64_t>>& splits = out.dims[d].splits;
    splits.erase(std::remove_if(
                     splits.begin(), splits.end(),
                     [&](const std::vector<int64_t>& factors) { return !window.Fits(d, factors); }),
                 splits.end());
  }
  // A restricted definition vectorizes AT by splitting its dim 0 by the lanes.
  if (def.restricted && def.num_pure > 0 && !window.Fits(0, {def.lanes})) {
    out.restricted_vec = false;
  }
  return out;
}

bool ScheduleSpaceImpl::Narrower(const ScheduleSpace& space, int stage, const StageWindow& window) {
  const ScheduleSpace::StageInfo& info = space.stages_[stage];
  const SpaceDefinition& pure = info.defs[0];
  for (int d = 0; d < pure.num_pure; ++d) {
    if (window.extent[d] < pure.dims[d].extent) return true;
  }
  // Rule 6 leaves out some split.
  const SpaceDefinition& full = info.defs[info.has_update ? 1 : 0];
  for (int d = 0; d < full.num_pure; ++d) {
    if (window.host_splits[d] + 2 <= kMaxNestedSplits) continue;  // 2 splits at most
    for (const std::vector<int64_t>& factors : full.dims[d].splits) {
      if (window.TooManySplits(d, factors)) return true;
    }
  }
  return pure.restricted_vec && !window.Fits(0, {pure.lanes});
}

size_t ScheduleSpace::AtMemo::Hash::operator()(const std::pair<int, StageWindow>& key) const {
  uint64_t h = MixSeed(static_cast<uint64_t>(key.first), key.second.host_tails);
  for (int64_t e : key.second.extent) h = MixSeed(h, static_cast<uint64_t>(e));
  for (int s : key.second.host_splits) h = MixSeed(h, static_cast<uint64_t>(s));
  return static_cast<size_t>(h);
}

AtDefinitions ScheduleSpaceImpl::DefinitionsAt(const ScheduleSpace& space, int stage,
                                               const StageWindow& window) {
  const ScheduleSpace::StageInfo& info = space.stages_[stage];
  if (!Narrower(space, stage, window)) return {info.defs, info.count_at};
  ScheduleSpace::AtMemo& memo = *space.at_memo_;
  // Windows that filter alike share an entry: host splits count from 2 (below, every
  // split of at most 2 levels fits) up to kMaxNestedSplits, tails only from 2 on.
  std::pair<int, StageWindow> key(stage, window);
  for (size_t d = 0; d < key.second.host_splits.size(); ++d) {
    int& splits = key.second.host_splits[d];
    splits = std::clamp(splits, 1, kMaxNestedSplits);
    if (splits < 2 && d < 32) key.second.host_tails &= ~(1u << d);
  }
  {
    std::shared_lock<std::shared_mutex> lock(memo.mutex);
    const auto it = memo.windows.find(key);
    if (it != memo.windows.end()) return {it->second->defs.data(), it->second->count};
  }
  // What the window admits: the stage, then per definition each pure dim's splits that
  // fit and whether a restricted definition still vectorizes.
  const int num_defs = info.has_update ? 2 : 1;
  std::string admitted(reinterpret_cast<const char*>(&stage), sizeof stage);
  for (int u = 0; u < num_defs; ++u) {
    const SpaceDefinition& def = info.defs[u];
    for (int d = 0; d < def.num_pure; ++d) {
      for (const std::vector<int64_t>& factors : def.dims[d].splits) {
        admitted.push_back(key.second.Fits(d, factors) ? '1' : '0');
      }
      admitted.push_back('|');
    }
    admitted.push_back(def.restricted && def.num_pure > 0 && !key.second.Fits(0, {def.lanes})
                           ? 'n'
                           : 'v');
  }
  const ScheduleSpace::AtMemo::Entry* entry = nullptr;
  {
    std::shared_lock<std::shared_mutex> lock(memo.mutex);
    const auto it = memo.entries.find(admitted);
    if (it != memo.entries.end()) entry = &it->second;
  }
  if (entry == nullptr) {
    ScheduleSpace::AtMemo::Entry made;
    made.count = 1;
    for (int u = 0; u < num_defs; ++u) {
      made.defs.push_back(WithinWindow(info.defs[u], key.second));
      const SpaceDefinition& def = made.defs.back();
      made.count *= def.restricted ? static_cast<int64_t>(RestrictedChoices(def, false).size())
                                   : CountFull(def, false);
    }
    std::unique_lock<std::shared_mutex> lock(memo.mutex);
    entry = &memo.entries.emplace(std::move(admitted), std::move(made)).first->second;
  }
  std::unique_lock<std::shared_mutex> lock(memo.mutex);
  memo.windows.emplace(std::move(key), entry);
  return {entry->defs.data(), entry->count};
}

namespace {

// The stage's options: INLINE, and ROOT with its definitions' options and each AT loop
// with the definitions' options there, each in every layout.
int64_t CountFromContext(int64_t count_root, int64_t layouts, const NextContext& ctx) {
  int64_t located = count_root;
  for (const AtDefinitions& at : ctx.at_defs) located += at.count;
  return (ctx.inline_ok ? 1 : 0) + located * layouts;
}

}  // namespace

void ScheduleSpaceImpl::SampleDefinitions(const ScheduleSpace& space, int stage,
                                          const SpaceDefinition* defs, bool root, SpaceRng& rng,
                                          StageSchedule* out) {
  if (space.stages_[stage].has_update) {
    const std::vector<RestrictedChoice> rc = RestrictedChoices(defs[0], root);
    FillRestricted(space, stage, defs[0], rc[rng.Below(rc.size())], out->mutable_pure());
    FillFull(space, stage, defs[1], SampleFull(defs[1], root, rng), out->mutable_update());
  } else {
    FillFull(space, stage, defs[0], SampleFull(defs[0], root, rng), out->mutable_pure());
  }
}

StageSchedule ScheduleSpaceImpl::Sample(const ScheduleSpace& space, SpecState& state,
                                        SpaceRng& rng) {
  const NextContext ctx = Context(space, state);
  StageSchedule out;
  if (ctx.stage < 0) return out;
  const ScheduleSpace::StageInfo& info = space.stages_[ctx.stage];
  out.set_stage(info.name);
  uint64_t x =
      rng.Below(static_cast<uint64_t>(CountFromContext(info.count_root, info.layouts(), ctx)));
  if (ctx.inline_ok) {
    if (x == 0) {
      out.set_compute(INLINE);
      return out;
    }
    --x;
  }
  const uint64_t layouts = static_cast<uint64_t>(info.layouts());
  FillLayout(space, ctx.stage, static_cast<int64_t>(x % layouts), &out);
  x /= layouts;
  if (x < static_cast<uint64_t>(info.count_root)) {
    out.set_compute(ROOT);
    SampleDefinitions(space, ctx.stage, info.defs, /*root=*/true, rng, &out);
    return out;
  }
  x -= info.count_root;
  size_t i = 0;
  while (x >= static_cast<uint64_t>(ctx.at_defs[i].count)) x -= ctx.at_defs[i++].count;
  FillLocation(space, ctx, static_cast<int>(i), &out);
  SampleDefinitions(space, ctx.stage, ctx.at_defs[i].defs,
                    /*root=*/false, rng, &out);
  return out;
}

int ScheduleSpace::NextStage(const ScheduleSpec& partial) const {
  const int pos = partial.stages_size();
  return pos < static_cast<int>(order_.size()) ? order_[pos] : -1;
}

int64_t ScheduleSpace::CountOptions(const ScheduleSpec& partial) const {
  SpecState state(*this, partial);
  const NextContext ctx = ScheduleSpaceImpl::Context(*this, state);
  if (ctx.stage < 0) return 0;
  return CountFromContext(stages_[ctx.stage].count_root, stages_[ctx.stage].layouts(), ctx);
}

StageSchedule ScheduleSpace::SampleOption(const ScheduleSpec& partial, SpaceRng& rng) const {
  SpecState state(*this, partial);
  return ScheduleSpaceImpl::Sample(*this, state, rng);
}

void ScheduleSpace::ForEachOption(const ScheduleSpec& partial,
                                  const std::function<bool(const StageSchedule&)>& fn) const {
  SpecState state(*this, partial);
  const NextContext ctx = ScheduleSpaceImpl::Context(*this, state);
  if (ctx.stage < 0) return;
  const StageInfo& info = stages_[ctx.stage];
  StageSchedule option;
  option.set_stage(info.name);
  if (ctx.inline_ok) {
    option.set_compute(INLINE);
    if (!fn(option)) return;
  }
  // `option` (a location and its definitions) in every layout.
  auto in_layouts = [&]() {
    for (int64_t layout = 0; layout < info.layouts(); ++layout) {
      ScheduleSpaceImpl::FillLayout(*this, ctx.stage, layout, &option);
      if (!fn(option)) return false;
    }
    return true;
  };
  // Every combination of the options of `defs` (the stage's definitions within its
  // window) at one location (`option` holds the location); false when fn asked to stop.
  auto definitions = [&](const SpaceDefinition* defs, bool root) {
    if (!info.has_update) {
      return ScheduleSpaceImpl::ForEachFull(defs[0], root, [&](const FullChoice& c) {
        option.clear_pure();
        ScheduleSpaceImpl::FillFull(*this, ctx.stage, defs[0], c, option.mutable_pure());
        return in_layouts();
      });
    }
    for (const RestrictedChoice& r : ScheduleSpaceImpl::RestrictedChoices(defs[0], root)) {
      option.clear_pure();
      ScheduleSpaceImpl::FillRestricted(*this, ctx.stage, defs[0], r, option.mutable_pure());
      const bool go_on = ScheduleSpaceImpl::ForEachFull(defs[1], root, [&](const FullChoice& c) {
        option.clear_update();
        ScheduleSpaceImpl::FillFull(*this, ctx.stage, defs[1], c, option.mutable_update());
        return in_layouts();
      });
      if (!go_on) return false;
    }
    return true;
  };
  option.set_compute(ROOT);
  if (!definitions(info.defs, true)) return;
  for (size_t i = 0; i < ctx.at_loops.size(); ++i) {
    option.Clear();
    option.set_stage(info.name);
    ScheduleSpaceImpl::FillLocation(*this, ctx, static_cast<int>(i), &option);
    if (!definitions(ctx.at_defs[i].defs, false)) return;
  }
}

std::vector<StageSchedule> ScheduleSpace::Options(const ScheduleSpec& partial) const {
  std::vector<StageSchedule> out;
  ForEachOption(partial, [&](const StageSchedule& option) {
    out.push_back(option);
    return true;
  });
  return out;
}

// ---------------------------------------------------------------------------------
// Whole schedules

ScheduleSpec ScheduleSpace::Empty() const {
  ScheduleSpec spec;
  spec.set_pipeline_id(pipeline_id_);
  spec.set_partial(!order_.empty());
  return spec;
}

ScheduleSpec ScheduleSpace::RandomCompletion(const ScheduleSpec& partial, uint64_t seed) const {
  ScheduleSpec spec = partial;
  SpaceRng rng(seed);
  SpecState state(*this, spec);
  while (spec.stages_size() < static_cast<int>(order_.size())) {
    StageSchedule option = ScheduleSpaceImpl::Sample(*this, state, rng);
    *spec.add_stages() = std::move(option);
  }
  spec.set_partial(false);
  return spec;
}

ScheduleSpec ScheduleSpace::RandomSchedule(uint64_t seed) const {
  return RandomCompletion(Empty(), seed);
}

ScheduleSpec ScheduleSpace::WithDefaults(const ScheduleSpec& partial) const {
  ScheduleSpec spec = partial;
  for (size_t pos = spec.stages_size(); pos < order_.size(); ++pos) {
    const StageInfo& info = stages_[order_[pos]];
    StageSchedule* stage = spec.add_stages();
    stage->set_stage(info.name);
    stage->set_compute(info.inline_legal ? INLINE : ROOT);
  }
  if (spec.pipeline_id().empty()) spec.set_pipeline_id(pipeline_id_);
  spec.set_partial(false);
  return spec;
}

ScheduleSpec ScheduleSpace::Reference() const {
  ScheduleSpec spec;
  spec.set_pipeline_id(pipeline_id_);
  for (int s : order_) {
    StageSchedule* stage = spec.add_stages();
    stage->set_stage(stages_[s].name);
    stage->set_compute(ROOT);
  }
  return spec;
}

}  // namespace schedfarm
