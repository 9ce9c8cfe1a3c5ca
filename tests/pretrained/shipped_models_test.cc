// The pretrained models the repository ships in data/models/, as a campaign takes them:
// each file reads back, is of the learner's current feature schema (a change of the
// schema fails here, naming ops/pretrain.sh, the one way they are rebuilt), loads into
// a model of its kind, and predicts a positive, finite time for a random schedule of
// every zoo block.
#include <gtest/gtest.h>

#include <cmath>
#include <memory>
#include <string>
#include <vector>

#include "learner/features.h"
#include "learner/kinds/model_kinds.h"
#include "pipeline/graph.h"
#include "pipeline/zoo.h"
#include "pretrained/pretrained.h"
#include "scheduler/schedule_space.h"

namespace schedfarm {
namespace {

TEST(ShippedModelsTest, EachIsOfTheCurrentSchemaLoadsAndPredicts) {
  const std::string dir = std::string(SCHEDFARM_SOURCE_DIR) + "/data/models";
  const std::vector<std::string> names = PretrainedNames(dir);
  ASSERT_FALSE(names.empty()) << "no pretrained models in " << dir;

  // One random complete schedule of every zoo block, featurized.
  std::vector<PipelineFeatures> features;
  for (const std::string& block : ZooNames()) {
    StatusOr<PipelineSpec> spec = MakeZooBlock(block);
    ASSERT_TRUE(spec.ok()) << block << ": " << spec.status().ToString();
    StatusOr<PipelineGraph> graph = PipelineGraph::Build(*spec);
    ASSERT_TRUE(graph.ok()) << block << ": " << graph.status().ToString();
    const ScheduleSpace space(*graph);
    const Featurizer featurizer(space);
    features.emplace_back();
    const Status featurized =
        featurizer.Featurize(space.RandomCompletion(space.Empty(), 1), &features.back());
    ASSERT_TRUE(featurized.ok()) << block << ": " << featurized.ToString();
  }
  std::vector<const PipelineFeatures*> batch;
  for (const PipelineFeatures& f : features) batch.push_back(&f);

  for (const std::string& name : names) {
    StatusOr<PretrainedModel> shipped = ReadPretrained(PretrainedPath(dir, name));
    ASSERT_TRUE(shipped.ok()) << shipped.status().ToString();
    const Model& model = shipped->model();
    ASSERT_EQ(model.feature_schema_version(), CurrentFeatureSchema().version)
        << "data/models/" << name << " is of feature schema " << model.feature_schema_version()
        << " and the learner's is " << CurrentFeatureSchema().version
        << ": rebuild the shipped models with ops/pretrain.sh";
    StatusOr<std::unique_ptr<PerformanceModel>> made = MakePerformanceModel(model.kind());
    ASSERT_TRUE(made.ok()) << name << ": " << made.status().ToString();
    const Status loaded = (*made)->Load(model.weights());
    ASSERT_TRUE(loaded.ok()) << name << ": " << loaded.ToString();
    StatusOr<std::vector<RuntimePrediction>> predicted = (*made)->Predict(batch);
    ASSERT_TRUE(predicted.ok()) << name << ": " << predicted.status().ToString();
    ASSERT_EQ(predicted->size(), batch.size()) << name;
    for (size_t i = 0; i < predicted->size(); ++i) {
      const double seconds = (*predicted)[i].mean_seconds;
      EXPECT_TRUE(std::isfinite(seconds) && seconds > 0)
          << name << " on " << ZooNames()[i] << ": " << seconds;
    }
  }
}

}  // namespace
}  // namespace schedfarm
