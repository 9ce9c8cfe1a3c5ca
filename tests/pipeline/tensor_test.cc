#include "pipeline/tensor.h"

#include <gtest/gtest.h>

#include <cmath>

namespace schedfarm {
namespace {

TEST(TensorTest, DeterministicUniformIsInRangeAndRepeatable) {
  double sum = 0;
  for (uint64_t i = 0; i < 10000; ++i) {
    double v = DeterministicUniform(42, i);
    ASSERT_GE(v, -1.0);
    ASSERT_LT(v, 1.0);
    ASSERT_EQ(v, DeterministicUniform(42, i));
    sum += v;
  }
  EXPECT_LT(std::fabs(sum / 10000), 0.05);  // mean near 0
  EXPECT_NE(DeterministicUniform(42, 0), DeterministicUniform(43, 0));
  // Golden values: inputs and weights must be the same on every machine and run.
  EXPECT_EQ(DeterministicUniform(1, 0), -0.26362096869666107);
  EXPECT_EQ(DeterministicUniform(123456789, 987654321), 0.31886193435503851);
}

TEST(TensorTest, InputsDifferPerIndexAndAreRoundedToDtype) {
  TensorDecl decl;
  decl.set_dtype(FLOAT32);
  decl.add_shape(2);
  decl.add_shape(3);
  HostTensor a = DeterministicInput(decl, 0), b = DeterministicInput(decl, 1);
  ASSERT_EQ(a.size(), 6);
  EXPECT_NE(a.data, b.data);
  for (double v : a.data) EXPECT_EQ(v, static_cast<double>(static_cast<float>(v)));
}

TEST(TensorTest, RandomParameterFollowsScaleAndOffset) {
  Parameter p;
  p.mutable_tensor()->set_dtype(FLOAT64);
  p.mutable_tensor()->add_shape(1000);
  p.mutable_random()->set_seed(7);
  p.mutable_random()->set_scale(0.5);
  p.mutable_random()->set_offset(3.0);
  StatusOr<HostTensor> t = MaterializeParameter(p);
  ASSERT_TRUE(t.ok());
  for (double v : t->data) {
    EXPECT_GE(v, 2.5);
    EXPECT_LT(v, 3.5);
  }
}

TEST(TensorTest, RawDataRoundTripsAndLengthIsChecked) {
  Parameter p;
  p.mutable_tensor()->set_name("c");
  p.mutable_tensor()->set_dtype(FLOAT32);
  p.mutable_tensor()->add_shape(2);
  float values[2] = {1.5f, -2.25f};
  p.set_raw_data(std::string(reinterpret_cast<const char*>(values), sizeof(values)));
  StatusOr<HostTensor> t = MaterializeParameter(p);
  ASSERT_TRUE(t.ok());
  EXPECT_EQ(t->data, (std::vector<double>{1.5, -2.25}));
  p.set_raw_data("abc");
  EXPECT_FALSE(MaterializeParameter(p).ok());
}

TEST(TensorTest, EncodedRawDataReadsBackRounded) {
  Parameter p;
  p.mutable_tensor()->set_dtype(FLOAT32);
  p.mutable_tensor()->add_shape(3);
  p.set_raw_data(EncodeRawData({0.1, -2.5, 1e30}, FLOAT32));
  EXPECT_EQ(p.raw_data().size(), 12u);
  StatusOr<HostTensor> t = MaterializeParameter(p);
  ASSERT_TRUE(t.ok());
  EXPECT_EQ(t->data,
            (std::vector<double>{static_cast<float>(0.1), -2.5, static_cast<float>(1e30)}));
  p.mutable_tensor()->set_dtype(FLOAT64);
  p.set_raw_data(EncodeRawData({0.1, -2.5, 1e30}, FLOAT64));
  t = MaterializeParameter(p);
  ASSERT_TRUE(t.ok());
  EXPECT_EQ(t->data, (std::vector<double>{0.1, -2.5, 1e30}));
}

TEST(TensorTest, MaterializedParametersKeepTheirValues) {
  PipelineSpec spec;
  Parameter* random = spec.add_parameters();
  random->mutable_tensor()->set_name("w");
  random->mutable_tensor()->set_dtype(FLOAT32);
  random->mutable_tensor()->add_shape(5);
  random->mutable_random()->set_seed(3);
  random->mutable_random()->set_scale(2.0);
  Parameter* raw = spec.add_parameters();
  raw->mutable_tensor()->set_name("c");
  raw->mutable_tensor()->set_dtype(FLOAT64);
  raw->mutable_tensor()->add_shape(1);
  raw->set_raw_data(EncodeRawData({7.0}, FLOAT64));
  const PipelineSpec materialized = WithMaterializedParameters(spec);
  ASSERT_EQ(materialized.parameters_size(), 2);
  const Parameter& w = materialized.parameters(0);
  EXPECT_EQ(w.tensor().name(), "w");
  ASSERT_EQ(w.init_case(), Parameter::kRawData);
  EXPECT_EQ(MaterializeParameter(w)->data, MaterializeParameter(*random)->data);
  EXPECT_EQ(materialized.parameters(1).raw_data(), raw->raw_data());
}

TEST(TensorTest, CompareUsesRelativeAndScaledAbsoluteTolerance) {
  HostTensor expected{FLOAT32, {3}, {100.0, 0.0, -5.0}};
  HostTensor actual = expected;
  Tolerance tol{1e-3, 1e-4};
  EXPECT_TRUE(CompareTensors(actual, expected, tol).match);
  actual.data[1] = 0.009;  // atol 1e-4 x max|expected| 100 = 0.01
  EXPECT_TRUE(CompareTensors(actual, expected, tol).match);
  actual.data[1] = 0.02;
  Comparison c = CompareTensors(actual, expected, tol);
  EXPECT_FALSE(c.match);
  EXPECT_EQ(c.mismatches, 1);
  EXPECT_EQ(c.worst_index, 1);
  EXPECT_NE(c.message.find("worst at flat index 1"), std::string::npos) << c.message;
  actual = expected;
  actual.data[2] = NAN;
  EXPECT_FALSE(CompareTensors(actual, expected, tol).match);
  HostTensor other_shape{FLOAT32, {1, 3}, expected.data};
  EXPECT_NE(CompareTensors(other_shape, expected, tol).message.find("shape"), std::string::npos);
}

TEST(TensorTest, ChecksumDependsOnValuesAndOrder) {
  HostTensor a{FLOAT32, {2}, {1.0, 2.0}};
  HostTensor b{FLOAT32, {2}, {2.0, 1.0}};
  EXPECT_EQ(TensorChecksum(a), TensorChecksum(a));
  EXPECT_NE(TensorChecksum(a), TensorChecksum(b));
  EXPECT_EQ(TensorChecksum(a).size(), 16u);
}

}  // namespace
}  // namespace schedfarm
