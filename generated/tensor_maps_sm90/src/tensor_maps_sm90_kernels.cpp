// tensor_maps_sm90_kernels.cpp: the problems of the tensor_maps suite and their kernels for sm_90. Written by convgen emit-lib 0.1.0 (NVRTC 13.0); do not edit.
#include "tensor_maps_sm90_kernels.hpp"

namespace tensor_maps_sm90_internal {
namespace {

// conv3x3_tf32: n8_c64_k64_i1x56x56_f1x3x3_s1x1x1_p0x1x1_d1x1x1_g1_nhwc_tf32
//   64->64 3x3 s1 p1 at 56x56 -> 56x56, n8
// sm_90 (NVIDIA H200): igemm_wgmma_m192_n64_kb2_st3_sk1_co1_ws1_tma1_fw0_cr0_ta2_wn0_mc1_hl0_sw0_sp0_oc0, from convgen's default choice (untuned); 58 registers, 0 bytes spilled, 0 bytes static shared memory; plan: kernel
alignas(64) const unsigned char cubin_0_sm_90[] = {
#include "cubins/00_conv3x3_tf32_sm_90.inc"
};
const PlanBuffer buffers_0_sm_90[] = {
    {"padded_activation", 0ULL, 0ULL, false},
    {"padded_filter", 0ULL, 0ULL, false},
    {"packed_values", 0ULL, 0ULL, false},
    {"packed_meta", 0ULL, 0ULL, false},
};
const TensorMap run_0_sm_90_args0_filter_map = {TensorMap::filter, -1, 0, 3, {64, 9, 64, 1, 1}, {256, 2304, 0, 0}, {32, 1, 64, 1, 1}, true, {1, 1, 1, 1, 1}, false, {0, 0, 0}, {0, 0, 0}, 0, 0};
const TensorMap run_0_sm_90_args0_activation_map = {TensorMap::activation, -1, 0, 4, {64, 56, 56, 8, 1}, {256, 14336, 802816, 0}, {0, 0, 0, 0, 0}, true, {1, 1, 1, 1, 1}, true, {-1, -1, 0}, {-1, -1, 0}, 32, 192};
const ArgBinding run_0_sm_90_args0[] = {{Arg::activation, -1}, {Arg::filter, -1}, {Arg::output, -1}, {Arg::workspace, -1}, {Arg::bias, -1}, {Arg::residual, -1}, {Arg::map, -1, &run_0_sm_90_args0_filter_map}, {Arg::buffer, 0}, {Arg::buffer, 1}, {Arg::map, -1, &run_0_sm_90_args0_activation_map}, {Arg::buffer, 2}, {Arg::buffer, 3}};
const Step run_0_sm_90[] = {
    {Step::kernel, "igemm_wgmma_m192_n64_kb2_st3_sk1_co1_ws1_tma1_fw0_cr0_ta2_wn0_mc1_hl0_sw0_sp0_oc0", {131, 1, 1}, {512, 1, 1}, 197680, run_0_sm_90_args0, 12, -1, true},
};
const KernelImage kernels_0[] = {
    {90, cubin_0_sm_90, sizeof cubin_0_sm_90, "igemm_wgmma_m192_n64_kb2_st3_sk1_co1_ws1_tma1_fw0_cr0_ta2_wn0_mc1_hl0_sw0_sp0_oc0", buffers_0_sm_90, 4, 0ULL, 0ULL, nullptr, 0, run_0_sm_90, 1, 0, {16, 16, 16}},
};

// expand_tf32: n8_c256_k1024_i1x14x14_f1x1x1_s1x1x1_p0x0x0_d1x1x1_g1_nhwc_tf32
//   256->1024 1x1 s1 p0 at 14x14 -> 14x14, n8
// sm_90 (NVIDIA H200): igemm_wgmma_m112_n128_kb1_st6_sk1_co0_ws1_tma1_fw0_cr0_ta1_wn0_mc1_hl0_sw1_sp0_oc0, from convgen's default choice (untuned); 82 registers, 0 bytes spilled, 0 bytes static shared memory; plan: kernel
alignas(64) const unsigned char cubin_1_sm_90[] = {
#include "cubins/01_expand_tf32_sm_90.inc"
};
const PlanBuffer buffers_1_sm_90[] = {
    {"padded_activation", 0ULL, 0ULL, false},
    {"padded_filter", 0ULL, 0ULL, false},
    {"packed_values", 0ULL, 0ULL, false},
    {"packed_meta", 0ULL, 0ULL, false},
};
const TensorMap run_1_sm_90_args0_filter_map = {TensorMap::filter, -1, 0, 2, {256, 1024, 1, 1, 1}, {1024, 0, 0, 0}, {32, 128, 1, 1, 1}, true, {1, 1, 1, 1, 1}, false, {0, 0, 0}, {0, 0, 0}, 0, 0};
const TensorMap run_1_sm_90_args0_activation_map = {TensorMap::activation, -1, 0, 2, {256, 1568, 1, 1, 1}, {1024, 0, 0, 0}, {32, 112, 1, 1, 1}, true, {1, 1, 1, 1, 1}, false, {0, 0, 0}, {0, 0, 0}, 0, 0};
const ArgBinding run_1_sm_90_args0[] = {{Arg::activation, -1}, {Arg::filter, -1}, {Arg::output, -1}, {Arg::workspace, -1}, {Arg::bias, -1}, {Arg::residual, -1}, {Arg::map, -1, &run_1_sm_90_args0_filter_map}, {Arg::buffer, 0}, {Arg::buffer, 1}, {Arg::map, -1, &run_1_sm_90_args0_activation_map}, {Arg::buffer, 2}, {Arg::buffer, 3}};
const Step run_1_sm_90[] = {
    {Step::kernel, "igemm_wgmma_m112_n128_kb1_st6_sk1_co0_ws1_tma1_fw0_cr0_ta1_wn0_mc1_hl0_sw1_sp0_oc0", {14, 8, 1}, {384, 1, 1}, 185440, run_1_sm_90_args0, 12, -1, true},
};
const KernelImage kernels_1[] = {
    {90, cubin_1_sm_90, sizeof cubin_1_sm_90, "igemm_wgmma_m112_n128_kb1_st6_sk1_co0_ws1_tma1_fw0_cr0_ta1_wn0_mc1_hl0_sw1_sp0_oc0", buffers_1_sm_90, 4, 0ULL, 0ULL, nullptr, 0, run_1_sm_90, 1, 0, {16, 16, 16}},
};

// reduce_tf32: n8_c1024_k256_i1x14x14_f1x1x1_s1x1x1_p0x0x0_d1x1x1_g1_nhwc_tf32
//   1024->256 1x1 s1 p0 at 14x14 -> 14x14, n8
// sm_90 (NVIDIA H200): igemm_wgmma_m64_n128_kb2_st4_sk2_co0_ws1_tma1_fw0_cr1_ta0_wn0_mc1_hl0_sw0_sp0_oc0, from convgen's default choice (untuned); 109 registers, 0 bytes spilled, 0 bytes static shared memory; plan: kernel
alignas(64) const unsigned char cubin_2_sm_90[] = {
#include "cubins/02_reduce_tf32_sm_90.inc"
};
const PlanBuffer buffers_2_sm_90[] = {
    {"padded_activation", 0ULL, 0ULL, false},
    {"padded_filter", 0ULL, 0ULL, false},
    {"packed_values", 0ULL, 0ULL, false},
    {"packed_meta", 0ULL, 0ULL, false},
};
const TensorMap run_2_sm_90_args0_filter_map = {TensorMap::filter, -1, 0, 2, {1024, 256, 1, 1, 1}, {4096, 0, 0, 0}, {32, 128, 1, 1, 1}, true, {1, 1, 1, 1, 1}, false, {0, 0, 0}, {0, 0, 0}, 0, 0};
const ArgBinding run_2_sm_90_args0[] = {{Arg::activation, -1}, {Arg::filter, -1}, {Arg::output, -1}, {Arg::workspace, -1}, {Arg::bias, -1}, {Arg::residual, -1}, {Arg::map, -1, &run_2_sm_90_args0_filter_map}, {Arg::buffer, 0}, {Arg::buffer, 1}, {Arg::map, -1, nullptr}, {Arg::buffer, 2}, {Arg::buffer, 3}};
const Step run_2_sm_90[] = {
    {Step::kernel, "igemm_wgmma_m64_n128_kb2_st4_sk2_co0_ws1_tma1_fw0_cr1_ta0_wn0_mc1_hl0_sw0_sp0_oc0", {25, 2, 2}, {256, 1, 1}, 197696, run_2_sm_90_args0, 12, -1, true},
};
const KernelImage kernels_2[] = {
    {90, cubin_2_sm_90, sizeof cubin_2_sm_90, "igemm_wgmma_m64_n128_kb2_st4_sk2_co0_ws1_tma1_fw0_cr1_ta0_wn0_mc1_hl0_sw0_sp0_oc0", buffers_2_sm_90, 4, 0ULL, 0ULL, nullptr, 0, run_2_sm_90, 1, 0, {16, 16, 16}},
};

// reduce_fp16: n8_c1024_k256_i1x14x14_f1x1x1_s1x1x1_p0x0x0_d1x1x1_g1_nhwc_fp16
//   1024->256 1x1 s1 p0 at 14x14 -> 14x14, n8
// sm_90 (NVIDIA H200): igemm_wgmma_m64_n64_kb2_st6_sk1_co0_ws1_tma1_fw0_cr0_ta1_wn0_mc1_hl0_sw0_sp0_oc0, from convgen's default choice (untuned); 58 registers, 0 bytes spilled, 0 bytes static shared memory; plan: kernel
alignas(64) const unsigned char cubin_3_sm_90[] = {
#include "cubins/03_reduce_fp16_sm_90.inc"
};
const PlanBuffer buffers_3_sm_90[] = {
    {"padded_activation", 0ULL, 0ULL, false},
    {"padded_filter", 0ULL, 0ULL, false},
    {"packed_values", 0ULL, 0ULL, false},
    {"packed_meta", 0ULL, 0ULL, false},
};
const TensorMap run_3_sm_90_args0_filter_map = {TensorMap::filter, -1, 1, 2, {1024, 256, 1, 1, 1}, {2048, 0, 0, 0}, {64, 64, 1, 1, 1}, true, {1, 1, 1, 1, 1}, false, {0, 0, 0}, {0, 0, 0}, 0, 0};
const TensorMap run_3_sm_90_args0_activation_map = {TensorMap::activation, -1, 1, 2, {1024, 1568, 1, 1, 1}, {2048, 0, 0, 0}, {64, 64, 1, 1, 1}, true, {1, 1, 1, 1, 1}, false, {0, 0, 0}, {0, 0, 0}, 0, 0};
const ArgBinding run_3_sm_90_args0[] = {{Arg::activation, -1}, {Arg::filter, -1}, {Arg::output, -1}, {Arg::workspace, -1}, {Arg::bias, -1}, {Arg::residual, -1}, {Arg::map, -1, &run_3_sm_90_args0_filter_map}, {Arg::buffer, 0}, {Arg::buffer, 1}, {Arg::map, -1, &run_3_sm_90_args0_activation_map}, {Arg::buffer, 2}, {Arg::buffer, 3}};
const Step run_3_sm_90[] = {
    {Step::kernel, "igemm_wgmma_m64_n64_kb2_st6_sk1_co0_ws1_tma1_fw0_cr0_ta1_wn0_mc1_hl0_sw0_sp0_oc0", {25, 4, 1}, {256, 1, 1}, 197728, run_3_sm_90_args0, 12, -1, true},
};
const KernelImage kernels_3[] = {
    {90, cubin_3_sm_90, sizeof cubin_3_sm_90, "igemm_wgmma_m64_n64_kb2_st6_sk1_co0_ws1_tma1_fw0_cr0_ta1_wn0_mc1_hl0_sw0_sp0_oc0", buffers_3_sm_90, 4, 0ULL, 0ULL, nullptr, 0, run_3_sm_90, 1, 0, {16, 16, 16}},
};

}  // namespace

const ProblemEntry problems[] = {
    {{8, 64, 64, 1, 56, 56, 1, 3, 3, 1, 1, 1, 0, 1, 1, 1, 1, 1, 1, TENSOR_MAPS_SM90_LAYOUT_NHWC, TENSOR_MAPS_SM90_PRECISION_TF32, {0}, 0},
     "conv3x3_tf32", 6422528ULL, kernels_0, 1, "", nullptr, nullptr, 36864ULL},
    {{8, 256, 1024, 1, 14, 14, 1, 1, 1, 1, 1, 1, 0, 0, 0, 1, 1, 1, 1, TENSOR_MAPS_SM90_LAYOUT_NHWC, TENSOR_MAPS_SM90_PRECISION_TF32, {0}, 0},
     "expand_tf32", 6422528ULL, kernels_1, 1, "", nullptr, nullptr, 262144ULL},
    {{8, 1024, 256, 1, 14, 14, 1, 1, 1, 1, 1, 1, 0, 0, 0, 1, 1, 1, 1, TENSOR_MAPS_SM90_LAYOUT_NHWC, TENSOR_MAPS_SM90_PRECISION_TF32, {0}, 0},
     "reduce_tf32", 1605632ULL, kernels_2, 1, "", nullptr, nullptr, 262144ULL},
    {{8, 1024, 256, 1, 14, 14, 1, 1, 1, 1, 1, 1, 0, 0, 0, 1, 1, 1, 1, TENSOR_MAPS_SM90_LAYOUT_NHWC, TENSOR_MAPS_SM90_PRECISION_FP16, {0}, 0},
     "reduce_fp16", 802816ULL, kernels_3, 1, "", nullptr, nullptr, 262144ULL},
};
const std::size_t problem_count = sizeof problems / sizeof problems[0];
const PassImage* const plan_passes = nullptr;
const std::size_t plan_pass_count = 0;
const char* const architectures = "sm_90";

}  // namespace tensor_maps_sm90_internal
