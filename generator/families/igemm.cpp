// igemm: the SIMT implicit-GEMM family (templates/igemm.cu): search space, support checks, launch and costs.
#include <algorithm>
#include <cmath>
#include <cstdint>

#include <fmt/format.h>

#include "generator/family.hpp"
#include "generator/occupancy.hpp"
#include "generator/render.hpp"
#include "igemm_params.hpp"

namespace convgen {
namespace {

// Instructions one warp issues per cycle at most (CostFeatures::warp_issue_rate): its register tile's independent FMAs
// and loads keep about one issue every two cycles. The SIMT families' rates were chosen on the H200's measurements
// (bench/results/h200/seed-studies-2026-11-28/README.md says how); they matter where few warps share an SM (small
// layers, batch 1).
constexpr double kWarpIssueRate = 0.5;

constexpr std::int64_t kIntMax = 2147483647;
constexpr std::int64_t kGridYZMax = 65535;
constexpr int kSmemPad = 4;  // floats added to each shared row (templates/igemm.cu, SMEM_PAD)

// The convolution as per-group GEMMs (templates/igemm.cu has the mapping).
struct Gemm {
  int m = 0;           // output channels per group (KG)
  std::int64_t n = 0;  // output pixels N*O*P*Q
  int kr = 0;          // reduction length C/groups * T*R*S
  int groups = 1;
};

Gemm gemm_of(const Problem& p) {
  const Dims3 out = output_dims(p);
  return {.m = k_per_group(p),
          .n = std::int64_t{p.n} * out.d * out.h * out.w,
          .kr = c_per_group(p) * p.filter.d * p.filter.h * p.filter.w,
          .groups = p.groups};
}

std::int64_t ceil_div(std::int64_t a, std::int64_t b) { return (a + b - 1) / b; }
// Threads per block: (block_m / thread_m) * (block_n / thread_n).
int threads_per_block(const IgemmParams& s) { return (s.block_m / s.thread_m) * (s.block_n / s.thread_n); }
bool is_pow2(int v) { return v > 0 && (v & (v - 1)) == 0; }
int next_pow2(std::int64_t v) {
  int p = 1;
  while (p < v && p < (1 << 30)) p *= 2;
  return p;
}

// Reduction elements per split: whole BLOCK_K steps (as KR_CHUNK in the template).
int split_chunk(const Gemm& g, const IgemmParams& s) {
  return static_cast<int>(ceil_div(ceil_div(g.kr, s.split_k), s.block_k) * s.block_k);
}

int smem_bytes(const IgemmParams& s) {
  return s.stages * s.block_k * (s.block_m + kSmemPad + s.block_n + kSmemPad) * 4;
}

// Registers per thread, roughly: accumulators, one k-step of operand fragments, the staged next slice, and ~32 for
// addresses, loop state and the per-pixel origins. ptxas decides; this only prunes what cannot fit.
int register_estimate(const IgemmParams& s) {
  const int threads = threads_per_block(s);
  const int staged =
      static_cast<int>(ceil_div(s.block_m * s.block_k, threads) + ceil_div(s.block_n * s.block_k, threads));
  return s.thread_m * s.thread_n + s.thread_m + s.thread_n + staged + 32;
}

// Vector loads need 16-byte aligned runs of 4 kr (templates/igemm.cu states why).
std::optional<std::string> vector_reason(const Problem& p, const Gemm& g) {
  if (channels_last(p.layout)) {
    if (c_per_group(p) % 4 != 0)
      return fmt::format("vector 4 needs channels per group to be a multiple of 4, got {}", c_per_group(p));
  } else if (g.kr % 4 != 0) {
    return fmt::format("vector 4 needs the reduction length C/groups*T*R*S to be a multiple of 4, got {}", g.kr);
  }
  return std::nullopt;
}

std::array<unsigned, 3> grid_of(const Gemm& g, const IgemmParams& s) {
  return {static_cast<unsigned>(ceil_div(g.n, s.block_n)), static_cast<unsigned>(ceil_div(g.m, s.block_m)),
          static_cast<unsigned>(g.groups * s.split_k)};
}

std::int64_t blocks_of(const Gemm& g, const IgemmParams& s) {
  const auto grid = grid_of(g, s);
  return std::int64_t{grid[0]} * grid[1] * grid[2];
}

// Tiles (block_m, block_n, thread_m, thread_n) of the search space, largest first; 64 to 256 threads each.
struct Tile {
  int block_m, block_n, thread_m, thread_n;
};
constexpr std::array kTiles = {
    Tile{128, 128, 8, 8}, Tile{128, 64, 8, 4}, Tile{64, 128, 4, 8}, Tile{64, 64, 4, 4}, Tile{128, 32, 8, 4},
    Tile{32, 128, 4, 8},  Tile{64, 32, 4, 4},  Tile{32, 64, 4, 4},  Tile{32, 32, 4, 4}, Tile{16, 128, 2, 8},
    Tile{16, 64, 2, 4},   Tile{64, 16, 4, 2},  Tile{16, 32, 2, 4},  Tile{16, 16, 2, 2},
};

// A tile much larger than the GEMM mostly computes padding: keep tiles within the next power of two of each extent.
bool tile_fits(const Gemm& g, const Tile& t) {
  return t.block_m <= std::max(16, next_pow2(g.m)) && t.block_n <= std::max(16, next_pow2(g.n));
}

IgemmParams spec_of(const Tile& t, int block_k, int stages, int split_k, int vector) {
  return {.block_m = t.block_m,
          .block_n = t.block_n,
          .block_k = block_k,
          .thread_m = t.thread_m,
          .thread_n = t.thread_n,
          .stages = stages,
          .split_k = split_k,
          .vector = vector};
}

class Igemm final : public Family {
 public:
  const TemplateInterface& interface() const override { return igemm_interface(); }

