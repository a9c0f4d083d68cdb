// pointwise: FP32 1x1 convolutions (any stride, no padding, ungrouped, channels-first) as one SGEMM over the batch
// (templates/pointwise.cu): search space, support checks, launch plan (the filter packed once, transposed and padded,
// into a persistent buffer; one launch per call, and split-K's reduce pass after it) and costs.
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
#include "generator/simt_gemm.hpp"
#include "pointwise_params.hpp"  // generated from templates/pointwise.cu

namespace convgen {
namespace {

// The register tiles issue like igemm's (CostFeatures::warp_issue_rate).
constexpr double kWarpIssueRate = 0.5;

constexpr std::int64_t kIntMax = 2147483647;
constexpr std::int64_t kGridYZMax = 65535;
constexpr unsigned kPackThreads = 256;  // the template's PACK_THREADS
constexpr int kReduceThreads = 256;     // and REDUCE_THREADS
// Candidates offered, ranked by estimate_us: the best block shapes without split-K and the best with it, this many
// of each (the estimate's view of a split is the least tested part of it), each with its two pipelines.
constexpr std::size_t kTilesPerKind = 8;
// What a step waits for memory when its loads were issued one step ahead; a cp.async ring of S stages waits about
// 1 / (S - 1) of it per step. Cold DRAM on an H100 / H200 is about 1,000 clocks (0.6 us), but under the load of a
// whole layer the pick among measured candidates was best from 1.0 to 1.5 us on every published H200 set of
// pointwise's measurements (`convgen db replay --family pointwise`; at 1.2: ResNet-50 fp32 at batch 4-32 1.120x ->
// 1.085x of the fastest, the winograd-gemm study's layers 1.130x -> 1.075x, the pointwise study's 1.100x -> 1.087x),
// and much worse at 0.9 and at 2.
constexpr double kLoadLatencyUs = 1.2;
// Split-K's reduce pass: its launch and the wait for the main one's last block, besides the partial sums' traffic
// (2 us before; 1.25 as igemm and igemm_wgmma, ResNet-50 fp32 1.110x at 0.6 us above).
constexpr double kSplitPassUs = 1.25;

std::int64_t ceil_div(std::int64_t a, std::int64_t b) { return (a + b - 1) / b; }
std::int64_t round_up(std::int64_t a, std::int64_t b) { return ceil_div(a, b) * b; }
int next_pow2(std::int64_t v) {
  int p = 1;
  while (p < v && p < (1 << 30)) p *= 2;
  return p;
}

// The quantities of templates/pointwise.cu (same names, lower case).
using Params = PointwiseParams;
std::int64_t pixels(const Problem& p) {
  const Dims3 out = output_dims(p);
  return std::int64_t{out.d} * out.h * out.w;
}
// The GEMM's columns: every image's output pixels.
std::int64_t columns(const Problem& p) { return std::int64_t{p.n} * pixels(p); }
bool unit_stride(const Problem& p) { return p.stride.d == 1 && p.stride.h == 1 && p.stride.w == 1; }
std::int64_t c_pad(const Problem& p, const Params& s) { return round_up(p.c, s.block_k); }
std::int64_t k_pad(const Problem& p, const Params& s) { return round_up(p.k, s.block_m); }
// The GEMM's block (generator/simt_gemm.hpp): the filter slab moves as float4s, the activation's as `vector` floats.
SimtGemmTile tile_of(const Params& s) {
  SimtGemmTile t{.block_m = s.block_m,
                 .block_n = s.block_n,
                 .block_k = s.block_k,
                 .thread_m = s.thread_m,
                 .thread_n = s.thread_n,
                 .cp_stages = s.cp_stages};
  t.staged_loads =
      (t.block_k * t.block_m / 4 + t.block_k * t.block_n / std::max(s.vector, 1)) / std::max(t.threads(), 1);
  return t;
}
std::int64_t steps(const Problem& p, const Params& s) { return c_pad(p, s) / s.block_k; }
std::int64_t split_steps(const Problem& p, const Params& s) { return ceil_div(steps(p, s), std::max(s.split_k, 1)); }
// Bytes of split-K's partial sums, written once and read once.
double partial_bytes(const Problem& p, const Params& s) {
  return s.split_k > 1 ? 2.0 * 4 * s.split_k * static_cast<double>(output_elements(p)) : 0.0;
}
std::array<unsigned, 3> grid_of(const Problem& p, const Params& s) {
  return {static_cast<unsigned>(ceil_div(columns(p), s.block_n)), static_cast<unsigned>(k_pad(p, s) / s.block_m),
          static_cast<unsigned>(std::max(s.split_k, 1))};
}
std::int64_t blocks_of(const Problem& p, const Params& s) {
  const auto grid = grid_of(p, s);
  return std::int64_t{grid[0]} * grid[1] * grid[2];
}

class Pointwise final : public Family {
 public:
  const TemplateInterface& interface() const override { return pointwise_interface(); }

