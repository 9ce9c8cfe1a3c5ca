// Every performance model kind made by name, in one table: for each kind of the search
// registry's ModelKinds() (what a campaign must know of a kind without linking it:
// what its partial predictions mean, its spread, its warm start) how to make it and
// whether it exports as TorchScript. farm-learner, farm-model-export, the benchmarks
// and the tests make their models here and nowhere else. Links Torch and XGBoost.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "common/status.h"
#include "learner/model.h"

namespace schedfarm {

struct ModelMaker {
  std::string name;  // as in ModelKinds()
  // Untrained, with the kind's default options and the feature schema of this build.
  std::unique_ptr<PerformanceModel> (*make)() = nullptr;
  bool exports_torchscript = false;  // ExportTorchScript takes it
};

// In the order of ModelKinds(), one per kind.
const std::vector<ModelMaker>& ModelMakers();

// The maker of `kind`; an error naming the known kinds otherwise.
StatusOr<const ModelMaker*> ModelMakerNamed(const std::string& kind);

// The model of `kind`, untrained; an error naming the known kinds otherwise.
StatusOr<std::unique_ptr<PerformanceModel>> MakePerformanceModel(const std::string& kind);

}  // namespace schedfarm
