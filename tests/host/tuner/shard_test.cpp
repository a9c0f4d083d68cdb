// shard_test: the cost-balanced split of tuning jobs, --shard parsing, {shard} in paths and the launchers' variables.
#include "tuner/shard.hpp"

#include <algorithm>
#include <map>
#include <numeric>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "convgen/error.hpp"

namespace convgen {
namespace {

// Jobs with made-up costs: a few dear ones and a long tail, as a network's layers are.
std::vector<ShardJob> sample_jobs() {
  std::vector<ShardJob> jobs;
  for (int i = 0; i < 53; ++i)
    jobs.push_back({.key = fmt::format("layer{:02}", i), .cost = 2.0 + (i % 7 == 0 ? 40.0 : 0.0) + 0.37 * (i % 11)});
  return jobs;
}

std::vector<double> shard_costs(const std::vector<ShardJob>& jobs, const std::vector<int>& shard_of, int count) {
  std::vector<double> cost(static_cast<std::size_t>(count), 0.0);
  for (std::size_t i = 0; i < jobs.size(); ++i) cost[static_cast<std::size_t>(shard_of[i])] += jobs[i].cost;
  return cost;
}

TEST(Shard, EveryJobIsInExactlyOneShardWithinRange) {
  const std::vector<ShardJob> jobs = sample_jobs();
  for (int count : {1, 2, 3, 4, 7, 53, 60}) {
    const std::vector<int> shard_of = split_jobs(jobs, count);
    ASSERT_EQ(shard_of.size(), jobs.size());
    for (int s : shard_of) {
      EXPECT_GE(s, 0);
      EXPECT_LT(s, count);
    }
  }
}

TEST(Shard, TheSplitDependsOnlyOnTheJobsNotOnTheirOrder) {
  const std::vector<ShardJob> jobs = sample_jobs();
  const std::vector<int> first = split_jobs(jobs, 4);
  EXPECT_EQ(split_jobs(jobs, 4), first);
  std::vector<ShardJob> reversed(jobs.rbegin(), jobs.rend());
  const std::vector<int> of_reversed = split_jobs(reversed, 4);
  for (std::size_t i = 0; i < jobs.size(); ++i) EXPECT_EQ(of_reversed[jobs.size() - 1 - i], first[i]) << jobs[i].key;
}

TEST(Shard, ShardCostsDifferByAtMostTheDearestJob) {
  const std::vector<ShardJob> jobs = sample_jobs();
  const double dearest =
      std::max_element(jobs.begin(), jobs.end(), [](const auto& a, const auto& b) { return a.cost < b.cost; })->cost;
  for (int count : {2, 3, 4, 8}) {
    const std::vector<double> cost = shard_costs(jobs, split_jobs(jobs, count), count);
    const auto [low, high] = std::minmax_element(cost.begin(), cost.end());
    EXPECT_LE(*high - *low, dearest) << count << " shards";
  }
}

TEST(Shard, TheSplitBalancesCostNotCount) {
  // One job as dear as the nine others together: two shards get 1 and 9 jobs of equal cost.
  std::vector<ShardJob> jobs{{.key = "big", .cost = 9.0}};
  for (int i = 0; i < 9; ++i) jobs.push_back({.key = fmt::format("small{}", i), .cost = 1.0});
  const std::vector<int> shard_of = split_jobs(jobs, 2);
  EXPECT_EQ(shard_costs(jobs, shard_of, 2), (std::vector<double>{9.0, 9.0}));
  EXPECT_EQ(std::count(shard_of.begin(), shard_of.end(), shard_of[0]), 1);
}

TEST(Shard, EqualCostsAreOrderedByKeyAndGoToTheLowestIndexFirst) {
  const std::vector<ShardJob> jobs{{.key = "c", .cost = 1}, {.key = "a", .cost = 1}, {.key = "b", .cost = 1}};
  EXPECT_EQ(split_jobs(jobs, 2), (std::vector<int>{0, 0, 1}));  // a -> 0, b -> 1, c -> 0
}

TEST(Shard, JobsOfOneProblemStayTogetherAndCountOnce) {
  const std::vector<ShardJob> jobs{
      {.key = "p", .cost = 5}, {.key = "q", .cost = 5}, {.key = "p", .cost = 5}, {.key = "r", .cost = 4}};
  const std::vector<int> shard_of = split_jobs(jobs, 2);
  EXPECT_EQ(shard_of[0], shard_of[2]);
  EXPECT_EQ(shard_of, (std::vector<int>{0, 1, 0, 0}));  // p 5 -> 0, q 5 -> 1, r 4 -> 0 (5 + 4 against 5)
}

TEST(Shard, MoreShardsThanJobsLeavesSomeEmpty) {
  const std::vector<ShardJob> jobs{{.key = "a", .cost = 1}, {.key = "b", .cost = 2}};
  EXPECT_EQ(split_jobs(jobs, 4), (std::vector<int>{1, 0}));
  EXPECT_TRUE(split_jobs({}, 3).empty());
}

TEST(Shard, ACountBelowOneIsRefused) {
  try {
    split_jobs({}, 0);
    FAIL() << "expected InputError";
  } catch (const InputError& e) {
    EXPECT_STREQ(e.what(), "split_jobs: the shard count must be at least 1, got 0");
  }
}

TEST(Shard, TheCostGrowsWithTheProblemAndHasAFixedPart) {
  const Problem small{.n = 1, .c = 16, .k = 16, .input = {1, 8, 8}, .filter = {1, 3, 3}, .padding = {0, 1, 1}};
  Problem large = small;
  large.n = 8;
  large.c = large.k = 256;
  large.input = {1, 56, 56};
  EXPECT_GT(tune_cost(small), kTuneFixedSeconds);
  EXPECT_LT(tune_cost(small), kTuneFixedSeconds * 1.01);
  EXPECT_GT(tune_cost(large), tune_cost(small) * 1.5);
}

void expect_shard_error(const std::string& text, const std::string& message) {
  try {
    parse_shard(text);
    FAIL() << "expected InputError for " << text;
  } catch (const InputError& e) {
    EXPECT_EQ(std::string(e.what()), message);
  }
}

TEST(Shard, ParsesIndexOverCountFromZero) {
  EXPECT_EQ(parse_shard("0/1"), (Shard{.index = 0, .count = 1}));
  EXPECT_EQ(parse_shard("3/4"), (Shard{.index = 3, .count = 4}));
  expect_shard_error("4/4", "--shard 4/4: the index must be from 0 to 3 (shards count from 0)");
  expect_shard_error("-1/4", "--shard -1/4: the index must be from 0 to 3 (shards count from 0)");
  expect_shard_error("0/0", "--shard 0/0: the count must be at least 1");
  for (const char* bad : {"2", "2/", "/4", "a/4", "2/4x", "2 /4", ""})
    expect_shard_error(bad, fmt::format("--shard: expected I/N (shard I of N, I from 0 to N-1), got '{}'", bad));
}

TEST(Shard, ThePlaceholderInAPathBecomesTheIndex) {
  EXPECT_EQ(shard_path("tune-{shard}.sqlite", {.index = 2, .count = 4}), "tune-2.sqlite");
  EXPECT_EQ(shard_path("{shard}/{shard}.sqlite", {.index = 11, .count = 12}), "11/11.sqlite");
  EXPECT_EQ(shard_path("tune.sqlite", {.index = 1, .count = 2}), "tune.sqlite");
}

EnvLookup environment(std::map<std::string, std::string> variables) {
  return [variables = std::move(variables)](const char* name) -> std::optional<std::string> {
    const auto it = variables.find(name);
    if (it == variables.end()) return std::nullopt;
    return it->second;
  };
}

void expect_environment_error(std::map<std::string, std::string> variables, const std::string& message) {
  try {
    shard_from_environment(environment(std::move(variables)));
    FAIL() << "expected InputError";
  } catch (const InputError& e) {
    EXPECT_EQ(std::string(e.what()), message);
  }
}

TEST(Shard, NoLauncherVariableGivesNoShard) { EXPECT_FALSE(shard_from_environment(environment({}))); }

TEST(Shard, ASlurmArrayTaskIsCountedFromTheArraysFirstId) {
  const auto origin = shard_from_environment(
      environment({{"SLURM_ARRAY_TASK_ID", "3"}, {"SLURM_ARRAY_TASK_MIN", "1"}, {"SLURM_ARRAY_TASK_COUNT", "4"}}));
  ASSERT_TRUE(origin);
  EXPECT_EQ(origin->shard, (Shard{.index = 2, .count = 4}));
  EXPECT_EQ(origin->source, "SLURM_ARRAY_TASK_ID=3 (SLURM_ARRAY_TASK_MIN=1, SLURM_ARRAY_TASK_COUNT=4)");
}

TEST(Shard, ASlurmArrayWithAStepOrWithoutACountStillGivesTheTasksPlace) {
  auto origin = shard_from_environment(environment({{"SLURM_ARRAY_TASK_ID", "8"},
                                                    {"SLURM_ARRAY_TASK_MIN", "0"},
                                                    {"SLURM_ARRAY_TASK_STEP", "4"},
                                                    {"SLURM_ARRAY_TASK_COUNT", "4"}}));
  ASSERT_TRUE(origin);
  EXPECT_EQ(origin->shard, (Shard{.index = 2, .count = 4}));
  EXPECT_EQ(origin->source,
            "SLURM_ARRAY_TASK_ID=8 (SLURM_ARRAY_TASK_MIN=0, SLURM_ARRAY_TASK_STEP=4, SLURM_ARRAY_TASK_COUNT=4)");
  origin = shard_from_environment(
      environment({{"SLURM_ARRAY_TASK_ID", "10"}, {"SLURM_ARRAY_TASK_MIN", "10"}, {"SLURM_ARRAY_TASK_MAX", "17"}}));
  ASSERT_TRUE(origin);
  EXPECT_EQ(origin->shard, (Shard{.index = 0, .count = 8}));
}

TEST(Shard, TheSlurmArrayWinsOverMpiRanks) {
  const auto origin = shard_from_environment(environment({{"SLURM_ARRAY_TASK_ID", "1"},
                                                          {"SLURM_ARRAY_TASK_COUNT", "2"},
                                                          {"OMPI_COMM_WORLD_RANK", "0"},
                                                          {"OMPI_COMM_WORLD_SIZE", "8"}}));
  ASSERT_TRUE(origin);
  EXPECT_EQ(origin->shard, (Shard{.index = 1, .count = 2}));
}

TEST(Shard, OpenMpiAndPmiRanksAreShards) {
  auto origin = shard_from_environment(environment({{"OMPI_COMM_WORLD_RANK", "5"}, {"OMPI_COMM_WORLD_SIZE", "8"}}));
  ASSERT_TRUE(origin);
  EXPECT_EQ(origin->shard, (Shard{.index = 5, .count = 8}));
  EXPECT_EQ(origin->source, "OMPI_COMM_WORLD_RANK=5 (OMPI_COMM_WORLD_SIZE=8)");
  origin = shard_from_environment(environment({{"PMI_RANK", "0"}, {"PMI_SIZE", "2"}}));
  ASSERT_TRUE(origin);
  EXPECT_EQ(origin->shard, (Shard{.index = 0, .count = 2}));
  EXPECT_EQ(origin->source, "PMI_RANK=0 (PMI_SIZE=2)");
}

TEST(Shard, LauncherVariablesThatMakeNoShardAreErrorsNamingThem) {
  expect_environment_error({{"SLURM_ARRAY_TASK_ID", "x"}}, "SLURM_ARRAY_TASK_ID: expected an integer, got 'x'");
  expect_environment_error({{"SLURM_ARRAY_TASK_ID", "3"}},
                           "SLURM_ARRAY_TASK_ID is set but neither SLURM_ARRAY_TASK_COUNT nor SLURM_ARRAY_TASK_MAX "
                           "is; pass --shard I/N");
  expect_environment_error(
      {{"SLURM_ARRAY_TASK_ID", "7"}, {"SLURM_ARRAY_TASK_MIN", "1"}, {"SLURM_ARRAY_TASK_COUNT", "3"}},
      "SLURM_ARRAY_TASK_ID=7 (SLURM_ARRAY_TASK_MIN=1, SLURM_ARRAY_TASK_COUNT=3) is not one of 3 evenly stepped array "
      "tasks (an array given as a list, such as --array=1,3,7?); pass --shard I/N");
  expect_environment_error({{"OMPI_COMM_WORLD_RANK", "2"}},
                           "OMPI_COMM_WORLD_RANK is set but OMPI_COMM_WORLD_SIZE is not; pass --shard I/N");
  expect_environment_error({{"PMI_RANK", "2"}, {"PMI_SIZE", "2"}},
                           "PMI_RANK=2 with PMI_SIZE=2 is not a shard (expected 0 <= rank < size); pass --shard I/N");
}

}  // namespace
}  // namespace convgen
