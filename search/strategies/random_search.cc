#include "search/strategies/random_search.h"

#include <unordered_set>

#include "search/factories.h"

namespace schedfarm {

Status RandomSearch::Init(const SearchContext& context) {
  if (context.space == nullptr) return Status::Error("random search: no schedule space");
  space_ = context.space;
  seed_ = context.seed;
  known_ = context.known;
  return Status::Ok();
}

StatusOr<std::vector<SearchProposal>> RandomSearch::Propose(int n) {
  std::vector<SearchProposal> out;
  std::unordered_set<std::string> batch;
  int repeats = 0;
  while (static_cast<int>(out.size()) < n && !exhausted_) {
    SearchProposal proposal;
    proposal.schedule = space_->RandomSchedule(MixSeed(seed_, position_++));
    proposal.hash = ScheduleHash(*space_, proposal.schedule);
    if ((known_ && known_(proposal.hash)) || !batch.insert(proposal.hash).second) {
      exhausted_ = ++repeats >= kMaxRepeats;
      continue;
    }
    repeats = 0;
    out.push_back(std::move(proposal));
  }
  return out;
}

std::unique_ptr<SearchStrategy> MakeRandomSearch() { return std::make_unique<RandomSearch>(); }

}  // namespace schedfarm
