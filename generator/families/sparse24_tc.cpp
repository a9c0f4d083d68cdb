// sparse24_tc: the 2:4 structured-sparse tensor-core family (templates/sparse24_tc.cu): search space, support checks,
// launch plan (the filter compressed once into persistent buffers, split-K's reduce pass) and costs, for fp16 and
// bf16 problems whose own filter is 2:4 (is_two_four_sparse), on sm_80 and later.
#include <algorithm>
#include <cmath>
#include <cstdint>

#include <fmt/format.h>

#include "convgen/weights.hpp"
#include "generator/family.hpp"
#include "generator/occupancy.hpp"
#include "generator/ranking.hpp"
#include "generator/render.hpp"
#include "sparse24_tc_params.hpp"

namespace convgen {
namespace {

constexpr std::int64_t kIntMax = 2147483647;
constexpr std::int64_t kGridYZMax = 65535;
constexpr int kRowPadBytes = 16;     // added to each shared row (templates/sparse24_tc.cu, A_LDS and B_LDS)
constexpr int kMmaK = 32;            // reduction of one mma.sp, before compression
constexpr int kPackThreads = 256;    // threads per block of the pack entry (PACK_THREADS)
constexpr int kReduceThreads = 256;  // threads per block of the reduce entry (REDUCE_THREADS)
constexpr int kElementBytes = 2;     // fp16 and bf16

// The convolution as per-group GEMMs with the filter as the sparse A (templates/sparse24_tc.cu has the mapping):
// M = output channels, N = pixels.
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

bool serves_precision(Precision precision) { return precision == Precision::fp16 || precision == Precision::bf16; }

std::int64_t ceil_div(std::int64_t a, std::int64_t b) { return (a + b - 1) / b; }
bool is_pow2(int v) { return v > 0 && (v & (v - 1)) == 0; }
int next_pow2(std::int64_t v) {
  int p = 1;
  while (p < v && p < (1 << 30)) p *= 2;
  return p;
}

int warps_of(const Sparse24TcParams& s) { return (s.block_m / s.warp_m) * (s.block_n / s.warp_n); }
int threads_of(const Sparse24TcParams& s) { return 32 * warps_of(s); }

// The compressed filter's extents: KG and KR rounded up to the block tile (KG_PAD, KR_PAD).
std::int64_t kg_pad(const Gemm& g, const Sparse24TcParams& s) { return ceil_div(g.m, s.block_m) * s.block_m; }
std::int64_t kr_pad(const Gemm& g, const Sparse24TcParams& s) { return ceil_div(g.kr, s.block_k) * s.block_k; }
std::int64_t packed_values_bytes(const Gemm& g, const Sparse24TcParams& s) {
  return std::int64_t{g.groups} * kg_pad(g, s) * kr_pad(g, s) / 2 * kElementBytes;
}
std::int64_t packed_meta_bytes(const Gemm& g, const Sparse24TcParams& s) {
  return std::int64_t{g.groups} * kg_pad(g, s) / 16 * (kr_pad(g, s) / kMmaK) * 64;
}

// Reduction elements per split: whole BLOCK_K steps (as KR_CHUNK in the template).
int split_chunk(const Gemm& g, const Sparse24TcParams& s) {
  return static_cast<int>(ceil_div(ceil_div(g.kr, s.split_k), s.block_k) * s.block_k);
}

// Per stage: compressed filter rows, their metadata, activation rows (templates/sparse24_tc.cu, STAGE_BYTES).
int smem_bytes(const Sparse24TcParams& s) {
  const int filter = s.block_m * (s.block_k / 2 * kElementBytes + kRowPadBytes);
  const int meta = s.block_m / 16 * (s.block_k / kMmaK) * 64;
  const int pixels = s.block_n * (s.block_k * kElementBytes + kRowPadBytes);
  return s.stages * (filter + meta + pixels);
}

// Whether the activation tile is loaded with 16-byte cp.async (channels-last, 8 channels per group aligned).
std::optional<std::string> vector_reason(const Problem& p) {
  if (!channels_last(p.layout))
    return fmt::format("16-byte activation loads need a channels-last layout, got {}", p.layout);
  if (c_per_group(p) % 8 != 0)
    return fmt::format("16-byte activation loads need channels per group to be a multiple of 8, got {}",
                       c_per_group(p));
  return std::nullopt;
}

// Registers per thread, roughly: the accumulators, one slice of fragments and metadata, the per-pixel load state
// and ~40 for addresses and loop state. ptxas decides; this only prunes what cannot fit.
int register_estimate(const Sparse24TcParams& s) {
  const int mi = s.warp_m / 16, ni = s.warp_n / 8;
  const int b_rows = s.vector ? static_cast<int>(ceil_div(s.block_n, threads_of(s) / (s.block_k / 8)))
                              : s.block_n / std::min(threads_of(s), s.block_n);
  return mi * ni * 4 + mi * 5 + ni * 4 + b_rows * 5 + 40;
}

std::array<unsigned, 3> grid_of(const Gemm& g, const Sparse24TcParams& s) {
  return {static_cast<unsigned>(ceil_div(g.n, s.block_n)), static_cast<unsigned>(ceil_div(g.m, s.block_m)),
          static_cast<unsigned>(g.groups * s.split_k)};
}

std::int64_t blocks_of(const Gemm& g, const Sparse24TcParams& s) {
  const auto grid = grid_of(g, s);
  return std::int64_t{grid[0]} * grid[1] * grid[2];
}

// Block and warp tiles of the search space (block_m channels, block_n pixels, warp_m, warp_n); 1 to 8 warps.
struct Tile {
  int block_m, block_n, warp_m, warp_n;
};
constexpr std::array kTiles = {
    Tile{128, 256, 64, 64}, Tile{256, 128, 64, 64}, Tile{128, 128, 64, 64}, Tile{128, 128, 32, 64},
    Tile{64, 128, 32, 64},  Tile{128, 64, 64, 32},  Tile{64, 128, 32, 32},  Tile{64, 64, 32, 32},
    Tile{32, 128, 32, 32},  Tile{128, 32, 32, 32},  Tile{32, 64, 16, 32},   Tile{64, 32, 32, 16},
    Tile{32, 32, 16, 16},   Tile{16, 64, 16, 16},   Tile{64, 16, 16, 16},   Tile{16, 16, 16, 16},
};

// A tile much larger than the GEMM mostly computes padding: keep tiles within the next power of two of each extent.
bool tile_fits(const Gemm& g, const Tile& t) {
  return t.block_m <= std::max(16, next_pow2(g.m)) && t.block_n <= std::max(16, next_pow2(g.n));
}

Sparse24TcParams params_of_tile(const Tile& t, int block_k, int stages, int split_k, bool vector) {
  return {.block_m = t.block_m,
          .block_n = t.block_n,
          .block_k = block_k,
          .warp_m = t.warp_m,
          .warp_n = t.warp_n,
          .stages = stages,
          .split_k = split_k,
          .vector = vector};
}


class Sparse24Tc final : public Family {
 public:
  const TemplateInterface& interface() const override { return sparse24_tc_interface(); }

