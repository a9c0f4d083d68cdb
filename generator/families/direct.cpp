// direct: the direct-convolution family (templates/direct.cu), the fallback that serves every valid fp32 problem.
#include <algorithm>
#include <cmath>
#include <limits>

#include <fmt/format.h>

#include "convgen/error.hpp"
#include "direct_params.hpp"
#include "generator/family.hpp"

namespace convgen {
namespace {

// Instructions one warp issues per cycle at most (CostFeatures::warp_issue_rate): thin register tiles: each output's
// FMAs one dependent chain. The SIMT families' rates were chosen on the H200's measurements (bench/results/h200/seed-
// studies-2026-11-28/README.md says how); they matter where few warps share an SM (small layers, batch 1).
constexpr double kWarpIssueRate = 0.25;

// Static shared memory needs no opt-in up to 48 KiB.
constexpr int kStaticSmemLimit = 48 * 1024;
constexpr std::int64_t kMaxGridY = 65535;
constexpr std::int64_t kMaxGridX = std::numeric_limits<std::int32_t>::max();
// Enumerate keeps this many candidates, the default spec first.
constexpr std::size_t kMaxCandidates = 48;

std::int64_t ceil_div(std::int64_t a, std::int64_t b) { return (a + b - 1) / b; }

int next_pow2(std::int64_t v) {
  int p = 1;
  while (p < v && p < (1 << 30)) p *= 2;
  return p;
}

int taps(const Problem& p) { return p.filter.d * p.filter.h * p.filter.w; }

std::int64_t output_pixels(const Problem& p) {
  const Dims3 out = output_dims(p);
  return std::int64_t{p.n} * out.d * out.h * out.w;
}

// Threads per block: (block_m / thread_m) * (block_n / thread_n).
int threads_per_block(const DirectParams& s) { return (s.block_m / s.thread_m) * (s.block_n / s.thread_n); }

// How a spec lays out on a problem; mirrors the constants of templates/direct.cu.
struct Tiling {
  bool group_tiled = false;  // blocks tile the channels of one group (else K straight across groups)
  std::int64_t grid_x = 0;   // pixel tiles
  std::int64_t grid_y = 0;   // channel tiles
  int threads = 0;
  int smem_bytes = 0;  // the static filter stage
  int registers = 0;   // estimate per thread
};

Tiling tiling(const Problem& p, const DirectParams& s) {
  Tiling t;
  const int kg = k_per_group(p);
  t.group_tiled = p.groups == 1 || s.block_m <= kg;
  t.grid_x = ceil_div(output_pixels(p), s.block_n);
  t.grid_y = t.group_tiled ? std::int64_t{p.groups} * ceil_div(kg, s.block_m) : ceil_div(p.k, s.block_m);
  t.threads = threads_per_block(s);
  t.smem_bytes = static_cast<int>(
      std::min<std::int64_t>(std::int64_t{s.block_m} * s.block_k * taps(p) * 4, std::numeric_limits<int>::max()));
  // Accumulators, the filter and activation fragments, ~5 per pixel (origin, addresses, store flag), the input
  // channel bases (one per output channel when tiling across groups), and ~32 for the rest of the addressing.
  const int per_channel = t.group_tiled ? 1 : s.thread_m;
  t.registers = s.thread_m * s.thread_n + s.thread_m + per_channel + 5 * s.thread_n + per_channel + 32;
  return t;
}

// A rough ranking of candidates (the tuner measures the best few): issue slots of the busiest SM, with global loads
// weighted by the sectors a warp touches, divided by how well the resident warps hide latency.
double estimated_cost(const Problem& p, const Gpu& gpu, const DirectParams& s) {
  const Tiling t = tiling(p, s);
  const int threads_m = s.block_m / s.thread_m;
  const int threads_n = s.block_n / s.thread_n;
  const int warps = (t.threads + 31) / 32;
  const bool cl = channels_last(p.layout);
  // Sectors (32 bytes) one warp-wide activation load touches: along the contiguous dimension 8 floats share one.
  double sectors;
  if (cl) {
    const int pixels_per_warp = std::max(1, 32 / std::min(32, threads_m));
    sectors = t.group_tiled ? pixels_per_warp : pixels_per_warp * std::ceil(std::min(32, threads_m) / 8.0);
  } else {
    const int rows_per_warp = std::max(1, 32 / std::min(32, threads_n));
    const double row = std::ceil(std::min(32, threads_n) * p.stride.w / 8.0);
    sectors = (t.group_tiled ? 1 : rows_per_warp) * row;
  }
  const double loads = t.group_tiled ? s.thread_n : s.thread_m * s.thread_n;
  const double per_warp = s.thread_m * s.thread_n + loads * std::max(1.0, sectors / 4) + s.thread_m;
  const double per_block = warps * per_warp * c_per_group(p) * taps(p);

  const int sm_count = gpu.sm_count > 0 ? gpu.sm_count : 132;
  int resident = gpu.max_threads_per_sm > 0 ? gpu.max_threads_per_sm / t.threads : 2048 / t.threads;
  if (gpu.max_blocks_per_sm > 0) resident = std::min(resident, gpu.max_blocks_per_sm);
  if (gpu.smem_per_sm_bytes > 0 && t.smem_bytes > 0)
    resident = std::min(resident, gpu.smem_per_sm_bytes / t.smem_bytes);
  if (gpu.regs_per_sm > 0) resident = std::min(resident, gpu.regs_per_sm / (t.threads * t.registers));
  resident = std::max(resident, 1);
  const std::int64_t blocks = t.grid_x * t.grid_y;
  const std::int64_t blocks_per_sm = ceil_div(blocks, sm_count);
  const double active_warps = static_cast<double>(std::min<std::int64_t>(blocks_per_sm, resident)) * warps;
  const double efficiency = std::min(1.0, active_warps / 16);  // ~16 warps per SM hide the load latency
  return static_cast<double>(blocks_per_sm) * per_block / efficiency;
}

std::vector<int> block_k_choices(int cg) {
  std::vector<int> choices;
  for (int bk : {1, 2, 4, 8, 16})
    if (bk <= cg) choices.push_back(bk);
  if (cg <= 16 && std::find(choices.begin(), choices.end(), cg) == choices.end()) choices.push_back(cg);
  return choices;
}

class Direct final : public Family {
 public:
  const TemplateInterface& interface() const override { return direct_interface(); }

