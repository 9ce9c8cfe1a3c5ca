// Internals of the schedule space shared by its .cc files: the option structure of
// each stage, definitions resolved into loops, decisions of a spec resolved into
// compute locations, and the helpers that count, enumerate and sample. Not part of
// the public API (include scheduler/schedule_space.h instead).
#pragma once

#include <cstdint>
#include <memory>
#include <shared_mutex>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "common/status.h"
#include "scheduler/schedule_space.h"

namespace schedfarm {

// A loop dimension of one definition and the splits the space offers for it.
struct SpaceDim {
  std::string name;
  int64_t extent = 0;
  bool reduction = false;
  // Split choices, inner factors innermost first; splits[0] is {} (unsplit).
  std::vector<std::vector<int64_t>> splits;
};

// At most this many splits along one dim where some of them has a tail, counting
// those of a stage and of the hosts whose tiles its region lies in (rule 6 of
// docs/SCHEDULES.md).
inline constexpr int kMaxNestedSplits = 3;

// What bounds the region a stage computes, per pure dim: its extent as far as the
// space can bound it (at ROOT the dim's extent; AT a loop of a host that reads it
// aligned, through inlined consumers that do too, at most the span of the host's
// loops of that dim inside the loop: rule 5, no split is larger), and the splits
// along the dim of the hosts whose tiles it lies in, with whether one has a tail (bit
// d of host_tails: its factors do not divide the extent it splits) (rule 6).
struct StageWindow {
  std::vector<int64_t> extent;
  std::vector<int> host_splits;
  uint32_t host_tails = 0;
  bool operator==(const StageWindow& o) const {
    return extent == o.extent && host_splits == o.host_splits && host_tails == o.host_tails;
  }
  // Whether rule 6 refuses splitting dim d by `factors` here.
  bool TooManySplits(int d, const std::vector<int64_t>& factors) const;
  // Whether rules 5 and 6 allow splitting dim d by `factors` here.
  bool Fits(int d, const std::vector<int64_t>& factors) const;
};

// One loop of a resolved definition.
struct SpaceLoop {
  int dim = 0;    // index into SpaceDefinition::dims
  int level = 0;  // 0: the outermost part of the dim
  int64_t extent = 0;
  bool reduction = false;
  // A level of a dim whose split leaves a tail (its factors' product does not divide
  // its extent).
  bool tail = false;
  bool vectorized = false;
  bool unrolled = false;
  bool parallel = false;
};

// A definition after its splits and loop order.
struct ResolvedDefinition {
  std::vector<SpaceLoop> loops;               // innermost first
  std::vector<int> num_levels;                // per dim
  std::vector<std::vector<int64_t>> factors;  // per dim, innermost first
  // Position of loop (dim, level) in `loops`, or -1.
  int Find(int dim, int level) const;
  // Position of the vectorized loop, or -1.
  int VectorizedPosition() const;
  // Whether a pure loop of extent > 1 lies inside loop `q` (at a position below q).
  bool PureLoopInside(int q) const;
};

// The options of one definition of a stage.
struct SpaceDefinition {
  bool update = false;
  bool restricted = false;     // the pure definition of a stage with an update
  std::vector<SpaceDim> dims;  // pure dims (LoopNestOf order), then reduction dims
  int num_pure = 0;
  std::vector<int> pure_nt;    // pure dims of extent > 1, natural order
  std::vector<int> red_nt;     // reduction dims of extent > 1, natural order
  bool has_reduction = false;  // reduction placements 0-2 exist
  int lanes = 1;
  int vector_registers = 16;  // TargetParams::vector_registers
  // Not an output, and its loads may be strided or gathered (StageInfo::strided_loads,
  // strided_unless_packed):
  // a vectorized split level has a guarded tail of predicated strided loads, and no
  // loop is unrolled with it (rule 7 of docs/SCHEDULES.md).
  bool guarded_strided = false;
  // Restricted definitions: vectorize possible; parallel possible with vectorize off/on.
  bool restricted_vec = false;
  bool restricted_par[2] = {false, false};
  int64_t count_root = 1;
  int64_t count_at = 1;
  // Index of the dim named `name`, or -1.
  int FindDim(const std::string& name) const;
};

// One option of a full definition: split choice per dim, chosen innermost dim,
// reduction placement and the (vectorize, unroll, parallel) combination.
struct FullChoice {
  std::vector<int> split;  // per dim: index into SpaceDim::splits
  int chosen = -1;         // index into pure_nt, -1 when there is none
  int placement = 0;       // reduction block: 0 innermost, 1 after the innermost tier,
                           // 2 after the middle tier
  int combo = 0;           // vectorize * 6 + unroll * 3 + parallel (0 none, 1, 2 loops)
};

// One option of a restricted definition.
struct RestrictedChoice {
  bool vectorize = false;
  bool parallel = false;
};

// A loop on the path from the root to a compute location.
struct ChainLoop {
  int stage = 0;
  bool update = false;
  int dim = 0;
  int level = 0;
  bool operator==(const ChainLoop& o) const {
    return stage == o.stage && update == o.update && dim == o.dim && level == o.level;
  }
};

// A decided stage of a spec, resolved.
struct StageState {
  ComputeLocation location = ROOT;
  ResolvedDefinition defs[2];    // [0] pure, [1] update
  std::vector<ChainLoop> chain;  // loops enclosing the computation, outermost first
  // Computed AT a loop with a pure loop of extent > 1 inside it, of the stage that reads
  // it through clamped indices (ClampedAxes; through inlined stages) or inside a
  // reduction loop of any stage: the region it computes there has bounds Halide 14
  // overestimates (rule 4 of docs/SCHEDULES.md), so no stage is computed at one of its
  // loops with a pure loop inside. At a strip loop of a consumer's consumer (a fused
  // task's output), outside every reduction, it has not.
  bool clamped_window = false;
  StageWindow window;
  // Per pure dim: window.host_splits plus the stage's own splits of it (the most of
  // its definitions'), and whether one of them has a tail (bit d), what a stage
  // computed inside its tiles inherits.
  std::vector<int> nested_splits;
  uint32_t nested_tails = 0;
};

// One use of a stage: a non-inlined consumer reached through inlined ones, and the
// definitions of it that read the stage (bit 0 pure, bit 1 update).
struct StageUse {
  int stage = 0;
  int defs = 0;
};

class ScheduleSpaceImpl;

// The decisions of a spec, resolved lazily (decisions before `pos` are resolved
// before `pos`). The spec may grow (RandomCompletion appends to it).
class SpecState {
 public:
  // strict: whether rules 4 to 10 of docs/SCHEDULES.md apply (ScheduleSpace::
  // CheckMeasured leaves them out).
  SpecState(const ScheduleSpace& space, const ScheduleSpec& spec, bool strict = true);
  // The compute location of decision `pos`, the default resolved (no checks).
  ComputeLocation Location(int pos) const;
  // Validates decision `pos` against the earlier ones and records it.
  Status Resolve(int pos);
  // The resolved decision at `pos`; if Resolve has not validated it, resolves it
  // without checks (REQUIRES: a legal spec).
  const StageState& At(int pos);
  // Uses of `stage`, memoized (all of its consumers must be decided).
  const std::vector<StageUse>& Uses(int stage);
  // Whether `stage` is read through clamped indices by a consumer, or by one of the
  // inlined consumers through which its uses are found.
  bool ReadClamped(int stage);
  // Whether every consumer of `stage`, and every inlined consumer through which its
  // uses are found, reads it aligned (StageReader::aligned).
  bool ReadAligned(int stage);
  // The pure dims along which every consumer of `stage` tiles it, through inlined
  // consumers as ReadAligned (StageReader::tiled).
  uint32_t TiledDims(int stage);
  const ScheduleSpec& spec() const { return *spec_; }
  bool strict() const { return strict_; }