  std::optional<std::string> check_support(const Problem& p, const Gpu& gpu, const KernelSpec& spec) const override {
    if (spec.family != Sparse24TcParams::family)
      return fmt::format("kernel {} is not a sparse24_tc kernel", spec.family);
    return check(p, gpu, params_of<Sparse24TcParams>(spec));
  }

  // The prelude also says the data type: PRECISION, convgen::Precision's value (2 fp16, 3 bf16).
  KernelSource render(const Problem& p, const KernelSpec& spec) const override {
    const PreludeConstant precision = precision_constant(p);
    return render_kernel(p, spec, interface(), {&precision, 1});
  }

  std::vector<KernelSpec> enumerate(const Problem& p, const Gpu& gpu) const override {
    std::vector<KernelSpec> specs;
    for (const Sparse24TcParams& s : candidates(p, gpu)) specs.push_back(to_spec(s));
    return specs;
  }

  // setup: the pack entry compresses the filter into the persistent "packed_values" and "packed_meta", one thread
  // per 16 reduction elements of a row; run: the main kernel, and with split_k > 1 the reduce entry over the fp32
  // partial sums in the per-call "partials" (the whole workspace, bound as g_workspace).
  LaunchPlan plan(const Problem& p, const KernelSpec& spec) const override {
    const Sparse24TcParams s = params_of<Sparse24TcParams>(spec);
    const Gemm g = gemm_of(p);
    LaunchPlan plan;
    plan.buffers.push_back({.name = "packed_values", .bytes = packed_values_bytes(g, s), .persistent = true});
    plan.buffers.push_back({.name = "packed_meta", .bytes = packed_meta_bytes(g, s), .persistent = true});
    const std::int64_t pack_items = std::int64_t{g.groups} * kg_pad(g, s) * (kr_pad(g, s) / 16);
    plan.setup.push_back({.kind = LaunchStep::Kind::kernel,
                          .entry_suffix = "pack",
                          .geometry = {.grid = {static_cast<unsigned>(ceil_div(pack_items, kPackThreads)), 1, 1},
                                       .block = {static_cast<unsigned>(kPackThreads), 1, 1}}});
    plan.run.push_back({.kind = LaunchStep::Kind::kernel,
                        .geometry = {.grid = grid_of(g, s),
                                     .block = {static_cast<unsigned>(threads_of(s)), 1, 1},
                                     .dynamic_smem_bytes = static_cast<unsigned>(smem_bytes(s))}});
    add_split_k_reduce(plan, output_elements(p), s.split_k, kReduceThreads);
    // `v`: 16-byte copies of channels-last activations (the filter is read by the pack entry, one element at a time).
    // Unsplit, a channels-last output of 8-channel runs (KG % 8 == 0) goes out in 16-byte stores of a staged tile, and
    // a channels-first one of an even pixel count per image two pixels a store (PAIRED); the reduce entry stores one.
    const std::int64_t pixels_per_image = output_elements(p) / (std::int64_t{p.n} * p.k);
    const int output = s.split_k > 1               ? 0
                       : channels_last(p.layout)   ? ((p.k / p.groups) % 8 == 0 ? 16 : 0)
                       : pixels_per_image % 2 == 0 ? 2 * element_bytes(p.precision)
                                                   : 0;
    plan.tensor_alignment = {.activation = s.vector ? 16 : 0, .output = output};
    return with_early_launch(std::move(plan));  // every run entry waits first (grid_dependency.cuh)
  }

