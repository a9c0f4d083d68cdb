// act_sparse: the activation-sparse family (templates/act_sparse.cu): a warp owns a tile of output pixels x 32*tk
// output channels and skips the zeros it finds in each input channel's halo (warp-uniform ballots), with a dense
// loop where a halo is mostly nonzero. Search space, support checks, launch plan (the filter packed once into a
// persistent buffer), cost features with the expected zero fraction as a term.
#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <fmt/format.h>

#include "act_sparse_params.hpp"  // generated from templates/act_sparse.cu
#include "generator/family.hpp"
#include "convgen/error.hpp"
#include "generator/render.hpp"

// The template's logic, independent of the Family API (mirrors the constants of templates/act_sparse.cu).
namespace convgen::act_sparse {


// Field order = CONVGEN_PARAM declaration order in templates/act_sparse.cu (th tw tk wp sc dm sm ur relu lb bs cr).
struct Params {
  int tile_h = 4;          // th: output rows per warp tile
  int tile_w = 7;          // tw: output columns per warp tile
  int k_per_lane = 1;      // tk: output channels per lane
  int warps = 4;           // wp: warps per block, splitting its input channels
  int split_c = 1;         // sc: blocks splitting the input channels (atomics into a zeroed output)
  int dense_at = 0;        // dm: nonzeros per halo from which the dense loop runs (0: the template's cost model)
  int sparse_mode = 3;     // sm: 3 shared halo read by 8, 2 shuffles by 8, 0 one shuffle per nonzero, 1 ffs + switch
  bool unroll2 = false;    // ur: channel loop unrolled by 2 (two register sets)
  bool relu_on_load = false;
  int load_batch = 1;      // lb: input channels a warp loads at once before computing them (1: one channel ahead)
  bool block_staged = false;  // bs: the block stages its channels' halos in shared memory and lists the live ones
  bool cluster_reduce = false;  // cr: a tile's split_c blocks are a cluster and add their partial tiles (sm_90)
  bool operator==(const Params&) const = default;
};


// Halo of one warp tile (input rows x columns one input channel contributes), as the template computes it.
int halo_h(const Problem& problem, const Params& p);
int halo_w(const Problem& problem, const Params& p);

// Why the template cannot run `params` on `problem`, or nullopt. Every decline has a reason.
std::optional<std::string> check_support(const Problem& problem, const Gpu& gpu, const Params& params);

// Candidates, best estimated first, for inputs with `zero_fraction` of zeros (0 = dense), at most `limit`.
std::vector<Params> enumerate(const Problem& problem, const Gpu& gpu, double zero_fraction, std::size_t limit = 8,
                              bool relu_on_load = false);

// The first candidate of enumerate, or nullopt when none is supported.
std::optional<Params> default_params(const Problem& problem, const Gpu& gpu, double zero_fraction,
                                     bool relu_on_load = false);

// With block_staged, the channels the block stages at a time (0 without).
int staged_channels(const Problem& problem, const Params& p);
// Static shared memory of the main entry in bytes.
std::int64_t smem_bytes(const Problem& problem, const Params& p);

// Launch geometry of the main entry; zero_output_first when split_c > 1 (the plan's zero step).
struct Geometry {
  std::array<unsigned, 3> grid{1, 1, 1};
  std::array<unsigned, 3> block{1, 1, 1};
  bool zero_output_first = false;
};
Geometry geometry(const Problem& problem, const Params& p);
// The setup entry (pack_filter): one thread per packed element, 256 per block; its persistent buffer's bytes
// (C * K_PAD * R*S rounded up to 4 when R*S >= 4: the template's [c][k][RS_PAD] layout, K_PAD = K rounded up to
// the 32 * k_per_lane channels of a warp).
Geometry pack_geometry(const Problem& problem, const Params& p);
std::int64_t packed_filter_bytes(const Problem& problem, const Params& p);


// Rough time in microseconds, for ranking: issue-bound instruction count of the busiest SM, or the channel loop's
// latency chain, whichever is longer, plus split-C's atomics. zero_fraction scales the sparse work: a channel's
// halo of h elements has about h * (1 - z) nonzeros, each costing the sparse overhead plus its taps' FMAs, and
// the dense loop runs when that is dearer (as in the template).
double estimate_us(const Problem& problem, const Gpu& gpu, const Params& p, double zero_fraction);



namespace {

constexpr std::int64_t kIntMax = 2147483647;
constexpr int kSparseOverhead = 4;        // per nonzero besides its FMAs (shuffle, convergence check, branch)
constexpr int kSparsePerPosition = 2;     // per halo position: bit test and branch

std::int64_t ceil_div(std::int64_t a, std::int64_t b) { return (a + b - 1) / b; }

struct Derived {
  int halo, halo_regs, tp, kw, tiles, k_groups, c_chunk, c_per_warp;
};

Derived derive(const Problem& pr, const Params& p) {
  const Dims3 out = output_dims(pr);
  Derived d{};
  d.halo = halo_h(pr, p) * halo_w(pr, p);
  d.halo_regs = static_cast<int>(ceil_div(d.halo, 32));
  d.tp = p.tile_h * p.tile_w;
  d.kw = 32 * p.k_per_lane;
  d.tiles = static_cast<int>(pr.n * ceil_div(out.h, p.tile_h) * ceil_div(out.w, p.tile_w));
  d.k_groups = static_cast<int>(ceil_div(pr.k, d.kw));
  d.c_chunk = static_cast<int>(ceil_div(pr.c, p.split_c));
  d.c_per_warp = static_cast<int>(ceil_div(d.c_chunk, p.warps));
  return d;
}

// Registers per thread, roughly: accumulators, two channels (or a load batch) of taps and halo, addresses and loop
// state.
int register_estimate(const Problem& pr, const Params& p) {
  const Derived d = derive(pr, p);
  const int rs = pr.filter.h * pr.filter.w;
  const int channels = std::max(2, p.load_batch);
  // Measured with ptxas (sm_90): about twice the accumulators plus the double-buffered taps.
  return 2 * p.k_per_lane * d.tp + channels * p.k_per_lane * rs + (channels + 1) * d.halo_regs + 32;
}

// Filter taps per input channel as the packed filter stores them: R * S rounded up to 4 when R * S >= 4 (read as
// float4), else R * S; and the load instructions of a warp's taps of one channel.
int rs_pad(const Problem& pr) {
  const int rs = pr.filter.h * pr.filter.w;
  return rs >= 4 ? (rs + 3) / 4 * 4 : rs;
}
int tap_loads(const Problem& pr, const Params& p) {
  const int rs = pr.filter.h * pr.filter.w;
  return (rs >= 4 ? rs_pad(pr) / 4 : rs) * p.k_per_lane;
}

// Static shared memory of the main entry, as the template declares it: the warps' reduction rows (when they or the
// blocks split the channels), the sparse loop 3's per-warp halo, or with block_staged a chunk of channels (each its
// halo in groups of 8, its masks and a list entry) within a 44 KiB budget.
constexpr int kStageBudgetBytes = 44 * 1024;
int reduce_floats(const Problem& pr, const Params& p) {
  const Derived d = derive(pr, p);
  return p.warps > 1 || p.split_c > 1 ? d.kw * (d.tp + 1) : 1;
}
int staged_channel_floats(const Problem& pr, const Params& p) {
  const Derived d = derive(pr, p);
  return (d.halo + 7) / 8 * 8 + d.halo_regs + 1;
}

}  // namespace

int staged_channels(const Problem& pr, const Params& p) {
  if (!p.block_staged) return 0;
  const int fit = (kStageBudgetBytes / 4 - reduce_floats(pr, p)) / staged_channel_floats(pr, p);
  return std::min(derive(pr, p).c_chunk, fit);
}

std::int64_t smem_bytes(const Problem& pr, const Params& p) {
  const Derived d = derive(pr, p);
  if (p.block_staged)
    return 4 * (reduce_floats(pr, p) + std::int64_t{staged_channels(pr, p)} * staged_channel_floats(pr, p) + 5);
  return 4 * (reduce_floats(pr, p) + (p.sparse_mode == 3 ? p.warps * d.halo_regs * 32 : 4) + 4);
}

int halo_h(const Problem& pr, const Params& p) {
  return (p.tile_h - 1) * pr.stride.h + (pr.filter.h - 1) * pr.dilation.h + 1;
}
int halo_w(const Problem& pr, const Params& p) {
  return (p.tile_w - 1) * pr.stride.w + (pr.filter.w - 1) * pr.dilation.w + 1;
}

std::optional<std::string> check_support(const Problem& pr, const Gpu& gpu, const Params& p) {
  if (std::string reason = validate(pr); !reason.empty()) return "invalid problem: " + reason;
  if (pr.precision != Precision::fp32)
    return fmt::format("precision {} is not supported by act_sparse (fp32 only)", pr.precision);
  if (pr.groups != 1) return fmt::format("act_sparse handles ungrouped convolutions only, got groups {}", pr.groups);
  if (pr.input.d != 1 || pr.filter.d != 1 || pr.padding.d != 0)
    return "act_sparse handles 1-D and 2-D convolutions only (depth 1)";
  if (p.tile_h < 1 || p.tile_h > 8) return fmt::format("tile_h must be 1 to 8, got {}", p.tile_h);
  if (p.tile_w < 1 || p.tile_w > 16) return fmt::format("tile_w must be 1 to 16, got {}", p.tile_w);
  if (p.k_per_lane != 1 && p.k_per_lane != 2 && p.k_per_lane != 4)
    return fmt::format("k_per_lane must be 1, 2 or 4, got {}", p.k_per_lane);
  if (p.warps != 1 && p.warps != 2 && p.warps != 4 && p.warps != 8 && p.warps != 16)
    return fmt::format("warps must be 1, 2, 4, 8 or 16, got {}", p.warps);
  if (p.split_c < 1 || p.split_c > 64 || p.split_c > pr.c)
    return fmt::format("split_c must be 1 to min(64, C = {}), got {}", pr.c, p.split_c);
  if (p.cluster_reduce && (p.split_c < 2 || p.split_c > 8))
    return fmt::format("cluster_reduce needs split_c 2 to 8 (a portable cluster), got {}", p.split_c);
  if (p.cluster_reduce && !has_thread_block_clusters(gpu.arch))
    return fmt::format("cluster_reduce needs thread-block clusters (sm_90 and later), not {}", gpu.arch);
  // Blocks that split the input channels add into a zeroed output with atomics: none sees the whole sum an epilogue
  // applies to. Declined (as igemm's split-K, generator/families/igemm.cpp says why) rather than a second pass; in a
  // cluster (cluster_reduce) a block sums the whole and applies it.
  if (p.split_c > 1 && !p.cluster_reduce && !is_identity(pr.epilogue))
    return fmt::format(
        "split_c {} adds partial sums into the output with atomics; the epilogue {} needs the whole "
        "sum (split_c 1)",
        p.split_c, to_string(pr.epilogue));
  if (p.dense_at < 0 || p.dense_at > 128) return fmt::format("dense_at must be 0 to 128, got {}", p.dense_at);
  if (p.sparse_mode < 0 || p.sparse_mode > 3) return fmt::format("sparse_mode must be 0 to 3, got {}", p.sparse_mode);
  if (p.load_batch != 1 && p.load_batch != 2 && p.load_batch != 4 && p.load_batch != 8)
    return fmt::format("load_batch must be 1, 2, 4 or 8, got {}", p.load_batch);
  if (p.load_batch > 1 && p.unroll2)
    return "the channel loop is unrolled by 2 (unroll2) or loaded in batches (load_batch > 1), not both";
  if (p.block_staged && (p.sparse_mode != 3 || p.unroll2 || p.load_batch != 1))
    return fmt::format(
        "block_staged reads halos from shared memory (sparse_mode 3), one channel ahead (no unroll2, load_batch 1); "
        "got sparse_mode {}, unroll2 {}, load_batch {}",
        p.sparse_mode, p.unroll2, p.load_batch);
  const Derived d = derive(pr, p);
  if (p.load_batch > 1 && p.load_batch >= 2 * d.c_per_warp)
    return fmt::format("load_batch {} is at least twice the {} input channels of a warp", p.load_batch,
                       d.c_per_warp);
  if (d.halo > 128)
    return fmt::format("the tile's input halo of {}x{} = {} elements exceeds 128 (4 per lane)", halo_h(pr, p),
                       halo_w(pr, p), d.halo);
  if (activation_elements(pr) > kIntMax || output_elements(pr) > kIntMax)
    return "act_sparse indexes tensors with int: the activation and output must have fewer than 2^31 elements";
  // A warp whose channel range is empty only wastes its slot; so does a tile much wider than the output.
  if (p.warps > 1 && std::int64_t{p.warps - 1} * d.c_per_warp >= d.c_chunk)
    return fmt::format("{} warps leave some without input channels ({} per block)", p.warps, d.c_chunk);
  if (std::int64_t{p.split_c - 1} * d.c_chunk >= pr.c)
    return fmt::format("split_c {} leaves blocks without input channels (C = {})", p.split_c, pr.c);
  const Dims3 out = output_dims(pr);
  if (p.tile_h > out.h && p.tile_h > 1) return fmt::format("tile_h {} exceeds the output height {}", p.tile_h, out.h);
  if (p.tile_w > out.w && p.tile_w > 1) return fmt::format("tile_w {} exceeds the output width {}", p.tile_w, out.w);
  if (d.kw > 32 * ceil_div(pr.k, 32))
    return fmt::format("k_per_lane {} gives {} channels per warp for K = {}", p.k_per_lane, d.kw, pr.k);
  if (d.tiles > kIntMax || d.k_groups > 65535 || p.split_c > 65535) return "grid limits exceeded";
  if (p.k_per_lane * d.tp > 64)
    return fmt::format("{} accumulators per lane (k_per_lane {} x {} pixels) exceed 64: ptxas spills past that",
                       p.k_per_lane * d.tp, p.k_per_lane, d.tp);
  const int regs = register_estimate(pr, p);
  if (regs > gpu.max_regs_per_thread)
    return fmt::format("about {} registers per thread exceed the gpu's {}", regs, gpu.max_regs_per_thread);
  const int regs_per_block = gpu.regs_per_block > 0 ? gpu.regs_per_block : 65536;
  if (regs * 32 * p.warps > regs_per_block)
    return fmt::format("about {} registers per thread x {} threads exceed the {} of a block (ptxas would spill)", regs,
                       32 * p.warps, regs_per_block);
  if (p.block_staged && staged_channels(pr, p) < 1)
    return "block_staged: the warps' reduction rows leave no shared memory to stage a channel in";
  const int smem = static_cast<int>(smem_bytes(pr, p));
  if (smem > std::min(gpu.smem_per_block_bytes, 48 * 1024))
    return fmt::format("{} bytes of shared memory exceed the {} allowed", smem, std::min(gpu.smem_per_block_bytes, 48 * 1024));
  if (32 * p.warps > gpu.max_threads_per_block)
    return fmt::format("{} threads exceed the gpu's {}", 32 * p.warps, gpu.max_threads_per_block);
  return std::nullopt;
}

Geometry geometry(const Problem& pr, const Params& p) {
  const Derived d = derive(pr, p);
  return {.grid = {static_cast<unsigned>(d.tiles), static_cast<unsigned>(d.k_groups), static_cast<unsigned>(p.split_c)},
          .block = {static_cast<unsigned>(32 * p.warps), 1, 1},
          .zero_output_first = p.split_c > 1 && !p.cluster_reduce};
}

namespace {
std::int64_t packed_elements(const Problem& pr, const Params& p) {
  const std::int64_t kw = 32 * p.k_per_lane;
  return std::int64_t{pr.c} * ceil_div(pr.k, kw) * kw * rs_pad(pr);
}
}  // namespace

Geometry pack_geometry(const Problem& pr, const Params& p) {
  return {.grid = {static_cast<unsigned>(ceil_div(packed_elements(pr, p), 256)), 1, 1}, .block = {256, 1, 1}};
}

std::int64_t packed_filter_bytes(const Problem& pr, const Params& p) { return packed_elements(pr, p) * 4; }


double estimate_us(const Problem& pr, const Gpu& gpu, const Params& p, double zero_fraction) {
  const Derived d = derive(pr, p);
  const int rs = pr.filter.h * pr.filter.w;
  const double a = static_cast<double>(d.tp) * rs * p.k_per_lane / d.halo;  // FMAs per halo position
  const double density = 1 - zero_fraction;
  // Sparse loop (mode 2, as measured best): per group of 8 positions a test; a group with a nonzero (probability
  // 1 - z^8 for independent zeros) shuffles all 8 and tests each bit; each nonzero then costs its FMAs. Its
  // dependent chain is one shuffle latency (~40 cycles) per nonzero group.
  const double groups = std::ceil(d.halo / 8.0);
  const double live_groups = groups * (1 - std::pow(zero_fraction, 8));
  const double sparse = 2 * groups + live_groups * (8 + 2 * 8) + d.halo * density * (1 + a);
  const double dense = d.halo * (1 + a);
  const bool sparse_wins = sparse < dense;
  // A warp's tap load (float4, or one float per tap for R * S < 4) moves up to 32 * 16 bytes through the SM's
  // 128-byte-per-clock L1: 4 clocks of the SM, 16 issue slots of its 4 schedulers.
  const double per_channel = std::min(dense, sparse) + d.halo_regs * 3 + 16.0 * tap_loads(pr, p) + 12;
  const double chain = (sparse_wins ? live_groups * 40 : 0) + 60;
  const std::int64_t warps_total = std::int64_t{d.tiles} * d.k_groups * p.split_c * p.warps;
  const int sms = std::max(gpu.sm_count, 1);
  const double warps_per_sm = std::ceil(static_cast<double>(warps_total) / sms);
  const double clock_mhz = gpu.clock_mhz > 0 ? gpu.clock_mhz : 1700;
  const int regs = std::min(255, register_estimate(pr, p));
  const double resident = std::max(1.0, std::min({warps_per_sm, 64.0, std::floor(65536.0 / (32.0 * regs))}));
  // Issue-bound: the SM's 4 schedulers; latency-bound: each warp's serial chain, resident warps at a time; the
  // channel loads (prefetched one channel ahead) need ~700 cycles shared by the resident warps of a scheduler.
  const double issue_cycles = warps_per_sm * d.c_per_warp * per_channel / 4;
  // (Loads one channel ahead: enumerate ranks load_batch 1 geometries only; their batched twins are not estimated.)
  const double serial_cycles = std::ceil(warps_per_sm / resident) * d.c_per_warp *
                               std::max(per_channel + chain, 700.0 / std::max(1.0, resident / 4));
  const double reduce_cycles = (p.warps > 1 ? d.kw * d.tp * 2.0 / 32 : 0) * warps_per_sm / p.warps;
  double us = (std::max(issue_cycles, serial_cycles) + reduce_cycles) / clock_mhz;
  // Bytes through L2 where L1 misses: every warp's halo and taps per channel, of which about half hit L1 (ncu: 47%
  // L1 hit rate on res_128to128_28 at batch 8); L2 reads at about twice the DRAM bandwidth. Counting every load as
  // a miss ranked large tiles too high: with half, the first candidate of the cusnn layers came within 1.25x (70%
  // zeros) and 1.28x (90%) of the best of about 60 measured on an H100, against 1.27x and 1.40x
  // (bench/results/h100/act_sparse/2026-11-25-tuned/model-study/).
  const double l2_bytes =
      0.5 * static_cast<double>(warps_total) * d.c_per_warp * (d.halo + d.kw * rs_pad(pr)) * 4.0;
  const double l2_gbs = 2 * (gpu.dram_bandwidth_gbs > 0 ? gpu.dram_bandwidth_gbs : 1000);
  us = std::max(us, l2_bytes / (l2_gbs * 1e3));
  if (p.split_c > 1 && p.cluster_reduce) {
    // Each block reads its share of the tile from every block's shared memory, at about one float per clock per SM
    // (distributed shared memory), between two cluster barriers.
    us += static_cast<double>(output_elements(pr)) * p.split_c / (std::max(gpu.sm_count, 1) * clock_mhz) + 0.1;
  } else if (p.split_c > 1) {
    // Atomic adds of every split's tile in L2 (~1 per clock per 2 slices), plus the zero pass before the kernel
    // (conv/plan_passes.hpp, launched early: 0.4 us a call less than the memset node it replaced, measured on the H200
    // on dense_128to32_7 at batch 1, bench/results/h200/zero-pass-2026-11-30/; so 0.6 where the memset was 1.0).
    us += static_cast<double>(output_elements(pr)) * p.split_c / (64.0 * clock_mhz) + 0.6;
  }
  return us;
}

std::vector<Params> enumerate(const Problem& pr, const Gpu& gpu, double zero_fraction, std::size_t limit,
                              bool relu_on_load) {
  std::vector<std::pair<double, Params>> ranked;
  for (int th : {1, 2, 4, 7, 8})
    for (int tw : {1, 2, 4, 7, 8, 14, 16})
      for (int tk : {1, 2, 4})
        for (int warps : {1, 2, 4, 8, 16})
          for (int sc = 1; sc <= 64; sc *= 2) {
            const Params p{.tile_h = th, .tile_w = tw, .k_per_lane = tk, .warps = warps, .split_c = sc,
                           .dense_at = 0, .relu_on_load = relu_on_load};
            if (check_support(pr, gpu, p)) continue;
            const Derived d = derive(pr, p);
            if (d.halo_regs * 32 > d.halo * 1.5 && d.halo > 32) continue;  // mostly empty lanes
            if (d.c_per_warp < 4 && (warps > 1 || sc > 1)) continue;        // reduction overhead dominates
            // ptxas (CUDA 13.0, sm_80) spills 4-8 bytes at 72 registers for one-row or one-column tiles of filters
            // taller than 3 rows (5x5: th1 x tw2, th1 x tw4 and th2 x tw1 spill; th2 x tw2, th2 x tw4, th4 x tw4
            // do not).
            if ((th == 1 || tw == 1) && pr.filter.h > 3) continue;
            // ... and 4 bytes at 128 registers for 2 x 2 tiles of 7 x 7 filters (the taps of two channels alone take
            // 98 registers).
            if (th * tw <= 4 && pr.filter.h * pr.filter.w > 25) continue;
            ranked.emplace_back(estimate_us(pr, gpu, p, zero_fraction), p);
          }
  std::stable_sort(ranked.begin(), ranked.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  // The channel loop unrolled by 2 (no register copies between channels, twice the code) wins or loses by up to a
  // third depending on the layer (measured on the H100 over the cusnn layers at 70% and 90% zeros: geometric means
  // 0.99x and 1.04x, single layers 0.62x to 1.44x), which the estimate cannot tell: the twins of the best
  // geometries are offered after the first kUnrollAfter geometries, for the tuner to measure.
  // So are the same geometries with a warp's channels loaded in batches (load_batch: its channel count rounded up to
  // a power of 2, at most 8, or the largest that fits), which the estimate cannot rank either: measured on the H200
  // (resnet20_cifar at batch 1 and 2, every candidate) against the same geometry loading one channel ahead, 1.04-1.26x
  // faster on 1x1 layers; on 3x3 layers the geometric mean per layer-batch was 0.81-1.14x, below 1 on 10 of 12
  // (bench/results/h200/act-sparse-load-batch-2026-11-29/).
  // The block-staged loop (block_staged) is not offered: as twins of the first 8 geometries, measured on the H200 over
  // the cusnn layers at batches 1 to 8 (0, 50 and 90% zeros, blob and uniform; 96 layer-batches), it was never the
  // fastest by more than 1.5%, and its best ran 0.76-0.89x as fast as the plain loop's best on the geometric mean
  // (bench/results/h200/act-sparse-staged-2026-11-30/).
  // Nor are warp tiles (each warp a pixel tile of its own over the block's channels, their taps copied into shared
  // memory once per block, which cut the taps' L2 traffic): measured on the H200 over the cusnn layers (90% blob zeros
  // at batches 1 to 8, 70% at 1 and 8) their best ran 0.46x and 0.52x as fast as the plain loop's best, never the
  // fastest; ncu showed the plain loop bound by issue (about 5 warp instructions per useful FMA), not by L2
  // (bench/results/h200/act-sparse-warp-tiles-2026-11-30/, convgen b64af28).
  // Nor are split channels reduced in a cluster (cluster_reduce: the tile's split blocks add their partial tiles from
  // each other's shared memory, no zero pass, no atomics): as twins of the split geometries among the first 32,
  // measured on the H200 over the cusnn layers at 90% blob zeros, batches 1 to 8, the atomics' best ÷ the cluster's
  // best was 0.86 on the geometric mean over 23 problems, the cluster's fastest on 1 (by 1%)
  // (bench/results/h200/act-sparse-cluster-reduce-2026-11-30/, convgen a46c105). It stays a verified template path
  // (`--kernel`), the one that serves split channels with an epilogue.
  // Testing the shared halo 4 positions at a time instead of 8 (ptxas predicates a live group's FMAs, so every one of
  // them issues) measured as twins of the first 8 geometries: 0.99x on the geometric mean over 384 pairs, the fastest
  // on 2 of 48 layer-batches (bench/results/h200/act-sparse-groups-of-4-2026-11-30/, convgen 6d924c8).
  constexpr std::size_t kUnrollAfter = 8;
  const std::size_t twins = limit >= 2 * kUnrollAfter ? limit / 6 : 0;
  std::vector<Params> out;
  std::size_t taken = 0;
  for (; taken < ranked.size() && taken + 2 * twins < limit; ++taken) out.push_back(ranked[taken].second);
  std::vector<Params> added;
  for (std::size_t i = 0; i < std::min(twins, out.size()); ++i) {
    Params twin = out[i];
    twin.unroll2 = true;
    added.push_back(twin);
  }
  for (std::size_t i = 0; i < std::min(twins, out.size()); ++i) {
    Params twin = out[i];
    const int channels = derive(pr, twin).c_per_warp;
    // The largest batch that fits the registers (a large tile's accumulators leave room for fewer channels).
    for (twin.load_batch = channels > 4 ? 8 : channels > 2 ? 4 : 2; channels >= 2 && twin.load_batch >= 2;
         twin.load_batch /= 2)
      if (!check_support(pr, gpu, twin)) {
        added.push_back(twin);
        break;
      }
  }
  // Slots a geometry without a batched twin left: the next geometries of the ranking.
  for (; taken < ranked.size() && out.size() + added.size() < limit; ++taken) out.push_back(ranked[taken].second);
  out.insert(out.begin() + static_cast<std::ptrdiff_t>(std::min(kUnrollAfter, out.size())), added.begin(),
             added.end());
  return out;
}

std::optional<Params> default_params(const Problem& pr, const Gpu& gpu, double zero_fraction, bool relu_on_load) {
  auto all = enumerate(pr, gpu, zero_fraction, 1, relu_on_load);
  if (all.empty()) return std::nullopt;
  return all.front();
}

}  // namespace convgen::act_sparse

namespace convgen {
namespace {

namespace as = convgen::act_sparse;

// Instructions one warp issues per cycle at most (CostFeatures::warp_issue_rate): ballots, shuffles and branches
// between its FMAs. The SIMT families' rates were chosen on the H200's measurements (bench/results/h200/seed-
// studies-2026-11-28/README.md says how); they matter where few warps share an SM (small layers, batch 1).
constexpr double kWarpIssueRate = 0.25;

as::Params to_logic(const ActSparseParams& s) {
  return {.tile_h = s.tile_h, .tile_w = s.tile_w, .k_per_lane = s.k_per_lane, .warps = s.warps, .split_c = s.split_c,
          .dense_at = s.dense_at, .sparse_mode = s.sparse_mode, .unroll2 = s.unroll2, .relu_on_load = s.relu_on_load,
          .load_batch = s.load_batch, .block_staged = s.block_staged, .cluster_reduce = s.cluster_reduce};
}
ActSparseParams from_logic(const as::Params& p) {
  ActSparseParams s;
  s.tile_h = p.tile_h;
  s.tile_w = p.tile_w;
  s.k_per_lane = p.k_per_lane;
  s.warps = p.warps;
  s.split_c = p.split_c;
  s.dense_at = p.dense_at;
  s.sparse_mode = p.sparse_mode;
  s.unroll2 = p.unroll2;
  s.relu_on_load = p.relu_on_load;
  s.load_batch = p.load_batch;
  s.block_staged = p.block_staged;
  s.cluster_reduce = p.cluster_reduce;
  return s;
}

class ActSparse final : public Family {
 public:
  const TemplateInterface& interface() const override { return act_sparse_interface(); }

