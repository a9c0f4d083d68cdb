// affine_concat_compile_test: the pre-activation pass (conv/affine_concat.hpp) compiles for sm_80 and sm_90 in every
// element type and vector width it runs, its entry there, without spills or a stack.
#include <gtest/gtest.h>

#include "conv/affine_concat.hpp"

namespace convgen {
namespace {

TEST(AffineConcatCompile, EveryElementAndVectorCompilesForSm80AndSm90WithoutSpills) {
  for (const char* arch : {"sm_80", "sm_90"})
    for (Precision precision : {Precision::fp32, Precision::fp16, Precision::bf16})
      for (int vector : {1, 2, 4, 8}) {
        if (vector * element_bytes(precision) > 16) continue;
        const Cubin& cubin = affine_concat_cubin(arch, precision, vector);
        const std::string label = fmt::format("{} {} vector {}", arch, precision, vector);
        EXPECT_EQ(cubin.arch, arch) << label;
        const auto report = cubin.entry_reports.find(kAffineConcatEntry);
        ASSERT_NE(report, cubin.entry_reports.end()) << label << ": no ptxas report for " << kAffineConcatEntry << "\n"
                                                     << cubin.log;
        EXPECT_EQ(report->second.spill_store_bytes, 0) << label;
        EXPECT_EQ(report->second.stack_bytes, 0) << label;
        EXPECT_EQ(&affine_concat_cubin(arch, precision, vector), &cubin) << label << ": compiled again";
      }
}

}  // namespace
}  // namespace convgen
