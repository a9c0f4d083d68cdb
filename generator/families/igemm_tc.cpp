// igemm_tc: the tensor-core implicit-GEMM family (templates/igemm_tc.cu): search space, support checks, launch plan
// (split-K's reduce pass) and costs, for tf32, fp16 and bf16 problems on sm_80 and later.
#include <algorithm>
#include <cmath>
#include <cstdint>

#include <fmt/format.h>

#include "generator/family.hpp"
#include "generator/pixel_gemm.hpp"
#include "generator/occupancy.hpp"
#include "generator/ranking.hpp"
#include "generator/render.hpp"
#include "igemm_tc_params.hpp"

namespace convgen {
namespace {

constexpr std::int64_t kIntMax = 2147483647;
constexpr std::int64_t kGridYZMax = 65535;
constexpr int kRowPadBytes = 16;     // added to each shared row (templates/igemm_tc.cu, LDS)
constexpr int kReduceThreads = 256;  // threads per block of the reduce entry (REDUCE_THREADS)

// The convolution as per-group GEMMs: M = pixels, N = output channels (generator/pixel_gemm.hpp).
using Gemm = PixelGemm;

bool serves_precision(Precision precision) {
  return precision == Precision::tf32 || precision == Precision::fp16 || precision == Precision::bf16;
}

std::int64_t ceil_div(std::int64_t a, std::int64_t b) { return (a + b - 1) / b; }
bool is_pow2(int v) { return v > 0 && (v & (v - 1)) == 0; }
int next_pow2(std::int64_t v) {
  int p = 1;
  while (p < v && p < (1 << 30)) p *= 2;
  return p;
}

int element_bytes_of(const Problem& p) { return element_bytes(p.precision); }
// Elements per 16 bytes: one cp.async, one ldmatrix row.
int chunk_of(const Problem& p) { return 16 / element_bytes_of(p); }
// Reduction elements of one mma: m16n8k8 (tf32) or m16n8k16 (fp16, bf16).
int mma_k_of(const Problem& p) { return p.precision == Precision::tf32 ? 8 : 16; }

int warps_of(const IgemmTcParams& s) { return (s.block_m / s.warp_m) * (s.block_n / s.warp_n); }
int threads_of(const IgemmTcParams& s) { return 32 * warps_of(s); }

// Reduction elements per split: whole BLOCK_K steps (as KR_CHUNK in the template).
int split_chunk(const Gemm& g, const IgemmTcParams& s) {
  return static_cast<int>(ceil_div(ceil_div(g.kr, s.split_k), s.block_k) * s.block_k);
}

int smem_bytes(const Problem& p, const IgemmTcParams& s) {
  return s.stages * (s.block_m + s.block_n) * (s.block_k * element_bytes_of(p) + kRowPadBytes);
}

// Whether the template loads each operand with 16-byte cp.async (A_VECTOR, B_VECTOR), else element by element.
bool activation_vector(const Problem& p, const IgemmTcParams& s) { return s.vector && channels_last(p.layout); }

// Rows (pixels or channels) one thread loads for, as the template's loaders arrange them.
int rows_per_thread(int rows_tile, bool vector, int row_chunks, int threads) {
  if (vector) return static_cast<int>(ceil_div(rows_tile, threads / row_chunks));
  return rows_tile / std::min(threads, rows_tile);
}

// Registers per thread, roughly: the accumulators, one slice of fragments, the per-row load state and ~40 for
// addresses and loop state (within ~10 of ptxas on sm_90 for 128x128 blocks of 64x64 warp tiles: 228 estimated,
// 222 used). ptxas decides; this only prunes what cannot fit.
int register_estimate(const Problem& p, const IgemmTcParams& s) {
  const int mi = s.warp_m / 16, ni = s.warp_n / 8;
  const int row_chunks = s.block_k / chunk_of(p);
  const int a_rows = rows_per_thread(s.block_m, activation_vector(p, s), row_chunks, threads_of(s));
  const int b_rows = rows_per_thread(s.block_n, s.vector, row_chunks, threads_of(s));
  return mi * ni * 4 + mi * 4 + ni * 2 + a_rows * 3 + b_rows + 40;
}

// 16-byte loads need aligned runs of 16 bytes of reduction elements (templates/igemm_tc.cu states why).
std::optional<std::string> vector_reason(const Problem& p, const Gemm& g) {
  const int chunk = chunk_of(p);
  if (channels_last(p.layout) && c_per_group(p) % chunk != 0)
    return fmt::format("16-byte loads need channels per group to be a multiple of {} ({}, {}), got {}", chunk,
                       p.precision, p.layout, c_per_group(p));
  if (g.kr % chunk != 0)
    return fmt::format(
        "16-byte filter loads need the reduction length C/groups*T*R*S to be a multiple of {} ({}), "
        "got {}",
        chunk, p.precision, g.kr);
  return std::nullopt;
}

std::array<unsigned, 3> grid_of(const Gemm& g, const IgemmTcParams& s) {
  return {static_cast<unsigned>(ceil_div(g.m, s.block_m)), static_cast<unsigned>(ceil_div(g.n, s.block_n)),
          static_cast<unsigned>(g.groups * s.split_k)};
}

std::int64_t blocks_of(const Gemm& g, const IgemmTcParams& s) {
  const auto grid = grid_of(g, s);
  return std::int64_t{grid[0]} * grid[1] * grid[2];
}

// Block and warp tiles of the search space (block_m, block_n, warp_m, warp_n), largest first; 1 to 8 warps.
struct Tile {
  int block_m, block_n, warp_m, warp_n;
};
constexpr std::array kTiles = {
    Tile{256, 128, 64, 64}, Tile{128, 256, 64, 64}, Tile{128, 128, 64, 64}, Tile{128, 128, 64, 32},
    Tile{128, 64, 64, 32},  Tile{64, 128, 32, 64},  Tile{128, 64, 32, 32},  Tile{64, 64, 32, 32},
    Tile{128, 32, 32, 32},  Tile{32, 128, 32, 32},  Tile{64, 32, 32, 16},   Tile{32, 64, 16, 32},
    Tile{32, 32, 16, 16},   Tile{64, 16, 16, 16},   Tile{16, 64, 16, 16},   Tile{16, 16, 16, 16},
};

// A tile much larger than the GEMM mostly computes padding: keep tiles within the next power of two of each extent.
bool tile_fits(const Gemm& g, const Tile& t) {
  return t.block_m <= std::max(16, next_pow2(g.m)) && t.block_n <= std::max(16, next_pow2(g.n));
}

IgemmTcParams params_of_tile(const Tile& t, int block_k, int stages, int split_k, bool vector) {
  return {.block_m = t.block_m,
          .block_n = t.block_n,
          .block_k = block_k,
          .warp_m = t.warp_m,
          .warp_n = t.warp_n,
          .stages = stages,
          .split_k = split_k,
          .vector = vector};
}


class IgemmTc final : public Family {
 public:
  const TemplateInterface& interface() const override { return igemm_tc_interface(); }

