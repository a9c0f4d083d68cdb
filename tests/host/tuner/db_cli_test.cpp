// db_cli_test: `convgen db list|show|export|import|calibrate|replay|choices|compile-limit|prune` end to end, on
// databases filled through the library.
#include <sys/wait.h>

#include <algorithm>
#include <array>
#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "support/run_convgen.hpp"

#include "generator/family.hpp"
#include "tests/host/tuner/fixtures.hpp"
#include "runtime/jit_cache.hpp"
#include "runtime/thread_pool.hpp"
#include "tuner/cost_model.hpp"
#include "tuner/tuner.hpp"

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

TEST(DbCli, ReplayPrintsEachProblemsPickAgainstTheFastestAndTheGeometricMean) {
  ScratchDir dir;
  TuningDb db = TuningDb::open(dir / "r.sqlite");
  std::vector<std::string> order;
  for (const KernelSpec& spec : family("igemm").enumerate(conv3x3(), h100())) order.push_back(kernel_name(spec));
  ASSERT_GE(order.size(), 3u);
  db.record(measured(h100(), conv3x3(), order[2], 20.0));
  db.record(measured(h100(), conv3x3(), order[1], 25.0));
  Result r = run_convgen("db replay --family igemm --db " + (dir / "r.sqlite").string());
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(r.output, fmt::format("{}\n  1.250  {}  pick {} 25.000 us, fastest {} 20.000 us of 2 measured\n"
                                  "igemm's search order picks within 1.250x of the fastest measured, geometric mean "
                                  "over 1 problems of {}; it lists the fastest measured for 1 of them, its fastest "
                                  "listed within 1.000x of it\n",
                                  describe_gpu(h100()), problem_key(conv3x3()), order[1], order[2],
                                  (dir / "r.sqlite").string()));
  // The published exports, gzipped, read directly.
  const std::string published = std::string(CONVGEN_SOURCE_DIR) +
                                "/bench/results/h200/bulk-output-2026-11-29/resnet50-fp16-n8-measurements.json.gz";
  r = run_convgen("db replay --family igemm_wgmma --export " + published);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_TRUE(contains(r.output, "igemm_wgmma's search order picks within 1.054x of the fastest measured, geometric "
                                 "mean over 23 problems"))
      << r.output;
  r = run_convgen("db replay --family nonesuch --db " + (dir / "r.sqlite").string());
  EXPECT_NE(r.exit_code, 0);
  EXPECT_TRUE(contains(r.output, "nonesuch")) << r.output;
}

TEST(DbCli, ReplayGivesWeightSparseProblemsTheirSeededFiltersBack) {
  // Two ResNet-50 3x3 problems at batch 8 tuned with `--weight-sparsity 0.9` (seed 1): an export keeps each filter's
  // pattern, not its values, so weight_sparse lists no kernel for them until the same options make the filters again.
  const std::string published =
      std::string(CONVGEN_SOURCE_DIR) +
      "/bench/results/h200/weight-sparse-staged-2026-12-01/conv3-3x3-after/measurements.json.gz";
  Result r = run_convgen("db replay --family weight_sparse --export " + published);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_TRUE(contains(r.output,
                       "no problem with weight_sparse kernels its search order lists (2 problems whose "
                       "measured kernels it no longer lists)"))
      << r.output;
  r = run_convgen("db replay --family weight_sparse --weight-sparsity 0.9 --export " + published);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_TRUE(contains(r.output,
                       "--weight-sparsity 0.9 --seed 1: the filter of 2 of 2 problems that carry only a "
                       "pattern"))
      << r.output;
  EXPECT_TRUE(contains(r.output, "weight_sparse's search order picks within")) << r.output;
  EXPECT_TRUE(contains(r.output, "over 2 problems")) << r.output;
  // Another seed or fraction makes other filters: none is given back.
  r = run_convgen("db replay --family weight_sparse --weight-sparsity 0.9 --seed 2 --export " + published);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_TRUE(contains(r.output, "the filter of 0 of 2 problems")) << r.output;
  r = run_convgen("db replay --family weight_sparse --weight-sparsity most --export " + published);
  EXPECT_NE(r.exit_code, 0);
  EXPECT_TRUE(contains(r.output, "--weight-sparsity: 'most' is neither a zero fraction in [0, 1] nor 2:4")) << r.output;
}