  std::optional<std::string> check_support(const Problem& p, const Gpu& gpu, const KernelSpec& spec) const override {
    if (spec.family != IgemmParams::family) return fmt::format("kernel {} is not an igemm kernel", spec.family);
    return check(p, gpu, params_of<IgemmParams>(spec));
  }

  // The prelude also says the data type: PRECISION (templates/igemm.cu widens fp16 and bf16 to fp32 as it loads).
  KernelSource render(const Problem& p, const KernelSpec& spec) const override {
    const PreludeConstant precision = precision_constant(p);
    return render_kernel(p, spec, interface(), {&precision, 1});
  }

  std::vector<KernelSpec> enumerate(const Problem& p, const Gpu& gpu) const override {
    std::vector<KernelSpec> specs;
    for (const IgemmParams& s : candidates(p, gpu)) specs.push_back(to_spec(s));
    return specs;
  }

  LaunchPlan plan(const Problem& p, const KernelSpec& spec) const override {
    const IgemmParams s = params_of<IgemmParams>(spec);
    // Split-K blocks add into an output zeroed first.
    LaunchPlan plan = with_early_launch(  // the entry waits first (grid_dependency.cuh)
        single_launch_plan(
            {.grid = grid_of(gemm_of(p), s), .block = {static_cast<unsigned>(threads_per_block(s)), 1, 1}},
            s.split_k > 1));
    // Vector 4: a filter row's 4 reduction elements a load (float4, or 8 bytes of 16-bit), and channels-last
    // activations' 4 channels; the output one element at a time.
    const int vector_bytes = s.vector > 1 ? s.vector * element_bytes(p.precision) : 0;
    plan.tensor_alignment = {.activation = channels_last(p.layout) ? vector_bytes : 0, .filter = vector_bytes};
    return plan;
  }

  CostFeatures cost_features(const Problem& p, const KernelSpec& spec) const override {
    return features(p, params_of<IgemmParams>(spec));
  }

  // The H200 fit of bench/results/h200/tuning-study.md (cost model v2).
  CostWeights default_cost_weights() const override {
    return {2.44, 0, 2.36, 0.702, 0.486, 0.449, 2.02, 4.82, 2.07, 2.13, 0};
  }

  // The best-ranked double-buffered candidate: the ranking already weighs tile size against filling the GPU and
  // adds split-K where the output alone cannot fill it (measured on an H200, its first pick was within ~20% of the
  // best of the whole search space on ResNet layers, where a fixed rule of tile sizes was up to 2x off).
  std::optional<KernelSpec> default_spec(const Problem& p, const Gpu& gpu) const override {
    for (const IgemmParams& s : candidates(p, gpu))
      if (s.stages == 2) return to_spec(s);
    return std::nullopt;
  }