  CostFeatures cost_features(const Problem& p, const KernelSpec& spec) const override {
    return features(p, params_of<Sparse24TcParams>(spec));
  }

  // The pack entry keeps 2 values of each chunk of 4: a filter with more nonzeros in a chunk than its problem's
  // pattern has would lose some.
  FilterDependence filter_dependence(const KernelSpec&) const override { return FilterDependence::pattern; }

  // Until a calibration has its own: igemm_tc's weights (an mma.sp m16n8k32 takes the tensor cores as long as a
  // dense m16n8k16: the fma term counts it once).
  CostWeights default_cost_weights() const override {
    return {6.6, 8, 2.36, 0.702, 0.486, 0.449, 2.02, 4.82, 2.07, 2.13, 0};
  }

  std::optional<KernelSpec> default_spec(const Problem& p, const Gpu& gpu) const override {
    const std::vector<Sparse24TcParams> specs = candidates(p, gpu);
    if (specs.empty()) return std::nullopt;
    return to_spec(specs.front());
  }

  // Before igemm_tc for an fp16 / bf16 problem whose own filter is 2:4 (half the tensor-core work); never otherwise.
  int default_rank(const Problem& p) const override {
    return serves_precision(p.precision) && is_two_four_sparse(p) ? -3 : 100;
  }

 private:
  std::optional<std::string> check(const Problem& p, const Gpu& gpu, const Sparse24TcParams& s) const {
    if (auto reason = problem_reason(p, gpu)) return reason;
    return spec_reason(p, gpu, s);
  }

