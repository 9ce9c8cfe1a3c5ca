// The ONNX writer, checked through the importer: every zoo block and 66 random
// pipelines of the generator come back from their ONNX model as the same pipeline (the
// same id, RandomInit parameters materialized), or, where a stage can not come back
// as itself (below), as a pipeline that libtorch evaluates to the same outputs and
// that a second round trip gives back exactly. Also the model's own fields, stages the
// generator never draws, helper names that meet pipeline names, and refused specs.
#include "pipeline/onnx/onnx_export.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <onnx/onnx_pb.h>

#include <cmath>
#include <cstring>
#include <map>
#include <set>

#include "pipeline/builder.h"
#include "pipeline/graph.h"
#include "pipeline/onnx/onnx_import.h"
#include "pipeline/random_pipeline.h"
#include "pipeline/spec.h"
#include "pipeline/tensor.h"
#include "pipeline/torch/torch_eval.h"
#include "pipeline/zoo.h"

namespace schedfarm {
namespace {

using ::testing::HasSubstr;

bool ExactInFloat(double v) { return static_cast<double>(static_cast<float>(v)) == v; }
bool ExactIn(double v, DataType dtype) { return dtype == FLOAT64 || ExactInFloat(v); }

// Why stage s cannot come back from ONNX as the same stage, or "" when it does. The
// importer reads the writer's composites as the stages they are made of, ONNX's
// Identity as an alias, and ONNX's float attributes (LeakyRelu's alpha, Gemm's...)
// and constants of float32 models as float values; the function is the same, so
// such a pipeline is compared by its outputs instead of its id.
std::string NotReimportedAsItself(const PipelineGraph& graph, int s) {
  const Stage& st = graph.stage(s);
  const Attributes& a = st.attrs();
  const DataType dtype = st.dtype();
  switch (st.op()) {
    case UNARY:
      switch (a.unary()) {
        case GELU:
        case RSQRT:
        case SILU:
        case SQUARE:
        case SCALE:
          return "a composite of ONNX operators";
        case IDENTITY:
          return "ONNX Identity, an alias to the importer";
        case LEAKY_RELU:
        case ELU:
        case HARD_SIGMOID:
          if (!ExactInFloat(EffectiveAlpha(st)) || !ExactInFloat(EffectiveBeta(st))) {
            return "alpha or beta not a float (ONNX attributes are floats; float64: a composite)";
          }
          return "";
        case CLIP:
          return ExactIn(a.clip_min(), dtype) && ExactIn(a.clip_max(), dtype)
                     ? ""
                     : "clip bounds rounded to the dtype";
        default:
          return "";
      }
    case MATMUL: {
      const std::vector<Shape> shapes = graph.input_shapes(s);
      const bool plain =
          !a.trans_a() && !a.trans_b() && EffectiveAlpha(st) == 1.0 && st.inputs_size() == 2;
      if (plain) return "";
      if (shapes[0].size() != 2 || shapes[1].size() != 2) {
        return "batched with transposes, alpha or c: a composite (ONNX Gemm is 2-D)";
      }
      if (!ExactInFloat(EffectiveAlpha(st)) || !ExactInFloat(EffectiveBeta(st))) {
        return "Gemm's float alpha or beta";
      }
      return "";
    }
    case POOL:
      for (int p = 0; p < a.pads_size(); ++p) {
        if (a.pool() == MAX_POOL && a.pads(p) >= a.kernel(p % a.kernel_size())) {
          return "MAX_POOL with pads as large as the kernel: PAD then MaxPool";
        }
      }
      for (int64_t d : a.dilations()) {
        if (a.pool() == AVG_POOL && d != 1) return "dilated AVG_POOL: a composite";
      }
      return "";
    default:
      return "";
  }
}

std::string Reasons(const PipelineGraph& graph) {
  std::string reasons;
  for (int s = 0; s < graph.num_stages(); ++s) {
    const std::string why = NotReimportedAsItself(graph, s);
    if (!why.empty()) reasons += "\n  " + graph.stage(s).name() + ": " + why;
  }
  return reasons;
}

// The builder's pipeline; an invalid one fails the test (and is empty).
PipelineSpec Built(PipelineBuilder& b) {
  StatusOr<PipelineSpec> spec = b.Finish();
  EXPECT_TRUE(spec.ok()) << spec.status().ToString();
  return spec.ok() ? *spec : PipelineSpec();
}

// The outputs of `graph` on the deterministic inputs of `inputs_of`, by libtorch.
std::vector<HostTensor> Evaluate(const PipelineGraph& graph, const PipelineSpec& inputs_of) {
  StatusOr<std::vector<HostTensor>> out = EvaluateWithTorch(graph, DeterministicInputs(inputs_of));
  EXPECT_TRUE(out.ok()) << out.status().ToString();
  return out.ok() ? *out : std::vector<HostTensor>{};
}

// `spec` exported and imported again (transcendental stages in `math`), with the
// boundary layout of `spec`: the layout is how the farm stores boundaries, not part of
// the model.
StatusOr<PipelineSpec> RoundTrip(const PipelineSpec& spec, MathMode math) {
  StatusOr<std::string> bytes = ExportOnnxModel(spec);
  if (!bytes.ok()) return bytes.status();
  OnnxImportOptions options;
  options.math = math;
  StatusOr<PipelineSpec> back = ImportOnnxModel(*bytes, spec.name(), options);
  if (back.ok()) back->set_boundary_layout(spec.boundary_layout());
  return back;
}

// How a round trip was judged.
enum class Judged { kById, kByOutputs };

// Exports `spec`, imports the model and compares the result with `spec`: by id when
// every stage comes back as itself, else by the outputs libtorch computes for both,
// and then by id with its own round trip (the importer's stages all come back as
// themselves).
Judged ExpectRoundTrip(const PipelineSpec& spec, MathMode math = EXACT) {
  StatusOr<PipelineSpec> back = RoundTrip(spec, math);
  StatusOr<PipelineGraph> original = PipelineGraph::Build(spec);
  StatusOr<PipelineGraph> expected = PipelineGraph::Build(WithMaterializedParameters(spec));
  StatusOr<PipelineGraph> actual = back.ok() ? PipelineGraph::Build(*back) : back.status();
  for (const Status& status : {back.status(), original.status(), actual.status()}) {
    EXPECT_TRUE(status.ok()) << status.ToString();
  }
  if (!original.ok() || !expected.ok() || !actual.ok()) return Judged::kById;
  const std::string reasons = Reasons(*original);
  if (reasons.empty()) {
    EXPECT_EQ(PipelineId(*actual), PipelineId(*expected))
        << "expected:\n"
        << CanonicalForm(*expected) << "read back:\n"
        << CanonicalForm(*actual);
    return Judged::kById;
  }
  EXPECT_EQ(back->inputs_size(), spec.inputs_size());
  for (int i = 0; i < std::min(back->inputs_size(), spec.inputs_size()); ++i) {
    EXPECT_EQ(ShapeToString(Shape(back->inputs(i).shape().begin(), back->inputs(i).shape().end())),
              ShapeToString(Shape(spec.inputs(i).shape().begin(), spec.inputs(i).shape().end())))
        << "input " << i;
  }
  const std::vector<HostTensor> want = Evaluate(*original, spec);
  const std::vector<HostTensor> got = Evaluate(*actual, spec);
  EXPECT_EQ(got.size(), want.size());
  for (size_t k = 0; k < std::min(got.size(), want.size()); ++k) {
    const Comparison c = CompareTensors(got[k], want[k], DefaultTolerance(want[k].dtype));
    EXPECT_TRUE(c.match) << "output " << k << ": " << c.message
                         << "\nstages read back as others:" << reasons;
  }
  EXPECT_EQ(Reasons(*actual), "") << "read back:\n" << CanonicalForm(*actual);
  StatusOr<PipelineSpec> again = RoundTrip(*back, math);
  StatusOr<PipelineGraph> twice = again.ok() ? PipelineGraph::Build(*again) : again.status();
  EXPECT_TRUE(twice.ok()) << twice.status().ToString();
  if (twice.ok()) {
    EXPECT_EQ(PipelineId(*twice), PipelineId(*actual))
        << "read back:\n"
        << CanonicalForm(*actual) << "read back again:\n"
        << CanonicalForm(*twice);
  }
  return Judged::kByOutputs;
}

// --- the model zoo --------------------------------------------------------------------
// One ctest case per block (each case is a process that loads libtorch, ~1 s), in
// float32, float64, and float32 with PADE math (imported with math = PADE).

class ZooRoundTrip : public testing::TestWithParam<std::string> {};

TEST_P(ZooRoundTrip, ReadsBackAsTheBlock) {
  for (const auto& [dtype, math] : {std::pair{FLOAT32, EXACT}, {FLOAT64, EXACT}, {FLOAT32, PADE}}) {
    SCOPED_TRACE(testing::Message() << DataTypeName(dtype) << (math == PADE ? " PADE" : ""));
    ZooOptions options;
    options.dtype = dtype;
    options.math = math;
    StatusOr<PipelineSpec> block = MakeZooBlock(GetParam(), options);
    ASSERT_TRUE(block.ok()) << block.status().ToString();
    ExpectRoundTrip(*block, math);
  }
}

INSTANTIATE_TEST_SUITE_P(Zoo, ZooRoundTrip, testing::ValuesIn(ZooNames()),
                         [](const testing::TestParamInfo<std::string>& info) {
                           return info.param;
                         });

// --- random pipelines -----------------------------------------------------------------

struct RandomCase {
  std::string setting;
  std::string label;
  uint64_t seed;
  RandomPipelineOptions options;
};

// 66 pipelines: the generator's defaults, larger pipelines with several outputs, Padé
// math, rank-3 inputs, and one seed per operator it draws rarely.
std::vector<RandomCase> RandomCases() {
  std::vector<RandomCase> cases;
  for (uint64_t seed = 1; seed <= 16; ++seed) cases.push_back({"default", "", seed, {}});
  RandomPipelineOptions large;
  large.min_ops = 20;
  large.max_ops = 60;
  large.max_outputs = 3;
  for (uint64_t seed = 101; seed <= 112; ++seed) cases.push_back({"large", "", seed, large});
  RandomPipelineOptions pade;
  pade.math = PADE;
  for (uint64_t seed = 201; seed <= 208; ++seed) cases.push_back({"pade", "", seed, pade});
  RandomPipelineOptions rank3;
  rank3.max_rank = 3;
  for (uint64_t seed = 301; seed <= 308; ++seed) cases.push_back({"rank3", "", seed, rank3});
  uint64_t seed = 401;
  for (const char* op : {"conv",
                         "gemm",
                         "matmul",
                         "max_pool",
                         "avg_pool",
                         "pad",
                         "concat",
                         "slice",
                         "transpose",
                         "reshape",
                         "upsample",
                         "reduce_sum",
                         "reduce_sum_square",
                         "reduce_min",
                         "pow",
                         "log",
                         "sqrt",
                         "rsqrt",
                         "reciprocal",
                         "hard_sigmoid",
                         "floor",
                         "ceil"}) {
    RandomPipelineOptions favoured;
    favoured.favoured_ops = {op};
    cases.push_back({"favoured", op, seed++, favoured});
  }
  return cases;
}

// One ctest case per setting.
class RandomRoundTrip : public testing::TestWithParam<std::string> {};

TEST_P(RandomRoundTrip, ReadsBackAsThePipeline) {
  for (const RandomCase& c : RandomCases()) {
    if (c.setting != GetParam()) continue;
    SCOPED_TRACE(testing::Message() << "seed " << c.seed << " " << c.label);
    StatusOr<PipelineSpec> spec = RandomPipeline(c.seed, c.options);
    ASSERT_TRUE(spec.ok()) << spec.status().ToString();
    ExpectRoundTrip(*spec, c.options.math);
  }
}

INSTANTIATE_TEST_SUITE_P(Generator, RandomRoundTrip,
                         testing::Values("default", "large", "pade", "rank3", "favoured"),
                         [](const testing::TestParamInfo<std::string>& info) {
                           return info.param;
                         });

// The random cases exercise every op kind and every function of the IR.
TEST(OnnxExport, RandomCasesCoverEveryOperator) {
  std::set<std::string> seen;
  for (const RandomCase& c : RandomCases()) {
    StatusOr<PipelineSpec> spec = RandomPipeline(c.seed, c.options);
    ASSERT_TRUE(spec.ok()) << spec.status().ToString();
    for (const Stage& st : spec->stages()) {
      const Attributes& a = st.attrs();
      seen.insert(OpKind_Name(st.op()));
      if (st.op() == UNARY) seen.insert(UnaryFn_Name(a.unary()));
      if (st.op() == BINARY) seen.insert(BinaryFn_Name(a.binary()));
      if (st.op() == REDUCE) seen.insert(ReduceFn_Name(a.reduce()));
      if (st.op() == POOL) seen.insert(PoolFn_Name(a.pool()) + (a.ceil_mode() ? "+ceil" : ""));
      if (st.op() == POOL && a.count_include_pad()) seen.insert("count_include_pad");
      if (st.op() == PAD) seen.insert("pad_" + PadMode_Name(a.pad_mode()));
      if (st.op() == MATMUL && st.inputs_size() == 3) seen.insert("matmul_c");
      if (st.op() == MATMUL && (a.trans_a() || a.trans_b())) seen.insert("matmul_trans");
      if (st.op() == SLICE && a.steps(0) < 0) seen.insert("slice_reversed");
    }
  }
  std::vector<std::string> missing;
  auto want = [&](const std::string& name) {
    if (!seen.count(name)) missing.push_back(name);
  };
  for (int k = CONV; k <= UPSAMPLE; ++k) want(OpKind_Name(static_cast<OpKind>(k)));
  for (int k = RELU; k <= SCALE; ++k) want(UnaryFn_Name(static_cast<UnaryFn>(k)));
  for (int k = ADD; k <= POW; ++k) want(BinaryFn_Name(static_cast<BinaryFn>(k)));
  for (int k = SUM; k <= SUM_SQUARE; ++k) want(ReduceFn_Name(static_cast<ReduceFn>(k)));
  for (const char* name :
       {"MAX_POOL", "AVG_POOL", "MAX_POOL+ceil", "AVG_POOL+ceil", "count_include_pad",
        "pad_CONSTANT", "pad_EDGE", "pad_REFLECT", "matmul_c", "matmul_trans", "slice_reversed"}) {
    want(name);
  }
  EXPECT_TRUE(missing.empty()) << "never drawn: " << testing::PrintToString(missing);
}

// --- stages the generator does not draw -------------------------------------------------

// Dilated pools: AVG_POOL as a convolution, MAX_POOL whose pads reach the (undilated)
// kernel with the padding first; with and without the ceil mode, whose last window
// along the rows here reaches past the end padding.
TEST(OnnxExport, DilatedPools) {
  for (PoolFn pool : {AVG_POOL, MAX_POOL}) {
    for (bool ceil_mode : {false, true}) {
      for (bool count_include_pad : {false, true}) {
        if (pool == MAX_POOL && count_include_pad) continue;
        PipelineBuilder b("dilated_pool");
        const std::string x = b.Input("x", {1, 3, 11, 10});
        Attributes a;
        a.set_pool(pool);
        for (int64_t v : {3, 2}) a.add_kernel(v);
        for (int64_t v : {2, 3}) a.add_strides(v);
        for (int64_t v : {2, 1, 1, 2}) a.add_pads(v);
        for (int64_t v : {2, 3}) a.add_dilations(v);
        a.set_ceil_mode(ceil_mode);
        a.set_count_include_pad(count_include_pad);
        b.Output(b.AddStage(POOL, {x}, a));
        const PipelineSpec spec = Built(b);
        SCOPED_TRACE(testing::Message() << PoolFn_Name(pool) << ", ceil_mode " << ceil_mode
                                        << ", count_include_pad " << count_include_pad);
        EXPECT_EQ(ExpectRoundTrip(spec), Judged::kByOutputs);
      }
    }
  }
}

// Float64 pipelines whose alpha or beta a float attribute would round: composites keep
// them in double (a rounded alpha misses float64's tolerance by far).
TEST(OnnxExport, Float64ParametersAreNotRoundedToFloat) {
  PipelineBuilder b("f64_params", FLOAT64);
  const std::string x = b.Input("x", {4, 6});
  const std::string w = b.RandomParameter("w", {6, 5}, 0.5);
  const std::string c = b.RandomParameter("c", {5}, 0.5);
  const std::string gemm = b.Gemm(x, w, c, 0.1, 0.3, false, false);
  const std::string leaky = b.UnaryWithParams(LEAKY_RELU, gemm, 0.01, 0);
  const std::string elu = b.UnaryWithParams(ELU, leaky, 0.3, 0);
  b.Output(b.UnaryWithParams(HARD_SIGMOID, elu, 1.0 / 6, 0.5));
  const PipelineSpec spec = Built(b);
  EXPECT_EQ(ExpectRoundTrip(spec), Judged::kByOutputs);
}

TEST(OnnxExport, BatchedMatMulsWithTransposesScalesAndC) {
  PipelineBuilder b("batched");
  const std::string x = b.Input("x", {2, 5, 4});
  const std::string y = b.Input("y", {3, 5});
  const std::string c = b.RandomParameter("c", {1, 4, 1}, 1.0);
  const std::string g = b.Gemm(x, y, c, 0.5, 2.0, /*trans_a=*/true, /*trans_b=*/true);
  b.Output(b.MatMul(g, b.Input("z", {2, 4, 3}), false, true));
  const PipelineSpec spec = Built(b);
  EXPECT_EQ(ExpectRoundTrip(spec), Judged::kByOutputs);
}

// Slices of several axes, one reversed down to index 0 (an ONNX end of -1 would count
// from the back), a rank-0 result, outputs listed against the stage order.
TEST(OnnxExport, SlicesReductionsAndOutputOrder) {
  PipelineBuilder b("slices");
  const std::string x = b.Input("x", {3, 7, 5});
  Attributes a;
  for (int64_t v : {1, 2}) a.add_axes(v);
  for (int64_t v : {6, 1}) a.add_starts(v);
  for (int64_t v : {-2, 2}) a.add_steps(v);
  const std::string sliced = b.AddStageWithShape(SLICE, {x}, a, {3, 4, 2});
  const std::string total = b.Reduce(SUM, b.Relu(sliced), {0, 1, 2}, false);
  b.Output(total);
  b.Output(sliced);
  const PipelineSpec spec = Built(b);
  EXPECT_EQ(ExpectRoundTrip(spec), Judged::kById);
}

// --- the model itself -----------------------------------------------------------------

onnx::ModelProto Exported(const PipelineSpec& spec) {
  StatusOr<std::string> bytes = ExportOnnxModel(spec);
  EXPECT_TRUE(bytes.ok()) << bytes.status().ToString();
  onnx::ModelProto model;
  EXPECT_TRUE(bytes.ok() && model.ParseFromString(*bytes));
  return model;
}

std::vector<int64_t> Dims(const onnx::ValueInfoProto& info) {
  std::vector<int64_t> dims;
  for (const auto& d : info.type().tensor_type().shape().dim()) dims.push_back(d.dim_value());
  return dims;
}

TEST(OnnxExport, ModelFieldsAndWeights) {
  PipelineBuilder b("fields");
  const std::string x = b.Input("x", {1, 3, 8, 8});
  const std::string conv = b.Conv2d(x, 4, 3, 1, 1);
  const std::string pooled = b.GlobalAvgPool(conv);
  b.Output(conv);
  b.Output(pooled);
  const PipelineSpec spec = Built(b);
  const onnx::ModelProto model = Exported(spec);
  EXPECT_EQ(model.ir_version(), 8);
  EXPECT_EQ(model.producer_name(), "schedfarm");
  ASSERT_EQ(model.opset_import_size(), 1);
  EXPECT_EQ(model.opset_import(0).domain(), "");
  EXPECT_EQ(model.opset_import(0).version(), 17);
  const onnx::GraphProto& g = model.graph();
  EXPECT_EQ(g.name(), "fields");
  ASSERT_EQ(g.input_size(), 1);
  EXPECT_EQ(g.input(0).name(), x);
  EXPECT_EQ(g.input(0).type().tensor_type().elem_type(), onnx::TensorProto::FLOAT);
  EXPECT_EQ(Dims(g.input(0)), (std::vector<int64_t>{1, 3, 8, 8}));
  ASSERT_EQ(g.output_size(), 2);
  EXPECT_EQ(g.output(0).name(), conv);
  EXPECT_EQ(Dims(g.output(0)), (std::vector<int64_t>{1, 4, 8, 8}));
  EXPECT_EQ(g.output(1).name(), pooled);
  EXPECT_EQ(Dims(g.output(1)), (std::vector<int64_t>{1, 4, 1, 1}));

  // Each RandomInit parameter holds exactly the values the farm materializes.
  ASSERT_EQ(spec.parameters_size(), 2);
  for (const Parameter& p : spec.parameters()) {
    ASSERT_EQ(p.init_case(), Parameter::kRandom);
    StatusOr<HostTensor> values = MaterializeParameter(p);
    ASSERT_TRUE(values.ok());
    const onnx::TensorProto* init = nullptr;
    for (const onnx::TensorProto& t : g.initializer()) {
      if (t.name() == p.tensor().name()) init = &t;
    }
    ASSERT_NE(init, nullptr) << p.tensor().name();
    EXPECT_EQ(init->data_type(), onnx::TensorProto::FLOAT);
    EXPECT_EQ(std::vector<int64_t>(init->dims().begin(), init->dims().end()), values->shape);
    ASSERT_EQ(init->raw_data().size(), values->data.size() * sizeof(float));
    for (size_t i = 0; i < values->data.size(); ++i) {
      float v;
      std::memcpy(&v, init->raw_data().data() + i * sizeof(float), sizeof(v));
      ASSERT_EQ(static_cast<double>(v), values->data[i]) << p.tensor().name() << "[" << i << "]";
    }
  }
}

TEST(OnnxExport, BoundaryLayoutIsNotPartOfTheModel) {
  StatusOr<PipelineSpec> natural = MakeZooBlock("resnet18_basic");
  ASSERT_TRUE(natural.ok()) << natural.status().ToString();
  PipelineSpec channels_last = *natural;
  channels_last.set_boundary_layout(LAYOUT_CHANNELS_LAST);
  StatusOr<std::string> a = ExportOnnxModel(*natural), b = ExportOnnxModel(channels_last);
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_EQ(*a, *b);
  EXPECT_EQ(ExpectRoundTrip(channels_last), Judged::kById);
}

// Helper values are named after their stage; a pipeline tensor that already has such a
// name keeps it, and the helper takes another.
TEST(OnnxExport, HelperNamesNeverTakePipelineNames) {
  PipelineSpec spec;
  spec.set_name("names");
  TensorDecl* x = spec.add_inputs();
  x->set_name("g");
  x->set_dtype(FLOAT32);
  for (int64_t d : {2, 8}) x->add_shape(d);
  auto add_unary = [&](const std::string& name, const std::string& input, UnaryFn fn) {
    Stage* st = spec.add_stages();
    st->set_name(name);
    st->set_op(UNARY);
    st->add_inputs(input);
    st->set_dtype(FLOAT32);
    for (int64_t d : {2, 8}) st->add_shape(d);
    st->mutable_attrs()->set_unary(fn);
  };
  // GELU's helpers would be h_div, h_sqrt2, h_erf, h_add, h_one, h_mul, h_half.
  add_unary("h", "g", GELU);
  add_unary("h_div", "h", RELU);
  add_unary("h_mul", "h_div", SILU);
  add_unary("h_sqrt2", "h_mul", RSQRT);
  spec.add_outputs("h_sqrt2");
  const onnx::ModelProto model = Exported(spec);
  std::map<std::string, int> defined;
  for (const auto& input : model.graph().input()) ++defined[input.name()];
  for (const auto& init : model.graph().initializer()) ++defined[init.name()];
  for (const auto& node : model.graph().node()) {
    for (const std::string& out : node.output()) ++defined[out];
  }
  for (const auto& [name, count] : defined) EXPECT_EQ(count, 1) << name;
  for (const char* name : {"g", "h", "h_div", "h_mul", "h_sqrt2"}) EXPECT_EQ(defined[name], 1);
  EXPECT_EQ(ExpectRoundTrip(spec), Judged::kByOutputs);
}

// --- refused specs --------------------------------------------------------------------

PipelineSpec ReluPipeline() {
  PipelineBuilder b("bad");
  b.Output(b.Relu(b.Input("x", {2, 3})));
  return Built(b);
}

TEST(OnnxExport, RefusesInvalidPipelines) {
  PipelineSpec unspecified = ReluPipeline();
  unspecified.mutable_stages(0)->set_op(OP_KIND_UNSPECIFIED);
  StatusOr<std::string> a = ExportOnnxModel(unspecified);
  ASSERT_FALSE(a.ok());
  EXPECT_THAT(a.status().message(), HasSubstr("ONNX export: pipeline 'bad'"));
  EXPECT_THAT(a.status().message(), HasSubstr("op is missing or unknown"));

  PipelineSpec dangling = ReluPipeline();
  dangling.mutable_stages(0)->set_inputs(0, "nothing");
  StatusOr<std::string> b = ExportOnnxModel(dangling);
  ASSERT_FALSE(b.ok());
  EXPECT_THAT(b.status().message(), HasSubstr("ONNX export: pipeline 'bad'"));
  EXPECT_THAT(b.status().message(), HasSubstr("'nothing'"));
}

// Enum values the IR does not define pass the validator but have no ONNX form.
TEST(OnnxExport, RefusesFunctionsItDoesNotKnow) {
  PipelineSpec unary = ReluPipeline();
  unary.mutable_stages(0)->mutable_attrs()->set_unary(static_cast<UnaryFn>(99));
  StatusOr<std::string> a = ExportOnnxModel(unary);
  ASSERT_FALSE(a.ok());
  EXPECT_EQ(a.status().message(), "ONNX export of pipeline 'bad': stage '" +
                                      unary.stages(0).name() +
                                      "' (UNARY 99): unknown unary function");

  PipelineBuilder pb("bad_pad");
  pb.Output(pb.Pad(pb.Input("x", {4, 4}), {1, 1, 1, 1}));
  PipelineSpec pad = Built(pb);
  pad.mutable_stages(0)->mutable_attrs()->set_pad_mode(static_cast<PadMode>(7));
  StatusOr<std::string> b = ExportOnnxModel(pad);
  ASSERT_FALSE(b.ok());
  EXPECT_THAT(b.status().message(), HasSubstr("(PAD 7): unknown pad mode"));
}

TEST(OnnxExport, RefusesWeightsOverProtobufsLimit) {
  PipelineBuilder b("huge");
  const std::string x = b.Input("x", {1});
  b.Output(b.Add(x, b.RandomParameter("w", {int64_t{1} << 29}, 1.0)));  // 2 GiB of f32
  const PipelineSpec spec = Built(b);
  StatusOr<std::string> bytes = ExportOnnxModel(spec);
  ASSERT_FALSE(bytes.ok());
  EXPECT_THAT(bytes.status().message(),
              HasSubstr("ONNX export of pipeline 'huge': its parameters hold 2147483648 bytes"));
}

}  // namespace
}  // namespace schedfarm