  // Many channels per group, or a large filter's long reduction: a GEMM's tiles fill; otherwise direct goes first
  // (direct_before_igemm).
  int default_rank(const Problem& p) const override { return direct_before_igemm(p) ? 1 : 0; }

 private:
  std::optional<std::string> check(const Problem& p, const Gpu& gpu, const IgemmParams& s) const {
    if (std::string reason = validate(p); !reason.empty()) return "invalid problem: " + reason;
    // Field values; powers of two let the template's load arrangements divide every tile evenly.
    if (!is_pow2(s.block_m) || s.block_m < 16 || s.block_m > 256)
      return fmt::format("block_m must be a power of two from 16 to 256, got {}", s.block_m);
    if (!is_pow2(s.block_n) || s.block_n < 16 || s.block_n > 256)
      return fmt::format("block_n must be a power of two from 16 to 256, got {}", s.block_n);
    if (!is_pow2(s.block_k) || s.block_k < 4 || s.block_k > 32)
      return fmt::format("block_k must be 4, 8, 16 or 32, got {}", s.block_k);
    if (!is_pow2(s.thread_m) || s.thread_m > 8) return fmt::format("thread_m must be 1, 2, 4 or 8, got {}", s.thread_m);
    if (!is_pow2(s.thread_n) || s.thread_n > 8) return fmt::format("thread_n must be 1, 2, 4 or 8, got {}", s.thread_n);
    if (s.stages != 1 && s.stages != 2) return fmt::format("stages must be 1 or 2, got {}", s.stages);
    if (s.vector != 1 && s.vector != 4) return fmt::format("vector must be 1 or 4, got {}", s.vector);
    const Gemm g = gemm_of(p);
    if (s.vector == 4)
      if (auto reason = vector_reason(p, g)) return reason;
    // Split-K adds each split's partial sums into a zeroed output with atomics, so no block sees the whole sum that an
    // epilogue (bias, residual, activation) applies to. Declined rather than served by a second pass: that pass would
    // read and write the whole output again (and the residual), the traffic the fusion exists to save, and split-K
    // only pays where the output is too small to fill the GPU, where igemm without splits, direct, or igemm_tc (whose
    // split-K reduces through a workspace and applies the epilogue in that reduce) serve.
    if (s.split_k > 1 && element_bytes(p.precision) == 2)
      return fmt::format("split_k {} adds fp32 partial sums into the output with atomics; {} outputs need split_k 1",
                         s.split_k, p.precision);
    if (s.split_k > 1 && !is_identity(p.epilogue))
      return fmt::format(
          "split_k {} adds partial sums into the output with atomics; the epilogue {} needs the whole "
          "sum (split_k 1)",
          s.split_k, to_string(p.epilogue));
    // Every split must own part of the reduction (an empty split would only add launch cost).
    const int chunk = split_chunk(g, s);
    if (std::int64_t{s.split_k - 1} * chunk >= g.kr)
      return fmt::format("split_k {} leaves splits without work: the reduction length {} gives {} slices of {}",
                         s.split_k, g.kr, ceil_div(g.kr, s.block_k), s.block_k);
    // Index and grid limits.
    if (g.n > kIntMax) return fmt::format("output pixels N*O*P*Q = {} exceed 2^31 - 1", g.n);
    if (filter_elements(p) > kIntMax) return fmt::format("filter elements {} exceed 2^31 - 1", filter_elements(p));
    if (ceil_div(g.m, s.block_m) > kGridYZMax)
      return fmt::format("{} tiles of output channels exceed the grid's y limit of 65535", ceil_div(g.m, s.block_m));
    if (std::int64_t{g.groups} * s.split_k > kGridYZMax)
      return fmt::format("groups {} times split_k {} exceed the grid's z limit of 65535", g.groups, s.split_k);
    // Resources of the GPU.
    const int threads = threads_per_block(s);
    if (threads < 32) return fmt::format("{} threads per block are fewer than a warp", threads);
    if (threads > gpu.max_threads_per_block)
      return fmt::format("{} threads per block exceed the gpu's {}", threads, gpu.max_threads_per_block);
    if (smem_bytes(s) > std::min(gpu.smem_per_block_bytes, 48 * 1024))
      return fmt::format("{} bytes of shared memory per block exceed the {} allowed without opting in", smem_bytes(s),
                         std::min(gpu.smem_per_block_bytes, 48 * 1024));
    const int regs = register_estimate(s);
    if (regs > gpu.max_regs_per_thread)
      return fmt::format("about {} registers per thread exceed the gpu's {}", regs, gpu.max_regs_per_thread);
    if (gpu.regs_per_block > 0 && regs * threads > gpu.regs_per_block)
      return fmt::format("about {} registers per block ({} threads of {}) exceed the gpu's {}", regs * threads, threads,
                         regs, gpu.regs_per_block);
    return std::nullopt;
  }

