// The schedule space of a pipeline, free of Halide: the legal scheduling decisions of
// each stage, taken one stage at a time in reverse topological order (outputs
// first) as in the value-learning paper. A partial schedule is a prefix of these
// decisions. The space enumerates, counts and samples the options of the next stage,
// completes partial schedules, and checks any ScheduleSpec before it is compiled.
//
// Loops and extents. Loops are named by LoopRef {stage, dim, level, update}: dim as in
// LoopNestOf (pipeline/ops.h), level 0 the outermost part of a split dim (0 for an
// unsplit dim). In Halide, an unsplit dim keeps its name and the levels of a split dim
// are Vars (or RVars) named "<dim>_<level>" (LoopVarName). DimSplit.factors are the
// inner extents from the innermost outwards: d split by [8, 4] has levels d_0 (outer),
// d_1 (4), d_2 (8); Halide: split(d, t, d_2, 8) then split(t, d_0, d_1, 4). The extent
// of a loop is nominal: an unsplit dim has the extent of the stage's shape, an inner
// level its factor, the outermost level ceil(extent / product of the factors). (A
// stage computed AT a consumer loop only covers the region that loop needs; the space
// still reasons with nominal extents.) An applier must bound every output Func to its
// shape, so that the loops of ROOT stages have constant extents in Halide (vectorize
// and unroll require it).
//
// Natural order (Halide's default after the splits), innermost first: the reduction
// loops (dims as in LoopNestOf, each dim's levels innermost first), then the pure
// loops (same rule). DefinitionSchedule.loop_order is the argument list of Halide's
// reorder(), innermost first: the named loops take the slots they occupied in the
// natural order, in the listed order; unnamed loops keep their slots. Reduction loops
// must keep their natural relative order (Halide refuses to reorder RVars).
//
// Tails. A split need not divide its extent. ShiftInwards and RoundUp compute points
// outside the region a stage's consumers ask for whenever that region is smaller than
// the split (a stage computed AT a consumer loop, or read only in part through a slice
// or a stride), and such points read the pipeline's inputs out of bounds. Only an
// output, bounded to its shape, has a region the space knows; so TAIL_AUTO means
// ShiftInwards in the pure definition of an output and GuardWithIf everywhere else
// (ResolvedTail), and the explicit ShiftInwards and RoundUp are legal on outputs only.
//
// Shape of one stage's decision (a StageSchedule), as offered by the space:
//   location   INLINE: stages without an update definition that are not outputs.
//              ROOT: every stage (the only location of outputs).
//              AT a loop of the stage's host: the stage's uses are found through its
//              inlined consumers; a use is a (consumer, definition) pair. CONV and
//              MATMUL read their third input (bias, c) in the pure definition and the
//              others in the update; POOL and REDUCE read in the update; other ops in
//              their pure definition. With exactly one use (host h, definition D), the
//              AT options are the loops of h's D (after h's decision) with extent > 1
//              that are not vectorized, unrolled, nor inside the vectorized loop.
//              Several uses: no AT option.
//              Clamped windows: a stage h computed AT a host loop with a pure loop
//              of extent > 1 inside it, and read through clamped indices on the way
//              to that host (ClampedAxes: padding, pool windows leaving the input,
//              PAD, CONCAT), covers a region whose bounds Halide 14 overestimates
//              (not at a loop of a consumer's consumer outside every reduction
//              loop: a fused task's output strip, which templates use);
//              a stage computed at a loop of h with a pure loop of h of extent > 1
//              inside it inherits those loose bounds down to the pipeline's inputs,
//              whose required region then exceeds their extent ("Input buffer x is
//              accessed at 12, which is beyond the max (6)"). The AT options on such
//              an h are its loops with no pure loop of extent > 1 inside.
//              Windows: a stage whose single host reads it aligned (elementwise,
//              broadcast, pad, concat, unit-stride slice, nearest upsample; through
//              inlined consumers that do too) computes, at a host loop, along each
//              dim at most the span of the host's loops of that dim inside the loop
//              (the host's own window when its level 0 is inside); along a
//              concatenation's axis, the whole input.
//              Its splits AT that loop are those whose product fits the window: a
//              larger split only makes a loop of extent 1 and a partly false guard,
//              and Halide 14 mislowers some of them (an out-of-bounds input read, a
//              crash in its simplifier). So the options at each AT loop differ.
//              Nested tiles: along a dim its host tiles it by (every dim of an
//              aligned read but a concatenation's axis, MATMUL's batch dims with m
//              or n), a stage inside a host
//              loop lies in the tiles of the host's splits of that dim and of the
//              host's own hosts; at most 3 splits in all when one of them has a tail
//              (factors that do not divide the extent they split), else Halide 14
//              bounds the region beyond the pipeline's inputs.
//   storage    at the compute location only (store COMPUTE_LOCATION_UNSPECIFIED).
//              Storage outside the compute loop makes Halide 14 slide windows and
//              fold storage, and its sliding window computes wrong values for
//              schedules of this space (it slides along a dimension whose region does
//              not move with the loop and skips computing the values later
//              iterations need), so the space has no such option and Check refuses it.
//   layout     unless inlined (scheduler/layouts.h): storage_innermost empty (the
//              natural order) or a pure dim after dim 0 whose extent is a multiple of
//              the lanes (not on outputs); pack_weights false, or true where the stage
//              may pack (PackableWeights); padded_copy false, or true where the
//              stage may read its padded input from a copy (PaddedCopyAllowed). Every
//              location's options come in each of these layouts.
//   per definition (pure; and update for CONV, MATMUL, POOL, REDUCE), unless inlined.
//   A "full" definition (the pure one of a stage without update, or the update):
//     splits     each pure dim into 1-3 levels: inner factors from kSplitFactors,
//                f1 < extent, or f1 * f2 < extent (so every level has extent >= 2);
//                each reduction dim into 1-2 levels (f < extent). Dims of extent 1
//                are never split.
//     loop order tiers: innermost tier = the innermost level of every pure dim; middle
//                tier = level 1 of dims split in 3; outer tier = level 0 of split dims.
//                Order, innermost first: the innermost level of one chosen pure dim of
//                extent > 1 (any one), the rest of the innermost tier, the middle tier,
//                the outer tier (natural dim order within a tier). The reduction loops
//                form one block in natural order, placed innermost, just outside the
//                innermost tier, or just outside the middle tier. Orders equal once the
//                loops of extent 1 are dropped are offered once. loop_order lists the
//                complete order.
//     Below, "innermost", "outermost" count only loops of extent > 1.
//     vectorize  the innermost loop, if pure and its extent is a multiple of the
//                lanes (vector_bytes / dtype bytes) and at most 4 * lanes;
//                vector_width = its extent. In an update, a pure innermost loop
//                directly inside a level of a reduction dim split with a tail must be
//                vectorized (LLVM 14 misvectorizes it otherwise: rule 9).
//     unroll     the loop just outside the innermost one, if its extent <= 16.
//                In an update whose reduction loops lie outside both, a vectorized
//                innermost loop and an unrolled pure loop are a register tile of
//                accumulators: it must fit the target's vector registers beside one
//                row of operands (RegisterTileFits).
//                With AT, neither is level 0 of a pure dim: that loop spans the
//                region the consumer loop asks for, whose extent Halide does not
//                know as a constant where the consumer's splits have guarded tails.
//                Not with a vectorized split level in a stage that is not an output
//                and loads with a stride or a gather (a strided SLICE, a moving
//                TRANSPOSE, a RESHAPE, a transposed MATMUL operand; itself or through
//                a producer that may be inlined into it): Halide 14's code for the
//                guarded tail, predicated strided loads, can crash when unrolled.
//     parallel   with ROOT only: none, the outermost loop, or the outermost two; each
//                pure and neither vectorized nor unrolled.
//     tail       TAIL_AUTO.
//   A "restricted" definition (the pure one of a stage with an update) only chooses:
//     vectorize  the innermost pure dim (dim 0 of LoopNestOf) by the lanes, if its
//                extent is a multiple of them: split by [lanes] and vectorize level 1,
//                or, with ROOT, vectorize the unsplit dim when its extent equals the
//                lanes;
//     parallel   with ROOT only: none, or the outermost loop if it is not vectorized.
//   Options differing only in a directive on a loop of extent 1 do not exist (such
//   loops are never vectorized, unrolled, parallel, compute or store levels).
//
// Thread-compatible: const methods may be called concurrently. The space keeps a
// reference to the graph, which must outlive it.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "common/random.h"
#include "common/status.h"
#include "pipeline/graph.h"
#include "schedfarm.pb.h"
#include "scheduler/target.h"

