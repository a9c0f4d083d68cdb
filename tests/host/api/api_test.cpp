// api_test: the public API on the host: name tables, errors without a GPU, the README copy of the example.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "convgen/convgen.hpp"
#include "runtime/driver.hpp"

namespace convgen {
namespace {

std::string read_text(const std::filesystem::path& path) {
  std::ifstream in(path);
  EXPECT_TRUE(in) << "cannot read " << path;
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

// Returns the text between the first line that is exactly `begin` and the next line that starts with `end`.
std::string between(const std::string& text, const std::string& begin, const std::string& end) {
  const std::size_t start = text.find(begin + "\n");
  if (start == std::string::npos) return "<no '" + begin + "'>";
  const std::size_t from = start + begin.size() + 1;
  const std::size_t to = text.find("\n" + end, from - 1);
  if (to == std::string::npos) return "<no '" + end + "' after '" + begin + "'>";
  return text.substr(from, to + 1 - from);
}

TEST(TuningPolicy, NamesRoundTripThroughTheTable) {
  EXPECT_EQ(to_string(TuningPolicy::database_only), "database_only");
  EXPECT_EQ(to_string(TuningPolicy::cost_model_only), "cost_model_only");
  EXPECT_EQ(to_string(TuningPolicy::tune_on_first_use), "tune_on_first_use");
  for (const auto& [value, name] : EnumNames<TuningPolicy>::table) EXPECT_EQ(parse_enum<TuningPolicy>(name), value);
  EXPECT_EQ(parse_enum<TuningPolicy>("tune"), std::nullopt);
  EXPECT_EQ(enum_choices<TuningPolicy>(), "database_only, cost_model_only, tune_on_first_use");
  EXPECT_EQ(fmt::format("{}", TuningPolicy::cost_model_only), "cost_model_only");
}

TEST(ChosenBy, NamesAreWhatConvOpSourceReports) {
  EXPECT_EQ(to_string(ChosenBy::database), "database");
  EXPECT_EQ(to_string(ChosenBy::tuned_now), "tuned now");
  EXPECT_EQ(to_string(ChosenBy::cost_model), "cost model");
}

TEST(ContextOptions, DefaultsToDeviceZeroAndTuningOnFirstUse) {
  const ContextOptions options;
  EXPECT_EQ(options.device, 0);
  EXPECT_EQ(options.policy, TuningPolicy::tune_on_first_use);
  EXPECT_EQ(options.tune_budget, 10);
  EXPECT_EQ(options.cache_dir, std::nullopt);
  EXPECT_EQ(options.database, std::nullopt);
}

TEST(ConvContext, WithoutAGpuThrowsNoDeviceErrorSayingWhy) {
  if (cuda_available()) GTEST_SKIP() << "a CUDA device is present";
  try {
    ConvContext context;
    FAIL() << "expected NoDeviceError";
  } catch (const NoDeviceError& e) {
    EXPECT_EQ(std::string(e.what()), "no CUDA device: " + no_device_reason());
  }
}

TEST(PointerDevice, IsNothingWithoutADriverOrForAnAddressItDoesNotKnow) {
  EXPECT_EQ(pointer_device(0), std::nullopt);
  int on_the_stack = 0;
  EXPECT_EQ(pointer_device(reinterpret_cast<CUdeviceptr>(&on_the_stack)), std::nullopt);
}

TEST(ConvContext, RefusesANegativeTuneBudgetBeforeTouchingTheDevice) {
  try {
    ConvContext context({.tune_budget = -1});
    FAIL() << "expected InputError";
  } catch (const InputError& e) {
    EXPECT_STREQ(e.what(), "tune_budget must be 0 (every candidate) or more, got -1");
  }
}

TEST(ApiExample, WithoutAGpuSaysSoAndExitsWithTwo) {
  if (cuda_available()) GTEST_SKIP() << "a CUDA device is present";
  const std::string command = std::string(CONVGEN_BINARY_DIR) + "/examples/api/convgen_api_example 2>&1";
  FILE* pipe = popen(command.c_str(), "r");
  ASSERT_NE(pipe, nullptr);
  std::string output;
  char buffer[4096];
  while (std::fgets(buffer, sizeof buffer, pipe) != nullptr) output += buffer;
  const int status = pclose(pipe);
  ASSERT_TRUE(WIFEXITED(status)) << output;
  EXPECT_EQ(WEXITSTATUS(status), 2) << output;
  EXPECT_EQ(output, "no CUDA device: " + no_device_reason() + "\n");
}

TEST(Readme, UseItFromCppShowsExactlyTheExampleFile) {
  const std::filesystem::path source = CONVGEN_SOURCE_DIR;
  const std::string example =
      between(read_text(source / "examples/api/example.cpp"), "// README-BEGIN", "// README-END");
  const std::string readme = read_text(source / "README.md");
  const std::size_t section = readme.find("\n## Use it from C++\n");
  ASSERT_NE(section, std::string::npos) << "README.md has no 'Use it from C++' section";
  const std::string block = between(readme.substr(section), "```cpp", "```");
  EXPECT_GT(example.size(), 100u);
  EXPECT_EQ(block, example) << "copy examples/api/example.cpp between its README markers into README.md";
}

}  // namespace
}  // namespace convgen
