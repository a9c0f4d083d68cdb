// igemm_wgmma: the Hopper tensor-core implicit-GEMM family (templates/igemm_wgmma.cu): search space, support checks,
// launch plan (split-K's reduce pass) and costs, for channels-last tf32, fp16 and bf16 problems on compute capability
// 9.0, compiled for sm_90a.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <optional>

#include <fmt/format.h>

#include "convgen/weights.hpp"
#include "generator/family.hpp"
#include "generator/occupancy.hpp"
#include "generator/pixel_gemm.hpp"
#include "generator/ranking.hpp"
#include "generator/render.hpp"
#include "igemm_wgmma_params.hpp"

namespace convgen {
namespace {

constexpr std::int64_t kIntMax = 2147483647;
constexpr std::int64_t kGridYZMax = 65535;
constexpr int kRowBytes = 128;                 // bytes of a shared row
constexpr int kAlignSlack = 1024;              // the dynamic allocation's extra bytes to align the stages to 1,024
constexpr int kReduceThreads = 256;            // threads per block of the reduce entry (REDUCE_THREADS)
// Whether `n` is a block's channel count the template instantiates (templates/wgmma.cuh: a wgmma N that is a multiple
// of 16 up to 256).
bool is_block_n(int n) { return n % 16 == 0 && n >= 16 && n <= 256; }
// The channel counts the search space tries for every tile, in that order; the others come as wave-filling twins.
constexpr std::array kBlockNs = {128, 64, 256, 32, 16, 96, 192};

// The convolution as per-group GEMMs: M = pixels, N = output channels (generator/pixel_gemm.hpp), with the output's
// images, rows and columns and the filter's rows and columns, which the halo's spatial tiles (`hl`) need.
struct Gemm : PixelGemm {
  std::int64_t images = 1;
  int out_h = 1, out_w = 1, filter_h = 1, filter_w = 1;
};

Gemm gemm_of(const Problem& p) {
  Gemm g;
  static_cast<PixelGemm&>(g) = pixel_gemm(p);
  const Dims3 out = output_dims(p);
  g.images = std::int64_t{p.n} * out.d;
  g.out_h = out.h;
  g.out_w = out.w;
  g.filter_h = p.filter.h;
  g.filter_w = p.filter.w;
  return g;
}

bool serves_precision(Precision precision) {
  return precision == Precision::tf32 || precision == Precision::fp16 || precision == Precision::bf16;
}

// The data type's element sizes (ELEMENT_BYTES, and from it the template's CHUNK, ATOM_K and MMA_K).
int element_bytes(const Problem& p) { return p.precision == Precision::tf32 ? 4 : 2; }
int chunk_of(const Problem& p) { return 16 / element_bytes(p); }          // elements per 16-byte load (CHUNK)
int atom_k_of(const Problem& p) { return kRowBytes / element_bytes(p); }  // elements of a swizzled row (ATOM_K)
int mma_k_of(const Problem& p) { return 32 / element_bytes(p); }          // reduction elements per wgmma (MMA_K)

std::int64_t ceil_div(std::int64_t a, std::int64_t b) { return (a + b - 1) / b; }

// The warpgroups that multiply (WARPGROUPS): one per 64 pixels, two with `wn` (each half the block's channels); with
// `sw` (the operands swapped) one per 64 channels, two with `wn` (each half the block's pixels).
int multiplying_warpgroups(const IgemmWgmmaParams& s) {
  return (s.swap_ab ? s.block_n : s.block_m) / 64 * (s.split_n ? 2 : 1);
}

// The channels each multiplying warpgroup owns, its wgmma's N (WG_COLS); with `sw` the pixels.
int warpgroup_cols(const IgemmWgmmaParams& s) { return (s.swap_ab ? s.block_m : s.block_n) / (s.split_n ? 2 : 1); }

// The multiplying warpgroups and, warp-specialized, one more, the producer (THREADS).
int threads_of(const IgemmWgmmaParams& s) {
  return 128 * (multiplying_warpgroups(s) + (s.warp_specialized ? 1 : 0));
}

// Output tiles a block computes in turn (TILES_PER_BLOCK): ws2-ws8 that many, the producer loading the next tile
// while the consumers store this one.
int tiles_per_block(const IgemmWgmmaParams& s) { return s.warp_specialized > 1 ? s.warp_specialized : 1; }
constexpr int kMostTilesPerBlock = 8;

// The threads that issue the loads (LOAD_THREADS), and the pixel and filter rows each one keeps (A_ROWS, B_ROWS).
int load_threads_of(const IgemmWgmmaParams& s) { return s.warp_specialized ? 128 : threads_of(s); }
int activation_rows_of(const IgemmWgmmaParams& s) { return s.block_m / (load_threads_of(s) / 8); }
int filter_rows_of(const IgemmWgmmaParams& s) { return static_cast<int>(ceil_div(s.block_n, load_threads_of(s) / 8)); }

// Reduction elements per step (BLOCK_K): K_ATOMS swizzled rows of atom_k elements.
int block_k_of(int atom_k, const IgemmWgmmaParams& s) { return atom_k * s.k_atoms; }

// The reduction's K atoms of atom_k elements (ATOMS): the flat reduction cut in atom_k's (tap-major), or every tap of
// every atom_k-channel chunk (chunk-major, each chunk padded to atom_k).
int atoms_of(const Gemm& g, int atom_k, const IgemmWgmmaParams& s) {
  const int channels = g.kr / std::max(g.taps, 1);
  return static_cast<int>(s.chunk_major ? ceil_div(channels, atom_k) * g.taps : ceil_div(g.kr, atom_k));
}

// Atoms per split (SPLIT_ATOMS): whole steps.
int split_atoms(const Gemm& g, int atom_k, const IgemmWgmmaParams& s) {
  return static_cast<int>(ceil_div(ceil_div(atoms_of(g, atom_k, s), s.split_k), s.k_atoms) * s.k_atoms);
}

// Reduction elements per split, the padding of chunk-major chunks included.
int split_chunk(const Gemm& g, int atom_k, const IgemmWgmmaParams& s) { return split_atoms(g, atom_k, s) * atom_k; }

// Whether the kernel's output leaves through a buffer of its own (BULK_OUTPUT): several tiles a block, a 16-bit output
// not split, its 8-channel runs 16-byte aligned (the channels and the group's channels multiples of 8).
bool bulk_output(const Problem& p, const IgemmWgmmaParams& s) {
  const int chunk = chunk_of(p);
  return tiles_per_block(s) > 1 && element_bytes(p) == 2 && s.split_k == 1 && p.k % chunk == 0 &&
         (p.k / std::max(p.groups, 1)) % chunk == 0;
}

// The halo (`hl`): a tile of 8 output rows by 8 columns a multiplying warpgroup; a stage holds a 64-channel chunk (tf32
// 32) of the patch of input pixels its taps read, PATCH_H rows by PATCH_W columns (the columns it reads,
// PATCH_W_USED, padded to whole 8-pixel atoms), and the chunk's filter rows of every tap (templates/igemm_wgmma.cu).
constexpr int kHaloTileH = 8;
int halo_tile_w(const IgemmWgmmaParams& s) { return 8 * (s.block_m / 64); }
int patch_w_used(const Gemm& g, const IgemmWgmmaParams& s) { return halo_tile_w(s) + g.filter_w - 1; }
int patch_pixels(const Gemm& g, const IgemmWgmmaParams& s) {
  return (kHaloTileH + g.filter_h - 1) * static_cast<int>(ceil_div(patch_w_used(g, s), 8) * 8);
}
int patch_pixels_used(const Gemm& g, const IgemmWgmmaParams& s) {
  return (kHaloTileH + g.filter_h - 1) * patch_w_used(g, s);
}

// A stage's bytes (STAGE_BYTES): K_ATOMS swizzled rows of 128 bytes for each pixel and each channel of the block; with
// the halo the patch's pixels and every tap's channels.
// With a 2:4 filter (`sp`, two K atoms a step) the compressed filter rows are one atom, and the metadata of each
// 16-row tile's four k32 slices 256 bytes.
int stage_bytes(const Gemm& g, const IgemmWgmmaParams& s) {
  if (s.halo == 2) return patch_pixels(g, s) * kRowBytes;  // filter-stationary: the filter has its own region
  if (s.halo) return (patch_pixels(g, s) + g.taps * s.block_n) * kRowBytes;
  if (s.sparse_filter) return (s.block_m * s.k_atoms + s.block_n) * kRowBytes + s.block_n / 16 * 256;
  return (s.block_m + s.block_n) * kRowBytes * s.k_atoms;
}

// The tiles of output pixels: block_m pixels each, or with the halo 8 rows by halo_tile_w columns of one image.
std::int64_t pixel_tiles(const Gemm& g, const IgemmWgmmaParams& s) {
  if (s.halo) return g.images * ceil_div(g.out_h, kHaloTileH) * ceil_div(g.out_w, halo_tile_w(s));
  return ceil_div(g.m, s.block_m);
}

// Split-K in a cluster (`cr`): the blocks of a tile's splits form one cluster, at most 8 (portable); each writes its
// fp32 partial tile into its stages, rows of BLOCK_N floats and 32 bytes (PARTIAL_PITCH), for the others to read.
constexpr int kMostClusterBlocks = 8;
int partial_pitch(const IgemmWgmmaParams& s) { return s.block_n * 4 + 32; }

// Whether the activation is the GEMM's A as it lies, an NPIX x C row-major matrix that TMA can read in boxes (`ta`):
// one tap, stride 1, no padding, one group (the problem the kernel computes: channels already whole 16-byte loads).
bool activation_is_a_matrix(const Problem& p) {
  return p.filter.d == 1 && p.filter.h == 1 && p.filter.w == 1 && p.stride.d == 1 && p.stride.h == 1 &&
         p.stride.w == 1 && p.padding.d == 0 && p.padding.h == 0 && p.padding.w == 0 && p.groups == 1;
}

// Why the pixel rows cannot come by TMA in im2col mode (`ta2`), if they cannot: the activation's map is 4-D (C, W, H,
// N), so 2-D problems only; each K atom one tap's copy, so chunk-major or whole 128-byte rows of channels a tap, and
// with groups whole rows a group (a chunk must not reach the next group's channels); the map's bounding box corners
// (-padding, and padding less the filter's reach) within [-128, 127] and the taps' offsets within [0, 255] (8 bits
// each in a 4-D im2col copy).
std::optional<std::string> im2col_reason(const Problem& p, const IgemmWgmmaParams& s) {
  if (p.input.d != 1 || p.filter.d != 1 || p.padding.d != 0)
    return "ta2 (the pixel rows by TMA in im2col mode) serves 2-D problems only";
  const int atom_k = atom_k_of(p);
  if (!s.chunk_major && c_per_group(p) % atom_k != 0)
    return fmt::format("ta2 (im2col) reads one tap's channels an atom: chunk-major (co1), or channels per group a "
                       "multiple of {} (whole 128-byte rows), got {}",
                       atom_k, c_per_group(p));
  if (p.groups > 1 && c_per_group(p) % atom_k != 0)
    return fmt::format("ta2 (im2col) with groups needs channels per group a multiple of {}, got {}", atom_k,
                       c_per_group(p));
  if (s.halo) return "ta2 (im2col) and hl (halo) load the pixels each their own way: not both";
  const int reach_h = (p.filter.h - 1) * p.dilation.h, reach_w = (p.filter.w - 1) * p.dilation.w;
  for (const int corner : {-p.padding.h, -p.padding.w, p.padding.h - reach_h, p.padding.w - reach_w})
    if (corner < -128 || corner > 127)
      return fmt::format("ta2 (im2col): the bounding box's corners (padding {} x {}, the filter's reach {} x {}) must "
                         "lie within [-128, 127]",
                         p.padding.h, p.padding.w, reach_h, reach_w);
  if (reach_h > 255 || reach_w > 255)
    return fmt::format("ta2 (im2col): the filter's reach {} x {} exceeds a copy's 8-bit offsets", reach_h, reach_w);
  return std::nullopt;
}

// Whether the halo (`hl`) serves the problem: 2-D, stride and dilation 1, one group, channels whole 128-byte rows.
bool halo_serves(const Problem& p) {
  return p.input.d == 1 && p.filter.d == 1 && p.stride.h == 1 && p.stride.w == 1 && p.dilation.h == 1 &&
         p.dilation.w == 1 && p.groups == 1 && p.c % atom_k_of(p) == 0;
}

// Whether the search splits `tiles` blocks of `steps` steps `split_k` ways: while the split blocks stay under two
// waves of the GPU's SMs and every split keeps two steps (the dense and the 2:4 searches alike).
bool split_pays(std::int64_t tiles, std::int64_t steps, int split_k, int sm_count) {
  return tiles * (split_k / 2) < 2 * std::int64_t{sm_count} && ceil_div(steps, split_k) >= 2;
}

// Whether split-K goes through a workspace and a reduce pass (not in a cluster).
bool reduce_pass(const IgemmWgmmaParams& s) { return s.split_k > 1 && !s.cluster_reduce; }

// What the main kernel's stores need of the output's address (templates/igemm_wgmma.cu): unsplit with channels in
// whole 16-byte runs, 16 bytes (its staged, bulk and swapped tiles; else its pairs, within that); unsplit otherwise,
// two channels a store where K and KG are even; split in a cluster, four channels a store where they are multiples of
// 4 (QUAD_OUTPUT); through a reduce pass, one element at a time.
int output_alignment(const Problem& p, const IgemmWgmmaParams& s) {
  const int kg = p.k / p.groups;
  const auto multiple = [&](int n) { return p.k % n == 0 && kg % n == 0; };
  if (s.split_k == 1) return multiple(chunk_of(p)) ? 16 : multiple(2) ? 2 * element_bytes(p) : 0;
  if (s.cluster_reduce) return multiple(4) ? 4 * element_bytes(p) : 0;
  return 0;
}

// With the filter-stationary halo (`hl2`) the block's whole filter, every chunk of every tap's block_n rows, lies after
// the stages (FILTER_REGION_BYTES).
int filter_region_bytes(const Problem& p, const IgemmWgmmaParams& s) {
  if (s.halo != 2) return 0;
  return static_cast<int>(ceil_div(c_per_group(p), atom_k_of(p))) * p.filter.h * p.filter.w * s.block_n * kRowBytes;
}

// The stages, the alignment slack, the warp-specialized pipeline's two mbarriers per stage and the output buffer
// (BLOCK_M rows of BLOCK_N elements and 16 bytes) where there is one (SMEM_BYTES).
int smem_bytes(const Problem& p, const IgemmWgmmaParams& s) {
  return s.stages * stage_bytes(gemm_of(p), s) + filter_region_bytes(p, s) + kAlignSlack +
         (s.warp_specialized ? 2 * 8 * s.stages + (s.halo == 2 ? 16 : 0) : 0) +
         (bulk_output(p, s) ? s.block_m * (s.block_n * element_bytes(p) + 16) : 0);
}

// Registers per thread, roughly. Shared pipeline: BLOCK_N / 2 accumulators, the filter rows (2 each) and ~30 for the
// four pixel rows, addresses, descriptors and loop state (ptxas on sm_90a used 47-160 for the 32 tiles of a
// 128-channel layer, 2-17 more than this where the filter rows are many; it fits 192 x 256 in 164). Warp-specialized:
// one kernel, so the larger of a consumer's (the accumulators and ~30) and the producer's (~5 per pixel row, 2 per
// filter row and ~20; with the halo none). ptxas decides; this only prunes what cannot fit.
int register_estimate(const IgemmWgmmaParams& s) {
  // With `sw` the shared pipeline's threads are one warpgroup per 64 channels: each may keep many more pixel rows.
  if (!s.warp_specialized && s.swap_ab)
    return warpgroup_cols(s) / 2 + 5 * activation_rows_of(s) + 2 * filter_rows_of(s) + 20;
  if (!s.warp_specialized) return warpgroup_cols(s) / 2 + filter_rows_of(s) * 2 + 30;
  // The halo's producer keeps no rows: it walks the patch.
  if (s.halo) return warpgroup_cols(s) / 2 + 30;
  return std::max(warpgroup_cols(s) / 2 + 30, 5 * activation_rows_of(s) + 2 * filter_rows_of(s) + 20);
}

// Blocks of this configuration an SM holds at once.
int resident_blocks(const Gpu& gpu, const Problem& p, const IgemmWgmmaParams& s) {
  return resident_blocks_per_sm(gpu, threads_of(s), register_estimate(s), smem_bytes(p, s));
}

// The output tiles, over the groups and the splits of the reduction.
std::int64_t tiles_of(const Gemm& g, const IgemmWgmmaParams& s) {
  return pixel_tiles(g, s) * ceil_div(g.n, s.block_n) * g.groups * s.split_k;
}

// One block a tile: pixels, channels, and groups x splits; with more tiles a block, a row of blocks. With `mc` the
// pixel tiles are rounded up to whole clusters (the last cluster's extra blocks copy their share of the filter and
// store nothing).
std::array<unsigned, 3> grid_of(const Gemm& g, const IgemmWgmmaParams& s) {
  if (tiles_per_block(s) > 1) return {static_cast<unsigned>(ceil_div(tiles_of(g, s), tiles_per_block(s))), 1, 1};
  const std::int64_t multicast = std::max(s.multicast, 1);
  return {static_cast<unsigned>(ceil_div(pixel_tiles(g, s), multicast) * multicast),
          static_cast<unsigned>(ceil_div(g.n, s.block_n)), static_cast<unsigned>(g.groups * s.split_k)};
}

std::int64_t blocks_of(const Gemm& g, const IgemmWgmmaParams& s) {
  const auto grid = grid_of(g, s);
  return std::int64_t{grid[0]} * grid[1] * grid[2];
}

// The problem the kernel computes: an ungrouped problem's channels padded up to a whole number of 16-byte loads
// (templates/igemm_wgmma.cu: the prelude's C, C_SOURCE the tensors' own; its pad_filter and pad_activation entries
// write the padded copies), else the problem itself.
Problem padded_channels(const Problem& p) {
  Problem q = p;
  if (p.groups == 1 && serves_precision(p.precision)) q.c = static_cast<int>(ceil_div(p.c, chunk_of(p)) * chunk_of(p));
  return q;
}

bool pads_channels(const Problem& p) { return padded_channels(p).c != p.c; }

// Whether `fw` can fold the filter's width into the channels: an ungrouped problem with fewer channels than one
// 16-byte load (an image's 3: most of each padded load is zeros) and a filter wider than one tap. With more channels
// folding saves few loads and multiplies the copy the pass writes by the filter's width.
bool folds_width(const Problem& p) { return pads_channels(p) && p.c < chunk_of(p) && p.filter.w > 1; }

// `fw2` (the width folded as the pixel rows are loaded, by copies of each window's run): the zero taps each window
// starts with and the copies' width (8 or 4 bytes) such that every window starts and ends on a whole copy and the
// stride and a row are whole copies; 8 bytes where that needs no more folded channels than 4 do. Nothing where no
// shift of fewer than 4 taps aligns even 4 bytes, or the run is not contiguous (a dilation)
// (templates/igemm_wgmma.cu).
struct FoldCopies {
  int shift;  // FOLD_SHIFT
  int bytes;  // FOLD_COPY_BYTES
};

std::optional<FoldCopies> fold_copies(const Problem& p) {
  const std::int64_t column = std::int64_t{p.c} * element_bytes(p);  // bytes of one input column's channels
  if (p.dilation.w != 1) return std::nullopt;
  const auto aligned = [&](int bytes) -> std::optional<FoldCopies> {
    if (column * p.stride.w % bytes != 0 || column * p.input.w % bytes != 0) return std::nullopt;
    for (int shift = 0; shift < 4; ++shift)
      if (column * (p.padding.w + shift) % bytes == 0 && column * (p.filter.w + shift) % bytes == 0)
        return FoldCopies{shift, bytes};
    return std::nullopt;
  };
  const std::optional<FoldCopies> four = aligned(4), eight = aligned(8);
  const auto channels = [&](const FoldCopies& f) { return ceil_div(p.c * (p.filter.w + f.shift), chunk_of(p)); };
  if (eight && (!four || channels(*eight) <= channels(*four))) return eight;
  return four;
}

// The shift and copy width configuration `s` renders: fold_copies' with fw2, none and 4 bytes (the template's
// defaults, unused) otherwise.
FoldCopies copies_of(const Problem& p, const IgemmWgmmaParams& s) {
  constexpr FoldCopies kUnused{.shift = 0, .bytes = 4};
  return s.fold_width == 2 ? fold_copies(p).value_or(kUnused) : kUnused;
}

// The folded problem (`fw`): each output column's S input columns (fw2: after `shift` more) side by side as S x C
// channels (padded to whole loads) of an input as wide as the output, with a filter one tap wide: stride 1, no
// padding, dilation 1 along the width; the rest as it was. A filter row's S taps x C channels lie contiguous in the
// channels-last filter already.
Problem folded_width(const Problem& p, int shift = 0) {
  Problem q = p;
  const std::int64_t taps_channels = std::int64_t{p.c} * (p.filter.w + shift);
  q.c = static_cast<int>(ceil_div(taps_channels, chunk_of(p)) * chunk_of(p));
  q.input.w = output_dims(p).w;
  q.filter.w = 1;
  q.stride.w = 1;
  q.padding.w = 0;
  q.dilation.w = 1;
  return q;
}

// The problem a configuration's main kernel computes: the folded one with `fw`, else the padded one.
Problem computed_problem(const Problem& p, const IgemmWgmmaParams& s) {
  if (s.fold_width == 2) return folded_width(p, copies_of(p, s).shift);
  return s.fold_width ? folded_width(p) : padded_channels(p);
}

// Whether the plan copies the operands (padded channels, or a folded width) before the main kernel reads them.
bool copies_operands(const Problem& p, const IgemmWgmmaParams& s) { return s.fold_width || pads_channels(p); }

// Whether each call copies the activation first (pad_activation): padded channels or fw1, not fw2 (folds as it loads).
bool copies_activation(const Problem& p, const IgemmWgmmaParams& s) {
  return s.fold_width != 2 && copies_operands(p, s);
}

constexpr int kPadThreads = 256;  // threads per block of pad_activation and pad_filter (PAD_THREADS), 16 bytes each

// The problem-level reasons it cannot be served at all, whatever the configuration.
std::optional<std::string> problem_reason(const Problem& p, const Gpu& gpu) {
  if (std::string reason = validate(p); !reason.empty()) return "invalid problem: " + reason;
  if (!serves_precision(p.precision))
    return fmt::format("precision {} is not supported by igemm_wgmma (tf32, fp16 and bf16 only)", p.precision);
  if (!has_wgmma(gpu))
    return fmt::format("igemm_wgmma needs wgmma (compute capability 9.0, compiled for sm_90a), the gpu is {}",
                       gpu.arch);
  if (!channels_last(p.layout))
    return fmt::format("igemm_wgmma serves channels-last layouts only, got {} (igemm_tc serves it)", p.layout);
  if (p.groups > 1 && c_per_group(p) % chunk_of(p) != 0)
    return fmt::format("igemm_wgmma needs channels per group to be a multiple of {} in {} (16-byte loads) where there "
                       "are groups (ungrouped channels are padded), got {}",
                       chunk_of(p), p.precision, c_per_group(p));
  const Problem q = padded_channels(p);
  const Gemm g = gemm_of(q);
  if (g.m > kIntMax) return fmt::format("output pixels N*O*P*Q = {} exceed 2^31 - 1", g.m);
  if (filter_elements(q) > kIntMax) return fmt::format("filter elements {} exceed 2^31 - 1", filter_elements(q));
  if (pads_channels(p) && ceil_div(activation_elements(q) / chunk_of(p), kPadThreads) > kIntMax)
    return fmt::format("the padded activation's {} elements exceed pad_activation's grid", activation_elements(q));
  return std::nullopt;
}

// The reasons one configuration cannot run a servable problem.
std::optional<std::string> spec_reason(const Problem& p, const Gpu& gpu, const IgemmWgmmaParams& s) {
  if (s.swap_ab ? !is_block_n(s.block_m) : s.block_m != 64 && s.block_m != 128 && s.block_m != 192 && s.block_m != 256)
    return s.swap_ab ? fmt::format("block_m with sw (the wgmma's N) must be a multiple of 16 from 16 to 256, got {}",
                                   s.block_m)
                     : fmt::format("block_m must be 64, 128, 192 or 256 (warpgroups of 64 pixels), got {}", s.block_m);
  if (!is_block_n(s.block_n)) return fmt::format("block_n must be a multiple of 16 from 16 to 256, got {}", s.block_n);
  if (s.k_atoms != 1 && s.k_atoms != 2) return fmt::format("k_atoms must be 1 or 2, got {}", s.k_atoms);
  if (s.stages < (s.halo ? 2 : 3) || s.stages > 6)
    return fmt::format("stages must be 3 to 6 (2 to 6 with hl), got {}", s.stages);
  if (s.split_k < 1 || s.split_k > 32) return fmt::format("split_k must be 1 to 32, got {}", s.split_k);
  if (s.warp_specialized < 0 || s.warp_specialized > kMostTilesPerBlock)
    return fmt::format("ws must be 0 (shared pipeline), 1 (warp-specialized) or 2 to {} (warp-specialized, that many "
                       "tiles a block), got {}",
                       kMostTilesPerBlock, s.warp_specialized);
  if (s.tma_filter && !s.warp_specialized)
    return "tma (the filter tile by TMA) needs the warp-specialized pipeline (ws1)";
  if (s.cluster_reduce && (s.split_k < 2 || s.split_k > kMostClusterBlocks))
    return fmt::format("cr (split-K in a cluster) needs split_k 2 to {} (a portable cluster), got {}",
                       kMostClusterBlocks, s.split_k);
  if (s.cluster_reduce && tiles_per_block(s) > 1)
    return fmt::format("cr (split-K in a cluster) needs one tile a block (ws0 or ws1), got ws{}", s.warp_specialized);
  if (s.split_n && tiles_per_block(s) > 1)
    return fmt::format("wn (two warpgroups a 64-pixel row block, each half the channels) needs one tile a block (ws0 "
                       "or ws1), got ws{}",
                       s.warp_specialized);
  if (s.split_n && (s.block_n % 2 != 0 || !is_block_n(s.block_n / 2)))
    return fmt::format("wn needs half the block's channels to be a wgmma N (a multiple of 16), got {} / 2", s.block_n);
  if (s.tma_activation < 0 || s.tma_activation > 2)
    return fmt::format("ta must be 0, 1 (the pixel rows by TMA, tiled) or 2 (by TMA in im2col mode), got {}",
                       s.tma_activation);
  if (s.tma_activation && !s.tma_filter)
    return "ta (the pixel rows by TMA) needs the filter by TMA too (tma1)";
  if (s.tma_activation == 2) {
    if (std::optional<std::string> reason = im2col_reason(p, s)) return reason;
  } else if (s.tma_activation && !activation_is_a_matrix(p))
    return "ta (the pixel rows by TMA) needs an ungrouped 1 x 1 problem of stride 1 and no padding, whose activation "
           "is the GEMM's pixel-by-channel matrix";
  if (s.tma_activation == 1 && s.chunk_major)
    return "ta (the pixel rows by TMA) reads the reduction tap-major only (co0)";
  if (s.multicast != 1 && s.multicast != 2 && s.multicast != 4)
    return fmt::format("mc (filter multicast) must be 1, 2 or 4 blocks a cluster, got {}", s.multicast);
  if (s.multicast > 1 && (!s.tma_filter || tiles_per_block(s) > 1 || s.cluster_reduce))
    return "mc (filter multicast) needs the filter by TMA (tma1), one tile a block (ws1) and no split-K cluster (cr0)";
  if (s.multicast > 1 && s.block_n % (8 * s.multicast) != 0)
    return fmt::format(
        "mc{} (filter multicast) needs block_n to be a multiple of {} (whole 8-row atoms a share), got {}", s.multicast,
        8 * s.multicast, s.block_n);
  const Gemm g = gemm_of(p);
  if (s.cluster_reduce && s.block_m * partial_pitch(s) > s.stages * stage_bytes(g, s))
    return fmt::format("cr (split-K in a cluster): the fp32 partial tile's {} bytes exceed the {} stages' {}",
                       s.block_m * partial_pitch(s), s.stages, s.stages * stage_bytes(g, s));
  if (s.swap_ab && s.split_k > 1 && s.block_m * partial_pitch(s) > s.stages * stage_bytes(g, s))
    return fmt::format("sw (the operands swapped) split: the fp32 partial tile's {} bytes exceed the {} stages' {}",
                       s.block_m * partial_pitch(s), s.stages, s.stages * stage_bytes(g, s));
  if (s.halo && (!s.tma_filter || s.warp_specialized < 1 || s.k_atoms != 1 || s.split_k != 1 || s.chunk_major ||
                 s.cluster_reduce || s.tma_activation || s.split_n || s.multicast != 1))
    return "hl (halo) needs ws1-ws8, tma1, kb1, sk1 and none of co, cr, ta, wn and mc";
  if (s.halo < 0 || s.halo > 2) return fmt::format("hl must be 0, 1 or 2, got {}", s.halo);
  if (s.halo == 2 && k_per_group(p) > s.block_n)
    return fmt::format("hl2 (the filter-stationary halo) needs the output channels within one channel tile: {} > "
                       "block_n {}",
                       k_per_group(p), s.block_n);
  if (s.halo && !halo_serves(p))
    return fmt::format("hl (halo) needs a 2-D ungrouped problem of stride and dilation 1 whose channels are a multiple "
                       "of {} (whole 128-byte rows)",
                       atom_k_of(p));
  if (s.swap_ab) {
    if (s.block_n % 64 != 0)
      return fmt::format("sw (the operands swapped) needs block_n to be a multiple of 64 (the wgmma's M), got {}",
                         s.block_n);
    if (tiles_per_block(s) > 1 || s.multicast != 1 || s.halo)
      return "sw (the operands swapped) needs one tile a block (ws0 or ws1) and none of mc and hl";
    if (s.split_n && (s.block_m % 2 != 0 || !is_block_n(s.block_m / 2)))
      return fmt::format("sw with wn needs half the block's pixels to be a wgmma N (a multiple of 16), got {} / 2",
                         s.block_m);
    const int chunk = chunk_of(p);
    if (p.k % chunk != 0 || k_per_group(p) % chunk != 0)
      return fmt::format("sw (the operands swapped) stages its output in 16-byte runs of channels: K {} and K per "
                         "group {} must be multiples of {}",
                         p.k, k_per_group(p), chunk);
    if (s.split_k == 1 && s.block_m * (s.block_n * element_bytes(p) + 16) > s.stages * stage_bytes(g, s))
      return fmt::format("sw (the operands swapped): the {} staged output rows exceed the {} stages' buffers",
                         s.block_m, s.stages);
    if (s.block_m % (load_threads_of(s) / 8) != 0)
      return fmt::format("sw (the operands swapped): {} pixel rows do not divide among {} loading threads (8 a row)",
                         s.block_m, load_threads_of(s));
  }
  if (s.warp_copy_output && !bulk_output(p, s))
    return "oc (the warp copying its staged rows out) needs the output buffer: several tiles a block (ws2-ws8), a "
           "16-bit output not split, and K and K per group multiples of 8";
  if (s.sparse_filter) {
    if (p.precision != Precision::fp16 && p.precision != Precision::bf16)
      return fmt::format("sp (the 2:4 filter, wgmma.sp) serves fp16 and bf16, got {}", p.precision);
    if (!s.swap_ab || s.k_atoms != 2 || s.tma_filter || s.chunk_major || s.tma_activation || s.fold_width)
      return "sp (the 2:4 filter, wgmma.sp) needs sw1 (the filter the wgmma's A) and kb2, and none of tma, co, ta and "
             "fw";
  }
  const int atom_k = atom_k_of(p);
  // Every split must own part of the reduction (an empty split would only add work).
  if (std::int64_t{s.split_k - 1} * split_atoms(g, atom_k, s) >= atoms_of(g, atom_k, s))
    return fmt::format("split_k {} leaves splits without work: the reduction length {} gives {} steps of {}", s.split_k,
                       g.kr, ceil_div(atoms_of(g, atom_k, s), s.k_atoms), block_k_of(atom_k, s));
  if (tiles_per_block(s) > 1 && ceil_div(tiles_of(g, s), tiles_per_block(s)) > kIntMax)
    return fmt::format("{} blocks of {} tiles exceed the grid's x limit", ceil_div(tiles_of(g, s), tiles_per_block(s)),
                       tiles_per_block(s));
  if (ceil_div(g.n, s.block_n) > kGridYZMax)
    return fmt::format("{} tiles of output channels exceed the grid's y limit of 65535", ceil_div(g.n, s.block_n));
  if (std::int64_t{g.groups} * s.split_k > kGridYZMax)
    return fmt::format("groups {} times split_k {} exceed the grid's z limit of 65535", g.groups, s.split_k);
  if (reduce_pass(s) && ceil_div(output_elements(p), kReduceThreads) > kIntMax)
    return fmt::format("{} outputs exceed the reduce pass's grid", output_elements(p));
  const int threads = threads_of(s);
  if (threads > gpu.max_threads_per_block)
    return fmt::format("{} threads per block exceed the gpu's {}", threads, gpu.max_threads_per_block);
  if (smem_bytes(p, s) > max_smem_per_block_bytes(gpu))
    return fmt::format("{} bytes of shared memory per block exceed the gpu's {}", smem_bytes(p, s),
                       max_smem_per_block_bytes(gpu));
  const int regs = register_estimate(s);
  if (regs > gpu.max_regs_per_thread)
    return fmt::format("about {} registers per thread exceed the gpu's {}", regs, gpu.max_regs_per_thread);
  if (gpu.regs_per_block > 0 && regs * threads > gpu.regs_per_block)
    return fmt::format("about {} registers per block ({} threads of {}) exceed the gpu's {}", regs * threads, threads,
                       regs, gpu.regs_per_block);
  return std::nullopt;
}

IgemmWgmmaParams params_of(int block_m, int block_n, int k_atoms, int stages, int split_k, bool chunk_major,
                           int warp_specialized) {
  return {.block_m = block_m,
          .block_n = block_n,
          .k_atoms = k_atoms,
          .stages = stages,
          .split_k = split_k,
          .chunk_major = chunk_major,
          .warp_specialized = warp_specialized,
          .tma_filter = false};
}

// The filter rows of one TMA copy: the block's channels, or with `mc` each block's share of them.
int filter_box_rows(const IgemmWgmmaParams& s) { return s.block_n / std::max(s.multicast, 1); }

// The tensor map the `tma` pipeline's filter copies read (templates/igemm_wgmma.cu, load_filter_tma): the filter
// (K rows of KR = taps x CG elements) as a K x KR matrix, boxes of atom_k elements (128 bytes) by BLOCK_N rows; chunk-
// major as K x taps x CG, boxes of atom_k channels of one tap by BLOCK_N rows (channels past CG arrive as zeros);
// with `mc` boxes of BLOCK_N / mc rows, each block's share.
TensorMapSpec filter_map_of(const Problem& p, const IgemmWgmmaParams& s) {
  const Gemm g = gemm_of(p);
  const std::int64_t bytes = element_bytes(p);
  const std::int64_t cg = g.kr / std::max(g.taps, 1);
  TensorMapSpec map;
  map.type = p.precision == Precision::tf32   ? TensorMapSpec::Type::float32
             : p.precision == Precision::bf16 ? TensorMapSpec::Type::bfloat16
                                              : TensorMapSpec::Type::float16;
  if (s.chunk_major) {
    map.rank = 3;
    map.dims = {cg, g.taps, p.k, 1, 1};
    map.strides = {cg * bytes, g.kr * bytes, 0, 0};
    map.box = {static_cast<unsigned>(atom_k_of(p)), 1, static_cast<unsigned>(filter_box_rows(s)), 1, 1};
  } else {
    map.rank = 2;
    map.dims = {g.kr, p.k, 1, 1, 1};
    map.strides = {g.kr * bytes, 0, 0, 0};
    map.box = {static_cast<unsigned>(atom_k_of(p)), static_cast<unsigned>(filter_box_rows(s)), 1, 1, 1};
  }
  map.swizzle_128b = true;
  return map;
}

// The tensor map the `ta` pipeline's pixel-row copies read: the activation as an NPIX x C matrix (channels-last, one
// tap, stride 1, no padding), boxes of atom_k channels (128 bytes) by BLOCK_M pixels, the 128-byte swizzle, zeros
// outside. The launcher encodes it over each call's activation and passes it by value (PlanTensorMap).
TensorMapSpec activation_map_of(const Problem& p, const IgemmWgmmaParams& s) {
  TensorMapSpec map = filter_map_of(p, s);
  if (s.tma_activation == 2) {
    // im2col (`ta2`): the activation as C x W x H x N; each copy BLOCK_M pixels of atom_k channels (128 bytes, in the
    // swizzle), walking the tap-0 input pixels of the output's pixels: from -padding to the last (padding less the
    // filter's reach past the end) by the strides.
    const std::int64_t bytes = element_bytes(p);
    map.rank = 4;
    map.dims = {p.c, p.input.w, p.input.h, p.n, 1};
    map.strides = {p.c * bytes, std::int64_t{p.input.w} * p.c * bytes,
                   std::int64_t{p.input.h} * p.input.w * p.c * bytes, 0};
    map.box = {0, 0, 0, 0, 0};
    map.im2col = true;
    map.lower_corner = {-p.padding.w, -p.padding.h, 0};
    map.upper_corner = {p.padding.w - (p.filter.w - 1) * p.dilation.w, p.padding.h - (p.filter.h - 1) * p.dilation.h,
                        0};
    map.channels = static_cast<unsigned>(atom_k_of(p));
    map.pixels = static_cast<unsigned>(s.block_m);
    map.element_strides = {1, static_cast<unsigned>(p.stride.w), static_cast<unsigned>(p.stride.h), 1, 1};
    return map;
  }
  map.rank = 2;
  map.dims = {p.c, gemm_of(p).m, 1, 1, 1};
  map.strides = {std::int64_t{p.c} * element_bytes(p), 0, 0, 0};
  map.box = {static_cast<unsigned>(atom_k_of(p)), static_cast<unsigned>(s.block_m), 1, 1, 1};
  return map;
}

// Chunk-major order is offered where it can pay: more than one tap (else it is the tap-major order) and chunks of
// atom_k channels that pad the channels per group by at most an eighth.
bool offers_chunk_major(const Gemm& g, int atom_k) {
  const int channels = g.kr / std::max(g.taps, 1);
  return g.taps > 1 && ceil_div(channels, atom_k) * atom_k * 8 <= channels * 9;
}

// Why the problem's filter cannot be served as 2:4 (`sp`), if it cannot: it must carry its own filter with its
// values, 2:4 in the filter rows' order (the pack keeps 2 values of each chunk of 4: more would be lost).
std::optional<std::string> two_four_reason(const Problem& p) {
  if (p.weights.pattern.empty()) return "sp compresses the problem's own 2:4 filter, and this problem has none";
  if (!p.weights.values)
    return fmt::format(
        "sp needs the values of filter pattern {} to check it is 2:4 (the problem carries only its hash)",
        p.weights.pattern);
  if (!is_two_four_sparse(p))
    return "the problem's filter is not 2:4: some chunk of 4 consecutive values of a filter row has more than 2 "
           "nonzeros (--weight-sparsity 2:4 prunes to the pattern)";
  return std::nullopt;
}

// The 2:4 filter's compressed copy (templates/two_four_pack.cuh): KG rounded up to the channel tile, KR to a step
// of 128; half the values, and 64 bytes of metadata for each 16 rows and 32 reduction elements.
constexpr int kPackThreads = 256;  // threads per block of the pack entry (PACK_THREADS)
std::int64_t packed_rows(const Problem& p, const IgemmWgmmaParams& s) {
  return std::int64_t{p.groups} * ceil_div(k_per_group(p), s.block_n) * s.block_n;
}
std::int64_t packed_kr(const Problem& p) { return ceil_div(gemm_of(p).kr, 128) * 128; }

class IgemmWgmma final : public Family {
 public:
  const TemplateInterface& interface() const override { return igemm_wgmma_interface(); }

