// driver_test: without libcuda every GPU entry point says why there is no device; the check macro's message.
#include "runtime/driver.hpp"

#include <gtest/gtest.h>

#include "runtime/device.hpp"
#include "runtime/module.hpp"

namespace convgen {
namespace {

TEST(Driver, AMissingLibraryIsReportedWithTheLoadersReason) {
  const detail::DriverLoad load = detail::load_driver("libconvgen_no_such_driver.so.1");
  EXPECT_EQ(load.device_count, 0);
  EXPECT_TRUE(load.no_device_reason.starts_with("libconvgen_no_such_driver.so.1 could not be loaded ("))
      << load.no_device_reason;
  EXPECT_NE(load.no_device_reason.find("cannot open shared object file"), std::string::npos) << load.no_device_reason;
}

TEST(Driver, ALibraryWithoutTheEntryPointsIsRejectedNamingTheFirstMissingOne) {
  const detail::DriverLoad load = detail::load_driver("libm.so.6");
  EXPECT_EQ(load.no_device_reason,
            "libm.so.6 lacks the entry point cuInit (the driver is older than the CUDA 13.0 headers convgen was built "
            "with)");
  EXPECT_EQ(load.api.cuInit, nullptr);
}

TEST(Driver, WithoutLibcudaNothingIsAvailableAndEveryEntryPointThrowsNoDeviceError) {
  if (cuda_available()) GTEST_SKIP() << "this machine has a CUDA device; the GPU-less path cannot be seen here";
  const std::string prefix = "no CUDA device: ";
  EXPECT_FALSE(no_device_reason().empty());
  EXPECT_EQ(device_count(), 0);
  try {
    driver();
    FAIL() << "expected NoDeviceError";
  } catch (const NoDeviceError& e) {
    EXPECT_EQ(e.what(), prefix + no_device_reason());
  }
  // Where libcuda exists but reports no device, the reason is cuInit's or the device count's instead.
  if (no_device_reason().starts_with("libcuda.so.1")) {
    EXPECT_TRUE(no_device_reason().starts_with("libcuda.so.1 could not be loaded (")) << no_device_reason();
  }
  EXPECT_THROW(query_device(0), NoDeviceError);
  EXPECT_THROW(driver_version(), NoDeviceError);
  EXPECT_THROW(Context(0), NoDeviceError);
  EXPECT_THROW(DeviceBuffer(16), NoDeviceError);
  EXPECT_THROW(Stream(), NoDeviceError);
}

TEST(Driver, CheckMacroNamesTheExpressionFileAndLine) {
  EXPECT_NO_THROW(detail::cu_check(CUDA_SUCCESS, "cuInit(0)", "driver.cpp", 1));
  try {
    detail::cu_check(CUDA_ERROR_OUT_OF_MEMORY, "cuMemAlloc(&p, n)", "module.cpp", 42);
    FAIL() << "expected ApiError";
  } catch (const ApiError& e) {
    // The error's name comes from the driver's tables, so its text depends on whether one is loaded.
    const std::string expected = "module.cpp:42: cuMemAlloc(&p, n) failed: " + cu_error_text(CUDA_ERROR_OUT_OF_MEMORY);
    EXPECT_EQ(e.what(), expected);
  }
}

TEST(Driver, ErrorTextWithoutADriverGivesTheNumber) {
  if (cuda_available()) {
    EXPECT_EQ(cu_error_text(CUDA_ERROR_OUT_OF_MEMORY), "CUDA_ERROR_OUT_OF_MEMORY (out of memory)");
  } else {
    EXPECT_EQ(cu_error_text(CUDA_ERROR_OUT_OF_MEMORY), "CUDA error 2");
  }
}

}  // namespace
}  // namespace convgen
