// The model zoo: real network blocks as PipelineSpecs, parameterized in size. The
// default sizes make one run of the reference schedule take roughly 1-50 ms on a
// 2-core machine.
#pragma once

#include <string>
#include <vector>

#include "common/status.h"
#include "schedfarm.pb.h"

namespace schedfarm {

struct ZooOptions {
  // Multiplies the default spatial size (and sequence length); 1.0 is the default.
  double spatial_scale = 1.0;
  // Multiplies the default channel counts (and hidden sizes).
  double channel_scale = 1.0;
  int64_t batch = 1;
  DataType dtype = FLOAT32;
  MathMode math = EXACT;
  uint64_t weight_seed = 1;
};

// Names of the zoo blocks, e.g. "resnet18_basic", "mobilenetv2_inverted_residual".
std::vector<std::string> ZooNames();
// One-line description of a block (what it is, its default size).
std::string ZooDescription(const std::string& name);
// The block, or an error naming the unknown block and listing the known ones.
StatusOr<PipelineSpec> MakeZooBlock(const std::string& name, const ZooOptions& options = {});

}  // namespace schedfarm