  std::optional<std::string> check_support(const Problem& p, const Gpu& gpu, const KernelSpec& spec) const override {
    if (spec.family != IgemmWgmmaParams::family)
      return fmt::format("kernel {} is not an igemm_wgmma kernel", spec.family);
    if (auto reason = problem_reason(p, gpu)) return reason;
    const IgemmWgmmaParams s = convgen::params_of<IgemmWgmmaParams>(spec);
    if (s.tma_filter && pads_channels(p))
      return fmt::format("tma reads the filter as it lies: not where its {} channels are padded to {}", p.c,
                         padded_channels(p).c);
    if (s.fold_width && !folds_width(p))
      return fmt::format("fw (the filter's width folded into the channels) serves ungrouped problems with fewer "
                         "channels than one 16-byte load ({} in {}) and a filter wider than 1; got {} channels in {} "
                         "groups, a filter {} wide",
                         chunk_of(p), p.precision, p.c, p.groups, p.filter.w);
    if (s.fold_width == 2 && !fold_copies(p))
      return fmt::format(
          "fw2 (the width folded as the pixel rows are loaded, by 4-byte copies) needs dilation 1 along "
          "the width and each window's start, stride, end and the input row on whole 4 bytes ({} bytes "
          "a column; stride {}, padding {}, filter width {}, input width {})",
          std::int64_t{p.c} * element_bytes(p), p.stride.w, p.padding.w, p.filter.w, p.input.w);
    if (s.sparse_filter) {
      if (auto reason = two_four_reason(p)) return reason;
      if (pads_channels(p))
        return fmt::format(
            "sp (the 2:4 filter) reads its compressed copy of the filter as it lies: not where its {} "
            "channels are padded to {}",
            p.c, padded_channels(p).c);
    }
    const Problem q = computed_problem(p, s);
    if (s.fold_width == 1 && ceil_div(activation_elements(q) / chunk_of(p), kPadThreads) > kIntMax)
      return fmt::format("the folded activation's {} elements exceed pad_activation's grid", activation_elements(q));
    return spec_reason(q, gpu, s);
  }

