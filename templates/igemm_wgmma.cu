// igemm_wgmma: Hopper tensor-core implicit-GEMM forward convolution: wgmma.mma_async (m64nNk16 with fp16 / bf16 in,
// m64nNk8 with tf32 in; fp32 accumulation) reading both operands from 128-byte-swizzled shared memory, filled by a
// cp.async multistage pipeline; split-K through a workspace or in a thread-block cluster. Compiled for sm_90a only
// (templates/wgmma.cuh). tf32 problems hold fp32 tensors, given to the tensor cores as they are (no rounding step: the
// operands go from global to shared memory to the tensor cores untouched), and write an fp32 output.
//
// GEMM mapping, per group g (grid.z = GROUPS * SPLIT_K), as igemm_tc's (templates/igemm_tc.cu), channels-last only:
//   M  = NPIX = N * O * P * Q output pixels, N = KG output channels, KR = T * R * S * CG reduction elements
//   (kr = ((t * R + r) * S + s) * CG + c), A[npix][kr] = activation, B[col][kr] = filter row of output channel col.
// A block of BLOCK_M / 64 warpgroups computes BLOCK_M pixels x BLOCK_N channels; warpgroup w owns pixel rows
// 64w .. 64w + 63 and every channel of the block, one wgmma per MMA_K reduction elements (32 bytes of a row: 16
// fp16 / bf16, 8 tf32). With `wn` two warpgroups share each 64 rows, each owning half the channels (WG_COLS).
//
// Two pipelines, the tunable `ws` choosing; a step is K_ATOMS swizzled rows of 128 bytes (ATOM_K = 64 fp16 / bf16 or
// 32 tf32 reduction elements each), and its 4 * K_ATOMS wgmma are issued as one group that runs while the next step
// begins (wait_group 1: only the previous step's group must have finished).
// - Shared (ws0): all threads load, every warpgroup multiplies. Each step waits for its own slice, publishes it with a
//   proxy fence and a block barrier, issues the loads of the slice PREFETCH = STAGES - 2 steps ahead, then multiplies.
//   The barrier of step s also says every warpgroup is done with step s - 2's buffer, which step s's loads overwrite.
// - Warp-specialized (ws1): one more warpgroup, the producer, only loads; the others only multiply. Each stage has two
//   mbarriers: `full` completes when the producer's 128 threads' copies into it have landed (cp.async's own arrival),
//   `empty` when every consumer warp's wgmma that read it have finished. The producer fills stage after stage, waiting
//   only for a stage to be empty again; a consumer waits only for the stage it multiplies. No block barrier in the
//   loop: the loads of STAGES steps are in flight while the tensor cores work, and no warp waits on another's issue.
//   With `tma` the filter tile of a stage comes by TMA instead (one thread issues a bulk tensor copy per K atom from
//   the tensor map g_filter_map, which the launcher encodes over the filter and passes by value: the filter as a K x KR
//   matrix, or, chunk-major, K x TRS x CG, boxes of BLOCK_N rows of 128 bytes in the same swizzle, zeros outside it) and
//   `full` also
//   waits for its bytes: the producer's threads then issue only the pixel rows' cp.async. With `ta` (a 1 x 1 problem of
//   stride 1, no padding, no groups: the activation is the NPIX x C matrix A itself) the pixel rows come by TMA too,
//   through g_activation_map, the launcher's map of the call's activation (also a parameter).
//   With `mc` (filter multicast) MULTICAST blocks of consecutive pixel tiles and the same channel tile form a cluster
//   along the grid's x: each block's producer copies 1/MULTICAST of the filter tile's rows by TMA into the same place
//   in every block of the cluster (one read from L2 for all of them), so each `full` waits for the whole tile's bytes
//   from the cluster's copies, and each `empty` for the consumer warps of every block of the cluster (a block refills
//   a stage of all of them). The blocks meet at a cluster barrier after the barriers' initialization and before they
//   end (no block may arrive on, or copy into, a block that has ended).
//   With `hl` (halo; 2-D, stride and dilation 1, ungrouped, whole 128-byte rows of channels) a tile is a patch of the
//   output, 8 rows by 8 columns a multiplying warpgroup, and a step is a 64-channel chunk (tf32 32) of the reduction:
//   the producer's threads load that chunk of the input patch the tile's taps read (its rows and columns plus the
//   filter's halo) once, each input pixel a swizzled 128-byte row, and its TMA copy brings the chunk's filter rows of
//   every tap; each tap's wgmma then reads its window of the patch where it lies: a descriptor whose start is the tap's
//   shifted first pixel and whose 8-row stride is a patch row (the 128-byte swizzle follows the shared address, so a
//   window that starts mid-atom reads the rows as they were stored). The activation is read once a tile instead of
//   once a tap. `hl2` (the output channels one tile) loads the block's whole filter once, before its first tile, into a
//   region after the stages; its stages hold patches only.
// With `sw` (swapped operands; one tile a block) the stages are the same but the wgmma's roles trade: the
// filter tile is A, 64 output channels a warpgroup, and the pixel tile B, the wgmma's N the block's pixels (with `wn`
// half of them a warpgroup): a layer of 64 output channels multiplies in m64n256k16 (or n128) instead of m64n64k16, and
// reads fewer operand bytes from shared memory per product. Its accumulators hold channels by pixels; the staged
// output writes them transposed, so the store to global memory is the same; split-K writes its partial sums
// transposed (into the workspace, or the partial tile a cluster adds), so the reduction after it is the same too.
//
// Channels not a whole number of 16-byte loads (an image's 3, ungrouped only): the prelude's C is padded up to one
// (4 tf32, 8 fp16 / bf16) and C_SOURCE says the tensors' own. The setup's pad_filter entry writes the filter with the
// padded channels zero into the persistent buffer g_padded_filter, and each call's pad_activation entry the activation
// into the workspace buffer g_padded_activation; the main entry reads those two instead of g_activation and g_filter.
// With `fw` the filter's width is folded into the channels too: the prelude's problem is the folded one (S = 1, W = Q,
// stride, padding and dilation 1, 0, 1 along the width; C = the FOLD_S taps x C_SOURCE channels padded), and
// pad_activation puts each output column's FOLD_S input columns side by side (W_SOURCE, FOLD_STRIDE, FOLD_PAD and
// FOLD_DIL the source's width, stride, padding and dilation; zeros outside), so a filter row's taps, contiguous in the
// filter, take whole 16-byte loads of real channels instead of one padded load each. `fw2` folds as it loads, with no
// copy pass: an output column's window of input columns is one contiguous run of the channels-last activation row, so
// each 16-byte unit of a folded pixel is four 4-byte (or two 8-byte: FOLD_COPY_BYTES) cp.async from the activation
// itself, each zero-filled where its columns lie outside the row. The window starts FOLD_SHIFT columns before the
// first tap (the folded filter's rows begin with that many zero taps) so that every run starts on a whole copy; the
// row's ends then fall between copies.
//
// Early launch (grid_dependency.cuh): the main entry lets the stream's next kernel start its blocks after its last
// tile's main loop (CONVGEN_NEXT_GRID_AT 1), the other families only as their blocks exit (2). Measured on the H200 in
// chains of ResNet-50's layers (bench/results/h200/next-grid-trigger-2026-11-30/): here 1 and 0 (at the start) were
// alike and 2 was 1.07-1.15x slower; for the SIMT families 0 was 1.13-1.19x slower than 2.
#ifndef CONVGEN_NEXT_GRID_AT
#define CONVGEN_NEXT_GRID_AT 1
#endif
#include "interface.cuh"
#include "epilogue.cuh"

#ifndef CONVGEN_PRELUDE
#define CONVGEN_ENTRY convgen_igemm_wgmma_default
namespace cfg {
constexpr int N = 1, C = 64, K = 64, GROUPS = 1;
constexpr int D = 1, H = 56, W = 56;
constexpr int T = 1, R = 3, S = 3;
constexpr int O = 1, P = 56, Q = 56;
constexpr int STRIDE_D = 1, STRIDE_H = 1, STRIDE_W = 1;
constexpr int PAD_D = 0, PAD_H = 1, PAD_W = 1;
constexpr int DIL_D = 1, DIL_H = 1, DIL_W = 1;
constexpr bool CHANNELS_LAST = true;
constexpr int PRECISION = 2;  // convgen::Precision: 1 tf32, 2 fp16, 3 bf16
constexpr int C_SOURCE = 64;  // the tensors' channels; C pads them to whole 16-byte loads where they are not
constexpr int W_SOURCE = 56;  // the activation's width (W, unless the width is folded)
constexpr int FOLD_S = 1;     // filter taps folded into the channels (1: none)
constexpr int FOLD_STRIDE = 1, FOLD_PAD = 0, FOLD_DIL = 1;  // the folded width's stride, padding and dilation
constexpr int FOLD_SHIFT = 0;       // fw2: zero taps before the first, so that each window starts on whole copies
constexpr int FOLD_COPY_BYTES = 4;  // fw2: the bytes of each copy of a window's run (4 or 8)
// The tunable parameters, in kernel-name order (igemm_wgmma_m128_n64_kb1_st4_sk1_co0_ws0_tma0_fw0_cr0_ta0_wn0_mc1_hl0_sw0_sp0_oc0).
CONVGEN_PARAM("m", "16,32,48,64,80,96,112,128,144,160,176,192,208,224,240,256", "output pixels per block: one warpgroup of 128 threads per 64 (with sw any multiple of 16: the wgmma's N)") constexpr int BLOCK_M = 128;
CONVGEN_PARAM("n", "16,32,48,64,80,96,112,128,144,160,176,192,208,224,240,256", "output channels per block (the wgmma's N)") constexpr int BLOCK_N = 64;
CONVGEN_PARAM("kb", "1,2", "128-byte swizzled K atoms per step: 128 or 256 bytes of each row a barrier") constexpr int K_ATOMS = 1;
CONVGEN_PARAM("st", "2..6", "shared-memory stages: loads run stages - 2 (ws0) or stages (ws1) steps ahead of the multiply (2: halo only)") constexpr int STAGES = 4;
CONVGEN_PARAM("sk", "1..32", "splits of the reduction, fp32 partial sums added by the reduce entry") constexpr int SPLIT_K = 1;
CONVGEN_PARAM("co", "bool", "chunk-major reduction: each chunk of a row's channels through all taps, activations kept in L1") constexpr bool CHUNK_MAJOR = false;
CONVGEN_PARAM("ws", "0..8", "warp-specialized: a producer warpgroup loads, signalling mbarriers, while the rest multiply; 2-8: that many output tiles a block, in turn") constexpr int WARP_SPECIALIZED = 0;
CONVGEN_PARAM("tma", "bool", "warp-specialized only: the filter tile by TMA from a tensor map, the pixels by cp.async") constexpr bool TMA_FILTER = false;
CONVGEN_PARAM("fw", "0..2", "ungrouped, fewer channels than one 16-byte load: the filter's width folded into the channels (1: by a copy pass, 2: as the pixel rows are loaded, by copies of 4 or 8 bytes)") constexpr int FOLD_WIDTH = 0;
CONVGEN_PARAM("cr", "bool", "split-K in a cluster: a tile's SPLIT_K blocks add their partial sums in each other's shared memory, no reduce pass") constexpr bool CLUSTER_REDUCE = false;
CONVGEN_PARAM("ta", "0..2", "with tma, the pixel rows by TMA too: 1 on an ungrouped 1 x 1 stride-1 unpadded problem (the activation an NPIX x C matrix), 2 in im2col mode on a 2-D problem (each tap's pixel rows gathered by the copy engine)") constexpr int TMA_ACTIVATION = 0;
CONVGEN_PARAM("wn", "bool", "one tile a block: two warpgroups multiply each 64 pixel rows, each half the block's channels") constexpr bool SPLIT_N = false;
CONVGEN_PARAM("mc", "1,2,4", "with tma, one tile a block: clusters of this many pixel tiles, each block copying its share of the filter tile into all of them (TMA multicast)") constexpr int MULTICAST = 1;
CONVGEN_PARAM("hl", "0..2", "warp-specialized, tma, 2-D stride 1: each channel chunk's input patch (the tile's 8 x 8 pixels a warpgroup and the filter's halo) loaded once, every tap multiplying its window; 2: the block's whole filter (one channel tile) loaded once, only patches streamed") constexpr int HALO = 0;
CONVGEN_PARAM("sw", "bool", "one tile a block, 16-byte channel runs: the operands swapped, each warpgroup's wgmma 64 output channels by the block's pixels (wn: half of them), the output transposed through shared memory (split-K: its partial sums transposed)") constexpr bool SWAP_AB = false;
CONVGEN_PARAM("sp", "bool", "fp16 / bf16, the problem's own 2:4 filter: compressed once by the pack entry, each stage holding its kept values and their metadata, wgmma.mma_async.sp (m64nNk32); with sw and kb2, none of tma, co and padded channels") constexpr bool SPARSE_FILTER = false;
CONVGEN_PARAM("oc", "bool", "several tiles a block, 16-bit output: each warp's staged rows copied out by 16-byte shared loads and global stores, the whole warp at once, instead of a bulk copy a row") constexpr bool WARP_COPY_OUTPUT = false;
using Epilogue = convgen::IdentityEpilogue;  // the prelude renders the problem's (templates/epilogue.cuh)
}  // namespace cfg
#endif

#include "common.cuh"
#include "tensor_core.cuh"
#include "wgmma.cuh"
#include "two_four_pack.cuh"

