// winograd_gemm: the FP32 Winograd family F(m x m, 3 x 3), m = 2 or 4, and F(2 x m x m, 3 x 3 x 3) for 3-D layers, in
// three launches around one batched SGEMM (templates/winograd_gemm.cu): search space, support checks, launch plan (the
// filter transformed once into a persistent buffer; per call the input transform, the GEMM and the output transform
// through two per-call buffers) and costs.
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
#include "winograd_gemm_params.hpp"  // generated from templates/winograd_gemm.cu

namespace convgen {
namespace {

// The GEMM's register tiles issue like igemm's (CostFeatures::warp_issue_rate).
constexpr double kWarpIssueRate = 0.5;

constexpr std::int64_t kIntMax = 2147483647;
constexpr std::int64_t kGridYZMax = 65535;
constexpr unsigned kTransformThreads = 64;  // the template's TRANSFORM_THREADS
// As winograd's: grouped layers need at least 4 input channels per group (a GEMM step is 8 or 16 channels).
constexpr int kMinGroupChannels = 4;
// default_rank's bounds: the layers where winograd_gemm comes first in the default choice.
constexpr int kMinGroupChannelsFirst = 16;
constexpr double kMinFlopsFirst = 50e6;
constexpr int kActSparseFirstBucket = 90;  // expected zeros (%) from which act_sparse goes first
// Candidates offered per tile size, ranked by estimate_us.
constexpr std::size_t kPerTile = 8;

std::int64_t ceil_div(std::int64_t a, std::int64_t b) { return (a + b - 1) / b; }
std::int64_t round_up(std::int64_t a, std::int64_t b) { return ceil_div(a, b) * b; }
int next_pow2(std::int64_t v) {
  int p = 1;
  while (p < v && p < (1 << 30)) p *= 2;
  return p;
}

// The quantities of templates/winograd_gemm.cu (same names, lower case).
using Params = WinogradGemmParams;
int cg(const Problem& p) { return p.c / std::max(p.groups, 1); }
int kg(const Problem& p) { return p.k / std::max(p.groups, 1); }
// 3-D layers tile the depth by 2 (F(2, 3) along it: the template's TILE_D and ALPHA_D).
bool volume(const Problem& p) { return rank(p.layout) == 3; }
int tile_d(const Problem& p) { return volume(p) ? 2 : 1; }
int positions(const Problem& p, const Params& s) { return (volume(p) ? 4 : 1) * (s.tile + 2) * (s.tile + 2); }
std::int64_t tiles(const Problem& p, const Params& s) {
  const Dims3 out = output_dims(p);
  return std::int64_t{p.n} * ceil_div(out.d, tile_d(p)) * ceil_div(out.h, s.tile) * ceil_div(out.w, s.tile);
}
std::int64_t cg_pad(const Problem& p, const Params& s) { return round_up(cg(p), std::int64_t{s.block_k} * s.split_k); }
std::int64_t kg_pad(const Problem& p, const Params& s) { return round_up(kg(p), s.block_m); }
std::int64_t t_pad(const Problem& p, const Params& s) { return round_up(tiles(p, s), s.block_n); }
std::int64_t batches(const Problem& p, const Params& s) { return std::int64_t{positions(p, s)} * p.groups; }
std::int64_t filter_floats(const Problem& p, const Params& s) { return batches(p, s) * cg_pad(p, s) * kg_pad(p, s); }
std::int64_t input_floats(const Problem& p, const Params& s) { return batches(p, s) * cg_pad(p, s) * t_pad(p, s); }
std::int64_t product_floats(const Problem& p, const Params& s) {
  return std::int64_t{s.split_k} * batches(p, s) * kg_pad(p, s) * t_pad(p, s);  // a slab a split
}

// The transforms' dependent chains (CostFeatures::extra_serial_steps): a thread of the input transform loads its patch
// and transforms it, one of the output transform loads its products and transforms them; the call exposes one chain
// of each however few threads there are, and F(4x4)'s are about 3 times F(2x2)'s (a small layer, whose transforms
// are a wave or less, is faster with F(2x2) although its GEMM is larger: the H200's cuSNN, ResNet-20 and CosmoFlow
// measurements, 2026-11-29). In main-loop steps: a load round each, plus the instructions at kTransformOpsPerStep a
// step (about a global load's latency of dependent arithmetic).
constexpr double kTransformOpsPerStep = 250;
double transform_steps(const Problem& p, const Params& s) {
  const double alpha = s.tile + 2;
  const double rows = volume(p) ? 4 : 1;         // ALPHA_D: depth rows, each a 2-D transform
  const double slices = volume(p) ? 2 : 1;       // input slices combined per depth row (F(2, 3)'s B^T rows)
  const double input = rows * (slices * alpha * alpha + 2 * alpha * alpha * alpha);  // loads, two passes
  const double output = rows * alpha * alpha * (s.split_k + 2.0 * s.tile);           // loads, two passes
  return 2 + (input + output) / kTransformOpsPerStep;
}

// The GEMM's block (generator/simt_gemm.hpp): both slabs move as float4s.
SimtGemmTile tile_of(const Params& s) {
  SimtGemmTile t{.block_m = s.block_m,
                 .block_n = s.block_n,
                 .block_k = s.block_k,
                 .thread_m = s.thread_m,
                 .thread_n = s.thread_n,
                 .cp_stages = s.cp_stages};
  t.staged_loads = t.block_k * (t.block_m + t.block_n) / 4 / std::max(t.threads(), 1);
  return t;
}
std::int64_t steps(const Problem& p, const Params& s) { return cg_pad(p, s) / s.block_k / s.split_k; }  // a split's

std::array<unsigned, 3> gemm_grid(const Problem& p, const Params& s) {
  return {static_cast<unsigned>(t_pad(p, s) / s.block_n), static_cast<unsigned>(kg_pad(p, s) / s.block_m),
          static_cast<unsigned>(batches(p, s) * s.split_k)};
}
std::int64_t gemm_blocks(const Problem& p, const Params& s) {
  const auto grid = gemm_grid(p, s);
  return std::int64_t{grid[0]} * grid[1] * grid[2];
}
unsigned transform_blocks(std::int64_t threads) { return static_cast<unsigned>(ceil_div(threads, kTransformThreads)); }

// Bytes the two transforms and the GEMM move besides the tensors themselves: V written and read, M written and read,
// U read (each of the GEMM's columns of blocks reads its slab of U, mostly from L2: counted once).
double buffer_traffic_bytes(const Problem& p, const Params& s) {
  return 4.0 * (2.0 * static_cast<double>(input_floats(p, s)) + 2.0 * static_cast<double>(product_floats(p, s)) +
                static_cast<double>(filter_floats(p, s)));
}

class WinogradGemm final : public Family {
 public:
  const TemplateInterface& interface() const override { return winograd_gemm_interface(); }

