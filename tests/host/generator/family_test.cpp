// family_test: the registry of families (generated from generator/families/*.cpp), lookups and the default choice.
#include "generator/family.hpp"

#include <algorithm>

#include <gtest/gtest.h>

#include "convgen/error.hpp"
#include "support/corpus.hpp"

namespace convgen {
namespace {

using testing_support::h100;
using testing_support::param_index;

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

// max(0, x) on load (relu_on_load): act_sparse's relu1 kernels apply it as they load; every other configuration of
// every family serves the problem too, behind a ReLU prologue (a relu step into a per-call buffer the kernel reads
// as its activation) whose launch and traffic its cost features count. A relu1 kernel is refused for a problem that
// does not ask for it.
TEST(ReluOnLoad, Relu1KernelsApplyItAndEveryOtherKernelRunsBehindAReluPrologue) {
  Problem p{.n = 2, .c = 64, .k = 64, .input = {1, 28, 28}, .filter = {1, 3, 3}, .padding = {0, 1, 1}};
  p.act_sparsity = 0.7;
  p.relu_on_load = true;
  const std::int64_t activation_bytes = 2 * 64 * 28 * 28 * 4;
  const Family& act_sparse = family("act_sparse");
  const std::size_t relu = param_index(act_sparse, "relu");
  const KernelSpec chosen = default_choice(p, h100());
  EXPECT_EQ(chosen.family, "act_sparse");
  EXPECT_EQ(chosen.values[relu], 1);
  EXPECT_TRUE(act_sparse.applies_relu_on_load(chosen));
  EXPECT_EQ(plan_for(p, chosen), act_sparse.plan(p, chosen));
  EXPECT_EQ(cost_features_for(p, chosen), act_sparse.cost_features(p, chosen));
  for (const KernelSpec& spec : act_sparse.enumerate(p, h100())) EXPECT_EQ(spec.values[relu], 1) << kernel_name(spec);
  int behind_a_prologue = 0;
  for (const Family* f : all_families()) {
    std::optional<KernelSpec> spec = f->default_spec(p, h100());
    if (f == &act_sparse) {  // relu0 serves it too, behind the prologue
      spec = chosen;
      spec->values[relu] = 0;
    }
    if (!spec) continue;
    ++behind_a_prologue;
    EXPECT_EQ(check_support(p, h100(), *spec), std::nullopt) << kernel_name(*spec);
    EXPECT_TRUE(needs_relu_prologue(p, *spec)) << kernel_name(*spec);
    const LaunchPlan own = f->plan(p, *spec);
    const LaunchPlan plan = plan_for(p, *spec);
    EXPECT_EQ(plan.activation_buffer, kRectifiedActivation) << kernel_name(*spec);
    ASSERT_NE(plan.find(kRectifiedActivation), nullptr) << kernel_name(*spec);
    EXPECT_EQ(plan.find(kRectifiedActivation)->bytes, activation_bytes);
    EXPECT_FALSE(plan.find(kRectifiedActivation)->persistent);
    EXPECT_GE(plan.workspace_bytes(), own.workspace_bytes() + activation_bytes);
    EXPECT_EQ(plan.run.size(), own.run.size() + 1);
    const auto relu_step = std::find_if(plan.run.begin(), plan.run.end(),
                                        [](const LaunchStep& s) { return s.kind == LaunchStep::Kind::relu; });
    const auto first_kernel = std::find_if(plan.run.begin(), plan.run.end(),
                                           [](const LaunchStep& s) { return s.kind == LaunchStep::Kind::kernel; });
    ASSERT_NE(relu_step, plan.run.end()) << kernel_name(*spec);
    EXPECT_EQ(relu_step->buffer, kRectifiedActivation);
    EXPECT_EQ(relu_step + 1, first_kernel) << kernel_name(*spec);
    EXPECT_EQ(plan.zeroes_output_first(), own.zeroes_output_first()) << kernel_name(*spec);
    EXPECT_EQ(plan.setup, own.setup);
    const CostFeatures features = cost_features_for(p, *spec);
    const CostFeatures bare = f->cost_features(p, *spec);
    EXPECT_EQ(features.extra_launches, bare.extra_launches + 1) << kernel_name(*spec);
    EXPECT_DOUBLE_EQ(features.dram_bytes, bare.dram_bytes + 2.0 * activation_bytes) << kernel_name(*spec);
    Problem plain = p;
    plain.relu_on_load = false;
    if (!check_support(plain, h100(), *spec)) {
      EXPECT_EQ(plan_for(plain, *spec), own) << kernel_name(*spec);
    }
  }
  EXPECT_GE(behind_a_prologue, 3);
  for (const FamilyDefault& d : family_defaults(p, h100()))
    EXPECT_EQ(d.reason.find("max(0, x)"), std::string::npos) << d.family << ": " << d.reason;
  // The relu1 kernel on the problem without relu_on_load is refused: it would rectify an input that is not to be.
  Problem plain = p;
  plain.relu_on_load = false;
  EXPECT_EQ(check_support(plain, h100(), chosen),
            "relu1 applies max(0, x) on load, which the problem does not ask for (relu_on_load 0)");
}

// The prologue goes after a zero step that precedes the first kernel (the plan still zeroes its output first), and a
// plan takes one prologue only.
TEST(ReluOnLoad, ThePrologueGoesBeforeTheFirstKernelAndAfterAZeroStep) {
  const LaunchPlan zeroing = single_launch_plan({.grid = {4, 1, 1}, .block = {128, 1, 1}}, true);
  const LaunchPlan plan = with_relu_prologue(zeroing, 4096);
  ASSERT_EQ(plan.run.size(), 3u);
  EXPECT_EQ(plan.run[0].kind, LaunchStep::Kind::zero);
  EXPECT_EQ(plan.run[1].kind, LaunchStep::Kind::relu);
  EXPECT_EQ(plan.run[2].kind, LaunchStep::Kind::kernel);
  EXPECT_TRUE(plan.zeroes_output_first());
  EXPECT_EQ(plan.workspace_bytes(), 4096);
  EXPECT_THROW(with_relu_prologue(plan, 4096), Error);
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