  // The prelude also says the data type: PRECISION, convgen::Precision's value (1 tf32, 2 fp16, 3 bf16), and the
  // source tensors' channels and width, C_SOURCE and W_SOURCE, with the taps folded into the channels, FOLD_S, and
  // their stride, padding and dilation, and with fw2 the zero taps each window starts with and its copies' width
  // (FOLD_SHIFT, FOLD_COPY_BYTES): its problem is the padded or folded one (computed_problem).
  KernelSource render(const Problem& p, const KernelSpec& spec) const override {
    const IgemmWgmmaParams s = convgen::params_of<IgemmWgmmaParams>(spec);
    const bool fold = s.fold_width != 0;
    const PreludeConstant constants[] = {
        precision_constant(p),
        {.name = "C_SOURCE", .value = p.c, .comment = "the tensors' channels; C pads them to whole 16-byte loads"},
        {.name = "W_SOURCE", .value = p.input.w, .comment = "the activation's width"},
        {.name = "FOLD_S", .value = fold ? p.filter.w : 1, .comment = "filter taps folded into the channels"},
        {.name = "FOLD_STRIDE", .value = fold ? p.stride.w : 1, .comment = ""},
        {.name = "FOLD_PAD", .value = fold ? p.padding.w : 0, .comment = ""},
        {.name = "FOLD_DIL", .value = fold ? p.dilation.w : 1, .comment = ""},
        {.name = "FOLD_SHIFT",
         .value = copies_of(p, s).shift,
         .comment = "fw2: zero taps before the first, each window on whole copies"},
        {.name = "FOLD_COPY_BYTES",
         .value = copies_of(p, s).bytes,
         .comment = "fw2: the bytes of each copy of a window's run"}};
    return render_kernel(computed_problem(p, s), spec, interface(), constants);
  }