  std::optional<std::string> check_support(const Problem& p, const Gpu& gpu, const KernelSpec& spec) const override {
    if (spec.family != ActSparseParams::family) return fmt::format("kernel {} is not an act_sparse kernel", spec.family);
    const as::Params a = to_logic(params_of<ActSparseParams>(spec));
    if (std::optional<std::string> reason = act_sparse::check_support(p, gpu, a)) return reason;
    // relu1 computes the convolution of max(0, x): a problem that asks for it. relu0 serves one too, behind the
    // ReLU prologue plan_for gives it.
    if (a.relu_on_load && !p.relu_on_load)
      return "relu1 applies max(0, x) on load, which the problem does not ask for (relu_on_load 0)";
    return std::nullopt;
  }

  // The template's prelude, and for split channels reduced in a cluster (cr1) the cluster's size as a macro: the
  // entry's __cluster_dims__ attribute is there for those kernels only.
  KernelSource render(const Problem& p, const KernelSpec& spec) const override {
    KernelSource source = render_kernel(p, spec, interface());
    const ActSparseParams s = params_of<ActSparseParams>(spec);
    if (s.cluster_reduce) {
      const std::string line = fmt::format("#define CONVGEN_ACT_SPARSE_CLUSTER_SIZE {}\n", s.split_c);
      const std::size_t after = source.text.find("#define CONVGEN_PRELUDE 1\n");
      if (after == std::string::npos) throw Error("act_sparse: the rendered prelude has no CONVGEN_PRELUDE line");
      source.text.insert(after + std::string_view("#define CONVGEN_PRELUDE 1\n").size(), line);
    }
    return source;
  }

