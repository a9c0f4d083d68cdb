// igemm_compile_test: the igemm template compiles alone and rendered for many problems and configurations, with
// no register spills for the default configurations.
#include <filesystem>

#include <gtest/gtest.h>

#include "generator/family.hpp"
#include "igemm_params.hpp"
#include "generator/gpu_json.hpp"
#include "generator/render.hpp"
#include "generator/shapes.hpp"
#include "runtime/compiler.hpp"

namespace convgen {
namespace {

const std::filesystem::path kSourceDir = CONVGEN_SOURCE_DIR;

Gpu h100() { return load_gpu(kSourceDir / "gpus/h100_sxm.json"); }

// Turns rendered source into an NVRTC program carrying every template header.
Program program_of(const KernelSource& source) {
  Program program{.name = source.file_name, .source = source.text};
  for (const std::string& header : template_header_names()) program.headers.emplace_back(header, template_text(header));
  return program;
}

KernelSpec spec(int block_m, int block_n, int block_k, int thread_m, int thread_n, int stages, int split_k,
                int vector) {
  return to_spec(IgemmParams{.block_m = block_m, .block_n = block_n, .block_k = block_k, .thread_m = thread_m,
                             .thread_n = thread_n, .stages = stages, .split_k = split_k, .vector = vector});
}

// Problems of every kind the family serves.
std::vector<Problem> problems() {
  return {
      {.n = 1, .c = 64, .k = 64, .input = {1, 56, 56}, .filter = {1, 3, 3}, .padding = {0, 1, 1}},
      {.n = 2, .c = 64, .k = 100, .input = {1, 15, 17}, .filter = {1, 3, 3}, .padding = {0, 1, 1},
       .layout = Layout::nhwc},
      {.n = 2, .c = 32, .k = 64, .input = {1, 13, 11}, .filter = {1, 3, 3}, .padding = {0, 1, 1}, .groups = 4},
      {.n = 2, .c = 32, .k = 32, .input = {1, 14, 14}, .filter = {1, 3, 3}, .stride = {1, 2, 2},
       .padding = {0, 1, 1}, .groups = 32, .layout = Layout::nhwc},
      {.n = 2, .c = 4, .k = 12, .input = {5, 6, 7}, .filter = {3, 3, 3}, .stride = {1, 2, 2}, .padding = {1, 1, 1},
       .layout = Layout::ncdhw},
      {.n = 3, .c = 8, .k = 20, .input = {1, 1, 33}, .filter = {1, 1, 3}, .padding = {0, 0, 1},
       .dilation = {1, 1, 3}, .layout = Layout::nwc},
      {.n = 2, .c = 16, .k = 24, .input = {1, 20, 21}, .filter = {1, 3, 3}, .padding = {0, 2, 2},
       .dilation = {1, 2, 2}},
      {.n = 2, .c = 3, .k = 17, .input = {1, 15, 13}, .filter = {1, 7, 7}, .stride = {1, 2, 2},
       .padding = {0, 3, 3}},
  };
}

// Configurations across the search space's corners: largest tile, thin tiles, single stage, split-K, vectors.
std::vector<KernelSpec> configurations() {
  return {
      spec(128, 128, 8, 8, 8, 2, 1, 4), spec(64, 64, 16, 4, 4, 1, 2, 1), spec(16, 128, 16, 2, 8, 2, 1, 1),
      spec(64, 16, 8, 4, 2, 2, 3, 4),   spec(32, 32, 8, 4, 4, 1, 1, 4),
  };
}

class IgemmTemplateForArch : public testing::TestWithParam<std::string> {};

TEST_P(IgemmTemplateForArch, CompilesAloneWithItsDefaults) {
  Program program{.name = "igemm.cu", .source = template_text("igemm.cu"), .headers = {}};
  for (const std::string& header : template_header_names()) program.headers.emplace_back(header, template_text(header));
  const Cubin cubin = compile(program, {.arch = GetParam()});
  EXPECT_GT(cubin.report.registers, 0) << cubin.log;
  EXPECT_EQ(cubin.report.spill_store_bytes, 0) << cubin.log;
}

TEST_P(IgemmTemplateForArch, CompilesRenderedForEveryProblemKindAndConfiguration) {
  const Gpu gpu = h100();
  const Family& igemm = family("igemm");
  int compiled = 0;
  for (const Problem& p : problems()) {
    for (const KernelSpec& s : configurations()) {
      if (igemm.check_support(p, gpu, s)) continue;  // e.g. vector 4 with 3 channels
      SCOPED_TRACE(kernel_name(s) + " for " + problem_key(p));
      const Cubin cubin = compile(program_of(igemm.render(p, s)), {.arch = GetParam()});
      EXPECT_GT(cubin.report.registers, 0) << cubin.log;
      ++compiled;
    }
  }
  EXPECT_GE(compiled, 30);
}

INSTANTIATE_TEST_SUITE_P(RealArchitectures, IgemmTemplateForArch, testing::Values("sm_80", "sm_90"));

// tf32, fp16 and bf16 data (templates/igemm.cu widens 16-bit values to fp32 as it loads them): every problem kind with
// a vector and a scalar configuration, for Turing (sm_75: no tensor-core family serves these types there) and sm_90.
class IgemmDataTypesForArch : public testing::TestWithParam<std::string> {};

TEST_P(IgemmDataTypesForArch, CompileRenderedForEveryProblemKind) {
  const Gpu gpu = h100();
  const Family& igemm = family("igemm");
  int compiled = 0;
  for (Precision precision : {Precision::tf32, Precision::fp16, Precision::bf16}) {
    for (Problem p : problems()) {
      p.precision = precision;
      for (const KernelSpec& s : {spec(64, 64, 8, 4, 4, 2, 1, 4), spec(32, 32, 16, 4, 4, 1, 1, 1)}) {
        if (igemm.check_support(p, gpu, s)) continue;  // vector 4 with 3 channels
        SCOPED_TRACE(kernel_name(s) + " for " + problem_key(p));
        const Cubin cubin = compile(program_of(igemm.render(p, s)), {.arch = GetParam()});
        EXPECT_GT(cubin.report.registers, 0) << cubin.log;
        ++compiled;
      }
    }
  }
  EXPECT_GE(compiled, 36);
}

TEST(IgemmTemplate, DefaultSpecsOfTheSixteenBitTypesCompileWithoutSpillsForTuring) {
  const Gpu turing = load_gpu(kSourceDir / "gpus/rtx2080ti.json");
  const Family& igemm = family("igemm");
  for (const Layer& layer : load_suite(kSourceDir / "shapes/edge_cases.csv").layers) {
    for (Precision precision : {Precision::fp16, Precision::bf16}) {
      Problem p = layer.problem;
      p.precision = precision;
      const std::optional<KernelSpec> s = igemm.default_spec(p, turing);
      ASSERT_TRUE(s.has_value()) << problem_key(p);
      SCOPED_TRACE(kernel_name(*s) + " for " + problem_key(p));
      const Cubin cubin = compile(program_of(igemm.render(p, *s)), {.arch = turing.arch});
      EXPECT_EQ(cubin.report.spill_store_bytes, 0) << cubin.log;
      EXPECT_EQ(cubin.report.stack_bytes, 0) << cubin.log;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(TuringAndHopper, IgemmDataTypesForArch, testing::Values("sm_75", "sm_90"));

TEST(IgemmTemplate, DefaultSpecsCompileWithoutSpillsOrStackForEveryEdgeCase) {
  const Gpu gpu = h100();
  const Family& igemm = family("igemm");
  std::vector<Problem> all = problems();
  for (const Layer& layer : load_suite(kSourceDir / "shapes/edge_cases.csv").layers) all.push_back(layer.problem);
  for (const Problem& p : all) {
    const std::optional<KernelSpec> s = igemm.default_spec(p, gpu);
    ASSERT_TRUE(s.has_value()) << problem_key(p);
    SCOPED_TRACE(kernel_name(*s) + " for " + problem_key(p));
    const Cubin cubin = compile(program_of(igemm.render(p, *s)), {.arch = "sm_90"});
    EXPECT_EQ(cubin.report.spill_store_bytes, 0) << cubin.log;
    EXPECT_EQ(cubin.report.spill_load_bytes, 0) << cubin.log;
    EXPECT_EQ(cubin.report.stack_bytes, 0) << cubin.log;
    EXPECT_LE(cubin.report.smem_bytes, 48 * 1024);
  }
}

}  // namespace
}  // namespace convgen
