// host_element: templates/element.cuh on the host, for the emulation tests that run 16-bit data: the same
// conversions (reference/host_tensor's, round to nearest even). Include it before the template (element.cuh is then
// skipped: CONVGEN_ELEMENT_CUH is defined).
#pragma once

#include "reference/host_tensor.hpp"

#define CONVGEN_ELEMENT_CUH
namespace convgen::element {
inline float fp16_to_float(unsigned short bits) { return convgen::half_to_float(bits); }
inline unsigned short float_to_fp16(float value) { return convgen::float_to_half(value); }
inline float bf16_to_float(unsigned short bits) { return convgen::bfloat16_to_float(bits); }
inline unsigned short float_to_bf16(float value) { return convgen::float_to_bfloat16(value); }
}  // namespace convgen::element
