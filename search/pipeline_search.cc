#include "search/pipeline_search.h"

namespace schedfarm {

PipelineSearch::PipelineSearch(const ScheduleSpace& space, Options options)
    : space_(space), options_(std::move(options)), epsilon_rng_(MixSeed(options_.seed, 2)) {}

StatusOr<std::unique_ptr<PipelineSearch>> PipelineSearch::Create(const ScheduleSpace& space,
                                                                  const Options& options) {
  SCHEDFARM_RETURN_IF_ERROR(MakeSearchStrategy(options.strategy).status());
  std::unique_ptr<PipelineSearch> search(new PipelineSearch(space, options));
  SCHEDFARM_ASSIGN_OR_RETURN(search->acquisition_,
                             MakeAcquisition(options.acquisition, options.settings));
  SearchContext context;
  context.space = &space;
  context.seed = MixSeed(options.seed, 3);
  PipelineSearch* self = search.get();
  context.known = [self](const std::string& hash) { return self->Known(hash); };
  context.pool = self->options_.pool.empty() ? nullptr : &self->options_.pool;
  SCHEDFARM_RETURN_IF_ERROR(search->random_.Init(context));
  return search;
}

Status PipelineSearch::SetModel(std::unique_ptr<CostModel> model) {
  strategy_.reset();
  model_ = std::move(model);
  if (model_ == nullptr) return Status::Ok();
  SCHEDFARM_ASSIGN_OR_RETURN(std::unique_ptr<SearchStrategy> strategy,
                             MakeSearchStrategy(options_.strategy));
  SearchContext context;
  context.space = &space_;
  context.model = model_.get();
  context.acquisition = acquisition_.get();
  context.seed = options_.seed;
  context.settings = options_.settings;
  context.known = [this](const std::string& hash) { return Known(hash); };
  context.pool = options_.pool.empty() ? nullptr : &options_.pool;
  SCHEDFARM_RETURN_IF_ERROR(strategy->Init(context));
  strategy->Notify(results_);
  strategy_ = std::move(strategy);
  return Status::Ok();
}

void PipelineSearch::MarkKnown(const std::string& hash) { known_.insert(hash); }

void PipelineSearch::Notify(const SearchResult& result) {
  known_.insert(result.hash);
  results_.push_back(result);
  if (strategy_) strategy_->Notify({result});
}

Candidate ProposalCandidate(const std::string& pipeline_id, SearchProposal proposal,
                            const std::string& origin, const std::string& model_version) {
  Candidate candidate;
  candidate.set_pipeline_id(pipeline_id);
  proposal.schedule.set_pipeline_id(pipeline_id);
  *candidate.mutable_schedule() = std::move(proposal.schedule);
  candidate.set_schedule_hash(std::move(proposal.hash));
  candidate.set_origin(origin);
  if (proposal.predicted) {
    candidate.set_model_version(model_version);
    candidate.mutable_prediction()->set_mean_seconds(proposal.prediction.mean_seconds);
    candidate.mutable_prediction()->set_stddev_seconds(proposal.prediction.stddev_seconds);
    candidate.set_acquisition(std::move(proposal.acquisition));
    candidate.set_acquisition_score(proposal.acquisition_score);
  }
  candidate.set_sampled_stages(proposal.sampled_stages);
  return candidate;
}

Candidate PipelineSearch::MakeCandidate(SearchProposal proposal, const std::string& origin) const {
  return ProposalCandidate(space_.pipeline_id(), std::move(proposal), origin,
                           model_ ? model_->version() : "");
}

bool PipelineSearch::ProposeRandom(std::vector<Candidate>* out) {
  StatusOr<std::vector<SearchProposal>> one = random_.Propose(1);
  if (!one.ok() || one->empty()) return false;
  known_.insert((*one)[0].hash);
  out->push_back(MakeCandidate(std::move((*one)[0]), random_.name()));
  return true;
}

std::vector<Candidate> PipelineSearch::Propose(int n, std::string* failure) {
  failure->clear();
  std::vector<Candidate> out;
  // Which of the n slots are the epsilon share of random candidates.
  int guided = 0;
  for (int i = 0; i < n; ++i) {
    guided += strategy_ && epsilon_rng_.Unit() >= options_.epsilon ? 1 : 0;
  }
  if (guided > 0) {
    StatusOr<std::vector<SearchProposal>> proposals = strategy_->Propose(guided);
    if (!proposals.ok()) {
      *failure = "strategy '" + options_.strategy + "' under model " + model_->version() +
                 " failed: " + proposals.status().message();
      strategy_.reset();  // random proposals until the next model
    } else {
      for (SearchProposal& proposal : *proposals) {
        if (Known(proposal.hash)) continue;
        known_.insert(proposal.hash);
        out.push_back(MakeCandidate(std::move(proposal), options_.strategy));
      }
    }
  }
  while (static_cast<int>(out.size()) < n && ProposeRandom(&out)) {
  }
  return out;
}

bool PipelineSearch::Exhausted() const {
  return random_.Exhausted() && (strategy_ == nullptr || strategy_->Exhausted());
}

}  // namespace schedfarm