namespace schedfarm {

// Whether a register tile of `vectors` x `rows` accumulators fits in `registers`
// vector registers beside the operands of one step: a row of `vectors` loaded vectors
// and one broadcast (rule 8 of docs/SCHEDULES.md).
inline bool RegisterTileFits(int64_t vectors, int64_t rows, int registers) {
  return vectors * rows + vectors + 1 <= registers;
}

// The vector bytes of the workers a campaign requires: 64 where they must have
// avx512f (Halide's target then uses 512-bit vectors), else 32 (AVX2, the default).
int CampaignVectorBytes(const WorkerRequirements& workers);

// Inner split factors the space offers (a factor must be smaller than the extent).
inline constexpr int64_t kSplitFactors[] = {2, 4, 8, 16, 32, 64};

// One loop of a scheduled definition.
struct ScheduledLoop {
  LoopRef ref;
  int64_t extent = 0;  // nominal (see above)
  bool reduction = false;
  bool vectorized = false;
  bool unrolled = false;
  bool parallel = false;
};

// The seed of the `index`-th sample of a stream seeded with `seed` (a SplitMix64
// finalizer): campaigns derive each proposal's RandomSchedule seed with it.
uint64_t MixSeed(uint64_t seed, uint64_t index);

// Deterministic random numbers for sampling (SplitMix64 stream).
class SpaceRng {
 public:
  explicit SpaceRng(uint64_t seed) : stream_(seed) {}
  uint64_t Next() { return stream_.Next(); }
  // Uniform in [0, n), n > 0 (no modulo bias).
  uint64_t Below(uint64_t n);
  // Uniform in [0, 1), with 53 random bits.
  double Unit() { return stream_.Unit(); }

