// ranking_test: a family's candidates, the best of every group first, within the limit, ordered by estimate.
#include "generator/ranking.hpp"

#include <string>

#include <gtest/gtest.h>

namespace convgen {
namespace {

TEST(Ranking, TakesTheBestOfEveryGroupBeforeTheSecondBestOfAnyAndOrdersThemByEstimate) {
  std::vector<std::vector<Estimated<std::string>>> groups = {
      {{3.0, "a2"}, {1.0, "a1"}, {5.0, "a3"}},  // unsorted: sorted by estimate first
      {{2.0, "b1"}},
      {{4.0, "c1"}, {4.5, "c2"}},
  };
  EXPECT_EQ(best_of_every_group_first(groups, 3), (std::vector<std::string>{"a1", "b1", "c1"}));
  // The second round, by estimate: a2 (3.0) before c2 (4.5); then ordered by estimate overall.
  EXPECT_EQ(best_of_every_group_first(groups, 4), (std::vector<std::string>{"a1", "b1", "a2", "c1"}));
  EXPECT_EQ(best_of_every_group_first(groups, 10), (std::vector<std::string>{"a1", "b1", "a2", "c1", "c2", "a3"}));
  EXPECT_TRUE(best_of_every_group_first(groups, 0).empty());
  EXPECT_TRUE(best_of_every_group_first(std::vector<std::vector<Estimated<std::string>>>{}, 5).empty());
}

TEST(Ranking, EqualEstimatesKeepTheirGroupOrder) {
  std::vector<std::vector<Estimated<int>>> groups = {{{1.0, 10}, {1.0, 11}}, {{1.0, 20}}};
  EXPECT_EQ(best_of_every_group_first(groups, 3), (std::vector<int>{10, 20, 11}));
}

}  // namespace
}  // namespace convgen
