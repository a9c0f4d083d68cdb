// compiler_test: NVRTC compiles to cubin for real architectures, reports ptxas figures, and fails with context.
#include "runtime/compiler.hpp"

#include <gtest/gtest.h>

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