TEST(DbCli, ChoicesPrintsTheChoicesWithoutTuningAgainstTheFastestOnAPublishedTune) {
  // ResNet-50 fp32 at batch 1 and 8, tuned on two H200s (every family's default measured in each first round): the
  // figures bench/results/h200/cost-model-only-defaults-2026-12-01/ publishes. A change of the defaults or of the
  // model's default coefficients moves them: measure, then publish the new ones here and there.
  const std::string published = std::string(CONVGEN_SOURCE_DIR) +
                                "/bench/results/h200/tune-scaling-2026-11-29/merged-measurements.json.gz";
  const Result r = run_convgen("db choices --export " + published);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_TRUE(contains(r.output, "over 35 problems of")) << r.output;
  EXPECT_TRUE(contains(r.output, "first-run default 1.098x, cost_model_only 1.092x (the first-run default for 25), "
                                 "the model's first of everything measured 1.328x; 11 problems left out"))
      << r.output;
  const Result none = run_convgen("db choices --export " + std::string(CONVGEN_SOURCE_DIR) +
                                  "/bench/results/h200/bulk-output-2026-11-29/resnet50-fp16-n8-measurements.json.gz");
  ASSERT_EQ(none.exit_code, 0) << none.output;
  EXPECT_TRUE(contains(none.output, "no problem whose families' defaults were all measured (23 with some missing)"))
      << none.output;
}

