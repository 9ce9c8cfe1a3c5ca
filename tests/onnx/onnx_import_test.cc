// ONNX import without running anything: refused inputs (corrupt bytes, unsupported
// operators and attributes, dangling names, symbolic dims, opsets), what the
// constant folder leaves in the spec, initializer decoding and TensorProto files.
#include "pipeline/onnx/onnx_import.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <onnx/onnx_pb.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "pipeline/graph.h"

namespace schedfarm {
namespace {

using ::testing::HasSubstr;

// --- building models ----------------------------------------------------------------

onnx::ModelProto NewModel(int64_t opset = 13) {
  onnx::ModelProto model;
  model.set_ir_version(8);
  onnx::OperatorSetIdProto* set = model.add_opset_import();
  set->set_domain("");
  set->set_version(opset);
  model.mutable_graph()->set_name("test_graph");
  return model;
}

// dims: a negative value -k becomes the symbolic dim "N<k>".
void AddValueInfo(google::protobuf::RepeatedPtrField<onnx::ValueInfoProto>* list,
                  const std::string& name, int32_t elem, const std::vector<int64_t>& dims) {
  onnx::ValueInfoProto* v = list->Add();
  v->set_name(name);
  onnx::TypeProto::Tensor* t = v->mutable_type()->mutable_tensor_type();
  t->set_elem_type(elem);
  onnx::TensorShapeProto* shape = t->mutable_shape();
  for (int64_t d : dims) {
    if (d >= 0) {
      shape->add_dim()->set_dim_value(d);
    } else {
      shape->add_dim()->set_dim_param("N" + std::to_string(-d));
    }
  }
}

void AddInput(onnx::ModelProto& m, const std::string& name, const std::vector<int64_t>& dims,
              int32_t elem = onnx::TensorProto::FLOAT) {
  AddValueInfo(m.mutable_graph()->mutable_input(), name, elem, dims);
}

void AddOutput(onnx::ModelProto& m, const std::string& name,
               int32_t elem = onnx::TensorProto::FLOAT) {
  AddValueInfo(m.mutable_graph()->mutable_output(), name, elem, {});
  m.mutable_graph()
      ->mutable_output()
      ->rbegin()
      ->mutable_type()
      ->mutable_tensor_type()
      ->clear_shape();
}

onnx::NodeProto* AddNode(onnx::ModelProto& m, const std::string& op,
                         const std::vector<std::string>& inputs,
                         const std::vector<std::string>& outputs, const std::string& name = "") {
  onnx::NodeProto* n = m.mutable_graph()->add_node();
  n->set_op_type(op);
  n->set_name(name);
  for (const std::string& i : inputs) n->add_input(i);
  for (const std::string& o : outputs) n->add_output(o);
  return n;
}

void SetInt(onnx::NodeProto* n, const std::string& name, int64_t v) {
  onnx::AttributeProto* a = n->add_attribute();
  a->set_name(name);
  a->set_type(onnx::AttributeProto::INT);
  a->set_i(v);
}

void SetInts(onnx::NodeProto* n, const std::string& name, const std::vector<int64_t>& v) {
  onnx::AttributeProto* a = n->add_attribute();
  a->set_name(name);
  a->set_type(onnx::AttributeProto::INTS);
  for (int64_t x : v) a->add_ints(x);
}

void SetString(onnx::NodeProto* n, const std::string& name, const std::string& v) {
  onnx::AttributeProto* a = n->add_attribute();
  a->set_name(name);
  a->set_type(onnx::AttributeProto::STRING);
  a->set_s(v);
}

onnx::TensorProto FloatTensor(const std::string& name, const std::vector<int64_t>& dims,
                              const std::vector<float>& values, bool raw) {
  onnx::TensorProto t;
  t.set_name(name);
  t.set_data_type(onnx::TensorProto::FLOAT);
  for (int64_t d : dims) t.add_dims(d);
  if (raw) {
    t.set_raw_data(
        std::string(reinterpret_cast<const char*>(values.data()), values.size() * sizeof(float)));
  } else {
    for (float v : values) t.add_float_data(v);
  }
  return t;
}

onnx::TensorProto Int64Tensor(const std::string& name, const std::vector<int64_t>& values) {
  onnx::TensorProto t;
  t.set_name(name);
  t.set_data_type(onnx::TensorProto::INT64);
  t.add_dims(static_cast<int64_t>(values.size()));
  for (int64_t v : values) t.add_int64_data(v);
  return t;
}

std::vector<float> Iota(size_t n, float scale) {
  std::vector<float> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = scale * static_cast<float>(i % 7) - 0.3f;
  return v;
}

// x [1,2,6,6] -> Conv 3x3 (3 channels, pads 1, weights w, bias b) -> Relu -> y.
onnx::ModelProto ConvReluModel() {
  onnx::ModelProto m = NewModel();
  AddInput(m, "x", {1, 2, 6, 6});
  *m.mutable_graph()->add_initializer() = FloatTensor("w", {3, 2, 3, 3}, Iota(54, 0.1f), true);
  *m.mutable_graph()->add_initializer() = FloatTensor("b", {3}, {0.5f, -0.25f, 1.0f}, false);
  onnx::NodeProto* conv = AddNode(m, "Conv", {"x", "w", "b"}, {"c"}, "conv1");
  SetInts(conv, "pads", {1, 1, 1, 1});
  SetInts(conv, "kernel_shape", {3, 3});
  AddNode(m, "Relu", {"c"}, {"y"}, "relu1");
  AddOutput(m, "y");
  return m;
}

StatusOr<PipelineSpec> Import(const onnx::ModelProto& m, const OnnxImportOptions& options = {}) {
  return ImportOnnxModel(m.SerializeAsString(), "model.onnx", options);
}

std::string ErrorOf(const StatusOr<PipelineSpec>& spec) {
  return spec.ok() ? std::string("(imported)") : spec.status().message();
}

int CountStages(const PipelineSpec& spec, OpKind op) {
  int n = 0;
  for (const Stage& s : spec.stages()) n += s.op() == op;
  return n;
}

const Parameter* FindParameter(const PipelineSpec& spec, const std::string& name) {
  for (const Parameter& p : spec.parameters()) {
    if (p.tensor().name() == name) return &p;
  }
  return nullptr;
}

// --- the happy path --------------------------------------------------------------

TEST(OnnxImport, ConvReluBecomesTwoStagesWithInitializersAsParameters) {
  StatusOr<PipelineSpec> spec = Import(ConvReluModel());
  ASSERT_TRUE(spec.ok()) << spec.status().message();
  ASSERT_EQ(spec->inputs_size(), 1);
  EXPECT_EQ(spec->inputs(0).name(), "x");
  EXPECT_EQ(Shape(spec->inputs(0).shape().begin(), spec->inputs(0).shape().end()),
            (Shape{1, 2, 6, 6}));
  ASSERT_EQ(spec->stages_size(), 2);
  EXPECT_EQ(spec->stages(0).op(), CONV);
  EXPECT_EQ(spec->stages(1).op(), UNARY);
  EXPECT_EQ(spec->stages(1).attrs().unary(), RELU);
  EXPECT_EQ(Shape(spec->stages(1).shape().begin(), spec->stages(1).shape().end()),
            (Shape{1, 3, 6, 6}));
  EXPECT_EQ(spec->source(), "onnx:model.onnx");
  // raw_data and float_data initializers both arrive as the same float bytes.
  const Parameter* w = FindParameter(*spec, "w");
  const Parameter* b = FindParameter(*spec, "b");
  ASSERT_NE(w, nullptr);
  ASSERT_NE(b, nullptr);
  const std::vector<float> wv = Iota(54, 0.1f);
  EXPECT_EQ(w->raw_data(), std::string(reinterpret_cast<const char*>(wv.data()), 54 * 4));
  float bv[3];
  ASSERT_EQ(b->raw_data().size(), sizeof(bv));
  std::memcpy(bv, b->raw_data().data(), sizeof(bv));
  EXPECT_EQ(bv[1], -0.25f);
  EXPECT_TRUE(PipelineGraph::Build(*spec).ok());
}

// --- refused bytes -----------------------------------------------------------------

TEST(OnnxImport, TruncatedModelIsRefused) {
  const std::string bytes = ConvReluModel().SerializeAsString();
  int refused = 0;
  for (size_t cut : {bytes.size() / 3, bytes.size() / 2, bytes.size() - 7}) {
    StatusOr<PipelineSpec> spec = ImportOnnxModel(bytes.substr(0, cut), "cut.onnx");
    ASSERT_FALSE(spec.ok()) << "cut at " << cut;
    EXPECT_THAT(spec.status().message(), HasSubstr("cut.onnx"));
    refused += spec.status().message().find("truncated or corrupt") != std::string::npos;
  }
  EXPECT_GE(refused, 2);  // a cut between top-level fields parses but lacks the graph
}

TEST(OnnxImport, GarbageAndEmptyBytesAreRefused) {
  std::string garbage;
  for (int i = 0; i < 256; ++i) garbage.push_back(static_cast<char>((i * 97 + 13) % 256));
  StatusOr<PipelineSpec> spec = ImportOnnxModel(garbage, "garbage.onnx");
  ASSERT_FALSE(spec.ok());
  EXPECT_THAT(spec.status().message(), HasSubstr("garbage.onnx"));
  StatusOr<PipelineSpec> empty = ImportOnnxModel("", "empty.onnx");
  ASSERT_FALSE(empty.ok());
  EXPECT_THAT(empty.status().message(), HasSubstr("not a valid ModelProto"));
  StatusOr<PipelineSpec> missing = ImportOnnxFile("no/such/model.onnx");
  ASSERT_FALSE(missing.ok());
  EXPECT_THAT(missing.status().message(), HasSubstr("cannot read ONNX file"));
}

// Found by fuzzing: ONNX strings are not checked by the protobuf parser (proto2), so a
// name that was not UTF-8 reached the PipelineSpec, which then could not be parsed again.
TEST(OnnxImport, NamesThatAreNotUtf8AreRefused) {
  onnx::ModelProto m = ConvReluModel();
  m.mutable_graph()->mutable_node(0)->set_output(0, "c\xFF");
  m.mutable_graph()->mutable_node(1)->set_input(0, "c\xFF");
  StatusOr<PipelineSpec> spec = ImportOnnxModel(m.SerializeAsString(), "latin1.onnx");
  ASSERT_FALSE(spec.ok());
  EXPECT_THAT(spec.status().message(),
              HasSubstr("'latin1.onnx': field onnx.NodeProto.output is not UTF-8 text"));
}

// --- refused graphs -----------------------------------------------------------------

TEST(OnnxImport, UnsupportedOperatorNamesNodeOpAndSupportedList) {
  onnx::ModelProto m = NewModel();
  AddInput(m, "x", {4});
  AddNode(m, "NonZero", {"x"}, {"y"}, "mystery");
  AddOutput(m, "y");
  const std::string error = ErrorOf(Import(m));
  EXPECT_THAT(error, HasSubstr("node 'mystery' (op NonZero): unsupported operator"));
  EXPECT_THAT(error, HasSubstr("supported: Abs, Add,"));
  EXPECT_THAT(error, HasSubstr("Conv"));
}

TEST(OnnxImport, UnnamedNodeIsNamedByIndexAndOutput) {
  onnx::ModelProto m = NewModel();
  AddInput(m, "x", {4});
  AddNode(m, "Relu", {"x"}, {"r"});
  AddNode(m, "TopK", {"r"}, {"y"});
  AddOutput(m, "y");
  EXPECT_THAT(ErrorOf(Import(m)), HasSubstr("node #1 (op TopK, output 'y'): unsupported"));
}

TEST(OnnxImport, UnsupportedAttributeAndValueNameNodeAndAttribute) {
  onnx::ModelProto m = NewModel();
  AddInput(m, "x", {4});
  SetInt(AddNode(m, "LeakyRelu", {"x"}, {"y"}, "lrelu"), "flavour", 3);
  AddOutput(m, "y");
  const std::string error = ErrorOf(Import(m));
  EXPECT_THAT(error, HasSubstr("node 'lrelu' (op LeakyRelu): unsupported attribute 'flavour'"));
  EXPECT_THAT(error, HasSubstr("supported: alpha"));

  onnx::ModelProto r = NewModel();
  AddInput(r, "x", {1, 1, 2, 2});
  *r.mutable_graph()->add_initializer() = FloatTensor("scales", {4}, {1, 1, 2, 2}, true);
  SetString(AddNode(r, "Resize", {"x", "", "scales"}, {"y"}, "up"), "mode", "linear");
  AddOutput(r, "y");
  EXPECT_THAT(ErrorOf(Import(r)),
              HasSubstr("node 'up' (op Resize): unsupported value 'linear' of attribute 'mode'"));

  onnx::ModelProto t = NewModel();
  AddInput(t, "x", {4});
  SetInts(AddNode(t, "LeakyRelu", {"x"}, {"y"}, "typed"), "alpha", {1});
  AddOutput(t, "y");
  EXPECT_THAT(ErrorOf(Import(t)), HasSubstr("attribute 'alpha' has type INTS, expected FLOAT"));
}

TEST(OnnxImport, DanglingInputAndMissingOutputAreRefused) {
  onnx::ModelProto m = ConvReluModel();
  m.mutable_graph()->mutable_initializer()->RemoveLast();  // drop "b"
  const std::string error = ErrorOf(Import(m));
  EXPECT_THAT(error, HasSubstr("node 'conv1' (op Conv): input 'b' is not a graph input, an "
                               "initializer or the output of an earlier node"));

  onnx::ModelProto o = ConvReluModel();
  AddOutput(o, "nowhere");
  EXPECT_THAT(ErrorOf(Import(o)), HasSubstr("output 'nowhere' is not"));

  onnx::ModelProto order = NewModel();  // nodes out of topological order
  AddInput(order, "x", {4});
  AddNode(order, "Relu", {"r"}, {"y"}, "second");
  AddNode(order, "Relu", {"x"}, {"r"}, "first");
  AddOutput(order, "y");
  EXPECT_THAT(ErrorOf(Import(order)), HasSubstr("node 'second' (op Relu): input 'r' is not"));
}

TEST(OnnxImport, MissingRequiredInputIsRefused) {
  for (const char* op : {"Conv", "Identity", "Gather", "Shape"}) {
    onnx::ModelProto m = NewModel();
    AddInput(m, "x", {1, 1, 4, 4});
    AddNode(m, op,
            std::string(op) == "Identity" || std::string(op) == "Shape"
                ? std::vector<std::string>{""}
                : std::vector<std::string>{"x"},
            {"y"}, "short");
    AddOutput(m, "y");
    EXPECT_THAT(ErrorOf(Import(m)),
                HasSubstr("node 'short' (op " + std::string(op) + "): needs at least"))
        << op;
  }
}

TEST(OnnxImport, SymbolicDimNeedsAValue) {
  onnx::ModelProto m = NewModel();
  AddInput(m, "x", {-1, 8});  // [N1, 8]
  AddNode(m, "Relu", {"x"}, {"y"});
  AddOutput(m, "y");
  const std::string error = ErrorOf(Import(m));
  EXPECT_THAT(error, HasSubstr("input 'x': dim 0 is symbolic ('N1')"));
  EXPECT_THAT(error, HasSubstr("dim_values"));
  OnnxImportOptions options;
  options.dim_values["N1"] = 5;
  StatusOr<PipelineSpec> spec = Import(m, options);
  ASSERT_TRUE(spec.ok()) << spec.status().message();
  EXPECT_EQ(Shape(spec->inputs(0).shape().begin(), spec->inputs(0).shape().end()), (Shape{5, 8}));
}

TEST(OnnxImport, OpsetIsChecked) {
  onnx::ModelProto m = ConvReluModel();
  m.mutable_opset_import(0)->set_version(18);
  EXPECT_THAT(ErrorOf(Import(m)), HasSubstr("unsupported opset version 18 of domain ''"));

  m.mutable_opset_import(0)->set_domain("com.example");
  EXPECT_THAT(ErrorOf(Import(m)), HasSubstr("imports no version of the default operator set"));

  // An old opset is accepted per operator: Conv and Relu have kept their meaning...
  onnx::ModelProto old = ConvReluModel();
  old.mutable_opset_import(0)->set_version(6);
  EXPECT_TRUE(Import(old).ok()) << ErrorOf(Import(old));
  // ... Range did not exist before opset 11.
  onnx::ModelProto range = NewModel(9);
  *range.mutable_graph()->add_initializer() = FloatTensor("limit", {}, {3}, true);
  AddNode(range, "Range", {"limit", "limit", "limit"}, {"r"}, "range");
  AddOutput(range, "r");
  EXPECT_THAT(ErrorOf(Import(range)),
              HasSubstr("node 'range' (op Range): unsupported opset 9 version of Range"));

  onnx::ModelProto other = ConvReluModel();
  other.mutable_graph()->mutable_node(1)->set_domain("com.microsoft");
  EXPECT_THAT(ErrorOf(Import(other)),
              HasSubstr("node 'relu1' (op Relu): unsupported operator domain 'com.microsoft'"));
}

TEST(OnnxImport, IntegerInputNeedsAValue) {
  onnx::ModelProto m = NewModel();
  AddInput(m, "x", {2, 6});
  AddInput(m, "shape", {2}, onnx::TensorProto::INT64);
  AddNode(m, "Reshape", {"x", "shape"}, {"y"}, "reshape");
  AddOutput(m, "y");
  EXPECT_THAT(ErrorOf(Import(m)), HasSubstr("input 'shape': unsupported run-time INT64 input"));
  OnnxImportOptions options;
  options.input_values["shape"] = Int64Tensor("shape", {3, -1}).SerializeAsString();
  StatusOr<PipelineSpec> spec = Import(m, options);
  ASSERT_TRUE(spec.ok()) << spec.status().message();
  ASSERT_EQ(spec->stages_size(), 1);
  EXPECT_EQ(spec->stages(0).op(), RESHAPE);
  EXPECT_EQ(Shape(spec->stages(0).shape().begin(), spec->stages(0).shape().end()), (Shape{3, 4}));
  EXPECT_EQ(spec->inputs_size(), 1);  // the folded shape is not a pipeline input
}

TEST(OnnxImport, RunTimeShapeIsRefusedAsUnsupported) {
  onnx::ModelProto m = NewModel();
  AddInput(m, "x", {2, 6});
  AddInput(m, "s", {2});
  SetInt(AddNode(m, "Cast", {"s"}, {"si"}, "cast"), "to", onnx::TensorProto::INT64);
  AddNode(m, "Reshape", {"x", "si"}, {"y"}, "reshape");
  AddOutput(m, "y");
  EXPECT_THAT(ErrorOf(Import(m)), HasSubstr("node 'cast' (op Cast): unsupported cast of "
                                            "run-time FLOAT data to INT64"));
}

// --- folding -------------------------------------------------------------------------

// y = Reshape(x, Concat(Unsqueeze(Gather(Shape(x), 0)), [-1])): the exporter's way of
// writing a flatten; the whole shape computation folds away.
TEST(OnnxImport, ShapeSubgraphFoldsIntoOneReshape) {
  onnx::ModelProto m = NewModel();
  AddInput(m, "x", {2, 3, 4, 5});
  *m.mutable_graph()->add_initializer() = Int64Tensor("zero", {0});
  m.mutable_graph()->mutable_initializer(0)->clear_dims();  // a scalar
  *m.mutable_graph()->add_initializer() = Int64Tensor("axes", {0});
  *m.mutable_graph()->add_initializer() = Int64Tensor("minus_one", {-1});
  AddNode(m, "Shape", {"x"}, {"s"});
  AddNode(m, "Gather", {"s", "zero"}, {"n"});
  AddNode(m, "Unsqueeze", {"n", "axes"}, {"n1"});
  SetInt(AddNode(m, "Concat", {"n1", "minus_one"}, {"target"}), "axis", 0);
  AddNode(m, "Reshape", {"x", "target"}, {"flat"});
  AddNode(m, "Relu", {"flat"}, {"y"});
  AddOutput(m, "y");
  StatusOr<PipelineSpec> spec = Import(m);
  ASSERT_TRUE(spec.ok()) << spec.status().message();
  ASSERT_EQ(spec->stages_size(), 2);
  EXPECT_EQ(spec->stages(0).op(), RESHAPE);
  EXPECT_EQ(Shape(spec->stages(0).shape().begin(), spec->stages(0).shape().end()), (Shape{2, 60}));
  EXPECT_EQ(spec->parameters_size(), 0);  // int64 initializers are folded and dropped
}

TEST(OnnxImport, BatchNormOfInitializersFoldsToScaleAndShift) {
  onnx::ModelProto m = NewModel();
  AddInput(m, "x", {1, 2, 6, 6});
  *m.mutable_graph()->add_initializer() = FloatTensor("w", {3, 2, 3, 3}, Iota(54, 0.1f), true);
  *m.mutable_graph()->add_initializer() = FloatTensor("b", {3}, {0.5f, -0.25f, 1.0f}, false);
  for (const char* name : {"gamma", "beta", "mean", "var"}) {
    *m.mutable_graph()->add_initializer() = FloatTensor(name, {3}, {0.5f, 1.5f, 2.0f}, true);
  }
  AddNode(m, "Conv", {"x", "w", "b"}, {"c"});
  AddNode(m, "BatchNormalization", {"c", "gamma", "beta", "mean", "var"}, {"bn"});
  AddNode(m, "Relu", {"bn"}, {"y"});
  AddOutput(m, "y");
  StatusOr<PipelineSpec> spec = Import(m);
  ASSERT_TRUE(spec.ok()) << spec.status().message();
  EXPECT_EQ(CountStages(*spec, CONV), 1);
  EXPECT_EQ(CountStages(*spec, BINARY), 2);  // x * scale + shift
  // w, b and the folded scale and shift; the four statistics are dropped.
  EXPECT_EQ(spec->parameters_size(), 4);
  EXPECT_EQ(FindParameter(*spec, "gamma"), nullptr);
}

TEST(OnnxImport, SoftmaxBeforeOpset13CoercesTo2D) {
  for (int64_t opset : {11, 13}) {
    onnx::ModelProto m = NewModel(opset);
    AddInput(m, "x", {2, 3, 4});
    SetInt(AddNode(m, "Softmax", {"x"}, {"y"}), "axis", 1);
    AddOutput(m, "y");
    StatusOr<PipelineSpec> spec = Import(m);
    ASSERT_TRUE(spec.ok()) << spec.status().message();
    EXPECT_EQ(CountStages(*spec, RESHAPE), opset < 13 ? 2 : 0) << "opset " << opset;
    const Stage& reduce = spec->stages(opset < 13 ? 1 : 0);
    ASSERT_EQ(reduce.op(), REDUCE);
    EXPECT_EQ(reduce.attrs().axes(0), 1);
  }
}

TEST(OnnxImport, OutputsThatAreNotNewStagesGetIdentityStages) {
  onnx::ModelProto m = NewModel();
  AddInput(m, "x", {3});
  AddNode(m, "Relu", {"x"}, {"r"});
  AddNode(m, "Identity", {"r"}, {"r2"});
  AddOutput(m, "x");  // a graph input
  AddOutput(m, "r");
  AddOutput(m, "r2");  // the same tensor again
  StatusOr<PipelineSpec> spec = Import(m);
  ASSERT_TRUE(spec.ok()) << spec.status().message();
  ASSERT_EQ(spec->outputs_size(), 3);
  EXPECT_EQ(spec->stages_size(), 3);
  EXPECT_EQ(CountStages(*spec, UNARY), 3);
}

TEST(OnnxImport, DoubleModelGivesFloat64Pipeline) {
  onnx::ModelProto m = NewModel();
  AddInput(m, "x", {3}, onnx::TensorProto::DOUBLE);
  AddNode(m, "Exp", {"x"}, {"y"});
  AddOutput(m, "y", onnx::TensorProto::DOUBLE);
  StatusOr<PipelineSpec> spec = Import(m);
  ASSERT_TRUE(spec.ok()) << spec.status().message();
  EXPECT_EQ(spec->stages(0).dtype(), FLOAT64);

  AddInput(m, "z", {3});
  EXPECT_THAT(ErrorOf(Import(m)), HasSubstr("unsupported mix of FLOAT and DOUBLE"));
}

// --- TensorProto files -----------------------------------------------------------------

class TensorFileTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ =
        std::filesystem::temp_directory_path() / ("onnx_tensor_test_" + std::to_string(::getpid()));
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  std::string Write(const std::string& name, const std::string& bytes) {
    const std::string path = (dir_ / name).string();
    std::ofstream(path, std::ios::binary) << bytes;
    return path;
  }
  std::filesystem::path dir_;
};

TEST_F(TensorFileTest, ReadsFloatAndDoubleTensors) {
  StatusOr<HostTensor> f = ReadOnnxTensorFile(
      Write("f.pb", FloatTensor("t", {2, 3}, Iota(6, 0.5f), false).SerializeAsString()));
  ASSERT_TRUE(f.ok()) << f.status().message();
  EXPECT_EQ(f->dtype, FLOAT32);
  EXPECT_EQ(f->shape, (Shape{2, 3}));
  EXPECT_EQ(f->data[4], static_cast<double>(Iota(6, 0.5f)[4]));

  onnx::TensorProto d;
  d.set_data_type(onnx::TensorProto::DOUBLE);
  d.add_dims(2);
  const double values[2] = {0.1, -3.25};
  d.set_raw_data(std::string(reinterpret_cast<const char*>(values), sizeof(values)));
  StatusOr<HostTensor> dt = ReadOnnxTensorFile(Write("d.pb", d.SerializeAsString()));
  ASSERT_TRUE(dt.ok()) << dt.status().message();
  EXPECT_EQ(dt->dtype, FLOAT64);
  EXPECT_EQ(dt->data, (std::vector<double>{0.1, -3.25}));
}

TEST_F(TensorFileTest, RefusesOtherTypesWrongSizesAndCorruptFiles) {
  EXPECT_THAT(ReadOnnxTensorFile(Write("i.pb", Int64Tensor("i", {1, 2}).SerializeAsString()))
                  .status()
                  .message(),
              HasSubstr("element type INT64"));
  onnx::TensorProto short_raw = FloatTensor("s", {4}, {1, 2, 3}, true);
  EXPECT_THAT(ReadOnnxTensorFile(Write("s.pb", short_raw.SerializeAsString())).status().message(),
              HasSubstr("raw_data has 12 bytes"));
  const std::string full = FloatTensor("t", {64}, Iota(64, 1.0f), true).SerializeAsString();
  EXPECT_THAT(
      ReadOnnxTensorFile(Write("cut.pb", full.substr(0, full.size() / 2))).status().message(),
      HasSubstr("truncated or corrupt"));
  EXPECT_THAT(ReadOnnxTensorFile((dir_ / "absent.pb").string()).status().message(),
              HasSubstr("cannot read"));
}

}  // namespace
}  // namespace schedfarm
