// cusnn_sm90_kernels.cpp: the problems of the cusnn suite and their kernels for sm_90. Written by convgen emit-lib 0.1.0 (NVRTC 13.0); do not edit.
#include "cusnn_sm90_kernels.hpp"

namespace cusnn_sm90_internal {
namespace {

// dense_128to32_56: n1_c128_k32_i1x56x56_f1x3x3_s1x1x1_p0x1x1_d1x1x1_g1_nchw_fp32
//   128->32 3x3 s1 p1 at 56x56 -> 56x56, n1
// sm_90 (NVIDIA H100 80GB HBM3): winograd_gemm_m2_bm32_bn32_bk16_tm4_tn4_cp4_sk1, from convgen's default choice (untuned); 71 registers, 0 bytes spilled, 16384 bytes static shared memory; plan: setup: kernel transform_filter; run: kernel transform_input, kernel, kernel transform_output; workspace 8192000 B; persistent 262144 B
alignas(64) const unsigned char cubin_0_sm_90[] = {
#include "cubins/00_dense_128to32_56_sm_90.inc"
};
const PlanBuffer buffers_0_sm_90[] = {
    {"transformed_filter", 262144ULL, 0ULL, true},
    {"transformed_input", 6553600ULL, 0ULL, false},
    {"products", 1638400ULL, 6553600ULL, false},
};
const ArgBinding setup_0_sm_90_args0[] = {{Arg::filter, -1}, {Arg::buffer, 0}};
const Step setup_0_sm_90[] = {
    {Step::kernel, "winograd_gemm_m2_bm32_bn32_bk16_tm4_tn4_cp4_sk1_transform_filter", {64, 1, 1}, {64, 1, 1}, 0, setup_0_sm_90_args0, 2, -1, false},
};
const ArgBinding run_0_sm_90_args0[] = {{Arg::activation, -1}, {Arg::buffer, 1}};
const ArgBinding run_0_sm_90_args1[] = {{Arg::buffer, 0}, {Arg::buffer, 1}, {Arg::buffer, 2}};
const ArgBinding run_0_sm_90_args2[] = {{Arg::buffer, 2}, {Arg::output, -1}, {Arg::bias, -1}, {Arg::residual, -1}};
const Step run_0_sm_90[] = {
    {Step::kernel, "winograd_gemm_m2_bm32_bn32_bk16_tm4_tn4_cp4_sk1_transform_input", {1600, 1, 1}, {64, 1, 1}, 0, run_0_sm_90_args0, 2, -1, true},
    {Step::kernel, "winograd_gemm_m2_bm32_bn32_bk16_tm4_tn4_cp4_sk1", {25, 1, 16}, {64, 1, 1}, 0, run_0_sm_90_args1, 3, -1, true},
    {Step::kernel, "winograd_gemm_m2_bm32_bn32_bk16_tm4_tn4_cp4_sk1_transform_output", {392, 1, 1}, {64, 1, 1}, 0, run_0_sm_90_args2, 4, -1, true},
};
const KernelImage kernels_0[] = {
    {90, cubin_0_sm_90, sizeof cubin_0_sm_90, "winograd_gemm_m2_bm32_bn32_bk16_tm4_tn4_cp4_sk1", buffers_0_sm_90, 3, 8192000ULL, 262144ULL, setup_0_sm_90, 1, run_0_sm_90, 3, 0, {0, 0, 0}},
};

// dense_128to32_28: n1_c128_k32_i1x28x28_f1x3x3_s1x1x1_p0x1x1_d1x1x1_g1_nchw_fp32
//   128->32 3x3 s1 p1 at 28x28 -> 28x28, n1
// sm_90 (NVIDIA H100 80GB HBM3): winograd_gemm_m2_bm32_bn32_bk16_tm4_tn4_cp4_sk1, from convgen's default choice (untuned); 71 registers, 0 bytes spilled, 16384 bytes static shared memory; plan: setup: kernel transform_filter; run: kernel transform_input, kernel, kernel transform_output; workspace 2293760 B; persistent 262144 B
alignas(64) const unsigned char cubin_1_sm_90[] = {
#include "cubins/01_dense_128to32_28_sm_90.inc"
};
const PlanBuffer buffers_1_sm_90[] = {
    {"transformed_filter", 262144ULL, 0ULL, true},
    {"transformed_input", 1835008ULL, 0ULL, false},
    {"products", 458752ULL, 1835008ULL, false},
};
const ArgBinding setup_1_sm_90_args0[] = {{Arg::filter, -1}, {Arg::buffer, 0}};
const Step setup_1_sm_90[] = {
    {Step::kernel, "winograd_gemm_m2_bm32_bn32_bk16_tm4_tn4_cp4_sk1_transform_filter", {64, 1, 1}, {64, 1, 1}, 0, setup_1_sm_90_args0, 2, -1, false},
};
const ArgBinding run_1_sm_90_args0[] = {{Arg::activation, -1}, {Arg::buffer, 1}};
const ArgBinding run_1_sm_90_args1[] = {{Arg::buffer, 0}, {Arg::buffer, 1}, {Arg::buffer, 2}};
const ArgBinding run_1_sm_90_args2[] = {{Arg::buffer, 2}, {Arg::output, -1}, {Arg::bias, -1}, {Arg::residual, -1}};
const Step run_1_sm_90[] = {
    {Step::kernel, "winograd_gemm_m2_bm32_bn32_bk16_tm4_tn4_cp4_sk1_transform_input", {448, 1, 1}, {64, 1, 1}, 0, run_1_sm_90_args0, 2, -1, true},
    {Step::kernel, "winograd_gemm_m2_bm32_bn32_bk16_tm4_tn4_cp4_sk1", {7, 1, 16}, {64, 1, 1}, 0, run_1_sm_90_args1, 3, -1, true},
    {Step::kernel, "winograd_gemm_m2_bm32_bn32_bk16_tm4_tn4_cp4_sk1_transform_output", {98, 1, 1}, {64, 1, 1}, 0, run_1_sm_90_args2, 4, -1, true},
};
const KernelImage kernels_1[] = {
    {90, cubin_1_sm_90, sizeof cubin_1_sm_90, "winograd_gemm_m2_bm32_bn32_bk16_tm4_tn4_cp4_sk1", buffers_1_sm_90, 3, 2293760ULL, 262144ULL, setup_1_sm_90, 1, run_1_sm_90, 3, 0, {0, 0, 0}},
};

// dense_128to32_14: n1_c128_k32_i1x14x14_f1x3x3_s1x1x1_p0x1x1_d1x1x1_g1_nchw_fp32
//   128->32 3x3 s1 p1 at 14x14 -> 14x14, n1
// sm_90 (NVIDIA H100 80GB HBM3): act_sparse_th2_tw2_tk1_wp16_sc2_dm0_sm3_ur0_relu0_lb1_bs0_cr0, from convgen's default choice (untuned); 49 registers, 0 bytes spilled, 2688 bytes static shared memory; plan: setup: kernel pack_filter; run: zero output, kernel; persistent 196608 B
alignas(64) const unsigned char cubin_2_sm_90[] = {
#include "cubins/02_dense_128to32_14_sm_90.inc"
};
const PlanBuffer buffers_2_sm_90[] = {
    {"packed_filter", 196608ULL, 0ULL, true},
};
const ArgBinding setup_2_sm_90_args0[] = {{Arg::filter, -1}, {Arg::buffer, 0}};
const Step setup_2_sm_90[] = {
    {Step::kernel, "act_sparse_th2_tw2_tk1_wp16_sc2_dm0_sm3_ur0_relu0_lb1_bs0_cr0_pack_filter", {192, 1, 1}, {256, 1, 1}, 0, setup_2_sm_90_args0, 2, -1, false},
};
const ArgBinding run_2_sm_90_args1[] = {{Arg::activation, -1}, {Arg::buffer, 0}, {Arg::output, -1}, {Arg::bias, -1}, {Arg::residual, -1}};
const Step run_2_sm_90[] = {
    {Step::zero, "convgen_zero_bytes", {7, 1, 1}, {256, 1, 1}, 0, nullptr, 0, -1, true},
    {Step::kernel, "act_sparse_th2_tw2_tk1_wp16_sc2_dm0_sm3_ur0_relu0_lb1_bs0_cr0", {49, 1, 2}, {512, 1, 1}, 0, run_2_sm_90_args1, 5, -1, true},
};
const KernelImage kernels_2[] = {
    {90, cubin_2_sm_90, sizeof cubin_2_sm_90, "act_sparse_th2_tw2_tk1_wp16_sc2_dm0_sm3_ur0_relu0_lb1_bs0_cr0", buffers_2_sm_90, 1, 0ULL, 196608ULL, setup_2_sm_90, 1, run_2_sm_90, 2, 0, {0, 0, 0}},
};

// dense_128to32_7: n1_c128_k32_i1x7x7_f1x3x3_s1x1x1_p0x1x1_d1x1x1_g1_nchw_fp32
//   128->32 3x3 s1 p1 at 7x7 -> 7x7, n1
// sm_90 (NVIDIA H100 80GB HBM3): act_sparse_th1_tw1_tk1_wp16_sc2_dm0_sm3_ur0_relu0_lb1_bs0_cr0, from convgen's default choice (untuned); 38 registers, 0 bytes spilled, 256 bytes static shared memory; plan: setup: kernel pack_filter; run: zero output, kernel; persistent 196608 B
alignas(64) const unsigned char cubin_3_sm_90[] = {
#include "cubins/03_dense_128to32_7_sm_90.inc"
};
const PlanBuffer buffers_3_sm_90[] = {
    {"packed_filter", 196608ULL, 0ULL, true},
};
const ArgBinding setup_3_sm_90_args0[] = {{Arg::filter, -1}, {Arg::buffer, 0}};
const Step setup_3_sm_90[] = {
    {Step::kernel, "act_sparse_th1_tw1_tk1_wp16_sc2_dm0_sm3_ur0_relu0_lb1_bs0_cr0_pack_filter", {192, 1, 1}, {256, 1, 1}, 0, setup_3_sm_90_args0, 2, -1, false},
};
const ArgBinding run_3_sm_90_args1[] = {{Arg::activation, -1}, {Arg::buffer, 0}, {Arg::output, -1}, {Arg::bias, -1}, {Arg::residual, -1}};
const Step run_3_sm_90[] = {
    {Step::zero, "convgen_zero_bytes", {2, 1, 1}, {256, 1, 1}, 0, nullptr, 0, -1, true},
    {Step::kernel, "act_sparse_th1_tw1_tk1_wp16_sc2_dm0_sm3_ur0_relu0_lb1_bs0_cr0", {49, 1, 2}, {512, 1, 1}, 0, run_3_sm_90_args1, 5, -1, true},
};
const KernelImage kernels_3[] = {
    {90, cubin_3_sm_90, sizeof cubin_3_sm_90, "act_sparse_th1_tw1_tk1_wp16_sc2_dm0_sm3_ur0_relu0_lb1_bs0_cr0", buffers_3_sm_90, 1, 0ULL, 196608ULL, setup_3_sm_90, 1, run_3_sm_90, 2, 0, {0, 0, 0}},
};

// res_64to64_56: n1_c64_k64_i1x56x56_f1x3x3_s1x1x1_p0x1x1_d1x1x1_g1_nchw_fp32
//   64->64 3x3 s1 p1 at 56x56 -> 56x56, n1
// sm_90 (NVIDIA H100 80GB HBM3): winograd_gemm_m2_bm32_bn32_bk16_tm4_tn4_cp4_sk1, from convgen's default choice (untuned); 70 registers, 0 bytes spilled, 16384 bytes static shared memory; plan: setup: kernel transform_filter; run: kernel transform_input, kernel, kernel transform_output; workspace 6553600 B; persistent 262144 B
alignas(64) const unsigned char cubin_4_sm_90[] = {
#include "cubins/04_res_64to64_56_sm_90.inc"
};
const PlanBuffer buffers_4_sm_90[] = {
    {"transformed_filter", 262144ULL, 0ULL, true},
    {"transformed_input", 3276800ULL, 0ULL, false},
    {"products", 3276800ULL, 3276800ULL, false},
};
const ArgBinding setup_4_sm_90_args0[] = {{Arg::filter, -1}, {Arg::buffer, 0}};
const Step setup_4_sm_90[] = {
    {Step::kernel, "winograd_gemm_m2_bm32_bn32_bk16_tm4_tn4_cp4_sk1_transform_filter", {64, 1, 1}, {64, 1, 1}, 0, setup_4_sm_90_args0, 2, -1, false},
};
const ArgBinding run_4_sm_90_args0[] = {{Arg::activation, -1}, {Arg::buffer, 1}};
const ArgBinding run_4_sm_90_args1[] = {{Arg::buffer, 0}, {Arg::buffer, 1}, {Arg::buffer, 2}};
const ArgBinding run_4_sm_90_args2[] = {{Arg::buffer, 2}, {Arg::output, -1}, {Arg::bias, -1}, {Arg::residual, -1}};
const Step run_4_sm_90[] = {
    {Step::kernel, "winograd_gemm_m2_bm32_bn32_bk16_tm4_tn4_cp4_sk1_transform_input", {800, 1, 1}, {64, 1, 1}, 0, run_4_sm_90_args0, 2, -1, true},
    {Step::kernel, "winograd_gemm_m2_bm32_bn32_bk16_tm4_tn4_cp4_sk1", {25, 2, 16}, {64, 1, 1}, 0, run_4_sm_90_args1, 3, -1, true},
    {Step::kernel, "winograd_gemm_m2_bm32_bn32_bk16_tm4_tn4_cp4_sk1_transform_output", {784, 1, 1}, {64, 1, 1}, 0, run_4_sm_90_args2, 4, -1, true},
};
const KernelImage kernels_4[] = {
    {90, cubin_4_sm_90, sizeof cubin_4_sm_90, "winograd_gemm_m2_bm32_bn32_bk16_tm4_tn4_cp4_sk1", buffers_4_sm_90, 3, 6553600ULL, 262144ULL, setup_4_sm_90, 1, run_4_sm_90, 3, 0, {0, 0, 0}},
};

// res_128to128_28: n1_c128_k128_i1x28x28_f1x3x3_s1x1x1_p0x1x1_d1x1x1_g1_nchw_fp32
//   128->128 3x3 s1 p1 at 28x28 -> 28x28, n1
// sm_90 (NVIDIA H100 80GB HBM3): winograd_gemm_m2_bm64_bn32_bk16_tm4_tn4_cp4_sk1, from convgen's default choice (untuned); 65 registers, 0 bytes spilled, 24576 bytes static shared memory; plan: setup: kernel transform_filter; run: kernel transform_input, kernel, kernel transform_output; workspace 3670016 B; persistent 1048576 B
alignas(64) const unsigned char cubin_5_sm_90[] = {
#include "cubins/05_res_128to128_28_sm_90.inc"
};
const PlanBuffer buffers_5_sm_90[] = {
    {"transformed_filter", 1048576ULL, 0ULL, true},
    {"transformed_input", 1835008ULL, 0ULL, false},
    {"products", 1835008ULL, 1835008ULL, false},
};
const ArgBinding setup_5_sm_90_args0[] = {{Arg::filter, -1}, {Arg::buffer, 0}};
const Step setup_5_sm_90[] = {
    {Step::kernel, "winograd_gemm_m2_bm64_bn32_bk16_tm4_tn4_cp4_sk1_transform_filter", {256, 1, 1}, {64, 1, 1}, 0, setup_5_sm_90_args0, 2, -1, false},
};
const ArgBinding run_5_sm_90_args0[] = {{Arg::activation, -1}, {Arg::buffer, 1}};
const ArgBinding run_5_sm_90_args1[] = {{Arg::buffer, 0}, {Arg::buffer, 1}, {Arg::buffer, 2}};
const ArgBinding run_5_sm_90_args2[] = {{Arg::buffer, 2}, {Arg::output, -1}, {Arg::bias, -1}, {Arg::residual, -1}};
const Step run_5_sm_90[] = {
    {Step::kernel, "winograd_gemm_m2_bm64_bn32_bk16_tm4_tn4_cp4_sk1_transform_input", {448, 1, 1}, {64, 1, 1}, 0, run_5_sm_90_args0, 2, -1, true},
    {Step::kernel, "winograd_gemm_m2_bm64_bn32_bk16_tm4_tn4_cp4_sk1", {7, 2, 16}, {128, 1, 1}, 0, run_5_sm_90_args1, 3, -1, true},
    {Step::kernel, "winograd_gemm_m2_bm64_bn32_bk16_tm4_tn4_cp4_sk1_transform_output", {392, 1, 1}, {64, 1, 1}, 0, run_5_sm_90_args2, 4, -1, true},
};
const KernelImage kernels_5[] = {
    {90, cubin_5_sm_90, sizeof cubin_5_sm_90, "winograd_gemm_m2_bm64_bn32_bk16_tm4_tn4_cp4_sk1", buffers_5_sm_90, 3, 3670016ULL, 1048576ULL, setup_5_sm_90, 1, run_5_sm_90, 3, 0, {0, 0, 0}},
};

// res_256to256_14: n1_c256_k256_i1x14x14_f1x3x3_s1x1x1_p0x1x1_d1x1x1_g1_nchw_fp32
//   256->256 3x3 s1 p1 at 14x14 -> 14x14, n1
// sm_90 (NVIDIA H100 80GB HBM3): winograd_gemm_m2_bm64_bn64_bk16_tm4_tn4_cp4_sk1, from convgen's default choice (untuned); 63 registers, 0 bytes spilled, 32768 bytes static shared memory; plan: setup: kernel transform_filter; run: kernel transform_input, kernel, kernel transform_output; workspace 2097152 B; persistent 4194304 B
alignas(64) const unsigned char cubin_6_sm_90[] = {
#include "cubins/06_res_256to256_14_sm_90.inc"
};
const PlanBuffer buffers_6_sm_90[] = {
    {"transformed_filter", 4194304ULL, 0ULL, true},
    {"transformed_input", 1048576ULL, 0ULL, false},
    {"products", 1048576ULL, 1048576ULL, false},
};
const ArgBinding setup_6_sm_90_args0[] = {{Arg::filter, -1}, {Arg::buffer, 0}};
const Step setup_6_sm_90[] = {
    {Step::kernel, "winograd_gemm_m2_bm64_bn64_bk16_tm4_tn4_cp4_sk1_transform_filter", {1024, 1, 1}, {64, 1, 1}, 0, setup_6_sm_90_args0, 2, -1, false},
};
const ArgBinding run_6_sm_90_args0[] = {{Arg::activation, -1}, {Arg::buffer, 1}};
const ArgBinding run_6_sm_90_args1[] = {{Arg::buffer, 0}, {Arg::buffer, 1}, {Arg::buffer, 2}};
const ArgBinding run_6_sm_90_args2[] = {{Arg::buffer, 2}, {Arg::output, -1}, {Arg::bias, -1}, {Arg::residual, -1}};
const Step run_6_sm_90[] = {
    {Step::kernel, "winograd_gemm_m2_bm64_bn64_bk16_tm4_tn4_cp4_sk1_transform_input", {256, 1, 1}, {64, 1, 1}, 0, run_6_sm_90_args0, 2, -1, true},
    {Step::kernel, "winograd_gemm_m2_bm64_bn64_bk16_tm4_tn4_cp4_sk1", {1, 4, 16}, {256, 1, 1}, 0, run_6_sm_90_args1, 3, -1, true},
    {Step::kernel, "winograd_gemm_m2_bm64_bn64_bk16_tm4_tn4_cp4_sk1_transform_output", {196, 1, 1}, {64, 1, 1}, 0, run_6_sm_90_args2, 4, -1, true},
};
const KernelImage kernels_6[] = {
    {90, cubin_6_sm_90, sizeof cubin_6_sm_90, "winograd_gemm_m2_bm64_bn64_bk16_tm4_tn4_cp4_sk1", buffers_6_sm_90, 3, 2097152ULL, 4194304ULL, setup_6_sm_90, 1, run_6_sm_90, 3, 0, {0, 0, 0}},
};

// res_512to512_7: n1_c512_k512_i1x7x7_f1x3x3_s1x1x1_p0x1x1_d1x1x1_g1_nchw_fp32
//   512->512 3x3 s1 p1 at 7x7 -> 7x7, n1
// sm_90 (NVIDIA H100 80GB HBM3): winograd_gemm_m2_bm64_bn32_bk16_tm4_tn4_cp4_sk1, from convgen's default choice (untuned); 65 registers, 0 bytes spilled, 24576 bytes static shared memory; plan: setup: kernel transform_filter; run: kernel transform_input, kernel, kernel transform_output; workspace 2097152 B; persistent 16777216 B
alignas(64) const unsigned char cubin_7_sm_90[] = {
#include "cubins/07_res_512to512_7_sm_90.inc"
};
const PlanBuffer buffers_7_sm_90[] = {
    {"transformed_filter", 16777216ULL, 0ULL, true},
    {"transformed_input", 1048576ULL, 0ULL, false},
    {"products", 1048576ULL, 1048576ULL, false},
};
const ArgBinding setup_7_sm_90_args0[] = {{Arg::filter, -1}, {Arg::buffer, 0}};
const Step setup_7_sm_90[] = {
    {Step::kernel, "winograd_gemm_m2_bm64_bn32_bk16_tm4_tn4_cp4_sk1_transform_filter", {4096, 1, 1}, {64, 1, 1}, 0, setup_7_sm_90_args0, 2, -1, false},
};
const ArgBinding run_7_sm_90_args0[] = {{Arg::activation, -1}, {Arg::buffer, 1}};
const ArgBinding run_7_sm_90_args1[] = {{Arg::buffer, 0}, {Arg::buffer, 1}, {Arg::buffer, 2}};
const ArgBinding run_7_sm_90_args2[] = {{Arg::buffer, 2}, {Arg::output, -1}, {Arg::bias, -1}, {Arg::residual, -1}};
const Step run_7_sm_90[] = {
    {Step::kernel, "winograd_gemm_m2_bm64_bn32_bk16_tm4_tn4_cp4_sk1_transform_input", {256, 1, 1}, {64, 1, 1}, 0, run_7_sm_90_args0, 2, -1, true},
    {Step::kernel, "winograd_gemm_m2_bm64_bn32_bk16_tm4_tn4_cp4_sk1", {1, 8, 16}, {128, 1, 1}, 0, run_7_sm_90_args1, 3, -1, true},
    {Step::kernel, "winograd_gemm_m2_bm64_bn32_bk16_tm4_tn4_cp4_sk1_transform_output", {128, 1, 1}, {64, 1, 1}, 0, run_7_sm_90_args2, 4, -1, true},
};
const KernelImage kernels_7[] = {
    {90, cubin_7_sm_90, sizeof cubin_7_sm_90, "winograd_gemm_m2_bm64_bn32_bk16_tm4_tn4_cp4_sk1", buffers_7_sm_90, 3, 2097152ULL, 16777216ULL, setup_7_sm_90, 1, run_7_sm_90, 3, 0, {0, 0, 0}},
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
    {{1, 128, 32, 1, 56, 56, 1, 3, 3, 1, 1, 1, 0, 1, 1, 1, 1, 1, 1, CUSNN_SM90_LAYOUT_NCHW, CUSNN_SM90_PRECISION_FP32, {0}, 0},
     "dense_128to32_56", 401408ULL, kernels_0, 1, "", nullptr, nullptr, 36864ULL},
    {{1, 128, 32, 1, 28, 28, 1, 3, 3, 1, 1, 1, 0, 1, 1, 1, 1, 1, 1, CUSNN_SM90_LAYOUT_NCHW, CUSNN_SM90_PRECISION_FP32, {0}, 0},
     "dense_128to32_28", 100352ULL, kernels_1, 1, "", nullptr, nullptr, 36864ULL},
    {{1, 128, 32, 1, 14, 14, 1, 3, 3, 1, 1, 1, 0, 1, 1, 1, 1, 1, 1, CUSNN_SM90_LAYOUT_NCHW, CUSNN_SM90_PRECISION_FP32, {0}, 0},
     "dense_128to32_14", 25088ULL, kernels_2, 1, "", nullptr, nullptr, 36864ULL},
    {{1, 128, 32, 1, 7, 7, 1, 3, 3, 1, 1, 1, 0, 1, 1, 1, 1, 1, 1, CUSNN_SM90_LAYOUT_NCHW, CUSNN_SM90_PRECISION_FP32, {0}, 0},
     "dense_128to32_7", 6272ULL, kernels_3, 1, "", nullptr, nullptr, 36864ULL},
    {{1, 64, 64, 1, 56, 56, 1, 3, 3, 1, 1, 1, 0, 1, 1, 1, 1, 1, 1, CUSNN_SM90_LAYOUT_NCHW, CUSNN_SM90_PRECISION_FP32, {0}, 0},
     "res_64to64_56", 802816ULL, kernels_4, 1, "", nullptr, nullptr, 36864ULL},
    {{1, 128, 128, 1, 28, 28, 1, 3, 3, 1, 1, 1, 0, 1, 1, 1, 1, 1, 1, CUSNN_SM90_LAYOUT_NCHW, CUSNN_SM90_PRECISION_FP32, {0}, 0},
     "res_128to128_28", 401408ULL, kernels_5, 1, "", nullptr, nullptr, 147456ULL},
    {{1, 256, 256, 1, 14, 14, 1, 3, 3, 1, 1, 1, 0, 1, 1, 1, 1, 1, 1, CUSNN_SM90_LAYOUT_NCHW, CUSNN_SM90_PRECISION_FP32, {0}, 0},
     "res_256to256_14", 200704ULL, kernels_6, 1, "", nullptr, nullptr, 589824ULL},
    {{1, 512, 512, 1, 7, 7, 1, 3, 3, 1, 1, 1, 0, 1, 1, 1, 1, 1, 1, CUSNN_SM90_LAYOUT_NCHW, CUSNN_SM90_PRECISION_FP32, {0}, 0},
     "res_512to512_7", 100352ULL, kernels_7, 1, "", nullptr, nullptr, 2359296ULL},
};
const std::size_t problem_count = sizeof problems / sizeof problems[0];
const PassImage* const plan_passes = pass_images;
const std::size_t plan_pass_count = sizeof pass_images / sizeof pass_images[0];
const char* const architectures = "sm_90";

}  // namespace cusnn_sm90_internal
