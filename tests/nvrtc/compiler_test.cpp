// compiler_test: NVRTC compiles to cubin for real architectures, reports ptxas figures, and fails with context.
#include "runtime/compiler.hpp"

#include <algorithm>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "convgen/error.hpp"

namespace convgen {
namespace {

const Program kAxpy{
    .name = "axpy.cu",
    .source = "extern \"C\" __global__ void axpy(float a, const float* x, float* y) {\n"
              "  int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
              "  y[i] = a * x[i] + y[i];\n"
              "}\n",
};

class CompilerForArch : public testing::TestWithParam<std::string> {};

TEST_P(CompilerForArch, CompilesACubinWithAPtxasReport) {
  const Cubin cubin = compile(kAxpy, {.arch = GetParam()});
  ASSERT_GT(cubin.image.size(), 4u);
  EXPECT_EQ(cubin.image[0], 0x7f);  // ELF magic
  EXPECT_EQ(cubin.image[1], 'E');
  EXPECT_GT(cubin.report.registers, 0) << cubin.log;
  EXPECT_EQ(cubin.report.spill_store_bytes, 0);
  EXPECT_NE(cubin.log.find("axpy"), std::string::npos) << cubin.log;
}

INSTANTIATE_TEST_SUITE_P(RealArchitectures, CompilerForArch, testing::Values("sm_80", "sm_90"));

TEST(CompilerArchitectures, AreTheOnesNvrtcNamesAndAnArchSpecificOneCountsAsItsBase) {
  const std::vector<std::string> archs = nvrtc_supported_archs();
  ASSERT_FALSE(archs.empty());
  for (const std::string& arch : archs) EXPECT_TRUE(arch.starts_with("sm_")) << arch;
  EXPECT_NE(std::find(archs.begin(), archs.end(), "sm_90"), archs.end());
  EXPECT_NO_THROW(check_nvrtc_arch("sm_80"));
  EXPECT_NO_THROW(check_nvrtc_arch("sm_90a"));  // wgmma kernels: sm_90's architecture-specific variant
}

TEST(CompilerArchitectures, OneNvrtcCannotCompileForIsRefusedBeforeAnyCompileWithTheListItCan) {
  std::string list;
  for (const std::string& arch : nvrtc_supported_archs()) list += (list.empty() ? "" : ", ") + arch;
  const std::string expected = "NVRTC " + nvrtc_version() + " cannot compile for sm_12 (it compiles for " + list +
                               "): use a GPU of one of these architectures, or a CUDA toolkit whose NVRTC still "
                               "compiles for sm_12";
  try {
    check_nvrtc_arch("sm_12");
    ADD_FAILURE() << "sm_12 accepted";
  } catch (const InputError& e) {
    EXPECT_EQ(std::string(e.what()), expected);
  }
  try {
    (void)compile(kAxpy, {.arch = "sm_12"});
    ADD_FAILURE() << "compiled for sm_12";
  } catch (const InputError& e) {
    EXPECT_EQ(std::string(e.what()), expected);
  }
}

TEST(Compiler, FailureCarriesLogOptionsAndSavedSource) {
  const Program broken{.name = "broken.cu", .source = "__global__ void k() { undeclared_thing(); }\n"};
  try {
    compile(broken, {.arch = "sm_90"});
    FAIL() << "expected CompileError";
  } catch (const CompileError& e) {
    EXPECT_NE(e.log().find("undeclared_thing"), std::string::npos) << e.log();
    EXPECT_NE(std::string(e.what()).find("broken.cu"), std::string::npos);
    EXPECT_NE(std::string(e.what()).find("--gpu-architecture=sm_90"), std::string::npos);
    EXPECT_FALSE(e.saved_source().empty());
  }
}

}  // namespace
}  // namespace convgen
