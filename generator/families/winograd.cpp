// winograd: the FP32 Winograd family F(m x m, 3 x 3), m = 2 or 4 (templates/winograd.cu): search space, support
// checks, launch plan (the filter transformed once into a persistent buffer, then one launch per call) and costs.
#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "generator/family.hpp"
#include "winograd_params.hpp"  // generated from templates/winograd.cu

namespace convgen {
namespace {

// Instructions one warp issues per cycle at most (CostFeatures::warp_issue_rate): per-position GEMMs of register tiles,
// as igemm's. The SIMT families' rates were chosen on the H200's measurements (bench/results/h200/seed-
// studies-2026-11-28/README.md says how); they matter where few warps share an SM (small layers, batch 1).
constexpr double kWarpIssueRate = 0.5;

constexpr std::int64_t kIntMax = 2147483647;
constexpr std::int64_t kGridYMax = 65535;
constexpr unsigned kSetupThreads = 256;  // the transform_filter entry's block
// Grouped layers with fewer input channels per group are refused: every channel step (4 to 16 channels) would be
// mostly padding, and depthwise layers are direct's.
constexpr int kMinGroupChannels = 4;

std::int64_t ceil_div(std::int64_t a, std::int64_t b) { return (a + b - 1) / b; }
bool is_pow2(int v) { return v > 0 && (v & (v - 1)) == 0; }
int next_pow2(std::int64_t v) {
  int p = 1;
  while (p < v && p < (1 << 30)) p *= 2;
  return p;
}

// The quantities of templates/winograd.cu (same names, lower case).
int cg(const Problem& p) { return p.c / std::max(p.groups, 1); }
int kg(const Problem& p) { return p.k / std::max(p.groups, 1); }
int alpha(const WinogradParams& s) { return s.tile + 2; }
int positions(const WinogradParams& s) { return alpha(s) * alpha(s); }
std::int64_t tiles(const Problem& p, const WinogradParams& s) {
  const Dims3 out = output_dims(p);
  return std::int64_t{p.n} * ceil_div(out.h, s.tile) * ceil_div(out.w, s.tile);
}
int threads_per_block(const WinogradParams& s) {
  if (s.pos_per_thread <= 0 || s.thread_k <= 0 || s.thread_t <= 0) return 0;
  return positions(s) / s.pos_per_thread * (s.block_k / s.thread_k) * (s.block_t / s.thread_t);
}
int smem_bytes(const WinogradParams& s) { return positions(s) * s.block_c * (s.block_k + s.block_t) * 4; }
int accumulators(const WinogradParams& s) { return s.pos_per_thread * s.thread_k * s.thread_t; }
// Registers per thread, roughly: the accumulators, the operands ptxas hoists out of the unrolled channel loop, one
// patch and its transform, addresses and loop state (157 measured by ptxas for the default m2 k32 n32 c8 tk4 tt4
// pp4, sm_90, against 152 here). ptxas decides; this only prunes what cannot fit.
// With prefetch, the next chunk's loads stay live across the GEMMs: each thread's share of the staged filter and of
// the patches (templates/winograd.cu's U_LOADS and PATCHES x positions).
int staged_registers(const WinogradParams& s) {
  const int threads = threads_per_block(s);
  if (!s.prefetch || threads <= 0) return 0;
  const int u_loads = static_cast<int>(ceil_div(std::int64_t{positions(s)} * s.block_c * s.block_k, threads));
  const int patches = static_cast<int>(ceil_div(std::int64_t{s.block_c} * s.block_t, threads));
  return u_loads + patches * positions(s);
}
int register_estimate(const WinogradParams& s) {
  return accumulators(s) + s.pos_per_thread * (s.thread_k + s.thread_t) + 2 * positions(s) + staged_registers(s) +
         24;
}
std::int64_t transformed_filter_bytes(const Problem& p, const WinogradParams& s) {
  return std::int64_t{positions(s)} * cg(p) * p.k * 4;
}

// y: the groups, each ceil(KG / block_k) channel blocks.
std::int64_t grid_y(const Problem& p, const WinogradParams& s) { return p.groups * ceil_div(kg(p), s.block_k); }
std::array<unsigned, 3> grid_of(const Problem& p, const WinogradParams& s) {
  return {static_cast<unsigned>(ceil_div(tiles(p, s), s.block_t)), static_cast<unsigned>(grid_y(p, s)), 1};
}
std::int64_t blocks_of(const Problem& p, const WinogradParams& s) {
  const auto grid = grid_of(p, s);
  return std::int64_t{grid[0]} * grid[1];
}

// Additions and multiplications of one 2-D transform (B^T d B of a patch, A^T M A of a tile): the nonzero
// coefficients of templates/winograd.cu's matrices, less one per row, times the 1-D transforms (columns, then rows).
int input_transform_ops(const WinogradParams& s) { return s.tile == 2 ? 32 : 192; }
int output_transform_ops(const WinogradParams& s) { return s.tile == 2 ? 24 : 140; }

// Blocks of one SM that run at once, by the GPU's thread, register, shared-memory and block limits.
int resident_blocks_per_sm(const Gpu& gpu, const WinogradParams& s) {
  const int threads = threads_per_block(s);
  int blocks = gpu.max_blocks_per_sm > 0 ? gpu.max_blocks_per_sm : 32;
  if (gpu.max_threads_per_sm > 0) blocks = std::min(blocks, gpu.max_threads_per_sm / threads);
  if (gpu.regs_per_sm > 0) blocks = std::min(blocks, gpu.regs_per_sm / ((register_estimate(s) + 7) / 8 * 8 * threads));
  if (gpu.smem_per_sm_bytes > 0) blocks = std::min(blocks, gpu.smem_per_sm_bytes / smem_bytes(s));
  return std::max(blocks, 1);
}

// Warp instructions of one block, by kind, from the template's structure.
struct BlockWork {
  double fma = 0, shared_loads = 0, global_loads = 0, address = 0, transform = 0;
  double shared_bytes = 0;  // through the SM's shared-memory banks (128 bytes a clock)
  int steps = 0;
};
BlockWork block_work(const Problem& p, const WinogradParams& s) {
  const int steps = static_cast<int>(ceil_div(cg(p), s.block_c));
  const double warps = std::ceil(threads_per_block(s) / 32.0);
  const double channels = static_cast<double>(steps) * s.block_c;
  const double patches = channels * s.block_t;                        // input transforms
  const double filter_loads = channels * positions(s) * s.block_k;    // transformed filter elements staged
  const double outputs = static_cast<double>(s.block_k) * s.block_t;  // output transforms
  BlockWork w;
  w.steps = steps;
  // The GEMMs: per channel and position a thread's thread_k x thread_t FMAs and two vector shared loads.
  w.fma = warps * channels * accumulators(s);
  w.shared_loads = warps * channels * s.pos_per_thread * 2 + outputs * positions(s) / 32;
  // Patches (positions loads each, with a bounds check and an address of ~4 instructions), staged filter.
  w.global_loads = (patches * positions(s) + filter_loads) / 32;
  w.address = (patches * positions(s) * 4 + filter_loads * 4) / 32;
  w.transform = (patches * (input_transform_ops(s) + positions(s)) + outputs * output_transform_ops(s)) / 32;
  // Shared-memory bytes at distinct addresses (a warp's requests to one address are broadcast): per channel and
  // position a warp reads the register tiles of its distinct (position, channel) and (position, tile) threads; the
  // patches, the staged filter and the accumulators are written once and read once.
  const int t_threads = s.block_t / s.thread_t, k_threads = s.block_k / s.thread_k;
  const int p_in_warp = std::max(1, 32 / (t_threads * k_threads));
  const int u_distinct = std::max(1, 32 / t_threads);
  const int v_distinct = std::min(32, std::min(32, t_threads) * p_in_warp);
  w.shared_bytes = warps * channels * s.pos_per_thread * (u_distinct * s.thread_k + v_distinct * s.thread_t) * 4.0 +
                   (patches + filter_loads / positions(s) * 2 + outputs * 2) * positions(s) * 4.0;
  return w;
}

class Winograd final : public Family {
 public:
  const TemplateInterface& interface() const override { return winograd_interface(); }

