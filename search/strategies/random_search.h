// random: uniform samples of the schedule space. Sample i of a stream is
// RandomSchedule(MixSeed(seed, i)); samples already known are skipped, and the stream
// is exhausted after kMaxRepeats known samples in a row. Given a pool (a replay
// campaign), sample i is the i-th schedule of the pool in an order shuffled by the
// seed, and the stream is exhausted at the pool's end. The coordinator proposes a
// random campaign's candidates with one stream per pipeline and keeps each stream's
// position in its store, so a restarted coordinator goes on with the same schedules;
// PipelineSearch draws its epsilon share and its fallback from one too.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "search/search_strategy.h"

namespace schedfarm {

class RandomSearch : public SearchStrategy {
 public:
  static constexpr int kMaxRepeats = 64;

  std::string name() const override { return "random"; }
  Status Init(const SearchContext& context) override;
  StatusOr<std::vector<SearchProposal>> Propose(int n) override;
  void Notify(const std::vector<SearchResult>&) override {}
  bool Exhausted() const override { return exhausted_; }

  // The index of the next sample of the stream.
  uint64_t position() const { return position_; }
  void set_position(uint64_t position) { position_ = position; }

 private:
  const ScheduleSpace* space_ = nullptr;
  uint64_t seed_ = 0;
  std::function<bool(const std::string&)> known_;
  const std::vector<PoolSchedule>* pool_ = nullptr;
  std::vector<size_t> pool_order_;  // a permutation of the pool
  uint64_t position_ = 0;
  bool exhausted_ = false;
};

}  // namespace schedfarm