  std::optional<std::string> check_support(const Problem& p, const Gpu& gpu, const KernelSpec& spec) const override {
    if (spec.family != Params::family) return fmt::format("kernel {} is not a pointwise kernel", spec.family);
    return check(p, gpu, params_of<Params>(spec));
  }

  std::vector<KernelSpec> enumerate(const Problem& p, const Gpu& gpu) const override {
    std::vector<KernelSpec> specs;
    for (const Params& s : candidates(p, gpu)) specs.push_back(to_spec(s));
    return specs;
  }

  // setup: W^T into the persistent "packed_filter" ([c][k], padded); run: one launch (with split-K, into the per-call
  // "partials", bound as g_workspace, and then the reduce entry).
  LaunchPlan plan(const Problem& p, const KernelSpec& spec) const override {
    const Params s = params_of<Params>(spec);
    LaunchPlan plan;
    plan.buffers.push_back({.name = "packed_filter", .bytes = 4 * c_pad(p, s) * k_pad(p, s), .persistent = true});
    plan.setup.push_back(
        {.kind = LaunchStep::Kind::kernel,
         .entry_suffix = "pack_filter",
         .geometry = {.grid = {static_cast<unsigned>(ceil_div(c_pad(p, s) * k_pad(p, s), kPackThreads)), 1, 1},
                      .block = {kPackThreads, 1, 1}}});
    plan.run.push_back(
        {.kind = LaunchStep::Kind::kernel,
         .geometry = {.grid = grid_of(p, s), .block = {static_cast<unsigned>(tile_of(s).threads()), 1, 1}}});
    add_split_k_reduce(plan, output_elements(p), s.split_k, kReduceThreads);
    // `v` 4: float4s (or 16-byte cp.async) of 4 pixels of the activation; unsplit, 4 pixels of the output a float4
    // store where an image's pixels are a multiple of 4 (at any stride); the filter is read by pack_filter.
    const std::int64_t pixels_per_image = output_elements(p) / (std::int64_t{p.n} * p.k);
    plan.tensor_alignment = {.activation = s.vector == 4 ? 16 : 0,
                             .output = s.split_k == 1 && pixels_per_image % 4 == 0 ? 16 : 0};
    return with_early_launch(std::move(plan));  // every run entry waits first (grid_dependency.cuh)
  }

  CostFeatures cost_features(const Problem& p, const KernelSpec& spec) const override {
    const Params s = params_of<Params>(spec);
    const SimtGemmTile t = tile_of(s);
    const double block_steps = static_cast<double>(split_steps(p, s));  // a split's (the busiest block's)
    const double channels = block_steps * s.block_k;
    return {.blocks = blocks_of(p, s),
            .threads_per_block = t.threads(),
            .smem_bytes_per_block = t.smem_bytes(),
            .flops = static_cast<double>(flops(p)),
            // Each tensor once, the packed filter read by every column of blocks (mostly from L2: once).
            .dram_bytes = static_cast<double>(min_bytes(p)) + partial_bytes(p, s),
            .flops_per_block = 2.0 * s.block_m * s.block_n * channels,
            .fma_instructions = t.fma_instructions(block_steps),
            .shared_load_instructions = t.shared_load_instructions(block_steps),
            .global_load_instructions = t.global_load_instructions(block_steps),
            // The activation's bounds tests (and strided offsets) per load.
            .address_instructions = t.warps() * block_steps * (s.block_k * s.block_n / std::max(s.vector, 1)) /
                                    std::max(t.threads(), 1) * (unit_stride(p) ? 3.0 : 8.0),
            .main_loop_steps = t.exposed_steps(block_steps),
            .pipelined = true,
            .warp_issue_rate = kWarpIssueRate,
            .extra_launches = s.split_k > 1 ? 1 : 0};
  }

  // Until a calibration includes the family: igemm's weights (the same instruction kinds, a SIMT main loop).
  CostWeights default_cost_weights() const override { return family("igemm").default_cost_weights(); }

  std::optional<KernelSpec> default_spec(const Problem& p, const Gpu& gpu) const override {
    const std::vector<Params> all = candidates(p, gpu);
    if (all.empty()) return std::nullopt;
    return to_spec(all.front());
  }

