// Small networks shared by the tests of network/.
#pragma once

#include "common/status.h"
#include "schedfarm.pb.h"

namespace schedfarm {
namespace test_networks {

// A ResNet-like network: stem conv + relu, max pool, two residual blocks with the same
// shapes (conv, relu, conv, add, relu; different weights), a global average pool, a
// flatten and a linear layer. Tasks: stem, pool, 4 block convs (2 distinct: conv +
// relu, conv + add + relu, each twice), global pool + flatten, linear.
StatusOr<PipelineSpec> TinyResNet(int channels = 8, int size = 16);

// A MobileNetV2-like network: stem conv (stride 2) + relu, two inverted residual blocks
// with the same shapes (1x1 expansion to 4x the channels + relu, 3x3 depthwise + relu,
// 1x1 projection, residual add), a global average pool, a flatten and a linear layer.
// Tasks: stem, 6 block tasks (3 distinct, each twice), global pool + flatten, linear;
// fused (FUSION_BLOCKS): stem, 2 blocks (1 distinct), global pool, linear.
StatusOr<PipelineSpec> TinyMobileNet(int channels = 8, int size = 16);

}  // namespace test_networks
}  // namespace schedfarm