  std::optional<std::string> check_support(const Problem& p, const Gpu& gpu, const KernelSpec& spec) const override {
    if (spec.family != Params::family) return fmt::format("kernel {} is not a winograd_gemm kernel", spec.family);
    return check(p, gpu, params_of<Params>(spec));
  }

  std::vector<KernelSpec> enumerate(const Problem& p, const Gpu& gpu) const override {
    std::vector<KernelSpec> specs;
    for (const Params& s : candidates(p, gpu)) specs.push_back(to_spec(s));
    return specs;
  }

  // setup: U = G g G^T into the persistent "transformed_filter" ([position][group][c][k], padded);
  // run: transform_input into "transformed_input", the GEMM into "products", transform_output into the output.
  LaunchPlan plan(const Problem& p, const KernelSpec& spec) const override {
    const Params s = params_of<Params>(spec);
    LaunchPlan plan;
    plan.buffers.push_back({.name = "transformed_filter", .bytes = 4 * filter_floats(p, s), .persistent = true});
    plan.buffers.push_back({.name = "transformed_input", .bytes = 4 * input_floats(p, s), .persistent = false});
    plan.buffers.push_back({.name = "products", .bytes = 4 * product_floats(p, s), .persistent = false});
    const LaunchGeometry transform_block{.block = {kTransformThreads, 1, 1}};
    LaunchGeometry setup = transform_block;
    setup.grid = {transform_blocks(std::int64_t{p.groups} * cg_pad(p, s) * kg_pad(p, s)), 1, 1};
    plan.setup.push_back({.kind = LaunchStep::Kind::kernel, .entry_suffix = "transform_filter", .geometry = setup});
    LaunchGeometry input = transform_block;
    input.grid = {transform_blocks(std::int64_t{p.groups} * cg_pad(p, s) * t_pad(p, s)), 1, 1};
    plan.run.push_back({.kind = LaunchStep::Kind::kernel, .entry_suffix = "transform_input", .geometry = input});
    plan.run.push_back(
        {.kind = LaunchStep::Kind::kernel,
         .geometry = {.grid = gemm_grid(p, s), .block = {static_cast<unsigned>(tile_of(s).threads()), 1, 1}}});
    LaunchGeometry output = transform_block;
    output.grid = {transform_blocks(std::int64_t{p.k} * tiles(p, s)), 1, 1};
    plan.run.push_back({.kind = LaunchStep::Kind::kernel, .entry_suffix = "transform_output", .geometry = output});
    return with_early_launch(std::move(plan));  // every run entry waits first (grid_dependency.cuh)
  }

