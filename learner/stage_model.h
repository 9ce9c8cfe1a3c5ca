// The schedule-free model of a pipeline that the featurizer builds once: per stage its
// loop dimensions, its operation counts per iteration of each definition, and how it
// reads each input (the index arithmetic as intervals). Internal to learner/.
//
// Operation counts mirror the Halide expressions of pipeline/halide/lowering.cc; the
// access maps evaluate the same index expressions the way Halide's bounds inference
// does (features.h is the API).
#pragma once

#include <algorithm>
#include <array>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <vector>

#include "pipeline/graph.h"
#include "pipeline/ops.h"

namespace schedfarm {
namespace features_internal {

constexpr int kMaxRank = 6;      // PipelineLimits::max_rank
constexpr int kMaxDefDims = 12;  // pure dims plus reduction dims of one definition
constexpr int kMaxLevels = 6;    // split levels of one dim (the space offers up to 3)
constexpr int kMaxLoops = kMaxDefDims * kMaxLevels;

// A closed integer interval, with what Halide's bounds inference knows of it. `point`:
// a single value (of loops outside the region being bounded), as opposed to a range
// that happens to have one element. `symbol`: moreover the index expression itself,
// built only from loop variables of such loops and constants; a split dimension's
// variable is a let of its levels, which bounds inference replaces by its value, and
// then it is a point but no longer a symbol. Halide evaluates modulo and the abs of
// reflected padding exactly only on symbols.
struct Interval {
  int64_t lo = 0;
  int64_t hi = -1;
  bool point = false;
  bool symbol = false;
  int64_t extent() const { return hi - lo + 1; }
};

// Union (bounding interval) of two intervals.
inline Interval Hull(const Interval& a, const Interval& b) {
  const bool same = a.lo == b.lo && a.hi == b.hi;
  return {a.lo < b.lo ? a.lo : b.lo, a.hi > b.hi ? a.hi : b.hi, a.point && b.point && same,
          a.symbol && b.symbol && same};
}

// One coordinate of an input as a function of the reading definition's loop variables
// (pure dims in LoopNestOf order, reduction dims likewise):
//   kAffine:  scale * floor((a * var + b) / div) + r_coef * rvar + c, taken modulo
//             `mod` if > 0 (CONCAT), then clamped to [clamp_lo, clamp_hi] if `clamp`; var
//             or rvar may be absent (-1).
//   kReflect: clamp(last - |last - |clamp(var - b, -last, 2 last)||, 0, last) with
//             last = clamp_hi (PAD REFLECT).
//   kGather:  the row-major flat index of the pure vars (strides in InputAccess), divided
//             by `div` (if > 1) and taken modulo `mod` (if > 0): RESHAPE.
struct CoordMap {
  enum Kind : uint8_t { kAffine, kReflect, kGather };
  Kind kind = kAffine;
  int8_t var = -1;
  int8_t rvar = -1;
  bool clamp = false;
  int64_t a = 1;
  int64_t b = 0;
  int64_t div = 1;
  int64_t scale = 1;
  int64_t r_coef = 0;
  int64_t c = 0;
  int64_t clamp_lo = 0;
  int64_t clamp_hi = 0;
  int64_t mod = 0;
};

// How one input (Stage.inputs[i]) is read.
struct InputAccess {
  int value = -1;     // value id (graph.values())
  int producer = -1;  // producing stage, or -1 for inputs and parameters
  Value::Kind kind = Value::Kind::kInput;
  int defs = 0;   // definitions that read it: bit 0 pure, bit 1 update
  int rank = 0;   // the input's rank
  int bytes = 4;  // bytes per element of the input
  AccessPattern pattern = AccessPattern::kPointwise;
  std::array<CoordMap, kMaxRank> coords;        // input dims, Halide order (0 innermost)
  std::array<int64_t, kMaxRank> gather_stride;  // kGather: row-major stride of each pure var
  std::array<int64_t, kMaxRank> extent;         // the input's extents, Halide order
};

// Operation counts per iteration of one definition, as its Halide expression is
// written (constants folded only where the lowering folds them).
enum FloatOp {
  kFAdd,
  kFSub,
  kFMul,
  kFDiv,
  kFMin,
  kFMax,
  kFAbs,
  kFRound,
  kFSqrt,
  kFExp,
  kFLog,
  kFTanh,
  kFTrig,
  kFPow,
  kFCast,
  kNumFloatOps
};
enum IntOp { kIAdd, kISub, kIMul, kIDiv, kIMod, kIMin, kIMax, kIAbs, kIBits, kICast, kNumIntOps };
enum BoolOp { kBLess, kBEqual, kBAnd, kBOr, kBSelect, kNumBoolOps };
enum LoadKind { kLoadStage, kLoadInput, kLoadParameter, kLoadSelf, kNumLoadKinds };

struct OpCounts {
  std::array<double, kNumFloatOps> f{};
  std::array<double, kNumIntOps> i{};
  std::array<double, kNumBoolOps> b{};
  std::array<double, kNumLoadKinds> loads{};
  double FloatTotal() const;
  double IntTotal() const;
  double BoolTotal() const;
  double LoadTotal() const;
  OpCounts& operator+=(const OpCounts& o);
};

const char* FloatOpName(int op);
const char* IntOpName(int op);
const char* BoolOpName(int op);
const char* LoadKindName(int kind);

// One loop dimension of a definition.
struct DimInfo {
  std::string name;
  int64_t extent = 0;
  bool reduction = false;
};

struct StageModel {
  std::string name;
  int value = -1;  // value id of its output
  OpKind op = OP_KIND_UNSPECIFIED;
  int bytes = 4;
  int lanes = 8;
  bool has_update = false;
  bool is_output = false;
  bool inline_legal = false;
  int rank = 0;
  std::array<int64_t, kMaxRank> shape{};  // Halide order (0 innermost)
  // defs[0]: pure dims; defs[1]: pure dims then reduction dims (stages with an update).
  std::vector<DimInfo> defs[2];
  int num_reduction = 0;
  int64_t reduction_points = 1;  // product of the reduction extents
  std::vector<InputAccess> inputs;
  OpCounts ops[2];  // per iteration of the pure definition and of the update
  std::vector<int> consumers;
  int depth = 0;  // longest path from a pipeline input, in stages
};

// The schedule-free model of a whole pipeline.
struct PipelineModel {
  std::vector<StageModel> stages;
  int num_values = 0;
  std::vector<int> value_bytes;  // per value id
  std::vector<int> value_ranks;  // per value id
  // Some stage reads through a modulo or a reflection, whose bounds Halide evaluates
  // exactly only on symbols (see Interval).
  bool exact_on_symbols = false;
};

PipelineModel BuildPipelineModel(const PipelineGraph& graph, int vector_bytes);

// Floor division (b > 0 or b < 0), as Halide's integer division.
inline int64_t FloorDivide(int64_t a, int64_t b) {
  int64_t q = a / b;
  if ((a % b != 0) && ((a < 0) != (b < 0))) --q;
  return q;
}

// [lo, hi] modulo `mod` as Halide bounds it: the value of a symbol, else the whole period.
inline void ModuloInterval(int64_t mod, bool symbol, int64_t* lo, int64_t* hi) {
  if (symbol) {
    *lo = *hi = ((*lo % mod) + mod) % mod;
  } else {
    *lo = 0;
    *hi = mod - 1;
  }
}

// Interval of coordinate `m` given intervals of the pure and reduction variables
// (`pure` and `red`, LoopNestOf order) and, for kGather, the access's strides.
inline Interval MapInterval(const CoordMap& m, const InputAccess& access, const Interval* pure,
                            const Interval* red) {
  int64_t lo = 0, hi = 0;
  bool point = true, symbol = true;
  switch (m.kind) {
    case CoordMap::kAffine: {
      if (m.var >= 0) {
        const Interval& v = pure[m.var];
        lo = m.a >= 0 ? m.a * v.lo : m.a * v.hi;
        hi = m.a >= 0 ? m.a * v.hi : m.a * v.lo;
        point = v.point;
        symbol = v.symbol;
      }
      lo += m.b;
      hi += m.b;
      if (m.div != 1) {
        lo = FloorDivide(lo, m.div);
        hi = FloorDivide(hi, m.div);
      }
      lo *= m.scale;
      hi *= m.scale;
      if (m.rvar >= 0) {
        const Interval& r = red[m.rvar];
        lo += m.r_coef * r.lo;
        hi += m.r_coef * r.hi;
        point = point && r.point;
        symbol = symbol && r.symbol;
      }
      lo += m.c;
      hi += m.c;
      if (m.mod > 0) ModuloInterval(m.mod, symbol, &lo, &hi);  // CONCAT's inputs
      break;
    }
    case CoordMap::kReflect: {
      // last - |last - |c||, c = clamp(var - b, -last, 2 last), |x| as max(x, -x)
      // (pipeline/halide/lowering.cc). Halide bounds max(x, -x) over [lo, hi] as
      // [max(lo, -hi), max(hi, -lo)]: exact for a range on one side of 0, loose below
      // for one that spans it; the final clamp (m.clamp) keeps it within the input.
      const Interval& v = pure[m.var];
      const int64_t last = m.clamp_hi;
      point = v.point;
      symbol = v.symbol;
      const int64_t c_lo = std::clamp(v.lo - m.b, -last, 2 * last);
      const int64_t c_hi = std::clamp(v.hi - m.b, -last, 2 * last);
      const int64_t inner_lo = std::max(c_lo, -c_hi), inner_hi = std::max(c_hi, -c_lo);
      const int64_t r_lo = last - inner_hi, r_hi = last - inner_lo;
      lo = last - std::max(r_hi, -r_lo);
      hi = last - std::max(r_lo, -r_hi);
      break;
    }
    case CoordMap::kGather: {
      for (int i = 0; i < kMaxRank; ++i) {
        if (access.gather_stride[i] == 0) continue;
        lo += access.gather_stride[i] * pure[i].lo;
        hi += access.gather_stride[i] * pure[i].hi;
        point = point && pure[i].point;
        symbol = symbol && pure[i].symbol;
      }
      if (m.div > 1) {
        lo = FloorDivide(lo, m.div);
        hi = FloorDivide(hi, m.div);
      }
      if (m.mod > 0) ModuloInterval(m.mod, symbol, &lo, &hi);
      break;
    }
  }
  if (m.clamp) {
    lo = std::max(m.clamp_lo, std::min(lo, m.clamp_hi));
    hi = std::max(m.clamp_lo, std::min(hi, m.clamp_hi));
  }
  return {lo, hi, point, symbol};
}

}  // namespace features_internal
}  // namespace schedfarm
