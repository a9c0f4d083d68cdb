// db_cli_test: `convgen db list|show|export|import|prune` end to end, on databases filled through the library.
#include <sys/wait.h>

#include <array>
#include <cstdio>
#include <fstream>
#include <string>

#include <gtest/gtest.h>

#include "support/run_convgen.hpp"

#include "tests/host/tuner/fixtures.hpp"

namespace convgen {
namespace {

using namespace testing_tuner;

using Result = testing_support::CommandResult;
using testing_support::run_convgen;

bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

std::filesystem::path filled(const ScratchDir& dir, const std::string& name = "t.sqlite") {
  TuningDb db = TuningDb::open(dir / name);
  db.record(measured(h100(), conv3x3(), igemm(64), 41.5));
  db.record(measured(h100(), conv3x3(), igemm(128), 38.25));
  db.record(failed(h100(), conv1x1(), igemm(32), MeasurementStatus::wrong_result, "rel_l2 0.5 > 1e-05\nmore"));
  db.record(measured(h200(), conv1x1(), igemm(64), 20.0));
  return dir / name;
}

TEST(DbCli, ListPrintsTheBestKernelPerGpuAndProblem) {
  ScratchDir dir;
  const auto path = filled(dir);
  const Result r = run_convgen("db list --db " + path.string());
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(r.output, fmt::format("{}\n  {:<62} {:<40} {:>10} us\n{}\n  {:<62} {:<40} {:>10} us\n2 best choices\n",
                                  describe_gpu(h100()), problem_key(conv3x3()), igemm(128), "38.250",
                                  describe_gpu(h200()), problem_key(conv1x1()), igemm(64), "20.000"));
}

TEST(DbCli, ListWithAGpuFilterShowsThatGpuOnly) {
  ScratchDir dir;
  const auto path = filled(dir);
  const Result r = run_convgen("db list --gpu h200 --db " + path.string());
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_FALSE(contains(r.output, "H100")) << r.output;
  EXPECT_TRUE(contains(r.output, "1 best choices")) << r.output;
}

TEST(DbCli, AGpuFilterMatchingNothingOrSeveralGpusIsAnError) {
  ScratchDir dir;
  const auto path = filled(dir);
  Result r = run_convgen("db list --gpu a100 --db " + path.string());
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.output, fmt::format("convgen: error: --gpu 'a100' matches no GPU in {}; it holds: {}, {}\n",
                                  path.string(), describe_gpu(h100()), describe_gpu(h200())));
  r = run_convgen("db list --gpu sm_90 --db " + path.string());
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_TRUE(contains(r.output, "--gpu 'sm_90' matches several GPUs in")) << r.output;
}

TEST(DbCli, ListOnAnEmptyDatabaseSaysSo) {
  ScratchDir dir;
  const Result r = run_convgen("db list --db " + (dir / "empty.sqlite").string());
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(r.output, "no best choices in " + (dir / "empty.sqlite").string() + "\n");
}

TEST(DbCli, TheDefaultDatabaseIsInTheUserDataFolder) {
  ScratchDir dir;
  filled(dir, "tuning.sqlite");
  const Result r = run_convgen("db list", "CONVGEN_DATA_DIR=" + dir.path().string());
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_TRUE(contains(r.output, "2 best choices")) << r.output;
}

TEST(DbCli, ShowPrintsMeasurementsWithTheirStatisticsOrFailure) {
  ScratchDir dir;
  const auto path = filled(dir);
  Result r = run_convgen("db show --gpu H100 --db " + path.string());
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_TRUE(contains(r.output, "38.250 us (p10 37.485, p90 39.398, 3 samples)")) << r.output;
  EXPECT_TRUE(contains(r.output, "wrong_result: rel_l2 0.5 > 1e-05\n")) << r.output;  // first line of the error
  EXPECT_TRUE(contains(r.output, "2023-11-14 22:13")) << r.output;
  EXPECT_TRUE(contains(r.output, "3 measurements\n")) << r.output;
  r = run_convgen("db show --status ok --problem " + problem_key(conv1x1()) + " --db " + path.string());
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_TRUE(contains(r.output, "1 measurements\n")) << r.output;
  r = run_convgen("db show --status fine --db " + path.string());
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.output,
            "convgen: error: --status must be one of ok, compile_error, resources, launch_error, "
            "wrong_result, got 'fine'\n");
}

