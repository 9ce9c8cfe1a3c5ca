// The threads Torch computes with.
#include <ATen/Parallel.h>

#include "learner/torch/torch_models.h"

namespace schedfarm {

int TorchThreads() { return at::get_num_threads(); }

void SetTorchThreads(int threads) {
  if (threads <= 0) return;
  at::set_num_threads(threads);
}

}  // namespace schedfarm