 private:
  const ScheduleSpace& space_;
  const ScheduleSpec* spec_;
  bool strict_;
  std::vector<std::unique_ptr<StageState>> states_;           // by position
  std::vector<std::unique_ptr<std::vector<StageUse>>> uses_;  // by stage
};

// The stage's definitions (pure, then update if it has one) with the splits that fit
// a window, and their number of options.
struct AtDefinitions {
  const SpaceDefinition* defs = nullptr;
  int64_t count = 0;
};

// The location options of the next stage of a partial schedule.
struct NextContext {
  int stage = -1;
  int pos = -1;
  bool inline_ok = false;
  int host = -1;
  bool host_update = false;
  const ResolvedDefinition* host_def = nullptr;
  std::vector<int> at_loops;  // positions in host_def->loops
  // Per AT loop: the stage's definitions within its window there (StageState::window)
  // and their number of options.
  std::vector<AtDefinitions> at_defs;
};

// The memo of ScheduleSpaceImpl::DefinitionsAt: counting the options
// within a window takes longer than sampling one. Random schedules meet many distinct
// windows of a stage (each host's splits give other extents), but far fewer distinct
// sets of the splits those windows admit, and the count depends only on those: the
// entries are kept by admitted splits, and each window points at its entry. Entries
// are never removed, so pointers to them and their definitions stay valid.
struct ScheduleSpace::AtMemo {
  struct Entry {
    std::vector<SpaceDefinition> defs;  // pure, then update if the stage has one
    int64_t count = 0;
  };
  struct Hash {
    size_t operator()(const std::pair<int, StageWindow>& key) const;
  };
  std::shared_mutex mutex;
  // By the stage and, per definition and pure dim, which of its splits fit.
  std::unordered_map<std::string, Entry> entries;
  std::unordered_map<std::pair<int, StageWindow>, const Entry*, Hash> windows;
};

class ScheduleSpaceImpl {
 public:
  static void InitStage(ScheduleSpace& space, int stage);
  static const ScheduleSpace::StageInfo& Info(const ScheduleSpace& space, int stage);