  // The GEMM launch's work (the model's terms are per block of its main launch); the transforms count as the bytes
  // they move and as two launches more.
  CostFeatures cost_features(const Problem& p, const KernelSpec& spec) const override {
    const Params s = params_of<Params>(spec);
    const SimtGemmTile t = tile_of(s);
    const double block_steps = static_cast<double>(steps(p, s));
    return {.blocks = gemm_blocks(p, s),
            .threads_per_block = t.threads(),
            .smem_bytes_per_block = t.smem_bytes(),
            .flops = static_cast<double>(flops(p)),
            .dram_bytes = static_cast<double>(min_bytes(p)) + buffer_traffic_bytes(p, s),
            .flops_per_block = 2.0 * s.block_m * s.block_n * static_cast<double>(cg_pad(p, s) / s.split_k),
            .fma_instructions = t.fma_instructions(block_steps),
            .shared_load_instructions = t.shared_load_instructions(block_steps),
            .global_load_instructions = t.global_load_instructions(block_steps),
            .address_instructions = 0,
            .main_loop_steps = t.exposed_steps(block_steps),
            .pipelined = true,
            .warp_issue_rate = kWarpIssueRate,
            .extra_serial_steps = transform_steps(p, s),
            .extra_launches = 2};
  }

  // Until a calibration includes the family: igemm's weights (the same instruction kinds, a SIMT main loop).
  CostWeights default_cost_weights() const override { return family("igemm").default_cost_weights(); }

  std::optional<KernelSpec> default_spec(const Problem& p, const Gpu& gpu) const override {
    const std::vector<Params> all = candidates(p, gpu);
    if (all.empty()) return std::nullopt;
    return to_spec(all.front());
  }

  // First for the layers whose GEMM is worth its three launches: at least kMinGroupChannelsFirst input channels a
  // group and kMinFlopsFirst direct FLOPs. Measured on the H200 (bench/results/h200/winograd-gemm-2026-11-29, each
  // family's default in the bench, 73 layer-batches of cusnn, cosmoflow and resnet20_cifar): there its default was 1.2
  // to 5.3 times faster than the default choice of the time (igemm or direct) on every layer above both bounds; below
  // them (3 -> 16 channels at 32x32, 16 to 64 channels at 8x8 to 32x32 at batch 1-8, 7x7 maps, a 1-channel 3-D input)
  // slower on most, up to 6.7 times. Before act_sparse (-1) also where the layer expects zeros, unless it expects
  // kActSparseFirstBucket% or more: on the H200's resnet50 3x3 layers with the shapes file's 60% and 10% blob zeros
  // (bench/results/h200/pointwise-2026-11-28, the same inputs) its kernels beat act_sparse's on 7 of the 8
  // layer-batches it serves; act_sparse tuned at 90% zeros (bench/results/h100/act_sparse/2026-11-25-tuned, an H100)
  // was ahead of its dense speed. Last otherwise: it competes in tuning and in the bench's candidates.
  // `sk` (split_k) came after the tuning databases and exports of 2026-11-29 to 2026-12-01: their names lack it.
  std::size_t params_added_later() const override { return 1; }

  int default_rank(const Problem& p) const override {
    if (p.precision != Precision::fp32 || !validate(p).empty()) return 100;  // not served
    const bool worth = cg(p) >= kMinGroupChannelsFirst && static_cast<double>(flops(p)) >= kMinFlopsFirst;
    if (!worth) return 5;
    return act_sparsity_bucket(p) >= kActSparseFirstBucket ? -1 : -2;  // -1: after act_sparse (the name order)
  }

