// Tests of how a proposal batch is shared among a campaign's pipelines: equal weights
// take turns, unequal ones are served in proportion over many batches, a weight of 0 is
// never served.
#include "search/batch_shares.h"

#include <gtest/gtest.h>

#include <numeric>
#include <vector>

namespace schedfarm {
namespace {

TEST(BatchSharesTest, EqualWeightsTakeTurns) {
  std::vector<double> credit;
  EXPECT_EQ(ShareBatch(3, {1, 1, 1}, &credit), (std::vector<int>{1, 1, 1}));
  EXPECT_EQ(ShareBatch(6, {1, 1, 1}, &credit), (std::vector<int>{2, 2, 2}));
  // Two proposals among five pipelines: every pipeline is served once in five batches.
  credit.clear();
  std::vector<int> served(5, 0);
  for (int batch = 0; batch < 5; ++batch) {
    const std::vector<int> shares = ShareBatch(2, std::vector<double>(5, 1), &credit);
    EXPECT_EQ(std::accumulate(shares.begin(), shares.end(), 0), 2);
    for (size_t p = 0; p < shares.size(); ++p) served[p] += shares[p];
  }
  EXPECT_EQ(served, (std::vector<int>{2, 2, 2, 2, 2}));
}

TEST(BatchSharesTest, WeightsAreServedInProportionAndZeroNever) {
  std::vector<double> credit;
  std::vector<int> served(4, 0);
  for (int batch = 0; batch < 100; ++batch) {
    const std::vector<int> shares = ShareBatch(4, {3, 1, 0, 4}, &credit);
    EXPECT_EQ(std::accumulate(shares.begin(), shares.end(), 0), 4);
    for (size_t p = 0; p < shares.size(); ++p) served[p] += shares[p];
  }
  EXPECT_EQ(served, (std::vector<int>{150, 50, 0, 200}));
  // Every weight 0 (every search exhausted): nothing to share.
  EXPECT_EQ(ShareBatch(4, {0, 0}, &credit), (std::vector<int>{0, 0}));
  EXPECT_EQ(credit.size(), 2u);
}

}  // namespace
}  // namespace schedfarm
