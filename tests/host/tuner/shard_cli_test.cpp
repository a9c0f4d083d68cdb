// shard_cli_test: `convgen tune --shard` and the launchers' variables, through --dry-run (no GPU needed).
#include <algorithm>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "support/run_convgen.hpp"

namespace convgen {
namespace {

using Result = testing_support::CommandResult;
using testing_support::run_convgen;

// The launchers' variables are removed, so a test run inside a Slurm job or under mpirun sees none.
const std::string kNoLauncher =
    "env -u SLURM_ARRAY_TASK_ID -u SLURM_ARRAY_TASK_MIN -u SLURM_ARRAY_TASK_MAX -u SLURM_ARRAY_TASK_STEP "
    "-u SLURM_ARRAY_TASK_COUNT -u OMPI_COMM_WORLD_RANK -u OMPI_COMM_WORLD_SIZE -u PMI_RANK -u PMI_SIZE";

const std::string kTune = "tune --shapes resnet50 --batch 1,8 --dry-run --db tune-{shard}.sqlite";

// The job lines of a dry run ("resnet50 conv1 n1: <problem key> (predicted cost ...)"), without the other lines.
std::vector<std::string> jobs(const std::string& output) {
  std::vector<std::string> lines;
  std::istringstream in(output);
  for (std::string line; std::getline(in, line);)
    if (line.rfind("resnet50 ", 0) == 0) lines.push_back(line);
  return lines;
}

TEST(ShardCli, WithoutAShardEveryJobIsListedAndThePlaceholderIsZero) {
  const Result r = run_convgen(kTune, kNoLauncher);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(r.output.find("shard "), std::string::npos) << r.output;  // no shard line
  EXPECT_EQ(jobs(r.output).size(), 2 * 24u) << r.output;              // resnet50's 24 layers at two batches
  EXPECT_NE(r.output.find("database: tune-0.sqlite\n"), std::string::npos) << r.output;
}

TEST(ShardCli, FourShardsTakeEveryJobOnceAndWriteTheirOwnDatabase) {
  const std::vector<std::string> all = jobs(run_convgen(kTune, kNoLauncher).output);
  std::multiset<std::string> union_of_shards;
  for (int i = 0; i < 4; ++i) {
    const Result r = run_convgen(kTune + " --shard " + std::to_string(i) + "/4", kNoLauncher);
    ASSERT_EQ(r.exit_code, 0) << r.output;
    EXPECT_EQ(r.output.rfind("shard " + std::to_string(i) + "/4 from --shard: ", 0), 0u) << r.output;
    EXPECT_NE(r.output.find("database: tune-" + std::to_string(i) + ".sqlite\n"), std::string::npos) << r.output;
    const std::vector<std::string> mine = jobs(r.output);
    EXPECT_FALSE(mine.empty());
    union_of_shards.insert(mine.begin(), mine.end());
  }
  EXPECT_EQ(union_of_shards, std::multiset<std::string>(all.begin(), all.end()));
}

TEST(ShardCli, ASlurmArrayTaskTakesTheSameShardAsTheOption) {
  const Result from_slurm =
      run_convgen(kTune, kNoLauncher + " SLURM_ARRAY_TASK_ID=2 SLURM_ARRAY_TASK_MIN=1 SLURM_ARRAY_TASK_COUNT=4");
  ASSERT_EQ(from_slurm.exit_code, 0) << from_slurm.output;
  EXPECT_EQ(from_slurm.output.rfind("shard 1/4 from SLURM_ARRAY_TASK_ID=2 (SLURM_ARRAY_TASK_MIN=1, "
                                    "SLURM_ARRAY_TASK_COUNT=4): ",
                                    0),
            0u)
      << from_slurm.output;
  EXPECT_EQ(jobs(from_slurm.output), jobs(run_convgen(kTune + " --shard 1/4", kNoLauncher).output));
  EXPECT_NE(from_slurm.output.find("database: tune-1.sqlite\n"), std::string::npos) << from_slurm.output;
  // --shard wins over the launcher's variables.
  const Result both =
      run_convgen(kTune + " --shard 0/2", kNoLauncher + " OMPI_COMM_WORLD_RANK=3 OMPI_COMM_WORLD_SIZE=4");
  EXPECT_EQ(both.output.rfind("shard 0/2 from --shard: ", 0), 0u) << both.output;
  const Result mpi = run_convgen(kTune, kNoLauncher + " OMPI_COMM_WORLD_RANK=3 OMPI_COMM_WORLD_SIZE=4");
  EXPECT_EQ(mpi.output.rfind("shard 3/4 from OMPI_COMM_WORLD_RANK=3 (OMPI_COMM_WORLD_SIZE=4): ", 0), 0u) << mpi.output;
}

TEST(ShardCli, ABadShardSaysWhatWasExpected) {
  Result r = run_convgen(kTune + " --shard 4/4", kNoLauncher);
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.output, "convgen: error: --shard 4/4: the index must be from 0 to 3 (shards count from 0)\n");
  r = run_convgen(kTune + " --shard 1of4", kNoLauncher);
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.output, "convgen: error: --shard: expected I/N (shard I of N, I from 0 to N-1), got '1of4'\n");
  r = run_convgen(kTune, kNoLauncher + " PMI_RANK=1");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.output, "convgen: error: PMI_RANK is set but PMI_SIZE is not; pass --shard I/N\n");
}

TEST(ShardCli, ShardingWithOneDatabaseForAllSaysSo) {
  const Result r = run_convgen("tune --shapes resnet50 --dry-run --db one.sqlite --shard 0/2", kNoLauncher);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("note: every shard writes to one.sqlite;"), std::string::npos) << r.output;
}

}  // namespace
}  // namespace convgen
