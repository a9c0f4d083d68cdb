// stem: FP32 2-D convolutions of few input channels (a network's first layer), channels-first and ungrouped, each
// block's input patch and filter staged in shared memory once (templates/stem.cu): search space, support checks,
// launch plan (one launch) and costs.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "generator/family.hpp"
#include "stem_params.hpp"  // generated from templates/stem.cu

namespace convgen {
namespace {

using Params = StemParams;

// The family serves layers of at most this many input channels: beyond it a GEMM's reduction is long enough for
// igemm's tiles, and the patch of every channel would crowd shared memory.
constexpr int kMaxChannels = 8;
constexpr int kStaticSmemLimit = 48 * 1024;
constexpr std::int64_t kIntMax = std::numeric_limits<std::int32_t>::max();
constexpr std::int64_t kGridYZMax = 65535;
constexpr int kMaxRegisters = 168;          // the estimate's bound: more would spill
constexpr std::size_t kMaxCandidates = 24;  // offered, best estimate first
// SIMT FMAs mostly, like direct's and igemm's main loops (CostFeatures::warp_issue_rate).
constexpr double kWarpIssueRate = 0.5;
// A wave's wait for its patch and filter (global loads, one barrier) before its first FMA.
constexpr double kStageLatencyUs = 0.8;
// Warps an SM needs to hide the shared loads' latency and the FMA chains: below it the estimate slows the issue.
// Measured on the H200 (bench/results/h200/stem-2026-11-30/): with 24 the estimate's first candidate was within
// 1.02-1.13x of the fastest of the 24 measured on ResNet-50's and ResNet-20's stems at two batches each (geometric
// mean 1.07x), with 8 1.09-1.28x (1.16x).
constexpr double kWarpsToHideLatency = 24;
// First in the default choice from this much work on: below it the stem's fixed cost (staging, one wave) loses to
// direct's (ResNet-20's 3x3 stem at batch 1, 0.9 MFLOP: stem 1.74 us against direct's 1.68; at batch 32, 28 MFLOP:
// 3.45 against 4.68; ResNet-50's 7x7 stem, 236 and 1,888 MFLOP: 1.44x and 1.44x faster than igemm).
constexpr double kMinFlopsFirst = 8e6;

std::int64_t ceil_div(std::int64_t a, std::int64_t b) { return (a + b - 1) / b; }
int next_pow2(std::int64_t v) {
  int p = 1;
  while (p < v && p < (1 << 30)) p *= 2;
  return p;
}

// The constants of templates/stem.cu for a problem and spec (same names, lower case).
struct Tiling {
  int lane_rows = 0, block_p = 0, block_k = 0, threads = 0, col_rows = 0;
  int patch_rows = 0, patch_cols = 0, phase_cols = 0, row_pitch = 0;
  std::int64_t q_tiles = 0, p_tiles = 0, k_tiles = 0;
  std::int64_t patch_floats = 0, filter_floats = 0;
  std::int64_t smem_bytes = 0;
  int registers = 0;  // estimate per thread
};

// templates/stem.cu's conflict_free and row_pitch: the smallest row pitch whose lanes of different row groups fall in
// different banks.
int row_pitch(const Params& s, int stride_w, int phase_cols, int row_step, int lane_rows) {
  const auto conflict_free = [&](int pitch) {
    for (int a = 0; a < lane_rows; ++a)
      for (int b = a + 1; b < lane_rows; ++b) {
        const int shift = static_cast<int>((std::int64_t{b - a} * row_step * pitch) % 32);
        if (shift < s.block_q || shift > 32 - s.block_q) return false;
      }
    return true;
  };
  for (int pitch = stride_w * phase_cols; pitch < stride_w * phase_cols + 32; ++pitch)
    if (conflict_free(pitch)) return pitch;
  return stride_w * phase_cols;
}

Tiling tiling(const Problem& p, const Params& s) {
  Tiling t;
  const Dims3 out = output_dims(p);
  t.lane_rows = s.block_q > 0 ? 32 / s.block_q : 1;
  t.block_p = s.warps_p * t.lane_rows * s.thread_p;
  t.block_k = s.warps_k * s.thread_k;
  t.threads = 32 * s.warps_p * s.warps_k;
  t.col_rows = (s.thread_p - 1) * p.stride.h + (p.filter.h - 1) * p.dilation.h + 1;
  t.patch_rows = (t.block_p - 1) * p.stride.h + (p.filter.h - 1) * p.dilation.h + 1;
  t.patch_cols = (s.block_q - 1) * p.stride.w + (p.filter.w - 1) * p.dilation.w + 1;
  t.phase_cols = static_cast<int>(ceil_div(t.patch_cols, p.stride.w));
  t.row_pitch = row_pitch(s, p.stride.w, t.phase_cols, s.thread_p * p.stride.h, t.lane_rows);
  t.q_tiles = ceil_div(out.w, std::max(s.block_q, 1));
  t.p_tiles = ceil_div(out.h, std::max(t.block_p, 1));
  t.k_tiles = ceil_div(p.k, std::max(t.block_k, 1));
  t.patch_floats = std::int64_t{p.c} * t.patch_rows * t.row_pitch;
  t.filter_floats = std::int64_t{p.c} * p.filter.h * p.filter.w * t.block_k;
  t.smem_bytes = 4 * (t.patch_floats + t.filter_floats);
  // Accumulators, the patch column, the filter values, and ~24 for addresses and loop state.
  t.registers = s.thread_p * s.thread_k + t.col_rows + s.thread_k + 24;
  return t;
}

// Whether the family serves the problem's kind (check says why not, and checks the spec too).
bool serves(const Problem& p) {
  return p.precision == Precision::fp32 && !channels_last(p.layout) && p.groups == 1 && p.input.d == 1 &&
         p.filter.d == 1 && p.padding.d == 0 && p.c <= kMaxChannels;
}

std::int64_t blocks_of(const Problem& p, const Tiling& t) { return t.q_tiles * t.p_tiles * t.k_tiles * p.n; }

// Warp instructions of one warp of a block: per input channel and filter column, the patch column's loads, and per
// filter row the 16-byte filter loads and the FMAs; the staging loads (with their index arithmetic) before.
struct WarpWork {
  double fma = 0, shared_loads = 0, staging_loads = 0;
};
WarpWork warp_work(const Problem& p, const Params& s, const Tiling& t) {
  const double channel_columns = static_cast<double>(p.c) * p.filter.w;
  return {.fma = channel_columns * p.filter.h * s.thread_p * s.thread_k,
          .shared_loads = channel_columns * (t.col_rows + p.filter.h * s.thread_k / 4.0),
          .staging_loads = static_cast<double>(p.c * t.patch_rows * t.patch_cols + t.filter_floats) /
                           std::max(t.threads, 1)};
}

class Stem final : public Family {
 public:
  const TemplateInterface& interface() const override { return stem_interface(); }