namespace igemm_wgmma {

using namespace cfg;
using convgen::ceil_div;
using convgen::cmin;

// ---- The data type --------------------------------------------------------------------------------------------
constexpr bool IS_TF32 = PRECISION == 1;
constexpr bool IS_FP16 = PRECISION == 2;
constexpr bool IS_BF16 = PRECISION == 3;
static_assert(IS_TF32 || IS_FP16 || IS_BF16, "igemm_wgmma serves tf32, fp16 and bf16 problems");
using element_t = convgen::select_t<IS_TF32, float, unsigned short>;  // fp16 / bf16 as their bits
constexpr int ELEMENT_BYTES = IS_TF32 ? 4 : 2;
constexpr int CHUNK = 16 / ELEMENT_BYTES;   // elements per 16 bytes: one cp.async, one unit of the swizzle
constexpr int ATOM_K = 128 / ELEMENT_BYTES;  // reduction elements of one swizzled row (128 bytes)
constexpr int MMA_K = 32 / ELEMENT_BYTES;    // reduction elements per wgmma (32 bytes of each row)
constexpr int ROW_UNITS = 8;                 // 16-byte units per row

// ---- The shape, in GEMM terms -----------------------------------------------------------------------------------
constexpr int CG = C / GROUPS;
constexpr int KG = K / GROUPS;
constexpr int RS = R * S;
constexpr int TRS = T * RS;
constexpr int KR = CG * TRS;
constexpr long long OPQ_LL = (long long)O * P * Q;
constexpr long long NPIX_LL = (long long)N * OPQ_LL;
constexpr long long ACTIVATION_ELEMENTS = (long long)N * C * D * H * W;
constexpr long long FILTER_ELEMENTS = (long long)K * KR;
constexpr long long OUTPUT_ELEMENTS = (long long)K * NPIX_LL;
constexpr long long WORKSPACE_ELEMENTS = OUTPUT_ELEMENTS * SPLIT_K;
constexpr long long max_of(long long a, long long b) { return a > b ? a : b; }
// The 2:4 filter's compressed extents (SPARSE_FILTER; templates/two_four_pack.cuh): KG rounded up to the channel tile,
// KR to the step of two K atoms (128 reduction elements).
constexpr int KG_PAD = (int)(ceil_div(KG, BLOCK_N) * BLOCK_N);
constexpr int KR_PAD = (int)(ceil_div(KR, 2 * ATOM_K) * 2 * ATOM_K);
constexpr int KR_KEPT = KR_PAD / 2;       // kept values a row
constexpr int KR_STEPS = KR_PAD / 32;     // wgmma.sp's k32 steps a row
constexpr long long PACKED_ELEMENTS = SPARSE_FILTER ? (long long)GROUPS * KG_PAD * KR_KEPT : 0;
constexpr long long SOURCE_ACTIVATION_ELEMENTS = (long long)N * C_SOURCE * D * H * W_SOURCE;  // fw2 reads it
constexpr long long MAX_ELEMENTS = max_of(
    max_of(max_of(max_of(ACTIVATION_ELEMENTS, FILTER_ELEMENTS), WORKSPACE_ELEMENTS), PACKED_ELEMENTS),
    SOURCE_ACTIVATION_ELEMENTS);
using idx_t = convgen::index_for<MAX_ELEMENTS>;
constexpr int NPIX = (int)NPIX_LL;
constexpr int OPQ = (int)OPQ_LL;
constexpr int PQ = P * Q;
constexpr idx_t HW = (idx_t)H * W;
constexpr idx_t DHW = (idx_t)D * HW;

static_assert(CHANNELS_LAST, "igemm_wgmma serves channels-last layouts (igemm_tc serves channels-first)");
static_assert(C % GROUPS == 0, "C must be a multiple of GROUPS");
static_assert(K % GROUPS == 0, "K must be a multiple of GROUPS");
static_assert(CG % CHUNK == 0,
              "channels per group must be a multiple of 16 bytes of elements (16-byte loads of one filter tap)");
// Padded channels: the prelude's C rounds C_SOURCE (times FOLD_S folded taps) up to whole 16-byte loads (ungrouped
// problems only).
constexpr bool PADDED_CHANNELS = C_SOURCE * FOLD_S != C || FOLD_S > 1;
constexpr bool FOLD_ON_LOAD = FOLD_WIDTH == 2;  // fw2: the pixel rows folded as they are loaded, no copy pass
constexpr int FOLD_TAPS = FOLD_S + FOLD_SHIFT;  // the input columns of a folded pixel's window
static_assert(C_SOURCE > 0 && FOLD_S > 0 && C_SOURCE * FOLD_TAPS <= C && C - C_SOURCE * FOLD_TAPS < CHUNK,
              "C must be C_SOURCE x FOLD_S (FOLD_S + FOLD_SHIFT with fw2), or that rounded up by less than one 16-byte "
              "load");
static_assert(!PADDED_CHANNELS || GROUPS == 1, "padded channels serve ungrouped problems only");
static_assert(FOLD_WIDTH >= 0 && FOLD_WIDTH <= 2 && (FOLD_WIDTH != 0) == (FOLD_S > 1),
              "FOLD_WIDTH says whether (and how) FOLD_S taps are folded");
static_assert(FOLD_SHIFT == 0 || FOLD_ON_LOAD, "FOLD_SHIFT shifts fw2's windows only");
// fw2's copies: each window starts on a whole copy (the stride's and the padding's columns, and a row, whole copies;
// dilation 1: the window is one run) and ends on one (no copy holds a column past the window).
static_assert(FOLD_COPY_BYTES == 4 || FOLD_COPY_BYTES == 8, "FOLD_COPY_BYTES must be 4 or 8");
static_assert(!FOLD_ON_LOAD || (FOLD_DIL == 1 && C_SOURCE * ELEMENT_BYTES * FOLD_STRIDE % FOLD_COPY_BYTES == 0 &&
                                C_SOURCE * ELEMENT_BYTES * W_SOURCE % FOLD_COPY_BYTES == 0 &&
                                C_SOURCE * ELEMENT_BYTES * (FOLD_PAD + FOLD_SHIFT) % FOLD_COPY_BYTES == 0 &&
                                C_SOURCE * ELEMENT_BYTES * FOLD_TAPS % FOLD_COPY_BYTES == 0),
              "fw2 needs dilation 1 and the window's start, stride, end and the input row on whole copies");
static_assert(FOLD_S == 1 ? W_SOURCE == W && FOLD_STRIDE == 1 && FOLD_PAD == 0 && FOLD_DIL == 1
                          : S == 1 && W == Q && STRIDE_W == 1 && PAD_W == 0 && DIL_W == 1,
              "a folded width is the prelude's: one tap, the output's width, stride 1, no padding");
static_assert(O == convgen::conv_out_extent(D, T, STRIDE_D, PAD_D, DIL_D), "O does not match D, T, stride, padding");
static_assert(P == convgen::conv_out_extent(H, R, STRIDE_H, PAD_H, DIL_H), "P does not match H, R, stride, padding");
static_assert(Q == convgen::conv_out_extent(W, S, STRIDE_W, PAD_W, DIL_W), "Q does not match W, S, stride, padding");
static_assert(O > 0 && P > 0 && Q > 0, "the output must not be empty");
static_assert(NPIX_LL <= convgen::kIntMax, "output pixels N*O*P*Q must fit in int");
static_assert(FILTER_ELEMENTS <= convgen::kIntMax, "the filter must have fewer than 2^31 elements");

// ---- The configuration ------------------------------------------------------------------------------------------
static_assert(BLOCK_M >= 16 && BLOCK_M <= 256 && BLOCK_M % (SWAP_AB ? 16 : 64) == 0,
              "BLOCK_M must be 64, 128, 192 or 256 (warpgroups), or with SWAP_AB a multiple of 16 (the wgmma's N)");
static_assert(BLOCK_N % 16 == 0 && BLOCK_N >= 16 && BLOCK_N <= 256,
              "BLOCK_N must be a multiple of 16 from 16 to 256 (a wgmma N of whole 8-row swizzle atoms, pairs of "
              "8-channel runs in the staged output)");
static_assert(K_ATOMS == 1 || K_ATOMS == 2, "K_ATOMS must be 1 or 2");
constexpr int BLOCK_K = ATOM_K * K_ATOMS;  // reduction elements per step
static_assert(STAGES >= 3 || (HALO && STAGES == 2),
              "the pipeline needs three stages: one loading, one multiplying, one still being read (the halo's "
              "warp-specialized pipeline two: one filling while the other is multiplied)");
static_assert(SPLIT_K >= 1, "SPLIT_K must be positive");
static_assert(WARP_SPECIALIZED >= 0 && WARP_SPECIALIZED <= 8, "WARP_SPECIALIZED must be 0 to 8");
constexpr bool PRODUCER_WARPGROUP = WARP_SPECIALIZED > 0;  // the warp-specialized pipeline
// Output tiles per block (ws2-ws8): the producer loads the next tile's stages while the consumers store this one's
// outputs; one block per TILES_PER_BLOCK tiles, block b computing tiles b, b + gridDim.x, ...
constexpr int TILES_PER_BLOCK = WARP_SPECIALIZED > 1 ? WARP_SPECIALIZED : 1;
static_assert(!TMA_FILTER || PRODUCER_WARPGROUP, "TMA_FILTER needs the warp-specialized pipeline (WARP_SPECIALIZED)");
// Split-K in a cluster (CLUSTER_REDUCE): the SPLIT_K blocks of a tile are one cluster along the grid's z (the cluster
// rank is the split), at most 8 (a portable cluster).
static_assert(!CLUSTER_REDUCE || (SPLIT_K >= 2 && SPLIT_K <= 8), "CLUSTER_REDUCE needs SPLIT_K 2 to 8 (the cluster)");
static_assert(!CLUSTER_REDUCE || TILES_PER_BLOCK == 1, "CLUSTER_REDUCE needs one tile a block (ws0 or ws1)");
constexpr int CLUSTER_SIZE = CLUSTER_REDUCE ? SPLIT_K : 1;
// Filter multicast (MULTICAST): clusters of MULTICAST blocks along the grid's x, each copying FILTER_SLICE_ROWS of the
// filter tile's rows (whole 8-row swizzle atoms, so that each slice lands in the tile's swizzle) into all of them.
static_assert(MULTICAST == 1 || MULTICAST == 2 || MULTICAST == 4, "MULTICAST must be 1, 2 or 4");
static_assert(MULTICAST == 1 || (TMA_FILTER && TILES_PER_BLOCK == 1 && !CLUSTER_REDUCE),
              "MULTICAST needs the filter by TMA (tma), one tile a block (ws1) and no split-K cluster (cr0)");
static_assert(BLOCK_N % (8 * MULTICAST) == 0, "MULTICAST needs BLOCK_N to be whole 8-row atoms in every share");
constexpr int FILTER_SLICE_ROWS = BLOCK_N / MULTICAST;
// The halo (HALO): a tile is 8 output rows by HALO_TILE_W output columns of one image, each multiplying warpgroup's 64
// pixel rows 8 rows (its wgmma's 8-row atoms) by 8 columns, the warpgroups side by side along the columns; a step is
// one chunk of ATOM_K channels; its stage holds that chunk of the PATCH_H x PATCH_W input pixels the tile's taps read
// (PATCH_W padded to whole 8-pixel atoms: a patch row is then a whole number of swizzle periods) and the chunk's
// BLOCK_N filter rows of every tap.
static_assert(!HALO || (T == 1 && D == 1 && STRIDE_H == 1 && STRIDE_W == 1 && DIL_H == 1 && DIL_W == 1 &&
                        GROUPS == 1 && !PADDED_CHANNELS && CG % ATOM_K == 0),
              "HALO needs a 2-D ungrouped problem of stride and dilation 1 whose channels are whole 128-byte rows");
static_assert(!HALO || (WARP_SPECIALIZED >= 1 && TMA_FILTER && K_ATOMS == 1 && SPLIT_K == 1 && !CHUNK_MAJOR &&
                        !CLUSTER_REDUCE && !TMA_ACTIVATION && !SPLIT_N && MULTICAST == 1),
              "HALO needs ws1-ws8, tma1, kb1, sk1 and none of co, cr, ta, wn and mc");
// With HALO 2 (filter-stationary) the output channels are one channel tile and the block's whole filter, every chunk
// of every tap, is loaded into shared memory of its own once, before the first tile: the stages hold patches only.
constexpr bool FILTER_STATIONARY = HALO == 2;
static_assert(!FILTER_STATIONARY || KG <= BLOCK_N, "HALO 2 needs the output channels within one channel tile");
constexpr int HALO_TILE_H = 8;
// (8 columns for a tile of under 64 pixels, which the halo never has: only swapped tiles of 16 to 48 pixels are)
constexpr int HALO_TILE_W = 8 * (BLOCK_M >= 64 ? BLOCK_M / 64 : 1);
constexpr int PATCH_H = HALO_TILE_H + R - 1;
constexpr int PATCH_W_USED = HALO_TILE_W + S - 1;
constexpr int PATCH_W = (int)ceil_div(PATCH_W_USED, 8) * 8;
constexpr int PATCH_PIXELS = PATCH_H * PATCH_W;
constexpr int HALO_P_TILES = (int)ceil_div(P, HALO_TILE_H);
constexpr int HALO_Q_TILES = (int)ceil_div(Q, HALO_TILE_W);
// The pixel rows by TMA (TMA_ACTIVATION): where the activation is the GEMM's A as it lies, an NPIX x C row-major matrix
// (one tap, stride 1, no padding, no groups, channels not padded), boxes of ATOM_K channels by BLOCK_M pixels.
static_assert(TMA_ACTIVATION >= 0 && TMA_ACTIVATION <= 2, "TMA_ACTIVATION must be 0, 1 or 2");
static_assert(!TMA_ACTIVATION || TMA_FILTER, "TMA_ACTIVATION needs TMA_FILTER (the producer's TMA pipeline)");
static_assert(TMA_ACTIVATION != 1 || (T == 1 && R == 1 && S == 1 && STRIDE_D == 1 && STRIDE_H == 1 && STRIDE_W == 1 &&
                                  PAD_D == 0 && PAD_H == 0 && PAD_W == 0 && GROUPS == 1 && C_SOURCE == C &&
                                  FOLD_S == 1 && !CHUNK_MAJOR),
              "TMA_ACTIVATION needs an ungrouped 1 x 1 problem of stride 1, no padding and whole 16-byte channels");
// The pixel rows by TMA in im2col mode (TMA_ACTIVATION 2): the activation's map (C, W, H, N) walks the output pixels'
// tap-0 input pixels (its bounding box: -PAD to the last one, with the strides as its traversal strides); each K atom
// is one tap's ATOM_K channels (chunk-major, or tap-major with whole 128-byte rows of channels), one copy of BLOCK_M
// pixels shifted by the tap; channels past C (the last chunk's, and atoms past the reduction) arrive as zeros. With
// groups a chunk must not reach into the next group's channels.
static_assert(TMA_ACTIVATION != 2 || (T == 1 && D == 1 && O == 1 && PAD_D == 0 && C_SOURCE == C && FOLD_S == 1 &&
                                      (CHUNK_MAJOR || CG % ATOM_K == 0) && (GROUPS == 1 || CG % ATOM_K == 0) &&
                                      !HALO),
              "TMA_ACTIVATION 2 needs a 2-D problem, channels not padded, chunk-major or whole 128-byte rows of "
              "channels, whole rows a group, and no halo");
// The warpgroups that multiply: one per 64 pixel rows, or with SPLIT_N two, each owning half the block's channels
// (WG_COLS, its wgmma's N): a 64-pixel tile then has two warpgroups issuing wgmma, not one.
// With SWAP_AB the operands trade places: the filter tile is the wgmma's A, one warpgroup per 64 output channels, and
// the pixel tile its B, WG_COLS = BLOCK_M (with SPLIT_N two warpgroups share each 64 channels, each half the pixels):
// a layer of few output channels multiplies in wgmma up to 256 wide instead of 64. The accumulators' rows are then
// channels and their columns pixels; the staged output writes them transposed (store_tile), so it needs one tile a
// block and whole 16-byte runs of channels (STAGED_OUTPUT); split-K writes its partial sums transposed, into the
// workspace or (CLUSTER_REDUCE) into the block's partial tile.
constexpr int WG_N = SPLIT_N ? 2 : 1;
constexpr int WG_COLS = (SWAP_AB ? BLOCK_M : BLOCK_N) / WG_N;
static_assert(!SPLIT_N || TILES_PER_BLOCK == 1, "SPLIT_N needs one tile a block (ws0 or ws1)");
static_assert(WG_COLS % 16 == 0 && WG_COLS >= 16,
              "SPLIT_N needs half the block's channels to be a wgmma N the template instantiates (a multiple of 16)");
static_assert(!SWAP_AB || (BLOCK_N % 64 == 0 && TILES_PER_BLOCK == 1 && MULTICAST == 1 && !HALO),
              "SWAP_AB needs BLOCK_N a multiple of 64 (the wgmma's M), one tile a block (ws0 or ws1) and none of mc "
              "and hl");
// The 2:4 filter (SPARSE_FILTER): wgmma.mma_async.sp takes its sparse operand as A, so the operands are swapped (the
// filter tile A, 64 output channels a warpgroup); a step is two K atoms (128 reduction elements), whose compressed
// filter rows (64 kept values) fill one 128-byte swizzled row each, beside the stage's metadata. The filter is the
// pack entry's compressed copy (the tap-major order of its rows), read as it lies: no TMA, chunk-major order or
// padded channels.
static_assert(!SPARSE_FILTER || (SWAP_AB && !IS_TF32 && K_ATOMS == 2 && !TMA_FILTER && !CHUNK_MAJOR &&
                                 !PADDED_CHANNELS && TMA_ACTIVATION == 0),
              "SPARSE_FILTER needs fp16 / bf16, sw1, kb2 and none of tma, co, ta and padded channels");
constexpr int SP_MMA_K = 32;  // reduction elements of one wgmma.sp
constexpr int WARPGROUPS = (SWAP_AB ? BLOCK_N : BLOCK_M) / 64 * WG_N;
constexpr int THREADS = 128 * (WARPGROUPS + (PRODUCER_WARPGROUP ? 1 : 0));  // the producer is the last warpgroup
constexpr int LOAD_THREADS = PRODUCER_WARPGROUP ? 128 : THREADS;            // the threads that issue the loads
constexpr int PREFETCH = STAGES - 2;  // the shared pipeline's steps loaded ahead of the one being multiplied
constexpr int ACCUMULATORS = WG_COLS / 2;  // fp32 accumulators per thread: 64 x WG_COLS over 128 threads

// Multiplying warpgroup w's first pixel row and first channel of the block tile (with SWAP_AB its first channel and
// first pixel row: the rows of its wgmma's A and of its B).
__device__ __forceinline__ int warpgroup_row0(int warpgroup) { return warpgroup / WG_N * 64; }
__device__ __forceinline__ int warpgroup_col0(int warpgroup) { return warpgroup % WG_N * WG_COLS; }

// The reduction in K atoms of ATOM_K elements (64, or 32 in tf32), in one of two orders:
// - tap-major (co0): the filter's own order, kr = tap * CG + c, cut into atoms: atom a is kr ATOM_K a .. ATOM_K (a + 1)
//   - 1 (a step of small CG spans several taps);
// - chunk-major (co1): for each chunk of ATOM_K channels, every tap in turn: atom a is channels ATOM_K (a / TRS) ..
//   + ATOM_K - 1 of tap a % TRS, those at or past CG zero. Consecutive atoms read the same channels of pixels shifted
//   by one tap, mostly the same activation lines, so these loads keep their lines in L1 (.ca); CG not a multiple of
//   ATOM_K pads each chunk.
constexpr int C_CHUNKS = (int)ceil_div(CG, ATOM_K);
constexpr int ATOMS = CHUNK_MAJOR ? C_CHUNKS * TRS : (int)ceil_div(KR, ATOM_K);
// Each split covers SPLIT_ATOMS atoms (a whole number of steps); the last one may be shorter.
constexpr int SPLIT_ATOMS = (int)(ceil_div(ceil_div(ATOMS, SPLIT_K), K_ATOMS) * K_ATOMS);

// Shared memory, per stage: for each K atom, A as BLOCK_M swizzled rows, then for each K atom B as BLOCK_N (all whole
// 1,024-byte swizzle atoms: multiples of 8 rows). The dynamic allocation has 1,024 bytes more, to align the first
// stage to an atom.
constexpr int A_ATOM_BYTES = BLOCK_M * convgen::wg::kRowBytes;
constexpr int B_ATOM_BYTES = BLOCK_N * convgen::wg::kRowBytes;
constexpr int A_STAGE_BYTES = HALO ? PATCH_PIXELS * convgen::wg::kRowBytes : K_ATOMS * A_ATOM_BYTES;
// With HALO each tap's BLOCK_N rows; filter-stationary none (the filter has its own region after the stages).
// With SPARSE_FILTER the compressed rows (one atom) and the metadata of the step's BLOCK_K / 32 k32 slices of each
// 16-row tile: [BLOCK_N / 16][BLOCK_K / 32][16 words] (templates/two_four_pack.cuh's fragments, as they lie there).
constexpr int META_TILE_UNITS = BLOCK_K / SP_MMA_K * 4;  // 16-byte units of one 16-row tile's metadata a step
constexpr int META_STAGE_BYTES = SPARSE_FILTER ? BLOCK_N / 16 * META_TILE_UNITS * 16 : 0;
constexpr int B_STAGE_BYTES =
    FILTER_STATIONARY ? 0 : SPARSE_FILTER ? B_ATOM_BYTES + META_STAGE_BYTES : (HALO ? RS : K_ATOMS) * B_ATOM_BYTES;
constexpr int STAGE_BYTES = A_STAGE_BYTES + B_STAGE_BYTES;
constexpr int FILTER_REGION_BYTES = FILTER_STATIONARY ? C_CHUNKS * RS * B_ATOM_BYTES : 0;  // chunk c, tap t: c RS + t
// The warp-specialized pipeline's mbarriers follow the stages (and the filter region): `full` of every stage, then
// `empty` of every stage, then, filter-stationary, the filter's (in 16 bytes: what follows stays 16-aligned).
constexpr int BARRIER_BYTES = PRODUCER_WARPGROUP ? 2 * 8 * STAGES + (FILTER_STATIONARY ? 16 : 0) : 0;
// The staged output's rows (STAGED_OUTPUT and BULK_OUTPUT below): BLOCK_N elements, padded by 16 bytes.
constexpr int OUT_PITCH = BLOCK_N * ELEMENT_BYTES + 16;
constexpr int OUT_UNITS = BLOCK_N / CHUNK;  // 16-byte units per staged row
// With several tiles a block, a 16-bit output (not split, its 8-channel runs 16-byte aligned) goes out through a
// buffer of its own after the barriers, BLOCK_M staged rows, which the producer never touches (BULK_OUTPUT).
// (Each row goes to its own pixel, tile_pixel: with HALO a warp's 16 rows are two runs of 8 output columns.)
constexpr bool BULK_OUTPUT = TILES_PER_BLOCK > 1 && !IS_TF32 && SPLIT_K == 1 && K % CHUNK == 0 && KG % CHUNK == 0;
constexpr int OUTPUT_BUFFER_BYTES = BULK_OUTPUT ? BLOCK_M * OUT_PITCH : 0;
static_assert(!WARP_COPY_OUTPUT || BULK_OUTPUT,
              "oc (the warp copying its staged rows out) needs the output buffer: several tiles a block, a 16-bit output "
              "not split, K and K per group multiples of 8");
constexpr int OUTPUT_BUFFER_OFFSET =
    STAGES * STAGE_BYTES + FILTER_REGION_BYTES + BARRIER_BYTES;  // from the first stage, 16-aligned
constexpr int SMEM_BYTES = STAGES * STAGE_BYTES + FILTER_REGION_BYTES + convgen::wg::kAtomBytes + BARRIER_BYTES +
                           OUTPUT_BUFFER_BYTES;  // as the family's plan
static_assert(OUTPUT_BUFFER_OFFSET % 16 == 0, "the output buffer must be 16-aligned (stmatrix and bulk copies)");
// Split-K in a cluster: after the main loop each block writes its fp32 partial tile into its stages' buffers, rows of
// BLOCK_N floats padded by 32 bytes (a warp's float2 pairs of 8 rows then fall in distinct banks), for the cluster's
// blocks to read.
constexpr int PARTIAL_PITCH = BLOCK_N * 4 + 32;
static_assert(!(CLUSTER_REDUCE || (SWAP_AB && SPLIT_K > 1)) || BLOCK_M * PARTIAL_PITCH <= STAGES * STAGE_BYTES,
              "CLUSTER_REDUCE and SWAP_AB's split-K need the stages' buffers to hold the fp32 partial tile");

// ---- Global -> shared loads ---------------------------------------------------------------------------------------
// Loading thread tid copies the 16-byte unit tid % 8 of rows tid / 8 + i * ROW_STEP of both tiles: the unit, and so
// the reduction offset and the filter tap, is the same for all of a thread's rows, and so is the row's place in the
// swizzle (ROW_STEP is a multiple of 8).
constexpr int ROW_STEP = LOAD_THREADS / ROW_UNITS;
constexpr int A_ROWS = BLOCK_M / ROW_STEP;                   // 4 shared, BLOCK_M / 16 warp-specialized
constexpr int B_ROWS = (int)ceil_div(BLOCK_N, ROW_STEP);     // the last pass may have more threads than rows
static_assert(BLOCK_M % ROW_STEP == 0 && ROW_STEP % 8 == 0, "the activation rows must divide among the threads");

// The gather: PixelOrigin, pixel_origin, Tap, tap_of, activation_offset and output_offset, in this namespace.
#include "conv_gather.cuh"

// A channels-last activation offset splits into a part of the pixel and a part of the tap, the same for every pixel:
//   (((d0 + t DIL_D) H + h0 + r DIL_H) W + w0 + s DIL_W) C + c = pixel offset + tap_offset(tap)
// so each row keeps its pixel offset and input origin, and a step costs it one add and the bounds compares of the
// tap's input coordinate (the depth's only in 3-D).
// With fw2 (FOLD_ON_LOAD) the offsets are the source activation's (W_SOURCE columns of C_SOURCE channels), w0 the first
// input column of the pixel's window, and a folded channel c of a filter row r is element c of the window's run in
// input row h0 + r: the width is checked per copy (load_stage), not here.
struct RowGather {
  idx_t offset;    // the activation offset of tap (0, 0, 0), channel 0 (may lie outside the input)
  int d0, h0, w0;  // the input coordinate of tap (0, 0, 0); past the last pixel h0 is below every tap's reach
};

__device__ __forceinline__ RowGather row_gather(int npix, int group) {
  const PixelOrigin px = pixel_origin(npix, group, true);
  RowGather row;
  row.d0 = px.d0;
  row.h0 = px.ok ? px.h0 : H + R * DIL_H;  // every tap of a missing pixel lies below the input
  if constexpr (FOLD_ON_LOAD) {
    const int n = npix / OPQ;
    row.w0 = (npix % Q) * FOLD_STRIDE - FOLD_PAD - FOLD_SHIFT;  // the folded problem's w0 is its column q
    row.offset = px.ok ? ((((idx_t)n * D + px.d0) * H + px.h0) * W_SOURCE + row.w0) * C_SOURCE : 0;
  } else {
    row.w0 = px.w0;
    row.offset = px.base + (((idx_t)px.d0 * H + px.h0) * W + px.w0) * C;
  }
  return row;
}

__device__ __forceinline__ idx_t tap_offset(const Tap& tap) {
  if constexpr (FOLD_ON_LOAD) return ((idx_t)tap.t * DIL_D * H + tap.r * DIL_H) * W_SOURCE * C_SOURCE + tap.c;
  return (((idx_t)tap.t * DIL_D * H + tap.r * DIL_H) * W + tap.s * DIL_W) * C + tap.c;
}

__device__ __forceinline__ bool tap_inside(const RowGather& row, const Tap& tap) {
  const bool depth = T == 1 && D == 1 && PAD_D == 0 ? true : (unsigned)(row.d0 + tap.t * DIL_D) < (unsigned)D;
  const bool width = FOLD_ON_LOAD || (unsigned)(row.w0 + tap.s * DIL_W) < (unsigned)W;
  return depth && (unsigned)(row.h0 + tap.r * DIL_H) < (unsigned)H && width;
}

// A loading thread's constants, fixed over the reduction: its activation rows' gathers and its filter rows.
struct LoadRows {
  RowGather activation[A_ROWS];
  idx_t filter[B_ROWS];  // the offset of the filter row (output channel), 0 where it is outside the tile
  bool filter_ok[B_ROWS];
  const unsigned char* meta;  // SPARSE_FILTER: the first byte of the channel tile's metadata
};

// With SPARSE_FILTER the filter rows are the compressed copy's (KG_PAD rows of KR_KEPT, every row of the tile inside)
// and `g_meta` its metadata.
__device__ __forceinline__ LoadRows load_rows(int tid, int m_tile, int n_tile, int group, const unsigned* g_meta) {
  LoadRows rows;
#pragma unroll
  for (int i = 0; i < A_ROWS; ++i)
    rows.activation[i] = row_gather(m_tile + tid / ROW_UNITS + i * ROW_STEP, group);
#pragma unroll
  for (int i = 0; i < B_ROWS; ++i) {
    const int row = tid / ROW_UNITS + i * ROW_STEP;
    const int col = n_tile + row;
    if constexpr (SPARSE_FILTER) {
      rows.filter_ok[i] = row < BLOCK_N;
      rows.filter[i] = (idx_t)(group * KG_PAD + col) * KR_KEPT;
    } else {
      rows.filter_ok[i] = row < BLOCK_N && col < KG;
      rows.filter[i] = rows.filter_ok[i] ? (idx_t)(group * KG + col) * KR : 0;
    }
  }
  // (A dense kernel's g_meta is null: no offset from it.)
  rows.meta = SPARSE_FILTER ? reinterpret_cast<const unsigned char*>(g_meta) +
                                  (idx_t)((group * KG_PAD + n_tile) / 16) * KR_STEPS * 64
                            : nullptr;
  return rows;
}

// Issues loading thread tid's loads of atoms [a0, a0 + K_ATOMS) into the stage at s_stage (a shared address,
// 1,024-aligned), swizzled, each K atom in its own A and B regions. Atoms at or past a_end, elements past the
// reduction (or the chunk's channels), outside the input or outside the tile are zero-filled.
__device__ __forceinline__ void load_stage(unsigned s_stage, const element_t* __restrict__ g_activation,
                                           const element_t* __restrict__ g_filter, const LoadRows& rows, int tid,
                                           int a0, int a_end) {
  const int unit = tid % ROW_UNITS;
#pragma unroll
  for (int atom = 0; atom < K_ATOMS; ++atom) {
    const int a = a0 + atom;
    // The unit's filter reduction index kr (tap * CG + c) and tap; a unit never straddles the end of the reduction or
    // of a chunk: CG and KR are multiples of CHUNK.
    int kr;
    bool in_reduction;
    Tap tap;
    if constexpr (CHUNK_MAJOR) {
      const int chunk = a / TRS;
      const int trs = a - chunk * TRS;
      const int c = chunk * ATOM_K + unit * CHUNK;
      kr = trs * CG + c;
      in_reduction = a < a_end && c < CG;
      tap = {c, trs / RS, (trs / S) % R, trs % S};
    } else {
      kr = a * ATOM_K + unit * CHUNK;
      in_reduction = a < a_end && kr < KR;
      tap = tap_of(kr);
    }
    const idx_t tap_off = tap_offset(tap);
    const unsigned s_a = s_stage + (unsigned)(atom * A_ATOM_BYTES);
    const unsigned s_b = s_stage + (unsigned)(A_STAGE_BYTES + atom * B_ATOM_BYTES);
#pragma unroll
    for (int i = 0; i < (TMA_ACTIVATION ? 0 : A_ROWS); ++i) {
      const int row = tid / ROW_UNITS + i * ROW_STEP;
      const idx_t offset = rows.activation[i].offset + tap_off;
      const bool full = in_reduction && tap_inside(rows.activation[i], tap);
      const unsigned s_unit = s_a + convgen::wg::swizzled_offset(row, unit);
      if constexpr (FOLD_ON_LOAD) {  // copies of the window's run, each zero outside the input row
        constexpr int COPY = FOLD_COPY_BYTES / ELEMENT_BYTES;  // elements of one copy
#pragma unroll
        for (int k = 0; k < CHUNK / COPY; ++k) {
          const int e = tap.c + k * COPY;  // the copy's first element in the window
          const bool inside = full && e < C_SOURCE * FOLD_TAPS &&
                              (unsigned)(rows.activation[i].w0 + e / C_SOURCE) < (unsigned)W_SOURCE;
          convgen::tc::cp_async_l1<FOLD_COPY_BYTES>(s_unit + (unsigned)(FOLD_COPY_BYTES * k),
                                                    inside ? g_activation + offset + k * COPY : g_activation, inside);
        }
      } else if constexpr (CHUNK_MAJOR)
        convgen::tc::cp_async_l1<16>(s_unit, full ? g_activation + offset : g_activation, full);
      else
        convgen::tc::cp_async_16(s_unit, full ? g_activation + offset : g_activation, full);
    }
    if constexpr (TMA_FILTER || SPARSE_FILTER) continue;  // the filter tile: by TMA (load_filter_tma), or below
#pragma unroll
    for (int i = 0; i < B_ROWS; ++i) {
      const int row = tid / ROW_UNITS + i * ROW_STEP;
      if (BLOCK_N % ROW_STEP != 0 && row >= BLOCK_N) continue;
      const bool full = rows.filter_ok[i] && in_reduction;
      convgen::tc::cp_async_16(s_b + convgen::wg::swizzled_offset(row, unit),
                               full ? g_filter + rows.filter[i] + kr : g_filter, full);
    }
  }
  if constexpr (SPARSE_FILTER) {
    // The step's compressed filter rows (kept values a0 ATOM_K / 2 .. + ATOM_K of each: one swizzled row; zeros past
    // KR and KG are in the packed copy), then the metadata of its BLOCK_K / 32 slices, tile after tile.
    const bool in_reduction = a0 < a_end;
    const unsigned s_values = s_stage + (unsigned)A_STAGE_BYTES;
    const int kept0 = a0 * (ATOM_K / 2) + unit * CHUNK;
#pragma unroll
    for (int i = 0; i < B_ROWS; ++i) {
      const int row = tid / ROW_UNITS + i * ROW_STEP;
      if (BLOCK_N % ROW_STEP != 0 && row >= BLOCK_N) continue;
      convgen::tc::cp_async_16(s_values + convgen::wg::swizzled_offset(row, unit),
                               in_reduction ? g_filter + rows.filter[i] + kept0 : g_filter, in_reduction);
    }
    const unsigned s_meta = s_values + (unsigned)B_ATOM_BYTES;
    const int slice0 = a0 * ATOM_K / SP_MMA_K;
#pragma unroll
    for (int u = tid; u < META_STAGE_BYTES / 16; u += LOAD_THREADS) {
      const int tile16 = u / META_TILE_UNITS;
      const int within = u - tile16 * META_TILE_UNITS;
      const unsigned char* source = rows.meta + ((idx_t)tile16 * KR_STEPS + slice0) * 64 + within * 16;
      convgen::tc::cp_async_16(s_meta + (unsigned)(u * 16), in_reduction ? source : rows.meta, in_reduction);
    }
  }
}

// The wgmma groups a warpgroup leaves running when it goes on to the next step: 1 (the next step's loads and issue
// overlap this step's products), but 0 with SPARSE_FILTER: a wgmma.sp reads its metadata register while it runs, and
// ptxas loads the next step's metadata into the same registers (its analysis guards a group's own instructions, not
// the next one's), which gave wrong results on the H200 in most tiles of the shared pipeline and in large tiles of long
// reductions warp-specialized. CUTLASS's sparse GMMA mainloop waits for 0 too.
constexpr int PIPELINE_PENDING = SPARSE_FILTER ? 0 : 1;

// With SPARSE_FILTER a step's BLOCK_K / 32 wgmma.sp: A the warpgroup's 64 compressed filter rows (32 bytes on a
// slice), B its pixel rows (64 bytes of a 128-byte row a slice: two a K atom), and each thread's metadata word of its
// warp's 16-row tile (threads 4 g8 and 4 g8 + 1 give words 2 g8 and 2 g8 + 1; + 2 and + 3 read the same, ignored),
// loaded before the group begins.
__device__ __forceinline__ void multiply_sparse_stage(float (&r_acc)[ACCUMULATORS], unsigned s_stage, int warpgroup) {
  namespace wg = convgen::wg;
  constexpr int SLICES = BLOCK_K / SP_MMA_K;
  const int warp = (int)(threadIdx.x % 128) / 32;
  const int lane = (int)(threadIdx.x % 32);
  const unsigned channels = s_stage + (unsigned)A_STAGE_BYTES;
  const unsigned s_meta = channels + (unsigned)B_ATOM_BYTES +
                          (unsigned)((warpgroup_row0(warpgroup) / 16 + warp) * META_TILE_UNITS * 16 +
                                     ((lane / 4) * 2 + lane % 2) * 4);
  unsigned meta[SLICES];
#pragma unroll
  for (int slice = 0; slice < SLICES; ++slice) meta[slice] = wg::load_shared_u32(s_meta + (unsigned)(slice * 64));
#pragma unroll
  for (int v = 0; v < ACCUMULATORS; ++v) wg::fence_operand(r_acc[v]);
  wg::fence();
  const unsigned long long desc_a =
      wg::matrix_descriptor(channels + (unsigned)(warpgroup_row0(warpgroup) * wg::kRowBytes));
#pragma unroll
  for (int slice = 0; slice < SLICES; ++slice) {
    const unsigned pixels = s_stage + (unsigned)((slice / 2) * A_ATOM_BYTES);  // the slice's K atom of pixel rows
    const unsigned long long desc_b =
        wg::matrix_descriptor(pixels + (unsigned)(warpgroup_col0(warpgroup) * wg::kRowBytes)) + 4ull * (slice % 2);
    // (A tf32 kernel compiles this path but never takes it: SPARSE_FILTER is fp16 / bf16.)
    wg::mma_sp_async<WG_COLS, IS_TF32 ? 2 : PRECISION>(r_acc, desc_a + 2ull * slice, desc_b, meta[slice]);
  }
  wg::commit();
}

// Issues warpgroup `warpgroup`'s wgmma of the stage at s_stage as one group: its 64 pixel rows times its WG_COLS
// channels (the block's BLOCK_N, or half with SPLIT_N), over the stage's BLOCK_K reduction elements.
__device__ __forceinline__ void multiply_stage(float (&r_acc)[ACCUMULATORS], unsigned s_stage, int warpgroup) {
  namespace wg = convgen::wg;
  if constexpr (SPARSE_FILTER) {
    multiply_sparse_stage(r_acc, s_stage, warpgroup);
    return;
  }
#pragma unroll
  for (int v = 0; v < ACCUMULATORS; ++v) wg::fence_operand(r_acc[v]);
  wg::fence();
#pragma unroll
  for (int atom = 0; atom < K_ATOMS; ++atom) {
    const unsigned pixels = s_stage + (unsigned)(atom * A_ATOM_BYTES);                    // the atom's pixel rows
    const unsigned channels = s_stage + (unsigned)(A_STAGE_BYTES + atom * B_ATOM_BYTES);  // and its filter rows
    const unsigned long long desc_a = wg::matrix_descriptor((SWAP_AB ? channels : pixels) +
                                                            (unsigned)(warpgroup_row0(warpgroup) * wg::kRowBytes));
    const unsigned long long desc_b = wg::matrix_descriptor((SWAP_AB ? pixels : channels) +
                                                            (unsigned)(warpgroup_col0(warpgroup) * wg::kRowBytes));
#pragma unroll
    for (int ks = 0; ks < ATOM_K / MMA_K; ++ks)  // the next MMA_K reduction elements: 32 bytes on, + 2 in a descriptor
      wg::mma_async<WG_COLS, PRECISION>(r_acc, desc_a + 2ull * ks, desc_b + 2ull * ks);
  }
  wg::commit();
}

// The shared pipeline (the header says why the buffers are safe to overwrite). A cp.async group is committed every
// step, empty or not, so that waiting for PREFETCH - 1 pending groups means the current step's slice has landed.
__device__ __forceinline__ void shared_main_loop(float (&r_acc)[ACCUMULATORS], unsigned s_base,
                                                 const element_t* __restrict__ g_activation,
                                                 const element_t* __restrict__ g_filter, const LoadRows& rows, int tid,
                                                 int warpgroup, int a_begin, int a_end, int steps) {
  namespace wg = convgen::wg;
#pragma unroll
  for (int stage = 0; stage < PREFETCH; ++stage) {
    if (stage < steps)
      load_stage(s_base + (unsigned)(stage * STAGE_BYTES), g_activation, g_filter, rows, tid,
                 a_begin + stage * K_ATOMS, a_end);
    convgen::tc::cp_async_commit();
  }
  int read_stage = 0;
  int write_stage = PREFETCH;
  for (int step = 0; step < steps; ++step) {
    convgen::tc::cp_async_wait<PREFETCH - 1>();
    wg::fence_proxy_async();
    __syncthreads();
    const int next = step + PREFETCH;
    if (next < steps)
      load_stage(s_base + (unsigned)(write_stage * STAGE_BYTES), g_activation, g_filter, rows, tid,
                 a_begin + next * K_ATOMS, a_end);
    convgen::tc::cp_async_commit();
    multiply_stage(r_acc, s_base + (unsigned)(read_stage * STAGE_BYTES), warpgroup);
    wg::wait<PIPELINE_PENDING>();
#pragma unroll
    for (int v = 0; v < ACCUMULATORS; ++v) wg::fence_operand(r_acc[v]);
    read_stage = read_stage + 1 == STAGES ? 0 : read_stage + 1;
    write_stage = write_stage + 1 == STAGES ? 0 : write_stage + 1;
  }
  wg::wait<0>();
#pragma unroll
  for (int v = 0; v < ACCUMULATORS; ++v) wg::fence_operand(r_acc[v]);
  convgen::tc::cp_async_wait<0>();
}

// The warp-specialized pipeline's two sides. Stage i's barriers are at s_full + 8 i and s_empty + 8 i; use u of a
// stage (u = step / STAGES) waits for phase u of `full` and, from the second use on, for phase u - 1 of `empty`.
// With MULTICAST every block's consumer warps arrive on every block's `empty`.
constexpr unsigned CONSUMER_WARPS = 4 * WARPGROUPS;  // the arrivals of one block's consumers
constexpr unsigned EMPTY_ARRIVALS = CONSUMER_WARPS * MULTICAST;  // the arrivals that complete a phase of `empty`

// With TMA_FILTER: the filter tile of atoms [a0, a0 + K_ATOMS) into the stage at s_stage, one bulk tensor copy per atom
// (BLOCK_N rows from filter row `row0`, the first of the block's output channels), their bytes completing on the
// barrier at s_full_stage. Atoms past the split's end load the next split's filter, which meets zero pixel rows; rows
// past the group's KG load the next group's, whose outputs are not stored; past K and KR the copy gives zeros.
// With TMA_ACTIVATION also the pixel rows, BLOCK_M from pixel m_tile (rows past NPIX and channels past C arrive as
// zeros), from the map of the call's activation: a step never reaches past its split's atoms (whole steps),
// and atoms past the reduction read channels past C.
__device__ __forceinline__ void load_filter_tma(unsigned s_stage, unsigned s_full_stage, const void* g_filter_map,
                                                const void* activation_map, int row0, int m_tile, int a0) {
  namespace wg = convgen::wg;
  wg::barrier_expect_bytes(s_full_stage, (unsigned)(B_STAGE_BYTES + (TMA_ACTIVATION ? A_STAGE_BYTES : 0)));
#pragma unroll
  for (int atom = 0; atom < K_ATOMS; ++atom) {
    const int a = a0 + atom;
    if constexpr (TMA_ACTIVATION == 1)
      wg::tma_load_2d(s_stage + (unsigned)(atom * A_ATOM_BYTES), activation_map, a * ATOM_K, m_tile, s_full_stage);
    if constexpr (TMA_ACTIVATION == 2) {
      // Atom a: chunk and tap; the tile's first pixel's tap-0 input pixel is the walk's base (n, h0, w0).
      constexpr int ROW_CHUNKS = CG / ATOM_K;  // tap-major: whole rows of channels a tap
      const int chunk = CHUNK_MAJOR ? a / TRS : a % (ROW_CHUNKS > 0 ? ROW_CHUNKS : 1);
      const int tap = CHUNK_MAJOR ? a % TRS : a / (ROW_CHUNKS > 0 ? ROW_CHUNKS : 1);
      const bool past = a >= ATOMS;  // zeros: the whole box past the channels
      const int c = past ? C : row0 / KG * CG + chunk * ATOM_K;
      const int n = m_tile / PQ, pq = m_tile % PQ;
      wg::tma_load_im2col_4d(s_stage + (unsigned)(atom * A_ATOM_BYTES), activation_map, c,
                             pq % Q * STRIDE_W - PAD_W, pq / Q * STRIDE_H - PAD_H, n,
                             (unsigned short)(past ? 0 : tap % S * DIL_W), (unsigned short)(past ? 0 : tap / S * DIL_H),
                             s_full_stage);
    }
    const unsigned s_b = s_stage + (unsigned)(A_STAGE_BYTES + atom * B_ATOM_BYTES);
    if constexpr (MULTICAST > 1) {  // this block's share of the rows, into every block of the cluster
      const unsigned rank = wg::cluster_rank();
      const unsigned s_slice = s_b + rank * (unsigned)(FILTER_SLICE_ROWS * wg::kRowBytes);
      const int slice_row0 = row0 + (int)rank * FILTER_SLICE_ROWS;
      constexpr unsigned short kAll = (unsigned short)((1u << MULTICAST) - 1u);
      if constexpr (CHUNK_MAJOR)
        wg::tma_load_3d_multicast(s_slice, g_filter_map, (a / TRS) * ATOM_K, a % TRS, slice_row0, s_full_stage, kAll);
      else
        wg::tma_load_2d_multicast(s_slice, g_filter_map, a * ATOM_K, slice_row0, s_full_stage, kAll);
    } else if constexpr (CHUNK_MAJOR) {
      wg::tma_load_3d(s_b, g_filter_map, (a / TRS) * ATOM_K, a % TRS, row0, s_full_stage);
    } else {
      wg::tma_load_2d(s_b, g_filter_map, a * ATOM_K, row0, s_full_stage);
    }
  }
}

// Where a warp-specialized block's pipeline stands: the stage its next step uses, that stage's phase parity, and the
// steps filled so far (over every tile of the block: the stages run on from one tile to the next).
struct PipelineState {
  int stage = 0;
  unsigned phase = 0;
  int filled = 0;
};

// The producer warpgroup (ptid = its thread, 0-127): fills each of a tile's steps' stages once the consumers have
// emptied it (from the block's STAGES-th step on).
__device__ __forceinline__ void produce(unsigned s_base, unsigned s_full, unsigned s_empty,
                                        const element_t* __restrict__ g_activation,
                                        const element_t* __restrict__ g_filter, const void* g_filter_map,
                                        const void* activation_map, const LoadRows& rows, int ptid, int filter_row0,
                                        int m_tile, int a_begin, int a_end, int steps, PipelineState& pipe) {
  namespace wg = convgen::wg;
  for (int step = 0; step < steps; ++step) {
    if (pipe.filled >= STAGES) wg::barrier_wait(s_empty + 8u * pipe.stage, pipe.phase ^ 1u);
    if (TMA_FILTER && ptid == 0)
      load_filter_tma(s_base + (unsigned)(pipe.stage * STAGE_BYTES), s_full + 8u * pipe.stage, g_filter_map,
                      activation_map, filter_row0, m_tile, a_begin + step * K_ATOMS);
    load_stage(s_base + (unsigned)(pipe.stage * STAGE_BYTES), g_activation, g_filter, rows, ptid,
               a_begin + step * K_ATOMS, a_end);
    wg::barrier_arrive_on_copies(s_full + 8u * pipe.stage);
    ++pipe.filled;
    if (++pipe.stage == STAGES) {
      pipe.stage = 0;
      pipe.phase ^= 1u;
    }
  }
}

// A consumer warp gives a stage back: one arrival on its `empty` (lane 0), or with MULTICAST on the `empty` of every
// block of the cluster, each of whose producers refills it (lane r arrives on block r's).
__device__ __forceinline__ void release_stage(unsigned s_empty_stage, int lane) {
  if constexpr (MULTICAST > 1) {
    if (lane < MULTICAST) convgen::wg::barrier_arrive_in_block(s_empty_stage, (unsigned)lane);
  } else {
    if (lane == 0) convgen::wg::barrier_arrive(s_empty_stage);
  }
}

// A consumer warpgroup: multiplies each of a tile's stages once it is full, and gives the previous step's stage back
// once that step's wgmma group has finished (one arrival per warp); with `release_last` (more tiles may follow) the
// tile's last stage too, once every wgmma has finished. The proxy fence after the wait orders the cp.async writes the
// barrier made visible before the wgmma's async-proxy reads of them.
__device__ __forceinline__ void consume(float (&r_acc)[ACCUMULATORS], unsigned s_base, unsigned s_full,
                                        unsigned s_empty, int warpgroup, int lane, int steps, PipelineState& pipe,
                                        bool release_last) {
  namespace wg = convgen::wg;
  int previous = -1;
  for (int step = 0; step < steps; ++step) {
    wg::barrier_wait(s_full + 8u * pipe.stage, pipe.phase);
    wg::fence_proxy_async();
    multiply_stage(r_acc, s_base + (unsigned)(pipe.stage * STAGE_BYTES), warpgroup);
    wg::wait<PIPELINE_PENDING>();
#pragma unroll
    for (int v = 0; v < ACCUMULATORS; ++v) wg::fence_operand(r_acc[v]);
    if (previous >= 0) release_stage(s_empty + 8u * previous, lane);
    previous = pipe.stage;
    if (++pipe.stage == STAGES) {
      pipe.stage = 0;
      pipe.phase ^= 1u;
    }
  }
  wg::wait<0>();
#pragma unroll
  for (int v = 0; v < ACCUMULATORS; ++v) wg::fence_operand(r_acc[v]);
  if (release_last && previous >= 0) release_stage(s_empty + 8u * previous, lane);
}

// ---- The block's output tiles ------------------------------------------------------------------------------------
// M_TILES x N_TILES x GROUPS x SPLIT_K tiles. With one a block the grid's x, y and z say which (pixels, channels,
// group and split); with TILES_PER_BLOCK, block b computes tiles b, b + gridDim.x, ... of the flat order that runs
// the output channels fastest, then the pixels, then groups and splits: the blocks at work at once share pixel rows.
constexpr int M_TILES = HALO ? N * HALO_P_TILES * HALO_Q_TILES : (int)ceil_div(NPIX, BLOCK_M);
constexpr int N_TILES = (int)ceil_div(KG, BLOCK_N);
constexpr long long TOTAL_TILES = (long long)M_TILES * N_TILES * GROUPS * SPLIT_K;

struct Tile {
  int m_tile, n_tile;   // the first output pixel and output channel (within the group)
  int image, p0, q0;    // HALO: the tile's image, first output row and first output column
  int group, split;
  int a_begin, a_end;   // the split's atoms
  int steps;
};

__device__ __forceinline__ Tile tile_of(int m_index, int n_index, int z) {
  Tile tile;
  tile.m_tile = m_index * BLOCK_M;
  if constexpr (HALO) {  // m_index runs the output columns' tiles fastest, then the rows', then the images
    tile.q0 = (m_index % HALO_Q_TILES) * HALO_TILE_W;
    tile.p0 = (m_index / HALO_Q_TILES % HALO_P_TILES) * HALO_TILE_H;
    tile.image = m_index / (HALO_Q_TILES * HALO_P_TILES);
  }
  tile.n_tile = n_index * BLOCK_N;
  tile.group = z / SPLIT_K;
  tile.split = z % SPLIT_K;
  tile.a_begin = tile.split * SPLIT_ATOMS;
  tile.a_end = cmin(ATOMS, tile.a_begin + SPLIT_ATOMS);
  tile.steps = tile.a_end > tile.a_begin ? (int)ceil_div(tile.a_end - tile.a_begin, K_ATOMS) : 0;
  if constexpr (HALO) tile.steps = C_CHUNKS;  // one chunk of ATOM_K channels a step, every tap
  return tile;
}

// The output pixel (N * O * P * Q order) of the block tile's pixel row `row`, NPIX or more where there is none: the
// tile's m_tile + row, or with HALO row 8 i + j of warpgroup w's 64 is output row p0 + i, column q0 + 8 w + j (NPIX
// outside the output).
__device__ __forceinline__ int tile_pixel(const Tile& tile, int row) {
  if constexpr (HALO) {
    const int within = row % 64;
    const int p = tile.p0 + within / 8;
    const int q = tile.q0 + (row / 64) * 8 + within % 8;
    return p < P && q < Q ? (tile.image * P + p) * Q + q : NPIX;
  } else {
    return tile.m_tile + row;  // its callers skip every pixel at or past NPIX
  }
}

// The block's i-th tile; false past the last.
__device__ __forceinline__ bool block_tile(int i, Tile& tile) {
  if constexpr (TILES_PER_BLOCK == 1) {
    tile = tile_of((int)blockIdx.x, (int)blockIdx.y, (int)blockIdx.z);
    return true;
  }
  const long long t = (long long)blockIdx.x + (long long)i * gridDim.x;
  if (t >= TOTAL_TILES) return false;
  const long long rest = t / N_TILES;
  tile = tile_of((int)(rest % M_TILES), (int)(t % N_TILES), (int)(rest / M_TILES));
  return true;
}

// ---- The halo pipeline (HALO): one chunk of ATOM_K channels a step ----------------------------------------------
// The producer: each step's stage gets the chunk's input patch by the 128 threads' cp.async (pixel i = y PATCH_W + x
// of the patch, input row p0 - PAD_H + y and column q0 - PAD_W + x, zeros outside the input; the columns past
// PATCH_W_USED are never read) and the chunk's filter rows of every tap by TMA (tap t's BLOCK_N rows from filter row
// row0, reduction column t CG + chunk ATOM_K), `full` waiting for both.
__device__ __forceinline__ void produce_halo(unsigned s_base, unsigned s_full, unsigned s_empty,
                                             const element_t* __restrict__ g_activation, const void* g_filter_map,
                                             const Tile& tile, int ptid, int filter_row0, PipelineState& pipe) {
  namespace wg = convgen::wg;
  const int unit = ptid % ROW_UNITS;
  const idx_t image_offset = (idx_t)tile.image * H * W * C;
  for (int step = 0; step < tile.steps; ++step) {
    if (pipe.filled >= STAGES) wg::barrier_wait(s_empty + 8u * pipe.stage, pipe.phase ^ 1u);
    const unsigned s_stage = s_base + (unsigned)(pipe.stage * STAGE_BYTES);
    const unsigned s_full_stage = s_full + 8u * pipe.stage;
    if (!FILTER_STATIONARY && ptid == 0) {
      wg::barrier_expect_bytes(s_full_stage, (unsigned)B_STAGE_BYTES);
#pragma unroll 1
      for (int tap = 0; tap < RS; ++tap)
        wg::tma_load_2d(s_stage + (unsigned)(A_STAGE_BYTES + tap * B_ATOM_BYTES), g_filter_map,
                        tap * CG + step * ATOM_K, filter_row0, s_full_stage);
    }
    const idx_t chunk_offset = image_offset + (idx_t)step * ATOM_K + unit * CHUNK;
#pragma unroll 4
    for (int i = ptid / ROW_UNITS; i < PATCH_PIXELS; i += 128 / ROW_UNITS) {
      const int y = i / PATCH_W;
      const int x = i - y * PATCH_W;
      if (x >= PATCH_W_USED) continue;
      const int h = tile.p0 - PAD_H + y;
      const int w = tile.q0 - PAD_W + x;
      const bool inside = (unsigned)h < (unsigned)H && (unsigned)w < (unsigned)W;
      const element_t* source = inside ? g_activation + chunk_offset + ((idx_t)h * W + w) * C : g_activation;
      convgen::tc::cp_async_16(s_stage + convgen::wg::swizzled_offset(i, unit), source, inside);
    }
    wg::barrier_arrive_on_copies(s_full_stage);
    ++pipe.filled;
    if (++pipe.stage == STAGES) {
      pipe.stage = 0;
      pipe.phase ^= 1u;
    }
  }
}

// A multiplying warpgroup's wgmma of one halo stage as one group: for each tap (r, s), its 64 pixel rows (8 output
// rows of 8 columns, from column 8 warpgroup of the tile) are the patch's window from pixel (r, 8 warpgroup + s), atoms
// a patch row apart, against the tap's filter rows (in the stage, or filter-stationary chunk `chunk`'s in the filter
// region at s_filter).
__device__ __forceinline__ void multiply_halo(float (&r_acc)[ACCUMULATORS], unsigned s_stage, unsigned s_filter,
                                              int chunk, int warpgroup) {
  namespace wg = convgen::wg;
#pragma unroll
  for (int v = 0; v < ACCUMULATORS; ++v) wg::fence_operand(r_acc[v]);
  wg::fence();
#pragma unroll 1
  for (int tap = 0; tap < RS; ++tap) {
    const int r = tap / S;
    const int s = tap - r * S;
    const unsigned long long desc_a = wg::matrix_descriptor_strided(
        s_stage + (unsigned)((r * PATCH_W + warpgroup * 8 + s) * wg::kRowBytes), (unsigned)(PATCH_W * wg::kRowBytes));
    const unsigned s_b = FILTER_STATIONARY ? s_filter + (unsigned)((chunk * RS + tap) * B_ATOM_BYTES)
                                           : s_stage + (unsigned)(A_STAGE_BYTES + tap * B_ATOM_BYTES);
    const unsigned long long desc_b = wg::matrix_descriptor(s_b);
#pragma unroll
    for (int ks = 0; ks < ATOM_K / MMA_K; ++ks)
      wg::mma_async<WG_COLS, PRECISION>(r_acc, desc_a + 2ull * ks, desc_b + 2ull * ks);
  }
  wg::commit();
}

// The consumer of the halo pipeline: consume()'s loop over multiply_halo's stages (with `release_last`, more tiles
// following, the tile's last stage given back too).
__device__ __forceinline__ void consume_halo(float (&r_acc)[ACCUMULATORS], unsigned s_base, unsigned s_full,
                                             unsigned s_empty, unsigned s_filter, int warpgroup, int lane,
                                             int steps, PipelineState& pipe, bool release_last) {
  namespace wg = convgen::wg;
  int previous = -1;
  for (int step = 0; step < steps; ++step) {
    wg::barrier_wait(s_full + 8u * pipe.stage, pipe.phase);
    wg::fence_proxy_async();
    multiply_halo(r_acc, s_base + (unsigned)(pipe.stage * STAGE_BYTES), s_filter, step, warpgroup);
    wg::wait<1>();
#pragma unroll
    for (int v = 0; v < ACCUMULATORS; ++v) wg::fence_operand(r_acc[v]);
    if (previous >= 0) release_stage(s_empty + 8u * previous, lane);
    previous = pipe.stage;
    if (++pipe.stage == STAGES) {
      pipe.stage = 0;
      pipe.phase ^= 1u;
    }
  }
  wg::wait<0>();
#pragma unroll
  for (int v = 0; v < ACCUMULATORS; ++v) wg::fence_operand(r_acc[v]);
  if (release_last && previous >= 0) release_stage(s_empty + 8u * previous, lane);
}

// ---- Output: to_element, to_float, epilogue_at, store_output and store_partials, in this namespace -------------
#include "tc_output.cuh"

// The staged output: where whole runs of CHUNK channels (16 bytes) are 16-byte aligned (K and KG multiples of CHUNK),
// the output is final (no split-K) and the block has one tile, the tile goes through shared memory (the stages'
// buffers, free after the main loop; with more tiles a block the producer is filling them with the next, and a 16-bit
// output has its own buffer, BULK_OUTPUT). Rows are padded by 16 bytes, so the 8 rows of 16 bytes a warp writes at
// once fall in 8 different groups of 4 banks (tf32's 8-byte pairs meet 2-way conflicts). A tf32 tile that does not fit
// the stages' buffers (256 x 256 in 3 stages) is stored directly.
constexpr bool STAGED_OUTPUT = TILES_PER_BLOCK == 1 && SPLIT_K == 1 && K % CHUNK == 0 && KG % CHUNK == 0 &&
                              BLOCK_M * OUT_PITCH <= STAGES * STAGE_BYTES;
static_assert(!SWAP_AB || SPLIT_K > 1 || STAGED_OUTPUT,
              "SWAP_AB writes its transposed output through the stages' buffers: K and K per group multiples of 16 "
              "bytes' elements, the BLOCK_M staged rows within the stages");
// With the output buffer, each warp writes its own 16 rows of the tile with stmatrix (4 pairs of 8 channels a lane an
// instruction, as they lie in the accumulators), then its lanes 0-15 each copy one row to global memory in one bulk
// copy, which runs on while the warp goes on to the next tile; no block barrier, no copy loop. In the stages (one tile
// a block), each thread writes its pairs, then the block copies whole rows, each warp instruction 512 contiguous-by-row
// bytes: the warps' bulk copies there took 1.02-1.04x the time (ResNet-50 fp16 at batch 8, H200), their blocks waiting
// at the end for their copies to be done.

// Writes this warp's 16 rows of the tile (pixels npix0 + 0..15, channels n_tile + 0..BLOCK_N - 1), through the
// epilogue and rounded, into shared rows OUT_PITCH bytes apart from s_rows, one stmatrix a pair of 8-channel runs j,
// j + 1: its matrices are (run j, rows 0-7), (j, rows 8-15), (j + 1, rows 0-7), (j + 1, rows 8-15), accumulators
// 4j + 2 half + {0, 1} (wgmma.cuh). 16-bit outputs only.
__device__ __forceinline__ void stage_warp_rows(const float (&r_acc)[ACCUMULATORS], unsigned s_rows,
                                                const Tile& tile, int warp_row, int n_tile, int group, int lane,
                                                const element_t* __restrict__ g_bias,
                                                const element_t* __restrict__ g_residual) {
  const int matrix = lane / 8;  // the matrix whose row lane % 8 this lane addresses
  const unsigned s_lane =
      s_rows + (unsigned)((lane % 8 + 8 * (matrix % 2)) * OUT_PITCH + 8 * (matrix / 2) * ELEMENT_BYTES);
#pragma unroll
  for (int j = 0; j < BLOCK_N / 8; j += 2) {
    unsigned pairs[4];
#pragma unroll
    for (int i = 0; i < 4; ++i) {
      float v0 = r_acc[4 * j + 4 * (i / 2) + 2 * (i % 2)];
      float v1 = r_acc[4 * j + 4 * (i / 2) + 2 * (i % 2) + 1];
      const int npix = tile_pixel(tile, warp_row + lane / 4 + 8 * (i % 2));
      const int col = n_tile + 8 * (j + i / 2) + 2 * (lane % 4);
      if (npix < NPIX && col < KG) {  // a whole pair is inside or outside: KG % 8 == 0
        v0 = epilogue_at(v0, npix, group * KG + col, g_bias, g_residual);
        v1 = epilogue_at(v1, npix, group * KG + col + 1, g_bias, g_residual);
      }
      pairs[i] = convgen::wg::pack_pair<IS_BF16>(v0, v1);
    }
    convgen::wg::stmatrix_x4(s_lane + (unsigned)(j * 8 * ELEMENT_BYTES), pairs);
  }
}

// Copies this warp's 16 staged rows at s_rows to the output by bulk copies, lane r < 16 row r (the tile's row
// warp_row + r: tile_pixel), in one bulk group each: after the warp's stmatrix, a proxy fence (the copies read through
// the async proxy) and the warp's barrier.
__device__ __forceinline__ void bulk_store_warp_rows(unsigned s_rows, element_t* __restrict__ g_output,
                                                     const Tile& tile, int warp_row, int n_tile, int group,
                                                     int lane) {
  convgen::wg::fence_proxy_async();
  __syncwarp();
  if (lane >= 16) return;
  const int npix = tile_pixel(tile, warp_row + lane);
  if (npix < NPIX)
    convgen::wg::bulk_store(g_output + (idx_t)npix * K + group * KG + n_tile, s_rows + (unsigned)(lane * OUT_PITCH),
                            (unsigned)(cmin(BLOCK_N, KG - n_tile) * ELEMENT_BYTES));
  convgen::wg::bulk_commit();
}

// Copies this warp's 16 staged rows at s_rows (a generic pointer to shared memory) to the output with the whole warp
// (WARP_COPY_OUTPUT): 16-byte units in row order, a lane each, a shared load and a global store (a row's units
// contiguous in both), after the warp's stmatrix and its barrier. The values are in registers when a store issues, so
// the next tile's stmatrix needs only the warp's barrier, no wait. Bulk copies issue one row at a time (the copy's
// address is uniform: ptxas loops over the lanes' rows), which Nsight Compute found holding the consumer warps for a
// third of their time on ResNet-50's 1 x 1 layers at batch 32 (bench/results/h200/warp-copy-output-2026-12-02/).
// Two units a lane at a time: fully unrolled, ptxas kept every unit's offsets across the main loop and spilled 56-124
// bytes in 34 of 285 kernels of ResNet-50's tunes (tiles of 192 or 256 channels at the register cap) where their
// bulk-copy twins spilled none or less.
__device__ __forceinline__ void copy_warp_rows(const unsigned char* s_rows, element_t* __restrict__ g_output,
                                               const Tile& tile, int warp_row, int n_tile, int group, int lane) {
  __syncwarp();
  const int units = cmin(BLOCK_N, KG - n_tile) / CHUNK;  // this tile's 16-byte units a row (KG % CHUNK == 0)
#pragma unroll 2
  for (int u0 = 0; u0 < 16 * OUT_UNITS; u0 += 32) {
    const int u = u0 + lane;
    const int row = u / OUT_UNITS, unit = u % OUT_UNITS;
    if (u < 16 * OUT_UNITS && unit < units) {
      const int npix = tile_pixel(tile, warp_row + row);
      if (npix < NPIX) {
        const uint4 v = *reinterpret_cast<const uint4*>(s_rows + row * OUT_PITCH + unit * 16);
        *reinterpret_cast<uint4*>(g_output + (idx_t)npix * K + group * KG + n_tile + unit * CHUNK) = v;
      }
    }
  }
}

// Split-K in a cluster: the tile's outputs from the SPLIT_K partial tiles of its cluster, each block adding and storing
// a share of the rows. Every block writes its accumulators as fp32 rows into its own stages' buffers (free once every
// warpgroup's wgmma has read its last operands: the first block barrier), then the cluster barrier makes them visible;
// block `rank` adds rows rank * RANK_ROWS .. + RANK_ROWS - 1 of every block's tile in rank order (the same sums
// whatever the timing), 4 channels a thread (16-byte loads from each block's shared memory), through the epilogue,
// and stores them. The second cluster barrier keeps every block's shared memory until the others have read it.
constexpr int RANK_ROWS = (int)ceil_div(BLOCK_M, CLUSTER_SIZE);
constexpr int QUADS = BLOCK_N / 4;  // 4-channel units of a partial row
constexpr bool QUAD_OUTPUT = K % 4 == 0 && KG % 4 == 0;  // a unit's 4 channels stored at once (8 or 16 bytes)

// Writes this thread's accumulators as fp32 into the block's partial tile in shared memory (s_stages, rows of pixels
// PARTIAL_PITCH bytes apart, a column per channel), after every warpgroup's wgmma has read its last operands.
__device__ __forceinline__ void stage_partial_tile(const float (&r_acc)[ACCUMULATORS], unsigned char* s_stages,
                                                   int warpgroup, int warp, int lane) {
  if (SWAP_AB && warpgroup < WARPGROUPS) {
    // Accumulators 4j + 2 half + e: channel warpgroup_row0 + 16 warp + lane / 4 + 8 half, pixel row warpgroup_col0 +
    // 8j + 2 (lane % 4) + e, written to the partial tile's row (pixel) and column (channel) one at a time.
#pragma unroll
    for (int half = 0; half < 2; ++half) {
      const int channel = warpgroup_row0(warpgroup) + warp * 16 + lane / 4 + 8 * half;
#pragma unroll
      for (int j = 0; j < WG_COLS / 8; ++j)
#pragma unroll
        for (int e = 0; e < 2; ++e) {
          const int row = warpgroup_col0(warpgroup) + j * 8 + 2 * (lane % 4) + e;
          *reinterpret_cast<float*>(s_stages + row * PARTIAL_PITCH + channel * 4) = r_acc[4 * j + 2 * half + e];
        }
    }
  } else if (warpgroup < WARPGROUPS) {  // the producer holds no accumulators
#pragma unroll
    for (int half = 0; half < 2; ++half) {
      const int row = warpgroup_row0(warpgroup) + warp * 16 + lane / 4 + 8 * half;
      const int col0 = warpgroup_col0(warpgroup);
#pragma unroll
      for (int j = 0; j < WG_COLS / 8; ++j) {
        float2 pair;
        pair.x = r_acc[4 * j + 2 * half];
        pair.y = r_acc[4 * j + 2 * half + 1];
        *reinterpret_cast<float2*>(s_stages + row * PARTIAL_PITCH + (col0 + j * 8 + 2 * (lane % 4)) * 4) = pair;
      }
    }
  }
}

__device__ __forceinline__ void cluster_reduce_store(const float (&r_acc)[ACCUMULATORS], const Tile& tile,
                                                     unsigned char* s_stages, element_t* __restrict__ g_output,
                                                     const element_t* __restrict__ g_bias,
                                                     const element_t* __restrict__ g_residual, int tid) {
  namespace wg = convgen::wg;
  const int warpgroup = tid / 128;
  const int warp = (tid % 128) / 32;
  const int lane = tid % 32;
  __syncthreads();  // every warpgroup's wgmma has read its last operands
  stage_partial_tile(r_acc, s_stages, warpgroup, warp, lane);
  wg::cluster_sync();
  const unsigned s_partials = convgen::tc::shared_address(s_stages);
  const int first_row = tile.split * RANK_ROWS;  // the split is the block's rank in its cluster
  for (int u = tid; u < RANK_ROWS * QUADS; u += THREADS) {
    const int row = first_row + u / QUADS;
    const int quad = u % QUADS;
    const int npix = tile.m_tile + row;
    const int col = tile.n_tile + 4 * quad;
    if (row >= BLOCK_M || npix >= NPIX || col >= KG) continue;
    const unsigned s_quad = s_partials + (unsigned)(row * PARTIAL_PITCH + quad * 16);
    float4 parts[CLUSTER_SIZE];
#pragma unroll
    for (int rank = 0; rank < CLUSTER_SIZE; ++rank)
      parts[rank] = wg::cluster_load_float4(wg::cluster_address(s_quad, (unsigned)rank));
    float sum[4] = {0.0f, 0.0f, 0.0f, 0.0f};
#pragma unroll
    for (int rank = 0; rank < CLUSTER_SIZE; ++rank) {
      sum[0] += parts[rank].x;
      sum[1] += parts[rank].y;
      sum[2] += parts[rank].z;
      sum[3] += parts[rank].w;
    }
    const int k = tile.group * KG + col;
    if (QUAD_OUTPUT && col + 3 < KG) {
      float v[4];
#pragma unroll
      for (int e = 0; e < 4; ++e) v[e] = epilogue_at(sum[e], npix, k + e, g_bias, g_residual);
      element_t* out = g_output + (idx_t)npix * K + k;
      if constexpr (IS_TF32) {
        float4 quad_values;
        quad_values.x = v[0];
        quad_values.y = v[1];
        quad_values.z = v[2];
        quad_values.w = v[3];
        *reinterpret_cast<float4*>(out) = quad_values;
      } else {
        uint2 bits;
        bits.x = (unsigned)to_element(v[0]) | ((unsigned)to_element(v[1]) << 16);
        bits.y = (unsigned)to_element(v[2]) | ((unsigned)to_element(v[3]) << 16);
        *reinterpret_cast<uint2*>(out) = bits;
      }
    } else {
#pragma unroll
      for (int e = 0; e < 4; ++e)
        if (col + e < KG)
          g_output[output_offset(npix, k + e)] = to_element(epilogue_at(sum[e], npix, k + e, g_bias, g_residual));
    }
  }
  wg::cluster_sync();
}

// The tile's outputs, through the epilogue (or, with split-K, its partial sums): staged through shared memory
// (STAGED_OUTPUT, BULK_OUTPUT) or stored from the accumulators. Accumulators 4j + 2 half + {0, 1} are pixel row
// warpgroup_row0 + 16 warp + lane / 4 + 8 half, channels warpgroup_col0 + 8j + 2 (lane % 4) + {0, 1} of the block
// tile (wgmma.cuh); the producer warpgroup holds none. s_stages is the first stage's shared memory.
__device__ __forceinline__ void store_tile(const float (&r_acc)[ACCUMULATORS], const Tile& tile,
                                           unsigned char* s_stages, element_t* __restrict__ g_output,
                                           float* __restrict__ g_workspace, const element_t* __restrict__ g_bias,
                                           const element_t* __restrict__ g_residual, int tid) {
  const int warpgroup = tid / 128;
  const int warp = (tid % 128) / 32;  // within the warpgroup
  const int lane = tid % 32;
  const int m_tile = tile.m_tile, n_tile = tile.n_tile, group = tile.group;
  if constexpr (CLUSTER_REDUCE) {
    cluster_reduce_store(r_acc, tile, s_stages, g_output, g_bias, g_residual, tid);
    return;
  }
  if constexpr (BULK_OUTPUT) {
    if (warpgroup == WARPGROUPS) return;  // the producer holds no accumulators
    const int warp_row = warpgroup * 64 + warp * 16;  // this warp's first row of the tile
    const unsigned s_rows =
        convgen::tc::shared_address(s_stages) + (unsigned)(OUTPUT_BUFFER_OFFSET + warp_row * OUT_PITCH);
    // The previous tile's copies must have read these rows: its bulk copies done reading, or the warp's own loads
    // issued (the barrier).
    if (!WARP_COPY_OUTPUT && lane < 16) convgen::wg::bulk_wait_read();
    __syncwarp();
    stage_warp_rows(r_acc, s_rows, tile, warp_row, n_tile, group, lane, g_bias, g_residual);
    if constexpr (WARP_COPY_OUTPUT)
      copy_warp_rows(s_stages + OUTPUT_BUFFER_OFFSET + warp_row * OUT_PITCH, g_output, tile, warp_row, n_tile, group,
                     lane);
    else
      bulk_store_warp_rows(s_rows, g_output, tile, warp_row, n_tile, group, lane);
    return;
  }
  if constexpr (STAGED_OUTPUT) {
    __syncthreads();  // every warpgroup's wgmma has read its last operands
    if constexpr (SWAP_AB) {
      // Accumulators 4j + 2 half + e: channel warpgroup_row0 + 16 warp + lane / 4 + 8 half, pixel row warpgroup_col0 +
      // 8j + 2 (lane % 4) + e; one element a store (a warp's 8 channels of 4 rows two apart: distinct banks).
#pragma unroll
      for (int half = 0; half < 2; ++half) {
        const int channel = warpgroup_row0(warpgroup) + warp * 16 + lane / 4 + 8 * half;  // of the block's tile
        const int col = n_tile + channel;
        if (warpgroup == WARPGROUPS || col >= KG) continue;  // the producer holds no accumulators
        const int k = group * KG + col;
#pragma unroll
        for (int j = 0; j < WG_COLS / 8; ++j) {
#pragma unroll
          for (int e = 0; e < 2; ++e) {
            const int row = warpgroup_col0(warpgroup) + j * 8 + 2 * (lane % 4) + e;
            const int npix = tile_pixel(tile, row);
            if (npix >= NPIX) continue;
            const float v = epilogue_at(r_acc[4 * j + 2 * half + e], npix, k, g_bias, g_residual);
            unsigned char* s_element = s_stages + row * OUT_PITCH + channel * ELEMENT_BYTES;
            if constexpr (IS_TF32)
              *reinterpret_cast<float*>(s_element) = v;
            else
              *reinterpret_cast<unsigned short*>(s_element) = to_element(v);
          }
        }
      }
    } else {
#pragma unroll
      for (int half = 0; half < 2; ++half) {
        const int row = warpgroup_row0(warpgroup) + warp * 16 + lane / 4 + 8 * half;
        const int col0 = warpgroup_col0(warpgroup);
        const int npix = tile_pixel(tile, row);
        if (warpgroup == WARPGROUPS || npix >= NPIX) continue;  // the producer holds no accumulators
#pragma unroll
        for (int j = 0; j < WG_COLS / 8; ++j) {
          const int col = n_tile + col0 + j * 8 + 2 * (lane % 4);
          if (col >= KG) continue;
          const int k = group * KG + col;
          const float v0 = epilogue_at(r_acc[4 * j + 2 * half], npix, k, g_bias, g_residual);
          const float v1 = epilogue_at(r_acc[4 * j + 2 * half + 1], npix, k + 1, g_bias, g_residual);
          unsigned char* s_pair = s_stages + row * OUT_PITCH + (col0 + j * 8 + 2 * (lane % 4)) * ELEMENT_BYTES;
          if constexpr (IS_TF32) {
            float2 pair;
            pair.x = v0;
            pair.y = v1;
            *reinterpret_cast<float2*>(s_pair) = pair;
          } else {
            *reinterpret_cast<unsigned*>(s_pair) = (unsigned)to_element(v0) | ((unsigned)to_element(v1) << 16);
          }
        }
      }
    }
    __syncthreads();
    for (int u = tid; u < BLOCK_M * OUT_UNITS; u += THREADS) {
      const int row = u / OUT_UNITS;
      const int unit = u % OUT_UNITS;
      const int npix = tile_pixel(tile, row);
      const int col = n_tile + unit * CHUNK;
      if (npix >= NPIX || col >= KG) continue;
      *reinterpret_cast<uint4*>(g_output + (idx_t)npix * K + group * KG + col) =
          *reinterpret_cast<const uint4*>(s_stages + row * OUT_PITCH + unit * 16);
    }
    return;
  }
  if constexpr (SWAP_AB) {
    // Split-K's partial sums (the staged output above takes every unsplit swapped tile): transposed into the block's
    // partial tile in the stages' buffers, then copied to the workspace by rows, 4 channels a thread.
    __syncthreads();  // every warpgroup's wgmma has read its last operands
    stage_partial_tile(r_acc, s_stages, warpgroup, warp, lane);
    __syncthreads();
    for (int u = tid; u < BLOCK_M * QUADS; u += THREADS) {
      const int row = u / QUADS;
      const int quad = u % QUADS;
      const int npix = tile_pixel(tile, row);
      const int col = n_tile + 4 * quad;
      if (npix >= NPIX || col >= KG) continue;
      const float4 sums = *reinterpret_cast<const float4*>(s_stages + row * PARTIAL_PITCH + quad * 16);
      float* partials = g_workspace + ((idx_t)tile.split * NPIX + npix) * K + group * KG + col;
      if (QUAD_OUTPUT && col + 3 < KG) {
        *reinterpret_cast<float4*>(partials) = sums;
      } else {
        const float v[4] = {sums.x, sums.y, sums.z, sums.w};
#pragma unroll
        for (int e = 0; e < 4; ++e)
          if (col + e < KG) partials[e] = v[e];
      }
    }
    return;
  }
  if (warpgroup == WARPGROUPS) return;  // the producer holds no accumulators
#pragma unroll
  for (int half = 0; half < 2; ++half) {
    const int npix = tile_pixel(tile, warpgroup_row0(warpgroup) + warp * 16 + lane / 4 + 8 * half);
    if (npix >= NPIX) continue;
#pragma unroll
    for (int j = 0; j < WG_COLS / 8; ++j) {
      const int col = n_tile + warpgroup_col0(warpgroup) + j * 8 + 2 * (lane % 4);
      if (col >= KG) continue;
      const int k = group * KG + col;
      const float v0 = r_acc[4 * j + 2 * half];
      const float v1 = r_acc[4 * j + 2 * half + 1];
      if constexpr (SPLIT_K == 1)
        store_output(g_output, npix, k, v0, v1, col + 1 < KG, g_bias, g_residual);
      else
        store_partials(g_workspace, tile.split, npix, k, v0, v1, col + 1 < KG);
    }
  }
}

}  // namespace igemm_wgmma

