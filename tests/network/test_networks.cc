#include "tests/network/test_networks.h"

#include "pipeline/builder.h"

namespace schedfarm {
namespace test_networks {

StatusOr<PipelineSpec> TinyResNet(int channels, int size) {
  PipelineBuilder b("tiny_resnet");
  std::string x = b.Input("image", {1, 3, size, size});
  x = b.Relu(b.Conv2d(x, channels, 3, 1, 1));
  x = b.MaxPool2d(x, 2, 2);
  for (int block = 0; block < 2; ++block) {
    const std::string y = b.Relu(b.Conv2d(x, channels, 3, 1, 1));
    x = b.Relu(b.Add(b.Conv2d(y, channels, 3, 1, 1), x));
  }
  x = b.Flatten(b.GlobalAvgPool(x));
  b.Output(b.Linear(x, 10));
  return b.Finish();
}

StatusOr<PipelineSpec> TinyMobileNet(int channels, int size) {
  PipelineBuilder b("tiny_mobilenet");
  std::string x = b.Input("image", {1, 3, size, size});
  x = b.Relu(b.Conv2d(x, channels, 3, 2, 1));
  for (int block = 0; block < 2; ++block) {
    std::string y = b.Relu(b.Conv2d(x, 4 * channels, 1, 1, 0));
    y = b.Relu(b.DepthwiseConv2d(y, 3, 1, 1));
    x = b.Add(b.Conv2d(y, channels, 1, 1, 0), x);
  }
  x = b.Flatten(b.GlobalAvgPool(x));
  b.Output(b.Linear(x, 10));
  return b.Finish();
}

}  // namespace test_networks
}  // namespace schedfarm