  std::optional<std::string> check_support(const Problem& p, const Gpu& gpu, const KernelSpec& spec) const override {
    if (spec.family != Params::family) return fmt::format("kernel {} is not a stem kernel", spec.family);
    return check(p, gpu, params_of<Params>(spec));
  }

  std::vector<KernelSpec> enumerate(const Problem& p, const Gpu& gpu) const override {
    std::vector<KernelSpec> specs;
    for (const Params& s : candidates(p, gpu)) specs.push_back(to_spec(s));
    return specs;
  }

  LaunchPlan plan(const Problem& p, const KernelSpec& spec) const override {
    const Tiling t = tiling(p, params_of<Params>(spec));
    return with_early_launch(  // the entry waits first (grid_dependency.cuh)
        single_launch_plan({.grid = {static_cast<unsigned>(t.q_tiles * t.p_tiles), static_cast<unsigned>(t.k_tiles),
                                     static_cast<unsigned>(p.n)},
                            .block = {static_cast<unsigned>(t.threads), 1, 1}}));
  }

  CostFeatures cost_features(const Problem& p, const KernelSpec& spec) const override {
    const Params s = params_of<Params>(spec);
    const Tiling t = tiling(p, s);
    const WarpWork w = warp_work(p, s, t);
    const double warps = t.threads / 32.0;
    return {.blocks = blocks_of(p, t),
            .threads_per_block = t.threads,
            .smem_bytes_per_block = static_cast<int>(t.smem_bytes),
            .flops = static_cast<double>(flops(p)),
            // Each tensor once: the patches' overlaps and the filter's re-reads by other blocks hit L2.
            .dram_bytes = static_cast<double>(min_bytes(p)),
            .flops_per_block = 2.0 * t.block_p * s.block_q * t.block_k * p.c * p.filter.h * p.filter.w,
            .fma_instructions = warps * w.fma,
            .shared_load_instructions = warps * w.shared_loads,
            .global_load_instructions = warps * w.staging_loads,
            .address_instructions = warps * w.staging_loads * 4,  // divisions by constants, bounds, the store
            .main_loop_steps = 1,
            .warp_issue_rate = kWarpIssueRate};
  }