// The main entry; with CLUSTER_REDUCE its blocks form clusters of a tile's SPLIT_K splits along the grid's z, with
// MULTICAST of MULTICAST pixel tiles along its x (a cluster of one block otherwise: the same as none).
extern "C" __global__ void __cluster_dims__(igemm_wgmma::MULTICAST, 1, igemm_wgmma::CLUSTER_SIZE)
    __launch_bounds__(igemm_wgmma::THREADS)
    CONVGEN_ENTRY(const igemm_wgmma::element_t* __restrict__ g_activation,
                  const igemm_wgmma::element_t* __restrict__ g_filter, igemm_wgmma::element_t* __restrict__ g_output,
                  float* __restrict__ g_workspace, const igemm_wgmma::element_t* __restrict__ g_bias,
                  const igemm_wgmma::element_t* __restrict__ g_residual,
                  const __grid_constant__ convgen::wg::TensorMap g_filter_map,
                  const igemm_wgmma::element_t* __restrict__ g_padded_activation,
                  const igemm_wgmma::element_t* __restrict__ g_padded_filter,
                  const __grid_constant__ convgen::wg::TensorMap g_activation_map,
                  const igemm_wgmma::element_t* __restrict__ g_packed_values,
                  const unsigned* __restrict__ g_packed_meta) {
  using namespace igemm_wgmma;
  namespace wg = convgen::wg;
  // With padded channels the operands are the plan's padded copies (pad_activation and pad_filter below); with a 2:4
  // filter the filter is its compressed copy (the pack entry below).
  const element_t* __restrict__ activation = PADDED_CHANNELS && !FOLD_ON_LOAD ? g_padded_activation : g_activation;
  const element_t* __restrict__ filter = SPARSE_FILTER ? g_packed_values : PADDED_CHANNELS ? g_padded_filter : g_filter;
  const unsigned s_raw = convgen::tc::shared_address(convgen::tc::dynamic_shared());
  const unsigned s_base = (s_raw + (wg::kAtomBytes - 1)) & ~(unsigned)(wg::kAtomBytes - 1);
  unsigned char* s_out = convgen::tc::dynamic_shared() + (s_base - s_raw);

  const int tid = (int)threadIdx.x;
  const int warpgroup = tid / 128;
  const int lane = tid % 32;
  const unsigned s_filter = s_base + (unsigned)(STAGES * STAGE_BYTES);  // filter-stationary: the whole filter
  const unsigned s_full = s_filter + (unsigned)FILTER_REGION_BYTES;
  const unsigned s_empty = s_full + 8u * STAGES;
  const unsigned s_filter_barrier = s_empty + 8u * STAGES;  // filter-stationary: completes once the filter landed
  if constexpr (PRODUCER_WARPGROUP) {
    if (tid == 0) {
      for (int stage = 0; stage < STAGES; ++stage) {
        wg::barrier_init(s_full + 8u * stage, (unsigned)LOAD_THREADS);
        wg::barrier_init(s_empty + 8u * stage, EMPTY_ARRIVALS);
      }
      if constexpr (FILTER_STATIONARY) wg::barrier_init(s_filter_barrier, 1u);
      if constexpr (TMA_FILTER) wg::barrier_init_fence();
    }
    // With MULTICAST the cluster's blocks copy into this block and arrive on its barriers: all initialized first.
    if constexpr (MULTICAST > 1)
      wg::cluster_sync();
    else
      __syncthreads();
  }
  // Launched early, the block may start while the stream's previous kernel runs (grid_dependency.cuh): up to here
  // it has only set up shared memory; it waits for that kernel before any access to global memory. (It lets the next
  // kernel's blocks start after its last tile's main loop, above.) An L2 prefetch of the first steps' filter rows
  // before the wait (one bulk prefetch a row, a tap's chunk each with `co`) made the kernels without a producer 10%
  // slower and the chunk-major ones 70-90% (bench/results/h200/early-launch-2026-11-30/): none.
  convgen::wait_for_previous_grid();
  convgen::allow_next_grid_at_start();
  if constexpr (PRODUCER_WARPGROUP) {
    if (TMA_FILTER && tid == WARPGROUPS * 128) wg::tensor_map_prefetch(&g_filter_map);
    // Filter-stationary: the producer's first thread loads every chunk of every tap of the (one) channel tile once;
    // the consumers wait for it before their first step.
    if constexpr (FILTER_STATIONARY) {
      if (tid == WARPGROUPS * 128) {
        wg::barrier_expect_bytes(s_filter_barrier, (unsigned)FILTER_REGION_BYTES);
#pragma unroll 1
        for (int piece = 0; piece < C_CHUNKS * RS; ++piece)
          wg::tma_load_2d(s_filter + (unsigned)(piece * B_ATOM_BYTES), &g_filter_map,
                          (piece % RS) * CG + (piece / RS) * ATOM_K, 0, s_filter_barrier);
        wg::barrier_arrive(s_filter_barrier);
      } else if (warpgroup < WARPGROUPS) {
        wg::barrier_wait(s_filter_barrier, 0u);
      }
    }
  }
  if (TMA_ACTIVATION && tid == WARPGROUPS * 128) wg::tensor_map_prefetch(&g_activation_map);

  PipelineState pipe;
  for (int i = 0; i < TILES_PER_BLOCK; ++i) {
    Tile tile;
    if (!block_tile(i, tile)) break;
    float r_acc[ACCUMULATORS];
#pragma unroll
    for (int v = 0; v < ACCUMULATORS; ++v) r_acc[v] = 0.0f;
    if constexpr (HALO) {
      if (warpgroup == WARPGROUPS)
        produce_halo(s_base, s_full, s_empty, activation, &g_filter_map, tile, tid % 128, tile.n_tile, pipe);
      else
        consume_halo(r_acc, s_base, s_full, s_empty, s_filter, warpgroup, lane, tile.steps, pipe,
                     TILES_PER_BLOCK > 1);
    } else if constexpr (PRODUCER_WARPGROUP) {
      if (warpgroup == WARPGROUPS)
        produce(s_base, s_full, s_empty, activation, filter, &g_filter_map, &g_activation_map,
                load_rows(tid % 128, tile.m_tile, tile.n_tile, tile.group, g_packed_meta), tid % 128, tile.group * KG + tile.n_tile,
                tile.m_tile, tile.a_begin, tile.a_end, tile.steps, pipe);
      else
        consume(r_acc, s_base, s_full, s_empty, warpgroup, lane, tile.steps, pipe, TILES_PER_BLOCK > 1);
    } else {
      shared_main_loop(r_acc, s_base, activation, filter,
                       load_rows(tid, tile.m_tile, tile.n_tile, tile.group, g_packed_meta), tid,
                       warpgroup, tile.a_begin, tile.a_end, tile.steps);
    }
    // The last tile's main loop is done (the producer's loads issued): the next kernel may start its blocks (with
    // CONVGEN_NEXT_GRID_AT 1, this template's; with 0 they could from the start, just after the wait).
    if (i + 1 == TILES_PER_BLOCK) convgen::allow_next_grid_after_main_loop();
    store_tile(r_acc, tile, s_out, g_output, g_workspace, g_bias, g_residual, tid);
  }
  // The bulk copies of the last tile read shared memory and write the output after the warp's last instruction:
  // they must be done before the block ends.
  if constexpr (BULK_OUTPUT && !WARP_COPY_OUTPUT)
    if (warpgroup < WARPGROUPS && lane < 16) convgen::wg::bulk_wait();
  // With MULTICAST the other blocks' consumers may still arrive on this block's `empty` barriers.
  if constexpr (MULTICAST > 1) wg::cluster_sync();
}