  // wgmma exists only in the arch-specific variant of compute capability 9.0.
  std::string compile_arch(const Gpu& gpu) const override {
    return !has_wgmma(gpu) || gpu.arch.ends_with('a') ? gpu.arch : gpu.arch + "a";
  }

  std::vector<KernelSpec> enumerate(const Problem& p, const Gpu& gpu) const override {
    std::vector<KernelSpec> specs;
    for (const IgemmWgmmaParams& s : candidates(p, gpu)) specs.push_back(to_spec(s));
    return specs;
  }

  // run: the main kernel; with split_k > 1 it writes fp32 partial sums to the per-call buffer "partials" (the whole
  // workspace, bound as g_workspace) and the reduce entry adds them into the output. The main entry's g_filter_map
  // and g_activation_map are tensor maps the launcher encodes over each call's filter (with `tma`) and activation
  // (with `ta`) and passes by value; zeros where the kernel never reads them. With padded channels (or a folded width)
  // the setup's pad_filter writes the padded filter into the persistent buffer "padded_filter" and each call's
  // pad_activation, first, the padded (or folded) activation into the per-call buffer "padded_activation", which the
  // main entry reads; else both are empty. With fw2 the filter is folded so, but the main entry folds the activation as
  // it loads it: no pass, no buffer.
  LaunchPlan plan(const Problem& source, const KernelSpec& spec) const override {
    const IgemmWgmmaParams s = convgen::params_of<IgemmWgmmaParams>(spec);
    const Problem p = computed_problem(source, s);
    const Gemm g = gemm_of(p);
    LaunchPlan plan;
    plan.run.push_back({.kind = LaunchStep::Kind::kernel,
                        .geometry = {.grid = grid_of(g, s),
                                     .block = {static_cast<unsigned>(threads_of(s)), 1, 1},
                                     .dynamic_smem_bytes = static_cast<unsigned>(smem_bytes(p, s))}});
    if (reduce_pass(s)) add_split_k_reduce(plan, output_elements(p), s.split_k, kReduceThreads);
    // The main entry's two by-value tensor maps: the filter's with `tma`, the activation's with `ta`, else zeros (the
    // kernel never reads them).
    plan.tensor_maps.push_back(
        s.tma_filter ? PlanTensorMap{.name = "filter_map", .tensor = "filter", .spec = filter_map_of(p, s)}
                     : PlanTensorMap{.name = "filter_map"});
    plan.tensor_maps.push_back(
        s.tma_activation
            ? PlanTensorMap{.name = "activation_map", .tensor = "activation", .spec = activation_map_of(p, s)}
            : PlanTensorMap{.name = "activation_map"});
    if (copies_operands(source, s)) {
      // One thread per 16 bytes (the padded channels are whole 16-byte units).
      const auto blocks = [&p](std::int64_t elements) {
        return LaunchGeometry{.grid = {static_cast<unsigned>(ceil_div(elements / chunk_of(p), kPadThreads)), 1, 1},
                              .block = {static_cast<unsigned>(kPadThreads), 1, 1}};
      };
      const bool copies_input = copies_activation(source, s);
      plan.buffers.push_back({.name = "padded_activation",
                              .bytes = copies_input ? activation_elements(p) * element_bytes(p) : 0,
                              .persistent = false});
      plan.buffers.push_back(
          {.name = "padded_filter", .bytes = filter_elements(p) * element_bytes(p), .persistent = true});
      plan.setup.push_back(
          {.kind = LaunchStep::Kind::kernel, .entry_suffix = "pad_filter", .geometry = blocks(filter_elements(p))});
      if (copies_input)
        plan.run.insert(plan.run.begin(), {.kind = LaunchStep::Kind::kernel,
                                           .entry_suffix = "pad_activation",
                                           .geometry = blocks(activation_elements(p))});
    } else {
      plan.buffers.push_back({.name = "padded_activation", .bytes = 0, .persistent = false});
      plan.buffers.push_back({.name = "padded_filter", .bytes = 0, .persistent = false});
    }
    // With a 2:4 filter (`sp`) the setup's pack entry compresses it into the persistent "packed_values" and
    // "packed_meta" (one thread per 16 reduction elements of a padded row), which the main entry reads instead of
    // g_filter; else both are empty.
    if (s.sparse_filter) {
      const std::int64_t rows = packed_rows(p, s), kr = packed_kr(p);
      plan.buffers.push_back({.name = "packed_values", .bytes = rows * kr / 2 * element_bytes(p), .persistent = true});
      plan.buffers.push_back({.name = "packed_meta", .bytes = rows / 16 * (kr / 32) * 64, .persistent = true});
      plan.setup.push_back(
          {.kind = LaunchStep::Kind::kernel,
           .entry_suffix = "pack",
           .geometry = {.grid = {static_cast<unsigned>(ceil_div(rows * (kr / 16), kPackThreads)), 1, 1},
                        .block = {static_cast<unsigned>(kPackThreads), 1, 1}}});
    } else {
      plan.buffers.push_back({.name = "packed_values", .bytes = 0, .persistent = false});
      plan.buffers.push_back({.name = "packed_meta", .bytes = 0, .persistent = false});
    }
    // The activation and the filter in 16-byte copies (cp.async or TMA), unless the pad passes copy them first (one
    // element at a time; fw2's activation in copies of 4 or 8 bytes); a 2:4 filter is read by the pack entry, one
    // element at a time.
    const bool copies = copies_operands(source, s);
    plan.tensor_alignment = {.activation = s.fold_width == 2 ? copies_of(source, s).bytes
                                           : copies          ? 0
                                                             : 16,
                             .filter = copies || s.sparse_filter ? 0 : 16,
                             .output = output_alignment(p, s)};
    // Every run kernel waits for the stream's previous kernel before it touches global memory (the main entry after
    // its barriers' setup): each may launch early, overlapping it.
    return with_early_launch(std::move(plan));
  }

  // With padded channels or a folded width (fw1), also pad_activation's pass: the activation read, its copy written,
  // one launch more.
  CostFeatures cost_features(const Problem& p, const KernelSpec& spec) const override {
    const IgemmWgmmaParams s = convgen::params_of<IgemmWgmmaParams>(spec);
    const Problem q = computed_problem(p, s);
    CostFeatures f = features(q, s);
    if (copies_activation(p, s)) {
      f.dram_bytes += static_cast<double>((activation_elements(p) + activation_elements(q)) * element_bytes(p));
      f.extra_launches += 1;
    }
    return f;
  }

  // The H200 fit of bench/results/h200/wgmma-cost-fit-2026-12-02/: `db calibrate` on every exhaustive igemm_wgmma
  // tune published (15,000 verified measurements of 177 problems: ResNet-50, DenseNet-121 and cuSNN, tf32 and fp16,
  // batches 1-32). Fitted on part of those problems and judged on the rest, it put the best of the model's 10 first
  // candidates within 0.951-0.989 of the exhaustive best where the earlier guess (igemm_tc's terms, a wgmma counted
  // as N / 32 "fma" instructions of weight 1.6) gave 0.916-0.966. (A wgmma is still counted as N / 32 "fma"; there
  // are no ldmatrix: shared_loads 0.)
  CostWeights default_cost_weights() const override {
    return {21.1, 0, 12.8, 2.33, 0, 0.0611, 1.2, 0, 0.781, 0.685, 1.22};
  }

