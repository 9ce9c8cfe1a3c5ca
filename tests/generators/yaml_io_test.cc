#include "pipeline/yaml_io.h"

#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>

#include "pipeline/builder.h"
#include "pipeline/graph.h"
#include "pipeline/random_pipeline.h"
#include "pipeline/zoo.h"

namespace schedfarm {
namespace {

// "line:column" (1-based) of the first occurrence of `needle` in `text`.
std::string Pos(const std::string& text, const std::string& needle) {
  const size_t at = text.find(needle);
  EXPECT_NE(at, std::string::npos) << needle;
  int line = 1, column = 1;
  for (size_t i = 0; i < at; ++i) {
    if (text[i] == '\n') {
      ++line;
      column = 1;
    } else {
      ++column;
    }
  }
  return std::to_string(line) + ":" + std::to_string(column);
}

// Expects `text` to fail with a message that starts with "bad.yaml:<where>: " and
// contains each of `parts`.
void ExpectError(const std::string& text, const std::string& where,
                 const std::vector<std::string>& parts) {
  StatusOr<PipelineSpec> spec = PipelineFromYaml(text, "bad.yaml");
  ASSERT_FALSE(spec.ok()) << text;
  const std::string& message = spec.status().message();
  EXPECT_EQ(message.rfind("bad.yaml:" + where + ": ", 0), 0u) << message;
  for (const std::string& part : parts) {
    EXPECT_NE(message.find(part), std::string::npos) << "'" << part << "' not in: " << message;
  }
}

void ExpectRoundTrip(const PipelineSpec& spec) {
  const std::string yaml = PipelineToYaml(spec);
  StatusOr<PipelineSpec> back = PipelineFromYaml(yaml, spec.name() + ".yaml");
  ASSERT_TRUE(back.ok()) << back.status().ToString() << "\n" << yaml;
  EXPECT_EQ(back->SerializeAsString(), spec.SerializeAsString()) << yaml;
  EXPECT_EQ(PipelineToYaml(*back), yaml);
}

const char kTiny[] = R"(name: tiny
inputs: [{name: x, shape: [1, 3, 8, 8]}]     # dtype f32 by default
parameters:
  - {name: w, shape: [4, 3, 3, 3], random: {seed: 1, scale: 0.2}}
  - {name: b, shape: [4], data: [0.5, -1, 0.25, 2e-3]}
stages:
  - {name: c, op: conv, inputs: [x, w, b], strides: [1, 1], pads: [1, 1, 1, 1], shape: [1, 4, 8, 8]}
  - {name: p, op: pool, pool: max, inputs: [c], kernel: [2, 2], strides: [2, 2]}
  - {name: r, op: relu, inputs: [p]}
  - {name: s, op: reduce.sum, inputs: [r], axes: [2, 3], keepdims: true}
outputs: [r, s]
)";

TEST(YamlTest, ReadsTheDocumentedExample) {
  StatusOr<PipelineSpec> spec = PipelineFromYaml(kTiny, "configs/tiny.yaml");
  ASSERT_TRUE(spec.ok()) << spec.status().ToString();
  EXPECT_EQ(spec->name(), "tiny");
  EXPECT_EQ(spec->source(), "yaml:configs/tiny.yaml");
  ASSERT_EQ(spec->inputs_size(), 1);
  EXPECT_EQ(spec->inputs(0).dtype(), FLOAT32);
  ASSERT_EQ(spec->parameters_size(), 2);
  EXPECT_EQ(spec->parameters(0).random().seed(), 1u);
  EXPECT_EQ(spec->parameters(0).random().scale(), 0.2);
  const std::string& raw = spec->parameters(1).raw_data();
  ASSERT_EQ(raw.size(), 16u);
  float values[4];
  std::memcpy(values, raw.data(), sizeof(values));
  EXPECT_EQ(values[1], -1.0f);
  EXPECT_EQ(values[3], 2e-3f);
  ASSERT_EQ(spec->stages_size(), 4);
  const Stage& conv = spec->stages(0);
  EXPECT_EQ(conv.op(), CONV);
  EXPECT_EQ(conv.attrs().groups(), 1);          // default
  EXPECT_EQ(conv.attrs().dilations_size(), 2);  // default [1, 1]
  const Stage& pool = spec->stages(1);
  EXPECT_EQ(pool.attrs().pool(), MAX_POOL);
  EXPECT_EQ(pool.attrs().pads_size(), 4);  // default no padding
  EXPECT_EQ(Shape(pool.shape().begin(), pool.shape().end()), (Shape{1, 4, 4, 4}));  // inferred
  EXPECT_EQ(spec->stages(2).attrs().unary(), RELU);
  EXPECT_EQ(spec->stages(3).attrs().reduce(), SUM);
  EXPECT_TRUE(spec->stages(3).attrs().keepdims());
  EXPECT_EQ(spec->outputs_size(), 2);
  ExpectRoundTrip(*spec);
}

TEST(YamlTest, DefaultsNameAndDtype) {
  const std::string text = R"(dtype: f64
inputs: [{name: x, shape: [4]}, {name: y, shape: [4], dtype: f32}]
stages: [{name: n, op: neg, inputs: [x]}, {name: m, op: scale, inputs: [y], alpha: 2, beta: 0.5}]
outputs: [n, m]
)";
  StatusOr<PipelineSpec> spec = PipelineFromYaml(text, "some/dir/my_pipe.yaml");
  ASSERT_TRUE(spec.ok()) << spec.status().ToString();
  EXPECT_EQ(spec->name(), "my_pipe");
  EXPECT_EQ(spec->inputs(0).dtype(), FLOAT64);
  EXPECT_EQ(spec->inputs(1).dtype(), FLOAT32);
  EXPECT_EQ(spec->stages(0).dtype(), FLOAT64);  // from its input
  EXPECT_EQ(spec->stages(1).dtype(), FLOAT32);
  EXPECT_TRUE(spec->stages(1).attrs().has_alpha());
  ExpectRoundTrip(*spec);
}

