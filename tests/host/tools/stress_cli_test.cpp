// stress_cli_test: `convgen stress` without a GPU: --dry-run lists and compiles the seeded problems' kernels, the
// listing is the same for a seed, bad options are named, and a real run says there is no device.
#include <filesystem>
#include <fstream>
#include <regex>
#include <string>

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "runtime/driver.hpp"
#include "support/run_convgen.hpp"
#include "support/scratch_dir.hpp"

namespace convgen {
namespace {

using testing_support::CommandResult;
using testing_support::run_convgen;

// The listing without its elapsed time ("in 0 s"), which a loaded machine (the sanitizer build in CI) can round
// differently from one run to the next.
std::string without_elapsed_time(const std::string& output) {
  return std::regex_replace(output, std::regex(R"(, in [0-9]+ s \()"), ", in T s (");
}

TEST(StressCli, DryRunListsEveryProblemsKernelsTheSameWayForASeed) {
  const std::string args = "stress --dry-run --no-compile --gpu h100_sxm --count 30 --seed 1";
  const CommandResult r = run_convgen(args);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  // Problem 0 of seed 1 (tests/host/generator/random_problems_test.cpp pins it) and its default kernels.
  EXPECT_NE(r.output.find("0 n1_c33_k3_i1x12x17_f1x1x1_s1x1x1_p0x0x0_d1x2x2_g1_nhwc_fp32: direct_"), std::string::npos)
      << r.output;
  EXPECT_NE(r.output.find("# convgen stress: 30 problems of seed 1 (2-D, 3-D; fp32; at most 16777216 MACs each), "
                          "chosen, not compiled on NVIDIA H100"),
            std::string::npos)
      << r.output;
  for (const char* axis :
       {"| dims | 1-D 0, 2-D 12, 3-D 18 |", "| groups | ", "| filter extent | ", "| stride | ", "| epilogue | "})
    EXPECT_NE(r.output.find(axis), std::string::npos) << axis << "\n" << r.output;
  EXPECT_NE(without_elapsed_time(r.output), r.output) << "the summary line names its elapsed time";
  EXPECT_EQ(without_elapsed_time(run_convgen(args).output), without_elapsed_time(r.output));
  EXPECT_NE(without_elapsed_time(run_convgen("stress --dry-run --no-compile --gpu h100_sxm --count 30 --seed 2").output),
            without_elapsed_time(r.output));
}

TEST(StressCli, DryRunCompilesEveryKernelAndWritesTheJsonSummary) {
  const auto out = testing_support::process_scratch() / "convgen_stress_cli_test.json";
  std::filesystem::remove(out);
  const CommandResult r = run_convgen(
      "stress --dry-run --no-cache --gpu h100_sxm --count 4 --seed 3 "
      "--families direct,igemm --random-candidates 1 --out " +
      out.string());
  ASSERT_EQ(r.exit_code, 0) << r.output;
  std::ifstream in(out);
  const nlohmann::json report = nlohmann::json::parse(in);
  EXPECT_EQ(report["mode"], "compiled");
  EXPECT_EQ(report["seed"], 3);
  EXPECT_EQ(report["failures"].size(), 0u);
  ASSERT_EQ(report["families"].size(), 2u);
  for (const char* family : {"direct", "igemm"}) {
    const nlohmann::json& f = report["families"][family];
    EXPECT_EQ(f["problems"], 4) << family;
    EXPECT_GT(f["kernels"].get<int>(), 0) << family;
    EXPECT_EQ(f["compiled"], f["kernels"]) << family;
    EXPECT_EQ(f["failed"], 0) << family;
  }
  int defaults = 0;
  for (const nlohmann::json& result : report["results"]) defaults += result["default"].get<bool>() ? 1 : 0;
  EXPECT_LT(defaults, static_cast<int>(report["results"].size()));  // random candidates too
  EXPECT_EQ(report["coverage"]["dims"]["2-D"].get<int>() + report["coverage"]["dims"].value("3-D", 0), 4);
  std::filesystem::remove(out);
}

TEST(StressCli, BadOptionsAreNamed) {
  const auto error = [](const std::string& args) { return run_convgen("stress --dry-run --gpu h100_sxm " + args); };
  CommandResult r = error("--dims 2,4");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.output, "convgen: error: --dims: unknown '4', expected a list of 1, 2, 3\n");
  r = error("--precision fp32,fp8");
  EXPECT_EQ(r.output,
            "convgen: error: --precision: unknown 'fp8', expected a list of fp32, tf32, fp16, bf16 (or all)\n");
  r = error("--families direct,nope");
  EXPECT_NE(r.output.find("convgen: error: unknown kernel family 'nope', expected one of "), std::string::npos)
      << r.output;
  r = error("--max-macs 10");
  EXPECT_EQ(r.output, "convgen: error: --max-macs must be at least 4096, got 10\n");
  r = run_convgen("stress --no-compile --gpu h100_sxm");
  EXPECT_EQ(r.output, "convgen: error: --no-compile goes with --dry-run\n");
}

TEST(StressCli, WithoutAGpuARunSaysThereIsNoCudaDevice) {
  if (cuda_available()) GTEST_SKIP() << "a CUDA device is present";
  const CommandResult r = run_convgen("stress --count 2");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.output.find("no CUDA device"), std::string::npos) << r.output;
}

}  // namespace
}  // namespace convgen
