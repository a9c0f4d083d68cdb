// families_corpus_test: every family × representative configurations × the edge-case corpus compiles to cubin
// for sm_80 and sm_90, act_sparse's block-staged loop (not among its candidates) too, its splits reduced in a cluster
// for sm_90 (refused for sm_80), and the default choice of one layer of every suite compiles for sm_90.
#include <gtest/gtest.h>

#include "act_sparse_params.hpp"
#include "conv/conv_kernel.hpp"
#include "support/corpus.hpp"

namespace convgen {
namespace {

using namespace testing_support;

struct Case {
  std::string family;
  Layer layer;
};

std::vector<Case> corpus_cases() {
  std::vector<Case> cases;
  for (const Family* f : all_families())
    for (const Layer& layer : edge_cases().layers) cases.push_back({std::string(f->name()), layer});
  return cases;
}

class FamilyOnEdgeCase : public testing::TestWithParam<Case> {};

TEST_P(FamilyOnEdgeCase, RepresentativeConfigurationsCompileForSm80AndSm90) {
  const auto& [kind, layer] = GetParam();
  const Gpu gpu = h100();
  const auto specs = representative_specs(family(kind), layer.problem, gpu, 2);
  if (specs.empty()) GTEST_SKIP() << kind << " declines " << layer.name;
  for (const KernelSpec& spec : specs) {
    const KernelSource source = family(kind).render(layer.problem, spec);
    for (const char* arch : {"sm_80", "sm_90"}) {
      Cubin cubin;
      ASSERT_NO_THROW(cubin = compile(to_program(source), {.arch = arch})) << kernel_name(spec) << " " << arch;
      EXPECT_FALSE(cubin.image.empty());
      // Spills cost speed, not correctness: the default choice must have none; other candidates may.
      if (spec == specs.front()) {
        EXPECT_EQ(cubin.report.spill_store_bytes, 0) << kernel_name(spec) << " " << arch << "\n" << cubin.log;
      }
    }
  }
}

// The fused epilogue (bias + residual + relu6, scales not 1) baked into the default configuration; igemm_tc in fp16 (it
// serves no fp32 problem), with a split-K configuration too, whose reduce entry applies the epilogue.
TEST_P(FamilyOnEdgeCase, TheDefaultWithAnEpilogueCompilesForSm80AndSm90) {
  const auto& [kind, layer] = GetParam();
  const Gpu gpu = h100();
  Problem p = layer.problem;
  p.epilogue = parse_epilogue("alpha:1.5+bias+add:0.5+relu6");
  if (kind == "igemm_tc") p.precision = Precision::fp16;
  std::vector<KernelSpec> specs = representative_specs(family(kind), p, gpu, 0);
  if (specs.empty()) GTEST_SKIP() << kind << " declines " << layer.name;
  if (kind == "igemm_tc")
    for (const KernelSpec& s : family(kind).enumerate(p, gpu))
      if (kernel_name(s).find("_sk1_") == std::string::npos) {
        specs.push_back(s);
        break;
      }
  for (const KernelSpec& spec : specs) {
    const KernelSource source = family(kind).render(p, spec);
    EXPECT_NE(source.text.find("static constexpr int ACT = 2;  // relu6"), std::string::npos);
    for (const char* arch : {"sm_80", "sm_90"}) {
      Cubin cubin;
      ASSERT_NO_THROW(cubin = compile(to_program(source), {.arch = arch})) << kernel_name(spec) << " " << arch;
      EXPECT_FALSE(cubin.image.empty());
    }
  }
}

INSTANTIATE_TEST_SUITE_P(EdgeCases, FamilyOnEdgeCase, testing::ValuesIn(corpus_cases()),
                         [](const testing::TestParamInfo<Case>& case_info) {
                           return test_name(fmt::format("{}_{}", case_info.param.family, case_info.param.layer.name));
                         });

// act_sparse's block-staged loop (bs 1) is a template path no candidate takes (measured slower): its default
// geometry, block-staged, on the first 6 corpus layers act_sparse serves that way.
TEST(ActSparseBlockStaged, TheDefaultGeometryBlockStagedCompilesForSm80AndSm90) {
  const Gpu gpu = h100();
  int compiled = 0;
  for (const Layer& layer : edge_cases().layers) {
    const auto spec = family("act_sparse").default_spec(layer.problem, gpu);
    if (!spec) continue;
    ActSparseParams staged = params_of<ActSparseParams>(*spec);
    staged.block_staged = true;
    staged.sparse_mode = 3;
    staged.unroll2 = false;
    staged.load_batch = 1;
    if (family("act_sparse").check_support(layer.problem, gpu, to_spec(staged))) continue;
    const KernelSource source = family("act_sparse").render(layer.problem, to_spec(staged));
    for (const char* arch : {"sm_80", "sm_90"}) {
      Cubin cubin;
      ASSERT_NO_THROW(cubin = compile(to_program(source), {.arch = arch})) << layer.name << " " << arch;
      EXPECT_FALSE(cubin.image.empty());
    }
    if (++compiled == 6) break;
  }
  EXPECT_EQ(compiled, 6);
}

// act_sparse's split channels reduced in a cluster (cr 1) exist for sm_90 only: its default geometry split 4 ways in a
// cluster compiles for sm_90 on the first 6 corpus layers it serves that way, without spills, and for sm_80 the
// template refuses it (its static_assert) as the family does.
TEST(ActSparseClusterReduce, TheDefaultGeometrySplitInAClusterCompilesForSm90AndIsRefusedForSm80) {
  const Gpu gpu = h100();
  int compiled = 0;
  for (const Layer& layer : edge_cases().layers) {
    const auto spec = family("act_sparse").default_spec(layer.problem, gpu);
    if (!spec) continue;
    ActSparseParams clustered = params_of<ActSparseParams>(*spec);
    clustered.split_c = 4;
    clustered.cluster_reduce = true;
    if (family("act_sparse").check_support(layer.problem, gpu, to_spec(clustered))) continue;
    const KernelSource source = family("act_sparse").render(layer.problem, to_spec(clustered));
    Cubin cubin;
    ASSERT_NO_THROW(cubin = compile(to_program(source), {.arch = "sm_90"})) << layer.name;
    EXPECT_EQ(cubin.report.spill_store_bytes, 0) << layer.name;
    try {
      compile(to_program(source), {.arch = "sm_80"});
      ADD_FAILURE() << layer.name << ": compiled for sm_80";
    } catch (const CompileError& e) {
      EXPECT_NE(std::string(e.what()).find("CLUSTER_REDUCE needs thread-block clusters"), std::string::npos)
          << e.what();
    }
    if (++compiled == 6) break;
  }
  EXPECT_EQ(compiled, 6);
}

TEST(SuiteLayers, TheDefaultChoiceForOneLayerOfEverySuiteCompilesForSm90) {
  const Gpu gpu = h100();
  for (const auto& file : suite_files()) {
    const Suite suite = load_suite(file);
    ASSERT_FALSE(suite.layers.empty()) << file;
    const Layer& layer = suite.layers[suite.layers.size() / 2];
    const KernelSpec spec = default_choice(layer.problem, gpu);
    EXPECT_NO_THROW(compile(to_program(family(spec.family).render(layer.problem, spec)), {.arch = "sm_90"}))
        << suite.name << ": " << layer.name << ": " << kernel_name(spec);
  }
}

}  // namespace
}  // namespace convgen