 private:
  SplitMixStream stream_;
};

class ScheduleSpace {
 public:
  ScheduleSpace(const PipelineGraph& graph, const TargetParams& target = {});
  ScheduleSpace(const ScheduleSpace& other);
  ScheduleSpace(ScheduleSpace&& other) noexcept;
  ~ScheduleSpace();

  const PipelineGraph& graph() const { return graph_; }
  const TargetParams& target() const { return target_; }
  // PipelineId of the graph; Empty() and WithDefaults() carry it.
  const std::string& pipeline_id() const { return pipeline_id_; }
  // Stage indices in decision order (reverse topological: outputs first).
  const std::vector<int>& decision_order() const { return order_; }
  // Index of `stage` in decision_order().
  int position(int stage) const { return position_[stage]; }
  // Vector lanes of the stage's dtype: vector_bytes / bytes per element.
  int lanes(int stage) const;
  // Whether the stage may be inlined (no update definition, not an output).
  bool InlineLegal(int stage) const;
  // Options of the stage's own definitions for one location (product over its
  // definitions): ROOT, and AT a loop whose window (see Windows above) is the stage's
  // whole extent (narrower windows offer fewer splits).
  int64_t DefinitionOptions(int stage, bool root) const;

  // --- the next stage of a partial schedule -------------------------------------
  // `partial` holds decisions for the first partial.stages_size() stages of
  // decision_order(), in that order. REQUIRES: Check(partial).ok(). A complete
  // schedule has no next stage (NextStage -1, no options).
  int NextStage(const ScheduleSpec& partial) const;
  // Calls `fn` on every option of the next stage, in a fixed order (INLINE, ROOT,
  // then AT loops innermost first); stops early if fn
  // returns false.
  void ForEachOption(const ScheduleSpec& partial,
                     const std::function<bool(const StageSchedule&)>& fn) const;
  // Every option of the next stage (may be large: see CountOptions first).
  std::vector<StageSchedule> Options(const ScheduleSpec& partial) const;
  // The number of options of the next stage (the branching factor).
  int64_t CountOptions(const ScheduleSpec& partial) const;
  // One option of the next stage, uniformly at random. REQUIRES: not complete.
  StageSchedule SampleOption(const ScheduleSpec& partial, SpaceRng& rng) const;

