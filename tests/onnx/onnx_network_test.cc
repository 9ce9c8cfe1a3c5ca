// Whole networks exported by PyTorch (tests/onnx/export_torchvision.py, run as a
// ctest fixture): each is imported, run with the reference Halide schedule on the
// exported input and compared with libtorch's output.
#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <filesystem>
#include <iostream>

#include "pipeline/graph.h"
#include "pipeline/halide/runner.h"
#include "pipeline/onnx/onnx_import.h"

#ifndef SCHEDFARM_ONNX_NETWORK_DIR
#error "SCHEDFARM_ONNX_NETWORK_DIR must name the directory the export script writes"
#endif

namespace schedfarm {
namespace {

namespace fs = std::filesystem;

// f32 accumulation order differs between libtorch (blocked, vectorized convolutions)
// and the reference schedule (sequential loops). Measured: ResNet-18 logits (max
// |y| ~5) within 5e-6, MobileNetV2 logits (max |y| ~0.13) within 2e-7.
constexpr Tolerance kNetworkTolerance = {/*rtol=*/1e-4, /*atol=*/1e-5};

double SecondsSince(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

struct Network {
  const char* name;
  int min_stages;  // a sanity bound on the imported pipeline's size
};

void PrintTo(const Network& net, std::ostream* os) { *os << net.name; }

class OnnxNetworkTest : public ::testing::TestWithParam<Network> {};

TEST_P(OnnxNetworkTest, MatchesLibtorch) {
  const Network& net = GetParam();
  const fs::path dir = fs::path(SCHEDFARM_ONNX_NETWORK_DIR) / net.name;
  ASSERT_TRUE(fs::exists(dir / "model.onnx")) << "run export_torchvision.py first";

  auto start = std::chrono::steady_clock::now();
  StatusOr<PipelineSpec> spec = ImportOnnxFile((dir / "model.onnx").string());
  ASSERT_TRUE(spec.ok()) << spec.status().message();
  const double import_seconds = SecondsSince(start);
  StatusOr<PipelineGraph> graph = PipelineGraph::Build(*spec);
  ASSERT_TRUE(graph.ok()) << graph.status().message();
  EXPECT_GE(graph->num_stages(), net.min_stages);
  ASSERT_EQ(spec->inputs_size(), 1);
  ASSERT_EQ(spec->outputs_size(), 1);

  StatusOr<HostTensor> input = ReadOnnxTensorFile((dir / "test_data_set_0/input_0.pb").string());
  ASSERT_TRUE(input.ok()) << input.status().message();
  StatusOr<HostTensor> expected =
      ReadOnnxTensorFile((dir / "test_data_set_0/output_0.pb").string());
  ASSERT_TRUE(expected.ok()) << expected.status().message();

  RunOptions options;
  options.timing_samples = 1;
  start = std::chrono::steady_clock::now();
  StatusOr<RunResult> run = RunReference(*graph, options, {*input});
  ASSERT_TRUE(run.ok()) << run.status().message();
  const double run_total_seconds = SecondsSince(start);
  ASSERT_EQ(run->outputs.size(), 1u);
  Comparison c = CompareTensors(run->outputs[0], *expected, kNetworkTolerance);
  double max_expected = 0;
  for (double v : expected->data) max_expected = std::max(max_expected, std::fabs(v));
  std::cout << net.name << ": " << graph->num_stages() << " stages, " << spec->parameters_size()
            << " parameters; import " << import_seconds << " s, Halide compile "
            << run->compile_seconds << " s, one run " << run->min_seconds
            << " s (lower+compile+run " << run_total_seconds << " s); max |error| "
            << c.max_abs_error << ", max |expected| " << max_expected << "\n";
  EXPECT_TRUE(c.match) << c.message;
}

INSTANTIATE_TEST_SUITE_P(PyTorch, OnnxNetworkTest,
                         ::testing::Values(Network{"resnet18", 30}, Network{"mobilenet_v2", 60},
                                           Network{"transformer_encoder", 20}),
                         [](const ::testing::TestParamInfo<Network>& info) {
                           return std::string(info.param.name);
                         });

}  // namespace
}  // namespace schedfarm