  // What keeps the family from the problem whatever the configuration (the 2:4 test reads the whole filter:
  // candidates() asks it once, not once per configuration).
  static std::optional<std::string> problem_reason(const Problem& p, const Gpu& gpu) {
    if (std::string reason = validate(p); !reason.empty()) return "invalid problem: " + reason;
    if (!serves_precision(p.precision))
      return fmt::format("precision {} is not supported by sparse24_tc (fp16 and bf16 only: mma.sp's 2:4 types)",
                         p.precision);
    if (!has_cp_async(gpu) || !has_mma_tf32(gpu))
      return fmt::format("sparse24_tc needs cp.async, ldmatrix and mma.sp (sm_80 or later), the gpu is {}", gpu.arch);
    if (p.weights.pattern.empty())
      return "sparse24_tc compresses the problem's own 2:4 filter, and this problem has none";
    if (!p.weights.values)
      return fmt::format("sparse24_tc needs the values of filter pattern {} to check it is 2:4 (the problem carries "
                         "only its hash)",
                         p.weights.pattern);
    if (!is_two_four_sparse(p))
      return "the problem's filter is not 2:4: some chunk of 4 consecutive values of a filter row has more than 2 "
             "nonzeros (--weight-sparsity 2:4 prunes to the pattern)";
    return std::nullopt;
  }