  std::optional<std::string> check_support(const Problem& p, const Gpu& gpu, const KernelSpec& spec) const override {
    if (spec.family != IgemmTcParams::family) return fmt::format("kernel {} is not an igemm_tc kernel", spec.family);
    return check(p, gpu, params_of<IgemmTcParams>(spec));
  }

  // The prelude also says the data type: PRECISION, convgen::Precision's value (1 tf32, 2 fp16, 3 bf16).
  KernelSource render(const Problem& p, const KernelSpec& spec) const override {
    const PreludeConstant precision = precision_constant(p);
    return render_kernel(p, spec, interface(), {&precision, 1});
  }

  std::vector<KernelSpec> enumerate(const Problem& p, const Gpu& gpu) const override {
    std::vector<KernelSpec> specs;
    for (const IgemmTcParams& s : candidates(p, gpu)) specs.push_back(to_spec(s));
    return specs;
  }

  // run: the main kernel; with split_k > 1 it writes fp32 partial sums to the per-call buffer "partials" (the whole
  // workspace, bound as g_workspace) and the reduce entry adds them into the output.
  LaunchPlan plan(const Problem& p, const KernelSpec& spec) const override {
    const IgemmTcParams s = params_of<IgemmTcParams>(spec);
    const Gemm g = pixel_gemm(p);
    LaunchPlan plan;
    plan.run.push_back({.kind = LaunchStep::Kind::kernel,
                        .geometry = {.grid = grid_of(g, s),
                                     .block = {static_cast<unsigned>(threads_of(s)), 1, 1},
                                     .dynamic_smem_bytes = static_cast<unsigned>(smem_bytes(p, s))}});
    add_split_k_reduce(plan, output_elements(p), s.split_k, kReduceThreads);
    // `v`: 16-byte copies of the filter's rows and of channels-last activations. Unsplit, channels-last outputs of
    // even K and KG are stored two channels at a time (tc_output.cuh's PAIRED_OUTPUT); the reduce entry stores one.
    const bool paired = s.split_k == 1 && channels_last(p.layout) && p.k % 2 == 0 && (p.k / p.groups) % 2 == 0;
    plan.tensor_alignment = {.activation = s.vector && channels_last(p.layout) ? 16 : 0,
                             .filter = s.vector ? 16 : 0,
                             .output = paired ? 2 * element_bytes(p.precision) : 0};
    return with_early_launch(std::move(plan));  // every run entry waits first (grid_dependency.cuh)
  }