  std::vector<KernelSpec> enumerate(const Problem& p, const Gpu& gpu) const override {
    if (!validate(p).empty()) return {};
    std::vector<DirectParams> specs = ranked_candidates(p, gpu);
    if (auto first = default_params(p, gpu)) {
      std::erase(specs, *first);
      specs.insert(specs.begin(), *first);
    }
    if (specs.size() > kMaxCandidates) specs.resize(kMaxCandidates);
    std::vector<KernelSpec> out;
    for (const DirectParams& s : specs) out.push_back(to_spec(s));
    return out;
  }

  std::optional<std::string> check_support(const Problem& p, const Gpu& gpu, const KernelSpec& spec) const override {
    if (spec.family != DirectParams::family) return fmt::format("kernel {} is not a direct kernel", spec.family);
    return check(p, gpu, params_of<DirectParams>(spec));
  }

  LaunchPlan plan(const Problem& p, const KernelSpec& spec) const override {
    const Tiling t = tiling(p, params_of<DirectParams>(spec));
    return with_early_launch(  // the entry waits first (grid_dependency.cuh)
        single_launch_plan({.grid = {static_cast<unsigned>(t.grid_x), static_cast<unsigned>(t.grid_y), 1},
                            .block = {static_cast<unsigned>(t.threads), 1, 1}}));
  }

  CostFeatures cost_features(const Problem& p, const KernelSpec& spec) const override {
    CostFeatures f = features(p, params_of<DirectParams>(spec));
    f.warp_issue_rate = kWarpIssueRate;
    return f;
  }

  // The H200 fit of bench/results/h200/tuning-study.md (cost model v2).
  CostWeights default_cost_weights() const override { return {0, 9.61, 17.3, 0, 0.419, 0, 2.57, 0, 0, 0, 0}; }

  std::optional<KernelSpec> default_spec(const Problem& p, const Gpu& gpu) const override {
    if (auto s = default_params(p, gpu)) return to_spec(*s);
    return std::nullopt;
  }

  // Before igemm where few channels per group leave a GEMM's tiles mostly empty (direct_before_igemm says which).
  int default_rank(const Problem& p) const override { return direct_before_igemm(p) ? 0 : 1; }

  // The names of earlier convgen versions carried three fields direct never used.
  std::string_view legacy_name_suffix() const override { return "_st1_sk1_v1"; }