  // Until a calibration includes the family: direct's weights (the same instruction kinds: FMAs from registers fed by
  // shared loads, one staging step).
  CostWeights default_cost_weights() const override { return family("direct").default_cost_weights(); }

  std::optional<KernelSpec> default_spec(const Problem& p, const Gpu& gpu) const override {
    const std::vector<Params> all = candidates(p, gpu);
    if (all.empty()) return std::nullopt;
    return to_spec(all.front());
  }

  // First (after pointwise's 1x1 layers, a pruned filter's weight_sparse and act_sparse on sparse inputs) for the layers
  // it serves with at least kMinFlopsFirst of work; after direct and igemm below it.
  int default_rank(const Problem& p) const override {
    if (!serves(p)) return 100;
    return static_cast<double>(flops(p)) >= kMinFlopsFirst ? -1 : 2;
  }

 private:
  std::optional<std::string> check(const Problem& p, const Gpu& gpu, const Params& s) const {
    if (std::string reason = validate(p); !reason.empty()) return "invalid problem: " + reason;
    if (p.precision != Precision::fp32)
      return fmt::format("precision {} is not supported by stem (fp32 only)", p.precision);
    if (channels_last(p.layout)) return fmt::format("stem handles channels-first layouts only, got {}", p.layout);
    if (p.groups != 1) return fmt::format("stem handles ungrouped convolutions only, got {} groups", p.groups);
    if (p.input.d != 1 || p.filter.d != 1 || p.padding.d != 0)
      return fmt::format("stem handles 1-D and 2-D layers only, got depth {} and a filter depth of {}", p.input.d,
                         p.filter.d);
    if (p.c > kMaxChannels)
      return fmt::format("stem serves at most {} input channels (a stem's), got {}", kMaxChannels, p.c);
    // Field values.
    if (s.block_q != 16 && s.block_q != 32) return fmt::format("block_q must be 16 or 32, got {}", s.block_q);
    if (s.thread_p < 1 || s.thread_p > 8) return fmt::format("thread_p must be 1 to 8, got {}", s.thread_p);
    if (s.thread_k != 4 && s.thread_k != 8 && s.thread_k != 16)
      return fmt::format("thread_k must be 4, 8 or 16, got {}", s.thread_k);
    if (s.warps_p < 1 || s.warps_p > 8) return fmt::format("warps_p must be 1 to 8, got {}", s.warps_p);
    if (s.warps_k < 1 || s.warps_k > 8) return fmt::format("warps_k must be 1 to 8, got {}", s.warps_k);
    const Tiling t = tiling(p, s);
    const int max_threads = std::min(1024, gpu.max_threads_per_block > 0 ? gpu.max_threads_per_block : 1024);
    if (t.threads > max_threads)
      return fmt::format("{} threads per block exceed the limit of {}", t.threads, max_threads);
    const int smem_limit =
        gpu.smem_per_block_bytes > 0 ? std::min(kStaticSmemLimit, gpu.smem_per_block_bytes) : kStaticSmemLimit;
    if (t.smem_bytes > smem_limit)
      return fmt::format(
          "the patch ({} x {} x {} floats) and the filter ({} floats) need {} bytes of shared memory, more than the "
          "{} bytes a block may use",
          p.c, t.patch_rows, t.row_pitch, t.filter_floats, t.smem_bytes, smem_limit);
    if (t.registers > kMaxRegisters || (gpu.max_regs_per_thread > 0 && t.registers > gpu.max_regs_per_thread))
      return fmt::format("an estimated {} registers per thread ({} accumulators) would spill", t.registers,
                         s.thread_p * s.thread_k);
    if (gpu.regs_per_block > 0 && std::int64_t{t.registers} * t.threads > gpu.regs_per_block)
      return fmt::format("an estimated {} registers per thread x {} threads exceed the {} registers per block",
                         t.registers, t.threads, gpu.regs_per_block);
    // Index and grid limits.
    if (activation_elements(p) > kIntMax || output_elements(p) > kIntMax || filter_elements(p) > kIntMax)
      return "stem indexes tensors with int: the activation, filter and output must have fewer than 2^31 elements";
    if (t.q_tiles * t.p_tiles > kIntMax || t.k_tiles > kGridYZMax || p.n > kGridYZMax)
      return fmt::format("its grid ({} x {} x {}) exceeds the limits (2^31 - 1, 65535, 65535)", t.q_tiles * t.p_tiles,
                         t.k_tiles, p.n);
    return std::nullopt;
  }