TEST(DbCli, CompileLimitPlacesTheFastestInTheCompileOrderAndSaysWhatEachLimitCosts) {
  ScratchDir dir;
  const auto path = dir / "c.sqlite";
  JitCache cache(std::nullopt);
  ThreadPool pool(1);
  const std::vector<KernelSpec> order =
      Tuner(h100(), cache, pool, nullptr).compile_order(conv3x3(), tuning_candidates(conv3x3(), h100()));
  ASSERT_GT(order.size(), 40u);
  {
    TuningDb db = TuningDb::open(path);
    db.record(measured(h100(), conv3x3(), kernel_name(order[29]), 10.0));  // 30th: kept by a limit of 32, not 24
    db.record(measured(h100(), conv3x3(), kernel_name(order[2]), 12.5));
  }
  const Result r = run_convgen("db compile-limit --db " + path.string());
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_TRUE(contains(r.output, fmt::format("  {}  fastest {} 10.000 us (of 2 measured): 30 of {} in the compile order",
                                             problem_key(conv3x3()), kernel_name(order[29]), order.size())))
      << r.output;
  EXPECT_TRUE(contains(r.output, "a compile limit of 24 keeps it for 0 of 1; the fastest measured within it is "
                                 "1.250x the fastest (geometric mean), 1.250x at worst\n"))
      << r.output;
  EXPECT_TRUE(contains(r.output, "a compile limit of 32 keeps it for 1 of 1; the fastest measured within it is "
                                 "1.000x the fastest (geometric mean), 1.000x at worst\n"))
      << r.output;
  EXPECT_TRUE(contains(r.output, "a compile limit of  8 keeps it for 0 of 1; the fastest measured within it is 1.250x"))
      << r.output;
  EXPECT_TRUE(contains(r.output, "the last place: 30")) << r.output;

  const Result empty = run_convgen("db compile-limit --db " + (dir / "empty.sqlite").string());
  EXPECT_EQ(empty.exit_code, 1);
  EXPECT_TRUE(contains(empty.output, "no measured kernel")) << empty.output;
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

// ---- db calibrate ----------------------------------------------------------------------------------------------

// Weights unlike the defaults, so that a fit has something to find.
Coefficients calibration_truth() {
  Coefficients c;
  c.of("igemm") = {3, 0.5, 2, 1, 0.6, 0.3, 2.5, 4, 3, 1, 5};
  c.of("direct") = {1, 8, 15, 0, 0.5, 0, 3, 0, 0, 1, 4};
  return c;
}

// The report `measured` records: what calibration_data reads back.
const PtxasReport kMeasuredReport{.registers = 64, .smem_bytes = 16384};

struct Filled {
  std::filesystem::path path;
  int igemm = 0;  // measurements per family
  int direct = 0;
};

// Records an ok measurement of every candidate the given families enumerate for the problems on the H100, timed
// exactly by calibration_truth().
Filled filled_for_calibration(const ScratchDir& dir, const std::vector<Problem>& problems,
                              const std::vector<std::string_view>& families = {"igemm", "direct"}) {
  Filled out{.path = dir / "calibrate.sqlite"};
  TuningDb db = TuningDb::open(out.path);
  for (const Problem& p : problems)
    for (const std::string_view kind : families)
      for (const KernelSpec& s : family(kind).enumerate(p, h100())) {
        const Prediction t =
            predict(kind, family(kind).cost_features(p, s), kMeasuredReport, h100(), calibration_truth());
        db.record(measured(h100(), p, kernel_name(s), t.time_us));
        ++(kind == "igemm" ? out.igemm : out.direct);
      }
  return out;
}

TEST(DbCli, CalibratePrintsTheFitPerFamilyAndStoresIt) {
  ScratchDir dir;
  const Filled db = filled_for_calibration(dir, {conv3x3(), conv1x1()});
  ASSERT_GE(db.igemm, min_calibration_samples);
  ASSERT_GE(db.direct, min_calibration_samples);
  Result r = run_convgen("db calibrate --db " + db.path.string());
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(r.output.rfind(fmt::format("{}: {} verified measurements of 2 problems on {}\n", db.path.string(),
                                       db.igemm + db.direct, describe_gpu(h100())),
                           0),
            0u)
      << r.output;
  EXPECT_TRUE(contains(r.output, "\nbefore (the default coefficients): mean Spearman ")) << r.output;
  EXPECT_TRUE(contains(r.output,
                       "\nafter:  mean Spearman 1.00, fastest in the top 10 for 100% of 2 problems, predicted fastest "
                       "within 10% of the measured best (SEER's right pick) for 100%, its time 1.000x the best's "
                       "(geometric mean); within a family: direct 100% of 2 (1.000x), igemm 100% of 2 (1.000x); a "
                       "guided tune of 10 replayed, the best over the best of the model's 10 first (geometric mean "
                       "over problems with more candidates): direct 1.000 over 2, igemm 1.000 over 2\n"))
      << r.output;
  EXPECT_FALSE(contains(r.output, "held out")) << "nothing excluded, nothing held out\n" << r.output;
  EXPECT_TRUE(contains(r.output, fmt::format("\n  {} samples, fitted, rms relative error 0.0%: direct: ", db.direct)))
      << r.output;
  EXPECT_TRUE(contains(r.output, fmt::format("\n  {} samples, fitted, rms relative error 0.0%: igemm: ", db.igemm)))
      << r.output;
  const std::string stored =
      fmt::format("stored in {} (model version {}); tune, analyze --candidates and the library now rank with it\n",
                  db.path.string(), cost_model_version);
  EXPECT_TRUE(r.output.ends_with(stored)) << r.output;

  // The stored fit predicts every measurement (the weights themselves need not be unique for these candidates).
  const TuningDb tuning = TuningDb::open(db.path);
  const std::optional<Calibration> fit = load_calibration(tuning, h100());
  ASSERT_TRUE(fit.has_value());
  EXPECT_EQ(fit->samples, db.igemm + db.direct);
  EXPECT_EQ(fit->families.at("igemm").samples, db.igemm);
  EXPECT_TRUE(fit->families.at("igemm").fitted);
  EXPECT_TRUE(fit->families.at("direct").fitted);
  for (const MeasurementRecord& m : tuning.measurements()) {
    const KernelSpec s = parse_kernel_name(m.kernel);
    const double predicted =
        predict(s.family, family(s.family).cost_features(m.problem, s), kMeasuredReport, h100(), fit->coefficients)
            .time_us;
    EXPECT_NEAR(predicted / m.median_us, 1.0, 1e-6) << m.kernel;
  }

  // Again: it starts from the stored calibration.
  r = run_convgen("db calibrate --db " + db.path.string());
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_TRUE(contains(r.output, "\nbefore (the stored calibration): mean Spearman 1.00, ")) << r.output;
}

TEST(DbCli, CalibrateKeepsTheStartWeightsOfAFamilyWithTooFewMeasurements) {
  ScratchDir dir;
  const Filled db = filled_for_calibration(dir, {conv3x3(), conv1x1()}, {"igemm"});
  const Result r = run_convgen("db calibrate --dry-run --db " + db.path.string());
  ASSERT_EQ(r.exit_code, 0) << r.output;
  // The default direct weights, as describe_coefficients words them.
  const std::string defaults = describe_coefficients(Coefficients{});
  EXPECT_TRUE(
      contains(r.output, fmt::format("\n  no samples, kept: {}\n", defaults.substr(0, defaults.find(';')))))
      << r.output;
  EXPECT_TRUE(contains(r.output, fmt::format("\n  {} samples, fitted, ", db.igemm))) << r.output;
}

TEST(DbCli, CalibrateDryRunStoresNothing) {
  ScratchDir dir;
  const Filled db = filled_for_calibration(dir, {conv3x3(), conv1x1()});
  const Result r = run_convgen("db calibrate --dry-run --db " + db.path.string());
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_TRUE(r.output.ends_with("\ndry run: nothing stored\n")) << r.output;
  // Two problems cannot pin down terms that are constant within a problem: the command says so.
  EXPECT_TRUE(contains(r.output, "\nwarning: only 2 problems measured; weights fitted on fewer than 10 problems may "
                                 "not carry over to others (tune more layers with --budget 0 first)\n"))
      << r.output;
  EXPECT_EQ(load_calibration(TuningDb::open(db.path), h100()), std::nullopt);
}

TEST(DbCli, CalibrateWritesEverySampleAsCsv) {
  ScratchDir dir;
  const Filled db = filled_for_calibration(dir, {conv3x3(), conv1x1()});
  const auto csv = dir / "samples.csv";
  const Result r = run_convgen("db calibrate --dry-run --samples-csv " + csv.string() + " --db " + db.path.string());
  ASSERT_EQ(r.exit_code, 0) << r.output;
  std::ifstream in(csv);
  ASSERT_TRUE(in) << r.output;
  std::vector<std::string> lines;
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  ASSERT_EQ(lines.size(), static_cast<std::size_t>(1 + db.igemm + db.direct));
  EXPECT_EQ(lines[0],
            "problem,kernel,family,measured_us,predicted_us,fma,shared_loads,global_loads,address,serial_steps,"
            "pipelined_steps,waves,atomics,extra_launches,dram,launch");
  // Rows in the database's order: the first is conv3x3's first igemm candidate; every row has all 16 columns and a
  // launch term of 1.
  const std::string first_kernel = kernel_name(family("igemm").enumerate(conv3x3(), h100())[0]);
  EXPECT_EQ(lines[1].rfind(problem_key(conv3x3()) + "," + first_kernel + ",igemm,", 0), 0u) << lines[1];
  for (std::size_t i = 1; i < lines.size(); ++i) {
    EXPECT_EQ(std::count(lines[i].begin(), lines[i].end(), ','), 15) << lines[i];
    EXPECT_TRUE(lines[i].ends_with(",1")) << lines[i];
  }
}

TEST(DbCli, CalibrateLeavesOutTheProblemsOfExcludedShapesAtTheGivenBatches) {
  ScratchDir dir;
  const Filled db = filled_for_calibration(dir, {conv3x3(), conv1x1()});
  // conv1x1 is this layer at batch 8; at batch 1 it matches nothing. Its act_sparsity column does not keep the
  // layer's dense measurements in.
  const auto shapes = dir / "judged.csv";
  std::ofstream(shapes) << "name,n,c,k,h,w,r,s,stride,pad,count,act_sparsity\nproj,1,256,64,56,56,1,1,1,0,1,0.6\n";
  const int conv1x1_measurements =
      static_cast<int>(TuningDb::open(db.path).measurements({.problem = conv1x1()}).size());
  const Result r = run_convgen("db calibrate --dry-run --exclude-shapes " + shapes.string() +
                               " --exclude-batch 1,8 --db " + db.path.string());
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(r.output.rfind(fmt::format("{}: {} verified measurements of 1 problems on {}, {} of excluded problems "
                                       "left out\n",
                                       db.path.string(), db.igemm + db.direct - conv1x1_measurements,
                                       describe_gpu(h100()), conv1x1_measurements),
                           0),
            0u)
      << r.output;
  // The excluded problem judges the fit made without it.
  EXPECT_TRUE(contains(r.output, fmt::format("\nheld out ({} measurements of the excluded problems), before: mean "
                                             "Spearman ",
                                             conv1x1_measurements)))
      << r.output;
  EXPECT_TRUE(contains(r.output, "\nheld out, after: mean Spearman ")) << r.output;
}

TEST(DbCli, CalibrateNeedsOneGpuAndEnoughMeasurements) {
  ScratchDir dir;
  const auto path = filled(dir);  // H100 and H200
  Result r = run_convgen("db calibrate --exclude-batch 8 --gpu h200 --db " + path.string());
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.output,
            "convgen: error: db calibrate: --exclude-batch needs --exclude-shapes (the batch sizes of which layers?)\n");
  r = run_convgen("db calibrate --weights " + dir.path().string() + " --gpu h200 --db " + path.string());
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.output,
            "convgen: error: db calibrate: --weights cannot tell which layer a measurement is of; give the "
            "--weight-sparsity and --seed the tune made its filters with\n");
  r = run_convgen("db calibrate --db " + path.string());
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.output, fmt::format("convgen: error: {} holds several GPUs ({}, {}); choose one with --gpu\n",
                                  path.string(), describe_gpu(h100()), describe_gpu(h200())));
  r = run_convgen("db calibrate --gpu h200 --db " + path.string());
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_TRUE(contains(r.output, fmt::format("convgen: error: calibrate: need at least {} measurements of launchable "
                                             "kernels of one family, got ",
                                             min_calibration_samples)))
      << r.output;
  EXPECT_TRUE(contains(r.output, "direct 0, igemm 1")) << r.output;  // every registered family, by name
  EXPECT_EQ(load_calibration(TuningDb::open(path), h200()), std::nullopt);
  const auto empty = dir / "empty.sqlite";
  r = run_convgen("db calibrate --db " + empty.string());
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.output, "convgen: error: " + empty.string() + " holds no measurements\n");
}