  std::vector<KernelSpec> enumerate(const Problem& p, const Gpu& gpu) const override {
    std::vector<KernelSpec> specs;
    // 48: the model's ranking near the top is rough (on the cusnn layers at 70% zeros, batches 1 to 8, the best of
    // its first 24 measured on an H100 was 7% to 51% faster than the best of its first 4), and a layer's candidates
    // compile and measure in about 2 s there.
    for (const auto& a : act_sparse::enumerate(p, gpu, p.act_sparsity, 48, p.relu_on_load))
      specs.push_back(to_spec(from_logic(a)));
    return specs;
  }

  // setup: pack the filter once into the persistent buffer "packed_filter" ([c][k][rs4] or [c][r][s][k], k padded
  // to a warp's channels);
  // run: zero the output when split_c > 1 (atomics), then the main kernel (g_activation, g_packed_filter, g_output).
  LaunchPlan plan(const Problem& p, const KernelSpec& spec) const override {
    const as::Params a = to_logic(params_of<ActSparseParams>(spec));
    const act_sparse::Geometry g = act_sparse::geometry(p, a);
    const act_sparse::Geometry pg = act_sparse::pack_geometry(p, a);
    LaunchPlan plan;
    plan.buffers.push_back({.name = "packed_filter", .bytes = act_sparse::packed_filter_bytes(p, a), .persistent = true});
    plan.setup.push_back({.kind = LaunchStep::Kind::kernel, .entry_suffix = "pack_filter",
                          .geometry = {.grid = pg.grid, .block = pg.block}});
    if (g.zero_output_first) plan.run.push_back({.kind = LaunchStep::Kind::zero, .buffer = "output"});
    plan.run.push_back({.kind = LaunchStep::Kind::kernel, .geometry = {.grid = g.grid, .block = g.block}});
    return with_early_launch(std::move(plan));  // every run entry waits first (grid_dependency.cuh)
  }