TEST(YamlTest, StagesMayBeListedInAnyOrder) {
  const std::string text = R"(inputs: [{name: x, shape: [2, 2]}]
stages:
  - {name: b, op: relu, inputs: [a]}
  - {name: a, op: abs, inputs: [x]}
outputs: [b]
)";
  StatusOr<PipelineSpec> spec = PipelineFromYaml(text, "order.yaml");
  ASSERT_TRUE(spec.ok()) << spec.status().ToString();
  EXPECT_EQ(spec->stages(0).name(), "b");
  ExpectRoundTrip(*spec);
}

TEST(YamlTest, RoundTripsEveryZooBlock) {
  for (const std::string& name : ZooNames()) {
    SCOPED_TRACE(name);
    ZooOptions options;
    ExpectRoundTrip(*MakeZooBlock(name, options));
    options.dtype = FLOAT64;
    options.math = PADE;
    ExpectRoundTrip(*MakeZooBlock(name, options));
  }
}

TEST(YamlTest, RoundTripsRandomPipelines) {
  for (uint64_t seed = 0; seed < 150; ++seed) {
    SCOPED_TRACE(seed);
    RandomPipelineOptions options;
    options.math = seed % 2 ? PADE : EXACT;
    options.max_outputs = 3;
    ExpectRoundTrip(*RandomPipeline(seed, options));
  }
}

TEST(YamlTest, RoundTripsAwkwardNamesAndValues) {
  PipelineBuilder b("a pipeline: \"quoted\"\tand\\more");
  b.set_source("");
  const std::string x = b.Input("1", {3});
  const std::string t = b.Input("true", {3});
  const std::string c = b.ConstantParameter("x: y", {3}, {0.1, -1e-30, 3.4028234663852886e38});
  const std::string s = b.Add(b.Add(x, c), t);
  b.Output(b.Clip(s, -0.3333333333333333, 1e300));
  StatusOr<PipelineSpec> spec = b.Finish();
  ASSERT_TRUE(spec.ok()) << spec.status().ToString();
  spec->mutable_stages(0)->set_label("label with spaces, commas: and colons");
  ExpectRoundTrip(*spec);
}