// Split-K's second pass, as igemm_tc's: output = the sum of the splits' partial sums, in split order, through the
// epilogue, rounded to the data type. One thread per output element, over the partial sums' [npix][K] order.
namespace igemm_wgmma {
constexpr int REDUCE_THREADS = 256;
}

extern "C" __global__ void __launch_bounds__(igemm_wgmma::REDUCE_THREADS)
    CONVGEN_ENTRY_NAMED(reduce)(const float* __restrict__ g_workspace, igemm_wgmma::element_t* __restrict__ g_output,
                                const igemm_wgmma::element_t* __restrict__ g_bias,
                                const igemm_wgmma::element_t* __restrict__ g_residual) {
  using namespace igemm_wgmma;
  if constexpr (SPLIT_K > 1 && !CLUSTER_REDUCE) {  // the plan launches it with split-K through memory; else empty
    convgen::wait_for_previous_grid();             // launched early: the main kernel's partial sums first
    convgen::allow_next_grid();
    const idx_t index = (idx_t)blockIdx.x * REDUCE_THREADS + (idx_t)threadIdx.x;
    if (index >= (idx_t)OUTPUT_ELEMENTS) return;
    float sum = 0.0f;
#pragma unroll 4
    for (int split = 0; split < SPLIT_K; ++split) sum += g_workspace[(idx_t)split * (idx_t)OUTPUT_ELEMENTS + index];
    const int npix = (int)(index / K);
    const int k = (int)(index % K);
    g_output[output_offset(npix, k)] = to_element(epilogue_at(sum, npix, k, g_bias, g_residual));
  }
}

