// context_test: the fixture of GPU tests that make a ConvContext of their own: skipped without a CUDA device;
// options() is a cost-model-only context on a JIT cache and tuning database in a scratch folder of the test.
#pragma once

#include <gtest/gtest.h>

#include "convgen/convgen.hpp"
#include "runtime/device.hpp"
#include "support/scratch_dir.hpp"

namespace convgen::testing_support {

class ContextTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!cuda_available()) GTEST_SKIP() << "no CUDA device: " << no_device_reason();
  }
  ContextOptions options() const {
    return {
        .cache_dir = scratch_ / "jit", .database = scratch_ / "tuning.sqlite", .policy = TuningPolicy::cost_model_only};
  }
  ScratchDir scratch_{"convgen-context-test"};
};

}  // namespace convgen::testing_support