TEST(YamlTest, ExamplePipelinesLoadAndRoundTrip) {
  const std::filesystem::path dir =
      std::filesystem::path(SCHEDFARM_SOURCE_DIR) / "configs" / "pipelines";
  int count = 0;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    if (entry.path().extension() != ".yaml") continue;
    SCOPED_TRACE(entry.path().string());
    ++count;
    StatusOr<PipelineSpec> spec = PipelineFromYamlFile(entry.path().string());
    ASSERT_TRUE(spec.ok()) << spec.status().ToString();
    EXPECT_EQ(spec->name(), entry.path().stem().string());
    EXPECT_TRUE(PipelineGraph::Build(*spec).ok());
    ExpectRoundTrip(*spec);
  }
  EXPECT_GE(count, 3);
}

TEST(YamlTest, MissingFileIsAnError) {
  StatusOr<PipelineSpec> spec = PipelineFromYamlFile("no/such/file.yaml");
  ASSERT_FALSE(spec.ok());
  EXPECT_NE(spec.status().message().find("pipeline file: 'no/such/file.yaml': cannot open: No such file"), std::string::npos);
}

// --- errors: each names file:line:column and what is wrong ---------------------------

TEST(YamlErrorTest, MalformedSyntax) {
  ExpectError("name: x\nstages: [{name: a, op: relu\n", "3:1", {"YAML syntax error"});
  ExpectError("name: x\n  bad indent: 1\n", "2:13", {"YAML syntax error"});
}

// Found by fuzzing: a name that is not UTF-8 was accepted, and the spec it went into
// could not be parsed again by the worker that received it in a lease.
TEST(YamlErrorTest, TextThatIsNotUtf8) {
  std::string text = kTiny;
  text.replace(text.find("tiny"), 4, "ti\x80y");
  ExpectError(text, "1:9", {"not UTF-8 text (byte 0x80)"});
  ExpectError("name: x\nstages: [\xED\xA0\x80]\n", "2:10", {"not UTF-8 text (byte 0xED)"});
  std::string accented = kTiny;
  accented.replace(accented.find("tiny"), 4, "t\xC3\xA9l\xC3\xA9");  // "télé" is fine
  EXPECT_TRUE(PipelineFromYaml(accented, "ok.yaml").ok());
  // yaml-cpp reads the escape \_ as the Latin-1 byte 0xA0.
  std::string escaped = kTiny;
  escaped.replace(escaped.find("tiny"), 4, "\"ti\\_ny\"");
  ExpectError(escaped, "1:7", {"name is not UTF-8 text once read"});
}

TEST(YamlErrorTest, EmptyOrNotAMapping) {
  ExpectError("", "1:1", {"empty document"});
  ExpectError("- a\n- b\n", "1:1", {"pipeline must be a mapping, is a list"});
}

TEST(YamlErrorTest, UnknownKeys) {
  const std::string top = "name: x\nstagez: []\n";
  ExpectError(top, Pos(top, "stagez"), {"unknown key 'stagez'", "did you mean 'stages'?"});
  const std::string far = "name: x\nwhatever: []\n";
  ExpectError(far, Pos(far, "whatever"), {"unknown key 'whatever'", "known keys: name, source"});
  const std::string attr =
      "inputs: [{name: x, shape: [2]}]\nstages: [{name: r, op: relu, inputs: [x], strides: [1]}]\n"
      "outputs: [r]\n";
  ExpectError(attr, Pos(attr, "strides"),
              {"unknown key 'strides'", "keys of op 'relu'", "math, alpha"});
  const std::string input = "inputs: [{name: x, shape: [2], dtpye: f32}]\n";
  ExpectError(input, Pos(input, "dtpye"), {"input 0: unknown key 'dtpye'"});
  const std::string random = "parameters: [{name: p, shape: [2], random: {seed: 1, sigma: 2}}]\n";
  ExpectError(random, Pos(random, "sigma"), {"parameter 'p' random: unknown key 'sigma'"});
}