  // Every configuration that passes check without running mostly empty (a block's rows, columns and channels
  // within the next power of two of the layer's), ranked by estimate_us, the best kMaxCandidates.
  std::vector<Params> candidates(const Problem& p, const Gpu& gpu) const {
    if (p.precision != Precision::fp32 || !validate(p).empty()) return {};
    const Dims3 out = output_dims(p);
    std::vector<std::pair<double, Params>> scored;
    for (int block_q : {16, 32}) {
      if (block_q > std::max(16, next_pow2(out.w))) continue;
      for (int thread_p : {1, 2, 4, 8}) {
        for (int thread_k : {4, 8, 16}) {
          for (int warps_p : {1, 2, 4}) {
            for (int warps_k : {1, 2, 4, 8}) {
              const Params s{.block_q = block_q,
                             .thread_p = thread_p,
                             .thread_k = thread_k,
                             .warps_p = warps_p,
                             .warps_k = warps_k};
              const Tiling t = tiling(p, s);
              if (t.block_k > std::max(4, next_pow2(p.k)) || t.block_p > next_pow2(out.h) || t.threads > 512)
                continue;
              if (check(p, gpu, s)) continue;
              scored.emplace_back(estimate_us(p, gpu, s), s);
            }
          }
        }
      }
    }
    std::stable_sort(scored.begin(), scored.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
    std::vector<Params> specs;
    for (const auto& [us, s] : scored) {
      if (specs.size() == kMaxCandidates) break;
      specs.push_back(s);
    }
    return specs;
  }

  // A rough time in microseconds that orders the search space (the tuner's cost model ranks for real): the busiest
  // SM's warp instructions at 4 a clock, slowed when fewer than kWarpsToHideLatency warps are resident, plus each
  // wave's wait for its staged patch and filter.
  static double estimate_us(const Problem& p, const Gpu& gpu, const Params& s) {
    const Tiling t = tiling(p, s);
    const WarpWork w = warp_work(p, s, t);
    const int sm_count = gpu.sm_count > 0 ? gpu.sm_count : 132;
    const int warps = t.threads / 32;
    int resident = (gpu.max_threads_per_sm > 0 ? gpu.max_threads_per_sm : 2048) / t.threads;
    if (gpu.max_blocks_per_sm > 0) resident = std::min(resident, gpu.max_blocks_per_sm);
    if (gpu.smem_per_sm_bytes > 0) resident = std::min<int>(resident, static_cast<int>(gpu.smem_per_sm_bytes / t.smem_bytes));
    if (gpu.regs_per_sm > 0) resident = std::min(resident, gpu.regs_per_sm / (t.threads * t.registers));
    resident = std::max(resident, 1);
    const std::int64_t blocks = blocks_of(p, t);
    const std::int64_t per_sm = ceil_div(blocks, sm_count);
    const double waves = std::ceil(static_cast<double>(per_sm) / resident);
    const double active_warps = static_cast<double>(std::min<std::int64_t>(per_sm, resident)) * warps;
    const double efficiency = std::min(1.0, active_warps / kWarpsToHideLatency);
    const double instructions = w.fma + w.shared_loads + 6 * w.staging_loads + 3.0 * s.thread_p * s.thread_k;
    const double clock_mhz = gpu.clock_mhz > 0 ? gpu.clock_mhz : 1500;
    const double issue_us = static_cast<double>(per_sm) * warps * instructions / 4 / efficiency / clock_mhz;
    return issue_us + waves * kStageLatencyUs;
  }
};

}  // namespace

const Family& stem_family() {
  static const Stem instance;
  return instance;
}

}  // namespace convgen
