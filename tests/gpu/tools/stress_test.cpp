// stress_test: `convgen stress` on the GPU: 40 seeded random problems, every family's default kernel and one random
// candidate each, verified against the float64 reference with no failure.
#include <filesystem>
#include <fstream>
#include <string>

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "runtime/driver.hpp"
#include "support/run_convgen.hpp"

namespace convgen {
namespace {

TEST(Stress, FortyRandomProblemsVerifyInEveryFamilyWithoutAFailure) {
  if (!cuda_available()) GTEST_SKIP() << "no CUDA device: " << no_device_reason();
  const auto out = std::filesystem::temp_directory_path() / "convgen_gpu_stress_test.json";
  std::filesystem::remove(out);
  const testing_support::CommandResult r = testing_support::run_convgen(
      "stress --count 40 --seed 1 --precision all --random-candidates 1 --out " + out.string());
  if (const auto summary = r.output.find("# convgen stress"); summary != std::string::npos)
    std::printf("%s\n", r.output.substr(summary).c_str());
  EXPECT_EQ(r.exit_code, 0) << r.output;
  std::ifstream in(out);
  const nlohmann::json report = nlohmann::json::parse(in);
  EXPECT_EQ(report["mode"], "verified");
  EXPECT_EQ(report["failures"].size(), 0u) << report["failures"].dump(2);
  int kernels = 0;
  for (const auto& [family, f] : report["families"].items()) {
    EXPECT_EQ(f["failed"], 0) << family;
    EXPECT_EQ(f["passed"], f["kernels"]) << family;
    kernels += f["kernels"].get<int>();
  }
  EXPECT_GT(kernels, 80);
}

}  // namespace
}  // namespace convgen