  // Definitions.
  static std::vector<SpaceLoop> NaturalLoops(const SpaceDefinition& def,
                                             const std::vector<int>& num_levels,
                                             const std::vector<std::vector<int64_t>>& factors);
  static Status ResolveDefinition(const ScheduleSpace& space, int stage, bool update,
                                  const DefinitionSchedule& schedule, ResolvedDefinition* out);
  static std::vector<ScheduledLoop> ToScheduledLoops(const ScheduleSpace& space, int stage,
                                                     bool update, const ResolvedDefinition& def);
  // Validates and resolves decision `pos` (the earlier ones are resolved).
  static Status CheckDecision(const ScheduleSpace& space, SpecState& state, int pos,
                              StageState* out);
  // Resolves decision `pos` of a legal spec without checks: what sampling needs.
  static void ResolveUnchecked(const ScheduleSpace& space, SpecState& state, int pos,
                               StageState* out);
  // out->chain and in_parallel for a stage computed at loop `q` of `host`'s definition.
  static void ExtendChain(const StageState& host, int host_stage, bool update, int q,
                          StageState* out);
  // Sets out->clamped_window for `stage` computed at loop `q` of `host_def`, after
  // ExtendChain.
  static void SetClampedWindow(const ScheduleSpace& space, SpecState& state, int stage, int host,
                               const ResolvedDefinition& host_def, int q, StageState* out);
  // How often `stage` would be computed over at loop `q` of `host_def` (rule 10 of
  // docs/SCHEDULES.md): the product of the extents of loop q and the loops around it
  // along whose dims `host` reads none of the stage (StageReader::indexing), each of
  // whose iterations reads the same region of it again, when `host` alone reads the
  // stage, directly; 1 when none of them has an extent above 1, and when another stage
  // reads it too (not known). `dims` receives those loops' dims.
  static int64_t Recomputations(const ScheduleSpace& space, int stage, int host,
                                const ResolvedDefinition& host_def, int q,
                                std::vector<int>* dims = nullptr);
  // The stage's window at ROOT: its extents, inside no host's tile.
  static StageWindow RootWindow(const ScheduleSpace& space, int stage);
  // The window (StageState::window) of `stage` computed at loop `q` of the pure
  // definition of `host`, or of its update (`host_update`).
  static StageWindow WindowAt(const ScheduleSpace& space, SpecState& state, int stage, int host,
                              bool host_update, int q);
  // Sets out->nested_splits from out->window and the resolved definitions.
  static void SetNestedSplits(const ScheduleSpace& space, int stage, StageState* out);

