// plan_passes_compile_test: the plan passes (conv/plan_passes.hpp) compile for sm_80 and sm_90, every entry there,
// without spills or a stack.
#include <gtest/gtest.h>

#include "conv/plan_passes.hpp"

namespace convgen {
namespace {

TEST(PlanPassesCompile, CompileForSm80AndSm90WithoutSpills) {
  for (const char* arch : {"sm_80", "sm_90"}) {
    const Cubin& cubin = plan_passes_cubin(arch);
    EXPECT_EQ(cubin.arch, arch);
    EXPECT_FALSE(cubin.image.empty()) << arch;
    for (const char* entry : {kZeroPassEntry, kReluPass32Entry, kReluPass16Entry}) {
      const auto report = cubin.entry_reports.find(entry);
      ASSERT_NE(report, cubin.entry_reports.end()) << arch << ": no ptxas report for " << entry << "\n" << cubin.log;
      EXPECT_EQ(report->second.spill_store_bytes, 0) << arch << " " << entry;
      EXPECT_EQ(report->second.stack_bytes, 0) << arch << " " << entry;
    }
    EXPECT_EQ(&plan_passes_cubin(arch), &cubin) << arch << ": compiled again";
  }
}

}  // namespace
}  // namespace convgen