  // First for the 1x1 layers it serves where its float4 loads apply (stride 1, pixels a multiple of 4) and at batch
  // 1 and 2; after igemm (the same rank, igemm first by name) otherwise. Measured on the H200's resnet50 1x1 layers
  // (bench/results/h200/pointwise-2026-11-28): its default beat igemm's on all 16 at batch 1 and on 12 of 16 at
  // batch 8, the 4 losses strided or 7x7 (scalar loads); at batch 1 it also beat act_sparse's default on all 16, each
  // with zeros in its activation.
  int default_rank(const Problem& p) const override {
    if (p.precision != Precision::fp32) return 100;  // not served
    const bool float4_loads = unit_stride(p) && pixels(p) % 4 == 0;
    return float4_loads || p.n <= 2 ? -2 : 0;
  }

 private:
  std::optional<std::string> check(const Problem& p, const Gpu& gpu, const Params& s) const {
    if (std::string reason = validate(p); !reason.empty()) return "invalid problem: " + reason;
    if (p.precision != Precision::fp32)
      return fmt::format("precision {} is not supported by pointwise (fp32 only)", p.precision);
    if (channels_last(p.layout)) return fmt::format("pointwise handles channels-first layouts only, got {}", p.layout);
    if (p.groups != 1) return fmt::format("pointwise handles ungrouped convolutions only, got {} groups", p.groups);
    if (p.filter.d != 1 || p.filter.h != 1 || p.filter.w != 1)
      return fmt::format("pointwise handles 1x1 filters only, got {}x{}x{}", p.filter.d, p.filter.h, p.filter.w);
    if (p.padding.d != 0 || p.padding.h != 0 || p.padding.w != 0)
      return fmt::format("pointwise handles unpadded convolutions only, got padding {}x{}x{}", p.padding.d, p.padding.h,
                         p.padding.w);
    // Field values.
    const SimtGemmTile t = tile_of(s);
    if (auto reason = t.check_fields()) return reason;
    if (s.vector != 1 && s.vector != 4) return fmt::format("vector must be 1 or 4, got {}", s.vector);
    if (s.split_k != 1 && s.split_k != 2 && s.split_k != 4 && s.split_k != 8 && s.split_k != 16)
      return fmt::format("split_k must be 1, 2, 4, 8 or 16, got {}", s.split_k);
    if (s.cp_stages != 0 && s.cp_stages != 2 && s.cp_stages != 3 && s.cp_stages != 4)
      return fmt::format("cp_stages must be 0, 2, 3 or 4, got {}", s.cp_stages);
    if (s.cp_stages > 0 && !has_cp_async(gpu))
      return fmt::format("cp_stages {} needs cp.async (sm_80 or later), the gpu is {}", s.cp_stages, gpu.arch);
    if (s.split_k > steps(p, s))
      return fmt::format("split_k {} exceeds the {} steps of {} input channels", s.split_k, steps(p, s), s.block_k);
    if (s.vector == 4 && (!unit_stride(p) || pixels(p) % 4 != 0))
      return fmt::format(
          "vector 4 reads 4 pixels at once: it needs stride 1 and a multiple of 4 output pixels per "
          "image, got {} pixels",
          pixels(p));
    const int threads = t.threads();
    if ((s.block_k * s.block_m / 4) % threads != 0 || (s.block_k * s.block_n / s.vector) % threads != 0)
      return fmt::format("the {} threads cannot copy a step's {} x {} and {} x {} slabs in equal shares", threads,
                         s.block_k, s.block_m, s.block_k, s.block_n);
    // Index and grid limits.
    if (activation_elements(p) > kIntMax || output_elements(p) > kIntMax)
      return "pointwise indexes tensors with int: the activation and output must have fewer than 2^31 elements";
    if (c_pad(p, s) * k_pad(p, s) > kIntMax) return "the packed filter would have 2^31 floats or more";
    if (std::int64_t{s.split_k} * output_elements(p) > kIntMax)
      return fmt::format("the partial sums of {} splits would have 2^31 floats or more", s.split_k);
    const auto grid = grid_of(p, s);
    if (grid[0] > kIntMax || grid[1] > kGridYZMax || grid[2] > kGridYZMax)
      return fmt::format("its grid ({} x {} x {}) exceeds the y and z limit of 65535", grid[0], grid[1], grid[2]);
    return t.check_resources(gpu);
  }