  std::optional<std::string> check_support(const Problem& p, const Gpu& gpu, const KernelSpec& spec) const override {
    if (spec.family != WinogradParams::family) return fmt::format("kernel {} is not a winograd kernel", spec.family);
    return check(p, gpu, params_of<WinogradParams>(spec));
  }

  std::vector<KernelSpec> enumerate(const Problem& p, const Gpu& gpu) const override {
    std::vector<KernelSpec> specs;
    for (const WinogradParams& s : candidates(p, gpu)) specs.push_back(to_spec(s));
    return specs;
  }

  // setup: U = G g G^T of every (c, k) into the persistent buffer "transformed_filter" ([position][group][c][k]);
  // run: one launch (g_activation, g_transformed_filter, g_output).
  LaunchPlan plan(const Problem& p, const KernelSpec& spec) const override {
    const WinogradParams s = params_of<WinogradParams>(spec);
    LaunchPlan plan;
    plan.buffers.push_back({.name = "transformed_filter", .bytes = transformed_filter_bytes(p, s), .persistent = true});
    const auto setup_blocks = static_cast<unsigned>(ceil_div(std::int64_t{cg(p)} * p.k, kSetupThreads));
    plan.setup.push_back({.kind = LaunchStep::Kind::kernel,
                          .entry_suffix = "transform_filter",
                          .geometry = {.grid = {setup_blocks, 1, 1}, .block = {kSetupThreads, 1, 1}}});
    plan.run.push_back(
        {.kind = LaunchStep::Kind::kernel,
         .geometry = {.grid = grid_of(p, s),
                      .block = {static_cast<unsigned>(threads_per_block(s)), 1, 1},
                      .dynamic_smem_bytes = static_cast<unsigned>(smem_bytes(s))}});
    return with_early_launch(std::move(plan));  // every run entry waits first (grid_dependency.cuh)
  }

