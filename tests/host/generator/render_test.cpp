// render_test: the prelude's epilogue (the struct templates/epilogue.cuh reads), word for word, and that the epilogue
// is baked into every family's rendered source.
#include "generator/render.hpp"

#include <gtest/gtest.h>

#include "generator/family.hpp"
#include "support/corpus.hpp"

namespace convgen {
namespace {

TEST(Render, TheIdentityEpilogueIsRenderedWithItsDefaults) {
  EXPECT_EQ(render_epilogue(Epilogue{}),
            "struct Epilogue {  // output = act(alpha * conv + beta * residual + bias[k]): none\n"
            "  static constexpr bool BIAS = false, RESIDUAL = false;\n"
            "  static constexpr int ACT = 0;  // none\n"
            "  static constexpr float ALPHA = 1.000000000e+00f, BETA = 0.000000000e+00f, CLIP_LO = 0.000000000e+00f, "
            "CLIP_HI = 0.000000000e+00f;\n"
            "};\n");
}

TEST(Render, AnEpilogueIsRenderedWithEveryTermAsAConstant) {
  EXPECT_EQ(render_epilogue(parse_epilogue("alpha:0.5+bias+add:2+clip:-1:6")),
            "struct Epilogue {  // output = act(alpha * conv + beta * residual + bias[k]): alpha:0.5+bias+add:2+"
            "clip:-1:6\n"
            "  static constexpr bool BIAS = true, RESIDUAL = true;\n"
            "  static constexpr int ACT = 3;  // clip\n"
            "  static constexpr float ALPHA = 5.000000000e-01f, BETA = 2.000000000e+00f, CLIP_LO = -1.000000000e+00f, "
            "CLIP_HI = 6.000000000e+00f;\n"
            "};\n");
  EXPECT_NE(render_epilogue(parse_epilogue("relu6")).find("static constexpr int ACT = 2;  // relu6\n"),
            std::string::npos);
}

TEST(Render, EveryFamilyBakesTheProblemsEpilogueIntoItsSource) {
  const Gpu gpu = testing_support::h100();
  Problem p{.n = 1, .c = 16, .k = 16, .input = {1, 12, 12}, .filter = {1, 3, 3}, .padding = {0, 1, 1}};
  Problem fused = p;
  fused.epilogue = parse_epilogue("bias+add+relu");
  const std::string expected = render_epilogue(fused.epilogue);
  int families = 0;
  for (const Family* family : all_families()) {
    const auto spec = family->default_spec(fused, gpu);
    if (!spec) continue;
    ++families;
    const KernelSource source = family->render(fused, *spec);
    EXPECT_NE(source.text.find(expected), std::string::npos) << family->name();
    if (family->check_support(p, gpu, *spec)) continue;
    // The same kernel without the epilogue renders the identity: the two sources differ (two JIT cache entries).
    EXPECT_NE(family->render(p, *spec).text, source.text) << family->name();
  }
  EXPECT_GE(families, 3);  // direct, igemm, winograd at least serve this fp32 layer
}

}  // namespace
}  // namespace convgen