  // Options.
  static NextContext Context(const ScheduleSpace& space, SpecState& state);
  // `def` with only the splits of its pure dims that fit in `window` (rules 5 and 6).
  static SpaceDefinition WithinWindow(const SpaceDefinition& def, const StageWindow& window);
  // Whether `window` leaves out some option of the stage's definitions.
  static bool Narrower(const ScheduleSpace& space, int stage, const StageWindow& window);
  // The stage's definitions computed AT a loop giving it `window`: StageInfo::defs
  // itself unless the window is Narrower, else copies kept in the space's memo
  // (AtMemo) for as long as the space.
  static AtDefinitions DefinitionsAt(const ScheduleSpace& space, int stage,
                                     const StageWindow& window);
  static int64_t CountFull(const SpaceDefinition& def, bool root);
  // The loop order of `choice` (split, chosen dim, placement) into `loops`.
  static void FullOrder(const SpaceDefinition& def, const FullChoice& choice,
                        std::vector<SpaceLoop>* loops);
  static uint16_t FullCombos(const SpaceDefinition& def, const std::vector<SpaceLoop>& order,
                             bool root);
  static bool PlacementDistinct(const SpaceDefinition& def, const FullChoice& choice);
  static bool ForEachFull(const SpaceDefinition& def, bool root,
                          const std::function<bool(const FullChoice&)>& fn);
  static FullChoice SampleFull(const SpaceDefinition& def, bool root, SpaceRng& rng);
  static std::vector<RestrictedChoice> RestrictedChoices(const SpaceDefinition& def, bool root);
  static void FillFull(const ScheduleSpace& space, int stage, const SpaceDefinition& def,
                       const FullChoice& choice, DefinitionSchedule* out);
  static void FillRestricted(const ScheduleSpace& space, int stage, const SpaceDefinition& def,
                             const RestrictedChoice& choice, DefinitionSchedule* out);
  static void FillLocation(const ScheduleSpace& space, const NextContext& ctx, int at_index,
                           StageSchedule* out);
  // Layout `index` of the stage, in [0, StageInfo::layouts()): the storage choice
  // (0: natural) varies slowest, then packing, the padded copy fastest.
  static void FillLayout(const ScheduleSpace& space, int stage, int64_t index,
                         StageSchedule* out);
  // Samples the definitions of the next stage (`out` holds its location) from `defs`.
  static void SampleDefinitions(const ScheduleSpace& space, int stage, const SpaceDefinition* defs,
                                bool root, SpaceRng& rng, StageSchedule* out);
  static StageSchedule Sample(const ScheduleSpace& space, SpecState& state, SpaceRng& rng);
};

// A consumer of a stage and the definitions of it that read the stage (bit 0 pure, bit
// 1 update); aligned: it reads the stage in its pure definition only, each pure dim of
// the stage following the consumer's dim of the same index, so that w points of the
// consumer along a dim read at most w points of the stage along it (elementwise ops,
// broadcasts, pads, concatenations, unit-stride slices, nearest upsampling).
// tiled: the stage's pure dims (bit i: dim i) along which the consumer's loops tile it
// as they tile the consumer: every dim of an aligned read but a concatenation's axis
// (read modulo each input's extent, the whole input), and the batch dims with m
// (MATMUL's a) or n (its b).
// indexing: the consumer's loop dims (bit i: SpaceDefinition::dims[i] of its update, or
// of its pure definition without one) whose variables index the stage: every dim but a
// dense convolution's output channels (each reads every input channel) and a matmul's
// n for a (each column reads all of a) or m for b.
struct StageReader {
  int stage = 0;
  int defs = 0;
  bool aligned = false;
  uint32_t tiled = 0;
  uint32_t indexing = 0;
};

// The stage's option structure, built once by the constructor.
struct ScheduleSpace::StageInfo {
  std::string name;
  bool has_update = false;
  bool is_output = false;
  bool inline_legal = false;
  SpaceDefinition defs[2];  // [0] pure, [1] update (empty without update)
  std::vector<StageReader> readers;
  // Some consumer reads this stage through clamped indices (ClampedAxes).
  bool read_clamped = false;
  // It reads with a non-unit stride or a gather (a strided SLICE, a TRANSPOSE that
  // moves an axis, a RESHAPE to another shape, a transposed MATMUL operand), itself or
  // through a producer that may be inlined into it.
  bool strided_loads = false;
  // Its weights are read transposed (a MATMUL's b with trans_b) and it may pack them:
  // packed, they are read dense (rule 7 then allows an unroll; the space offers none).
  bool strided_unless_packed = false;
  int64_t count_root = 1;  // product over the definitions
  int64_t count_at = 1;
  // Layouts (scheduler/layouts.h) of a stage that is not inlined: the pure dims it may
  // store innermost besides the natural order (not an output; dims after d0 whose
  // extent is a multiple of the lanes), whether it may pack its weights, and whether
  // it may read its padded input from a copy.
  std::vector<int> storage_dims;
  bool packable = false;
  bool copyable = false;
  // Every (storage, packing, copy) triple: the options of each location times this.
  int64_t layouts() const {
    return static_cast<int64_t>(storage_dims.size() + 1) * (packable ? 2 : 1) *
           (copyable ? 2 : 1);
  }
};

// The product of a split's factors, saturated at the largest int64_t.
int64_t FactorProduct(const std::vector<int64_t>& factors);

// Whether splitting `extent` by `factors` leaves a tail (their product does not divide
// it).
inline bool LeavesTail(int64_t extent, const std::vector<int64_t>& factors) {
  return extent % FactorProduct(factors) != 0;
}

// Text of a loop for error messages: "'d0' level 1" or "'d0'".
std::string LoopText(const SpaceDefinition& def, int dim, int level, int num_levels);

}  // namespace schedfarm