  // Every configuration that passes check and fits the problem (blocks within the next power of two of K and of the
  // columns), the float4 loads wherever the problem allows them, split-K where the tiles alone fill fewer blocks than
  // the GPU has SMs: the best kTilesPerKind of each kind by estimate_us, merged in the estimate's order, each with
  // the register pipeline and the deepest cp.async ring that fits (where the GPU has cp.async).
  std::vector<Params> candidates(const Problem& p, const Gpu& gpu) const {
    if (p.precision != Precision::fp32 || !validate(p).empty()) return {};  // no configuration changes these
    const int vector = unit_stride(p) && pixels(p) % 4 == 0 ? 4 : 1;
    // A block shape and split with its pipelines (the register one, and a cp.async ring where the GPU has cp.async),
    // the faster by the estimate first.
    struct Tile {
      double estimate_us;
      std::vector<Params> pipelines;
    };
    std::vector<Tile> found[2];  // without split-K, with it
    for (int block_m : {32, 64, 128}) {
      if (block_m > std::max(32, next_pow2(p.k))) continue;
      for (int block_n : {32, 64, 128}) {
        if (block_n > std::max(32, next_pow2(columns(p)))) continue;
        for (int block_k : {8, 16}) {
          for (int thread_m : {4, 8}) {
            for (int thread_n : {4, 8}) {
              for (int split_k : {1, 2, 4, 8, 16}) {
                const Params s{.block_m = block_m,
                               .block_n = block_n,
                               .block_k = block_k,
                               .thread_m = thread_m,
                               .thread_n = thread_n,
                               .vector = vector,
                               .split_k = split_k};
                // Splits only where the tiles alone leave SMs idle, and with 4 steps or more each.
                Params unsplit = s;
                unsplit.split_k = 1;
                if (split_k > 1 && (blocks_of(p, unsplit) >= std::max(gpu.sm_count, 1) || split_steps(p, s) < 4))
                  continue;
                if (check(p, gpu, s)) continue;
                Tile tile{.estimate_us = estimate_us(p, gpu, s), .pipelines = {s}};
                // The deepest cp.async ring that fits beside the register pipeline (the tuner measures which pays).
                for (int cp_stages : {4, 3, 2}) {
                  Params ring = s;
                  ring.cp_stages = cp_stages;
                  if (check(p, gpu, ring)) continue;
                  const double us = estimate_us(p, gpu, ring);
                  // The ring first unless the estimate says it is slower: on the H200 it was the faster of the two
                  // in 417 of 427 measured pairs (bench/results/h200/pointwise-2026-11-28).
                  tile.pipelines.insert(us <= tile.estimate_us ? tile.pipelines.begin() : tile.pipelines.end(), ring);
                  tile.estimate_us = std::min(tile.estimate_us, us);
                  break;
                }
                found[split_k > 1 ? 1 : 0].push_back(std::move(tile));
              }
            }
          }
        }
      }
    }
    const auto faster = [](const Tile& a, const Tile& b) { return a.estimate_us < b.estimate_us; };
    std::vector<Tile> ranked;
    for (auto& kind : found) {
      std::stable_sort(kind.begin(), kind.end(), faster);
      if (kind.size() > kTilesPerKind) kind.resize(kTilesPerKind);
      ranked.insert(ranked.end(), kind.begin(), kind.end());
    }
    std::stable_sort(ranked.begin(), ranked.end(), faster);
    std::vector<Params> specs;
    for (const Tile& tile : ranked) specs.insert(specs.end(), tile.pipelines.begin(), tile.pipelines.end());
    return specs;
  }

  // A rough time in microseconds that orders the search space (the tuner's cost model ranks for real): waves of
  // resident blocks, each issuing its FMAs, float4 shared loads and staged global loads at 4 warp instructions per
  // clock per SM, slowed when fewer than 8 warps per SM hide the latencies; or, if longer, each wave's steps waiting
  // for memory (the pipeline's depth divides the wait), or the tensors' bytes at the DRAM bandwidth; plus split-K's
  // second pass.
  static double estimate_us(const Problem& p, const Gpu& gpu, const Params& s) {
    // A staged load costs about 4 instructions with its bounds test and address.
    const SimtGemmTile tile = tile_of(s);
    const double blocks = static_cast<double>(blocks_of(p, s));
    const double block_steps = static_cast<double>(split_steps(p, s));
    const double compute_us = tile.estimate_us(gpu, blocks, block_steps, 4);
    const double waves = std::ceil(
        blocks / (std::max(gpu.sm_count, 1) * static_cast<double>(std::max(tile.resident_blocks_per_sm(gpu), 1))));
    const double depth = s.cp_stages > 1 ? s.cp_stages - 1.0 : 1.0;
    const double latency_us = waves * block_steps * kLoadLatencyUs / depth;
    const double memory_us = static_cast<double>(min_bytes(p)) / (std::max(gpu.dram_bandwidth_gbs, 100.0) * 1e3);
    // Split-K: its partial sums through L2 and the reduce pass.
    const double split_us =
        s.split_k > 1 ? partial_bytes(p, s) / (2 * std::max(gpu.dram_bandwidth_gbs, 100.0) * 1e3) + kSplitPassUs : 0.0;
    return std::max({compute_us, latency_us, memory_us}) + split_us;
  }
};

}  // namespace

const Family& pointwise_family() {
  static const Pointwise instance;
  return instance;
}

}  // namespace convgen
