// winograd_compile_test: the Winograd template compiles alone, and every configuration the family enumerates compiles
// for sm_80 and sm_90 (a third of them for sm_90 in CI: support/compile_sweep.hpp) on corpus problems (NCHW and NHWC,
// channels and tiles that fill no block, a cusnn layer), the default without register spills. Prints registers and
// spills of every configuration.
#include <iostream>

#include <fmt/format.h>
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

Problem edge_case(const std::string& name) {
  for (const Layer& layer : edge_cases().layers)
    if (layer.name == name) return layer.problem;
  throw InputError("no edge case named " + name);
}

std::vector<Case> cases() {
  const std::vector<std::pair<std::string, Problem>> problems = {
      {"c32_k100_3x3", edge_case("c32_k100_3x3")},
      {"nhwc_c3_k37_3x3", edge_case("nhwc_c3_k37_3x3")},
      {"cusnn_first", load_suite(source_dir() / "shapes" / "cusnn.csv").layers.front().problem},
  };
  std::vector<Case> list;
  for (const auto& [label, problem] : problems)
    for (const char* arch : {"sm_80", "sm_90"}) list.push_back({label, problem, arch});
  return list;
}

class WinogradEveryConfiguration : public testing::TestWithParam<Case> {};

TEST_P(WinogradEveryConfiguration, CompilesAndTheDefaultHasNoSpills) {
  const Case& c = GetParam();
  Gpu gpu = h100();
  gpu.arch = c.arch;
  const Family& winograd = family("winograd");
  const std::vector<KernelSpec> specs = winograd.enumerate(c.problem, gpu);
  ASSERT_FALSE(specs.empty()) << problem_key(c.problem);
  const KernelSpec chosen = *winograd.default_spec(c.problem, gpu);
  int index = 0;
  for (const KernelSpec& spec : specs) {
    if (!compile_in_sweep(index++, c.arch == "sm_80", spec == chosen)) continue;
    Cubin cubin;
    ASSERT_NO_THROW(cubin = compile(to_program(winograd.render(c.problem, spec)), {.arch = c.arch}))
        << kernel_name(spec);
    EXPECT_FALSE(cubin.image.empty());
    const auto reports = parse_ptxas_reports(cubin.log);
    const PtxasReport main = reports.at(kernel_name(spec));
    const PtxasReport setup = reports.at(kernel_name(spec) + "_transform_filter");
    EXPECT_GT(main.registers, 0) << kernel_name(spec);
    EXPECT_EQ(setup.spill_store_bytes, 0) << kernel_name(spec) << "\n" << cubin.log;
    std::cout << fmt::format("{} {} {}{}: {} registers, {} bytes spilled, {} bytes shared\n", c.label, c.arch,
                             kernel_name(spec), spec == chosen ? " (default)" : "", main.registers,
                             main.spill_store_bytes, main.smem_bytes);
    if (spec == chosen) {
      EXPECT_EQ(main.spill_store_bytes, 0) << kernel_name(spec) << "\n" << cubin.log;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(CorpusProblems, WinogradEveryConfiguration, testing::ValuesIn(cases()),
                         [](const testing::TestParamInfo<Case>& case_info) {
                           return test_name(case_info.param.label + "_" + case_info.param.arch);
                         });

TEST(WinogradTemplate, CompilesAloneWithItsDefaultsForSm80AndSm90) {
  Program program{.name = "winograd.cu", .source = template_text("winograd.cu")};
  for (const std::string& header : template_header_names()) program.headers.emplace_back(header, template_text(header));
  for (const char* arch : {"sm_80", "sm_90"}) {
    Cubin cubin;
    ASSERT_NO_THROW(cubin = compile(program, {.arch = arch})) << arch;
    EXPECT_EQ(parse_ptxas_reports(cubin.log).at("convgen_winograd_default").spill_store_bytes, 0) << cubin.log;
  }
}

}  // namespace
}  // namespace convgen
