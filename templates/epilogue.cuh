// epilogue: the fused epilogue every template applies at its store, output = act(alpha * conv + beta * residual +
// bias[k]); included by NVRTC as a header (through common.cuh, or alone by templates that need nothing else).
#pragma once

// Plain C++ apart from the function qualifiers, so that the host emulation tests compile it too.
namespace convgen {

// The activations, numbered as convgen::Activation (include/convgen/problem.hpp): none, relu, relu6, clip.
constexpr int kActNone = 0, kActRelu = 1, kActRelu6 = 2, kActClip = 3;

// The prelude renders the problem's epilogue as `struct cfg::Epilogue` with these members (the identity here, the
// default of a template compiled alone):
//   BIAS, RESIDUAL (bool): whether bias[k] and beta * residual are added; ACT: one of the kAct constants;
//   ALPHA, BETA, CLIP_LO, CLIP_HI (float).
struct IdentityEpilogue {
  static constexpr bool BIAS = false, RESIDUAL = false;
  static constexpr int ACT = kActNone;
  static constexpr float ALPHA = 1.0f, BETA = 0.0f, CLIP_LO = 0.0f, CLIP_HI = 0.0f;
};

// Whether the epilogue E is the identity: a kernel that adds partial sums into the output (split-K with atomics)
// can serve only that one.
template <class E>
constexpr bool is_identity_epilogue() {
  return !E::BIAS && !E::RESIDUAL && E::ACT == kActNone && E::ALPHA == 1.0f;
}

// One output through the epilogue E, in fp32: act(ALPHA * conv + BETA * residual + bias). `bias` and `residual` are
// the values the caller loaded, where E reads them (0 otherwise); every term E does not use folds away at compile
// time, so the identity costs nothing.
template <class E>
__device__ __forceinline__ float apply_epilogue(float conv, float bias, float residual) {
  float v = conv;
  if constexpr (E::ALPHA != 1.0f) v *= E::ALPHA;
  if constexpr (E::RESIDUAL) v = fmaf(E::BETA, residual, v);
  if constexpr (E::BIAS) v += bias;
  if constexpr (E::ACT == kActRelu) {
    v = fmaxf(v, 0.0f);
  } else if constexpr (E::ACT == kActRelu6) {
    v = fminf(fmaxf(v, 0.0f), 6.0f);
  } else if constexpr (E::ACT == kActClip) {
    v = fminf(fmaxf(v, E::CLIP_LO), E::CLIP_HI);
  }
  return v;
}

// The same for an fp32 output at `offset` of channel k: loads the bias and the residual E reads (the pointers E does
// not read may be null).
template <class E, class Index>
__device__ __forceinline__ float apply_epilogue_fp32(float conv, const float* g_bias, const float* g_residual, int k,
                                                     Index offset) {
  return apply_epilogue<E>(conv, E::BIAS ? g_bias[k] : 0.0f, E::RESIDUAL ? g_residual[offset] : 0.0f);
}

}  // namespace convgen
