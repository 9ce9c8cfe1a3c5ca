#include "scheduler/templates.h"

#include <algorithm>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "pipeline/spec.h"
#include "scheduler/layouts.h"

namespace schedfarm {
namespace {

// How the tile is cut: the dim vectorized by `vector` lanes (split), the dim unrolled
// by `tile` (split), each -1 / 0 when not; `unroll_vectors`: the vectorized dim's outer
// level unrolled too, just outside the vector; `vector_blocks_outermost`: the vectorized
// dim's outer level outermost of the tile's outer levels (a matmul's blocks of n, each
// reading its panel of b across every row while it stays in cache).
struct TileShape {
  int vector_dim = -1;
  int64_t vector = 0;
  int tile_dim = -1;
  int64_t tile = 0;
  bool unroll_vectors = false;
  bool vector_blocks_outermost = false;
  // The outermost reduction dim (a convolution's input channels) split by it, its outer
  // level outermost, 0 when not split: the anchor is then computed in a block of the
  // host's vectorized dim, over every tile of it (ShapeOf).
  int64_t reduction_block = 0;
};

// The largest factor of `allowed` up to `limit` and below `extent`, preferring
// one that divides it; 0 when none.
int64_t Factor(int64_t extent, int64_t limit, const std::vector<int64_t>& allowed) {
  int64_t best = 0;
  for (int64_t f : allowed) {
    if (f > limit || f >= extent) continue;
    if (best == 0 || (extent % f == 0 && extent % best != 0) ||
        (f > best && (extent % f == 0) == (extent % best == 0))) {
      best = f;
    }
  }
  return best;
}

// Whether stage `s` is a depthwise convolution: one input channel per output channel.
bool IsDepthwise(const PipelineGraph& graph, int s) {
  const Stage& stage = graph.stage(s);
  return stage.op() == CONV && stage.attrs().groups() > 1 && graph.input_shapes(s)[1][1] == 1;
}

// The most bytes of a panel of weights (a matmul's b, a convolution's filters: the whole
// reduction by one vector block of outputs) that stay in the L2 cache while every tile
// reads them: half of the 1 MiB of the hosts the farm has run on (the host's caches are
// not yet part of TargetParams).
constexpr double kPanelBytes = 512 * 1024;

// `input_channels_last`: the anchor's input (a stage the schedule stores, in a chained
// template) stores its channels innermost; else only a pipeline input of a channels-last
// pipeline does.
TileShape ShapeOf(const ScheduleSpace& space, int anchor, bool input_channels_last = false) {
  const PipelineGraph& graph = space.graph();
  const Stage& stage = graph.stage(anchor);
  const std::vector<LoopDim> pure = graph.loops(anchor).pure;
  const int rank = static_cast<int>(pure.size());
  const int lanes = space.lanes(anchor);
  TileShape shape;
  // A depthwise convolution or a pool reads one input channel per output channel:
  // across channels only where its input stores them innermost (an input of a
  // channels-last pipeline).
  const bool per_channel = stage.op() == POOL || IsDepthwise(graph, anchor);
  const Value& input = graph.value(graph.stage_inputs(anchor)[0]);
  const bool channels_across =
      !per_channel || input_channels_last ||
      (input.kind == Value::Kind::kInput && BoundaryChannelsLast(graph.spec(), input.shape.size()));
  if ((stage.op() == CONV || stage.op() == POOL) && rank >= 3) {
    // Output channels (row-major axis 1), or the columns of a depthwise convolution or
    // pool whose input stores its channels apart, unless a pool's columns are fewer
    // than a vector (a pool of a small map).
    const bool across = channels_across || (stage.op() == POOL && pure[0].extent < lanes);
    shape.vector_dim = across ? rank - 2 : 0;
    shape.tile_dim = across ? 0 : 1;
  } else {
    // MATMUL: n vectorized, the register tile across rows, or across the batch where a
    // batch of one row each reads the same weights (ViT's projections of [197, 1, 768]).
    shape.vector_dim = 0;
    shape.tile_dim = rank >= 2 ? 1 : -1;
    if (rank >= 3 && pure[1].extent == 1) shape.tile_dim = 2;
  }
  std::vector<int64_t> vector_widths;
  for (int v : {4, 2, 1}) vector_widths.push_back(int64_t{v} * lanes);
  const int64_t vector_extent = pure[shape.vector_dim].extent;
  shape.vector = Factor(vector_extent, 4 * lanes, vector_widths);
  // Output channels of two vectors (DenseNet's 32) from many input channels are
  // vectorized whole: one vector by 8 columns left the units half busy (48% of peak at
  // 56x56). A first layer's 3 input channels keep one, and so does a map of one row
  // (a squeeze-and-excitation's 1x1), whose tile would leave its host no loop outside.
  if (stage.op() == CONV && !per_channel && vector_extent == 2 * lanes &&
      graph.input_shapes(anchor)[1][1] >= lanes && rank >= 3 && pure[1].extent > 1) {
    shape.vector = vector_extent;
  }
  // A dim of one vector or less (16 channels in 16 lanes) is vectorized whole: split by
  // its extent, so that a stage computed in a tile vectorizes a loop of constant extent.
  if (shape.vector == 0 && vector_extent <= lanes && vector_extent % 4 == 0) {
    shape.vector = vector_extent;
  }
  // A depthwise convolution or pool across channels that no whole number of vectors
  // divides (72 channels in 16 lanes: a tile of 64 left a tail of 8 done one channel at a
  // time) takes half vectors where they divide: memory-bound, it loses little by them.
  if (per_channel && channels_across && shape.vector_dim == rank - 2 && shape.vector > 0 &&
      vector_extent % shape.vector != 0 && vector_extent % (lanes / 2) == 0) {
    shape.vector = lanes / 2;
  }
  if (shape.vector == 0) shape.vector_dim = -1;
  if (shape.tile_dim < 0) return shape;
  const int registers = space.target().vector_registers();
  auto rows_limit = [&](int64_t vectors) {
    int64_t limit = 1;
    while (limit < 16 && RegisterTileFits(vectors, limit + 1, registers)) ++limit;
    return limit;
  };
  const int64_t vectors = shape.vector > 0 ? shape.vector / lanes : 1;
  shape.tile = Factor(pure[shape.tile_dim].extent, rows_limit(vectors),
                      std::vector<int64_t>(std::begin(kSplitFactors), std::end(kSplitFactors)));
  if (stage.op() == MATMUL) {
    // A matmul's rows: as many as the registers hold (4 vectors by 6 rows), a count that
    // divides the rows preferred (ViT's 197 rows: 4 of the split factors, 57% of peak; 6).
    std::vector<int64_t> counts;
    for (int64_t r = 2; r <= rows_limit(vectors); ++r) counts.push_back(r);
    shape.tile = Factor(pure[shape.tile_dim].extent, rows_limit(vectors), counts);
    // Its blocks of n outermost where a block's panel of b fits in half of the L2 cache of
    // the hosts the farm has run on (1 MiB), each then read from it across every row:
    // ViT's MLP with 768 inputs went from 50% to 57% of peak; its second layer's panel of
    // 3,072 inputs does not fit and kept its rows outermost (74%; 51% with its blocks).
    const std::vector<LoopDim>& reduction = graph.loops(anchor).reduction;
    const double panel_bytes = reduction.empty() ? 0.0 : 4.0 * reduction[0].extent * shape.vector;
    shape.vector_blocks_outermost = panel_bytes <= kPanelBytes;
  }
  if (shape.tile == 0) shape.tile_dim = -1;
  // A convolution tiled across output channels and columns: 4 to 8 columns that divide
  // the width, so that no tile overlaps the last (more spill in LLVM's code although
  // rule 8 lets them fit); with 2 vectors and 4 to 8 columns when 4 vectors have no
  // such count and at least two such tiles fill a row (ResNet-18's 3x3 layers at 14
  // columns: 2 vectors x 7; at 7, where neither divides, 4 x 4 with the last tile
  // overlapping the one before).
  if (stage.op() == CONV && channels_across && shape.vector_dim >= 0 && shape.tile_dim == 0) {
    const int64_t width = pure[0].extent, channels = pure[shape.vector_dim].extent;
    auto dividing = [&](int64_t low, int64_t high) {
      for (int64_t c = std::min(high, width - 1); c >= low; --c) {
        if (width % c == 0) return c;
      }
      return int64_t{0};
    };
    if (const int64_t c = dividing(4, std::min<int64_t>(8, rows_limit(vectors))); c > 0) {
      shape.tile = c;
    } else if (channels % (2 * lanes) == 0) {
      const int64_t c2 = dividing(4, std::min<int64_t>(8, rows_limit(2)));
      if (c2 > 0 && width / c2 >= 2) {
        shape.vector = 2 * lanes;
        shape.tile = c2;
      }
    }
    // A panel of weights (a block of output channels by the whole reduction) larger than
    // kPanelBytes is read from L3 again for every tile: ResNet's 3x3 layers at 7x7 (512
    // channels, 1.2 MiB a panel) at 45% of peak. Its input channels are then cut into
    // blocks of a quarter of that (a panel of 72 KiB there; 64 channels, 147 KiB, ran as
    // fast, 128 slower), each read from L2 across every tile of a block of output
    // channels, the accumulators of the block (12 KiB) in L1 between them: 54%, and the
    // 3x3 layers of ResNet-50 at 14x14 53% -> 61-67% (the same run).
    const std::vector<LoopDim> reduction = graph.loops(anchor).reduction;
    double window = 1;  // weights per output channel
    for (const LoopDim& r : reduction) window *= static_cast<double>(r.extent);
    const int64_t blocks = (channels + shape.vector - 1) / shape.vector;
    const int cores = space.target().cores;
    if (!reduction.empty() && 4 * window * shape.vector > kPanelBytes &&
        (blocks % cores == 0 || blocks >= 4 * cores)) {
      const int64_t input_channels = reduction.back().extent;
      for (int64_t block : {256, 128, 64, 32}) {
        if (block < input_channels && input_channels % block == 0 &&
            4 * window / input_channels * block * shape.vector <= kPanelBytes / 4) {
          shape.reduction_block = block;
          break;
        }
      }
    }
  }
  return shape;
}

// Whether `stage` is an output of the pipeline (stored in its boundary layout).
bool IsOutput(const PipelineGraph& graph, int stage) {
  const std::vector<int>& outputs = graph.output_stages();
  return std::find(outputs.begin(), outputs.end(), stage) != outputs.end();
}

// The dim a stage stores innermost, as an index into its pure loops (innermost first):
// the channels of a 4-D output of a channels-last pipeline, else its last dim.
int StorageInnermost(const PipelineGraph& graph, int stage) {
  const int rank = static_cast<int>(graph.loops(stage).pure.size());
  return IsOutput(graph, stage) && BoundaryChannelsLast(graph.spec(), rank) ? rank - 2 : 0;
}

// Whether a stage without a register tile has the work to pay for a parallel loop:
// 256K points (its elements times its reduction's), 128K per core of two. A launch of
// Halide's thread pool costs about 10 us on a shared host, more than a global pool of
// 960 channels at 7x7 takes on one core (2 us).
bool WorthParallel(const PipelineGraph& graph, int stage) {
  const StageLoops loops = graph.loops(stage);
  double points = 1;
  for (const LoopDim& d : loops.pure) points *= static_cast<double>(d.extent);
  for (const LoopDim& r : loops.reduction) points *= static_cast<double>(r.extent);
  return points >= 256 * 1024;
}

// The most vectors a concatenation's unrolled loop holds (Inception's last, 2,048
// channels in 16 lanes: 128).
constexpr int64_t kMaxUnrolledVectors = 128;

// The concatenation `stage` reads along with its values: itself if it is one, else one
// of its shape it reads through elementwise stages of its shape (DenseNet's batch norm
// and ReLU after each concatenation, inlined); -1 when none.
int ConcatRead(const PipelineGraph& graph, int stage) {
  const auto shape = graph.stage(stage).shape();
  std::vector<int> pending = {stage};
  std::set<int> seen;
  while (!pending.empty()) {
    const int s = pending.back();
    pending.pop_back();
    const Stage& op = graph.stage(s);
    if (!seen.insert(s).second ||
        !std::equal(op.shape().begin(), op.shape().end(), shape.begin(), shape.end())) {
      continue;
    }
    if (op.op() == CONCAT) return s;
    if (op.op() != UNARY && op.op() != BINARY) continue;
    for (int v : graph.stage_inputs(s)) {
      if (graph.value(v).kind == Value::Kind::kStage) pending.push_back(graph.value(v).index);
    }
  }
  return -1;
}

// The tile of a stage without a register tile (a reduction other than a pool, or an
// elementwise stage at root): one vector of the dim it stores innermost, else of its
// innermost dim of at least 4 elements, vectorized; nothing unrolled but a
// concatenation's vectors along its axis. A reduction of a
// channels-last input takes its channels (a global pool). No vector when no dim has 4
// elements.
TileShape VectorShape(const ScheduleSpace& space, int stage) {
  const PipelineGraph& graph = space.graph();
  const std::vector<LoopDim> pure = graph.loops(stage).pure;
  const int rank = static_cast<int>(pure.size());
  std::vector<int> candidates = {StorageInnermost(graph, stage)};
  if (graph.stage(stage).op() == REDUCE) {
    const Value& input = graph.value(graph.stage_inputs(stage)[0]);
    const bool input_channels_last =
        input.kind == Value::Kind::kInput && BoundaryChannelsLast(graph.spec(), input.shape.size());
    if (input_channels_last && rank == 4) candidates.insert(candidates.begin(), rank - 2);
  }
  for (int d = 0; d < rank; ++d) candidates.push_back(d);
  TileShape shape;
  const int lanes = space.lanes(stage);
  for (int d : candidates) {
    const int64_t extent = pure[d].extent;
    if (extent < 4) continue;
    shape.vector_dim = d;
    shape.vector = extent > lanes ? lanes : extent % 4 == 0 ? extent : 0;
    if (shape.vector == 0) continue;
    // A concatenation along the vectorized dim, or a stage it is inlined into, unrolls its
    // vectors: each then reads one input at a constant offset, where a loop of them loads
    // every input for each vector and selects one (DenseNet's concatenations of 6 to 32
    // inputs).
    const int concat = ConcatRead(graph, stage);
    const int64_t blocks = (extent + shape.vector - 1) / shape.vector;
    shape.unroll_vectors = concat >= 0 && d == rank - 1 - graph.stage(concat).attrs().axis() &&
                           blocks > 1 && blocks <= kMaxUnrolledVectors;
    return shape;
  }
  return TileShape();
}

// The full definition of `stage` (pure, or its update) cut into the tile: splits, the
// loop order (the vectorized level, the other dims' inner levels, the reduction dims, in
// an update the dims not split, then the outer levels), vectorize and unroll, and up to
// `parallel_loops` of the outermost loops parallel (0: none). Returns the order,
// innermost first, with each loop's extent.
std::vector<std::pair<LoopRef, int64_t>> CutTile(const ScheduleSpace& space, int stage, bool update,
                                                 const TileShape& shape, int parallel_loops,
                                                 DefinitionSchedule* out) {
  const PipelineGraph& graph = space.graph();
  const std::string& name = graph.stage(stage).name();
  const StageLoops loops = graph.loops(stage);
  const int rank = static_cast<int>(loops.pure.size());
  auto factor = [&](int d) {
    return d == shape.vector_dim ? shape.vector : d == shape.tile_dim ? shape.tile : 0;
  };
  for (int d = 0; d < rank; ++d) {
    if (factor(d) == 0) continue;
    DimSplit* split = out->add_splits();
    split->set_dim(loops.pure[d].name);
    split->add_factors(factor(d));
  }
  const bool blocked = update && shape.reduction_block > 0;
  if (blocked) {
    DimSplit* split = out->add_splits();
    split->set_dim(loops.reduction.back().name);
    split->add_factors(shape.reduction_block);
  }
  std::vector<std::pair<LoopRef, int64_t>> order;
  auto inner = [&](int d) {
    const int64_t f = factor(d);
    order.push_back(
        {MakeLoopRef(name, loops.pure[d].name, f ? 1 : 0, update), f ? f : loops.pure[d].extent});
  };
  auto outer = [&](int d) {
    const int64_t f = factor(d);
    order.push_back(
        {MakeLoopRef(name, loops.pure[d].name, 0, update), (loops.pure[d].extent + f - 1) / f});
  };
  if (shape.vector_dim >= 0) inner(shape.vector_dim);
  if (shape.unroll_vectors) outer(shape.vector_dim);
  // In an update, the reduction just outside the tile's split levels, the dims not split
  // outside it: inside it they would hold the accumulators in memory across the
  // reduction (a convolution at root over its rows ran at 5% of peak).
  for (int d = 0; d < rank; ++d) {
    if (d != shape.vector_dim && (!update || factor(d))) inner(d);
  }
  if (update) {
    for (const LoopDim& r : loops.reduction) {
      const bool split = blocked && &r == &loops.reduction.back();
      order.push_back({MakeLoopRef(name, r.name, split ? 1 : 0, true),
                       split ? shape.reduction_block : r.extent});
    }
    for (int d = 0; d < rank; ++d) {
      if (d != shape.vector_dim && !factor(d)) inner(d);
    }
  }
  for (int d = 0; d < rank; ++d) {
    if (factor(d) && !(shape.unroll_vectors && d == shape.vector_dim) &&
        !(shape.vector_blocks_outermost && d == shape.vector_dim)) {
      outer(d);
    }
  }
  if (shape.vector_blocks_outermost && shape.vector_dim >= 0) outer(shape.vector_dim);
  if (blocked) {
    const LoopDim& r = loops.reduction.back();
    order.push_back({MakeLoopRef(name, r.name, 0, true), r.extent / shape.reduction_block});
  }
  for (const auto& [ref, extent] : order) *out->add_loop_order() = ref;
  if (shape.vector_dim >= 0) {
    *out->mutable_vectorize() = order[0].first;
    out->set_vector_width(shape.vector);
  }
  if (shape.tile_dim >= 0)
    *out->add_unroll() = MakeLoopRef(name, loops.pure[shape.tile_dim].name, 1, update);
  if (shape.unroll_vectors) *out->add_unroll() = order[1].first;
  if (parallel_loops > 0) {
    // The outermost loop, and the next one too (where two are allowed) when the
    // outermost alone is too short to keep the cores busy in even shares.
    std::vector<LoopRef> outer;
    const auto unrolled = order.rend() - (shape.unroll_vectors ? 2 : 0);
    for (auto it = order.rbegin();
         it != unrolled && static_cast<int>(outer.size()) < parallel_loops; ++it) {
      if (it->second <= 1) continue;
      if (it->first.dim()[0] == 'r' || (it->first.level() == 1)) break;
      outer.push_back(it->first);
      if (it->second >= 4 * space.target().cores) break;
    }
    for (auto it = outer.rbegin(); it != outer.rend(); ++it) *out->add_parallel() = *it;
  }
  return order;
}

// The stages computed with the anchor's tile, the anchor first and the host last: the
// elementwise stages of the anchor's shape that read it, directly or through each other
// (ConvNeXt's GELU reads its convolution twice), up to the host, the first of them that is
// an output or is read by another stage; the others are read by each other only. A host
// that is not an output is stored at root for its readers (a reshape after ViT's
// projections, the squeeze-and-excitation pool of MobileNetV3's hard-swish), where the
// anchor would accumulate in its own buffer, in memory. The anchor alone when there is no
// such host (no elementwise reader, or a stage the host's tile does not compute reads one
// of the others).
std::vector<int> Epilogue(const PipelineGraph& graph, int anchor) {
  const auto anchor_shape = graph.stage(anchor).shape();
  std::vector<int> members = {anchor};
  std::set<int> extends = {anchor};  // members a stage may join through: not outputs
  for (int s : graph.topological_order()) {
    const Stage& stage = graph.stage(s);
    if (s == anchor || (stage.op() != UNARY && stage.op() != BINARY) ||
        !std::equal(stage.shape().begin(), stage.shape().end(), anchor_shape.begin(),
                    anchor_shape.end())) {
      continue;
    }
    const std::vector<int>& inputs = graph.stage_inputs(s);
    if (std::none_of(inputs.begin(), inputs.end(), [&](int v) {
          return graph.value(v).kind == Value::Kind::kStage && extends.count(graph.value(v).index);
        })) {
      continue;
    }
    members.push_back(s);
    if (!IsOutput(graph, s)) extends.insert(s);
  }
  auto read_within = [&](int stage, const std::set<int>& set) {
    const std::vector<int>& readers = graph.consumers(stage);
    return std::all_of(readers.begin(), readers.end(), [&](int r) { return set.count(r) > 0; });
  };
  const std::set<int> all(members.begin(), members.end());
  if (members.size() == 1 || IsOutput(graph, anchor) || !read_within(anchor, all)) return {anchor};
  size_t host = 1;
  while (host + 1 < members.size() && !IsOutput(graph, members[host]) &&
         read_within(members[host], all)) {
    ++host;
  }
  members.resize(host + 1);
  const std::set<int> kept(members.begin(), members.end());
  for (size_t m = 0; m < host; ++m) {
    if (!read_within(members[m], kept)) return {anchor};
  }
  return members;
}

// The stages computed with an anchor whose values go into a concatenation along the
// channels, the anchor first and the host last: the elementwise stages of its shape between
// them (Inception's ReLU), the concatenation, and its own epilogue (DenseNet's next batch
// norm and ReLU), whose host is the host. At root the anchor would accumulate in its own
// buffer, in memory (a branch of Inception at 8% of peak); in a row of the host it
// accumulates in registers, and its values are stored once, in the concatenation. The
// anchor alone when it has no such host.
std::vector<int> ConcatEpilogue(const PipelineGraph& graph, int anchor) {
  std::vector<int> members = {anchor};
  int s = anchor;
  for (;;) {
    const std::vector<int>& readers = graph.consumers(s);
    if (readers.size() != 1 || IsOutput(graph, s)) return {anchor};
    const Stage& reader = graph.stage(readers[0]);
    const bool same_shape =
        std::equal(reader.shape().begin(), reader.shape().end(),
                   graph.stage(anchor).shape().begin(), graph.stage(anchor).shape().end());
    members.push_back(readers[0]);
    if (reader.op() == CONCAT) break;
    if ((reader.op() != UNARY && reader.op() != BINARY) || !same_shape) return {anchor};
    s = readers[0];
  }
  const int concat = members.back();
  if (graph.stage(concat).shape_size() != 4 || graph.stage(concat).attrs().axis() != 1) {
    return {anchor};
  }
  const std::vector<int> after = Epilogue(graph, concat);
  members.insert(members.end(), after.begin() + 1, after.end());
  return members;
}

// The index into `host_order` (CutTile's) of the loop an anchor with tile `shape` is
// computed at: the host's loop just outside the tile (its split inner levels), so that
// its region is one tile; with its input channels in blocks, the host's blocks of output
// channels (its region every tile of one); with `rows` named, the host's loop of that
// dim. Loops of extent 1 are passed over; -1 when no loop is left.
int AnchorLoop(const ScheduleSpace& space, int host, const TileShape& shape,
               const std::vector<std::pair<LoopRef, int64_t>>& host_order,
               const std::string& rows) {
  const std::string blocks =
      shape.reduction_block > 0 ? space.graph().loops(host).pure[shape.vector_dim].name : "";
  size_t q = 0;
  for (size_t i = 0; i < host_order.size(); ++i) {
    const LoopRef& loop = host_order[i].first;
    if (!rows.empty()               ? loop.dim() == rows
        : shape.reduction_block > 0 ? loop.dim() == blocks && loop.level() == 0
                                    : loop.level() == 1) {
      q = i + (rows.empty() && shape.reduction_block == 0);
    }
  }
  while (q < host_order.size() && host_order[q].second <= 1) ++q;
  return q < host_order.size() ? static_cast<int>(q) : -1;
}

// The template with the anchor's tile `shape` (-1: no anchor), computed in its host's
// tile where `hosted` and it has one, else at root.
StatusOr<ScheduleSpec> TemplateWithTile(const ScheduleSpace& space, int anchor,
                                        const TileShape& shape, bool hosted = true);

}  // namespace

StatusOr<ScheduleSpec> TemplateSchedule(const ScheduleSpace& space) {
  const PipelineGraph& graph = space.graph();
  // The convolution or matmul of the most flops, else the pool of the most, else the
  // reduction of the most; -1 for a pipeline of elementwise stages and data movement.
  int anchor = -1;
  double anchor_flops = -1;
  for (const OpKind kind : {CONV, POOL, REDUCE}) {
    for (int s = 0; s < graph.num_stages(); ++s) {
      const OpKind op = graph.stage(s).op();
      const bool of_kind = kind == CONV ? (op == CONV || op == MATMUL) : op == kind;
      if (of_kind && graph.cost(s).flops > anchor_flops) {
        anchor = s;
        anchor_flops = graph.cost(s).flops;
      }
    }
    if (anchor >= 0) break;
  }
  const bool register_tile = anchor >= 0 && graph.stage(anchor).op() != REDUCE;
  TileShape shape = anchor < 0      ? TileShape()
                    : register_tile ? ShapeOf(space, anchor)
                                    : VectorShape(space, anchor);
  StatusOr<ScheduleSpec> spec = TemplateWithTile(space, anchor, shape);
  if (!spec.ok() && shape.tile_dim >= 0) {
    // A register tile Halide 14 cannot unroll here (rule 7 of docs/SCHEDULES.md: strided
    // loads with guarded tails, as ViT-B/16's projection of 197 rows read through a transpose)
    // gives way to the vectors alone.
    shape.tile_dim = -1;
    shape.tile = 0;
    if (StatusOr<ScheduleSpec> vectors = TemplateWithTile(space, anchor, shape); vectors.ok()) {
      return vectors;
    }
  }
  if (!spec.ok() && anchor >= 0) {
    // A host with no loop outside the anchor's tile (ConvNeXt's last layer norm, of one
    // pixel, whose statistics a reshape reads) leaves the anchor at root.
    if (StatusOr<ScheduleSpec> root = TemplateWithTile(space, anchor, shape, false); root.ok()) {
      return root;
    }
  }
  return spec;
}

namespace {

StatusOr<ScheduleSpec> TemplateWithTile(const ScheduleSpace& space, int anchor,
                                        const TileShape& shape, bool hosted) {
  const PipelineGraph& graph = space.graph();
  const bool register_tile = anchor >= 0 && graph.stage(anchor).op() != REDUCE;
  // The host's tile: the anchor's, or for a host concatenating the anchor with other
  // values, one vector of channels with every channel vector unrolled (VectorShape); the
  // anchor is then computed in each of its rows.
  std::vector<int> chain;
  TileShape host_shape = shape;
  bool concat_host = false;
  if (register_tile && hosted) {
    chain = ConcatEpilogue(graph, anchor);
    if (chain.size() > 1) host_shape = VectorShape(space, chain.back());
    concat_host = chain.size() > 1 && host_shape.unroll_vectors;
  }
  if (!concat_host) {
    chain = anchor < 0 ? std::vector<int>()
            : hosted   ? Epilogue(graph, anchor)
                       : std::vector<int>{anchor};
    host_shape = shape;
  }
  const int host = anchor >= 0 ? chain.back() : -1;
  const std::string anchor_name = anchor >= 0 ? graph.stage(anchor).name() : "";

  ScheduleSpec spec = space.Empty();
  std::vector<std::pair<LoopRef, int64_t>> host_order;
  int vectorized = 0;  // stages with a vector loop
  for (int s : space.decision_order()) {
    StageSchedule* d = spec.add_stages();
    d->set_stage(graph.stage(s).name());
    if (s == host && host != anchor) {
      d->set_compute(ROOT);
      host_order = CutTile(space, s, false, host_shape, /*parallel_loops=*/2, d->mutable_pure());
      // A host that is not an output stores its vectorized dim innermost, for its readers.
      const std::vector<LoopDim> pure = graph.loops(s).pure;
      if (host_shape.vector_dim > 0 && !IsOutput(graph, s) &&
          pure[host_shape.vector_dim].extent % space.lanes(s) == 0) {
        d->set_storage_innermost(pure[host_shape.vector_dim].name);
      }
    } else if (std::find(chain.begin(), chain.end(), s) != chain.end() && s != anchor) {
      d->set_compute(INLINE);
    } else if (s == anchor) {
      d->set_pack_weights(PackableWeights(graph, s).ok());
      // A depthwise convolution reads its padded input once, as the copy would: the copy
      // doubled its traffic (MobileNetV2's and V3's depthwise layers, 0.88 -> 1.74 of the
      // fastest contender without it).
      d->set_padded_copy(PaddedCopyAllowed(graph, s).ok() && !IsDepthwise(graph, s));
      const bool root = host == anchor;
      const std::vector<LoopDim> pure = graph.loops(s).pure;
      if (root) {
        d->set_compute(ROOT);
        // Stored with its vectorized dim innermost where it is not an output (whose layout
        // is the pipeline's): stored otherwise, a tile across channels is stored and
        // reloaded with gathers over the reduction (Inception's and DenseNet's
        // convolutions into their concatenations at 2% of peak).
        if (shape.vector_dim > 0 && !IsOutput(graph, s) &&
            pure[shape.vector_dim].extent % space.lanes(s) == 0) {
          d->set_storage_innermost(pure[shape.vector_dim].name);
        }
        // The pure definition (the bias) in parallel along its outermost dim.
        for (int dim = static_cast<int>(pure.size()) - 1;
             dim >= 0 && (register_tile || WorthParallel(graph, s)); --dim) {
          if (pure[dim].extent > 1) {
            *d->mutable_pure()->add_parallel() = MakeLoopRef(anchor_name, pure[dim].name, 0, false);
            break;
          }
        }
      } else {
        // In a concatenation, at its rows: its region is a row.
        d->set_compute(AT);
        const std::string rows = concat_host ? graph.loops(host).pure[1].name : "";
        const int q = AnchorLoop(space, host, shape, host_order, rows);
        if (q < 0) {
          return Status::Error("pipeline '" + graph.spec().name() + "': no template: stage '" +
                               graph.stage(host).name() + "' has no loop outside its tile");
        }
        *d->mutable_compute_at() = host_order[q].first;
        if (shape.vector_dim > 0) {
          d->set_storage_innermost(pure[shape.vector_dim].name);
        }
      }
      // At root, one parallel loop: two nested ones over an update at root (Halide
      // runs them as nested par_fors) made Inception's branch convolution into its
      // concatenation 20 times slower at 2 threads than at 1 (97 ms against 4.6).
      CutTile(space, s, true, shape, root && (register_tile || WorthParallel(graph, s)) ? 1 : 0,
              d->mutable_update());
    } else if (space.InlineLegal(s)) {
      d->set_compute(INLINE);
    } else {
      // Any other stage at root (an output, a concatenation two tasks read): one vector
      // of what it stores innermost, in parallel, where the space allows it.
      d->set_compute(ROOT);
      const TileShape own = VectorShape(space, s);
      if (own.vector_dim >= 0 && graph.loops(s).reduction.empty()) {
        CutTile(space, s, false, own, WorthParallel(graph, s) ? 1 : 0, d->mutable_pure());
        if (space.Check(space.WithDefaults(spec)).ok()) {
          ++vectorized;
        } else {
          d->clear_pure();
        }
      }
    }
    if (s == anchor || s == host) vectorized += shape.vector_dim >= 0;
  }
  if (anchor < 0 && vectorized == 0) {
    return Status::Error("pipeline '" + graph.spec().name() +
                         "': no template: no convolution, matmul, pool or reduction, and no "
                         "stage at root with a dim of 4 elements or more to vectorize");
  }
  spec.set_partial(false);
  const Status legal = space.Check(spec);
  if (!legal.ok()) {
    return legal.WithContext("pipeline '" + graph.spec().name() + "': the template");
  }
  return spec;
}

// The rows of the strips a chained template computes its producers in: the
// most that keep the producers' buffers of a strip (a halo of two rows each, as a 3x3
// window needs) within kPanelBytes, in at least two strips per core where the rows allow,
// choosing between those by the work recomputed in the halos times the cores left idle
// by the last round of strips; 0 when no count gives two strips.
int64_t StripRows(const ScheduleSpace& space, int host, const std::vector<int>& buffers) {
  const PipelineGraph& graph = space.graph();
  const std::vector<LoopDim> pure = graph.loops(host).pure;
  const int64_t rows = pure[1].extent;
  const int cores = space.target().cores;
  double bytes_per_row = 0, halo_bytes = 0;
  for (int b : buffers) {
    const std::vector<LoopDim> own = graph.loops(b).pure;
    double elements = 1;
    for (const LoopDim& d : own) elements *= static_cast<double>(d.extent);
    bytes_per_row += 4 * elements / static_cast<double>(rows);
    halo_bytes += 2 * 4 * elements / static_cast<double>(own.size() > 1 ? own[1].extent : 1);
  }
  int64_t best = 0;
  double best_cost = 0;
  for (int64_t r = 2; r < rows; ++r) {
    if (r * bytes_per_row + halo_bytes > kPanelBytes && best > 0) break;
    const int64_t strips = (rows + r - 1) / r;
    const double recompute = (static_cast<double>(r) + 2) / static_cast<double>(r);
    const double rounds = static_cast<double>((strips + cores - 1) / cores);
    const double idle = rounds * cores / static_cast<double>(strips);
    const double cost = recompute * idle * (strips < 2 * cores ? 1.25 : 1.0);
    if (best == 0 || cost <= best_cost) {
      best = r;
      best_cost = cost;
    }
  }
  return best;
}

// The host of anchor `a`'s epilogue (Epilogue), the anchor itself when it has none.
int EpilogueHost(const PipelineGraph& graph, int a) { return Epilogue(graph, a).back(); }

// The template of chained anchors (ChainedAnchors): the last one in its host's tiles as
// TemplateWithTile does, each other one tiled as in a task of its own and computed with
// its epilogue's host either at root (`in_strip[i]` false) or, with the host's rows cut
// into strips (StripRows) and the strips in parallel, at the host's strip loop, so that
// the values it passes on stay in the cache; its anchor then in its epilogue host's
// tiles where Halide 14 allows it (rule 4 of docs/SCHEDULES.md), else in the strip too.
StatusOr<ScheduleSpec> ChainTemplate(const ScheduleSpace& space, const std::vector<int>& anchors,
                                     const std::vector<bool>& in_strip) {
  const PipelineGraph& graph = space.graph();
  const std::string& pipeline = graph.spec().name();
  const int sink = anchors.back();
  // Each anchor's tile, across the channels where its input stores them innermost: a
  // producer's host is stored with its vectors innermost.
  std::vector<TileShape> shapes;
  for (size_t i = 0; i < anchors.size(); ++i) {
    const bool channels_last =
        i > 0 &&
        shapes.back().vector_dim == static_cast<int>(graph.loops(anchors[i - 1]).pure.size()) - 2;
    shapes.push_back(ShapeOf(space, anchors[i], channels_last));
    // A producer's channels that no whole number of vectors divides (MobileNetV3's 72,
    // 120, 184 or 200 in 16 lanes) take the most half vectors that divide them: at root or
    // in a strip, not an output, its tail would be guarded lane by lane (0.36x of the
    // layers apart for MobileNetV3's 72-channel expansion and depthwise convolution).
    TileShape& shape = shapes.back();
    const std::vector<LoopDim> pure = graph.loops(anchors[i]).pure;
    const int lanes = space.lanes(anchors[i]);
    if (i + 1 < anchors.size() && shape.vector_dim >= 0 &&
        pure[shape.vector_dim].extent % shape.vector != 0 && lanes % 2 == 0) {
      const int64_t extent = pure[shape.vector_dim].extent;
      for (int64_t width = 4 * lanes; width >= lanes / 2; width -= lanes / 2) {
        if (extent % width == 0) {
          shape.vector = width;
          break;
        }
      }
    }
  }
  const TileShape& sink_shape = shapes.back();
  const std::vector<int> sink_chain = Epilogue(graph, sink);
  const int host = sink_chain.back();
  if (host == sink) {
    return Status::Error("pipeline '" + pipeline + "': no chained template: its last anchor '" +
                         graph.stage(sink).name() + "' has no elementwise stage to host it");
  }
  const bool strips = std::count(in_strip.begin(), in_strip.end(), true) > 0;
  std::map<int, StageSchedule> decided;
  auto decide = [&](int s) -> StageSchedule& {
    StageSchedule& d = decided[s];
    d.set_stage(graph.stage(s).name());
    return d;
  };
  StageSchedule& h = decide(host);
  h.set_compute(ROOT);
  std::vector<std::pair<LoopRef, int64_t>> host_order =
      CutTile(space, host, false, sink_shape, strips ? 0 : 2, h.mutable_pure());
  const std::vector<LoopDim> host_pure = graph.loops(host).pure;
  LoopRef strip_loop;
  if (strips) {
    if (host_pure.size() < 3 || sink_shape.vector_dim == 1 || sink_shape.tile_dim == 1) {
      return Status::Error("pipeline '" + pipeline + "': no chained template: stage '" +
                           graph.stage(host).name() + "' has no rows to cut into strips");
    }
    std::vector<int> buffers;
    for (size_t i = 0; i + 1 < anchors.size(); ++i) {
      if (in_strip[i]) buffers.push_back(EpilogueHost(graph, anchors[i]));
    }
    const int64_t rows = StripRows(space, host, buffers);
    if (rows == 0) {
      return Status::Error("pipeline '" + pipeline + "': no chained template: stage '" +
                           graph.stage(host).name() + "' has too few rows for two strips");
    }
    const std::string& y = host_pure[1].name;
    DimSplit* split = h.mutable_pure()->add_splits();
    split->set_dim(y);
    split->add_factors(rows);
    for (auto& [ref, extent] : host_order) {
      if (ref.dim() == y) {
        ref.set_level(1);
        extent = rows;
      }
    }
    strip_loop = MakeLoopRef(graph.stage(host).name(), y, 0, false);
    host_order.push_back({strip_loop, (host_pure[1].extent + rows - 1) / rows});
    h.mutable_pure()->clear_loop_order();
    for (const auto& [ref, extent] : host_order) *h.mutable_pure()->add_loop_order() = ref;
    *h.mutable_pure()->add_parallel() = strip_loop;
  }
  if (sink_shape.vector_dim > 0 && !IsOutput(graph, host)) {
    h.set_storage_innermost(host_pure[sink_shape.vector_dim].name);
  }
  // An anchor with its tile `shape` computed at loop q of `order`, the loops of `at`.
  auto in_tile = [&](int a, const TileShape& shape, int at,
                     const std::vector<std::pair<LoopRef, int64_t>>& order) -> Status {
    const int q = AnchorLoop(space, at, shape, order, "");
    if (q < 0) {
      return Status::Error("pipeline '" + pipeline + "': no chained template: stage '" +
                           graph.stage(at).name() + "' has no loop outside its tile");
    }
    StageSchedule& d = decide(a);
    d.set_compute(AT);
    *d.mutable_compute_at() = order[q].first;
    return Status::Ok();
  };
  auto anchor_layouts = [&](int a, const TileShape& shape, StageSchedule& d) {
    d.set_pack_weights(PackableWeights(graph, a).ok());
    d.set_padded_copy(PaddedCopyAllowed(graph, a).ok() && !IsDepthwise(graph, a));
    if (shape.vector_dim > 0) d.set_storage_innermost(graph.loops(a).pure[shape.vector_dim].name);
  };
  SCHEDFARM_RETURN_IF_ERROR(in_tile(sink, sink_shape, host, host_order));
  anchor_layouts(sink, sink_shape, decided[sink]);
  CutTile(space, sink, true, sink_shape, 0, decided[sink].mutable_update());

  std::vector<int> fallback;  // producers whose anchor may have to move into the strip
  for (size_t i = 0; i + 1 < anchors.size(); ++i) {
    const int a = anchors[i];
    const TileShape& shape = shapes[i];
    const int e = EpilogueHost(graph, a);
    if (e == a) {
      StageSchedule& d = decide(a);
      if (in_strip[i]) {
        d.set_compute(AT);
        *d.mutable_compute_at() = strip_loop;
      } else {
        d.set_compute(ROOT);
      }
      anchor_layouts(a, shape, d);
      CutTile(space, a, true, shape, in_strip[i] ? 0 : 1, d.mutable_update());
      continue;
    }
    StageSchedule& ed = decide(e);
    if (in_strip[i]) {
      ed.set_compute(AT);
      *ed.mutable_compute_at() = strip_loop;
    } else {
      ed.set_compute(ROOT);
    }
    const std::vector<std::pair<LoopRef, int64_t>> order =
        CutTile(space, e, false, shape, in_strip[i] ? 0 : 2, ed.mutable_pure());
    if (shape.vector_dim > 0) ed.set_storage_innermost(graph.loops(e).pure[shape.vector_dim].name);
    SCHEDFARM_RETURN_IF_ERROR(in_tile(a, shape, e, order));
    anchor_layouts(a, shape, decided[a]);
    CutTile(space, a, true, shape, 0, decided[a].mutable_update());
    if (in_strip[i]) fallback.push_back(a);
  }
  auto assemble = [&]() {
    ScheduleSpec spec = space.Empty();
    for (int s : space.decision_order()) {
      auto it = decided.find(s);
      if (it != decided.end()) {
        *spec.add_stages() = it->second;
        continue;
      }
      StageSchedule* d = spec.add_stages();
      d->set_stage(graph.stage(s).name());
      d->set_compute(space.InlineLegal(s) ? INLINE : ROOT);
    }
    spec.set_partial(false);
    return spec;
  };
  ScheduleSpec spec = assemble();
  Status legal = space.Check(spec);
  for (size_t k = 0; !legal.ok() && k < fallback.size(); ++k) {
    // A producer read through padding: its anchor in the strip, beside its host.
    StageSchedule& d = decided[fallback[k]];
    *d.mutable_compute_at() = strip_loop;
    spec = assemble();
    legal = space.Check(spec);
  }
  if (!legal.ok()) return legal.WithContext("pipeline '" + pipeline + "': the chained template");
  return spec;
}

}  // namespace

std::vector<int> ChainedAnchors(const PipelineGraph& graph) {
  std::vector<int> anchors;
  for (int s : graph.topological_order()) {
    const OpKind op = graph.stage(s).op();
    if (op == MATMUL || op == REDUCE) return {};
    if (op == CONV || op == POOL) anchors.push_back(s);
  }
  if (anchors.size() < 2) return {};
  for (size_t i = 0; i + 1 < anchors.size(); ++i) {
    const int e = EpilogueHost(graph, anchors[i]);
    if (IsOutput(graph, e)) return {};
    for (int r : graph.consumers(e)) {
      if (std::find(anchors.begin() + static_cast<long>(i) + 1, anchors.end(), r) ==
          anchors.end()) {
        return {};
      }
    }
  }
  return anchors;
}

std::vector<ScheduleSpec> TemplateSchedules(const ScheduleSpace& space) {
  std::vector<ScheduleSpec> templates;
  const std::vector<int> anchors = ChainedAnchors(space.graph());
  auto single = [&] {
    if (StatusOr<ScheduleSpec> spec = TemplateSchedule(space); spec.ok()) {
      templates.push_back(std::move(*spec));
    }
    return templates;
  };
  if (anchors.empty()) return single();
  const size_t producers = anchors.size() - 1;
  // Every producer in the strips; the first at root, the others in the strips; all at root.
  std::vector<std::vector<bool>> cuts = {std::vector<bool>(producers, true)};
  if (producers > 1) {
    std::vector<bool> first_at_root(producers, true);
    first_at_root[0] = false;
    cuts.push_back(first_at_root);
  }
  cuts.push_back(std::vector<bool>(producers, false));
  std::set<std::string> seen;
  for (const std::vector<bool>& cut : cuts) {
    StatusOr<ScheduleSpec> spec = ChainTemplate(space, anchors, cut);
    if (spec.ok() && seen.insert(ScheduleHash(space, *spec)).second) {
      templates.push_back(std::move(*spec));
    }
  }
  return templates.empty() ? single() : templates;
}

}  // namespace schedfarm
