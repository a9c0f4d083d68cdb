// cusnn_sm90_kernels.cpp: the problems of the cusnn suite and their kernels for sm_90. Written by convgen emit-lib 0.1.0 (NVRTC 13.0); do not edit.
#include "cusnn_sm90_kernels.hpp"

namespace cusnn_sm90_internal {
namespace {

// dense_128to32_56: n1_c128_k32_i1x56x56_f1x3x3_s1x1x1_p0x1x1_d1x1x1_g1_nchw_fp32
//   128->32 3x3 s1 p1 at 56x56 -> 56x56, n1
// sm_90 (NVIDIA H100 SXM5 80GB): igemm_m32_n64_k16_tm4_tn4_st2_sk8_v4, from convgen's default choice (untuned); 63 registers, 0 bytes spilled, 13312 bytes static shared memory; plan: zero output, kernel
alignas(64) const unsigned char cubin_0_sm_90[] = {
#include "cubins/00_dense_128to32_56_sm_90.inc"
};
const ArgBinding run_0_sm_90_args1[] = {{Arg::activation, -1}, {Arg::filter, -1}, {Arg::output, -1}, {Arg::workspace, -1}, {Arg::bias, -1}, {Arg::residual, -1}};
const Step run_0_sm_90[] = {
    {Step::zero, nullptr, {0, 0, 0}, {0, 0, 0}, 0, nullptr, 0, -1},
    {Step::kernel, "igemm_m32_n64_k16_tm4_tn4_st2_sk8_v4", {49, 1, 8}, {128, 1, 1}, 0, run_0_sm_90_args1, 6, -1},
};
const KernelImage kernels_0[] = {
    {90, cubin_0_sm_90, sizeof cubin_0_sm_90, "igemm_m32_n64_k16_tm4_tn4_st2_sk8_v4", nullptr, 0, 0ULL, 0ULL, nullptr, 0, run_0_sm_90, 2},
};

// dense_128to32_28: n1_c128_k32_i1x28x28_f1x3x3_s1x1x1_p0x1x1_d1x1x1_g1_nchw_fp32
//   128->32 3x3 s1 p1 at 28x28 -> 28x28, n1
// sm_90 (NVIDIA H100 SXM5 80GB): igemm_m32_n64_k8_tm4_tn4_st2_sk16_v4, from convgen's default choice (untuned); 55 registers, 0 bytes spilled, 6656 bytes static shared memory; plan: zero output, kernel
alignas(64) const unsigned char cubin_1_sm_90[] = {
#include "cubins/01_dense_128to32_28_sm_90.inc"
};
const ArgBinding run_1_sm_90_args1[] = {{Arg::activation, -1}, {Arg::filter, -1}, {Arg::output, -1}, {Arg::workspace, -1}, {Arg::bias, -1}, {Arg::residual, -1}};
const Step run_1_sm_90[] = {
    {Step::zero, nullptr, {0, 0, 0}, {0, 0, 0}, 0, nullptr, 0, -1},
    {Step::kernel, "igemm_m32_n64_k8_tm4_tn4_st2_sk16_v4", {13, 1, 16}, {128, 1, 1}, 0, run_1_sm_90_args1, 6, -1},
};
const KernelImage kernels_1[] = {
    {90, cubin_1_sm_90, sizeof cubin_1_sm_90, "igemm_m32_n64_k8_tm4_tn4_st2_sk16_v4", nullptr, 0, 0ULL, 0ULL, nullptr, 0, run_1_sm_90, 2},
};

// dense_128to32_14: n1_c128_k32_i1x14x14_f1x3x3_s1x1x1_p0x1x1_d1x1x1_g1_nchw_fp32
//   128->32 3x3 s1 p1 at 14x14 -> 14x14, n1
// sm_90 (NVIDIA H100 SXM5 80GB): igemm_m16_n16_k8_tm2_tn2_st2_sk16_v4, from convgen's default choice (untuned); 31 registers, 0 bytes spilled, 2560 bytes static shared memory; plan: zero output, kernel
alignas(64) const unsigned char cubin_2_sm_90[] = {
#include "cubins/02_dense_128to32_14_sm_90.inc"
};
const ArgBinding run_2_sm_90_args1[] = {{Arg::activation, -1}, {Arg::filter, -1}, {Arg::output, -1}, {Arg::workspace, -1}, {Arg::bias, -1}, {Arg::residual, -1}};
const Step run_2_sm_90[] = {
    {Step::zero, nullptr, {0, 0, 0}, {0, 0, 0}, 0, nullptr, 0, -1},
    {Step::kernel, "igemm_m16_n16_k8_tm2_tn2_st2_sk16_v4", {13, 2, 16}, {64, 1, 1}, 0, run_2_sm_90_args1, 6, -1},
};
const KernelImage kernels_2[] = {
    {90, cubin_2_sm_90, sizeof cubin_2_sm_90, "igemm_m16_n16_k8_tm2_tn2_st2_sk16_v4", nullptr, 0, 0ULL, 0ULL, nullptr, 0, run_2_sm_90, 2},
};

// dense_128to32_7: n1_c128_k32_i1x7x7_f1x3x3_s1x1x1_p0x1x1_d1x1x1_g1_nchw_fp32
//   128->32 3x3 s1 p1 at 7x7 -> 7x7, n1
// sm_90 (NVIDIA H100 SXM5 80GB): igemm_m16_n16_k8_tm2_tn2_st2_sk16_v4, from convgen's default choice (untuned); 31 registers, 0 bytes spilled, 2560 bytes static shared memory; plan: zero output, kernel
alignas(64) const unsigned char cubin_3_sm_90[] = {
#include "cubins/03_dense_128to32_7_sm_90.inc"
};
const ArgBinding run_3_sm_90_args1[] = {{Arg::activation, -1}, {Arg::filter, -1}, {Arg::output, -1}, {Arg::workspace, -1}, {Arg::bias, -1}, {Arg::residual, -1}};
const Step run_3_sm_90[] = {
    {Step::zero, nullptr, {0, 0, 0}, {0, 0, 0}, 0, nullptr, 0, -1},
    {Step::kernel, "igemm_m16_n16_k8_tm2_tn2_st2_sk16_v4", {4, 2, 16}, {64, 1, 1}, 0, run_3_sm_90_args1, 6, -1},
};
const KernelImage kernels_3[] = {
    {90, cubin_3_sm_90, sizeof cubin_3_sm_90, "igemm_m16_n16_k8_tm2_tn2_st2_sk16_v4", nullptr, 0, 0ULL, 0ULL, nullptr, 0, run_3_sm_90, 2},
};

// res_64to64_56: n1_c64_k64_i1x56x56_f1x3x3_s1x1x1_p0x1x1_d1x1x1_g1_nchw_fp32
//   64->64 3x3 s1 p1 at 56x56 -> 56x56, n1
// sm_90 (NVIDIA H100 SXM5 80GB): igemm_m64_n64_k8_tm4_tn4_st2_sk8_v4, from convgen's default choice (untuned); 47 registers, 0 bytes spilled, 8704 bytes static shared memory; plan: zero output, kernel
alignas(64) const unsigned char cubin_4_sm_90[] = {
#include "cubins/04_res_64to64_56_sm_90.inc"
};
const ArgBinding run_4_sm_90_args1[] = {{Arg::activation, -1}, {Arg::filter, -1}, {Arg::output, -1}, {Arg::workspace, -1}, {Arg::bias, -1}, {Arg::residual, -1}};
const Step run_4_sm_90[] = {
    {Step::zero, nullptr, {0, 0, 0}, {0, 0, 0}, 0, nullptr, 0, -1},
    {Step::kernel, "igemm_m64_n64_k8_tm4_tn4_st2_sk8_v4", {49, 1, 8}, {256, 1, 1}, 0, run_4_sm_90_args1, 6, -1},
};
const KernelImage kernels_4[] = {
    {90, cubin_4_sm_90, sizeof cubin_4_sm_90, "igemm_m64_n64_k8_tm4_tn4_st2_sk8_v4", nullptr, 0, 0ULL, 0ULL, nullptr, 0, run_4_sm_90, 2},
};

// res_128to128_28: n1_c128_k128_i1x28x28_f1x3x3_s1x1x1_p0x1x1_d1x1x1_g1_nchw_fp32
//   128->128 3x3 s1 p1 at 28x28 -> 28x28, n1
// sm_90 (NVIDIA H100 SXM5 80GB): igemm_m128_n64_k16_tm8_tn4_st2_sk8_v4, from convgen's default choice (untuned); 89 registers, 0 bytes spilled, 25600 bytes static shared memory; plan: zero output, kernel
alignas(64) const unsigned char cubin_5_sm_90[] = {
#include "cubins/05_res_128to128_28_sm_90.inc"
};
const ArgBinding run_5_sm_90_args1[] = {{Arg::activation, -1}, {Arg::filter, -1}, {Arg::output, -1}, {Arg::workspace, -1}, {Arg::bias, -1}, {Arg::residual, -1}};
const Step run_5_sm_90[] = {
    {Step::zero, nullptr, {0, 0, 0}, {0, 0, 0}, 0, nullptr, 0, -1},
    {Step::kernel, "igemm_m128_n64_k16_tm8_tn4_st2_sk8_v4", {13, 1, 8}, {256, 1, 1}, 0, run_5_sm_90_args1, 6, -1},
};
const KernelImage kernels_5[] = {
    {90, cubin_5_sm_90, sizeof cubin_5_sm_90, "igemm_m128_n64_k16_tm8_tn4_st2_sk8_v4", nullptr, 0, 0ULL, 0ULL, nullptr, 0, run_5_sm_90, 2},
};

// res_256to256_14: n1_c256_k256_i1x14x14_f1x3x3_s1x1x1_p0x1x1_d1x1x1_g1_nchw_fp32
//   256->256 3x3 s1 p1 at 14x14 -> 14x14, n1
// sm_90 (NVIDIA H100 SXM5 80GB): igemm_m128_n64_k16_tm8_tn4_st2_sk16_v4, from convgen's default choice (untuned); 89 registers, 0 bytes spilled, 25600 bytes static shared memory; plan: zero output, kernel
alignas(64) const unsigned char cubin_6_sm_90[] = {
#include "cubins/06_res_256to256_14_sm_90.inc"
};
const ArgBinding run_6_sm_90_args1[] = {{Arg::activation, -1}, {Arg::filter, -1}, {Arg::output, -1}, {Arg::workspace, -1}, {Arg::bias, -1}, {Arg::residual, -1}};
const Step run_6_sm_90[] = {
    {Step::zero, nullptr, {0, 0, 0}, {0, 0, 0}, 0, nullptr, 0, -1},
    {Step::kernel, "igemm_m128_n64_k16_tm8_tn4_st2_sk16_v4", {4, 2, 16}, {256, 1, 1}, 0, run_6_sm_90_args1, 6, -1},
};
const KernelImage kernels_6[] = {
    {90, cubin_6_sm_90, sizeof cubin_6_sm_90, "igemm_m128_n64_k16_tm8_tn4_st2_sk16_v4", nullptr, 0, 0ULL, 0ULL, nullptr, 0, run_6_sm_90, 2},
};

// res_512to512_7: n1_c512_k512_i1x7x7_f1x3x3_s1x1x1_p0x1x1_d1x1x1_g1_nchw_fp32
//   512->512 3x3 s1 p1 at 7x7 -> 7x7, n1
// sm_90 (NVIDIA H100 SXM5 80GB): igemm_m128_n64_k16_tm8_tn4_st2_sk32_v4, from convgen's default choice (untuned); 89 registers, 0 bytes spilled, 25600 bytes static shared memory; plan: zero output, kernel
alignas(64) const unsigned char cubin_7_sm_90[] = {
#include "cubins/07_res_512to512_7_sm_90.inc"
};
const ArgBinding run_7_sm_90_args1[] = {{Arg::activation, -1}, {Arg::filter, -1}, {Arg::output, -1}, {Arg::workspace, -1}, {Arg::bias, -1}, {Arg::residual, -1}};
const Step run_7_sm_90[] = {
    {Step::zero, nullptr, {0, 0, 0}, {0, 0, 0}, 0, nullptr, 0, -1},
    {Step::kernel, "igemm_m128_n64_k16_tm8_tn4_st2_sk32_v4", {1, 4, 32}, {256, 1, 1}, 0, run_7_sm_90_args1, 6, -1},
};
const KernelImage kernels_7[] = {
    {90, cubin_7_sm_90, sizeof cubin_7_sm_90, "igemm_m128_n64_k16_tm8_tn4_st2_sk32_v4", nullptr, 0, 0ULL, 0ULL, nullptr, 0, run_7_sm_90, 2},
};

}  // namespace

const ProblemEntry problems[] = {
    {{1, 128, 32, 1, 56, 56, 1, 3, 3, 1, 1, 1, 0, 1, 1, 1, 1, 1, 1, CUSNN_SM90_LAYOUT_NCHW, CUSNN_SM90_PRECISION_FP32, {0}},
     "dense_128to32_56", 401408ULL, kernels_0, 1},
    {{1, 128, 32, 1, 28, 28, 1, 3, 3, 1, 1, 1, 0, 1, 1, 1, 1, 1, 1, CUSNN_SM90_LAYOUT_NCHW, CUSNN_SM90_PRECISION_FP32, {0}},
     "dense_128to32_28", 100352ULL, kernels_1, 1},
    {{1, 128, 32, 1, 14, 14, 1, 3, 3, 1, 1, 1, 0, 1, 1, 1, 1, 1, 1, CUSNN_SM90_LAYOUT_NCHW, CUSNN_SM90_PRECISION_FP32, {0}},
     "dense_128to32_14", 25088ULL, kernels_2, 1},
    {{1, 128, 32, 1, 7, 7, 1, 3, 3, 1, 1, 1, 0, 1, 1, 1, 1, 1, 1, CUSNN_SM90_LAYOUT_NCHW, CUSNN_SM90_PRECISION_FP32, {0}},
     "dense_128to32_7", 6272ULL, kernels_3, 1},
    {{1, 64, 64, 1, 56, 56, 1, 3, 3, 1, 1, 1, 0, 1, 1, 1, 1, 1, 1, CUSNN_SM90_LAYOUT_NCHW, CUSNN_SM90_PRECISION_FP32, {0}},
     "res_64to64_56", 802816ULL, kernels_4, 1},
    {{1, 128, 128, 1, 28, 28, 1, 3, 3, 1, 1, 1, 0, 1, 1, 1, 1, 1, 1, CUSNN_SM90_LAYOUT_NCHW, CUSNN_SM90_PRECISION_FP32, {0}},
     "res_128to128_28", 401408ULL, kernels_5, 1},
    {{1, 256, 256, 1, 14, 14, 1, 3, 3, 1, 1, 1, 0, 1, 1, 1, 1, 1, 1, CUSNN_SM90_LAYOUT_NCHW, CUSNN_SM90_PRECISION_FP32, {0}},
     "res_256to256_14", 200704ULL, kernels_6, 1},
    {{1, 512, 512, 1, 7, 7, 1, 3, 3, 1, 1, 1, 0, 1, 1, 1, 1, 1, 1, CUSNN_SM90_LAYOUT_NCHW, CUSNN_SM90_PRECISION_FP32, {0}},
     "res_512to512_7", 100352ULL, kernels_7, 1},
};
const std::size_t problem_count = sizeof problems / sizeof problems[0];
const char* const architectures = "sm_90";

}  // namespace cusnn_sm90_internal
