// The models by kind name, and the threads Torch computes with.
#include <ATen/Parallel.h>

#include <memory>
#include <string>

#include "learner/torch/torch_models.h"

namespace schedfarm {

StatusOr<std::unique_ptr<PerformanceModel>> MakeTorchModel(const std::string& kind) {
  if (kind == "gcn") return MakeGcnModel();
  if (kind == "gcn0") {
    GcnOptions options;
    options.layers = 0;
    return MakeGcnModel(options);
  }
  if (kind == "gcn-rank") {
    GcnOptions options;
    options.loss = Loss::kRank;
    return MakeGcnModel(options);
  }
  if (kind == "sage") return MakeSageModel();
  if (kind == "lann") return MakeLannModel();
  if (kind == "bilstm") return MakeBilstmModel();
  return Status::Error("unknown Torch model kind '" + kind +
                       "' (known: gcn, gcn-rank, gcn0, sage, lann, bilstm)");
}

int TorchThreads() { return at::get_num_threads(); }

void SetTorchThreads(int threads) {
  if (threads > 0) at::set_num_threads(threads);
}

}  // namespace schedfarm
