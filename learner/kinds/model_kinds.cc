#include "learner/kinds/model_kinds.h"

#include "learner/gbt/gbt_model.h"
#include "learner/roofline.h"
#include "learner/torch/torch_models.h"
#include "search/registry.h"

namespace schedfarm {
namespace {

std::unique_ptr<PerformanceModel> MakeGcn0() {
  GcnOptions options;
  options.layers = 0;
  return MakeGcnModel(options);
}

std::unique_ptr<PerformanceModel> MakeGcnRank() {
  GcnOptions options;
  options.loss = Loss::kRank;
  return MakeGcnModel(options);
}

}  // namespace

const std::vector<ModelMaker>& ModelMakers() {
  static const std::vector<ModelMaker> makers = {
      {"gcn", [] { return MakeGcnModel(); }, true},
      {"gcn-rank", MakeGcnRank, true},
      {"sage", [] { return MakeSageModel(); }, true},
      {"gcn0", MakeGcn0, true},
      {"lann", [] { return MakeLannModel(); }, true},
      {"bilstm", [] { return MakeBilstmModel(); }, true},
      {"gbt", [] { return std::unique_ptr<PerformanceModel>(std::make_unique<GbtModel>()); },
       false},
      {"roofline",
       [] { return std::unique_ptr<PerformanceModel>(std::make_unique<RooflineModel>()); },
       false},
  };
  return makers;
}

StatusOr<const ModelMaker*> ModelMakerNamed(const std::string& kind) {
  SCHEDFARM_RETURN_IF_ERROR(ModelKindNamed(kind).status());
  for (const ModelMaker& maker : ModelMakers()) {
    if (maker.name == kind) return &maker;
  }
  return Status::Error("model kind '" + kind + "' has no maker (learner/kinds/model_kinds.cc)");
}

StatusOr<std::unique_ptr<PerformanceModel>> MakePerformanceModel(const std::string& kind) {
  SCHEDFARM_ASSIGN_OR_RETURN(const ModelMaker* maker, ModelMakerNamed(kind));
  return maker->make();
}

}  // namespace schedfarm
