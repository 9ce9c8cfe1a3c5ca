#include "search/strategies/random_search.h"

#include <unordered_set>

#include "search/factories.h"

namespace schedfarm {

Status RandomSearch::Init(const SearchContext& context) {
  if (context.space == nullptr) return Status::Error("random search: no schedule space");
  space_ = context.space;
  seed_ = context.seed;
  known_ = context.known;
  pool_ = context.pool;
  if (pool_ != nullptr) {
    pool_order_.resize(pool_->size());
    SpaceRng rng(MixSeed(seed_, 0x706f6f6c));  // "pool"
    for (size_t i = 0; i < pool_order_.size(); ++i) {
      const size_t j = rng.Below(i + 1);  // Fisher-Yates, inside out
      pool_order_[i] = pool_order_[j];
      pool_order_[j] = i;
    }
  }
  return Status::Ok();
}

StatusOr<std::vector<SearchProposal>> RandomSearch::Propose(int n) {
  std::vector<SearchProposal> out;
  std::unordered_set<std::string> batch;
  int repeats = 0;
  while (static_cast<int>(out.size()) < n && !exhausted_) {
    SearchProposal proposal;
    if (pool_ != nullptr) {
      if (position_ >= pool_order_.size()) {
        exhausted_ = true;
        break;
      }
      const PoolSchedule& pooled = (*pool_)[pool_order_[position_++]];
      proposal.schedule = pooled.schedule;
      proposal.hash = pooled.hash;
    } else {
      proposal.schedule = space_->RandomSchedule(MixSeed(seed_, position_++));
      proposal.hash = ScheduleHash(*space_, proposal.schedule);
    }
    if ((known_ && known_(proposal.hash)) || !batch.insert(proposal.hash).second) {
      exhausted_ = pool_ == nullptr && ++repeats >= kMaxRepeats;
      continue;
    }
    repeats = 0;
    out.push_back(std::move(proposal));
  }
  return out;
}

std::unique_ptr<SearchStrategy> MakeRandomSearch() { return std::make_unique<RandomSearch>(); }

}  // namespace schedfarm