  CostFeatures cost_features(const Problem& p, const KernelSpec& spec) const override {
    return features(p, params_of<IgemmTcParams>(spec));
  }

  // Until a calibration has its own: an mma.sync (4096 FLOP for m16n8k16, 2048 at half the rate for m16n8k8 tf32)
  // keeps an H100 SM's tensor cores busy ~1.6 cycles where the model's issue term counts 0.25 (weight ~6.6); an
  // ldmatrix.x4 moves 512 bytes of shared memory (4 cycles at 128 B/cycle), partly hidden behind the mma (weight
  // 8); the other terms are igemm's H200 fit.
  CostWeights default_cost_weights() const override {
    return {6.6, 8, 2.36, 0.702, 0.486, 0.449, 2.02, 4.82, 2.07, 2.13, 0};
  }

  // The best-ranked candidate (the estimate weighs tile size against filling the GPU and adds split-K where the
  // output alone cannot fill it).
  std::optional<KernelSpec> default_spec(const Problem& p, const Gpu& gpu) const override {
    const std::vector<IgemmTcParams> specs = candidates(p, gpu);
    if (specs.empty()) return std::nullopt;
    return to_spec(specs.front());
  }

  // First for the tensor-core precisions (no other family serves them); it never serves fp32.
  int default_rank(const Problem& p) const override { return serves_precision(p.precision) ? -1 : 100; }

