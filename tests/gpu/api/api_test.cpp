// api_test: the public API on the GPU: the README example runs, policies choose and verify, one build per problem.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <string>
#include <thread>
#include <vector>

#include <fmt/format.h>

#include "convgen/convgen.hpp"
#include "measure/verification.hpp"
#include "reference/reference.hpp"
#include "runtime/driver.hpp"
#include "runtime/module.hpp"
#include "support/scratch_dir.hpp"
#include "tuner/tuning_db.hpp"

namespace convgen {
namespace {

namespace fs = std::filesystem;

// A fresh folder under the temporary directory, removed at the end of the test.
struct ScratchDir : testing_support::ScratchDir {
  ScratchDir() : testing_support::ScratchDir("convgen-api-test") {}
};

Problem small_problem() { return parse_problem_key("n1_c32_k32_i1x14x14_f1x3x3_s1x1x1_p0x1x1_d1x1x1_g1_nchw_fp32"); }

// Runs `op` through the verification pipeline (an op is a candidate like any other) and returns its error.
ErrorStats run_and_compare(const ConvOp& op) {
  ConvMeasurement measurement(op.problem(), {.seed = 7});
  Stream stream;
  const ConvCandidate candidate{op.kernel_name(), [&op](const ConvPointers& t, CUstream s) {
                                  op.run(t.activation, t.filter, t.output, s);
                                }};
  return measurement.verify(candidate, stream).stats;
}

struct Ran {
  int exit_code = -1;
  std::string output;
};

Ran run_command(const std::string& command) {
  Ran ran;
  FILE* pipe = popen((command + " 2>&1").c_str(), "r");
  if (pipe == nullptr) return ran;
  char buffer[4096];
  while (std::fgets(buffer, sizeof buffer, pipe) != nullptr) ran.output += buffer;
  const int status = pclose(pipe);
  ran.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return ran;
}

class ApiGpu : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!cuda_available()) GTEST_SKIP() << "no CUDA device: " << no_device_reason();
  }
  ContextOptions options(TuningPolicy policy) const {
    return {.cache_dir = scratch_ / "jit", .database = scratch_ / "tuning.sqlite", .policy = policy, .tune_budget = 3};
  }
  ScratchDir scratch_;
};

// Device memory is on the context's device. (Pageable host memory is not asserted on: with HMM the driver may know
// it.)
TEST_F(ApiGpu, PointerDeviceNamesTheDeviceOfDeviceMemory) {
  Context context(0);
  DeviceBuffer buffer(256);
  EXPECT_EQ(pointer_device(buffer.ptr()), 0);
}

TEST_F(ApiGpu, TheReadmeExampleTunesOnFirstRunAndReadsTheDatabaseOnTheNext) {
  const std::string command =
      fmt::format("CONVGEN_DATA_DIR='{}' CONVGEN_CACHE_DIR='{}' '{}/examples/api/convgen_api_example'",
                  (scratch_ / "data").string(), (scratch_ / "cache").string(), CONVGEN_BINARY_DIR);
  const Ran first = run_command(command);
  EXPECT_EQ(first.exit_code, 0) << first.output;
  EXPECT_NE(first.output.find("(tuned now)"), std::string::npos) << first.output;
  EXPECT_TRUE(fs::exists(scratch_ / "data" / "tuning.sqlite"));
  const Ran second = run_command(command);
  EXPECT_EQ(second.exit_code, 0) << second.output;
  EXPECT_NE(second.output.find("(database)"), std::string::npos) << second.output;
}

TEST_F(ApiGpu, EightThreadsAskingForOneProblemBuildItOnce) {
  ConvContext context(options(TuningPolicy::tune_on_first_use));
  const Problem problem = small_problem();
  std::vector<const ConvOp*> ops(8, nullptr);
  std::vector<std::thread> threads;
  for (std::size_t i = 0; i < ops.size(); ++i) threads.emplace_back([&, i] { ops[i] = &context.conv(problem); });
  for (std::thread& t : threads) t.join();

  for (const ConvOp* op : ops) EXPECT_EQ(op, ops[0]);
  EXPECT_EQ(context.stats(), (ConvContext::Stats{.built = 1, .database_hits = 0, .tuned = 1, .model_only = 0}));
  EXPECT_EQ(ops[0]->problem(), problem);
  EXPECT_EQ(ops[0]->source(), "tuned now");
  const ErrorStats error = run_and_compare(*ops[0]);
  EXPECT_TRUE(passes(error, problem.precision)) << "rel_l2 " << error.rel_l2 << ", " << error.nan_count << " NaN";

  // The tune was recorded: a database-only context on the same file serves the same kernel.
  ConvContext reader(options(TuningPolicy::database_only));
  const ConvOp& again = reader.conv(problem);
  EXPECT_EQ(again.source(), "database");
  EXPECT_EQ(again.kernel_name(), ops[0]->kernel_name());
  EXPECT_EQ(reader.stats(), (ConvContext::Stats{.built = 1, .database_hits = 1, .tuned = 0, .model_only = 0}));
}