  CostFeatures cost_features(const Problem& p, const KernelSpec& spec) const override {
    const WinogradParams s = params_of<WinogradParams>(spec);
    const BlockWork w = block_work(p, s);
    const double flops_per_block = 2.0 * positions(s) * s.block_k * s.block_t * w.steps * s.block_c;
    return {.blocks = blocks_of(p, s),
            .threads_per_block = threads_per_block(s),
            .smem_bytes_per_block = smem_bytes(s),
            .flops = static_cast<double>(flops(p)),
            // Each tensor once, and the transformed filter (read by every column of blocks, mostly from L2: once).
            .dram_bytes = static_cast<double>(min_bytes(p) + transformed_filter_bytes(p, s)),
            .flops_per_block = flops_per_block,
            // The transforms' additions issue like FMAs.
            .fma_instructions = w.fma + w.transform,
            .shared_load_instructions = w.shared_loads,
            .global_load_instructions = w.global_loads,
            .address_instructions = w.address,
            .main_loop_steps = w.steps,
            .pipelined = s.prefetch,
            .warp_issue_rate = kWarpIssueRate};
  }

  // Until a calibration includes the family: igemm's weights (the same instruction kinds, a SIMT main loop).
  CostWeights default_cost_weights() const override { return family("igemm").default_cost_weights(); }

  std::optional<KernelSpec> default_spec(const Problem& p, const Gpu& gpu) const override {
    const std::vector<WinogradParams> all = candidates(p, gpu);
    if (all.empty()) return std::nullopt;
    return to_spec(all.front());
  }

  // After igemm, direct, act_sparse and weight_sparse: verified on the H100 but slower than cuDNN's Winograd from
  // batch 8 on, so it competes in tuning only.
  int default_rank(const Problem&) const override { return 4; }