 private:
  std::optional<std::string> check(const Problem& p, const Gpu& gpu, const DirectParams& s) const {
    if (std::string reason = validate(p); !reason.empty()) return "invalid problem: " + reason;
    if (p.precision != Precision::fp32)
      return fmt::format("precision {} is not supported by direct (fp32 only)", p.precision);
    for (auto [name, value] :
         {std::pair{"block_m", s.block_m}, std::pair{"block_n", s.block_n}, std::pair{"block_k", s.block_k},
          std::pair{"thread_m", s.thread_m}, std::pair{"thread_n", s.thread_n}})
      if (value <= 0) return fmt::format("{} must be positive, got {}", name, value);
    if (s.block_m % s.thread_m != 0)
      return fmt::format("block_m {} must be a multiple of thread_m {}", s.block_m, s.thread_m);
    if (s.block_n % s.thread_n != 0)
      return fmt::format("block_n {} must be a multiple of thread_n {}", s.block_n, s.thread_n);
    if (s.block_k > c_per_group(p))
      return fmt::format("block_k {} exceeds the {} input channels per group", s.block_k, c_per_group(p));
    const Tiling t = tiling(p, s);
    const int max_threads = std::min(1024, gpu.max_threads_per_block > 0 ? gpu.max_threads_per_block : 1024);
    if (t.threads > max_threads)
      return fmt::format("{} threads per block exceed the limit of {}", t.threads, max_threads);
    const int smem_limit =
        gpu.smem_per_block_bytes > 0 ? std::min(kStaticSmemLimit, gpu.smem_per_block_bytes) : kStaticSmemLimit;
    if (t.smem_bytes > smem_limit)
      return fmt::format(
          "the filter stage needs {} bytes of shared memory (block_m {} x block_k {} x {} taps x 4), "
          "more than the {} bytes a block may use",
          t.smem_bytes, s.block_m, s.block_k, taps(p), smem_limit);
    // Limits of 0 are unknown in the GPU descriptor and prune nothing.
    if (gpu.max_regs_per_thread > 0 && t.registers > gpu.max_regs_per_thread)
      return fmt::format("an estimated {} registers per thread exceed the limit of {}", t.registers,
                         gpu.max_regs_per_thread);
    if (gpu.regs_per_block > 0 && std::int64_t{t.registers} * t.threads > gpu.regs_per_block)
      return fmt::format("an estimated {} registers per thread x {} threads exceed the {} registers per block",
                         t.registers, t.threads, gpu.regs_per_block);
    if (t.grid_y > kMaxGridY)
      return fmt::format("{} channel tiles exceed the grid's y limit of {}", t.grid_y, kMaxGridY);
    if (t.grid_x > kMaxGridX) return fmt::format("{} pixel tiles exceed the grid's x limit of {}", t.grid_x, kMaxGridX);
    return std::nullopt;
  }

  CostFeatures features(const Problem& p, const DirectParams& s) const {
    const Tiling t = tiling(p, s);
    const double warps = std::ceil(t.threads / 32.0);
    // templates/direct.cu: per input channel and tap each thread reads its THREAD_M filter values from shared
    // memory and loads its THREAD_N activations (per channel when tiling across groups) from global memory.
    const double channel_taps = static_cast<double>(c_per_group(p)) * taps(p);
    const int loads_per_pixel = t.group_tiled ? 1 : s.thread_m;
    return {.blocks = t.grid_x * t.grid_y,
            .threads_per_block = t.threads,
            .smem_bytes_per_block = t.smem_bytes,
            .flops = static_cast<double>(flops(p)),
            // Re-reads of activation and filter by other blocks are expected to hit L2.
            .dram_bytes = static_cast<double>(min_bytes(p)),
            // Every block runs its whole tile, partial tiles included, over every channel and tap of its group.
            .flops_per_block = 2.0 * s.block_m * s.block_n * channel_taps,
            .fma_instructions = warps * s.thread_m * s.thread_n * channel_taps,
            .shared_load_instructions = warps * s.thread_m * channel_taps,
            .global_load_instructions = warps * s.thread_n * loads_per_pixel * channel_taps,
            .main_loop_steps = static_cast<int>(ceil_div(c_per_group(p), s.block_k))};
  }