TEST(DbCli, ExportThenImportCarriesTheRecordsToAnotherDatabase) {
  ScratchDir dir;
  const auto path = filled(dir);
  const auto json = dir / "h100.json";
  Result r = run_convgen("db export --gpu H100 --db " + path.string() + " --out " + json.string());
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const auto target = dir / "other.sqlite";
  const std::string descriptor = std::string(CONVGEN_SOURCE_DIR) + "/gpus/h100_sxm.json";
  r = run_convgen("db import " + json.string() + " --gpu " + descriptor + " --db " + target.string());
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(r.output, "imported 3 measurements into " + target.string() +
                          " (0 already there), 2 best choices added or made faster\n");  // 41.5, then 38.25
  const TuningDb db = TuningDb::open(target);
  EXPECT_EQ(db.measurements().size(), 3u);
  EXPECT_EQ(db.best(h100(), conv3x3())->kernel, igemm(128));
  // Again: nothing new.
  r = run_convgen("db import " + json.string() + " --gpu " + descriptor + " --db " + target.string());
  EXPECT_TRUE(contains(r.output, "imported 0 measurements")) << r.output;
  EXPECT_TRUE(contains(r.output, "(3 already there)")) << r.output;
}

TEST(DbCli, ImportRefusesAnotherGpuUnlessAllowed) {
  ScratchDir dir;
  const auto path = filled(dir);
  const auto json = dir / "h200.json";
  ASSERT_EQ(run_convgen("db export --gpu H200 --db " + path.string() + " --out " + json.string()).exit_code, 0);
  const auto target = dir / "other.sqlite";
  Result r = run_convgen("db import " + json.string() + " --gpu " + std::string(CONVGEN_SOURCE_DIR) +
                         "/gpus/h100_sxm.json --db " + target.string());
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.output, "convgen: error: " + json.string() + ": records are for " + describe_gpu(h200()) +
                          ", not for this GPU, " + describe_gpu(h100()) +
                          "; import with --allow-other-gpu to keep them anyway\n");
  r = run_convgen("db import " + json.string() + " --allow-other-gpu --db " + target.string());
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(TuningDb::open(target).best(h200(), conv1x1())->median_us, 20.0);
}

TEST(DbCli, PruneRemovesWhatItIsAskedToAndRefusesToGuess) {
  ScratchDir dir;
  const auto path = filled(dir);
  Result r = run_convgen("db prune --db " + path.string());
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(
      r.output,
      "convgen: error: db prune: choose what to remove: --not-best, --failed, --older-than DAYS or --everything\n");
  r = run_convgen("db prune --not-best --gpu H100 --db " + path.string());
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(r.output, "removed 2 measurements and 0 best choices from " + path.string() + "\n");
  r = run_convgen("db prune --everything --db " + path.string());
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(r.output, "removed 2 measurements and 2 best choices from " + path.string() + "\n");
  EXPECT_TRUE(TuningDb::open(path).gpus().empty());
}

TEST(DbCli, ADatabaseFileThatIsNotSqliteIsAnError) {
  ScratchDir dir;
  const auto path = dir / "junk.sqlite";
  std::ofstream(path) << "not a database at all, just a plain text file with enough bytes in it to matter\n";
  const Result r = run_convgen("db list --db " + path.string());
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.output, "convgen: error: " + path.string() + ": not a tuning database (the file is not SQLite)\n");
}

}  // namespace
}  // namespace convgen