 private:
  std::optional<std::string> check(const Problem& p, const Gpu& gpu, const Params& s) const {
    if (std::string reason = validate(p); !reason.empty()) return "invalid problem: " + reason;
    if (p.precision != Precision::fp32)
      return fmt::format("precision {} is not supported by winograd_gemm (fp32 only)", p.precision);
    if (volume(p)) {
      if (p.filter.d != 3)
        return fmt::format("winograd_gemm handles 3x3x3 filters in 3-D only, got depth {}", p.filter.d);
      if (p.stride.d != 1) return fmt::format("winograd_gemm needs stride 1, got depth stride {}", p.stride.d);
      if (p.dilation.d != 1) return fmt::format("winograd_gemm needs dilation 1, got depth dilation {}", p.dilation.d);
    }
    if (p.groups > 1 && cg(p) < kMinGroupChannels)
      return fmt::format("winograd_gemm needs at least {} input channels per group, got C/groups {}", kMinGroupChannels,
                         cg(p));
    if (p.filter.h != 3 || p.filter.w != 3)
      return fmt::format("winograd_gemm handles 3x3 filters only, got {}x{}", p.filter.h, p.filter.w);
    if (p.stride.h != 1 || p.stride.w != 1)
      return fmt::format("winograd_gemm needs stride 1, got {}x{}", p.stride.h, p.stride.w);
    if (p.dilation.h != 1 || p.dilation.w != 1)
      return fmt::format("winograd_gemm needs dilation 1, got {}x{}", p.dilation.h, p.dilation.w);
    // Field values.
    if (s.tile != 2 && s.tile != 4) return fmt::format("tile must be 2 or 4, got {}", s.tile);
    if (s.cp_stages != 0 && s.cp_stages != 2 && s.cp_stages != 3 && s.cp_stages != 4)
      return fmt::format("cp_stages must be 0, 2, 3 or 4, got {}", s.cp_stages);
    if (s.split_k != 1 && s.split_k != 2 && s.split_k != 4)
      return fmt::format("split_k must be 1, 2 or 4, got {}", s.split_k);
    // Splits of whole steps: the last must hold a real channel.
    if (const std::int64_t per_split = cg_pad(p, s) / std::max(s.split_k, 1);
        s.split_k > 1 && cg(p) <= (s.split_k - 1) * per_split)
      return fmt::format("{} splits of {} channels leave the last without any of the {} input channels a group",
                         s.split_k, per_split, cg(p));
    if (s.cp_stages > 0 && !has_cp_async(gpu))
      return fmt::format("cp_stages {} needs cp.async (sm_80 or later), the gpu is {}", s.cp_stages, gpu.arch);
    const SimtGemmTile t = tile_of(s);
    if (auto reason = t.check_fields()) return reason;
    const int threads = t.threads();
    if ((s.block_k * s.block_m / 4) % threads != 0 || (s.block_k * s.block_n / 4) % threads != 0)
      return fmt::format("the {} threads cannot copy a step's {} x {} and {} x {} slabs in equal float4 shares",
                         threads, s.block_k, s.block_m, s.block_k, s.block_n);
    // Index and grid limits.
    if (activation_elements(p) > kIntMax || output_elements(p) > kIntMax)
      return "winograd_gemm indexes tensors with int: the activation and output must have fewer than 2^31 elements";
    for (const auto& [name, floats] :
         {std::pair{"transformed filter", filter_floats(p, s)}, std::pair{"transformed input", input_floats(p, s)},
          std::pair{"products", product_floats(p, s)}})
      if (floats > kIntMax) return fmt::format("its {} buffer of {} floats exceeds 2^31 - 1", name, floats);
    if (std::int64_t{p.k} * tiles(p, s) > kIntMax) return "the output transform's K x tiles threads exceed 2^31 - 1";
    const auto grid = gemm_grid(p, s);
    if (grid[1] > kGridYZMax || grid[2] > kGridYZMax)
      return fmt::format("its GEMM grid ({} x {} x {}) exceeds the y and z limit of 65535", grid[0], grid[1], grid[2]);
    return t.check_resources(gpu);
  }

