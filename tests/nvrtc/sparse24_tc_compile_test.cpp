// sparse24_tc_compile_test: the 2:4 tensor-core template compiles alone, and every configuration its search space
// offers compiles for sm_80 and sm_90 (a third of them for sm_90 in CI: support/compile_sweep.hpp) on a handful of
// corpus problems carrying 2:4 filters (both precisions, both layouts, element-wise and 16-byte loads, groups, 3-D,
// split-K), the default configurations without register spills, each module with its pack entry.
#include <gtest/gtest.h>

#include "conv/conv_kernel.hpp"
#include "convgen/error.hpp"
#include "convgen/weights.hpp"
#include "generator/render.hpp"
#include "reference/pruning.hpp"
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

Problem two_four(Problem p, Precision precision, Layout layout) {
  p.precision = precision;
  p.layout = layout;
  return with_weights(p, two_four_pruned_random_filter(p, 7));
}

Problem edge_case(const std::string& name, Precision precision, Layout layout) {
  for (const Layer& layer : edge_cases().layers)
    if (layer.name == name) return two_four(layer.problem, precision, layout);
  throw InputError("no edge case named " + name);
}

std::vector<Case> cases() {
  const Problem deep = load_suite(source_dir() / "shapes" / "cusnn.csv").layers.back().problem;  // 512 -> 512 at 7x7
  const std::vector<std::pair<std::string, Problem>> problems = {
      {"c32_k100_3x3_fp16_nhwc", edge_case("c32_k100_3x3", Precision::fp16, Layout::nhwc)},
      {"c3_k100_7x7_s2_p3_bf16_nhwc", edge_case("c3_k100_7x7_s2_p3", Precision::bf16, Layout::nhwc)},
      {"ndhwc_3x3x3_p1_fp16", edge_case("ndhwc_3x3x3_p1", Precision::fp16, Layout::ndhwc)},
      {"groups4_batch2_fp16_nchw", edge_case("groups4_batch2", Precision::fp16, Layout::nchw)},
      {"cusnn_res_512to512_7_bf16_nhwc", two_four(deep, Precision::bf16, Layout::nhwc)},
  };
  std::vector<Case> list;
  for (const auto& [label, problem] : problems)
    for (const char* arch : {"sm_80", "sm_90"}) list.push_back({label, problem, arch});
  return list;
}

class Sparse24TcEveryConfiguration : public testing::TestWithParam<Case> {};

TEST_P(Sparse24TcEveryConfiguration, CompilesAndTheDefaultHasNoSpills) {
  const Case& c = GetParam();
  Gpu gpu = h100();
  gpu.arch = c.arch;
  const Family& sp = family("sparse24_tc");
  const std::vector<KernelSpec> specs = sp.enumerate(c.problem, gpu);
  ASSERT_FALSE(specs.empty()) << problem_key(c.problem);
  const KernelSpec chosen = *sp.default_spec(c.problem, gpu);
  int index = 0;
  for (const KernelSpec& spec : specs) {
    if (!compile_in_sweep(index++, c.arch == "sm_80", spec == chosen)) continue;
    Cubin cubin;
    ASSERT_NO_THROW(cubin = compile(to_program(sp.render(c.problem, spec)), {.arch = c.arch})) << kernel_name(spec);
    EXPECT_FALSE(cubin.image.empty());
    const auto reports = parse_ptxas_reports(cubin.log);
    const PtxasReport main = reports.at(kernel_name(spec));
    EXPECT_GT(main.registers, 0) << kernel_name(spec);
    EXPECT_TRUE(reports.contains(kernel_name(spec) + "_pack")) << cubin.log;
    if (spec == chosen) {
      EXPECT_EQ(main.spill_store_bytes, 0) << kernel_name(spec) << "\n" << cubin.log;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(CorpusProblems, Sparse24TcEveryConfiguration, testing::ValuesIn(cases()),
                         [](const testing::TestParamInfo<Case>& case_info) {
                           return test_name(case_info.param.label + "_" + case_info.param.arch);
                         });

TEST(Sparse24TcTemplate, CompilesAloneWithItsDefaultsForSm80AndSm90) {
  Program program{.name = "sparse24_tc.cu", .source = template_text("sparse24_tc.cu")};
  for (const std::string& header : template_header_names()) program.headers.emplace_back(header, template_text(header));
  for (const char* arch : {"sm_80", "sm_90"}) {
    Cubin cubin;
    ASSERT_NO_THROW(cubin = compile(program, {.arch = arch})) << arch;
    EXPECT_EQ(parse_ptxas_reports(cubin.log).at("convgen_sparse24_tc_default").spill_store_bytes, 0) << cubin.log;
  }
}

}  // namespace
}  // namespace convgen
