// zero_pass_compile_test: the zero pass (conv/zero_pass.hpp) compiles for sm_80 and sm_90, its entry there, without
// spills or a stack.
#include <gtest/gtest.h>

#include "conv/zero_pass.hpp"

namespace convgen {
namespace {

TEST(ZeroPassCompile, CompilesForSm80AndSm90WithoutSpills) {
  for (const char* arch : {"sm_80", "sm_90"}) {
    const Cubin& cubin = zero_pass_cubin(arch);
    EXPECT_EQ(cubin.arch, arch);
    EXPECT_FALSE(cubin.image.empty()) << arch;
    const auto report = cubin.entry_reports.find(kZeroPassEntry);
    ASSERT_NE(report, cubin.entry_reports.end()) << arch << ": no ptxas report for " << kZeroPassEntry << "\n"
                                                 << cubin.log;
    EXPECT_EQ(report->second.spill_store_bytes, 0) << arch;
    EXPECT_EQ(report->second.stack_bytes, 0) << arch;
    EXPECT_EQ(&zero_pass_cubin(arch), &cubin) << arch << ": compiled again";
  }
}

}  // namespace
}  // namespace convgen