  // Of each tile size, every configuration that passes check and fits the problem (blocks within the next power of
  // two of KG and of the output tiles) with the register pipeline: the best kPerTile by estimate_us; both sizes'
  // merged in the estimate's order, each preceded, where the GPU has cp.async, by the same block with the deepest
  // cp.async ring that fits (measured on the H200, 2026-11-29, cuSNN layers at batch 8 and 32: the ring was faster
  // than the register pipeline of the same block on 250 of 254 blocks, by a median 1.12x, 0.91x to 1.43x).
  std::vector<Params> candidates(const Problem& p, const Gpu& gpu) const {
    if (p.precision != Precision::fp32 || !validate(p).empty()) return {};  // no configuration changes these
    std::vector<std::pair<double, Params>> ranked;
    for (int tile : {2, 4}) {
      std::vector<std::pair<double, Params>> found;
      for (int block_m : {32, 64, 128}) {
        if (block_m > std::max(32, next_pow2(kg(p)))) continue;
        for (int block_n : {32, 64, 128}) {
          for (int block_k : {8, 16}) {
            for (int thread_m : {4, 8}) {
              for (int thread_n : {4, 8}) {
                const Params s{.tile = tile,
                               .block_m = block_m,
                               .block_n = block_n,
                               .block_k = block_k,
                               .thread_m = thread_m,
                               .thread_n = thread_n};
                if (block_n > std::max<std::int64_t>(32, next_pow2(tiles(p, s)))) continue;
                if (check(p, gpu, s)) continue;
                found.emplace_back(estimate_us(p, gpu, s), s);
              }
            }
          }
        }
      }
      std::stable_sort(found.begin(), found.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
      if (found.size() > kPerTile) found.resize(kPerTile);
      ranked.insert(ranked.end(), found.begin(), found.end());
    }
    std::stable_sort(ranked.begin(), ranked.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
    std::vector<Params> specs;
    for (const auto& [us, s] : ranked) {
      for (int cp_stages : {4, 3, 2}) {
        Params ring = s;
        ring.cp_stages = cp_stages;
        if (check(p, gpu, ring)) continue;
        specs.push_back(ring);
        if (const std::optional<Params> split = split_twin(p, gpu, ring)) specs.push_back(*split);
        break;
      }
      specs.push_back(s);
    }
    return specs;
  }

  // The same block with its channels split in 2 or 4 (the fewest that give the GEMM kWarpsPerSmToFill warps an SM),
  // where one split leaves fewer: the estimate, whose latency term is content with 8 warps an SM, does not rank
  // splits (their products are written and read SPLIT_K times), so the tuner measures them beside their twin. Nsight
  // Compute on cuSNN's 128-channel 28x28 layer at batch 8 on the H200: its tuned GEMM had 1,008 one-warp blocks,
  // 15% of the warps an SM holds, with the FMA pipe 51% busy.
  static constexpr int kWarpsPerSmToFill = 16;
  std::optional<Params> split_twin(const Problem& p, const Gpu& gpu, const Params& s) const {
    const auto warps = [&](const Params& t) {
      return static_cast<double>(gemm_blocks(p, t)) * tile_of(t).threads() / 32.0 / std::max(gpu.sm_count, 1);
    };
    if (warps(s) >= kWarpsPerSmToFill) return std::nullopt;
    std::optional<Params> twin;
    for (int split_k : {2, 4}) {
      Params split = s;
      split.split_k = split_k;
      if (check(p, gpu, split)) break;
      twin = split;
      if (warps(split) >= kWarpsPerSmToFill) break;
    }
    return twin;
  }

  // A rough time in microseconds that orders the search space and picks the default (the tuner's cost model ranks
  // for real): the GEMM's waves of resident blocks, each issuing its FMAs and float4 shared loads at 4 warp
  // instructions per clock per SM, slowed when fewer than 8 warps per SM hide the latencies; plus the buffers' and
  // tensors' bytes at the DRAM bandwidth; plus 2 µs for each of the two launches more; plus the transforms' dependent
  // chains (transform_steps) at kTransformStepUs each, which is what makes F(2x2) the faster on small layers. Over
  // the 80 layer-batches whose every winograd_gemm candidate was measured on the H200 (cuSNN, ResNet-20, ResNet-50,
  // CosmoFlow, DenseNet-121), the estimate's fastest came within 1.043x of the measured best (geometric mean; 2 of
  // them more than 1.2x off), against 1.147x (23) without the chains' term.
  static constexpr double kTransformStepUs = 1.0;
  static double estimate_us(const Problem& p, const Gpu& gpu, const Params& s) {
    // A staged float4 load costs about 2 instructions with its address.
    const double gemm_us =
        tile_of(s).estimate_us(gpu, static_cast<double>(gemm_blocks(p, s)), static_cast<double>(steps(p, s)), 2);
    const double bytes = static_cast<double>(min_bytes(p)) + buffer_traffic_bytes(p, s);
    const double memory_us = bytes / (std::max(gpu.dram_bandwidth_gbs, 100.0) * 1e3);
    return gemm_us + memory_us + 4.0 + kTransformStepUs * transform_steps(p, s);
  }
};

}  // namespace

const Family& winograd_gemm_family() {
  static const WinogradGemm instance;
  return instance;
}

}  // namespace convgen