 private:
  std::optional<std::string> check(const Problem& p, const Gpu& gpu, const IgemmTcParams& s) const {
    if (std::string reason = validate(p); !reason.empty()) return "invalid problem: " + reason;
    if (!serves_precision(p.precision))
      return fmt::format(
          "precision {} is not supported by igemm_tc (tf32, fp16 and bf16 only: fp32 problems need "
          "strict fp32 math)",
          p.precision);
    if (!has_cp_async(gpu) || !has_mma_tf32(gpu))
      return fmt::format(
          "igemm_tc needs cp.async, ldmatrix and mma.sync for tf32 / bf16 (sm_80 or later), the gpu "
          "is {}",
          gpu.arch);
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
    const int row_bytes = s.block_k * element_bytes_of(p);
    if (!is_pow2(s.block_k) || (row_bytes != 32 && row_bytes != 64 && row_bytes != 128))
      return fmt::format("block_k must cover 32, 64 or 128 bytes of {} elements ({} to {}), got {}", p.precision,
                         32 / element_bytes_of(p), 128 / element_bytes_of(p), s.block_k);
    if (s.stages < 2 || s.stages > 5) return fmt::format("stages must be 2 to 5, got {}", s.stages);
    if (s.split_k < 1 || s.split_k > 32) return fmt::format("split_k must be 1 to 32, got {}", s.split_k);
    const Gemm g = pixel_gemm(p);
    if (s.vector)
      if (auto reason = vector_reason(p, g)) return reason;
    // Element-wise loads spread a tile's rows over the threads, the rest along the reduction.
    const int threads = threads_of(s);
    if (!activation_vector(p, s) && threads / std::min(threads, s.block_m) > s.block_k)
      return fmt::format("element-wise activation loads of {} threads need block_k >= {}, got {}", threads,
                         threads / std::min(threads, s.block_m), s.block_k);
    if (!s.vector && threads / std::min(threads, s.block_n) > s.block_k)
      return fmt::format("element-wise filter loads of {} threads need block_k >= {}, got {}", threads,
                         threads / std::min(threads, s.block_n), s.block_k);
    // Every split must own part of the reduction (an empty split would only add work).
    const int chunk = split_chunk(g, s);
    if (std::int64_t{s.split_k - 1} * chunk >= g.kr)
      return fmt::format("split_k {} leaves splits without work: the reduction length {} gives {} slices of {}",
                         s.split_k, g.kr, ceil_div(g.kr, s.block_k), s.block_k);
    // Index and grid limits.
    if (g.m > kIntMax) return fmt::format("output pixels N*O*P*Q = {} exceed 2^31 - 1", g.m);
    if (filter_elements(p) > kIntMax) return fmt::format("filter elements {} exceed 2^31 - 1", filter_elements(p));
    if (ceil_div(g.n, s.block_n) > kGridYZMax)
      return fmt::format("{} tiles of output channels exceed the grid's y limit of 65535", ceil_div(g.n, s.block_n));
    if (std::int64_t{g.groups} * s.split_k > kGridYZMax)
      return fmt::format("groups {} times split_k {} exceed the grid's z limit of 65535", g.groups, s.split_k);
    if (s.split_k > 1 && ceil_div(output_elements(p), kReduceThreads) > kIntMax)
      return fmt::format("{} outputs exceed the reduce pass's grid", output_elements(p));
    // Resources of the GPU.
    if (threads > gpu.max_threads_per_block)
      return fmt::format("{} threads per block exceed the gpu's {}", threads, gpu.max_threads_per_block);
    if (smem_bytes(p, s) > max_smem_per_block_bytes(gpu))
      return fmt::format("{} bytes of shared memory per block exceed the gpu's {}", smem_bytes(p, s),
                         max_smem_per_block_bytes(gpu));
    const int regs = register_estimate(p, s);
    if (regs > gpu.max_regs_per_thread)
      return fmt::format("about {} registers per thread exceed the gpu's {}", regs, gpu.max_regs_per_thread);
    if (gpu.regs_per_block > 0 && regs * threads > gpu.regs_per_block)
      return fmt::format("about {} registers per block ({} threads of {}) exceed the gpu's {}", regs * threads, threads,
                         regs, gpu.regs_per_block);
    return std::nullopt;
  }

