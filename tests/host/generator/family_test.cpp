// family_test: the registry of families (generated from generator/families/*.cpp), lookups and the default choice.
#include "generator/family.hpp"

#include <algorithm>

#include <gtest/gtest.h>

#include "convgen/error.hpp"
#include "support/corpus.hpp"

namespace convgen {
namespace {

using testing_support::h100;

TEST(FamilyRegistry, ListsEveryFamilyOnceByNameWithItsTemplatesInterface) {
  const auto& families = all_families();
  ASSERT_GE(families.size(), 2u);
  EXPECT_TRUE(std::is_sorted(families.begin(), families.end(),
                             [](const Family* a, const Family* b) { return a->name() < b->name(); }));
  for (const Family* f : families) {
    EXPECT_EQ(&family(f->name()), f);
    EXPECT_EQ(f->interface().template_file, std::string(f->name()) + ".cu");
    EXPECT_FALSE(f->interface().entries.empty()) << f->name();
  }
  EXPECT_NE(find_family("igemm"), nullptr);
  EXPECT_NE(find_family("direct"), nullptr);
}

TEST(FamilyRegistry, AnUnknownNameIsAnErrorListingTheFamilies) {
  EXPECT_EQ(find_family("fft"), nullptr);
  try {
    family("fft");
    FAIL() << "expected InputError";
  } catch (const InputError& e) {
    EXPECT_EQ(std::string(e.what()), "unknown kernel family 'fft', expected one of " + family_names());
  }
}

TEST(FamilyRegistry, CheckSupportRefusesUnknownFamiliesAndWrongArity) {
  const Problem p{.n = 1, .c = 64, .k = 64, .input = {1, 56, 56}, .filter = {1, 3, 3}, .padding = {0, 1, 1}};
  EXPECT_EQ(check_support(p, h100(), {.family = "fft", .values = {}}),
            "unknown kernel family 'fft', expected one of " + family_names());
  EXPECT_EQ(check_support(p, h100(), {.family = "igemm", .values = {64, 64}}),
            "a igemm kernel has 8 parameters, got 2");
}

TEST(DefaultChoice, FollowsEachFamilysRankForTheProblem) {
  const Problem wide{.n = 1, .c = 64, .k = 64, .input = {1, 56, 56}, .filter = {1, 3, 3}, .padding = {0, 1, 1}};
  const Problem small{.n = 1, .c = 16, .k = 16, .input = {1, 32, 32}, .filter = {1, 3, 3}, .padding = {0, 1, 1}};
  const Problem stem{.n = 1, .c = 3, .k = 64, .input = {1, 224, 224}, .filter = {1, 7, 7}, .stride = {1, 2, 2},
                     .padding = {0, 3, 3}};
  const Problem tiny_stem{.n = 1, .c = 3, .k = 16, .input = {1, 32, 32}, .filter = {1, 3, 3}, .padding = {0, 1, 1}};
  const Problem strided_1x1{.n = 8, .c = 256, .k = 512, .input = {1, 56, 56}, .filter = {1, 1, 1},
                            .stride = {1, 2, 2}};
  const Problem depthwise{.n = 1, .c = 64, .k = 64, .input = {1, 56, 56}, .filter = {1, 5, 5}, .padding = {0, 2, 2},
                          .groups = 64};
  EXPECT_EQ(default_choice(wide, h100()).family, "winograd_gemm");
  EXPECT_EQ(default_choice(small, h100()).family, "act_sparse");  // dense: its dense loop, no im2col gather
  EXPECT_EQ(default_choice(stem, h100()).family, "stem");         // 3 channels, 236 MFLOP: patch and filter staged
  EXPECT_EQ(default_choice(tiny_stem, h100()).family, "direct");  // 3 channels, under 1 MFLOP
  EXPECT_EQ(default_choice(strided_1x1, h100()).family, "igemm");
  EXPECT_EQ(default_choice(depthwise, h100()).family, "direct");
}

TEST(DefaultChoice, FamilyDefaultsListEveryFamilyByRankAndTheFirstServingOneIsTheChoice) {
  const Problem conv3x3{.n = 1, .c = 64, .k = 64, .input = {1, 56, 56}, .filter = {1, 3, 3}, .padding = {0, 1, 1}};
  Problem fp16 = conv3x3;
  fp16.precision = Precision::fp16;
  fp16.layout = Layout::nhwc;
  for (const Problem& p : {conv3x3, fp16}) {
    const std::vector<FamilyDefault> families = family_defaults(p, h100());
    ASSERT_EQ(families.size(), all_families().size());
    for (std::size_t i = 1; i < families.size(); ++i) EXPECT_LE(families[i - 1].rank, families[i].rank);
    const auto first = std::find_if(families.begin(), families.end(), [](const FamilyDefault& d) { return d.spec; });
    ASSERT_NE(first, families.end());
    EXPECT_EQ(*first->spec, default_choice(p, h100()));
    for (const FamilyDefault& d : families) EXPECT_EQ(d.spec.has_value(), d.reason.empty()) << d.family;
  }
  Problem invalid = conv3x3;
  invalid.groups = 3;
  EXPECT_THROW(family_defaults(invalid, h100()), InputError);
}

// max(0, x) on load (relu_on_load): act_sparse alone applies it, with relu1 kernels; every other family is refused
// by name wherever candidates are asked for, and a relu1 kernel is refused for a problem that does not ask for it.
TEST(ReluOnLoad, OnlyActSparsesRelu1KernelsServeItAndOnlyThem) {
  Problem p{.n = 2, .c = 64, .k = 64, .input = {1, 28, 28}, .filter = {1, 3, 3}, .padding = {0, 1, 1}};
  p.act_sparsity = 0.7;
  p.relu_on_load = true;
  const Family& act_sparse = family("act_sparse");
  const std::size_t relu = [&] {
    const auto& params = act_sparse.interface().params;
    for (std::size_t i = 0; i < params.size(); ++i)
      if (params[i].token == "relu") return i;
    return params.size();
  }();
  ASSERT_LT(relu, act_sparse.interface().params.size());
  const KernelSpec chosen = default_choice(p, h100());
  EXPECT_EQ(chosen.family, "act_sparse");
  EXPECT_EQ(chosen.values[relu], 1);
  const std::vector<KernelSpec> candidates = candidates_for(act_sparse, p, h100());
  ASSERT_FALSE(candidates.empty());
  for (const KernelSpec& spec : candidates) {
    EXPECT_EQ(spec.values[relu], 1) << kernel_name(spec);
    EXPECT_EQ(check_support(p, h100(), spec), std::nullopt) << kernel_name(spec);
  }
  for (const Family* f : all_families()) {
    if (f == &act_sparse) continue;
    EXPECT_TRUE(candidates_for(*f, p, h100()).empty()) << f->name();
    EXPECT_EQ(default_spec_for(*f, p, h100()), std::nullopt) << f->name();
    const std::string reason = std::string(f->name()) +
                               " kernels do not apply max(0, x) as they load the activation (relu_on_load); "
                               "act_sparse's do";
    EXPECT_EQ(refusal_of(*f, p), reason);
    if (auto plain_spec = f->default_spec(Problem{p.n, p.c, p.k, p.input, p.filter, p.stride, p.padding}, h100()))
      EXPECT_EQ(check_support(p, h100(), *plain_spec), reason);
  }
  for (const FamilyDefault& d : family_defaults(p, h100()))
    if (d.family != "act_sparse") EXPECT_NE(d.reason.find("do not apply max(0, x)"), std::string::npos) << d.family;
  // The same kernel on the problem without relu_on_load is refused: it would rectify an input that is not to be.
  Problem plain = p;
  plain.relu_on_load = false;
  EXPECT_EQ(check_support(plain, h100(), chosen),
            "relu1 applies max(0, x) on load, which the problem does not ask for (relu_on_load 0)");
  const KernelSpec plain_choice = default_choice(plain, h100());
  if (plain_choice.family == "act_sparse") {
    EXPECT_EQ(plain_choice.values[relu], 0);
    EXPECT_EQ(check_support(p, h100(), plain_choice),
              "the problem asks for max(0, x) on load (relu_on_load), which only relu1 applies");
  }
  // Where act_sparse does not serve the shape either, the error gives its own reason, then names the others once.
  Problem half = p;
  half.precision = Precision::fp16;
  half.layout = Layout::nhwc;
  try {
    default_choice(half, h100());
    FAIL() << "expected InputError";
  } catch (const InputError& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("; act_sparse: precision fp16 is not supported by act_sparse (fp32 only); "), std::string::npos)
        << what;
    EXPECT_NE(what.find(": their kernels do not apply max(0, x) as they load the activation (relu_on_load)"),
              std::string::npos)
        << what;
    EXPECT_EQ(what.find("act_sparse's do"), std::string::npos) << what;
  }
}

TEST(LaunchPlan, CarvesBuffersFromTheWorkspaceAndThePersistentBlockAligned) {
  LaunchPlan plan;
  plan.buffers = {{.name = "a", .bytes = 10, .persistent = false},
                  {.name = "packed", .bytes = 300, .persistent = true},
                  {.name = "b", .bytes = 1, .persistent = false}};
  EXPECT_EQ(plan.workspace_bytes(), 512);
  EXPECT_EQ(plan.persistent_bytes(), 512);
  EXPECT_EQ(plan.offset_of("a"), 0);
  EXPECT_EQ(plan.offset_of("b"), 256);
  EXPECT_EQ(plan.offset_of("packed"), 0);
  EXPECT_EQ(plan.offset_of("none"), -1);
  EXPECT_THROW(plan.main_geometry(), Error);
  const LaunchPlan single = single_launch_plan({.grid = {2, 1, 1}, .block = {64, 1, 1}}, true);
  ASSERT_EQ(single.run.size(), 2u);
  EXPECT_EQ(single.run[0].kind, LaunchStep::Kind::zero);
  EXPECT_EQ(single.run[0].buffer, "output");
  EXPECT_EQ(single.main_geometry().grid[0], 2u);
}

}  // namespace
}  // namespace convgen
