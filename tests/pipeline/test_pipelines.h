// Small pipelines shared by the pipeline tests.
#pragma once

#include "pipeline/builder.h"

namespace schedfarm {

// x [1,3,16,16] -> conv 3x3 (8 channels, pad 1) -> relu -> max pool 2x2 -> output.
inline PipelineSpec SmallConvPipeline() {
  PipelineBuilder b("small_conv");
  auto x = b.Input("x", {1, 3, 16, 16});
  auto y = b.MaxPool2d(b.Relu(b.Conv2d(x, 8, 3, 1, 1)), 2, 2);
  b.Output(y);
  return b.Finish().value();
}

}  // namespace schedfarm