  std::optional<DirectParams> default_params(const Problem& p, const Gpu& gpu) const {
    if (!validate(p).empty() || p.precision != Precision::fp32) return std::nullopt;
    const int cg = c_per_group(p);
    const int kg = k_per_group(p);
    const std::int64_t pixels = output_pixels(p);
    DirectParams s;
    if (p.groups > 1 && kg < 8) {
      // Depthwise and narrow groups: blocks run across groups, one input channel (or a few) per output channel.
      s.block_k = std::min(cg, 8);
      s.thread_m = 1;
      if (channels_last(p.layout)) {
        // Neighbouring threads take neighbouring channels: 32 channels make a 128-byte line.
        s.block_m = std::min(32, next_pow2(p.k));
        s.block_n = 32;
        s.thread_n = 4;
      } else {
        // Neighbouring threads take neighbouring pixels of a channel plane; ~128 threads a block.
        s.thread_n = 2;
        s.block_n = std::clamp(next_pow2(pixels), 32, 256);
        s.block_m = std::clamp(128 / (s.block_n / s.thread_n), 1, next_pow2(p.k));
      }
    } else {
      // Stems and grouped layers: a tile of a group's channels reuses each activation value thread_m times.
      s.block_k = std::min(cg, 8);
      s.block_m = std::min(32, next_pow2(kg));
      s.thread_m = std::min(4, s.block_m);
      s.block_n = 128;
      s.thread_n = 4;
    }
    // Fill the GPU: at least two blocks per SM, shrinking the pixel tile first, then the channel tile, and the
    // work per thread with them so that a block keeps a warp.
    const int sm_count = gpu.sm_count > 0 ? gpu.sm_count : 132;
    const auto blocks = [&] { return tiling(p, s).grid_x * tiling(p, s).grid_y; };
    while (blocks() < 2 * sm_count) {
      if (s.block_n > 32) {
        s.block_n /= 2;
      } else if (s.block_m > 1) {
        s.block_m /= 2;
        s.thread_m = std::min(s.thread_m, s.block_m);
      } else {
        break;
      }
      while (threads_per_block(s) < 32 && (s.thread_n > 1 || s.thread_m > 1)) {
        if (s.thread_n > 1)
          s.thread_n /= 2;
        else
          s.thread_m /= 2;
      }
    }
    // Large filters: shrink the filter stage until it fits.
    while (check(p, gpu, s) && s.block_k > 1) s.block_k = (s.block_k + 1) / 2;
    while (check(p, gpu, s) && s.block_m > 1) {
      s.block_m /= 2;
      s.thread_m = std::min(s.thread_m, s.block_m);
    }
    if (!check(p, gpu, s)) return s;
    std::vector<DirectParams> candidates = ranked_candidates(p, gpu);
    if (candidates.empty()) return std::nullopt;
    return candidates.front();
  }

  // Every spec of the search space that passes check, cheapest estimated cost first.
  std::vector<DirectParams> ranked_candidates(const Problem& p, const Gpu& gpu) const {
    if (!validate(p).empty()) return {};
    const int kg = k_per_group(p);
    // Channel tiles beyond the channels there are (of a group, or of all groups when tiling across them) and
    // pixel tiles beyond the pixels there are would run empty.
    const int max_block_m = next_pow2(p.groups == 1 ? kg : p.k);
    const int max_block_n = std::max(32, next_pow2(output_pixels(p)));
    std::vector<std::pair<double, DirectParams>> scored;
    for (int block_m : {1, 2, 4, 8, 16, 32, 64}) {
      if (block_m > max_block_m) continue;
      for (int block_n : {32, 64, 128, 256}) {
        if (block_n > max_block_n) continue;
        for (int thread_m : {1, 2, 4}) {
          if (thread_m > block_m) continue;
          for (int thread_n : {1, 2, 4}) {
            for (int block_k : block_k_choices(c_per_group(p))) {
              const DirectParams s{.block_m = block_m,
                                   .block_n = block_n,
                                   .block_k = block_k,
                                   .thread_m = thread_m,
                                   .thread_n = thread_n};
              const int threads = threads_per_block(s);
              // Below one warp wastes lanes; beyond 256 the registers per thread get tight for no gain here.
              if (threads < 32 || threads > 256) continue;
              if (check(p, gpu, s)) continue;
              scored.emplace_back(estimated_cost(p, gpu, s), s);
            }
          }
        }
      }
    }
    std::stable_sort(scored.begin(), scored.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
    std::vector<DirectParams> specs;
    for (const auto& [cost, s] : scored) specs.push_back(s);
    return specs;
  }
};

}  // namespace

const Family& direct_family() {
  static const Direct instance;
  return instance;
}

}  // namespace convgen
