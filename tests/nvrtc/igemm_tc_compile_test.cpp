// igemm_tc_compile_test: the tensor-core template compiles alone, and every configuration its search space offers
// compiles for sm_80 and sm_90 (a third of them for sm_90 in CI: support/compile_sweep.hpp) on a handful of corpus
// problems (each precision, both layouts, element-wise and 16-byte loads, groups, 3-D, split-K), the default
// configurations without register spills.
#include <gtest/gtest.h>

#include "conv/conv_kernel.hpp"
#include "convgen/error.hpp"
#include "generator/render.hpp"
#include "support/compile_sweep.hpp"
#include "support/corpus.hpp"

namespace convgen {
namespace {

using namespace testing_support;

struct Case {
  std::string label;
  Problem problem;
  std::string arch;
};

void PrintTo(const Case& c, std::ostream* os) { *os << c.label << " " << c.arch; }

Problem edge_case(const std::string& name, Precision precision, Layout layout) {
  for (const Layer& layer : edge_cases().layers)
    if (layer.name == name) {
      Problem p = layer.problem;
      p.precision = precision;
      p.layout = layout;
      return p;
    }
  throw InputError("no edge case named " + name);
}

std::vector<Case> cases() {
  Problem deep = load_suite(source_dir() / "shapes" / "cusnn.csv").layers.back().problem;  // 512 -> 512 at 7x7
  deep.precision = Precision::bf16;
  deep.layout = Layout::nhwc;
  const std::vector<std::pair<std::string, Problem>> problems = {
      {"c32_k100_3x3_fp16_nhwc", edge_case("c32_k100_3x3", Precision::fp16, Layout::nhwc)},
      {"c3_k100_7x7_s2_p3_bf16_nhwc", edge_case("c3_k100_7x7_s2_p3", Precision::bf16, Layout::nhwc)},
      {"ndhwc_3x3x3_p1_tf32", edge_case("ndhwc_3x3x3_p1", Precision::tf32, Layout::ndhwc)},
      {"groups4_batch2_fp16_nchw", edge_case("groups4_batch2", Precision::fp16, Layout::nchw)},
      {"cusnn_res_512to512_7_bf16_nhwc", deep},
  };
  std::vector<Case> list;
  for (const auto& [label, problem] : problems)
    for (const char* arch : {"sm_80", "sm_90"}) list.push_back({label, problem, arch});
  return list;
}

class IgemmTcEveryConfiguration : public testing::TestWithParam<Case> {};

TEST_P(IgemmTcEveryConfiguration, CompilesAndTheDefaultHasNoSpills) {
  const Case& c = GetParam();
  Gpu gpu = h100();
  gpu.arch = c.arch;
  const Family& tc = family("igemm_tc");
  const std::vector<KernelSpec> specs = tc.enumerate(c.problem, gpu);
  ASSERT_FALSE(specs.empty()) << problem_key(c.problem);
  const KernelSpec chosen = *tc.default_spec(c.problem, gpu);
  int index = 0;
  for (const KernelSpec& spec : specs) {
    if (!compile_in_sweep(index++, c.arch == "sm_80", spec == chosen)) continue;
    Cubin cubin;
    ASSERT_NO_THROW(cubin = compile(to_program(tc.render(c.problem, spec)), {.arch = c.arch})) << kernel_name(spec);
    EXPECT_FALSE(cubin.image.empty());
    const PtxasReport main = parse_ptxas_reports(cubin.log).at(kernel_name(spec));
    EXPECT_GT(main.registers, 0) << kernel_name(spec);
    if (spec == chosen) {
      EXPECT_EQ(main.spill_store_bytes, 0) << kernel_name(spec) << "\n" << cubin.log;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(CorpusProblems, IgemmTcEveryConfiguration, testing::ValuesIn(cases()),
                         [](const testing::TestParamInfo<Case>& case_info) {
                           return test_name(case_info.param.label + "_" + case_info.param.arch);
                         });

TEST(IgemmTcTemplate, CompilesAloneWithItsDefaultsForSm80AndSm90) {
  Program program{.name = "igemm_tc.cu", .source = template_text("igemm_tc.cu")};
  for (const std::string& header : template_header_names()) program.headers.emplace_back(header, template_text(header));
  for (const char* arch : {"sm_80", "sm_90"}) {
    Cubin cubin;
    ASSERT_NO_THROW(cubin = compile(program, {.arch = arch})) << arch;
    EXPECT_EQ(parse_ptxas_reports(cubin.log).at("convgen_igemm_tc_default").spill_store_bytes, 0) << cubin.log;
  }
}

TEST(IgemmTcTemplate, RefusesSm75AtCompileTime) {
  Program program{.name = "igemm_tc.cu", .source = template_text("igemm_tc.cu")};
  for (const std::string& header : template_header_names()) program.headers.emplace_back(header, template_text(header));
  try {
    compile(program, {.arch = "sm_75"});
    ADD_FAILURE() << "compiled for sm_75";
  } catch (const CompileError& e) {
    EXPECT_NE(std::string(e.what()).find("the tensor-core templates need sm_80 or later"), std::string::npos)
        << e.what();
  }
}

}  // namespace
}  // namespace convgen
