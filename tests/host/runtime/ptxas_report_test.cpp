// ptxas_report_test: a log with several kernels gives each kernel its own figures.
#include <gtest/gtest.h>

#include "runtime/compiler.hpp"

namespace convgen {
namespace {

// An NVRTC 13 log for a program of two kernels (sm_80, so cmem[0] is reported).
const std::string kTwoKernelLog =
    "ptxas info    : 234 bytes gmem, 464 bytes cmem[4]\n"
    "ptxas info    : Compiling entry function 'fill_smem' for 'sm_80'\n"
    "ptxas info    : Function properties for fill_smem\n"
    "ptxas         .     0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads\n"
    "ptxas info    : Used 12 registers, used 1 barriers, 368 bytes cmem[0]\n"
    "ptxas info    : Compile time = 2.619 ms\n"
    "ptxas info    : Compiling entry function 'axpy' for 'sm_80'\n"
    "ptxas info    : Function properties for axpy\n"
    "ptxas         .     8 bytes stack frame, 4 bytes spill stores, 8 bytes spill loads\n"
    "ptxas info    : Used 10 registers, used 0 barriers, 1024 bytes smem, 380 bytes cmem[0]\n"
    "ptxas info    : Compile time = 1.492 ms\n";

TEST(PtxasReports, EachKernelGetsTheFiguresThatFollowItsName) {
  const std::map<std::string, PtxasReport> reports = parse_ptxas_reports(kTwoKernelLog);
  ASSERT_EQ(reports.size(), 2u);
  EXPECT_EQ(reports.at("fill_smem"), (PtxasReport{.registers = 12, .cmem0_bytes = 368}));
  EXPECT_EQ(reports.at("axpy"), (PtxasReport{.registers = 10,
                                             .spill_store_bytes = 4,
                                             .spill_load_bytes = 8,
                                             .smem_bytes = 1024,
                                             .stack_bytes = 8,
                                             .cmem0_bytes = 380}));
}

TEST(PtxasReports, TheSingleReportIsTheFirstKernels) {
  EXPECT_EQ(parse_ptxas_report(kTwoKernelLog), parse_ptxas_reports(kTwoKernelLog).at("fill_smem"));
}

TEST(PtxasReports, AnEmptyLogHasNoKernels) { EXPECT_TRUE(parse_ptxas_reports("").empty()); }

}  // namespace
}  // namespace convgen