TEST(YamlErrorTest, DuplicateKeyAndName) {
  const std::string key = "inputs: [{name: x, shape: [2], shape: [3]}]\n";
  ExpectError(key, Pos(key, "shape: [3]"), {"duplicate key 'shape'"});
  const std::string name =
      "inputs: [{name: x, shape: [2]}]\nstages:\n  - {name: x, op: relu, inputs: [x]}\n"
      "outputs: [x]\n";
  ExpectError(name, "3:12", {"stage 'x': name 'x' is already defined at line 1"});
}

TEST(YamlErrorTest, UnknownOpListsTheKnownOnes) {
  const std::string text =
      "inputs: [{name: x, shape: [2]}]\nstages: [{name: r, op: convolution, inputs: [x]}]\n"
      "outputs: [r]\n";
  ExpectError(text, Pos(text, "convolution"),
              {"unknown op 'convolution'", "known ops: conv, matmul, pool, reduce.sum", "relu",
               "hard_swish", "pow", "upsample"});
  const std::string pool =
      "inputs: [{name: x, shape: [1, 1, 4]}]\nstages: [{name: r, op: pool, inputs: [x], "
      "kernel: [2], pool: median}]\noutputs: [r]\n";
  ExpectError(pool, Pos(pool, "median"), {"pool: unknown value 'median' (known: max, avg)"});
}

TEST(YamlErrorTest, MissingFields) {
  const std::string op = "inputs: [{name: x, shape: [2]}]\nstages:\n  - {name: r, inputs: [x]}\n";
  ExpectError(op, "3:5", {"stage 'r': missing field 'op'"});
  ExpectError("inputs: [{name: x}]\n", "1:10", {"input 0: missing field 'shape'"});
  ExpectError("inputs: [{name: x, shape: [2]}]\n", "1:1", {"pipeline: missing field 'stages'"});
  const std::string param = "parameters: [{name: p, shape: [2]}]\n";
  ExpectError(param, "1:14", {"parameter 'p': needs exactly one of 'random'"});
  const std::string slice =
      "inputs: [{name: x, shape: [4]}]\nstages:\n  - {name: s, op: slice, inputs: [x], axes: [0], "
      "starts: [1], steps: [1]}\noutputs: [s]\n";
  ExpectError(slice, "3:5", {"stage 's': missing field 'shape'"});
  const std::string pool =
      "inputs: [{name: x, shape: [1, 1, 4]}]\nstages:\n  - {name: p, op: pool, inputs: [x], "
      "kernel: [2]}\noutputs: [p]\n";
  ExpectError(pool, "3:5", {"missing field 'pool' (max or avg)"});
  ExpectError("inputs: [{name: x, shape: [2]}]\nstages: [{name: r, op: relu, inputs: [x]}]\n",
              "1:1", {"missing field 'outputs'"});
}

