// two_four_pack: the compression of a 2:4 filter for the tensor cores' sparse instructions, shared by sparse24_tc
// (mma.sp) and igemm_wgmma's `sp` (wgmma.mma_async.sp), whose `pack` entries (the plan's setup, once per filter) run
// it one thread per 16 reduction elements of a filter row. The filter is GROUPS x KG rows of KR reduction elements
// (kr in the filter row's memory order); the packed arrays cover KG_PAD rows and KR_PAD elements (KG and KR rounded up
// to the kernel's tiles, zeros past them, so that the main loop reads them without a predicate). Of each chunk of 4
// consecutive kr (from kr = 0) the 2 values of largest magnitude are kept (a 2:4 filter's nonzeros; the families serve
// only 2:4 filters), in kr order, and their positions are the instructions' metadata:
//   values [GROUPS][KG_PAD][KR_PAD / 2]   the kept values, row by row
//   meta   [GROUPS][KG_PAD / 16][KR_PAD / 32][16] words, one 16-row x 32-kr fragment after another; word 2 g8 + h is
//          what thread 4 g8 + h of a warp passes (templates/tensor_core.cuh, mma_sp_fp16; the same layout per warp for
//          wgmma.sp): chunks of kr 16h .. 16h + 15 of rows g8 (bits 0-15) and g8 + 8 (bits 16-31), 4 bits a chunk
//          (the two kept positions, lower first).
// A value's magnitude orders as its bits without the sign, in fp16 and bf16 alike; ties keep the lower position.
#ifndef CONVGEN_TWO_FOUR_PACK_CUH
#define CONVGEN_TWO_FOUR_PACK_CUH

namespace convgen::two_four {

// Items of the pack: one per 16 reduction elements of each padded row.
template <int GROUPS, int KG_PAD, int KR_PAD>
constexpr long long pack_items() {
  return (long long)GROUPS * KG_PAD * (KR_PAD / 16);
}

// Pack item `index`: row index / (KR_PAD / 16) of all groups' padded rows, its segment index % (KR_PAD / 16) of 16
// reduction elements (zero past KR and KG) -> 8 kept values and one metadata half-word.
// (element_t: the 16-bit type's bits; a tf32 kernel's template instantiates it with its float but never launches it.)
template <int KG, int KR, int KG_PAD, int KR_PAD, typename idx_t, typename element_t>
__device__ __forceinline__ void pack_segment(const element_t* __restrict__ g_filter, element_t* __restrict__ g_values,
                                             unsigned short* __restrict__ g_meta, long long index) {
  constexpr int SEGMENTS = KR_PAD / 16;
  constexpr int KR_KEPT = KR_PAD / 2;
  constexpr int KR_STEPS = KR_PAD / 32;
  const int segment = (int)(index % SEGMENTS);
  const int row_all = (int)(index / SEGMENTS);  // group * KG_PAD + row
  const int group = row_all / KG_PAD;
  const int row = row_all % KG_PAD;
  unsigned kept[4];  // 8 values, two to a word
  unsigned meta = 0;
#pragma unroll
  for (int chunk = 0; chunk < 4; ++chunk) {
    unsigned v[4];
#pragma unroll
    for (int i = 0; i < 4; ++i) {
      const int kr = segment * 16 + chunk * 4 + i;
      v[i] = row < KG && kr < KR ? (unsigned)g_filter[(idx_t)(group * KG + row) * KR + kr] : 0u;
    }
    // The largest magnitude, then the largest of the other three (each with its value: no array indexed at run time).
    int first = 0;
    unsigned first_value = v[0];
#pragma unroll
    for (int i = 1; i < 4; ++i)
      if ((v[i] & 0x7fffu) > (first_value & 0x7fffu)) {
        first = i;
        first_value = v[i];
      }
    int second = first == 0 ? 1 : 0;
    unsigned second_value = first == 0 ? v[1] : v[0];
#pragma unroll
    for (int i = 0; i < 4; ++i)
      if (i != first && (v[i] & 0x7fffu) > (second_value & 0x7fffu)) {
        second = i;
        second_value = v[i];
      }
    const int lo = first < second ? first : second;
    const int hi = first < second ? second : first;
    kept[chunk] = first < second ? first_value | (second_value << 16) : second_value | (first_value << 16);
    meta |= (unsigned)(lo | (hi << 2)) << (4 * chunk);
  }
  uint4 values;
  values.x = kept[0];
  values.y = kept[1];
  values.z = kept[2];
  values.w = kept[3];
  *reinterpret_cast<uint4*>(g_values + (idx_t)row_all * KR_KEPT + segment * 8) = values;
  // Fragment (row_all / 16, segment / 2), word 2 (row % 8) + segment % 2, half (row % 16) / 8.
  const long long fragment = (long long)(row_all / 16) * KR_STEPS + segment / 2;
  g_meta[(fragment * 16 + 2 * (row % 8) + segment % 2) * 2 + (row % 16) / 8] = (unsigned short)meta;
}

}  // namespace convgen::two_four

#endif  // CONVGEN_TWO_FOUR_PACK_CUH