// ---- Padded channels: the operands with C_SOURCE channels copied into C, the rest zero ----------------------------
namespace igemm_wgmma {
constexpr int PAD_THREADS = 256;  // threads per block of pad_activation and pad_filter (16 bytes each)
constexpr long long FILTER_ROWS = (long long)K * TRS;  // rows of CG (padded) channels, one per output channel and tap

constexpr int SOURCE_ROW = C_SOURCE * FOLD_S;  // a filter row's elements: one tap's channels, or FOLD_S taps'
constexpr int SHIFT_ELEMENTS = C_SOURCE * FOLD_SHIFT;  // fw2: the zero taps before a folded filter row's first
}  // namespace igemm_wgmma

// Each call: the activation's N * D * H * W pixel rows (W the folded width: output columns), one thread per 16 bytes
// (CHUNK elements; C is a whole number of them) stored at once: element j of row (n, d, h) and column q is channel
// j % C_SOURCE of input column q * FOLD_STRIDE + (j / C_SOURCE) * FOLD_DIL - FOLD_PAD, zero past the taps or outside
// the input. Not with fw2, whose main entry folds as it loads.
extern "C" __global__ void __launch_bounds__(igemm_wgmma::PAD_THREADS)
    CONVGEN_ENTRY_NAMED(pad_activation)(const igemm_wgmma::element_t* __restrict__ g_activation,
                                        igemm_wgmma::element_t* __restrict__ g_padded_activation) {
  using namespace igemm_wgmma;
  if constexpr (PADDED_CHANNELS && !FOLD_ON_LOAD) {  // launched only where the channels are copied
    convgen::wait_for_previous_grid();  // launched early: the previous kernel's writes (the activation) first
    convgen::allow_next_grid();
    constexpr int UNITS = C / CHUNK;  // 16-byte units of a padded pixel
    const long long u = (long long)blockIdx.x * PAD_THREADS + threadIdx.x;
    if (u >= ACTIVATION_ELEMENTS / CHUNK) return;
    const long long pixel = u / UNITS;
    const int j0 = (int)(u % UNITS) * CHUNK;
    const int q = (int)(pixel % W);
    const long long row = pixel / W;
    union {
      uint4 bits;
      element_t e[CHUNK];
    } unit;
#pragma unroll
    for (int e = 0; e < CHUNK; ++e) {
      const int j = j0 + e;
      const int tap = j / C_SOURCE;
      const int w = q * FOLD_STRIDE + tap * FOLD_DIL - FOLD_PAD;
      unit.e[e] = tap < FOLD_S && w >= 0 && w < W_SOURCE ? g_activation[(row * W_SOURCE + w) * C_SOURCE + j % C_SOURCE]
                                                         : (element_t)0;
    }
    reinterpret_cast<uint4*>(g_padded_activation)[u] = unit.bits;
  }
}

