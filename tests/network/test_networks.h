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

}  // namespace test_networks
}  // namespace schedfarm