// Three valid problems, then an invalid one (prepare skips it, conv() reports it).
std::vector<Problem> three_problems_and_an_invalid_one() {
  std::vector<Problem> problems = {small_problem(), small_problem(), small_problem(), small_problem()};
  problems[1].k = 16;
  problems[2].padding = {0, 0, 0};
  problems[3].c = 0;
  return problems;
}

TEST_F(ApiGpu, PrepareTunesEveryNewProblemOnceInOnePipelineAndConvReturnsThoseOps) {
  ConvContext context(options(TuningPolicy::tune_on_first_use));
  std::vector<Problem> problems = three_problems_and_an_invalid_one();
  const Problem repeated = problems[1];
  problems.push_back(repeated);

  EXPECT_EQ(context.prepare(problems), 3);
  EXPECT_EQ(context.stats(), (ConvContext::Stats{.built = 3, .database_hits = 0, .tuned = 3, .model_only = 0}));
  for (std::size_t i = 0; i < 3; ++i) {
    const ConvOp& op = context.conv(problems[i]);
    EXPECT_EQ(op.source(), "tuned now");
    EXPECT_EQ(op.problem(), problems[i]);
    const ErrorStats error = run_and_compare(op);
    EXPECT_TRUE(passes(error, Precision::fp32)) << op.kernel_name() << ": rel_l2 " << error.rel_l2;
  }
  EXPECT_EQ(context.stats().built, 3);  // conv() built nothing more
  EXPECT_THROW(context.conv(problems[3]), InputError);
  EXPECT_EQ(context.prepare(problems), 0);  // all known now

  // Recorded: another context on the same database tunes nothing and builds them from it, in prepare().
  for (const TuningPolicy policy : {TuningPolicy::tune_on_first_use, TuningPolicy::database_only}) {
    ConvContext other(options(policy));
    EXPECT_EQ(other.prepare(problems), 3) << to_string(policy);
    EXPECT_EQ(other.stats(), (ConvContext::Stats{.built = 3, .database_hits = 3, .tuned = 0, .model_only = 0}));
    EXPECT_EQ(other.conv(problems[2]).source(), "database");
    EXPECT_EQ(other.stats().built, 3);
  }
}

TEST_F(ApiGpu, PrepareUnderCostModelOnlyCompilesEveryProblemsDefaultsAtOnceAndBuildsVerifiedOps) {
  ConvContext context(options(TuningPolicy::cost_model_only));
  std::vector<Problem> problems = three_problems_and_an_invalid_one();
  EXPECT_EQ(context.prepare(problems), 3);
  EXPECT_EQ(context.stats(), (ConvContext::Stats{.built = 3, .database_hits = 0, .tuned = 0, .model_only = 3}));
  for (std::size_t i = 0; i < 3; ++i) {
    const ConvOp& op = context.conv(problems[i]);
    EXPECT_EQ(op.source(), "cost model");
    const ErrorStats error = run_and_compare(op);
    EXPECT_TRUE(passes(error, Precision::fp32)) << op.kernel_name() << ": rel_l2 " << error.rel_l2;
  }
  EXPECT_EQ(context.stats().built, 3);
  EXPECT_THROW(context.conv(problems[3]), InputError);
  EXPECT_EQ(context.prepare(problems), 0);
  // database_only without records builds nothing, and conv() then names the problem.
  ConvContext database_only(options(TuningPolicy::database_only));
  EXPECT_EQ(database_only.prepare(problems), 0);
  EXPECT_THROW(database_only.conv(problems[0]), InputError);
}

TEST_F(ApiGpu, DifferentProblemsFromManyThreadsEachBuildOnceAndVerify) {
  ConvContext context(options(TuningPolicy::cost_model_only));
  std::vector<Problem> problems = {small_problem(), small_problem(), small_problem()};
  problems[1].k = 16;
  problems[2].padding = {0, 0, 0};
  std::vector<const ConvOp*> ops(6, nullptr);
  std::vector<std::thread> threads;
  for (std::size_t i = 0; i < ops.size(); ++i)
    threads.emplace_back([&, i] { ops[i] = &context.conv(problems[i % problems.size()]); });
  for (std::thread& t : threads) t.join();

  EXPECT_EQ(context.stats(), (ConvContext::Stats{.built = 3, .database_hits = 0, .tuned = 0, .model_only = 3}));
  for (std::size_t i = 0; i < ops.size(); ++i) {
    EXPECT_EQ(ops[i], ops[i % problems.size()]);
    EXPECT_EQ(ops[i]->problem(), problems[i % problems.size()]);
    const ErrorStats error = run_and_compare(*ops[i]);
    EXPECT_TRUE(passes(error, Precision::fp32)) << ops[i]->kernel_name() << ": rel_l2 " << error.rel_l2;
  }
}