  // The search space: every tile that fits the GEMM, with 128- or 64-byte rows per stage (32 only for a reduction
  // shorter than that), 4 or 3 stages (2 only where neither fits the shared memory: measured on an H100, 2 stages
  // were up to 2x slower), and split-K while the output alone fills fewer than two waves. Of these, kMaxCandidates
  // by estimate, taking the best of every tile before the second best of any, so that the tuner sees tile shapes
  // rather than near-copies of one (on an H100 the operand traffic of the tile shape decided most layers).
  std::vector<IgemmTcParams> candidates(const Problem& p, const Gpu& gpu) const {
    if (!serves_precision(p.precision) || !validate(p).empty() || !has_mma_tf32(gpu)) return {};
    const Gemm g = pixel_gemm(p);
    const int sm_count = std::max(gpu.sm_count, 1);
    // 16-byte loads wherever the alignment allows them; element loads otherwise.
    const bool vector = !vector_reason(p, g);
    const int eb = element_bytes_of(p);
    std::vector<std::vector<Estimated<IgemmTcParams>>> by_tile;
    for (const Tile& t : kTiles) {
      if (!tile_fits(g, t)) continue;
      std::vector<Estimated<IgemmTcParams>> ranked;
      for (int row_bytes : {128, 64, 32}) {
        const int block_k = row_bytes / eb;
        // 32-byte rows only where the whole reduction is shorter than a 64-byte row.
        if (row_bytes == 32 && g.kr * eb > 32) continue;
        bool deep_pipeline = false;
        for (int stages : {4, 3, 2}) {
          if (stages == 2 && deep_pipeline) break;
          const std::int64_t tiles = blocks_of(g, params_of_tile(t, block_k, stages, 1, vector));
          const std::int64_t steps = ceil_div(g.kr, block_k);
          // Split-K only while the output alone fills fewer than two waves, keeping >= 2 steps per split.
          for (int split_k = 1; split_k <= 16; split_k *= 2) {
            if (split_k > 1 && (tiles * (split_k / 2) >= 2 * sm_count || ceil_div(steps, split_k) < 2)) break;
            const IgemmTcParams s = params_of_tile(t, block_k, stages, split_k, vector);
            if (check(p, gpu, s)) continue;
            ranked.emplace_back(estimate_us(p, gpu, s), s);
            deep_pipeline = true;
          }
        }
      }
      if (!ranked.empty()) by_tile.push_back(std::move(ranked));
    }
    return best_of_every_group_first(std::move(by_tile), kMaxCandidates);
  }

  CostFeatures features(const Problem& p, const IgemmTcParams& s) const {
    const Gemm g = pixel_gemm(p);
    const double out_elements = static_cast<double>(output_elements(p));
    const int chunk = split_chunk(g, s);
    const int warps = warps_of(s);
    const int mi = s.warp_m / 16, ni = s.warp_n / 8;
    const double slices = static_cast<double>(chunk) / mma_k_of(p);
    // templates/igemm_tc.cu: per MMA_K slice each warp issues MI + NI/2 ldmatrix.x4 and MI * NI mma (tf32 adds a
    // cvt per fragment register); the block loads BLOCK_M + BLOCK_N rows of the slice, 16 bytes per cp.async or
    // one element per load, each activation load with its tap decoded and bounds checked (about 8 instructions,
    // 12 element-wise).
    const int units_per_row = activation_vector(p, s) ? chunk_of(p) : 1;
    const double activation_loads = static_cast<double>(s.block_m) * chunk / units_per_row;
    const double filter_loads = static_cast<double>(s.block_n) * chunk / (s.vector ? chunk_of(p) : 1);
    const double address_per_load = activation_vector(p, s) ? 8 : 12;
    const double tf32_converts = p.precision == Precision::tf32 ? warps * slices * (mi * 4 + ni * 2) : 0;
    return {.blocks = blocks_of(g, s),
            .threads_per_block = threads_of(s),
            .smem_bytes_per_block = smem_bytes(p, s),
            .flops = static_cast<double>(flops(p)),
            // Each tensor once, plus split-K's fp32 partial sums written and read back.
            .dram_bytes = static_cast<double>(min_bytes(p)) + (s.split_k > 1 ? 2.0 * out_elements * s.split_k * 4 : 0),
            .flops_per_block = 2.0 * s.block_m * s.block_n * chunk,
            .fma_instructions = warps * slices * mi * ni,
            .shared_load_instructions = warps * slices * (mi + ni / 2),
            .global_load_instructions = (activation_loads + filter_loads) / 32,
            .address_instructions = activation_loads / 32 * address_per_load + tf32_converts,
            .main_loop_steps = chunk / s.block_k,
            .pipelined = true,
            .atomic_outputs = 0,
            .extra_launches = s.split_k > 1 ? 1 : 0};
  }

  static constexpr std::size_t kMaxCandidates = 24;