  std::optional<KernelSpec> default_spec(const Problem& p, const Gpu& gpu) const override {
    const std::vector<IgemmWgmmaParams> specs = candidates(p, gpu);
    if (specs.empty()) return std::nullopt;
    return to_spec(specs.front());
  }

  // Before igemm_tc (-1) where it serves: on the H100 its tuned best beat igemm_tc's on 23 of the 24 cusnn
  // layer-batches in fp16 (bench/results/h100/wgmma/2026-11-25/). For an fp16 / bf16 problem with a 2:4 filter of its
  // own, before sparse24_tc (-3) too: on ResNet-50 at batch 8 on the H200 its tuned best (dense or `sp`) ran at 1.13x
  // cuDNN's fp16 time against sparse24_tc's 0.63x on the H100 (bench/results/h200/two-four-wgmma-2026-12-01/); on a
  // GPU without wgmma it serves nothing and sparse24_tc comes first.
  int default_rank(const Problem& p) const override {
    if (!serves_precision(p.precision)) return 100;
    return p.precision != Precision::tf32 && !p.weights.pattern.empty() && p.weights.values && is_two_four_sparse(p)
               ? -4
               : -2;
  }

  // `tma`, `fw`, `cr`, `ta`, `wn`, `mc`, `hl`, `sw`, `sp` and `oc` came after the names of earlier convgens: theirs
  // load the filter by cp.async (tma0), fold nothing (fw0), split the reduction through a workspace (cr0), load the
  // pixel rows by cp.async (ta0), give each warpgroup every channel of the block (wn0), copy each block's filter alone
  // (mc1), gather each tap's pixel rows (hl0), make the pixels the wgmma's A (sw0), multiply a dense filter (sp0) and
  // copy the staged output rows out by bulk copies (oc0).
  std::size_t params_added_later() const override { return 10; }

  // A 2:4 kernel (`sp`) keeps 2 values of each chunk of 4: it serves filters of its problem's pattern; the others
  // read any filter.
  FilterDependence filter_dependence(const KernelSpec& spec) const override {
    return convgen::params_of<IgemmWgmmaParams>(spec).sparse_filter ? FilterDependence::pattern
                                                                    : FilterDependence::none;
  }

