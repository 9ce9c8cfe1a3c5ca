// LANN (the lightweight augmented network of Srivastava et al. 2020): per schedule, the sums over
// the stages of every feature column plus the analytic operation count (the
// "augmentation"), each signed-log1p'd and z-scored with training statistics, go
// through Linear(inputs, hidden), ReLU, Linear(hidden, 1) to the z-scored log runtime.
// MSE, Adam, full batch.
#include "learner/torch/lann.h"

#include <algorithm>
#include <cmath>
#include <memory>
#include <utility>

namespace schedfarm {
namespace torch_models {

torch::Tensor LannModel::Aggregate(const std::vector<const PipelineFeatures*>& features) const {
  const int64_t inv = invariant_columns(), dep = dependent_columns();
  torch::Tensor rows = torch::zeros({static_cast<int64_t>(features.size()), inputs()},
                                    torch::TensorOptions().dtype(torch::kDouble));
  double* row = rows.data_ptr<double>();
  for (const PipelineFeatures* f : features) {
    for (int64_t s = 0; s < f->num_stages; ++s) {
      for (int64_t c = 0; c < inv; ++c) row[c] += f->invariant[s * inv + c];
      for (int64_t c = 0; c < dep; ++c) row[inv + c] += f->dependent[s * dep + c];
    }
    row[inv + dep] = f->flops;
    row += inputs();
  }
  return SignedLog1p(rows).to(torch::kFloat);
}

Status LannModel::CheckOptions(const LannOptions& o) {
  if (o.hidden < 1 || o.epochs < 1 || o.ensemble < 1 || !(o.learning_rate > 0)) {
    return Status::Error(
        "hidden, epochs and ensemble must be at least 1 and the learning "
        "rate positive");
  }
  return Status::Ok();
}

Status LannModel::TrainMembers(const std::vector<Sample>& train, const MemberPlan& plan) {
  SCHEDFARM_RETURN_IF_ERROR(CheckOptions(options_));
  std::vector<const PipelineFeatures*> features;
  std::vector<double> log_seconds;
  for (const Sample& s : train) {
    features.push_back(&s.features);
    log_seconds.push_back(std::log(s.seconds));
  }
  const torch::Tensor raw = Aggregate(features);
  const ColumnStats input_stats = ColumnStats::Fit(raw, inputs());
  const torch::Tensor x = input_stats.Apply(raw);
  const torch::Tensor logs = torch::tensor(log_seconds, torch::kDouble);
  const double log_mean = logs.mean().item<double>();
  const double log_stddev = std::max(logs.std(/*unbiased=*/false).item<double>(), 1e-6);
  const torch::Tensor y = ((logs - log_mean) / log_stddev).to(torch::kFloat);

  std::vector<LannNet> members;
  for (int k = 0; k < plan.members; ++k) {
    torch::manual_seed(plan.seed + k);
    LannNet net(inputs(), options_.hidden);
    torch::optim::Adam optimizer(
        net->parameters(),
        torch::optim::AdamOptions(options_.learning_rate * plan.learning_rate_scale));
    const MemberBudget budget(plan, k);
    for (int step = 0; step < plan.epochs && (step == 0 || !budget.Expired()); ++step) {
      const torch::Tensor loss = torch::mse_loss(net->forward(x), y);
      optimizer.zero_grad();
      loss.backward();
      optimizer.step();
      if (!std::isfinite(loss.item<float>())) {
        return Status::Error("member " + std::to_string(k) + " diverged at step " +
                             std::to_string(step));
      }
    }
    net->eval();
    members.push_back(net);
  }
  members_ = std::move(members);
  input_stats_ = input_stats;
  log_mean_ = log_mean;
  log_stddev_ = log_stddev;
  return Status::Ok();
}

torch::Tensor LannModel::PredictMembers(
    const std::vector<const PipelineFeatures*>& features) const {
  const torch::Tensor x = input_stats_.Apply(Aggregate(features));
  std::vector<torch::Tensor> seconds;
  for (LannNet net : members_) {
    seconds.push_back((net->forward(x).to(torch::kDouble) * log_stddev_ + log_mean_)
                          .clamp(-kMaxLannLogSeconds, kMaxLannLogSeconds)
                          .exp());
  }
  return torch::stack(seconds, 0);
}

void LannModel::SaveBody(torch::serialize::OutputArchive& archive) const {
  WriteOptions(archive, options_);
  archive.write("input_mean", input_stats_.mean);
  archive.write("input_std", input_stats_.stddev);
  archive.write("log_mean", c10::IValue(log_mean_));
  archive.write("log_std", c10::IValue(log_stddev_));
  WriteMembers(archive, members_);
}

Status LannModel::LoadBody(torch::serialize::InputArchive& archive) {
  SCHEDFARM_ASSIGN_OR_RETURN(LannOptions options, ReadOptions<LannOptions>(archive));
  SCHEDFARM_RETURN_IF_ERROR(CheckOptions(options));
  ColumnStats input_stats;
  SCHEDFARM_ASSIGN_OR_RETURN(input_stats.mean, ReadTensor(archive, "input_mean", {inputs()}));
  SCHEDFARM_ASSIGN_OR_RETURN(input_stats.stddev, ReadTensor(archive, "input_std", {inputs()}));
  SCHEDFARM_ASSIGN_OR_RETURN(double log_mean, ReadDouble(archive, "log_mean"));
  SCHEDFARM_ASSIGN_OR_RETURN(double log_stddev, ReadDouble(archive, "log_std"));
  SCHEDFARM_ASSIGN_OR_RETURN(std::vector<LannNet> members, ReadMembers<LannNet>(archive, [&] {
                               return LannNet(inputs(), options.hidden);
                             }));
  options_ = options;
  members_ = std::move(members);
  input_stats_ = input_stats;
  log_mean_ = log_mean;
  log_stddev_ = log_stddev;
  return Status::Ok();
}

}  // namespace torch_models

std::unique_ptr<PerformanceModel> MakeLannModel(const LannOptions& options,
                                                const FeatureSchema& schema) {
  return std::make_unique<torch_models::LannModel>(options, schema);
}

}  // namespace schedfarm
