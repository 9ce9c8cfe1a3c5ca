#include "learner/model_evaluation.h"

#include <string>

namespace schedfarm {

StatusOr<Sample> SampleOf(const Measurement& m, const Featurizer& featurizer) {
  Sample sample;
  sample.pipeline_id = m.candidate().pipeline_id();
  sample.schedule_hash = m.candidate().schedule_hash();
  sample.seconds = m.stats().median_seconds();
  sample.stddev_seconds = m.stats().stddev_seconds();
  SCHEDFARM_RETURN_IF_ERROR(featurizer.Featurize(m.candidate().schedule(), &sample.features));
  return sample;
}

StatusOr<EvalMetrics> EvaluateModel(const PerformanceModel& model,
                                    const std::vector<Sample>& samples) {
  std::vector<const PipelineFeatures*> features;
  std::vector<std::string> ids;
  std::vector<double> truth;
  features.reserve(samples.size());
  for (const Sample& s : samples) {
    features.push_back(&s.features);
    ids.push_back(s.pipeline_id);
    truth.push_back(s.seconds);
  }
  auto predictions = model.Predict(features);
  if (!predictions.ok()) {
    return predictions.status().WithContext("evaluating model '" + model.kind() + "'");
  }
  if (predictions->size() != samples.size()) {
    return Status::Error("evaluating model '" + model.kind() +
                         "': " + std::to_string(predictions->size()) + " predictions for " +
                         std::to_string(samples.size()) + " samples");
  }
  std::vector<double> pred;
  pred.reserve(samples.size());
  for (const RuntimePrediction& p : *predictions) pred.push_back(p.mean_seconds);
  auto metrics = ComputeMetrics(ids, truth, pred);
  if (!metrics.ok()) {
    return metrics.status().WithContext("evaluating model '" + model.kind() + "'");
  }
  return metrics;
}

Status SplitSamples(const std::vector<Sample>& samples, const PipelineSplit& split,
                    std::vector<Sample>* train, std::vector<Sample>* held_out) {
  train->clear();
  held_out->clear();
  for (size_t i = 0; i < samples.size(); ++i) {
    const std::string& id = samples[i].pipeline_id;
    if (split.IsHeldOut(id)) {
      held_out->push_back(samples[i]);
    } else if (split.IsTrain(id)) {
      train->push_back(samples[i]);
    } else {
      return Status::Error("split samples: sample " + std::to_string(i) + " of pipeline '" + id +
                           "' is on neither side of the split (made for another dataset?)");
    }
  }
  return Status::Ok();
}

}  // namespace schedfarm
