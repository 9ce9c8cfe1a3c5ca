#include "learner/features.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <string>

#include "learner/schedule_eval.h"
#include "learner/stage_model.h"
#include "pipeline/spec.h"

namespace schedfarm {

using features_internal::BoolOpName;
using features_internal::DefState;
using features_internal::FloatOpName;
using features_internal::InputAccess;
using features_internal::Interval;
using features_internal::IntOpName;
using features_internal::kMaxLoops;
using features_internal::kMaxRank;
using features_internal::kNumBoolOps;
using features_internal::kNumFloatOps;
using features_internal::kNumIntOps;
using features_internal::kNumLoadKinds;
using features_internal::LoadKindName;
using features_internal::OpCounts;
using features_internal::PipelineModel;
using features_internal::ScheduleEvaluator;
using features_internal::StageModel;
using features_internal::StageState;

namespace {

constexpr int kSchemaVersion = 4;
constexpr int kLoopSlots = 8;       // loops of the main definition, innermost first
constexpr int kAccessSlots = 3;     // inputs with an access matrix
constexpr int kMatrixDims = 5;      // access matrix: 5 x 5
constexpr int kReductionSlots = 4;  // reduction extents listed
constexpr int kNumOpKinds = 12;     // OpKind CONV..UPSAMPLE
constexpr int kNumPatterns = 7;     // AccessPattern
constexpr double kCacheLine = 64;
constexpr double kPage = 4096;

const char* const kOpKindNames[kNumOpKinds] = {"conv",  "matmul",    "pool",    "reduce",
                                               "unary", "binary",    "pad",     "concat",
                                               "slice", "transpose", "reshape", "upsample"};

// Collects column names, or writes values: the same emission code drives both, so the
// schema and the rows cannot disagree.
class NameSink {
 public:
  explicit NameSink(std::vector<std::string>* names) : names_(names) {}
  void operator()(const std::string& name, double) { names_->push_back(name); }

 private:
  std::vector<std::string>* names_;
};

class ValueSink {
 public:
  explicit ValueSink(float* out) : out_(out) {}
  template <typename Name>
  void operator()(const Name&, double value) {
    *out_++ = static_cast<float>(value);
  }