  // A rough time in microseconds that orders the search space (the tuner's cost model ranks for real), the largest
  // of: the tensor-core work of waves of resident blocks, at a share of the SM's rate set by how many fragments a
  // warp loads per mma and whether enough warps hide latency; the chain of dependent pipeline steps (~0.1 us each:
  // wait, barrier, ldmatrix, mma); the operand traffic of every block's tiles through L2 (each block reads BLOCK_M +
  // BLOCK_N rows of its reduction; on an H100 this term, at 1.3 x the DRAM rate, matched the measured time of small
  // tiles on the cusnn layers at batch 8 within 2%); the tensors once from DRAM. Then the issue time of element-wise
  // loads and split-K's partial sums and second pass.
  static double estimate_us(const Problem& p, const Gpu& gpu, const IgemmTcParams& s) {
    constexpr double kStepLatencyUs = 0.1;
    // Split-K's reduce pass besides its traffic: its launch and the wait for the main one's last block. 2 us before;
    // 1.25, as igemm_wgmma's, igemm's and pointwise's, picks better on the published H200 measurements of igemm_tc
    // (`convgen db replay --family igemm_tc`: the cuSNN layers in tf32 1.158x -> 1.089x of the fastest, the conv1
    // studies unchanged at 1.07x).
    constexpr double kSplitPassUs = 1.25;
    constexpr double kL2OverDram = 1.3;
    const Gemm g = pixel_gemm(p);
    const int sm_count = std::max(gpu.sm_count, 1);
    const std::int64_t blocks = blocks_of(g, s);
    const int per_sm = resident_blocks_per_sm(gpu, threads_of(s), register_estimate(p, s), smem_bytes(p, s));
    const double waves = std::ceil(static_cast<double>(blocks) / (static_cast<double>(sm_count) * per_sm));
    const double resident = std::min<double>(per_sm, std::ceil(static_cast<double>(blocks) / sm_count));
    const int mi = s.warp_m / 16, ni = s.warp_n / 8;
    // mma.sync reaches about 2/3 of the datasheet's dense tensor rate; ldmatrix traffic per mma lowers it further.
    double efficiency = 0.65 / (1 + 0.5 * (mi + ni / 2.0) / (mi * ni));
    efficiency *= std::min(1.0, resident * warps_of(s) / 8);  // ~8 warps per SM hide the pipeline's latency
    const double peak = peak_tflops(gpu, p.precision) > 0 ? peak_tflops(gpu, p.precision) : 8 * gpu.peak_fp32_tflops;
    const double sm_flops_per_us = std::max(peak, 1.0) * 1e6 / sm_count;
    const int chunk = split_chunk(g, s);
    const double flops_per_block = 2.0 * s.block_m * s.block_n * chunk;
    const double compute_us = waves * resident * flops_per_block / (sm_flops_per_us * efficiency);
    const double latency_us = waves * std::ceil(static_cast<double>(chunk) / s.block_k) * kStepLatencyUs;
    const double bytes_per_us = std::max(gpu.dram_bandwidth_gbs, 100.0) * 1e3;
    const double operand_bytes = static_cast<double>(blocks) * (s.block_m + s.block_n) * chunk * element_bytes_of(p);
    const double operand_us = operand_bytes / (kL2OverDram * bytes_per_us);
    const double memory_us = static_cast<double>(min_bytes(p)) / bytes_per_us;
    // Element-wise loads: ~12 issued instructions per element, 4 per cycle per SM.
    const double clock_mhz = gpu.clock_mhz > 0 ? gpu.clock_mhz : 1500;
    double element_loads = 0;
    if (!activation_vector(p, s)) element_loads += static_cast<double>(s.block_m) * chunk;
    if (!s.vector) element_loads += static_cast<double>(s.block_n) * chunk;
    const double element_us = waves * resident * element_loads * 12 / 32 / (4 * clock_mhz);
    const double split_us =
        s.split_k > 1 ? 2.0 * static_cast<double>(output_elements(p)) * s.split_k * 4 / bytes_per_us + kSplitPassUs : 0;
    return std::max({compute_us, latency_us, operand_us, memory_us}) + element_us + split_us;
  }
};

}  // namespace

const Family& igemm_tc_family() {
  static const IgemmTc instance;
  return instance;
}

}  // namespace convgen