TEST(DbCli, ADatabaseFileThatIsNotSqliteIsAnError) {
  ScratchDir dir;
  const auto path = dir / "junk.sqlite";
  std::ofstream(path) << "not a database at all, just a plain text file with enough bytes in it to matter\n";
  const Result r = run_convgen("db list --db " + path.string());
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.output, "convgen: error: " + path.string() + ": not a tuning database (the file is not SQLite)\n");
}

TEST(DbCli, MergeCombinesShardFilesSaysWhatEachAddedAndChangesNothingTheSecondTime) {
  ScratchDir dir;
  {
    TuningDb shard0 = TuningDb::open(dir / "tune-0.sqlite");
    shard0.record(measured(h100(), conv3x3(), igemm(64), 41.5));
    shard0.record(failed(h100(), conv1x1(), igemm(32), MeasurementStatus::wrong_result, "rel_l2 0.5 > 1e-05"));
    TuningDb shard1 = TuningDb::open(dir / "tune-1.sqlite");
    shard1.record(measured(h100(), conv1x1(), igemm(64), 20.0));
    shard1.record(measured(h100(), conv3x3(), igemm(128), 38.25));
  }
  const std::string inputs = (dir / "tune-0.sqlite").string() + " " + (dir / "tune-1.sqlite").string();
  const auto target = dir / "all.sqlite";
  Result r = run_convgen("db merge " + inputs + " --into " + target.string());
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(r.output, fmt::format("{}: 2 measurements added (0 already there), 1 best choices added or made faster\n"
                                  "{}: 2 measurements added (0 already there), 2 best choices added or made faster\n"
                                  "merged 2 databases into {}: 4 measurements added, 4 measurements and 2 best "
                                  "choices in all\n",
                                  (dir / "tune-0.sqlite").string(), (dir / "tune-1.sqlite").string(), target.string()));
  EXPECT_EQ(TuningDb::open(target).best(h100(), conv3x3())->kernel, igemm(128));
  r = run_convgen("db merge " + inputs + " --into " + target.string());
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_TRUE(contains(r.output, "merged 2 databases into " + target.string() +
                                     ": 0 measurements added, 4 measurements and 2 best choices in all\n"))
      << r.output;
}

TEST(DbCli, MergeRefusesAnotherGpuUnlessAllowedAndNeedsItsTarget) {
  ScratchDir dir;
  const auto path = filled(dir);  // H100 and H200 records
  const auto target = dir / "all.sqlite";
  Result r = run_convgen("db merge " + path.string() + " --into " + target.string());
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.output, fmt::format("convgen: error: merge: records of another GPU than {} (the GPU of {}, the first "
                                  "input): {}: {}; merge with --allow-other-gpus to keep them anyway\n",
                                  describe_gpu(h100()), path.string(), path.string(), describe_gpu(h200())));
  r = run_convgen("db merge " + path.string() + " --allow-other-gpus --into " + target.string());
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(TuningDb::open(target).list_best().size(), 2u);
  r = run_convgen("db merge " + path.string());
  EXPECT_NE(r.exit_code, 0);
  EXPECT_TRUE(contains(r.output, "--into is required")) << r.output;
}

}  // namespace
}  // namespace convgen
