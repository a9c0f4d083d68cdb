// tc_output: the output side of the tensor-core implicit-GEMM templates whose GEMM rows are output pixels and columns
// output channels (igemm_tc.cu, igemm_wgmma.cu): fp32 accumulators through the problem's epilogue, rounded to the
// data type and stored as neighbouring channel pairs where the layout allows, or stored as split-K's fp32 partial
// sums.
//
// A template includes this inside its own namespace, after conv_gather.cuh: it uses the prelude's cfg and the
// template's IS_TF32, IS_FP16, IS_BF16, element_t, idx_t, NPIX and output_offset. No include guard, as conv_gather.cuh.

__device__ __forceinline__ element_t to_element(float value) {
  if constexpr (IS_TF32)
    return value;
  else if constexpr (IS_FP16)
    return convgen::tc::float_to_fp16_bits(value);
  else
    return convgen::tc::float_to_bf16_bits(value);
}

__device__ __forceinline__ float to_float(element_t value) {
  if constexpr (IS_TF32)
    return value;
  else if constexpr (IS_FP16)
    return convgen::tc::fp16_bits_to_float(value);
  else
    return convgen::tc::bf16_bits_to_float(value);
}

// Two neighbouring channels (2t, 2t + 1 of an mma tile) are stored together when they are neighbours in memory and
// the pair stays 4-byte (16-bit) or 8-byte (fp32) aligned: channels-last (and, for the partial sums, always: they are
// held as [split][npix][K]) with even K and KG.
constexpr bool PAIRED_OUTPUT = CHANNELS_LAST && K % 2 == 0 && KG % 2 == 0;
constexpr bool PAIRED_PARTIALS = K % 2 == 0 && KG % 2 == 0;

// Output (npix, k) through the problem's epilogue, in fp32 before the rounding to the data type (as cuDNN's fused
// call computes y): loads the bias and residual it reads, in the data type.
__device__ __forceinline__ float epilogue_at(float value, int npix, int k, const element_t* __restrict__ g_bias,
                                             const element_t* __restrict__ g_residual) {
  using E = cfg::Epilogue;
  return convgen::apply_epilogue<E>(value, E::BIAS ? to_float(g_bias[k]) : 0.0f,
                                    E::RESIDUAL ? to_float(g_residual[output_offset(npix, k)]) : 0.0f);
}

// Stores the value pair (v0 at k, v1 at k + 1) of pixel npix through the epilogue; `second` says whether k + 1 is a
// channel of the group.
__device__ __forceinline__ void store_output(element_t* __restrict__ g_output, int npix, int k, float v0, float v1,
                                             bool second, const element_t* __restrict__ g_bias,
                                             const element_t* __restrict__ g_residual) {
  v0 = epilogue_at(v0, npix, k, g_bias, g_residual);
  if (second) v1 = epilogue_at(v1, npix, k + 1, g_bias, g_residual);
  if constexpr (PAIRED_OUTPUT) {
    const idx_t offset = (idx_t)npix * K + k;
    if constexpr (IS_TF32) {
      float2 pair;
      pair.x = v0;
      pair.y = v1;
      *reinterpret_cast<float2*>(g_output + offset) = pair;
    } else {
      *reinterpret_cast<unsigned*>(g_output + offset) =
          (unsigned)to_element(v0) | ((unsigned)to_element(v1) << 16);
    }
  } else {
    g_output[output_offset(npix, k)] = to_element(v0);
    if (second) g_output[output_offset(npix, k + 1)] = to_element(v1);
  }
}

__device__ __forceinline__ void store_partials(float* __restrict__ g_workspace, int split, int npix, int k, float v0,
                                               float v1, bool second) {
  const idx_t offset = ((idx_t)split * NPIX + npix) * K + k;
  if constexpr (PAIRED_PARTIALS) {
    float2 pair;
    pair.x = v0;
    pair.y = v1;
    *reinterpret_cast<float2*>(g_workspace + offset) = pair;
  } else {
    g_workspace[offset] = v0;
    if (second) g_workspace[offset + 1] = v1;
  }
}