TEST_F(ApiGpu, DatabaseOnlyWithoutARecordNamesTheProblemAndHowToTuneIt) {
  ConvContext context(options(TuningPolicy::database_only));
  const Problem problem = small_problem();
  const std::string db = (scratch_ / "tuning.sqlite").string();
  try {
    context.conv(problem);
    FAIL() << "expected InputError";
  } catch (const InputError& e) {
    EXPECT_EQ(std::string(e.what()),
              fmt::format("no tuning record for problem 'n1_c32_k32_i1x14x14_f1x3x3_s1x1x1_p0x1x1_d1x1x1_g1_nchw_fp32' "
                          "on {} in '{}': tune it first (convgen tune --shapes FILE --db '{}' with a shapes file "
                          "holding the problem) or use the tune_on_first_use policy",
                          describe_gpu(context.gpu()), db, db));
  }
  // A failure is not cached, and counts as no build.
  EXPECT_THROW(context.conv(problem), InputError);
  EXPECT_EQ(context.stats(), ConvContext::Stats{});
}

TEST_F(ApiGpu, CostModelOnlyRunsAVerifiedKernelWithoutMeasuring) {
  ConvContext context(options(TuningPolicy::cost_model_only));
  const Problem problem = small_problem();
  const ConvOp& op = context.conv(problem);
  EXPECT_EQ(op.source(), "cost model");
  EXPECT_EQ(op.chosen_by(), ChosenBy::cost_model);
  EXPECT_EQ(&context.conv(problem), &op);
  EXPECT_EQ(context.stats(), (ConvContext::Stats{.built = 1, .database_hits = 0, .tuned = 0, .model_only = 1}));
  const ErrorStats error = run_and_compare(op);
  EXPECT_TRUE(passes(error, problem.precision)) << op.kernel_name() << ": rel_l2 " << error.rel_l2;
  // Nothing was measured, so nothing was recorded as best.
  EXPECT_EQ(TuningDb::open(scratch_ / "tuning.sqlite").best(context.gpu(), problem), std::nullopt);
}

// The fused epilogue through the API: the op runs with the bias and residual its problem's epilogue reads, verified
// against the reference with the same epilogue; a run without them is refused before anything is enqueued.
TEST_F(ApiGpu, AnOpWithAnEpilogueRunsWithItsBiasAndResidualAndMatchesTheReference) {
  ConvContext context(options(TuningPolicy::cost_model_only));
  const Problem problem =
      parse_problem_key("n1_c32_k32_i1x14x14_f1x3x3_s1x1x1_p0x1x1_d1x1x1_g1_nchw_fp32_ealpha:1.5+bias+add:0.5+relu6");
  const ConvOp& op = context.conv(problem);
  ConvMeasurement measurement(op.problem(), {.seed = 7});
  Stream stream;
  const ConvCandidate candidate{op.kernel_name(), [&op](const ConvPointers& t, CUstream s) {
                                  op.run(t.activation, t.filter, t.output, t.bias, t.residual, s);
                                }};
  const Verification v = measurement.verify(candidate, stream);
  EXPECT_TRUE(v.passed) << v.failure;
  const ConvPointers t = measurement.pointers(0);
  try {
    op.run(t.activation, t.filter, t.output, stream.get());
    FAIL() << "expected InputError";
  } catch (const InputError& e) {
    EXPECT_EQ(std::string(e.what()),
              problem_key(problem) + ": its epilogue adds a bias (K values): the bias pointer is null");
  }
}

TEST_F(ApiGpu, AnInvalidProblemIsRefusedWithItsReason) {
  ConvContext context(options(TuningPolicy::cost_model_only));
  Problem problem = small_problem();
  problem.groups = 3;  // 32 channels do not split into 3 groups
  try {
    context.conv(problem);
    FAIL() << "expected InputError";
  } catch (const InputError& e) {
    EXPECT_EQ(std::string(e.what()), fmt::format("problem '{}': {}", problem_key(problem), validate(problem)));
  }
}

}  // namespace
}  // namespace convgen