 private:
  // The search space, for each pipeline (shared and warp-specialized), each step length (one K atom, and two where
  // the reduction has more than two steps of one) and each reduction order (tap-major, and chunk-major where
  // offers_chunk_major): the block tiles (64 to 256 pixels by 16 to 256 channels) that fit the GEMM, the deepest
  // pipeline the shared memory holds (up to 6 stages) and a shallower one (4, or 3) where that fits more blocks on an
  // SM, and split-K while the output alone fills fewer than two waves. Of these, an equal share of kMaxCandidates for
  // each pipeline, step length and order, by estimate, the best of every tile first: the model cannot yet tell these
  // apart well (each won layers on the H100), so the tuner measures them all. Warp-specialized, half the share, each
  // with its twin that loads the filter by TMA (kOfferTma), so that every TMA candidate is measured beside its own
  // cp.async one.
  std::vector<IgemmWgmmaParams> candidates(const Problem& source, const Gpu& gpu) const {
    if (problem_reason(source, gpu)) return {};
    std::vector<Estimated<IgemmWgmmaParams>> chosen;
    if (folds_width(source)) {  // half the candidates each: the padded problem's and the folded one's
      search(padded_channels(source), gpu, kMaxCandidates / 2, false, false, chosen);
      search(folded_width(source), gpu, kMaxCandidates / 2, true, false, chosen);
      add_fold_on_load_twins(source, gpu, chosen);
    } else {
      // TMA reads the filter as it lies: not where the channels are padded.
      search(padded_channels(source), gpu, kMaxCandidates, false, kOfferTma && !pads_channels(source), chosen);
    }
    // A 2:4 filter: the configurations that multiply its compressed copy by wgmma.sp (`sp`) beside the dense ones.
    if (!pads_channels(source) && (source.precision == Precision::fp16 || source.precision == Precision::bf16) &&
        !two_four_reason(source))
      search_sparse(source, gpu, chosen);
    std::stable_sort(chosen.begin(), chosen.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
    std::vector<IgemmWgmmaParams> specs;
    for (const auto& c : chosen)  // once each: a twin may be another tile's candidate too
      if (std::find(specs.begin(), specs.end(), c.second) == specs.end()) specs.push_back(c.second);
    return specs;
  }

  // At most `most` configurations of the problem `p` the kernel computes (padded or folded: `fold`), with their
  // estimates, appended to `chosen`: an equal share for each pipeline, step length and order; warp-specialized, half
  // the share, each with its TMA twin where `offers_tma`.
  void search(const Problem& p, const Gpu& gpu, std::size_t most, bool fold, bool offers_tma,
              std::vector<Estimated<IgemmWgmmaParams>>& chosen) const {
    const Gemm g = gemm_of(p);
    const int atom_k = atom_k_of(p);
    const std::vector<int> step_atoms = g.kr > 2 * atom_k ? std::vector<int>{1, 2} : std::vector<int>{1};
    const std::vector<bool> orders =
        offers_chunk_major(g, atom_k) ? std::vector<bool>{false, true} : std::vector<bool>{false};
    const std::size_t share = most / (2 * step_atoms.size() * orders.size());
    const bool many_tiles = kOfferTilesPerBlock && more_tiles_than_sms(g, gpu);
    // Warp-specialized, each candidate's twins share its part: the filter by TMA, and more tiles a block.
    const std::size_t twins = (offers_tma ? 2 : 1) * (many_tiles ? 2 : 1);
    for (int warp_specialized : {0, 1})
      for (int k_atoms : step_atoms)
        for (bool chunk_major : orders)
          for (IgemmWgmmaParams s : best_of_every_group_first(tiles(p, gpu, warp_specialized, k_atoms, chunk_major),
                                                              warp_specialized ? share / twins : share)) {
            s.fold_width = fold;
            std::vector<IgemmWgmmaParams> one_and_several_tiles = {s};
            if (warp_specialized && many_tiles)
              if (const std::optional<IgemmWgmmaParams> more = several_tiles_twin(p, gpu, s))
                one_and_several_tiles.push_back(*more);
            // Split through a workspace, its twin split in a cluster beside it (more candidates: the twins are not yet
            // measured, so they take no place of a measured kind). Not for blocks of more than 512 threads (256
            // pixels warp-specialized), whose registers the cluster's sums overflow (ptxas spilled).
            if (kOfferClusterReduce) {
              IgemmWgmmaParams in_cluster = s;
              in_cluster.cluster_reduce = true;
              if (s.split_k > 1 && threads_of(s) <= 512 && !spec_reason(p, gpu, in_cluster))
                one_and_several_tiles.push_back(in_cluster);
            }
            // One wave of blocks that leaves SMs idle: its twin with narrower channel tiles, more of them, as many as
            // still fit one wave (any multiple of 16 channels, not only the search's widths).
            if (const std::optional<IgemmWgmmaParams> filling = wave_filling_twin(p, gpu, s))
              one_and_several_tiles.push_back(*filling);
            // A 64-pixel tile's twin with two warpgroups multiplying, each half its channels (one would leave the SM's
            // tensor cores idle half the time: bench/results/h200/pixel-rows-by-tma-2026-11-29/).
            if (kOfferSplitN && s.block_m == 64) {
              IgemmWgmmaParams two = s;
              two.split_n = true;
              if (!spec_reason(p, gpu, two)) one_and_several_tiles.push_back(two);
            }
            for (const IgemmWgmmaParams& t : one_and_several_tiles) {
              add_with_copy_twin(p, gpu, t, chosen);
              add_swapped_twins(p, gpu, t, chosen);
              if (offers_tma && warp_specialized) {  // its twin with the filter by TMA, beside it
                IgemmWgmmaParams tma = t;
                tma.tma_filter = true;
                add_with_copy_twin(p, gpu, tma, chosen);
                add_swapped_twins(p, gpu, tma, chosen);
                // and its twins whose clusters of 2 and 4 pixel tiles share each filter tile's copy (multicast)
                if (kOfferMulticast)
                  for (int multicast : {2, 4}) {
                    IgemmWgmmaParams shared = tma;
                    shared.multicast = multicast;
                    if (!spec_reason(p, gpu, shared) && ceil_div(g.m, tma.block_m) >= multicast)
                      add_with_copy_twin(p, gpu, shared, chosen);
                  }
                // and its halo twin (each chunk's input patch loaded once, every tap reading its window), in as deep a
                // pipeline as fits (2 to its own stages)
                if (kOfferHalo && tma.k_atoms == 1 && tma.split_k == 1 && !tma.chunk_major && !tma.split_n &&
                    tiles_per_block(tma) == 1 && halo_serves(p) && g.taps > 1) {
                  IgemmWgmmaParams halo = tma;
                  halo.halo = true;
                  while (halo.stages > 2 && spec_reason(p, gpu, halo)) --halo.stages;
                  if (!spec_reason(p, gpu, halo)) {
                    add_with_copy_twin(p, gpu, halo, chosen);
                    // and its twin of several tiles a block, the next tile's patch loading while this one multiplies
                    // (a tile of few channels is one step: one tile a block would never overlap its loads)
                    IgemmWgmmaParams several = halo;
                    several.warp_specialized = tiles_per_block_for(p, gpu, halo);
                    if (several.warp_specialized > 1 && !spec_reason(p, gpu, several))
                      add_with_copy_twin(p, gpu, several, chosen);
                    // and, where the output channels are one tile, the filter-stationary twin: the block's filter
                    // loaded once, its stages (as many as fit, up to 6) holding patches only
                    IgemmWgmmaParams stationary = several.warp_specialized > 1 ? several : halo;
                    stationary.halo = 2;
                    stationary.stages = 6;
                    while (stationary.stages > 2 && spec_reason(p, gpu, stationary)) --stationary.stages;
                    if (!spec_reason(p, gpu, stationary)) add_with_copy_twin(p, gpu, stationary, chosen);
                  }
                }
                // and where the activation is a matrix, that one's twin with the pixel rows by TMA too
                IgemmWgmmaParams both = tma;
                both.tma_activation = 1;
                if (kOfferTmaActivation && !spec_reason(p, gpu, both)) {
                  add_with_copy_twin(p, gpu, both, chosen);
                  // and its twins with the operands swapped, both operands by TMA (kOfferSwapWithTmaActivation)
                  add_swapped_twins(p, gpu, both, chosen, kOfferSwapWithTmaActivation);
                }
                // and its twin with the pixel rows by TMA in im2col mode (a problem of more than one tap, or strided)
                IgemmWgmmaParams im2col = tma;
                im2col.tma_activation = 2;
                if (kOfferIm2col && !activation_is_a_matrix(p) && !spec_reason(p, gpu, im2col))
                  add_with_copy_twin(p, gpu, im2col, chosen);
              }
            }
          }
  }

  // The 2:4 configurations (`sp`: the operands swapped, steps of two K atoms, one tile a block), for each pipeline and
  // block tile (64 to 256 pixels, 64 to 256 channels, within the GEMM as the dense search's), the deepest pipeline that
  // fits, unsplit and, tiles of at most 128 pixels in at most 384 threads, split as the dense search splits (2 to 16
  // ways while the blocks are fewer than two waves and every split has two steps), each split through a workspace and
  // its twin split in a cluster, with their estimates.
  static void search_sparse(const Problem& p, const Gpu& gpu, std::vector<Estimated<IgemmWgmmaParams>>& chosen) {
    const Gemm g = gemm_of(p);
    const int sm_count = std::max(gpu.sm_count, 1);
    for (int warp_specialized : {0, 1})
      for (int block_m : {128, 64, 192, 256}) {
        if (block_m > 64 && block_m / 2 >= g.m) continue;  // half the tile would be padding
        for (int block_n : {64, 128, 192, 256}) {
          if (block_n > 64 && block_n / 2 >= g.n) continue;
          for (int stages : {6, 5, 4, 3}) {
            IgemmWgmmaParams s = params_of(block_m, block_n, 2, stages, 1, false, warp_specialized);
            s.swap_ab = true;
            s.sparse_filter = true;
            if (spec_reason(p, gpu, s)) continue;
            chosen.emplace_back(estimate_us(p, gpu, s), s);
            const std::int64_t tiles = blocks_of(g, s);
            const std::int64_t steps = ceil_div(atoms_of(g, atom_k_of(p), s), s.k_atoms);
            // Split only where a warpgroup's wgmma is at most 128 pixels wide (64 accumulators) in at most 384 threads:
            // split, 192 pixels or 512 threads reached ptxas's register cap and spilled (12 to 256 bytes).
            const bool splits = warpgroup_cols(s) <= 128 && threads_of(s) <= 384;
            for (int split_k = 2; splits && split_k <= 16; split_k *= 2) {
              if (!split_pays(tiles, steps, split_k, sm_count)) break;
              IgemmWgmmaParams split = s;
              split.split_k = split_k;
              if (spec_reason(p, gpu, split)) continue;
              chosen.emplace_back(estimate_us(p, gpu, split), split);
              IgemmWgmmaParams in_cluster = split;
              in_cluster.cluster_reduce = true;
              if (kOfferClusterReduce && threads_of(in_cluster) <= 512 && !spec_reason(p, gpu, in_cluster))
                chosen.emplace_back(estimate_us(p, gpu, in_cluster), in_cluster);
            }
            break;
          }
        }
      }
  }

  // fw2's estimate against its fw1 twin's, by precision (1 for the others).
  static double fold_on_load_ratio(const Problem& p, const IgemmWgmmaParams& s) {
    if (s.fold_width != 2) return 1.0;
    return p.precision == Precision::tf32 ? kFoldOnLoadRatioTf32 : kFoldOnLoadRatio16;
  }

  // Where fw2 serves (kOfferFoldOnLoad), each folded candidate's twin that folds the pixel rows as it loads them
  // (no copy pass), estimated fold_on_load_ratio of its time.
  static void add_fold_on_load_twins(const Problem& source, const Gpu& gpu,
                                     std::vector<Estimated<IgemmWgmmaParams>>& chosen) {
    if (!kOfferFoldOnLoad || !fold_copies(source)) return;
    const std::size_t folded = chosen.size();
    for (std::size_t i = 0; i < folded; ++i) {
      if (chosen[i].second.fold_width != 1) continue;
      IgemmWgmmaParams twin = chosen[i].second;
      twin.fold_width = 2;
      const Problem q = computed_problem(source, twin);
      if (!spec_reason(q, gpu, twin)) chosen.emplace_back(estimate_us(q, gpu, twin), twin);
    }
  }

  // `s` with its estimate, and, where its output leaves through the buffer of several tiles a block, its twin whose
  // warps copy their staged rows out themselves (`oc`), estimated kWarpCopyOutputRatio of its time: the bulk copies
  // issue one row at a time.
  static void add_with_copy_twin(const Problem& p, const Gpu& gpu, const IgemmWgmmaParams& s,
                                 std::vector<Estimated<IgemmWgmmaParams>>& chosen) {
    chosen.emplace_back(estimate_us(p, gpu, s), s);
    if (!kOfferWarpCopyOutput || !bulk_output(p, s) || s.warp_copy_output) return;
    IgemmWgmmaParams copying = s;
    copying.warp_copy_output = true;
    chosen.emplace_back(estimate_us(p, gpu, copying), copying);
  }

  // Where `offered` (kOfferSwap, unless the caller says), the one-tile, unsplit `t`'s twins with the operands swapped
  // (`sw`: each warpgroup's wgmma 64 of the block's channels by all its pixels), and, for tiles of 128 pixels or more,
  // with two warpgroups on each 64 channels, each half the pixels (`sw` and `wn`), beside it.
  static void add_swapped_twins(const Problem& p, const Gpu& gpu, const IgemmWgmmaParams& t,
                                std::vector<Estimated<IgemmWgmmaParams>>& chosen, bool offered = kOfferSwap) {
    if (!offered || t.swap_ab || t.split_n || tiles_per_block(t) > 1 || t.split_k != 1 || t.block_n % 64 != 0) return;
    IgemmWgmmaParams swapped = t;
    swapped.swap_ab = true;
    if (!spec_reason(p, gpu, swapped)) chosen.emplace_back(estimate_us(p, gpu, swapped), swapped);
    if (const std::optional<IgemmWgmmaParams> filling = pixel_filling_twin(p, gpu, swapped))
      chosen.emplace_back(estimate_us(p, gpu, *filling), *filling);
    IgemmWgmmaParams halves = swapped;
    halves.split_n = true;
    if (t.block_m >= 128 && !spec_reason(p, gpu, halves)) chosen.emplace_back(estimate_us(p, gpu, halves), halves);
  }

  // Whether the output has more tiles of 128 x 128 than the GPU has SMs: more than a wave of blocks of one tile,
  // where a block that computes several can hide each tile's store behind the next one's loads.
  static bool more_tiles_than_sms(const Gemm& g, const Gpu& gpu) {
    return ceil_div(g.m, 128) * ceil_div(g.n, 128) * g.groups > std::max(gpu.sm_count, 1);
  }

  // The twin of the warp-specialized one-tile `s` that computes several tiles a block: as deep a pipeline as still
  // fits beside its output buffer (where it has one), and the tiles that fit its blocks in one wave; none where one
  // tile a block already does, or the buffer leaves no room for three stages.
  static std::optional<IgemmWgmmaParams> several_tiles_twin(const Problem& p, const Gpu& gpu,
                                                            const IgemmWgmmaParams& s) {
    IgemmWgmmaParams more = s;
    more.warp_specialized = 2;
    while (more.stages > 3 && spec_reason(p, gpu, more)) --more.stages;
    if (spec_reason(p, gpu, more)) return std::nullopt;
    more.warp_specialized = tiles_per_block_for(p, gpu, more);
    if (more.warp_specialized < 2) return std::nullopt;
    return more;
  }

  // The twin of the one-tile, unsplit `s` whose blocks are fewer than the GPU's SMs: the same pixel tiles, and
  // channel tiles of the fewest channels (a multiple of 16) that keep the blocks within one block a SM. conv5_reduce
  // at batch 32 (1,568 pixels, 512 channels): 25 x 4 tiles of 64 x 128 leave 32 of 132 SMs idle, 25 x 5 of 64 x 112
  // leave 7, each block with 7/8 of the work. None where that is no narrower, or a width the search tries itself.
  static std::optional<IgemmWgmmaParams> wave_filling_twin(const Problem& p, const Gpu& gpu,
                                                           const IgemmWgmmaParams& s) {
    if (s.split_k != 1 || tiles_per_block(s) > 1 || s.split_n) return std::nullopt;
    const Gemm g = gemm_of(p);
    const std::int64_t sms = std::max(gpu.sm_count, 1);
    const std::int64_t rows = ceil_div(g.m, s.block_m) * g.groups;  // blocks along the pixels (and the groups)
    const std::int64_t columns = ceil_div(g.n, s.block_n);
    if (rows * columns >= sms) return std::nullopt;
    const std::int64_t most_columns = sms / rows;
    if (most_columns <= columns) return std::nullopt;
    IgemmWgmmaParams twin = s;
    twin.block_n = static_cast<int>(ceil_div(ceil_div(g.n, most_columns), 16) * 16);
    // A width of the search's own it offers itself.
    if (twin.block_n >= s.block_n || std::find(kBlockNs.begin(), kBlockNs.end(), twin.block_n) != kBlockNs.end() ||
        spec_reason(p, gpu, twin))
      return std::nullopt;
    return twin;
  }

  // The twin of the swapped, one-tile, unsplit `s` whose blocks are fewer than the GPU's SMs: pixel tiles of the fewest
  // pixels (a multiple of 16: with the operands swapped they are the wgmma's N, not whole warpgroups) that keep the
  // blocks within one wave. conv5_reduce at batch 32 (1,568 pixels, 512 channels in tiles of 64): 25 x 8 tiles of
  // 64 x 64 are two waves, 13 x 8 of 128 x 64 leave 28 of 132 SMs idle, 14 x 8 of 112 x 64 leave 20 (cuBLAS's
  // nvjet kernel for it runs 64 x 112 tiles). None where that is no narrower or a whole number of warpgroups.
  // The fewest pixels a wave-filling swapped tile has. Tiles of 96 to 192 pixels ran on the H200, the pixel rows by
  // TMA among them (bench/results/h200/swap-with-tma-activation-2026-12-02/); tiles of 16 to 48 compile (the NVRTC
  // tier) and the GPU tests name them, but none has run with the pixel rows by TMA, so none is offered (an untuned
  // default is not verified before it runs).
  static constexpr int kFewestFillingPixels = 64;
  static std::optional<IgemmWgmmaParams> pixel_filling_twin(const Problem& p, const Gpu& gpu,
                                                            const IgemmWgmmaParams& s) {
    if (!s.swap_ab || s.split_k != 1 || tiles_per_block(s) > 1) return std::nullopt;
    const Gemm g = gemm_of(p);
    const std::int64_t sms = std::max(gpu.sm_count, 1);
    const std::int64_t columns = ceil_div(g.n, s.block_n) * g.groups;  // blocks along the channels (and the groups)
    const std::int64_t most_rows = sms / columns;
    if (most_rows < 1) return std::nullopt;
    IgemmWgmmaParams twin = s;
    twin.block_m =
        static_cast<int>(ceil_div(ceil_div(g.m, most_rows), twin.split_n ? 32 : 16) * (twin.split_n ? 32 : 16));
    if (twin.block_m >= s.block_m || twin.block_m % 64 == 0 || twin.block_m < kFewestFillingPixels ||
        spec_reason(p, gpu, twin))
      return std::nullopt;
    return twin;
  }

  // The tiles a block of the warp-specialized `s` computes so that its blocks fit one wave of resident blocks (at
  // most kMostTilesPerBlock); 1 where one a block already does.
  static int tiles_per_block_for(const Problem& p, const Gpu& gpu, const IgemmWgmmaParams& s) {
    const std::int64_t wave = std::int64_t{std::max(gpu.sm_count, 1)} * std::max(resident_blocks(gpu, p, s), 1);
    return static_cast<int>(std::min<std::int64_t>(ceil_div(tiles_of(gemm_of(p), s), wave), kMostTilesPerBlock));
  }

  // The configurations of one pipeline, step length and order, grouped by block tile, each with its estimate.
  std::vector<std::vector<Estimated<IgemmWgmmaParams>>> tiles(const Problem& p, const Gpu& gpu, int warp_specialized,
                                                              int k_atoms, bool chunk_major) const {
    const Gemm g = gemm_of(p);
    const int sm_count = std::max(gpu.sm_count, 1);
    const auto with = [&](int block_m, int block_n, int stages, int split_k) {
      return params_of(block_m, block_n, k_atoms, stages, split_k, chunk_major, warp_specialized);
    };
    const std::int64_t steps = ceil_div(atoms_of(g, atom_k_of(p), with(64, 16, 3, 1)), k_atoms);
    std::vector<std::vector<Estimated<IgemmWgmmaParams>>> by_tile;
    for (int block_m : {128, 64, 192, 256}) {
      if (block_m > 64 && block_m / 2 >= g.m) continue;  // half the tile would be padding
      for (int block_n : kBlockNs) {
        if (block_n > 16 && block_n / 2 >= g.n) continue;
        // The deepest pipeline that fits, and 4 stages (or 3) where that lets more blocks share an SM.
        int deepest = 0;
        for (int stages : {6, 5, 4, 3})
          if (!spec_reason(p, gpu, with(block_m, block_n, stages, 1))) {
            deepest = stages;
            break;
          }
        if (deepest == 0) continue;
        std::vector<Estimated<IgemmWgmmaParams>> ranked;
        for (int stages : {deepest, std::min(deepest - 1, 4)}) {
          if (stages < 3 || (stages != deepest && resident_blocks(gpu, p, with(block_m, block_n, stages, 1)) <=
                                                      resident_blocks(gpu, p, with(block_m, block_n, deepest, 1))))
            continue;
          const std::int64_t tiles = blocks_of(g, with(block_m, block_n, stages, 1));
          for (int split_k = 1; split_k <= 16; split_k *= 2) {
            if (split_k > 1 && !split_pays(tiles, steps, split_k, sm_count)) break;
            const IgemmWgmmaParams s = with(block_m, block_n, stages, split_k);
            if (spec_reason(p, gpu, s)) continue;
            ranked.emplace_back(estimate_us(p, gpu, s), s);
          }
        }
        if (!ranked.empty()) by_tile.push_back(std::move(ranked));
      }
    }
    return by_tile;
  }

  CostFeatures features(const Problem& p, const IgemmWgmmaParams& s) const {
    const Gemm g = gemm_of(p);
    const double out_elements = static_cast<double>(output_elements(p));
    const int atom_k = atom_k_of(p);
    const int chunk = split_chunk(g, atom_k, s);
    const int warps = 4 * multiplying_warpgroups(s);  // the warps that multiply
    const double slices = static_cast<double>(chunk) / mma_k_of(p);
    // templates/igemm_wgmma.cu: per MMA_K reduction elements (16, tf32 8) each warpgroup issues one wgmma
    // m64nBLOCK_N (counted per warp as BLOCK_N / 32 fma-like instructions: a tf32 k8 takes the tensor cores as long as
    // a 16-bit k16); the block loads BLOCK_M + BLOCK_N rows of 16-byte units, each activation unit with its tap decoded
    // and bounds checked (about 8 instructions).
    // fw2's pixel rows count as 16-byte units too: counted as its 4- or 8-byte copies they ranked conv1's measured
    // candidates worse (the best of the first 10 0.998 -> 0.893 of the fastest: bench/results/h200/fold-on-load-*).
    // With the halo each step (a chunk of atom_k channels, every tap) loads the patch's pixels once.
    const double halo_steps = static_cast<double>(chunk) / (atom_k * std::max(g.taps, 1));
    const double activation_loads = s.halo ? halo_steps * patch_pixels_used(g, s) * atom_k / chunk_of(p)
                                           : static_cast<double>(s.block_m) * chunk / chunk_of(p);
    // With `ta` the pixel rows come by TMA too: no activation loads issued, none decoded.
    const double issued_activation_loads = s.tma_activation ? 0.0 : activation_loads;
    // With TMA one thread's copy a K atom brings the filter rows: no filter loads counted. A 2:4 filter's (`sp`) are
    // half the values and an eighth more of metadata, its wgmma.sp half the tensor-core time of the dense products.
    const double sparse_share = s.sparse_filter ? kSparseFilterShare : 1.0;
    const double filter_loads =
        s.tma_filter ? 0.0 : static_cast<double>(s.block_n) * chunk / chunk_of(p) * sparse_share;
    const double tiles = tiles_per_block(s);  // a block's work is that many tiles'
    return {.blocks = blocks_of(g, s),
            .threads_per_block = threads_of(s),
            .smem_bytes_per_block = smem_bytes(p, s),
            .flops = static_cast<double>(flops(p)),
            .dram_bytes = static_cast<double>(min_bytes(p)) + (reduce_pass(s) ? 2.0 * out_elements * s.split_k * 4 : 0),
            .flops_per_block = tiles * 2.0 * s.block_m * s.block_n * chunk,
            .fma_instructions = tiles * warps * slices * warpgroup_cols(s) / 32.0 * (s.sparse_filter ? 0.5 : 1.0),
            .shared_load_instructions = 0,
            .global_load_instructions = tiles * (issued_activation_loads + filter_loads) / 32,
            .address_instructions = tiles * issued_activation_loads / 32 * 8,
            .main_loop_steps =
                tiles_per_block(s) * (s.halo ? chunk / (atom_k * std::max(g.taps, 1)) : chunk / block_k_of(atom_k, s)),
            .pipelined = true,
            .atomic_outputs = 0,
            .extra_launches = reduce_pass(s) ? 1 : 0};
  }

  static constexpr std::size_t kMaxCandidates = 64;  // 32 of each pipeline
  // A 2:4 filter's bytes against the dense filter's: half the values, and 64 bytes of metadata for 16 rows of 32
  // (an eighth of the values' bytes on top).
  static constexpr double kSparseFilterShare = 0.5625;
  // Whether the search space offers the filter by TMA (each warp-specialized candidate's `tma` twin beside it):
  // IgemmWgmmaGpu's TMA tests (the corpus, every tile and pipeline, split-K, the epilogue) passed on the H200.
  static constexpr bool kOfferTma = true;
  // Whether it offers warp-specialized candidates that compute several tiles a block (ws2-ws8; each candidate's twin
  // where the output has more 128 x 128 tiles than the GPU has SMs).
  static constexpr bool kOfferTilesPerBlock = true;
  // Whether it offers the pixel rows by TMA (`ta`): each `tma1` candidate's twin where the activation is a matrix.
  // Measured beside their twins when each block retargeted its own copy of the map in global memory (180 pairs, the 12
  // stride-1 1 x 1 problems of ResNet-50 fp16 at batch 32, H200; bench/results/h200/pixel-rows-by-tma-2026-11-29/) they
  // took 1.058x the time, the best of 2 problems by 1-2%. With the map a parameter (no retarget) they took 0.968x
  // and 0.937x their twins' time at batch 8 and 32 (244 and 246 pairs, the same problems; H200,
  // bench/results/h200/tensor-maps-as-parameters-2026-12-02/) and were the fastest kernel of 8 and 10 of 23 problems.
  static constexpr bool kOfferTmaActivation = true;
  // Whether it offers the pixel rows by TMA in im2col mode (`ta2`): each `tma1` candidate's twin where the activation
  // is not a matrix (a filter of more than one tap, a stride or padding). Measured against every other candidate on
  // ResNet-50 in fp16 (H200; bench/results/h200/im2col-tma-2026-11-30/) the best `ta2` kernel was 1.06-1.20x faster
  // than the best without on 8 of the 10 problems it serves at batch 32 (the 3 x 3 and strided layers, whose gather
  // the copy engine takes over), and 0.84-0.98x on 8 of 10 at batch 8 (the blocks' retargets before their first
  // copy): the tuner measures both.
  static constexpr bool kOfferIm2col = true;
  // Whether it offers two warpgroups on the channels of a 64-pixel tile (`wn`): each such candidate's twin, beside it.
  // Not now: measured beside their one-warpgroup twins on ResNet-50's small-M layers in fp16 (H200;
  // bench/results/h200/two-warpgroups-2026-11-29/) they took 0.957x the time at batch 32 (78 pairs), 0.995x at 8
  // (155) and 1.002x at 1 (249), and were the fastest of 1 of 23 problems: the 64-pixel tiles they improve are not
  // where the best are. Their kernels stay correct and reachable by name.
  static constexpr bool kOfferSplitN = false;
  // Whether it offers the halo (`hl`): each one-tile, unsplit, tap-major `tma1` candidate's twins on 2-D problems of
  // stride and dilation 1 with more than one tap and whole 128-byte rows of channels (one tile a block, several, and
  // filter-stationary). Not now: measured against every other candidate on ResNet-50's stride-1 3 x 3 layers in fp16
  // at batches 8 and 32 and NoScope roundabout's conv4 at 1,024 images (H200;
  // bench/results/h200/halo-patch-2026-11-30/) the best halo kernel took 1.17-1.74x the time of the best without, on
  // the 64-channel layers where it reads the activation least: Nsight Compute has its SMs as busy as the gather's, the
  // tensor pipe a third of the time in both (64-channel wgmma read as many operand bytes from shared memory as they
  // compute). Their kernels stay correct (GPU-verified) and reachable by name.
  static constexpr bool kOfferHalo = false;
  // Whether it offers filter multicast (`mc`): each one-tile `tma1` candidate's twins in clusters of 2 and 4 pixel
  // tiles, beside it. Not now: measured beside their one-block twins on every igemm_wgmma candidate of ResNet-50 in
  // fp16 at batch 32 (H200; bench/results/h200/filter-multicast-2026-11-30/) clusters of 2 took 1.13x the time (236
  // pairs) and of 4 1.36x (226), none the fastest of any of the 23 problems, the L2-heaviest (conv5_reduce) 1.02x:
  // the operand traffic through L2 that it divides is not what bounds these kernels, and a cluster's blocks wait for
  // each other's consumers. Their kernels stay correct (GPU-verified) and reachable by name.
  static constexpr bool kOfferMulticast = false;
  // Whether it offers the operands swapped (`sw`, add_swapped_twins). Not now: measured against every other candidate
  // on ResNet-50 in fp16 (H200; bench/results/h200/swapped-operands-2026-11-30/) the best swapped kernel took 1.12x the
  // time of the best unswapped one at batch 32 (23 problems) and 1.05x at 8 (20), the fastest of 1 and 2 problems by
  // 0.7-6%: the wgmma's width is not what bounds these kernels (the cp.async fill through L1 and the gather's address
  // arithmetic are), and a swapped tile has fewer warpgroups to hide its loads. Their kernels stay correct
  // (GPU-verified) and reachable by name; they are the operand order a 2:4 wgmma.sp needs (the filter as A).
  static constexpr bool kOfferSwap = false;
  // Whether it offers the operands swapped beside each candidate whose pixel rows come by TMA too (`ta1`): the
  // swapped kernels were rejected above with the pixel rows by cp.async, which bound them. With both operands by TMA,
  // measured against every other candidate on ResNet-50's five long-reduction 1 x 1 layers in fp16 at batches 8 and 32
  // (H200; bench/results/h200/swap-with-tma-activation-2026-12-02/), they were the fastest of 2 of the 10 problems:
  // conv4_reduce at 32 by 1.069x (a 96-pixel tile filling the last wave) and conv5_1_reduce at 8 by 1.017x (112).
  static constexpr bool kOfferSwapWithTmaActivation = true;
  // Whether it offers split-K in a cluster (`cr`): each split candidate's twin, beside it.
  static constexpr bool kOfferClusterReduce = true;
  // Whether it offers the warps copying their staged output rows out themselves (`oc`): each candidate of several
  // tiles a block with a 16-bit output buffer, its twin beside it (bench/results/h200/warp-copy-output-2026-12-02/).
  static constexpr bool kOfferWarpCopyOutput = true;
  // Whether it offers the width folded as the pixel rows are loaded (`fw2`): each `fw1` candidate's twin, beside it.
  static constexpr bool kOfferFoldOnLoad = true;

  // How fast an SM fills its blocks' stages, from the measurements of every candidate on the cuSNN layers (H200 tf32
  // and fp16, H100 fp16 and bf16; bench/results/h200/wgmma-tf32-2026-11-29/):
  // - at most kFillBytesPerCycle bytes of operand rows a clock (16-byte cp.async through L1): a block's steps of
  //   (BLOCK_M + BLOCK_N) x 128 x K_ATOMS bytes took that long, e.g. 37.4 us predicted for the 36 steps of 256 x 256
  //   rows of res_256to256_14 at batch 32 in tf32 (measured 38.0), where Nsight Compute has L1/TEX 77% busy and the
  //   tensor cores not;
  // - and no faster than the loads in flight cover the latency of one, kLoadLatencyUs: a step costs at least
  //   kLoadLatencyUs over the steps loaded ahead (STAGES - 2 in the shared pipeline, STAGES - 1 warp-specialized).
  // With these two the estimate's pick among the measured candidates came within 1.07x (tf32, H200), 1.09x (fp16,
  // H200) and 1.15x (fp16 / bf16, H100) of the best, geometric means, against 1.54x, 1.38x and 1.46x with the fixed
  // step latency (0.1 us, 0.07 warp-specialized) and operand traffic through L2 alone that it had before.
  // Out of sample (every candidate of ResNet-50 at batch 1, 8 and 32 in tf32, at 8 in fp16, and of DenseNet-121 at 8 in
  // tf32, H200; bench/results/h200/wgmma-defaults-2026-11-29/) its pick was 1.13x the best: many steps of one K atom
  // chosen over half as many of two, and large tiles in two waves over small ones in one. Two more terms:
  // - a step takes at least kStepFloorUs however many are in flight (the barrier, and the wait for the step before's
  //   wgmma group): per step, twice the K atoms cost less than twice the time;
  // - each wave of blocks pays kWaveUs once, on top of its main loop: its first stage's load, which nothing hides, and
  //   its output's store.
  // With them the pick came within 1.06x of the best over those 172 problems (1.13x before), the cuSNN sets included.
  // Several tiles a block (ws2-ws8; bench/results/h200/tiles-per-block-2026-11-29/): their blocks pay their tiles'
  // waves, as their one-tile twins, and kSeveralTilesUs more, so that the twin comes first. Counting a block's wave
  // once instead made them the default of 6 of 46 ResNet-50 problems in fp16, where they never won: the pick came
  // within 1.074x of the best in fp16 and 1.075x in tf32 (batch 32); as now, 1.053x and 1.075x, and the earlier sets
  // unchanged. Not counted either: a wave's store at the SM's share of the DRAM bandwidth (once for blocks of several
  // tiles): 1.060x in tf32 but 1.114x in fp16.
  // Then 16-bit outputs of several tiles a block went out through a buffer of their own by bulk copies (bulk output;
  // bench/results/h200/bulk-output-2026-11-29/): such kernels became the best of 9 of 23 ResNet-50 problems in fp16 at
  // batch 32, and the pick, still charging them their tiles' waves, came within 1.090x of the best. Two terms:
  // - a bulk-output block's tile waves after its first pay only kLoadLatencyUs, not kWaveUs: the store runs on;
  // - a kernel of one tile a block, whose blocks store between their loads, has the DRAM floor
  //   kStoreBetweenLoadsFloor times the tensors' bytes over the bandwidth (the big 1 x 1 layers' candidates all met
  //   the floor and tied); blocks of several tiles, bulk output or not, have the floor itself.
  // With them (`convgen db replay` on the published sets, tuner/search_order's host test): 1.041x in fp16 at batch 32
  // (1.067x with the first term alone), 1.057x at batch 8, tf32 at batch 32 1.076x -> 1.050x (the floor for several
  // tiles of tf32 too: they were 0.88x their twins), the cuSNN fp16 set and the earlier sets unchanged; 1.2 times the
  // floor took tf32 to 1.088x.
  static constexpr double kSeveralTilesUs = 0.01;
  // The warps copying their staged rows out (`oc1`) against their bulk-copy twins: 0.94x the time at batch 32 (212
  // pairs, 0.90-1.42x the other way) and 0.90x at batch 8 (73 pairs) on ResNet-50 fp16 (H200;
  // bench/results/h200/warp-copy-output-2026-12-02/), so the twin with the copy comes first.
  static constexpr double kWarpCopyOutputRatio = 0.94;
  // The width folded as loaded (`fw2`) against its copy-pass twin (`fw1`), whose pass this estimate does not count:
  // on ResNet-50's conv1 (H200; bench/results/h200/fold-on-load-2026-12-02/) fw1 took 1.18-1.36x its fw2 twin's time
  // in fp16 (108 pairs, batches 1, 8 and 32) and 0.85-0.91x in tf32 (96, in 8-byte copies; fw2's best the fastest
  // by 2-9%).
  static constexpr double kFoldOnLoadRatio16 = 0.80;
  static constexpr double kFoldOnLoadRatioTf32 = 1.16;
  // Split-K's second pass, besides its traffic: the reduce entry's launch and the wait for the main one's last block.
  // 2 us before; 1.25 picked better on every published set of the search space measured (`db replay`: the cuSNN
  // fp16 set 1.088x -> 1.078x, ResNet-50 at batch 1, 8, 32 and DenseNet-121 at 8 1.059x -> 1.053x, the rest within
  // 0.003x), where 1 and less lost on ResNet-50 fp16 at batch 32 (1.041x -> 1.051x).
  static constexpr double kSplitPassUs = 1.25;
  // Split-K in a cluster (`cr`): the two cluster barriers, a cost for each block of the cluster after the first (the
  // wait for the slowest, a thread's loads from each), and the rate at which a block reads the other blocks' shared
  // memory. First guessed at 0.3 us and nothing a block, the order picked clusters of 8 at batches 1 and 8 (1.32x the
  // fastest measured on ResNet-50's small-M layers in fp16, H200); with these two read off those measurements
  // (`convgen db replay`; bench/results/h200/two-warpgroups-2026-11-29/): 1.031x at batch 1, 1.092x at 8, 1.036x at 32
  // (bench/results/h200/cluster-split-2026-11-29/, 1.043x before).
  static constexpr double kClusterSyncUs = 0.5;
  static constexpr double kClusterBlockUs = 0.5;
  static constexpr double kClusterBytesPerCycle = 32;
  static constexpr double kStoreBetweenLoadsFloor = 1.1;
  static constexpr double kFillBytesPerCycle = 32;
  static constexpr double kLoadLatencyUs = 1.0;
  static constexpr double kStepFloorUs = 0.3;
  static constexpr double kWaveUs = 2 * kLoadLatencyUs;
  // The filter by TMA (tma1), from every warp-specialized candidate measured beside its TMA twin (1,440 pairs: ResNet-50
  // in tf32 and the cuSNN layers in fp16, batches 1, 8 and 32, H200; bench/results/h200/tma-filter-2026-11-29/): the
  // twin was 0.78-0.85x the time on the deep layers at batch 32 and 1.05-1.10x on the small ones at batch 1, about
  // 0.5-0.8 us more. Two terms read off them:
  // - its filter rows fill a stage at twice cp.async's rate (they count kTmaFillShare of a row against
  //   kFillBytesPerCycle: the copy engine writes them, no thread issues them);
  // - a kernel pays kTmaStartUs once: then the tensor map read from global memory (acquired through the tensormap
  //   proxy) before the first copy; the map is a kernel parameter now, but replayed on the measurements of the new
  //   kernels (bench/results/h200/tensor-maps-as-parameters-2026-12-02/) smaller start costs picked no better.
  // With them the pick came within 1.04x of the best on ResNet-50 and 1.09x on the cuSNN layers (1.09x and 1.18x
  // counting the filter rows as free and no start cost; 1.09x and 1.11x not offering TMA at all).
  static constexpr double kTmaFillShare = 0.5;
  static constexpr double kTmaStartUs = 0.75;
  // The pixel rows by TMA (`ta`; a guess when each block first wrote its own copy of the activation's map): they fill
  // at the filter rows' TMA rate, and pay a start once (kept: see kTmaStartUs).
  static constexpr double kTmaRetargetUs = 0.5;
  // The pixel rows by TMA in im2col mode (`ta2`): the same start, read off the measurements of
  // bench/results/h200/im2col-tma-2026-11-30/ by `db replay` (pick within 1.092x / 1.179x of the fastest at batch 32 /
  // 8 with 0.5 us, 1.096x / 1.080x with 1.5, 1.065x / 1.080x with 2.5 and 3).
  static constexpr double kIm2colStartUs = 2.5;

  // A rough time in microseconds that orders the search space (and so picks the default), the largest of: the
  // tensor-core work of waves of resident blocks at ~80% of the datasheet's dense rate (less with few multiplying
  // warpgroups per SM, which cannot hide the wait between steps); the chain of steps, each at least the load latency
  // over the steps in flight and at least kStepFloorUs; the busiest SM filling its resident blocks' stages
  // (kFillBytesPerCycle: with fewer blocks than SMs, each works alone at that rate) — the largest of these three plus
  // kWaveUs a wave (of tiles); the operand traffic of every block's tiles through L2; the tensors once from DRAM.
  // Then split-K's partial sums and second pass, and TMA's start.
  static double estimate_us(const Problem& p, const Gpu& gpu, const IgemmWgmmaParams& s) {
    // The warp-specialized pipeline's producer refills a stage as soon as it is empty: STAGES - 1 steps in flight
    // against the shared pipeline's PREFETCH = STAGES - 2.
    const double step_latency_us = kLoadLatencyUs / (s.warp_specialized ? s.stages - 1 : s.stages - 2);
    constexpr double kL2OverDram = 1.3;
    const Gemm g = gemm_of(p);
    const int sm_count = std::max(gpu.sm_count, 1);
    const std::int64_t blocks = blocks_of(g, s);
    const int per_sm = resident_blocks(gpu, p, s);
    const double waves = std::ceil(static_cast<double>(blocks) / (static_cast<double>(sm_count) * per_sm));
    const double resident = std::min<double>(per_sm, std::ceil(static_cast<double>(blocks) / sm_count));
    const double warpgroups = resident * multiplying_warpgroups(s);
    const double efficiency = 0.8 * std::min(1.0, s.warp_specialized ? 0.7 + warpgroups * 0.15 : 0.5 + warpgroups / 4);
    const double peak = peak_tflops(gpu, p.precision) > 0 ? peak_tflops(gpu, p.precision) : 8 * gpu.peak_fp32_tflops;
    const double sm_flops_per_us = std::max(peak, 1.0) * 1e6 / sm_count;
    const int atom_k = atom_k_of(p);
    const int chunk = split_chunk(g, atom_k, s);
    // A block of several tiles (ws2-ws8) runs their steps one after another.
    const double tiles = tiles_per_block(s);
    // A 2:4 filter's wgmma.sp (`sp`) does the products of 32 reduction elements in the time of a dense wgmma's 16.
    const double flops_per_block = tiles * 2.0 * s.block_m * s.block_n * chunk * (s.sparse_filter ? 0.5 : 1.0);
    const double compute_us = waves * resident * flops_per_block / (sm_flops_per_us * efficiency);
    // With the halo a step is a chunk of atom_k channels of every tap: the patch's pixels and every tap's filter rows.
    const double steps = s.halo ? static_cast<double>(chunk) / (atom_k * std::max(g.taps, 1))
                                : tiles * std::ceil(static_cast<double>(chunk) / block_k_of(atom_k, s));
    const double latency_us = waves * steps * std::max(step_latency_us, kStepFloorUs);
    const double bytes_per_us = std::max(gpu.dram_bandwidth_gbs, 100.0) * 1e3;
    // Chunk-major: the taps of a chunk read mostly the same activation lines, half of them or more from L1 (a guess:
    // the tuner measures).
    const double activation_share = s.chunk_major ? std::min(1.0, 2.0 / g.taps) : 1.0;
    // With `mc` a cluster's blocks read each filter tile from L2 once.
    const double operand_bytes =
        s.halo ? static_cast<double>(tiles_of(g, s)) * steps *
                         (patch_pixels_used(g, s) + (s.halo == 2 ? 0.0 : static_cast<double>(g.taps) * s.block_n)) *
                         kRowBytes +
                     (s.halo == 2 ? static_cast<double>(blocks_of(g, s)) * filter_region_bytes(p, s) : 0.0)
               : static_cast<double>(tiles_of(g, s)) *
                     (s.block_m * activation_share +
                      static_cast<double>(filter_box_rows(s)) * (s.sparse_filter ? kSparseFilterShare : 1.0)) *
                     chunk * element_bytes(p);
    const double operand_us = operand_bytes / (kL2OverDram * bytes_per_us);
    // With TMA the filter rows bypass the cp.async path (the SM's copy engine writes them, faster).
    const double filter_rows = s.halo == 2 ? 0.0
                                           : (s.halo ? g.taps : 1) * s.block_n * (s.tma_filter ? kTmaFillShare : 1.0) *
                                                 (s.sparse_filter ? kSparseFilterShare : 1.0);
    const double pixel_rows =
        s.halo ? patch_pixels_used(g, s) : s.block_m * (s.tma_activation ? kTmaFillShare : 1.0);
    const double fill_us = waves * resident * steps * (pixel_rows + filter_rows) * kRowBytes *
                           s.k_atoms / (kFillBytesPerCycle * std::max(gpu.clock_mhz, 100.0));
    const double memory_us = static_cast<double>(min_bytes(p)) / bytes_per_us;
    // Split-K in a cluster: no pass, but each block waits at the cluster barrier for the slowest of its cluster, then
    // reads the other blocks' shares of its rows from their shared memory.
    const double cluster_bytes = static_cast<double>(s.split_k - 1) / s.split_k * s.block_m * s.block_n * 4;
    const double split_us =
        reduce_pass(s)     ? 2.0 * static_cast<double>(output_elements(p)) * s.split_k * 4 / bytes_per_us + kSplitPassUs
        : s.split_k > 1 ? kClusterSyncUs + kClusterBlockUs * (s.split_k - 1) +
                              cluster_bytes / (kClusterBytesPerCycle * std::max(gpu.clock_mhz, 100.0))
                        : 0;
    // Blocks of several tiles pay the waves of their tiles, as their one-tile twins, and a hair more (the twin first):
    // the estimate cannot yet tell where the overlap pays (their pairs: 0.88x in tf32, 1.08x in fp16).
    const double tile_waves = std::ceil(static_cast<double>(tiles_of(g, s)) / (static_cast<double>(sm_count) * per_sm));
    // With the output through a buffer of its own (bulk output), a tile's store runs on while the block goes on with
    // the next tile: each tile wave after its blocks' first pays only its first load's latency.
    const bool bulk = bulk_output(p, s);
    const double wave_us = tiles == 1 ? waves * kWaveUs
                           : bulk     ? waves * kWaveUs + (tile_waves - waves) * kLoadLatencyUs
                                      : tile_waves * kWaveUs + kSeveralTilesUs;
    const double tma_start_us = (s.tma_filter ? kTmaStartUs : 0) + (s.tma_activation == 1   ? kTmaRetargetUs
                                                                    : s.tma_activation == 2 ? kIm2colStartUs
                                                                                            : 0);
    // Blocks of one tile store it between their loads: they keep the DRAM busy less of the time than blocks of several
    // tiles, whose producer loads the next tile while the consumers store this one.
    const double floor_us = memory_us * (tiles > 1 ? 1.0 : kStoreBetweenLoadsFloor);
    // A 2:4 kernel's groups do not overlap the next step (PIPELINE_PENDING 0: a wgmma.sp reads its metadata register
    // while it runs): in the shared pipeline, whose threads both load and multiply, a step's products and its wait for
    // the loads add up; warp-specialized, the producer still loads ahead.
    const double main_loop_us = s.sparse_filter && !s.warp_specialized ? compute_us + std::max(latency_us, fill_us)
                                                                       : std::max({compute_us, latency_us, fill_us});
    return (std::max({main_loop_us + wave_us, operand_us, floor_us}) + split_us + tma_start_us) *
           (s.warp_copy_output ? kWarpCopyOutputRatio : 1.0) * fold_on_load_ratio(p, s);
  }
};

}  // namespace

const Family& igemm_wgmma_family() {
  static const IgemmWgmma instance;
  return instance;
}

}  // namespace convgen