  // --- whole schedules --------------------------------------------------------------
  // Completes `partial` with uniformly random options, stage by stage.
  ScheduleSpec RandomCompletion(const ScheduleSpec& partial, uint64_t seed) const;
  // A random complete schedule (RandomCompletion of the empty schedule).
  ScheduleSpec RandomSchedule(uint64_t seed) const;
  // The schedule with every undecided stage given the default: INLINE where legal,
  // otherwise ROOT with no other directive (Halide's own default).
  ScheduleSpec WithDefaults(const ScheduleSpec& partial) const;
  // The reference schedule (pipeline/halide/lowering.h) as a spec: every stage ROOT,
  // no other directive.
  ScheduleSpec Reference() const;
  // The empty partial schedule of this pipeline.
  ScheduleSpec Empty() const;

  // Legality of a complete or partial spec, whether the space produced it or not.
  // Rules (each error names the stage, the directive and why):
  //  - pipeline_id empty or equal to pipeline_id(); stages listed in decision order,
  //    each once; a complete spec (partial = false) lists every stage.
  //  - compute: COMPUTE_LOCATION_UNSPECIFIED means the default (INLINE where legal,
  //    else ROOT). INLINE only where legal, with no other directive. Outputs ROOT.
  //    compute_at set only with AT, store_at only with store AT.
  //  - AT: compute_at names a stage decided earlier and not inlined, a definition it
  //    has, and a loop of that definition after its splits; the loop is not
  //    vectorized, unrolled or inside the vectorized loop, and it encloses every use
  //    of the stage (the loop nests of the consumers, through inlined ones, each
  //    nested in its own compute location). If the host is a clamped window (above),
  //    no pure loop of extent > 1 of the host lies inside the loop. No split of the
  //    stage is larger than its window at the loop (Windows, above). Where the host
  //    alone reads the stage, no loop from this one out (of extent > 1) is one along
  //    whose dim it reads none of the stage (rule 10: it would be computed over in
  //    every iteration).
  //  - store: unset, or equal to the compute location (see storage above).
  //  - storage_innermost, pack_weights, padded_copy: not on an inlined stage;
  //    storage_innermost a pure dim of the stage and not on an output; pack_weights
  //    where PackableWeights allows it (constant weights of a CONV or transposed MATMUL
  //    read by it alone); padded_copy where PaddedCopyAllowed does (a CONV reading a
  //    padded pipeline input).
  //  - splits: dims of the definition (pure dims; the update also has reduction
  //    dims), each at most once, factors >= 2; the product of a dim's factors must not
  //    exceed its extent, unless tail is TAIL_GUARD_WITH_IF. TAIL_SHIFT_INWARDS and
  //    TAIL_ROUND_UP only on outputs (see Tails above); there, update definitions
  //    refuse TAIL_SHIFT_INWARDS, and TAIL_ROUND_UP needs every split to divide its
  //    extent (the output buffer has the exact shape).
  //  - loop_order: existing loops of this stage and definition, no repeats; reduction
  //    loops keep their natural relative order.
  //  - vectorize: a pure loop (a reduction loop would need rfactor) of extent >= 2,
  //    vector_width equal to its extent; vector_width only with vectorize. With AT,
  //    vectorize and unroll name no level 0 of a pure dim (see the options above).
  //  - unroll, parallel: existing loops, no repeats, never the vectorized loop;
  //    parallel never a reduction loop, an unrolled loop or a loop inside the
  //    vectorized one.
  //  - a stage without update has an empty update schedule.
  Status Check(const ScheduleSpec& spec) const;
  // Check for a schedule that was measured, which may come from a space before rules 4
  // to 10 of docs/SCHEDULES.md (clamped windows, splits within the window, nested
  // tiles, unroll with strided loads, register tiles, reduction tails, producers
  // computed over): every rule but those. They refuse schedules that Halide 14
  // may fail to run or compute wrongly, that spill or that recompute; one measured OK
  // ran, and its loop nest and features are as well defined as any legal schedule's.
  Status CheckMeasured(const ScheduleSpec& spec) const;