  // Warp instructions per block at the problem's expected zero fraction z (act_sparsity): per input channel of a warp, the halo and tap
  // loads, then the dense loop (halo shuffles + all FMAs) or the sparse loop (per group of 8 a test; a live group
  // 2 shared loads and 8 bit tests; each nonzero its FMAs), whichever the template picks (see act_sparse_params).
  CostFeatures cost_features(const Problem& p, const KernelSpec& spec) const override {
    const as::Params a = to_logic(params_of<ActSparseParams>(spec));
    const act_sparse::Geometry g = act_sparse::geometry(p, a);
    const double z = p.act_sparsity;
    const int rs = p.filter.h * p.filter.w;
    const int halo = act_sparse::halo_h(p, a) * act_sparse::halo_w(p, a);
    const int tp = a.tile_h * a.tile_w;
    const double channels_per_warp = std::ceil(std::ceil(static_cast<double>(p.c) / a.split_c) / a.warps);
    const double dense_fma = static_cast<double>(tp) * rs * a.k_per_lane;
    const double groups = std::ceil(halo / 8.0), live = groups * (1 - std::pow(z, 8));
    const double sparse_fma = dense_fma * (1 - z);
    const bool sparse = 2 * groups + live * 18 + halo * (1 - z) < halo + dense_fma - sparse_fma;
    const double per_warp = channels_per_warp * a.warps;
    const std::int64_t blocks = std::int64_t{g.grid[0]} * g.grid[1] * g.grid[2];
    return {.blocks = blocks,
            .threads_per_block = 32 * a.warps,
            .smem_bytes_per_block = static_cast<int>(act_sparse::smem_bytes(p, a)),
            .flops = static_cast<double>(flops(p)) * (1 - z),
            .dram_bytes = static_cast<double>(min_bytes(p)),
            .flops_per_block = 2.0 * 32 * a.k_per_lane * tp * rs * per_warp * (sparse ? 1 - z : 1),
            .fma_instructions = per_warp * (sparse ? sparse_fma : dense_fma),
            .shared_load_instructions = per_warp * (sparse ? 2 * live + std::ceil(halo / 32.0) : halo),
            .global_load_instructions = per_warp * (std::ceil(halo / 32.0) + as::tap_loads(p, a)),
            .address_instructions = per_warp * (sparse ? 2 * groups + 8 * live : 4),
            .main_loop_steps = static_cast<int>(std::ceil(channels_per_warp / a.load_batch)),
            .pipelined = a.load_batch == 1,
            .warp_issue_rate = kWarpIssueRate,
            .atomic_outputs = a.split_c > 1 ? static_cast<double>(output_elements(p)) * a.split_c : 0,
            .extra_launches = a.split_c > 1 ? 1 : 0};
  }

