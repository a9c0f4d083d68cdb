// conv_gather: the implicit-GEMM gather the tensor-core templates share (igemm_tc.cu, sparse24_tc.cu): a reduction
// index's filter tap, each output pixel's origin in the input, a tap's activation offset (and whether it lies inside
// the input), and an output element's offset.
//
// A template includes this inside its own namespace, after its shape constants: it uses the prelude's cfg (through
// the namespace's `using namespace cfg`) and the template's idx_t, CG, RS, TRS, DHW, OPQ, PQ and NPIX. It has no
// include guard: the host emulation tests include a template several times, each time in another namespace with
// another cfg, and each inclusion must see its own.
//
// The reduction order follows the filter row's memory order: channels-last kr = ((t * R + r) * S + s) * CG + c,
// channels-first kr = ((c * T + t) * R + r) * S + s.

// What a thread knows of an output pixel it loads activations for; fixed for the whole reduction.
struct PixelOrigin {
  idx_t base;      // offset of (n, channel g * CG, d = h = w = 0) in the activation
  int d0, h0, w0;  // input coordinate of filter tap (0, 0, 0): o * STRIDE_D - PAD_D, ...
  bool ok;         // the pixel exists (npix < NPIX) and this thread loads it
};

// Output pixel npix of group `group`; `active` says whether this thread loads it at all.
__device__ __forceinline__ PixelOrigin pixel_origin(int npix, int group, bool active) {
  const int n = npix / OPQ;
  const int opq = npix % OPQ;
  PixelOrigin px;
  px.ok = active && npix < NPIX;
  // Pixels past the end are never read; their base stays 0 so no arithmetic leaves the index range.
  const idx_t base = CHANNELS_LAST ? (idx_t)n * DHW * C + group * CG : ((idx_t)n * C + group * CG) * DHW;
  px.base = px.ok ? base : 0;
  px.d0 = (opq / PQ) * STRIDE_D - PAD_D;
  px.h0 = ((opq / Q) % P) * STRIDE_H - PAD_H;
  px.w0 = (opq % Q) * STRIDE_W - PAD_W;
  return px;
}

// kr -> (c, t, r, s) in the layout's reduction order.
struct Tap {
  int c, t, r, s;
};
__device__ __forceinline__ Tap tap_of(int kr) {
  const int c = CHANNELS_LAST ? kr % CG : kr / TRS;
  const int trs = CHANNELS_LAST ? kr / CG : kr % TRS;
  return {c, trs / RS, (trs / S) % R, trs % S};
}

// The activation offset of `tap` for pixel `px`, and whether it lies inside the input (else it reads as zero).
__device__ __forceinline__ bool activation_offset(const PixelOrigin& px, const Tap& tap, idx_t& offset) {
  const int d = px.d0 + tap.t * DIL_D;
  const int h = px.h0 + tap.r * DIL_H;
  const int w = px.w0 + tap.s * DIL_W;
  const bool inside = (unsigned)d < (unsigned)D && (unsigned)h < (unsigned)H && (unsigned)w < (unsigned)W;
  // channels-last:  (((n * D + d) * H + h) * W + w) * C + g * CG + c = base + ((d * H + h) * W + w) * C + c
  // channels-first: (((n * C + g * CG + c) * D + d) * H + h) * W + w = base + c * DHW + (d * H + h) * W + w
  const idx_t spatial = ((idx_t)d * H + h) * W + w;
  offset = CHANNELS_LAST ? px.base + spatial * C + tap.c : px.base + (idx_t)tap.c * DHW + spatial;
  return px.ok && inside;
}

// Offset of output (npix, k) in the layout: channels-last npix * K + k, channels-first (n * K + k) * OPQ + opq.
__device__ __forceinline__ idx_t output_offset(int npix, int k) {
  if constexpr (CHANNELS_LAST) {
    return (idx_t)npix * K + k;
  } else {
    const int n = npix / OPQ;
    return ((idx_t)n * K + k) * OPQ + (npix - n * OPQ);
  }
}