  std::vector<IgemmParams> candidates(const Problem& p, const Gpu& gpu) const {
    if (!validate(p).empty()) return {};  // no configuration changes this
    const Gemm g = gemm_of(p);
    const int sm_count = std::max(gpu.sm_count, 1);
    std::vector<std::pair<double, IgemmParams>> ranked;
    for (const Tile& t : kTiles) {
      if (!tile_fits(g, t)) continue;
      for (int block_k : {8, 16}) {
        for (int stages : {2, 1}) {
          for (int vector : {4, 1}) {
            // Split-K only while the output alone fills fewer than two waves, keeping >= 2 steps per split.
            const std::int64_t tiles = blocks_of(g, spec_of(t, block_k, stages, 1, vector));
            const std::int64_t steps = ceil_div(g.kr, block_k);
            for (int split_k = 1; split_k <= 64; split_k *= 2) {
              if (split_k > 1 && (tiles * (split_k / 2) >= 2 * sm_count || ceil_div(steps, split_k) < 2)) break;
              const IgemmParams s = spec_of(t, block_k, stages, split_k, vector);
              if (!check(p, gpu, s)) ranked.emplace_back(estimate_us(p, gpu, s), s);
            }
          }
        }
      }
    }
    std::stable_sort(ranked.begin(), ranked.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
    std::vector<IgemmParams> specs;
    for (const auto& [us, s] : ranked) {
      if (specs.size() == kMaxCandidates) break;
      specs.push_back(s);
    }
    return specs;
  }

  CostFeatures features(const Problem& p, const IgemmParams& s) const {
    const Gemm g = gemm_of(p);
    const double out_elements = static_cast<double>(output_elements(p));
    const int chunk = split_chunk(g, s);
    const double warps = std::ceil(threads_per_block(s) / 32.0);
    // templates/igemm.cu: per BLOCK_K step each thread reads THREAD_M + THREAD_N values of shared memory as float4
    // (or narrower) vectors; the block loads BLOCK_M filter rows of VECTOR floats and BLOCK_N activation rows (VECTOR
    // floats channels-last, scalars channels-first), each activation element's (c, t, r, s) and bounds computed anew:
    // about 8 instructions.
    const int vm = std::min(4, s.thread_m), vn = std::min(4, s.thread_n);
    const int activation_vector = channels_last(p.layout) ? s.vector : 1;
    const double activation_loads = static_cast<double>(s.block_n) * chunk / activation_vector;
    constexpr double kAddressInstructionsPerActivationLoad = 8;
    return {.blocks = blocks_of(g, s),
            .threads_per_block = threads_per_block(s),
            .smem_bytes_per_block = smem_bytes(s),
            .flops = static_cast<double>(flops(p)),
            // Each tensor once, plus, with split-K, the zeroing of the output and the atomic adds'
            // read-modify-writes (which mostly stay in L2; counted once more).
            .dram_bytes = static_cast<double>(min_bytes(p)) + (s.split_k > 1 ? 2 * out_elements * 4 : 0),
            .flops_per_block = 2.0 * s.block_m * s.block_n * chunk,
            .fma_instructions = warps * s.thread_m * s.thread_n * chunk,
            .shared_load_instructions = warps * chunk * (s.thread_m / vm + s.thread_n / vn),
            .global_load_instructions = (static_cast<double>(s.block_m) * chunk / s.vector + activation_loads) / 32,
            .address_instructions = activation_loads / 32 * kAddressInstructionsPerActivationLoad,
            .main_loop_steps = chunk / s.block_k,
            .pipelined = s.stages == 2,
            .warp_issue_rate = kWarpIssueRate,
            .atomic_outputs = s.split_k > 1 ? out_elements * s.split_k : 0,
            .extra_launches = s.split_k > 1 ? 1 : 0};
  }

  // The candidates offered, best estimate first. 64: with 48, the estimate of 12 latency-hiding warps (below) left
  // out the fastest measured candidate of 12% of the problems of the published H200 sets, the fastest it kept
  // 1.001-1.017x slower (geometric means); with 64, 1.000-1.009x (`convgen db replay --family igemm`).
  static constexpr std::size_t kMaxCandidates = 64;

  // The warps an SM needs to hide the inner loop's latency, and split-K's cost besides its traffic (zeroing the
  // output, the atomics' tail). 8 and 2 us before; 12 and 1.25 pick better on every published H200 set of igemm's
  // measurements (`convgen db replay --family igemm`: ResNet-50 fp32 at batch 4-32 1.120x -> 1.087x of the fastest,
  // the winograd-gemm study's layers 1.134x -> 1.084x, the pointwise study's 1.109x -> 1.090x), where 16 warps helped
  // one set and hurt another.
  static constexpr double kLatencyHidingWarps = 12;
  static constexpr double kSplitUs = 1.25;

  // A rough time in microseconds that orders the search space (the tuner's cost model ranks for real): waves of
  // resident blocks, each doing its executed FLOPs at the SM's rate scaled by how well the inner loop issues and
  // hides latency, or the DRAM time if longer, plus split-K's atomics.
  static double estimate_us(const Problem& p, const Gpu& gpu, const IgemmParams& s) {
    const Gemm g = gemm_of(p);
    const int sm_count = std::max(gpu.sm_count, 1);
    const std::int64_t blocks = blocks_of(g, s);
    const int per_sm = resident_blocks_per_sm(gpu, threads_per_block(s), register_estimate(s), smem_bytes(s));
    const double waves = std::ceil(static_cast<double>(blocks) / (static_cast<double>(sm_count) * per_sm));
    const double resident = std::min<double>(per_sm, std::ceil(static_cast<double>(blocks) / sm_count));
    const int fmas = s.thread_m * s.thread_n;
    const int shared_loads = s.thread_m / std::min(4, s.thread_m) + s.thread_n / std::min(4, s.thread_n);
    double efficiency = static_cast<double>(fmas) / (fmas + shared_loads + 2);
    efficiency *= std::min(1.0, resident * threads_per_block(s) / 32 / kLatencyHidingWarps);
    // Thin tiles load more operand bytes per FMA: below 32 FMAs per loaded element they are bandwidth-bound.
    const double reuse = static_cast<double>(s.block_m) * s.block_n / (s.block_m + s.block_n);
    efficiency *= std::sqrt(std::min(1.0, reuse / 32));
    if (s.stages == 1) efficiency *= 0.9;
    if (s.block_k == 16) efficiency *= 1.08;  // half the barriers per FLOP; measured faster on large layers
    if (s.vector == 4) efficiency *= 1.05;
    const double sm_flops_per_us = std::max(gpu.peak_fp32_tflops, 1.0) * 1e6 / sm_count;
    const double flops_per_block = 2.0 * s.block_m * s.block_n * split_chunk(g, s);
    const double compute_us = waves * resident * flops_per_block / (sm_flops_per_us * efficiency);
    const double bytes_per_us = std::max(gpu.dram_bandwidth_gbs, 100.0) * 1e3;
    const double out_bytes = static_cast<double>(output_elements(p)) * 4;
    const double memory_us = static_cast<double>(min_bytes(p)) / bytes_per_us;
    const double split_us = s.split_k > 1 ? out_bytes * (1 + 0.5 * s.split_k) / bytes_per_us + kSplitUs : 0;
    return std::max(compute_us, memory_us) + split_us;
  }
};

}  // namespace

const Family& igemm_family() {
  static const Igemm instance;
  return instance;
}

}  // namespace convgen