// Once per filter (the plan's setup): the K * T * R * S filter rows (S 1 folded: a row then holds FOLD_S taps, as the
// source filter holds them, contiguous; with fw2 after FOLD_SHIFT zero taps), one thread per 16 bytes.
extern "C" __global__ void __launch_bounds__(igemm_wgmma::PAD_THREADS)
    CONVGEN_ENTRY_NAMED(pad_filter)(const igemm_wgmma::element_t* __restrict__ g_filter,
                                    igemm_wgmma::element_t* __restrict__ g_padded_filter) {
  using namespace igemm_wgmma;
  if constexpr (PADDED_CHANNELS) {  // launched only where the channels are copied
    constexpr int UNITS = C / CHUNK;
    const long long u = (long long)blockIdx.x * PAD_THREADS + threadIdx.x;
    if (u >= FILTER_ROWS * UNITS) return;
    const long long frow = u / UNITS;
    const int j0 = (int)(u % UNITS) * CHUNK;
    union {
      uint4 bits;
      element_t e[CHUNK];
    } unit;
#pragma unroll
    for (int e = 0; e < CHUNK; ++e) {
      const int j = j0 + e - SHIFT_ELEMENTS;  // the element's place in the source row
      unit.e[e] = j >= 0 && j < SOURCE_ROW ? g_filter[frow * SOURCE_ROW + j] : (element_t)0;
    }
    reinterpret_cast<uint4*>(g_padded_filter)[u] = unit.bits;
  }
}

// ---- The 2:4 filter (SPARSE_FILTER): compressed once per filter (the plan's setup), one thread per 16 reduction
// elements of a row (templates/two_four_pack.cuh), into the persistent g_packed_values and g_packed_meta.
namespace igemm_wgmma {
constexpr int PACK_THREADS = 256;
}

extern "C" __global__ void __launch_bounds__(igemm_wgmma::PACK_THREADS)
    CONVGEN_ENTRY_NAMED(pack)(const igemm_wgmma::element_t* __restrict__ g_filter,
                              igemm_wgmma::element_t* __restrict__ g_packed_values,
                              unsigned short* __restrict__ g_packed_meta) {
  using namespace igemm_wgmma;
  if constexpr (SPARSE_FILTER) {  // launched only for a 2:4 filter
    const long long index = (long long)blockIdx.x * PACK_THREADS + threadIdx.x;
    if (index >= convgen::two_four::pack_items<GROUPS, KG_PAD, KR_PAD>()) return;
    convgen::two_four::pack_segment<KG, KR, KG_PAD, KR_PAD, idx_t>(g_filter, g_packed_values, g_packed_meta, index);
  }
}
