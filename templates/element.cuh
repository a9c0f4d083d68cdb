// element: the 16-bit data types of the SIMT templates (igemm.cu), on every architecture NVRTC compiles for: fp16 and
// bf16 tensors are held as their 16-bit patterns, widened to fp32 as they are loaded and rounded back (to nearest
// even) at the store. fp16 through PTX's cvt (every architecture); bf16 by shifts and integer rounding, since
// cvt.rn.bf16.f32 needs sm_80 (the tensor-core templates use templates/tensor_core.cuh's instead). Included by
// NVRTC as a header; the host emulation tests put host definitions in its place (they define CONVGEN_ELEMENT_CUH).
#ifndef CONVGEN_ELEMENT_CUH
#define CONVGEN_ELEMENT_CUH

namespace convgen::element {

__device__ __forceinline__ float fp16_to_float(unsigned short bits) {
  float value;
  asm("cvt.f32.f16 %0, %1;\n" : "=f"(value) : "h"(bits));
  return value;
}

__device__ __forceinline__ unsigned short float_to_fp16(float value) {
  unsigned short bits;
  asm("cvt.rn.f16.f32 %0, %1;\n" : "=h"(bits) : "f"(value));
  return bits;
}

__device__ __forceinline__ float bf16_to_float(unsigned short bits) {
  float value;
  asm("mov.b32 %0, %1;\n" : "=f"(value) : "r"((unsigned)bits << 16));
  return value;
}

// Round to nearest even on the 16 bits dropped; a NaN stays a (quiet) NaN instead of rounding into infinity.
__device__ __forceinline__ unsigned short float_to_bf16(float value) {
  unsigned bits;
  asm("mov.b32 %0, %1;\n" : "=r"(bits) : "f"(value));
  if ((bits & 0x7fffffffu) > 0x7f800000u) return (unsigned short)((bits >> 16) | 0x40u);
  bits += 0x7fffu + ((bits >> 16) & 1u);
  return (unsigned short)(bits >> 16);
}

}  // namespace convgen::element

#endif  // CONVGEN_ELEMENT_CUH