  // Until a calibration includes the family: igemm's weights (the same instruction kinds), which rank dense
  // configurations close to what was measured (bench/results/h200/act_sparse).
  CostWeights default_cost_weights() const override { return family("igemm").default_cost_weights(); }

  // relu1: every halo value passes through max(0, x) as it is loaded.
  bool applies_relu_on_load(const KernelSpec& spec) const override {
    return params_of<ActSparseParams>(spec).relu_on_load;
  }

  // lb (load_batch) came after the names of 2026-11-29 and earlier, bs (block_staged) after those of 2026-11-30;
  // their kernels loaded one channel ahead (lb 1), each warp its own channels (bs 0).
  std::size_t params_added_later() const override { return 3; }

  std::optional<KernelSpec> default_spec(const Problem& p, const Gpu& gpu) const override {
    if (auto a = act_sparse::default_params(p, gpu, p.act_sparsity, p.relu_on_load)) return to_spec(from_logic(*a));
    return std::nullopt;
  }

  // First for a problem that expects zeros, where skipping them pays (measured, bench/results/h200/act_sparse:
  // 1x1 layers from batch 4 on run faster as igemm's GEMM). For dense problems, first too on 3x3 layers of 16 to 128
  // input channels (after winograd_gemm where it goes first): on the H200 its default beat igemm's on 19 of the 20
  // such layer-batches igemm was chosen for (1.26-1.91x, once 0.88x), as the dense loop of a warp's tile needs no
  // im2col gather (bench/results/h200/default-choice-2026-11-29/); after igemm and direct otherwise. Before every
  // family where it pays for a problem that takes its input before its ReLU: its relu1 kernels spare the ReLU
  // prologue the others run behind (a launch and the activation's traffic; the fused relu1 beat the ReLU pass +
  // act_sparse on 18 of 24 cuSNN layer-batches, bench/results/h200/relu-on-load-2026-12-01/).
  int default_rank(const Problem& p) const override {
    const bool pays = act_sparsity_bucket(p) > 0 && (p.filter.h * p.filter.w > 1 || p.n <= 2);
    const bool dense_3x3 = p.precision == Precision::fp32 && p.groups == 1 && p.filter.d == 1 && p.filter.h == 3 &&
                           p.filter.w == 3 && p.c >= 16 && p.c <= 128;
    if (pays && p.relu_on_load) return -3;
    return pays || dense_3x3 ? -1 : 2;
  }
};

}  // namespace

const Family& act_sparse_family() {
  static const ActSparse instance;
  return instance;
}

}  // namespace convgen