  // The loops of the definition of `stage` that producers can be computed in (its
  // update if it has one, else its pure definition), innermost first, after its
  // decision. REQUIRES: the decision is legal for the stage.
  std::vector<ScheduledLoop> LoopsOf(int stage, const StageSchedule& decision) const;
  // The loops of one definition (update = false: pure).
  std::vector<ScheduledLoop> DefinitionLoops(int stage, bool update,
                                             const StageSchedule& decision) const;

 private:
  struct StageInfo;
  struct AtMemo;

  // strict: rules 4 to 10 of docs/SCHEDULES.md apply.
  Status Check(const ScheduleSpec& spec, bool strict) const;

  const PipelineGraph& graph_;
  TargetParams target_;
  std::string pipeline_id_;
  std::vector<int> order_;
  std::vector<int> position_;  // stage -> index in order_
  std::vector<StageInfo> stages_;
  // The definitions and their options per (stage, window) of the AT loops met so far,
  // shared by copies.
  std::shared_ptr<AtMemo> at_memo_;
  // Private helpers live in space_internal.h and the scheduler's .cc files.
  friend class ScheduleSpaceImpl;
};

// What `tail` means in a definition (update or pure) of an output or other stage:
// TAIL_AUTO resolved as described under Tails above; other tails unchanged.
TailStrategy ResolvedTail(TailStrategy tail, bool update, bool output);

// The LoopRef of level `level` of dim `dim` of `stage` (its update's loop with `update`).
LoopRef MakeLoopRef(const std::string& stage, const std::string& dim, int level, bool update);

// The Halide Var/RVar name of a loop of a dim split into `num_levels` levels.
std::string LoopVarName(const std::string& dim, int level, int num_levels);

// Canonical form of a schedule: stages in decision order; defaults resolved
// (COMPUTE_LOCATION_UNSPECIFIED to INLINE or ROOT, pipeline_id to the space's,
// partial = fewer stages than the pipeline); no-ops removed: DimSplits without
// factors, loops of extent 1 in loop_order (which lists the complete order),
// parallel and unroll; store cleared (it is the compute location). The tail is TAIL_AUTO where
// every choice means the same (stages that are not outputs; an output whose splits divide its
// extents), otherwise ResolvedTail. Two specs that mean the same schedule have the same form.
// REQUIRES: space.Check(spec).ok().
ScheduleSpec CanonicalSchedule(const ScheduleSpace& space, const ScheduleSpec& spec);
// The deterministic text of the canonical form (a version line, then one line per
// stage and definition) that ScheduleHash digests; stage names are part of it.
std::string CanonicalScheduleText(const ScheduleSpace& space, const ScheduleSpec& spec);
// First 32 hex digits of the SHA-256 of CanonicalScheduleText: the candidate's
// schedule hash.
std::string ScheduleHash(const ScheduleSpace& space, const ScheduleSpec& spec);

}  // namespace schedfarm
