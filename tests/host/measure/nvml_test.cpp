// nvml_test (host): what loading NVML says when it cannot, and what the readings are without it.
#include "measure/nvml.hpp"

#include <regex>

#include <gtest/gtest.h>

namespace convgen {
namespace {

TEST(Nvml, AMissingLibraryIsNamedWithTheLoadersReason) {
  const detail::NvmlLoad load = detail::load_nvml("libconvgen-no-such-nvml.so.1");
  EXPECT_EQ(load.unavailable,
            "libconvgen-no-such-nvml.so.1 could not be loaded (libconvgen-no-such-nvml.so.1: cannot open shared "
            "object file: No such file or directory)");
  EXPECT_EQ(load.api.nvmlInit_v2, nullptr);
}

TEST(Nvml, ALibraryWithoutTheEntryPointsNamesTheFirstMissing) {
  const detail::NvmlLoad load = detail::load_nvml("libm.so.6");
  EXPECT_EQ(load.unavailable, "libm.so.6 lacks the entry point nvmlInit_v2");
}

TEST(Nvml, ErrorTextWithoutTheLibraryGivesTheNumber) {
  EXPECT_EQ(detail::nvml_error_text(detail::NvmlApi{}, detail::kNvmlErrorNotSupported), "NVML error 3");
}

TEST(Nvml, OpenAndItsReasonAgree) {
  if (Nvml::open(0) == nullptr) {
    EXPECT_FALSE(nvml_unavailable_reason(0).empty());
  } else {
    EXPECT_EQ(nvml_unavailable_reason(0), "");
    EXPECT_EQ(Nvml::open(0), Nvml::open(0)) << "one object per device";
  }
}

TEST(Nvml, WithoutNvmlTheStateHasOnlyTheTime) {
  const DeviceState state = device_state(nullptr);
  EXPECT_FALSE(state.sm_clock_mhz.has_value());
  EXPECT_FALSE(state.power_w.has_value());
  EXPECT_TRUE(std::regex_match(state.time, std::regex(R"(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ)"))) << state.time;
}

TEST(Nvml, WithoutNvmlEnergyIsAbsentWithAReasonAndNothingRuns) {
  int calls = 0;
  const EnergyMeasurement energy = energy_per_call(
      nullptr, [&] { ++calls; }, nullptr);
  EXPECT_FALSE(energy.mj_per_call.has_value());
  EXPECT_EQ(energy.unavailable, "NVML is not available");
  EXPECT_EQ(calls, 0);
}

}  // namespace
}  // namespace convgen
