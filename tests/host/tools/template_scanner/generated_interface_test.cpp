// Tests of the C++ the template scanner generates from templates/igemm.cu and direct.cu: the params structs, the
// tables, to_spec / from_spec and the registry.
#include <algorithm>
#include <string>

#include <gtest/gtest.h>

#include "convgen/error.hpp"
#include "direct_params.hpp"
#include "igemm_params.hpp"

namespace convgen {
namespace {

TEST(GeneratedInterface, IgemmParamsHoldTheTemplatesDefaults) {
  const IgemmParams params;
  EXPECT_EQ(IgemmParams::family, "igemm");
  EXPECT_EQ(to_spec(params), (KernelSpec{.family = "igemm", .values = {64, 64, 8, 4, 4, 2, 1, 1}}));
}

TEST(GeneratedInterface, FromSpecReadsValuesInDeclarationOrder) {
  IgemmParams params;
  from_spec(KernelSpec{.family = "igemm", .values = {128, 32, 16, 8, 2, 1, 4, 4}}, params);
  EXPECT_EQ(params, (IgemmParams{.block_m = 128,
                                 .block_n = 32,
                                 .block_k = 16,
                                 .thread_m = 8,
                                 .thread_n = 2,
                                 .stages = 1,
                                 .split_k = 4,
                                 .vector = 4}));
}

TEST(GeneratedInterface, FromSpecRejectsAnotherFamilyAndAWrongCount) {
  IgemmParams params;
  try {
    from_spec(KernelSpec{.family = "direct", .values = {1, 2, 3, 4, 5}}, params);
    FAIL() << "no error";
  } catch (const InputError& e) {
    EXPECT_STREQ(e.what(), "kernel family 'direct' is not igemm");
  }
  try {
    from_spec(KernelSpec{.family = "igemm", .values = {1, 2}}, params);
    FAIL() << "no error";
  } catch (const InputError& e) {
    EXPECT_STREQ(e.what(), "igemm takes 8 parameter values, got 2");
  }
}

TEST(GeneratedInterface, TablesDescribeEachParameter) {
  const TemplateInterface& igemm = igemm_interface();
  EXPECT_EQ(igemm.family, "igemm");
  EXPECT_EQ(igemm.template_file, "igemm.cu");
  ASSERT_EQ(igemm.params.size(), 8u);
  const ParamDecl& split_k = igemm.params[6];
  EXPECT_EQ(split_k.name, "SPLIT_K");
  EXPECT_EQ(split_k.field, "split_k");
  EXPECT_EQ(split_k.token, "sk");
  EXPECT_TRUE(split_k.allowed.empty());
  EXPECT_EQ(split_k.min, 1);
  EXPECT_EQ(split_k.max, 64);
  EXPECT_EQ(split_k.where.file, "templates/igemm.cu");
  EXPECT_GT(split_k.where.line, 0);
  ASSERT_EQ(igemm.params[0].allowed.size(), 5u);
  EXPECT_EQ(igemm.params[0].allowed[4], 256);
  ASSERT_EQ(igemm.entries.size(), 1u);
  EXPECT_EQ(igemm.entries[0].suffix, "");
  ASSERT_EQ(igemm.entries[0].args.size(), 6u);
  EXPECT_EQ(igemm.entries[0].args[3].name, "g_workspace");
  EXPECT_EQ(igemm.entries[0].args[5].name, "g_residual");
  EXPECT_FALSE(igemm.constraints.empty());
}

TEST(GeneratedInterface, DirectHasItsOwnFiveParameters) {
  EXPECT_EQ(to_spec(DirectParams{}), (KernelSpec{.family = "direct", .values = {4, 128, 1, 1, 2}}));
  EXPECT_EQ(direct_interface().params.size(), 5u);
}

TEST(GeneratedInterface, RegistryListsEveryTemplateByName) {
  const auto all = template_interfaces();
  EXPECT_TRUE(std::is_sorted(all.begin(), all.end(), [](auto* a, auto* b) { return a->family < b->family; }));
  EXPECT_NE(std::find(all.begin(), all.end(), &igemm_interface()), all.end());
  EXPECT_NE(std::find(all.begin(), all.end(), &direct_interface()), all.end());
}

}  // namespace
}  // namespace convgen
