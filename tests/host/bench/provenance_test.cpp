// provenance_test: the command line quoting, the version compiled in, the JSON, and the no-device error.
#include "bench/provenance.hpp"

#include <regex>
#include <vector>

#include <gtest/gtest.h>

#include "runtime/driver.hpp"

namespace convgen {
namespace {

TEST(Provenance, PlainArgumentsStayBare) {
  const std::vector<std::string> args{"convgen", "bench", "--shapes", "shapes/resnet50.csv", "--batch=8"};
  EXPECT_EQ(shell_join(args), "convgen bench --shapes shapes/resnet50.csv --batch=8");
}

TEST(Provenance, ArgumentsAShellWouldSplitAreSingleQuoted) {
  const std::vector<std::string> args{"convgen", "my shapes.csv", "it's", "", "$HOME", "a*b"};
  EXPECT_EQ(shell_join(args), R"(convgen 'my shapes.csv' 'it'\''s' '' '$HOME' 'a*b')");
}

TEST(Provenance, TheVersionAndCommitAreCompiledIn) {
  // The commit is written at build time from git (cmake/VersionScript.cmake): a hash, maybe "-dirty".
  EXPECT_TRUE(std::regex_match(convgen_version(), std::regex(R"(\d+\.\d+\.\d+)"))) << convgen_version();
  EXPECT_TRUE(std::regex_match(convgen_commit(), std::regex(R"([0-9a-f]{12}(-dirty)?)"))) << convgen_commit();
}

TEST(Provenance, JsonHasEveryFieldInOrderAndNullsForWhatWasNotRead) {
  const Provenance p{
      .gpu = "NVIDIA H100 80GB HBM3",
      .arch = "sm_90",
      .driver = "",
      .cuda_driver = "13.0",
      .cuda_toolkit = "13.0",
      .nvrtc = "13.0",
      .cudnn = "9.14.0",
      .convgen_version = "0.1.0",
      .convgen_commit = "abc123def456",
      .command_line = "convgen bench",
      .date = "2025-03-01T12:00:00Z",
      .nvml = "libnvidia-ml.so.1 could not be loaded (gone)",
      .start = {.sm_clock_mhz = 1980, .time = "2025-03-01T12:00:00Z"},
      .end = {.time = "2025-03-01T12:01:00Z"},
  };
  EXPECT_EQ(to_json(p).dump(),
            R"({"gpu":"NVIDIA H100 80GB HBM3","arch":"sm_90","driver":"","cuda_driver":"13.0","cuda_toolkit":"13.0",)"
            R"("nvrtc":"13.0","cudnn":"9.14.0","convgen_version":"0.1.0","convgen_commit":"abc123def456",)"
            R"("command_line":"convgen bench","date":"2025-03-01T12:00:00Z",)"
            R"j("nvml":"libnvidia-ml.so.1 could not be loaded (gone)",)j"
            R"("start":{"sm_clock_mhz":1980.0,"power_w":null,"time":"2025-03-01T12:00:00Z"},)"
            R"("end":{"sm_clock_mhz":null,"power_w":null,"time":"2025-03-01T12:01:00Z"}})");
  Provenance served = p;
  served.nvml = "";
  EXPECT_TRUE(to_json(served)["nvml"].is_null());
}

TEST(Provenance, CollectingNeedsADevice) {
  if (cuda_available()) {
    const Provenance p = collect_provenance(0, Nvml::open(0), "9.x", "convgen bench");
    EXPECT_FALSE(p.gpu.empty());
    EXPECT_TRUE(p.arch.starts_with("sm_")) << p.arch;
    EXPECT_FALSE(p.cuda_driver.empty());
    EXPECT_EQ(p.cudnn, "9.x");
    EXPECT_EQ(p.command_line, "convgen bench");
    EXPECT_EQ(p.convgen_version, convgen_version());
    EXPECT_EQ(p.start.time.size(), 20u) << p.start.time;
  } else {
    EXPECT_THROW(collect_provenance(0, nullptr, "", ""), NoDeviceError);
  }
}

}  // namespace
}  // namespace convgen
