// relu_on_load_sm90_kernels.cpp: the problems of the relu_on_load suite and their kernels for sm_90. Written by convgen emit-lib 0.1.0 (NVRTC 13.0); do not edit.
#include "relu_on_load_sm90_kernels.hpp"

namespace relu_on_load_sm90_internal {
namespace {

// applies: n1_c64_k64_i1x28x28_f1x3x3_s1x1x1_p0x1x1_d1x1x1_g1_nchw_fp32_z50_relu
//   64->64 3x3 s1 p1 at 28x28 -> 28x28, n1, 50% zeros, max(0, x) on load
// sm_90 (NVIDIA H100 80GB HBM3): act_sparse_th4_tw7_tk1_wp16_sc1_dm0_sm3_ur0_relu1_lb1_bs0_cr0, from convgen's default choice (untuned); 105 registers, 0 bytes spilled, 7808 bytes static shared memory; plan: setup: kernel pack_filter; run: kernel; persistent 196608 B
alignas(64) const unsigned char cubin_0_sm_90[] = {
#include "cubins/00_applies_sm_90.inc"
};
const PlanBuffer buffers_0_sm_90[] = {
    {"packed_filter", 196608ULL, 0ULL, true},
};
const ArgBinding setup_0_sm_90_args0[] = {{Arg::filter, -1}, {Arg::buffer, 0}};
const Step setup_0_sm_90[] = {
    {Step::kernel, "act_sparse_th4_tw7_tk1_wp16_sc1_dm0_sm3_ur0_relu1_lb1_bs0_cr0_pack_filter", {192, 1, 1}, {256, 1, 1}, 0, setup_0_sm_90_args0, 2, -1, false},
};
const ArgBinding run_0_sm_90_args0[] = {{Arg::activation, -1}, {Arg::buffer, 0}, {Arg::output, -1}, {Arg::bias, -1}, {Arg::residual, -1}};
const Step run_0_sm_90[] = {
    {Step::kernel, "act_sparse_th4_tw7_tk1_wp16_sc1_dm0_sm3_ur0_relu1_lb1_bs0_cr0", {28, 2, 1}, {512, 1, 1}, 0, run_0_sm_90_args0, 5, -1, true},
};
const KernelImage kernels_0[] = {
    {90, cubin_0_sm_90, sizeof cubin_0_sm_90, "act_sparse_th4_tw7_tk1_wp16_sc1_dm0_sm3_ur0_relu1_lb1_bs0_cr0", buffers_0_sm_90, 1, 0ULL, 196608ULL, setup_0_sm_90, 1, run_0_sm_90, 1, 0, {0, 0, 0}},
};

// behind_fp32: n8_c256_k64_i1x14x14_f1x1x1_s1x1x1_p0x0x0_d1x1x1_g1_nchw_fp32_relu
//   256->64 1x1 s1 p0 at 14x14 -> 14x14, n8, max(0, x) on load
// sm_90 (NVIDIA H100 80GB HBM3): pointwise_bm32_bn32_bk16_tm4_tn4_v4_sk4_cp4, from convgen's default choice (untuned); 71 registers, 0 bytes spilled, 16384 bytes static shared memory; plan: setup: kernel pack_filter; run: relu activation into rectified_activation, kernel, kernel reduce; workspace 3211264 B; persistent 65536 B
alignas(64) const unsigned char cubin_1_sm_90[] = {
#include "cubins/01_behind_fp32_sm_90.inc"
};
const PlanBuffer buffers_1_sm_90[] = {
    {"packed_filter", 65536ULL, 0ULL, true},
    {"partials", 1605632ULL, 0ULL, false},
    {"rectified_activation", 1605632ULL, 1605632ULL, false},
};
const ArgBinding setup_1_sm_90_args0[] = {{Arg::filter, -1}, {Arg::buffer, 0}};
const Step setup_1_sm_90[] = {
    {Step::kernel, "pointwise_bm32_bn32_bk16_tm4_tn4_v4_sk4_cp4_pack_filter", {64, 1, 1}, {256, 1, 1}, 0, setup_1_sm_90_args0, 2, -1, false},
};
const ArgBinding run_1_sm_90_args1[] = {{Arg::buffer, 2}, {Arg::buffer, 0}, {Arg::output, -1}, {Arg::bias, -1}, {Arg::residual, -1}, {Arg::workspace, -1}};
const ArgBinding run_1_sm_90_args2[] = {{Arg::workspace, -1}, {Arg::output, -1}, {Arg::bias, -1}, {Arg::residual, -1}};
const Step run_1_sm_90[] = {
    {Step::relu, "convgen_relu_b32", {392, 1, 1}, {256, 1, 1}, 0, nullptr, 0, 2, true},
    {Step::kernel, "pointwise_bm32_bn32_bk16_tm4_tn4_v4_sk4_cp4", {49, 2, 4}, {64, 1, 1}, 0, run_1_sm_90_args1, 6, -1, true},
    {Step::kernel, "pointwise_bm32_bn32_bk16_tm4_tn4_v4_sk4_cp4_reduce", {392, 1, 1}, {256, 1, 1}, 0, run_1_sm_90_args2, 4, -1, true},
};
const KernelImage kernels_1[] = {
    {90, cubin_1_sm_90, sizeof cubin_1_sm_90, "pointwise_bm32_bn32_bk16_tm4_tn4_v4_sk4_cp4", buffers_1_sm_90, 3, 3211264ULL, 65536ULL, setup_1_sm_90, 1, run_1_sm_90, 3, 0, {0, 0, 0}},
};

// behind_fp16: n1_c64_k64_i1x14x14_f1x3x3_s1x1x1_p0x1x1_d1x1x1_g1_nhwc_fp16_relu
//   64->64 3x3 s1 p1 at 14x14 -> 14x14, n1, max(0, x) on load
// sm_90 (NVIDIA H100 80GB HBM3): igemm_wgmma_m64_n16_kb2_st6_sk1_co0_ws0_tma0_fw0_cr0_ta0_wn0_mc1_hl0_sw0_sp0_oc0, from convgen's default choice (untuned); 64 registers, 0 bytes spilled, 0 bytes static shared memory; plan: relu activation into rectified_activation, kernel; workspace 25088 B
alignas(64) const unsigned char cubin_2_sm_90[] = {
#include "cubins/02_behind_fp16_sm_90.inc"
};
const PlanBuffer buffers_2_sm_90[] = {
    {"padded_activation", 0ULL, 0ULL, false},
    {"padded_filter", 0ULL, 0ULL, false},
    {"packed_values", 0ULL, 0ULL, false},
    {"packed_meta", 0ULL, 0ULL, false},
    {"rectified_activation", 25088ULL, 0ULL, false},
};
const ArgBinding run_2_sm_90_args1[] = {{Arg::buffer, 4}, {Arg::filter, -1}, {Arg::output, -1}, {Arg::workspace, -1}, {Arg::bias, -1}, {Arg::residual, -1}, {Arg::map, -1, nullptr}, {Arg::buffer, 0}, {Arg::buffer, 1}, {Arg::map, -1, nullptr}, {Arg::buffer, 2}, {Arg::buffer, 3}};
const Step run_2_sm_90[] = {
    {Step::relu, "convgen_relu_b16", {7, 1, 1}, {256, 1, 1}, 0, nullptr, 0, 4, true},
    {Step::kernel, "igemm_wgmma_m64_n16_kb2_st6_sk1_co0_ws0_tma0_fw0_cr0_ta0_wn0_mc1_hl0_sw0_sp0_oc0", {4, 4, 1}, {128, 1, 1}, 123904, run_2_sm_90_args1, 12, -1, true},
};
const KernelImage kernels_2[] = {
    {90, cubin_2_sm_90, sizeof cubin_2_sm_90, "igemm_wgmma_m64_n16_kb2_st6_sk1_co0_ws0_tma0_fw0_cr0_ta0_wn0_mc1_hl0_sw0_sp0_oc0", buffers_2_sm_90, 5, 25088ULL, 0ULL, nullptr, 0, run_2_sm_90, 2, 0, {0, 16, 16}},
};

// The plan passes for sm_90: the kernels of the zero steps (clear a buffer the plan's kernels accumulate into)
// and of the relu steps (write max(0, x) of the activation into a buffer the plan's kernels read)
alignas(64) const unsigned char plan_passes_sm_90[] = {
#include "cubins/plan_passes_sm_90.inc"
};
const PassImage pass_images[] = {
    {90, plan_passes_sm_90, sizeof plan_passes_sm_90},
};

}  // namespace

const ProblemEntry problems[] = {
    {{1, 64, 64, 1, 28, 28, 1, 3, 3, 1, 1, 1, 0, 1, 1, 1, 1, 1, 1, RELU_ON_LOAD_SM90_LAYOUT_NCHW, RELU_ON_LOAD_SM90_PRECISION_FP32, {0}, 1},
     "applies", 200704ULL, kernels_0, 1, "", nullptr, nullptr, 36864ULL},
    {{8, 256, 64, 1, 14, 14, 1, 1, 1, 1, 1, 1, 0, 0, 0, 1, 1, 1, 1, RELU_ON_LOAD_SM90_LAYOUT_NCHW, RELU_ON_LOAD_SM90_PRECISION_FP32, {0}, 1},
     "behind_fp32", 401408ULL, kernels_1, 1, "", nullptr, nullptr, 16384ULL},
    {{1, 64, 64, 1, 14, 14, 1, 3, 3, 1, 1, 1, 0, 1, 1, 1, 1, 1, 1, RELU_ON_LOAD_SM90_LAYOUT_NHWC, RELU_ON_LOAD_SM90_PRECISION_FP16, {0}, 1},
     "behind_fp16", 25088ULL, kernels_2, 1, "", nullptr, nullptr, 36864ULL},
};
const std::size_t problem_count = sizeof problems / sizeof problems[0];
const PassImage* const plan_passes = pass_images;
const std::size_t plan_pass_count = sizeof pass_images / sizeof pass_images[0];
const char* const architectures = "sm_90";

}  // namespace relu_on_load_sm90_internal