 private:
  std::optional<std::string> check(const Problem& p, const Gpu& gpu, const WinogradParams& s) const {
    if (std::string reason = validate(p); !reason.empty()) return "invalid problem: " + reason;
    if (p.precision != Precision::fp32)
      return fmt::format("precision {} is not supported by winograd (fp32 only)", p.precision);
    if (p.groups > 1 && cg(p) < kMinGroupChannels)
      return fmt::format(
          "winograd needs at least {} input channels per group (its channel step is 4 to 16), got C/groups {}",
          kMinGroupChannels, cg(p));
    if (rank(p.layout) != 2) return fmt::format("winograd handles 2-D convolutions only, got layout {}", p.layout);
    if (p.filter.h != 3 || p.filter.w != 3)
      return fmt::format("winograd handles 3x3 filters only, got {}x{}", p.filter.h, p.filter.w);
    if (p.stride.h != 1 || p.stride.w != 1)
      return fmt::format("winograd needs stride 1, got {}x{}", p.stride.h, p.stride.w);
    if (p.dilation.h != 1 || p.dilation.w != 1)
      return fmt::format("winograd needs dilation 1, got {}x{}", p.dilation.h, p.dilation.w);
    // Field values.
    if (s.tile != 2 && s.tile != 4) return fmt::format("tile must be 2 or 4, got {}", s.tile);
    if (!is_pow2(s.block_k) || s.block_k < 8 || s.block_k > 64)
      return fmt::format("block_k must be 8, 16, 32 or 64, got {}", s.block_k);
    if (!is_pow2(s.block_t) || s.block_t < 8 || s.block_t > 64)
      return fmt::format("block_t must be 8, 16, 32 or 64, got {}", s.block_t);
    if (s.block_c != 4 && s.block_c != 8 && s.block_c != 16)
      return fmt::format("block_c must be 4, 8 or 16, got {}", s.block_c);
    if (s.thread_k != 1 && s.thread_k != 2 && s.thread_k != 4)
      return fmt::format("thread_k must be 1, 2 or 4, got {}", s.thread_k);
    if (s.thread_t != 1 && s.thread_t != 2 && s.thread_t != 4)
      return fmt::format("thread_t must be 1, 2 or 4, got {}", s.thread_t);
    if (s.pos_per_thread < 1 || positions(s) % s.pos_per_thread != 0)
      return fmt::format("pos_per_thread {} does not divide the {} positions of F({}x{}, 3x3)", s.pos_per_thread,
                         positions(s), s.tile, s.tile);
    // Index and grid limits.
    if (activation_elements(p) > kIntMax || output_elements(p) > kIntMax)
      return "winograd indexes tensors with int: the activation and output must have fewer than 2^31 elements";
    if (std::int64_t{positions(s)} * cg(p) * p.k > kIntMax)
      return fmt::format("the transformed filter's {} x C/groups x K elements exceed 2^31 - 1", positions(s));
    if (grid_y(p, s) > kGridYMax)
      return fmt::format("{} blocks of output channels exceed the grid's y limit of 65535", grid_y(p, s));
    // Resources of the GPU.
    const int threads = threads_per_block(s);
    if (threads < 32) return fmt::format("{} threads per block are fewer than a warp", threads);
    if (threads > gpu.max_threads_per_block)
      return fmt::format("{} threads per block exceed the gpu's {}", threads, gpu.max_threads_per_block);
    if (smem_bytes(s) > max_smem_per_block_bytes(gpu))  // dynamic shared memory, opted in
      return fmt::format("{} bytes of shared memory per block exceed the gpu's {}", smem_bytes(s),
                         max_smem_per_block_bytes(gpu));
    const int regs = register_estimate(s);
    if (regs > gpu.max_regs_per_thread)
      return fmt::format("about {} registers per thread exceed the gpu's {}", regs, gpu.max_regs_per_thread);
    if (gpu.regs_per_block > 0 && regs * threads > gpu.regs_per_block)
      return fmt::format("about {} registers per block ({} threads of {}) exceed the gpu's {}", regs * threads, threads,
                         regs, gpu.regs_per_block);
    return std::nullopt;
  }