TEST(YamlErrorTest, WrongTypes) {
  ExpectError("inputs: [{name: x, shape: 5}]\n", "1:27",
              {"input 'x' shape must be a list, is a scalar"});
  ExpectError("inputs: [{name: [x], shape: [1]}]\n", "1:17",
              {"input 0 name must be a string, is a list"});
  ExpectError("inputs: {name: x}\n", "1:9", {"inputs must be a list, is a mapping"});
  const std::string strides =
      "inputs: [{name: x, shape: [1, 1, 4]}]\nstages: [{name: p, op: pool, pool: max, "
      "inputs: [x], kernel: [2], strides: [two]}]\noutputs: [p]\n";
  ExpectError(strides, Pos(strides, "two"), {"strides[0] must be an integer, got 'two'"});
  const std::string keepdims =
      "inputs: [{name: x, shape: [2, 2]}]\nstages: [{name: s, op: reduce.max, inputs: [x], "
      "axes: [1], keepdims: maybe}]\noutputs: [s]\n";
  ExpectError(keepdims, Pos(keepdims, "maybe"), {"keepdims must be true or false, got 'maybe'"});
  const std::string alpha =
      "inputs: [{name: x, shape: [2]}]\nstages: [{name: s, op: elu, inputs: [x], alpha: 1.5.2}]\n"
      "outputs: [s]\n";
  ExpectError(alpha, Pos(alpha, "1.5.2"), {"alpha must be a number, got '1.5.2'"});
  const std::string inputs =
      "inputs: [{name: x, shape: [2]}]\nstages: [{name: s, op: relu, inputs: x}]\noutputs: [s]\n";
  ExpectError(inputs, Pos(inputs, "x}]\nout"), {"stage 's' inputs must be a list"});
  const std::string dtype = "inputs: [{name: x, shape: [2], dtype: float16}]\n";
  ExpectError(dtype, Pos(dtype, "float16"), {"unknown dtype 'float16' (known: f32, f64)"});
  const std::string seed = "parameters: [{name: p, shape: [2], random: {seed: -3}}]\n";
  ExpectError(seed, Pos(seed, "-3"), {"seed must be a non-negative integer"});
}

TEST(YamlErrorTest, BadExtentsAndSizes) {
  const std::string zero = "inputs: [{name: x, shape: [1, 0, 3]}]\n";
  ExpectError(zero, Pos(zero, "0, 3"), {"extent 0 of dim 1 must be >= 1"});
  const std::string negative = "inputs: [{name: x, shape: [-2]}]\n";
  ExpectError(negative, Pos(negative, "-2"), {"extent -2 of dim 0 must be >= 1"});
  const std::string absurd = "inputs: [{name: x, shape: [100000, 100000, 100000]}]\n";
  ExpectError(absurd, Pos(absurd, "[100000"), {"1e+15 elements, over the limit"});
  const std::string huge = "inputs: [{name: x, shape: [99999999999999999999]}]\n";
  ExpectError(huge, Pos(huge, "9999"), {"out of range"});
  const std::string rank = "inputs: [{name: x, shape: [1, 1, 1, 1, 1, 1, 1]}]\n";
  ExpectError(rank, Pos(rank, "[1,"), {"rank 7, over the limit of 6"});
  const std::string inferred =
      "inputs: [{name: x, shape: [65536, 1]}, {name: y, shape: [1, 65536]}]\n"
      "stages:\n  - {name: outer, op: mul, inputs: [x, y]}\noutputs: [outer]\n";
  ExpectError(inferred, "3:5", {"stage 'outer' (mul): output shape [65536, 65536] is over"});
}

TEST(YamlErrorTest, DanglingReferences) {
  const std::string input =
      "inputs: [{name: x, shape: [2]}]\nstages:\n  - {name: r, op: relu, inputs: [nope]}\n"
      "outputs: [r]\n";
  ExpectError(input, Pos(input, "nope"), {"stage 'r': unknown tensor 'nope'"});
  const std::string output =
      "inputs: [{name: x, shape: [2]}]\nstages:\n  - {name: r, op: relu, inputs: [x]}\n"
      "outputs: [r, gone, x]\n";
  ExpectError(output, Pos(output, "gone"), {"output 'gone' does not name a stage"});
  const std::string not_stage =
      "inputs: [{name: x, shape: [2]}]\nstages:\n  - {name: r, op: relu, inputs: [x]}\n"
      "outputs: [x]\n";
  ExpectError(not_stage, Pos(not_stage, "x]\n"), {"output 'x' is not a stage"});
}

