// weight_twins_sm90_kernels.cpp: the problems of the weight_twins suite and their kernels for sm_90. Written by convgen emit-lib 0.1.0 (NVRTC 13.0); do not edit.
#include "weight_twins_sm90_kernels.hpp"

namespace weight_twins_sm90_internal {
namespace {

// a: n1_c4_k8_i1x12x12_f1x3x3_s1x1x1_p0x1x1_d1x1x1_g1_nchw_fp32_w9359409639b2f1ff
//   4->8 3x3 s1 p1 at 12x12 -> 12x12, n1, its filter (89% zeros)
// sm_90 (NVIDIA H100 80GB HBM3): weight_sparse_p64_kg4_iv1_tb0_pt1_sk1_lc0, from convgen's default choice (untuned); 32 registers, 0 bytes spilled, 0 bytes static shared memory; plan: kernel; persistent 512 B
alignas(64) const unsigned char cubin_0_sm_90[] = {
#include "cubins/00_a_sm_90.inc"
};
const PlanBuffer buffers_0_sm_90[] = {
    {"packed_values", 4ULL, 0ULL, true},
    {"pattern_codes", 4ULL, 256ULL, true},
};
const ArgBinding run_0_sm_90_args0[] = {{Arg::activation, -1}, {Arg::buffer, 0}, {Arg::buffer, 1}, {Arg::output, -1}, {Arg::bias, -1}, {Arg::residual, -1}};
const Step run_0_sm_90[] = {
    {Step::kernel, "weight_sparse_p64_kg4_iv1_tb0_pt1_sk1_lc0", {3, 2, 1}, {64, 1, 1}, 0, run_0_sm_90_args0, 6, -1, true},
};
const KernelImage kernels_0[] = {
    {90, cubin_0_sm_90, sizeof cubin_0_sm_90, "weight_sparse_p64_kg4_iv1_tb0_pt1_sk1_lc0", buffers_0_sm_90, 2, 0ULL, 512ULL, nullptr, 0, run_0_sm_90, 1, 2, {0, 0, 0}},
};
// The filter's nonzeros (pattern 9359409639b2f1ff): a filter given for the problem must have none elsewhere
const unsigned char weight_mask_0[] = {
#include "filters/00_a_mask.inc"
};
// Their values, which a kernel has in its code: a filter given for the problem must have them
const float weight_values_0[] = {
#include "filters/00_a_values.inc"
};

// b: n1_c4_k8_i1x12x12_f1x3x3_s1x1x1_p0x1x1_d1x1x1_g1_nchw_fp32_wc7309389a95876b5
//   4->8 3x3 s1 p1 at 12x12 -> 12x12, n1, its filter (89% zeros)
// sm_90 (NVIDIA H100 80GB HBM3): weight_sparse_p64_kg4_iv1_tb0_pt1_sk1_lc0, from convgen's default choice (untuned); 32 registers, 0 bytes spilled, 0 bytes static shared memory; plan: kernel; persistent 512 B
alignas(64) const unsigned char cubin_1_sm_90[] = {
#include "cubins/01_b_sm_90.inc"
};
const PlanBuffer buffers_1_sm_90[] = {
    {"packed_values", 4ULL, 0ULL, true},
    {"pattern_codes", 4ULL, 256ULL, true},
};
const ArgBinding run_1_sm_90_args0[] = {{Arg::activation, -1}, {Arg::buffer, 0}, {Arg::buffer, 1}, {Arg::output, -1}, {Arg::bias, -1}, {Arg::residual, -1}};
const Step run_1_sm_90[] = {
    {Step::kernel, "weight_sparse_p64_kg4_iv1_tb0_pt1_sk1_lc0", {3, 2, 1}, {64, 1, 1}, 0, run_1_sm_90_args0, 6, -1, true},
};
const KernelImage kernels_1[] = {
    {90, cubin_1_sm_90, sizeof cubin_1_sm_90, "weight_sparse_p64_kg4_iv1_tb0_pt1_sk1_lc0", buffers_1_sm_90, 2, 0ULL, 512ULL, nullptr, 0, run_1_sm_90, 1, 2, {0, 0, 0}},
};
// The filter's nonzeros (pattern c7309389a95876b5): a filter given for the problem must have none elsewhere
const unsigned char weight_mask_1[] = {
#include "filters/01_b_mask.inc"
};
// Their values, which a kernel has in its code: a filter given for the problem must have them
const float weight_values_1[] = {
#include "filters/01_b_values.inc"
};

}  // namespace

const ProblemEntry problems[] = {
    {{1, 4, 8, 1, 12, 12, 1, 3, 3, 1, 1, 1, 0, 1, 1, 1, 1, 1, 1, WEIGHT_TWINS_SM90_LAYOUT_NCHW, WEIGHT_TWINS_SM90_PRECISION_FP32, {0}, 0},
     "a", 4608ULL, kernels_0, 1, "9359409639b2f1ff", weight_mask_0, weight_values_0, 288ULL},
    {{1, 4, 8, 1, 12, 12, 1, 3, 3, 1, 1, 1, 0, 1, 1, 1, 1, 1, 1, WEIGHT_TWINS_SM90_LAYOUT_NCHW, WEIGHT_TWINS_SM90_PRECISION_FP32, {0}, 0},
     "b", 4608ULL, kernels_1, 1, "c7309389a95876b5", weight_mask_1, weight_values_1, 288ULL},
};
const std::size_t problem_count = sizeof problems / sizeof problems[0];
const PassImage* const plan_passes = nullptr;
const std::size_t plan_pass_count = 0;
const char* const architectures = "sm_90";

}  // namespace weight_twins_sm90_internal