  // The best kPerTile of each tile size and prefetch choice by estimate_us, merged in the order of the estimate.
  std::vector<WinogradParams> candidates(const Problem& p, const Gpu& gpu) const {
    if (p.precision != Precision::fp32 || !validate(p).empty()) return {};  // no configuration changes these
    std::vector<std::pair<double, WinogradParams>> ranked;
    for (int tile : {2, 4}) {
      for (bool prefetch : {false, true}) {
        std::vector<std::pair<double, WinogradParams>> best = best_of_variant(p, gpu, tile, prefetch);
        ranked.insert(ranked.end(), best.begin(), best.end());
      }
    }
    std::stable_sort(ranked.begin(), ranked.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
    std::vector<WinogradParams> specs;
    for (const auto& [us, s] : ranked) specs.push_back(s);
    return specs;
  }

  // Of one tile size and prefetch choice, every configuration that passes check, fits the problem (tiles within the
  // next power of two of K and of the output tiles) and keeps at most 64 accumulators per thread: the best kPerTile,
  // with their estimates, fastest first.
  std::vector<std::pair<double, WinogradParams>> best_of_variant(const Problem& p, const Gpu& gpu, int tile,
                                                                 bool prefetch) const {
    std::vector<std::pair<double, WinogradParams>> found;
    const int position_count = (tile + 2) * (tile + 2);
    for (int block_k : {16, 32, 64}) {
      if (block_k > std::max(16, next_pow2(kg(p)))) continue;
      for (int block_t : {16, 32, 64}) {
        for (int block_c : {4, 8, 16}) {
          for (int thread_k : {2, 4}) {
            for (int thread_t : {2, 4}) {
              for (int pos_per_thread = 1; pos_per_thread <= position_count; ++pos_per_thread) {
                if (position_count % pos_per_thread != 0) continue;
                const WinogradParams s{.tile = tile,
                                       .block_k = block_k,
                                       .block_t = block_t,
                                       .block_c = block_c,
                                       .thread_k = thread_k,
                                       .thread_t = thread_t,
                                       .pos_per_thread = pos_per_thread,
                                       .prefetch = prefetch};
                if (block_t > std::max<std::int64_t>(16, next_pow2(tiles(p, s)))) continue;
                if (accumulators(s) > 64 || threads_per_block(s) < 64) continue;
                if (check(p, gpu, s)) continue;
                found.emplace_back(estimate_us(p, gpu, s), s);
              }
            }
          }
        }
      }
    }
    std::stable_sort(found.begin(), found.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
    if (found.size() > kPerTile) found.resize(kPerTile);
    return found;
  }

  static constexpr std::size_t kPerTile = 8;

  // A rough time in microseconds that orders the search space (the tuner's cost model ranks for real): waves of
  // resident blocks, each issuing its warp instructions at 4 per clock per SM or moving its shared-memory bytes at 128
  // per clock, whichever is longer, slowed when fewer than 16 warps per SM (8 with prefetch) hide the latency of the
  // shared loads and barriers; or, if longer, the bytes through L2 at twice the DRAM bandwidth: every row of blocks
  // reads the patches of its tiles (each (m+2)^2 floats, overlaps counted again), every column its channels'
  // transformed filter.
  static double estimate_us(const Problem& p, const Gpu& gpu, const WinogradParams& s) {
    const int sm_count = std::max(gpu.sm_count, 1);
    const std::int64_t blocks = blocks_of(p, s);
    const int per_sm = resident_blocks_per_sm(gpu, s);
    const double waves = std::ceil(static_cast<double>(blocks) / (static_cast<double>(sm_count) * per_sm));
    const double resident = std::min<double>(per_sm, std::ceil(static_cast<double>(blocks) / sm_count));
    const BlockWork w = block_work(p, s);
    const double instructions = w.fma + w.transform + w.shared_loads + w.global_loads + w.address;
    const double warps_per_sm = resident * threads_per_block(s) / 32.0;
    // Prefetching hides the chunk's global-load latency behind the GEMMs: half the warps then suffice.
    const double latency = std::max(1.0, (s.prefetch ? 8.0 : 16.0) / warps_per_sm);
    const double clock_mhz = gpu.clock_mhz > 0 ? gpu.clock_mhz : 1700;
    const double block_cycles = std::max(instructions / 4, w.shared_bytes / 128);
    const double compute_us = waves * resident * block_cycles * latency / clock_mhz;
    const auto grid = grid_of(p, s);
    const double patch_bytes = static_cast<double>(tiles(p, s)) * cg(p) * positions(s) * 4;  // one group's
    const double l2_bytes = static_cast<double>(grid[1]) * patch_bytes +
                            static_cast<double>(grid[0]) * static_cast<double>(transformed_filter_bytes(p, s)) +
                            static_cast<double>(output_elements(p)) * 4;
    const double l2_gbs = 2 * std::max(gpu.dram_bandwidth_gbs, 100.0);
    return std::max(compute_us, l2_bytes / (l2_gbs * 1e3));
  }
};

}  // namespace

const Family& winograd_family() {
  static const Winograd instance;
  return instance;
}

}  // namespace convgen
