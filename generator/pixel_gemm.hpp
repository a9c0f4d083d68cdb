// pixel_gemm: a convolution as per-group GEMMs whose rows are output pixels and columns output channels, the mapping
// of the tensor-core implicit-GEMM templates igemm_tc.cu and igemm_wgmma.cu (templates/igemm_tc.cu spells it out).
#pragma once

#include <cstdint>

#include "convgen/problem.hpp"

namespace convgen {

struct PixelGemm {
  std::int64_t m = 0;  // output pixels N*O*P*Q
  int n = 0;           // output channels per group (KG)
  int kr = 0;          // reduction length C/groups * T*R*S
  int groups = 1;
  int taps = 1;  // filter taps T*R*S (kr = taps * channels per group)
};

inline PixelGemm pixel_gemm(const Problem& p) {
  const Dims3 out = output_dims(p);
  return {.m = std::int64_t{p.n} * out.d * out.h * out.w,
          .n = k_per_group(p),
          .kr = c_per_group(p) * p.filter.d * p.filter.h * p.filter.w,
          .groups = p.groups,
          .taps = p.filter.d * p.filter.h * p.filter.w};
}

}  // namespace convgen
