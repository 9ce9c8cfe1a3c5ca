// Pipelines that reach every op of the IR and the attribute corners the random
// generator avoids (ceil-mode pools with padding, dilated pools, 1-d/3-d grouped convs,
// negative slice steps, every unary function), for the tests that check one evaluation
// of pipelines against another: the Halide lowering against the libtorch oracle, and
// the frozen TorchScript module against the oracle.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "pipeline/builder.h"
#include "schedfarm.pb.h"

namespace schedfarm {

Attributes PoolAttrs(PoolFn fn, const std::vector<int64_t>& kernel,
                     const std::vector<int64_t>& strides, const std::vector<int64_t>& pads,
                     const std::vector<int64_t>& dilations, bool ceil_mode, bool count_include_pad);

// One coverage pipeline: what its stages cover, its dtype and math mode.
struct OpCoverageCase {
  std::string name;
  DataType dtype;
  MathMode math;
};

// The stages of each coverage pipeline by name ("pool", "conv", "matmul",
// "data_movement", "reduce_binary", "unary"), added to a builder.
const std::map<std::string, std::function<void(PipelineBuilder&)>>& OpCoverageBuilders();
// Every pipeline in f32 and, where more precision tells more, in f64 and Padé math.
std::vector<OpCoverageCase> OpCoverageCases();
// A case's test name, e.g. "pool_f32_exact".
std::string OpCoverageCaseName(const testing::TestParamInfo<OpCoverageCase>& info);

}  // namespace schedfarm