TEST(YamlErrorTest, Cycle) {
  const std::string text =
      "inputs: [{name: x, shape: [2]}]\nstages:\n  - {name: a, op: add, inputs: [x, c]}\n"
      "  - {name: b, op: relu, inputs: [a]}\n  - {name: c, op: abs, inputs: [b]}\n"
      "outputs: [c]\n";
  ExpectError(text, "3:5", {"stages form a cycle: 'a' -> 'b' -> 'c' -> 'a'"});
}

TEST(YamlErrorTest, ShapeMismatches) {
  const std::string declared =
      "inputs: [{name: x, shape: [1, 3, 8, 8]}]\nstages:\n"
      "  - {name: p, op: pool, pool: avg, inputs: [x], kernel: [2, 2], strides: [2, 2], "
      "shape: [1, 3, 8, 8]}\noutputs: [p]\n";
  ExpectError(declared, Pos(declared, "[1, 3, 8, 8]}\nout"),
              {"stage 'p' (pool): declared shape [1, 3, 8, 8] but its inputs give [1, 3, 4, 4]"});
  const std::string broadcast =
      "inputs: [{name: x, shape: [1, 3]}, {name: y, shape: [1, 4]}]\nstages:\n"
      "  - {name: s, op: add, inputs: [x, y]}\noutputs: [s]\n";
  ExpectError(broadcast, "3:5",
              {"stage 's' (add)", "do not broadcast", "input shapes [1, 3], [1, 4]"});
  const std::string conv =
      "inputs: [{name: x, shape: [1, 3, 8, 8]}]\n"
      "parameters: [{name: w, shape: [4, 2, 3, 3], random: {seed: 1}}]\nstages:\n"
      "  - {name: c, op: conv, inputs: [x, w]}\noutputs: [c]\n";
  ExpectError(conv, "4:5", {"stage 'c' (conv)", "need dim 1 = input channels / groups = 3"});
  const std::string reshape =
      "inputs: [{name: x, shape: [2, 3]}]\nstages:\n"
      "  - {name: r, op: reshape, inputs: [x], shape: [5]}\noutputs: [r]\n";
  ExpectError(reshape, "3:5", {"reshape of [2, 3] (6 elements) to [5] (5 elements)"});
  const std::string data = "parameters: [{name: p, shape: [3], data: [1, 2]}]\n";
  ExpectError(data, Pos(data, "[1, 2]"), {"data has 2 values, shape [3] needs 3"});
}

TEST(YamlErrorTest, AttributeErrorsPointAtTheAttribute) {
  const std::string text =
      "inputs: [{name: x, shape: [4]}]\nstages:\n"
      "  - {name: r, op: relu, inputs: [x], alpha: 0.5}\noutputs: [r]\n";
  ExpectError(text, Pos(text, "alpha"),
              {"stage 'r' (relu): attribute 'alpha' is not used by RELU"});
  const std::string clip =
      "inputs: [{name: x, shape: [4]}]\nstages:\n"
      "  - {name: r, op: clip, inputs: [x], clip_min: 2, clip_max: 1}\noutputs: [r]\n";
  ExpectError(clip, "3:5", {"CLIP needs clip_min <= clip_max"});
}

TEST(YamlErrorTest, ValidatorErrorsNameTheStageLine) {
  // Mixed dtypes pass the format's own checks; the graph validator reports them, and
  // the error points at the stage it names.
  const std::string text =
      "inputs: [{name: x, shape: [4]}, {name: y, shape: [4], dtype: f64}]\nstages:\n"
      "  - {name: ok, op: relu, inputs: [x]}\n  - {name: mixed, op: add, inputs: [ok, y]}\n"
      "outputs: [mixed]\n";
  ExpectError(
      text, Pos(text, "mixed, op"),
      {"pipeline 'bad': stage 'mixed' (binary.add): input 'y' is f64 but the stage is f32"});
}

}  // namespace
}  // namespace schedfarm
