// stress_test: `convgen stress` on the GPU: seeded random problems, every family's default kernel and one random
// candidate each, verified against the float64 reference with no failure.
#include <filesystem>
#include <fstream>
#include <map>
#include <string>

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "generator/family.hpp"
#include "runtime/driver.hpp"
#include "support/run_convgen.hpp"
#include "support/scratch_dir.hpp"

namespace convgen {
namespace {

// Runs `convgen stress ARGS`, expects no failure, and adds each family's verified kernels to `verified`.
void expect_no_failure(const std::string& args, std::map<std::string, int>& verified) {
  const auto out = testing_support::process_scratch() / "convgen_gpu_stress_test.json";
  std::filesystem::remove(out);
  const testing_support::CommandResult r = testing_support::run_convgen("stress " + args + " --out " + out.string());
  if (const auto summary = r.output.find("# convgen stress"); summary != std::string::npos)
    std::printf("%s\n", r.output.substr(summary).c_str());
  EXPECT_EQ(r.exit_code, 0) << r.output;
  std::ifstream in(out);
  const nlohmann::json report = nlohmann::json::parse(in);
  EXPECT_EQ(report["mode"], "verified");
  EXPECT_EQ(report["failures"].size(), 0u) << report["failures"].dump(2);
  for (const auto& [family, f] : report["families"].items()) {
    EXPECT_EQ(f["failed"], 0) << family;
    EXPECT_EQ(f["passed"], f["kernels"]) << family;
    verified[family] += f["passed"].get<int>();
  }
  std::filesystem::remove(out);
}

// Seed 2's first 40 fp32 problems give every fp32 family some (winograd and weight_sparse three each); 40 more in the
// tensor-core precisions give igemm_tc, igemm_wgmma and sparse24_tc theirs (sparse24_tc 4 kernels on 2 problems, one
// with a 2:4-pruned filter).
TEST(Stress, RandomProblemsVerifyInEveryFamilyWithoutAFailure) {
  if (!cuda_available()) GTEST_SKIP() << "no CUDA device: " << no_device_reason();
  std::map<std::string, int> verified;
  expect_no_failure("--count 40 --seed 2 --random-candidates 1", verified);
  expect_no_failure("--count 40 --seed 2 --precision tf32,fp16,bf16 --random-candidates 1", verified);
  for (const Family* f : all_families()) EXPECT_GT(verified[std::string(f->name())], 0) << f->name();
}

}  // namespace
}  // namespace convgen