  // What keeps configuration `s` from a problem the family serves.
  static std::optional<std::string> spec_reason(const Problem& p, const Gpu& gpu, const Sparse24TcParams& s) {
    // Field values; powers of two let the loaders divide every tile evenly.
    if (!is_pow2(s.block_m) || s.block_m < 16 || s.block_m > 256)
      return fmt::format("block_m must be a power of two from 16 to 256, got {}", s.block_m);
    if (!is_pow2(s.block_n) || s.block_n < 16 || s.block_n > 256)
      return fmt::format("block_n must be a power of two from 16 to 256, got {}", s.block_n);
    if (s.warp_m != 16 && s.warp_m != 32 && s.warp_m != 64)
      return fmt::format("warp_m must be 16, 32 or 64, got {}", s.warp_m);
    if (s.warp_n != 16 && s.warp_n != 32 && s.warp_n != 64)
      return fmt::format("warp_n must be 16, 32 or 64, got {}", s.warp_n);
    if (s.block_m % s.warp_m != 0 || s.block_n % s.warp_n != 0)
      return fmt::format("the block tile {}x{} must be a whole number of warp tiles {}x{}", s.block_m, s.block_n,
                         s.warp_m, s.warp_n);
    if (s.block_k != 32 && s.block_k != 64 && s.block_k != 128)
      return fmt::format("block_k must be 32, 64 or 128, got {}", s.block_k);
    if (s.stages < 2 || s.stages > 5) return fmt::format("stages must be 2 to 5, got {}", s.stages);
    if (s.split_k < 1 || s.split_k > 32) return fmt::format("split_k must be 1 to 32, got {}", s.split_k);
    if (s.vector)
      if (auto reason = vector_reason(p)) return reason;
    const Gemm g = gemm_of(p);
    const int threads = threads_of(s);
    // Every split must own part of the reduction (an empty split would only add work).
    const int chunk = split_chunk(g, s);
    if (std::int64_t{s.split_k - 1} * chunk >= g.kr)
      return fmt::format("split_k {} leaves splits without work: the reduction length {} gives {} slices of {}",
                         s.split_k, g.kr, ceil_div(g.kr, s.block_k), s.block_k);
    // Index and grid limits.
    if (g.n > kIntMax) return fmt::format("output pixels N*O*P*Q = {} exceed 2^31 - 1", g.n);
    if (filter_elements(p) > kIntMax) return fmt::format("filter elements {} exceed 2^31 - 1", filter_elements(p));
    if (ceil_div(g.n, s.block_n) > kIntMax)
      return fmt::format("{} tiles of output pixels exceed the grid's x limit", ceil_div(g.n, s.block_n));
    if (ceil_div(g.m, s.block_m) > kGridYZMax)
      return fmt::format("{} tiles of output channels exceed the grid's y limit of 65535", ceil_div(g.m, s.block_m));
    if (std::int64_t{g.groups} * s.split_k > kGridYZMax)
      return fmt::format("groups {} times split_k {} exceed the grid's z limit of 65535", g.groups, s.split_k);
    if (s.split_k > 1 && ceil_div(output_elements(p), kReduceThreads) > kIntMax)
      return fmt::format("{} outputs exceed the reduce pass's grid", output_elements(p));
    // Resources of the GPU.
    if (threads > gpu.max_threads_per_block)
      return fmt::format("{} threads per block exceed the gpu's {}", threads, gpu.max_threads_per_block);
    if (smem_bytes(s) > max_smem_per_block_bytes(gpu))
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

  // The search space, as igemm_tc's: every tile that fits the GEMM, with 128 or 64 reduction elements per stage
  // (32 only for a reduction no longer than that), 4 or 3 stages (2 only where neither fits), and split-K while the
  // output alone fills fewer than two waves; of these, kMaxCandidates by estimate, the best of every tile first.
  std::vector<Sparse24TcParams> candidates(const Problem& p, const Gpu& gpu) const {
    if (problem_reason(p, gpu)) return {};
    const Gemm g = gemm_of(p);
    const int sm_count = std::max(gpu.sm_count, 1);
    const bool vector = !vector_reason(p);
    std::vector<std::vector<Estimated<Sparse24TcParams>>> by_tile;
    for (const Tile& t : kTiles) {
      if (!tile_fits(g, t)) continue;
      std::vector<Estimated<Sparse24TcParams>> ranked;
      for (int block_k : {128, 64, 32}) {
        if (block_k == 32 && g.kr > 32) continue;
        bool deep_pipeline = false;
        for (int stages : {4, 3, 2}) {
          if (stages == 2 && deep_pipeline) break;
          const std::int64_t tiles = blocks_of(g, params_of_tile(t, block_k, stages, 1, vector));
          const std::int64_t steps = ceil_div(g.kr, block_k);
          for (int split_k = 1; split_k <= 16; split_k *= 2) {
            if (split_k > 1 && (tiles * (split_k / 2) >= 2 * sm_count || ceil_div(steps, split_k) < 2)) break;
            const Sparse24TcParams s = params_of_tile(t, block_k, stages, split_k, vector);
            if (spec_reason(p, gpu, s)) continue;
            ranked.emplace_back(estimate_us(p, gpu, s), s);
            deep_pipeline = true;
          }
        }
      }
      if (!ranked.empty()) by_tile.push_back(std::move(ranked));
    }
    return best_of_every_group_first(std::move(by_tile), kMaxCandidates);
  }

  CostFeatures features(const Problem& p, const Sparse24TcParams& s) const {
    const Gemm g = gemm_of(p);
    const double out_elements = static_cast<double>(output_elements(p));
    const int chunk = split_chunk(g, s);
    const int warps = warps_of(s);
    const int mi = s.warp_m / 16, ni = s.warp_n / 8;
    const double slices = static_cast<double>(chunk) / kMmaK;
    // templates/sparse24_tc.cu: per 32-element slice each warp issues MI + NI ldmatrix.x4, MI metadata loads and
    // MI * NI mma.sp; the block loads BLOCK_M compressed rows (half a row each) with their metadata and BLOCK_N
    // activation rows, each activation load with its tap decoded and bounds checked.
    const int units_per_row = s.vector ? 8 : 1;
    const double activation_loads = static_cast<double>(s.block_n) * chunk / units_per_row;
    const double filter_loads = static_cast<double>(s.block_m) * chunk / 2 / 8 + s.block_m / 16.0 * chunk / 8;
    const double address_per_load = s.vector ? 8 : 12;
    return {.blocks = blocks_of(g, s),
            .threads_per_block = threads_of(s),
            .smem_bytes_per_block = smem_bytes(s),
            .flops = static_cast<double>(flops(p)),
            // The activation and output once, the compressed filter (half the values, 1/8 more for the metadata),
            // plus split-K's fp32 partial sums written and read back.
            .dram_bytes = static_cast<double>(activation_elements(p) + output_elements(p)) * kElementBytes +
                          static_cast<double>(filter_elements(p)) * kElementBytes * 0.5625 +
                          (s.split_k > 1 ? 2.0 * out_elements * s.split_k * 4 : 0),
            .flops_per_block = 2.0 * s.block_m * s.block_n * chunk,
            .fma_instructions = warps * slices * mi * ni,
            .shared_load_instructions = warps * slices * (2 * mi + ni),
            .global_load_instructions = (activation_loads + filter_loads) / 32,
            .address_instructions = activation_loads / 32 * address_per_load,
            .main_loop_steps = chunk / s.block_k,
            .pipelined = true,
            .atomic_outputs = 0,
            .extra_launches = s.split_k > 1 ? 1 : 0};
  }

  static constexpr std::size_t kMaxCandidates = 24;

  // A rough time in microseconds that orders the search space, as igemm_tc's estimate with half the tensor-core
  // work (an m16n8k32 mma.sp takes as long as a dense m16n8k16) and half the filter's operand traffic.
  static double estimate_us(const Problem& p, const Gpu& gpu, const Sparse24TcParams& s) {
    constexpr double kStepLatencyUs = 0.1;
    constexpr double kL2OverDram = 1.3;
    const Gemm g = gemm_of(p);
    const int sm_count = std::max(gpu.sm_count, 1);
    const std::int64_t blocks = blocks_of(g, s);
    const int per_sm = resident_blocks_per_sm(gpu, threads_of(s), register_estimate(s), smem_bytes(s));
    const double waves = std::ceil(static_cast<double>(blocks) / (static_cast<double>(sm_count) * per_sm));
    const double resident = std::min<double>(per_sm, std::ceil(static_cast<double>(blocks) / sm_count));
    const int mi = s.warp_m / 16, ni = s.warp_n / 8;
    // Fragments loaded per mma.sp: MI compressed-filter and NI activation ldmatrix.x4 for MI * NI of them.
    double efficiency = 0.65 / (1 + 0.5 * (mi + ni) / (mi * ni));
    efficiency *= std::min(1.0, resident * warps_of(s) / 8);  // ~8 warps per SM hide the pipeline's latency
    const double peak = peak_tflops(gpu, p.precision) > 0 ? peak_tflops(gpu, p.precision) : 8 * gpu.peak_fp32_tflops;
    const double sm_flops_per_us = std::max(peak, 1.0) * 1e6 / sm_count;
    const int chunk = split_chunk(g, s);
    const double dense_flops_per_block = 2.0 * s.block_m * s.block_n * chunk;
    const double compute_us = waves * resident * dense_flops_per_block / 2 / (sm_flops_per_us * efficiency);
    const double latency_us = waves * std::ceil(static_cast<double>(chunk) / s.block_k) * kStepLatencyUs;
    const double bytes_per_us = std::max(gpu.dram_bandwidth_gbs, 100.0) * 1e3;
    const double operand_bytes = static_cast<double>(blocks) * (s.block_m * 0.5625 + s.block_n) * chunk * kElementBytes;
    const double operand_us = operand_bytes / (kL2OverDram * bytes_per_us);
    const double memory_us = static_cast<double>(min_bytes(p)) / bytes_per_us;
    const double clock_mhz = gpu.clock_mhz > 0 ? gpu.clock_mhz : 1500;
    const double element_loads = s.vector ? 0 : static_cast<double>(s.block_n) * chunk;
    const double element_us = waves * resident * element_loads * 12 / 32 / (4 * clock_mhz);
    const double split_us =
        s.split_k > 1 ? 2.0 * static_cast<double>(output_elements(p)) * s.split_k * 4 / bytes_per_us + 2 : 0;
    return std::max({compute_us, latency_us, operand_us, memory_us}) + element_us + split_us;
  }
};

}  // namespace

const Family& sparse24_tc_family() {
  static const Sparse24Tc instance;
  return instance;
}

}  // namespace convgen