 private:
  float* out_;
};

// Names are built only when collecting them; value sinks never look at them.
struct Indexed {
  const char* prefix;
  int index;
  const char* suffix;
  operator std::string() const {  // NOLINT: used only through the sinks
    return std::string(prefix) + std::to_string(index) + suffix;
  }
};
struct Joined {
  const char* prefix;
  const char* name;
  operator std::string() const {  // NOLINT: used only through the sinks
    return std::string(prefix) + name;
  }
};

// "input<k>_a<i><j>": entry (consumer var i, input dim j) of input k's access matrix.
struct MatrixEntry {
  int input, i, j;
  operator std::string() const {  // NOLINT: used only through the sinks
    return "input" + std::to_string(input) + "_a" + std::to_string(i) + std::to_string(j);
  }
};

// ---------------------------------------------------------------------------------
// The invariant row

struct InvariantRow {
  int op = -1;  // index into kOpKindNames
  double is_output = 0, has_update = 0, f32 = 0, f64 = 0, bytes = 0;
  double rank = 0, points = 0, reduction_points = 0;
  double extent[kMaxRank] = {};
  double reduction_extent[kReductionSlots] = {};
  double flops = 0, bytes_read = 0, bytes_written = 0, intensity = 0, flops_per_point = 0;
  double f32_ops[kNumFloatOps] = {}, f64_ops[kNumFloatOps] = {};
  double int_ops[kNumIntOps] = {}, bool_ops[kNumBoolOps] = {}, loads[kNumLoadKinds] = {};
  double stores = 0;
  double patterns[kNumPatterns] = {};
  double from_stage = 0, from_input = 0, from_parameter = 0;
  double num_inputs = 0, num_consumers = 0, depth = 0;
  // The host that runs the schedule (scheduler/target.h), the same on every stage, and
  // the stage's roofline times on it: its flops at the host's peak, its bytes at the
  // host's bandwidth (0 where the host did not measure them).
  struct Host {
    double vector_bytes = 0, vector_registers = 0, threads = 0, peak_gflops = 0, bandwidth_gbps = 0,
           l1d_bytes = 0, l2_bytes = 0, l3_bytes = 0;
    double compute_seconds = 0, memory_seconds = 0;
  } host;
  struct Slot {
    double refs = 0, kind = 0, in_update = 0;
    double matrix[kMatrixDims][kMatrixDims] = {};
  } slots[kAccessSlots];
};

template <typename Sink>
void EmitInvariant(const InvariantRow& r, Sink& sink) {
  for (int k = 0; k < kNumOpKinds; ++k) sink(Joined{"op_", kOpKindNames[k]}, r.op == k);
  sink("is_output", r.is_output);
  sink("has_update", r.has_update);
  sink("dtype_f32", r.f32);
  sink("dtype_f64", r.f64);
  sink("bytes_per_element", r.bytes);
  sink("rank", r.rank);
  sink("output_points", r.points);
  sink("reduction_points", r.reduction_points);
  for (int j = 0; j < kMaxRank; ++j) sink(Indexed{"extent_d", j, ""}, r.extent[j]);
  for (int j = 0; j < kReductionSlots; ++j) {
    sink(Indexed{"reduction_extent_", j, ""}, r.reduction_extent[j]);
  }
  sink("flops", r.flops);
  sink("bytes_read", r.bytes_read);
  sink("bytes_written", r.bytes_written);
  sink("flops_per_byte", r.intensity);
  sink("flops_per_point", r.flops_per_point);
  for (int k = 0; k < kNumFloatOps; ++k) sink(Joined{"ops_f32_", FloatOpName(k)}, r.f32_ops[k]);
  for (int k = 0; k < kNumFloatOps; ++k) sink(Joined{"ops_f64_", FloatOpName(k)}, r.f64_ops[k]);
  for (int k = 0; k < kNumIntOps; ++k) sink(Joined{"ops_int_", IntOpName(k)}, r.int_ops[k]);
  for (int k = 0; k < kNumBoolOps; ++k) sink(Joined{"ops_bool_", BoolOpName(k)}, r.bool_ops[k]);
  for (int k = 0; k < kNumLoadKinds; ++k) sink(Joined{"loads_", LoadKindName(k)}, r.loads[k]);
  sink("stores", r.stores);
  for (int k = 0; k < kNumPatterns; ++k) {
    sink(Joined{"access_", AccessPatternName(static_cast<AccessPattern>(k))}, r.patterns[k]);
  }
  sink("inputs_from_stages", r.from_stage);
  sink("inputs_from_pipeline_inputs", r.from_input);
  sink("inputs_from_parameters", r.from_parameter);
  sink("num_inputs", r.num_inputs);
  sink("num_consumers", r.num_consumers);
  sink("depth", r.depth);
  sink("host_vector_bytes", r.host.vector_bytes);
  sink("host_vector_registers", r.host.vector_registers);
  sink("host_threads", r.host.threads);
  sink("host_peak_gflops", r.host.peak_gflops);
  sink("host_bandwidth_gbps", r.host.bandwidth_gbps);
  sink("host_l1d_bytes", r.host.l1d_bytes);
  sink("host_l2_bytes", r.host.l2_bytes);
  sink("host_l3_bytes", r.host.l3_bytes);
  sink("host_compute_seconds", r.host.compute_seconds);
  sink("host_memory_seconds", r.host.memory_seconds);
  for (int k = 0; k < kAccessSlots; ++k) {
    const InvariantRow::Slot& slot = r.slots[k];
    sink(Indexed{"input", k, "_refs"}, slot.refs);
    sink(Indexed{"input", k, "_kind"}, slot.kind);
    sink(Indexed{"input", k, "_in_update"}, slot.in_update);
    for (int i = 0; i < kMatrixDims; ++i) {
      for (int j = 0; j < kMatrixDims; ++j) sink(MatrixEntry{k, i, j}, slot.matrix[i][j]);
    }
  }
}

int OpIndex(OpKind op) {
  const int k = static_cast<int>(op) - 1;
  return k >= 0 && k < kNumOpKinds ? k : -1;
}

InvariantRow MakeInvariantRow(const PipelineGraph& graph, const PipelineModel& model,
                              const TargetParams& target, int s) {
  const StageModel& m = model.stages[s];
  const Stage& stage = graph.stage(s);
  InvariantRow r;
  r.op = OpIndex(m.op);
  r.is_output = m.is_output;
  r.has_update = m.has_update;
  r.f32 = stage.dtype() == FLOAT32;
  r.f64 = stage.dtype() == FLOAT64;
  r.bytes = m.bytes;
  r.rank = m.rank;
  double points = 1;
  for (int j = 0; j < m.rank; ++j) {
    r.extent[j] = static_cast<double>(m.shape[j]);
    points *= static_cast<double>(m.shape[j]);
  }
  r.points = points;
  r.reduction_points = static_cast<double>(m.reduction_points);
  for (int j = 0; j < m.num_reduction && j < kReductionSlots; ++j) {
    r.reduction_extent[j] = static_cast<double>(m.defs[1][m.rank + j].extent);
  }
  const StageCost cost = graph.cost(s);
  r.flops = cost.flops;
  r.bytes_read = cost.bytes_read;
  r.bytes_written = cost.bytes_written;
  r.intensity = cost.flops / std::max(1.0, cost.bytes_read + cost.bytes_written);
  r.flops_per_point = cost.flops / std::max(1.0, points);
  // Per output point: the pure definition once, the update once per reduction point.
  OpCounts per_point = m.ops[0];
  if (m.has_update) {
    OpCounts update = m.ops[1];
    for (double& v : update.f) v *= r.reduction_points;
    for (double& v : update.i) v *= r.reduction_points;
    for (double& v : update.b) v *= r.reduction_points;
    for (double& v : update.loads) v *= r.reduction_points;
    per_point += update;
  }
  for (int k = 0; k < kNumFloatOps; ++k) (r.f64 ? r.f64_ops : r.f32_ops)[k] = per_point.f[k];
  for (int k = 0; k < kNumIntOps; ++k) r.int_ops[k] = per_point.i[k];
  for (int k = 0; k < kNumBoolOps; ++k) r.bool_ops[k] = per_point.b[k];
  for (int k = 0; k < kNumLoadKinds; ++k) r.loads[k] = per_point.loads[k];
  r.stores = 1 + (m.has_update ? r.reduction_points : 0);
  for (size_t i = 0; i < m.inputs.size(); ++i) {
    const InputAccess& acc = m.inputs[i];
    r.patterns[static_cast<int>(acc.pattern)] += 1;
    (acc.kind == Value::Kind::kStage
         ? r.from_stage
         : (acc.kind == Value::Kind::kInput ? r.from_input : r.from_parameter)) += 1;
    if (i >= static_cast<size_t>(kAccessSlots)) continue;
    InvariantRow::Slot& slot = r.slots[i];
    slot.refs = 1;
    slot.kind = acc.kind == Value::Kind::kStage ? 1 : (acc.kind == Value::Kind::kInput ? 2 : 3);
    slot.in_update = acc.defs == 2;
    for (int j = 0; j < acc.rank && j < kMatrixDims; ++j) {
      const features_internal::CoordMap& c = acc.coords[j];
      if (c.kind != features_internal::CoordMap::kAffine || c.var < 0 || c.var >= kMatrixDims) {
        continue;
      }
      slot.matrix[c.var][j] = static_cast<double>(c.a * c.scale) / static_cast<double>(c.div);
    }
  }
  r.num_inputs = static_cast<double>(m.inputs.size());
  r.num_consumers = static_cast<double>(m.consumers.size());
  r.depth = m.depth;
  r.host.vector_bytes = target.vector_bytes;
  r.host.vector_registers = target.vector_registers();
  r.host.threads = target.cores;
  r.host.peak_gflops = target.peak_gflops;
  r.host.bandwidth_gbps = target.bandwidth_gbps;
  r.host.l1d_bytes = static_cast<double>(target.l1d_bytes);
  r.host.l2_bytes = static_cast<double>(target.l2_bytes);
  r.host.l3_bytes = static_cast<double>(target.l3_bytes);
  if (target.peak_gflops > 0) r.host.compute_seconds = cost.flops / (target.peak_gflops * 1e9);
  if (target.bandwidth_gbps > 0) {
    r.host.memory_seconds = (cost.bytes_read + cost.bytes_written) / (target.bandwidth_gbps * 1e9);
  }
  return r;
}

// ---------------------------------------------------------------------------------
// The dependent row

struct DependentRow {
  double loc_inline = 0, loc_root = 0, loc_at = 0;
  double compute_depth = 0, realizations = 0, outer_parallel_tasks = 0;
  double region[kMaxRank] = {};
  double region_points = 0, required_points = 0, points_computed = 0, recompute_ratio = 0;
  double update_iterations = 0, inline_evaluations = 0, inline_sites = 0;
  double allocation_bytes = 0, allocations = 0, allocation_bytes_total = 0, page_faults = 0;
  double num_loops = 0;
  struct Loop {
    double extent = 0, vectorized = 0, parallel = 0, unrolled = 0, reduction = 0;
    double footprint_bytes = 0, footprint_lines = 0, written_bytes = 0, reuse = 0;
  } loops[kLoopSlots];
  double loops_beyond_slots = 0, vector_width = 0, unroll_factor = 0, innermost_pure_extent = 0;
  double init_vector_width = 0, init_parallel_tasks = 0, init_num_loops = 0;
  double inner_parallel_tasks = 0, parallel_tasks = 0, core_utilization = 0;
  double idle_core_waste = 0, parallel_launches = 0, thread_wakeups = 0;
  double bytes_per_task = 0, false_sharing = 0;
  double float_ops = 0, int_ops = 0, bool_ops = 0;
  double vector_float_ops = 0, scalar_float_ops = 0, vector_int_ops = 0, scalar_int_ops = 0;
  double num_vectors = 0, num_scalars = 0, inlined_float_ops = 0, loads_per_iteration = 0;
  double bytes_read_total = 0, unique_bytes_read = 0, unique_lines_read = 0;
  double unique_bytes_read_total = 0, bytes_written_total = 0;
  double arithmetic_intensity = 0, work_per_task = 0, recompute_float_ops = 0;
  // Layouts (scheduler/layouts.h): the pure dim stored innermost (0: natural), whether
  // the vectorized loop runs along it (whole-vector stores), whether the weights are
  // packed, and whether a CONV or MATMUL vectorized across output channels loads its
  // weights as whole vectors (packed, or b's natural order); whether a CONV reads its
  // padded input from a copy (loads without bounds checks, after a copy at root).
  double storage_innermost = 0, vector_store_contiguous = 0, weights_packed = 0;
  double weight_vector_loads = 0, padded_copy = 0;
};

template <typename Sink>
void EmitDependent(const DependentRow& r, Sink& sink) {
  sink("loc_inline", r.loc_inline);
  sink("loc_root", r.loc_root);
  sink("loc_at", r.loc_at);
  sink("compute_depth", r.compute_depth);
  sink("realizations", r.realizations);
  sink("outer_parallel_tasks", r.outer_parallel_tasks);
  for (int j = 0; j < kMaxRank; ++j) sink(Indexed{"region_d", j, ""}, r.region[j]);
  sink("region_points", r.region_points);
  sink("required_points", r.required_points);
  sink("points_computed", r.points_computed);
  sink("recompute_ratio", r.recompute_ratio);
  sink("update_iterations", r.update_iterations);
  sink("inline_evaluations", r.inline_evaluations);
  sink("inline_sites", r.inline_sites);
  sink("allocation_bytes", r.allocation_bytes);
  sink("allocations", r.allocations);
  sink("allocation_bytes_total", r.allocation_bytes_total);
  sink("page_faults", r.page_faults);
  sink("num_loops", r.num_loops);
  for (int k = 0; k < kLoopSlots; ++k) {
    const DependentRow::Loop& l = r.loops[k];
    sink(Indexed{"loop", k, "_extent"}, l.extent);
    sink(Indexed{"loop", k, "_vectorized"}, l.vectorized);
    sink(Indexed{"loop", k, "_parallel"}, l.parallel);
    sink(Indexed{"loop", k, "_unrolled"}, l.unrolled);
    sink(Indexed{"loop", k, "_reduction"}, l.reduction);
  }
  sink("loops_beyond_slots", r.loops_beyond_slots);
  sink("vector_width", r.vector_width);
  sink("unroll_factor", r.unroll_factor);
  sink("innermost_pure_extent", r.innermost_pure_extent);
  sink("init_vector_width", r.init_vector_width);
  sink("init_parallel_tasks", r.init_parallel_tasks);
  sink("init_num_loops", r.init_num_loops);
  sink("inner_parallel_tasks", r.inner_parallel_tasks);
  sink("parallel_tasks", r.parallel_tasks);
  sink("core_utilization", r.core_utilization);
  sink("idle_core_waste", r.idle_core_waste);
  sink("parallel_launches", r.parallel_launches);
  sink("thread_wakeups", r.thread_wakeups);
  sink("bytes_per_task", r.bytes_per_task);
  sink("false_sharing", r.false_sharing);
  sink("float_ops", r.float_ops);
  sink("int_ops", r.int_ops);
  sink("bool_ops", r.bool_ops);
  sink("vector_float_ops", r.vector_float_ops);
  sink("scalar_float_ops", r.scalar_float_ops);
  sink("vector_int_ops", r.vector_int_ops);
  sink("scalar_int_ops", r.scalar_int_ops);
  sink("num_vectors", r.num_vectors);
  sink("num_scalars", r.num_scalars);
  sink("inlined_float_ops", r.inlined_float_ops);
  sink("loads_per_iteration", r.loads_per_iteration);
  sink("bytes_read_total", r.bytes_read_total);
  sink("unique_bytes_read", r.unique_bytes_read);
  sink("unique_lines_read", r.unique_lines_read);
  sink("unique_bytes_read_total", r.unique_bytes_read_total);
  sink("bytes_written_total", r.bytes_written_total);
  for (int k = 0; k < kLoopSlots; ++k) {
    const DependentRow::Loop& l = r.loops[k];
    sink(Indexed{"loop", k, "_footprint_bytes"}, l.footprint_bytes);
    sink(Indexed{"loop", k, "_footprint_lines"}, l.footprint_lines);
    sink(Indexed{"loop", k, "_written_bytes"}, l.written_bytes);
    sink(Indexed{"loop", k, "_reuse"}, l.reuse);
  }
  sink("arithmetic_intensity", r.arithmetic_intensity);
  sink("work_per_task", r.work_per_task);
  sink("recompute_float_ops", r.recompute_float_ops);
  sink("storage_innermost", r.storage_innermost);
  sink("vector_store_contiguous", r.vector_store_contiguous);
  sink("weights_packed", r.weights_packed);
  sink("weight_vector_loads", r.weight_vector_loads);
  sink("padded_copy", r.padded_copy);
}

// Bytes and 64-byte lines of the boxes of the values touched (value_bytes per value).
void Footprint(const ScheduleEvaluator& ev, const PipelineModel& model, double* bytes,
               double* lines, double* elements) {
  *bytes = *lines = *elements = 0;
  for (int v : ev.touched_values()) {
    const Interval* box = ev.touched_box(v);
    const int rank = model.value_ranks[v];
    const double b = model.value_bytes[v];
    double inner = rank > 0 ? static_cast<double>(box[0].extent()) : 1;
    double outer = 1;
    for (int j = 1; j < rank; ++j) outer *= static_cast<double>(box[j].extent());
    *elements += inner * outer;
    *bytes += inner * outer * b;
    *lines += std::ceil(inner * b / kCacheLine) * outer;
  }
}

double BoxPoints(const Interval* box, int rank) {
  double n = 1;
  for (int j = 0; j < rank; ++j) n *= static_cast<double>(box[j].extent());
  return n;
}

void MakeDependentRow(const PipelineModel& model, ScheduleEvaluator& ev, int s, int cores,
                      DependentRow* out) {
  DependentRow& r = *out;
  r = DependentRow();
  const StageModel& m = model.stages[s];
  const StageState& st = ev.stage(s);
  const double bytes = m.bytes;
  r.required_points = st.global_set ? BoxPoints(st.global, m.rank) : 0;  // unread: 0
  if (st.inlined) {
    r.loc_inline = 1;
    r.inline_evaluations = st.inline_evaluations;
    r.inline_sites = st.inline_sites;
    r.points_computed = st.inline_evaluations;
    r.recompute_ratio = st.inline_evaluations / std::max(1.0, r.required_points);
    r.float_ops = st.inline_evaluations * m.ops[0].FloatTotal();
    r.int_ops = st.inline_evaluations * m.ops[0].IntTotal();
    r.bool_ops = st.inline_evaluations * m.ops[0].BoolTotal();
    return;
  }
  r.loc_root = st.location != AT;
  r.loc_at = st.location == AT;
  r.compute_depth = st.depth;
  r.realizations = st.realizations;
  r.outer_parallel_tasks = st.outer_parallel;
  for (int j = 0; j < m.rank; ++j) r.region[j] = static_cast<double>(st.region[j].extent());
  r.region_points = BoxPoints(st.region, m.rank);
  r.points_computed = r.realizations * r.region_points;
  r.recompute_ratio = r.points_computed / std::max(1.0, r.required_points);
  if (m.has_update) r.update_iterations = ev.DefinitionIterations(s, 1);
  if (!m.is_output) {
    r.allocation_bytes = r.region_points * bytes;
    r.allocations = r.realizations;
    r.allocation_bytes_total = r.allocations * r.allocation_bytes;
    r.page_faults = r.allocations * std::ceil(r.allocation_bytes / kPage);
  }

  const int md = ScheduleEvaluator::MainDef(m);
  const DefState& d = st.defs[md];
  r.num_loops = d.num_loops;
  r.loops_beyond_slots = 1;
  r.unroll_factor = 1;
  double inner_tasks = 1;
  int outermost_parallel = -1, innermost_parallel = -1;
  for (int q = 0; q < d.num_loops; ++q) {
    const features_internal::LoopState& loop = d.loops[q];
    const double extent = static_cast<double>(loop.extent);
    if (q < kLoopSlots) {
      DependentRow::Loop& l = r.loops[q];
      l.extent = extent;
      l.vectorized = loop.vectorized;
      l.parallel = loop.parallel;
      l.unrolled = loop.unrolled;
      l.reduction = loop.reduction;
    } else {
      r.loops_beyond_slots *= extent;
    }
    if (loop.vectorized) r.vector_width = extent;
    if (loop.unrolled) r.unroll_factor *= extent;
    if (loop.parallel) {
      inner_tasks *= extent;
      outermost_parallel = q;
      if (innermost_parallel < 0) innermost_parallel = q;
    }
    if (!loop.reduction && r.innermost_pure_extent == 0) r.innermost_pure_extent = extent;
  }
  if (m.has_update) {
    const DefState& init = st.defs[0];
    r.init_num_loops = init.num_loops;
    r.init_parallel_tasks = 1;
    for (int q = 0; q < init.num_loops; ++q) {
      if (init.loops[q].vectorized) r.init_vector_width = static_cast<double>(init.loops[q].extent);
      if (init.loops[q].parallel)
        r.init_parallel_tasks *= static_cast<double>(init.loops[q].extent);
    }
  }
  r.inner_parallel_tasks = inner_tasks;
  r.parallel_tasks = inner_tasks * r.outer_parallel_tasks;
  const double c = cores;
  r.core_utilization = std::min(r.parallel_tasks, c) / c;
  r.idle_core_waste = std::ceil(r.parallel_tasks / c) / (r.parallel_tasks / c);
  Interval pure[kMaxRank], red[features_internal::kMaxDefDims];
  if (outermost_parallel >= 0) {
    const double launches = r.realizations * ev.LoopStarts(s, md, outermost_parallel);
    r.parallel_launches = launches;
    r.thread_wakeups = launches * std::min(inner_tasks, c);
    ev.IterationBox(s, md, innermost_parallel - 1, pure, red);
    r.bytes_per_task = BoxPoints(pure, m.rank) * bytes;
    r.false_sharing = r.bytes_per_task > 0 && r.bytes_per_task < kCacheLine;
  }

  // Operations, with the inlined stages each definition evaluates.
  for (int def = 0; def < 2; ++def) {
    const DefState& dd = st.defs[def];
    if (!dd.present) continue;
    const double it = ev.DefinitionIterations(s, def);
    const OpCounts& ops = ev.DefinitionOps(s, def);
    const double fl = ops.FloatTotal(), in = ops.IntTotal();
    r.float_ops += fl * it;
    r.int_ops += in * it;
    r.bool_ops += ops.BoolTotal() * it;
    r.bytes_read_total += ops.LoadTotal() * it * bytes;
    const double vectors = st.realizations * dd.vectors;
    const double scalars = st.realizations * dd.scalars;
    r.vector_float_ops += fl * vectors;
    r.vector_int_ops += in * vectors;
    r.num_vectors += vectors;
    r.scalar_float_ops += fl * scalars;
    r.scalar_int_ops += in * scalars;
    r.num_scalars += scalars;
    r.bytes_written_total += it * bytes;  // one store per iteration
  }
  const OpCounts& main_ops = ev.DefinitionOps(s, md);
  r.inlined_float_ops = main_ops.FloatTotal() - m.ops[md].FloatTotal();
  r.loads_per_iteration = main_ops.LoadTotal();

  // Memory: each loop level of the main definition, then one realization. A loop of
  // extent 1 leaves the boxes as they were one level in (unless the pipeline has index
  // arithmetic that Halide evaluates exactly only on fixed variables).
  double elements = 0;
  double iterations = 1;  // of the loops 0..q on the representative path
  double dim_iterations[features_internal::kMaxDefDims];  // their factor per dim (>= 1)
  std::fill(dim_iterations, dim_iterations + d.num_dims, 1.0);
  const int slots = std::min(d.num_loops, kLoopSlots);
  ev.IterationBox(s, md, -1, pure, red);
  for (int q = 0; q < slots; ++q) {
    DependentRow::Loop& l = r.loops[q];
    const int dim = d.loops[q].dim;
    if (d.loops[q].extent > 1) {  // a loop of extent 1 leaves the count as it was
      const double dim_it = ev.DimIterations(s, md, dim, q);
      iterations = iterations / dim_iterations[dim] * dim_it;  // exact: integers
      dim_iterations[dim] = dim_it;
    }
    ev.UpdateIterationBox(s, md, dim, q, pure, red);
    if (q > 0 && d.loops[q].extent == 1 && !model.exact_on_symbols) {
      l.footprint_bytes = r.loops[q - 1].footprint_bytes;
      l.footprint_lines = r.loops[q - 1].footprint_lines;
      l.written_bytes = r.loops[q - 1].written_bytes;
      l.reuse = r.loops[q - 1].reuse;
      continue;
    }
    ev.Touch(s, md, pure, red);
    Footprint(ev, model, &l.footprint_bytes, &l.footprint_lines, &elements);
    l.written_bytes = BoxPoints(pure, m.rank) * bytes;
    l.reuse = elements > 0 ? iterations * r.loads_per_iteration / elements : 0;
  }
  if (!m.has_update && slots == d.num_loops && slots > 0) {
    // The outermost loop spans the realization.
    r.unique_bytes_read = r.loops[slots - 1].footprint_bytes;
    r.unique_lines_read = r.loops[slots - 1].footprint_lines;
  } else {
    for (int def = 0; def < 2; ++def) {
      if (!st.defs[def].present) continue;
      ev.IterationBox(s, def, kMaxLoops, pure, red);
      ev.Touch(s, def, pure, red, /*reset=*/def == 0);
    }
    Footprint(ev, model, &r.unique_bytes_read, &r.unique_lines_read, &elements);
  }
  r.unique_bytes_read_total = r.unique_bytes_read * r.realizations;

  r.arithmetic_intensity = r.float_ops / std::max(1.0, r.unique_bytes_read_total);
  r.work_per_task = (r.float_ops + r.int_ops) / std::max(1.0, r.parallel_tasks);
  r.recompute_float_ops = r.recompute_ratio > 1 ? r.float_ops * (1 - 1 / r.recompute_ratio) : 0;
}

// The layout columns of a stage that is not inlined, from its decision.
void SetLayoutColumns(const PipelineGraph& graph, const ScheduleEvaluator& ev,
                      const PipelineModel& model, int s, const StageSchedule& decision,
                      DependentRow* r) {
  const StageModel& m = model.stages[s];
  const StageState& st = ev.stage(s);
  if (st.inlined) return;
  // Pure dim "d<i>" (output axis i) is the (rank - 1 - i)-th innermost (LoopNestOf);
  // Check has made sure it is one.
  const int rank = m.rank;
  const std::string& stored = decision.storage_innermost();
  int innermost = stored.empty() ? 0 : rank - 1 - std::atoi(stored.c_str() + 1);
  // An output of a channels-last pipeline is stored channels innermost (pipeline/spec.h).
  const std::vector<int>& outputs = graph.output_stages();
  if (BoundaryChannelsLast(graph.spec(), static_cast<size_t>(rank)) &&
      std::find(outputs.begin(), outputs.end(), s) != outputs.end()) {
    innermost = 2;
  }
  r->storage_innermost = innermost;
  const DefState& def = st.defs[ScheduleEvaluator::MainDef(m)];
  int vectorized = -1;
  for (int q = 0; q < def.num_loops; ++q) {
    if (def.loops[q].vectorized) vectorized = def.loops[q].dim;
  }
  r->vector_store_contiguous = vectorized >= 0 && vectorized == innermost;
  r->weights_packed = decision.pack_weights();
  r->padded_copy = decision.padded_copy();
  const Stage& stage = graph.stage(s);
  if (stage.op() == CONV) {
    r->weight_vector_loads = decision.pack_weights() && vectorized == rank - 2;
  } else if (stage.op() == MATMUL) {
    r->weight_vector_loads =
        vectorized == 0 && (decision.pack_weights() || !stage.attrs().trans_b());
  }
}

// The schedule evaluator of this thread (Featurize is const and may run concurrently).
ScheduleEvaluator& ThreadEvaluator() {
  thread_local ScheduleEvaluator evaluator;
  return evaluator;
}

}  // namespace

const FeatureSchema& CurrentFeatureSchema() {
  static const FeatureSchema schema = [] {
    FeatureSchema s;
    s.version = kSchemaVersion;
    NameSink invariant(&s.invariant_names);
    EmitInvariant(InvariantRow(), invariant);
    NameSink dependent(&s.dependent_names);
    EmitDependent(DependentRow(), dependent);
    return s;
  }();
  return schema;
}

Featurizer::Featurizer(const ScheduleSpace& space)
    : space_(space),
      model_(std::make_shared<PipelineModel>(
          features_internal::BuildPipelineModel(space.graph(), space.target().vector_bytes))) {
  const PipelineGraph& graph = space.graph();
  const FeatureSchema& schema = CurrentFeatureSchema();
  const int n = graph.num_stages();
  invariant_.num_stages = n;
  invariant_.invariant.assign(static_cast<size_t>(n) * schema.invariant_names.size(), 0.f);
  for (int s = 0; s < n; ++s) {
    ValueSink sink(&invariant_.invariant[s * schema.invariant_names.size()]);
    EmitInvariant(MakeInvariantRow(graph, *model_, space.target(), s), sink);
  }
  for (int s = 0; s < n; ++s) {
    for (const InputAccess& acc : model_->stages[s].inputs) {
      if (acc.producer >= 0) invariant_.edges.emplace_back(acc.producer, s);
    }
  }
  std::sort(invariant_.edges.begin(), invariant_.edges.end());
  invariant_.edges.erase(std::unique(invariant_.edges.begin(), invariant_.edges.end()),
                         invariant_.edges.end());
  // Whole pipeline: arithmetic of every stage; bytes of every tensor read or written,
  // each once.
  std::vector<uint8_t> counted(graph.values().size(), 0);
  for (int s = 0; s < n; ++s) {
    invariant_.flops += graph.cost(s).flops;
    counted[graph.stage_value(s)] = 1;
    for (int v : graph.stage_inputs(s)) counted[v] = 1;
  }
  for (size_t v = 0; v < counted.size(); ++v) {
    if (!counted[v]) continue;
    invariant_.bytes += static_cast<double>(NumElements(graph.value(static_cast<int>(v)).shape)) *
                        BytesPerElement(graph.value(static_cast<int>(v)).dtype);
  }
}

Status Featurizer::Featurize(const ScheduleSpec& schedule, PipelineFeatures* out) const {
  const Status legal = space_.CheckMeasured(schedule);
  if (!legal.ok()) {
    return Status::Error("featurize pipeline '" + space_.graph().spec().name() +
                         "': illegal schedule: " + legal.message());
  }
  // Deeper splits than the evaluator's arrays hold (the space offers up to 3 levels).
  for (const StageSchedule& decision : schedule.stages()) {
    for (const DefinitionSchedule* def : {&decision.pure(), &decision.update()}) {
      for (const DimSplit& split : def->splits()) {
        if (split.factors_size() + 1 > features_internal::kMaxLevels) {
          return Status::Error("featurize pipeline '" + space_.graph().spec().name() +
                               "': stage '" + decision.stage() + "' splits dim '" + split.dim() +
                               "' into " + std::to_string(split.factors_size() + 1) +
                               " levels; the features support up to " +
                               std::to_string(features_internal::kMaxLevels));
        }
      }
    }
  }
  FeaturizeLegal(schedule, out);
  return Status::Ok();
}

void Featurizer::FeaturizeLegal(const ScheduleSpec& schedule, PipelineFeatures* out) const {
  const FeatureSchema& schema = CurrentFeatureSchema();
  const size_t width = schema.dependent_names.size();
  const int n = invariant_.num_stages;
  out->num_stages = n;
  out->invariant = invariant_.invariant;
  out->edges = invariant_.edges;
  out->flops = invariant_.flops;
  out->bytes = invariant_.bytes;
  out->dependent.assign(static_cast<size_t>(n) * width, 0.f);
  out->scheduled.assign(n, 0);

  ScheduleEvaluator& ev = ThreadEvaluator();
  ev.Evaluate(space_, *model_, schedule);
  DependentRow row;
  const std::vector<int>& order = space_.decision_order();
  for (int pos = 0; pos < schedule.stages_size(); ++pos) {
    const int s = order[pos];
    out->scheduled[s] = 1;
    MakeDependentRow(*model_, ev, s, space_.target().cores, &row);
    SetLayoutColumns(space_.graph(), ev, *model_, s, schedule.stages(pos), &row);
    ValueSink sink(&out->dependent[s * width]);
    EmitDependent(row, sink);
  }
}

}  // namespace schedfarm
