// weight_sparse: the weight-sparse family (templates/weight_sparse.cu): the problem's own pruned filter baked into
// the code as straight-line FMAs, one per nonzero weight (generated here, into the prelude), the values as
// immediates or gathered once per op into a packed array; or, for filters too big to bake, read from a table of
// per-channel nonzeros that a setup entry packs once per op. Search space, support checks, code generation, launch
// plan and cost features.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include <fmt/format.h>

#include "convgen/error.hpp"
#include "convgen/weights.hpp"
#include "generator/family.hpp"
#include "generator/render.hpp"
#include "weight_sparse_params.hpp"  // generated from templates/weight_sparse.cu

namespace convgen {
namespace {

// Instructions one warp issues per cycle at most (CostFeatures::warp_issue_rate): each pixel's baked FMAs one dependent
// chain per accumulator. The SIMT families' rates were chosen on the H200's measurements (bench/results/h200/seed-
// studies-2026-11-28/README.md says how); they matter where few warps share an SM (small layers, batch 1).
constexpr double kWarpIssueRate = 0.25;

constexpr std::int64_t kIntMax = 2147483647;
// Straight-line code grows with the nonzeros, and NVRTC time faster than that (one kernel, one switch: measured on
// the 2-core developer machine at 90% zeros, bench/results/nvrtc-debian12/weight_sparse_cusnn_z90.md: 3.7K nonzeros
// 4-7 s, 14.7K 48 s, 59K 647 s; weight_sparse_resnet50_z90.md: 1.6K nonzeros 1.2 s). Past this many only the table
// variant (tb1: the pattern as data, its code the same for any filter) serves the layer, within the issue's 5 s.
constexpr std::int64_t kMaxBakedNonzeros = 2048;
// Table entries a block stages in shared memory at once (templates/weight_sparse.cu: ROW_CHUNK).
constexpr int kRowChunk = 1024;
// A table code holds an activation offset within one image in 26 bits (the low 5 are the tap).
constexpr std::int64_t kTableOffsetLimit = std::int64_t{1} << 26;
// The staged table (tb2) stages this many floats of activations at once (32 KiB of shared memory a block): fewer
// chunks, each with a barrier pair and a row end a channel.
constexpr int kStageFloats = 8192;
// The share of zero weights from which the family comes first in default_choice. On the H100, ResNet-50 at batch 1
// with default configurations (bench/results/h100/weight_sparse/2026-11-24-staged/curve) gave a geometric mean of
// 0.84x cuDNN's best dense FP32 route at 50% zeros (down to 0.38x on a layer) and 1.30x at 70%.
constexpr double kDefaultZeros = 0.7;
// The values of the tb parameter (templates/weight_sparse.cu: TABLE).
constexpr int kBaked = 0, kTable = 1, kStaged = 2;

std::int64_t ceil_div(std::int64_t a, std::int64_t b) { return (a + b - 1) / b; }

// What the staged table stages (templates/weight_sparse.cu, whose constants these mirror): for 1x1 filters a tile
// of p * pt consecutive output pixels, one activation each per channel; for others the input patch under a
// tile_h x tile_w tile of one image's output pixels (near square, at most p * pt pixels, 8 or 16 wide, as wide as
// the image where it is short). A staged channel takes `row` floats (odd); as many channels as kStageFloats holds
// are staged at once, at most C. Stays trivial (1 channel, 1x1 tile) for the other variants.
struct StageGeometry {
  bool patch = false;
  int tile_h = 1, tile_w = 1;
  int per_channel = 1;  // staged floats of one channel
  int row = 1;          // per_channel, made odd (or padded for vector reads: templates/weight_sparse.cu's STAGE_ROW)
  int channels = 1;     // ws_code::STAGE_CHANNELS
  int chunks = 1;       // STAGE_CHUNKS
  std::int64_t blocks = 1;  // the grid's x
  int chunk_slots = 1;      // ws_code::CHUNK_SLOTS: with lc, the most entries of one row in one chunk
  bool fits = true;         // with lc: whether the compacted rows fit the static shared memory at one channel a chunk
};

// The staged table's static shared memory with live channels (templates/weight_sparse.cu's LIVE_SHARED_BYTES and
// the assert beside it): staged channels, the tile's bases, the rows' ends, the liveness marks and the compacted rows.
constexpr std::int64_t kLiveSharedLimit = 46 * 1024;
std::int64_t live_shared_bytes(int channels, int row, int tile, int k_group, int chunk_slots) {
  return (std::int64_t{channels} * row + tile + k_group) * 4 + (std::int64_t{channels} + k_group) * 4 +
         std::int64_t{k_group} * chunk_slots * 8;
}

// The filter's nonzeros per (output channel, input channel), K x C; remembered for the last nonzero pattern asked
// about (its hash covers the filter's shape and nonzero positions; the search asks again for every configuration).
const std::vector<int>& channel_nonzeros(const Problem& p) {
  thread_local std::string last;
  thread_local std::vector<int> counts;
  const std::vector<float>& v = *p.weights.values;
  if (last == p.weights.pattern && counts.size() == static_cast<std::size_t>(p.k) * c_per_group(p)) return counts;
  const int c_count = c_per_group(p), taps = p.filter.h * p.filter.w;
  counts.assign(static_cast<std::size_t>(p.k) * c_count, 0);
  for (int k = 0; k < p.k; ++k)
    for (int c = 0; c < c_count; ++c)
      for (int t = 0; t < taps; ++t) {
        const std::int64_t index = channels_last(p.layout) ? (std::int64_t{k} * taps + t) * c_count + c
                                                           : (std::int64_t{k} * c_count + c) * taps + t;
        if (v[static_cast<std::size_t>(index)] != 0.0f) ++counts[static_cast<std::size_t>(k) * c_count + c];
      }
  last = p.weights.pattern;
  return counts;
}

// The most entries of one row in one chunk of `channels` input channels.
int chunk_slots(const Problem& p, int channels) {
  if (!p.weights.values) return 1;
  const std::vector<int>& counts = channel_nonzeros(p);
  const int c_count = c_per_group(p);
  int most = 1;
  for (int k = 0; k < p.k; ++k)
    for (int c0 = 0; c0 < c_count; c0 += channels) {
      int sum = 0;
      for (int c = c0; c < std::min(c_count, c0 + channels); ++c)
        sum += counts[static_cast<std::size_t>(k) * c_count + c];
      most = std::max(most, sum);
    }
  return most;
}

StageGeometry stage_geometry(const Problem& p, const WeightSparseParams& s) {
  StageGeometry g;
  if (s.table != kStaged) return g;
  const Dims3 out = output_dims(p);
  const int tile = s.block_pixels * s.pixels_per_thread;
  g.patch = !(p.filter.h == 1 && p.filter.w == 1);
  if (g.patch) {
    g.tile_w = std::min(out.w, tile >= 128 ? 16 : 8);
    g.tile_h = std::min(out.h, tile / g.tile_w);
    if (g.tile_h * g.tile_w < tile && g.tile_w < out.w) g.tile_w = std::min(out.w, tile / g.tile_h);
    const int patch_h = (g.tile_h - 1) * p.stride.h + (p.filter.h - 1) * p.dilation.h + 1;
    const int patch_w = (g.tile_w - 1) * p.stride.w + (p.filter.w - 1) * p.dilation.w + 1;
    g.per_channel = patch_h * patch_w;
    g.blocks = std::int64_t{p.n} * ceil_div(out.h, g.tile_h) * ceil_div(out.w, g.tile_w);
  } else {
    g.per_channel = tile;
    g.blocks = ceil_div(std::int64_t{p.n} * out.h * out.w, tile);
  }
  // 1x1 with 2 or 4 pixels a thread reads them as one vector: the row a multiple of 4 floats (+ 4 channels-last).
  const bool vector = !g.patch && s.pixels_per_thread % 2 == 0;
  g.row = vector ? g.per_channel + (channels_last(p.layout) ? 4 : 0) : g.per_channel | 1;
  g.channels = std::clamp(kStageFloats / g.row, 1, c_per_group(p));
  if (s.live_channels) {
    // Fewer channels a chunk until the compacted rows fit beside them (each row's most entries in a chunk).
    const int tile_bases = s.block_pixels * s.pixels_per_thread;
    for (;;) {
      g.chunk_slots = chunk_slots(p, g.channels);
      g.fits = live_shared_bytes(g.channels, g.row, tile_bases, s.k_group, g.chunk_slots) <= kLiveSharedLimit;
      if (g.fits || g.channels == 1) break;
      g.channels = std::max(1, g.channels - std::max(1, g.channels / 8));
    }
  }
  g.chunks = static_cast<int>(ceil_div(c_per_group(p), g.channels));
  return g;
}

// The largest staged channel the template's static shared memory takes (templates/weight_sparse.cu's assert: one
// channel of it and the tile's bases within 40 KiB).
constexpr int kMaxStageRow = 8192;

// One nonzero weight: its output channel, input channel, tap and index in the filter.
struct Nonzero {
  int k, c, r, s;
  std::int64_t index;
  float value;
};

// The nonzeros of the problem's filter, in (k, c, r, s) order.
std::vector<Nonzero> nonzeros(const Problem& p) {
  std::vector<Nonzero> out;
  const std::vector<float>& v = *p.weights.values;
  const int c_count = c_per_group(p), r_count = p.filter.h, s_count = p.filter.w;
  for (int k = 0; k < p.k; ++k)
    for (int c = 0; c < c_count; ++c)
      for (int r = 0; r < r_count; ++r)
        for (int s = 0; s < s_count; ++s) {
          const std::int64_t index = channels_last(p.layout)
                                         ? ((std::int64_t{k} * r_count + r) * s_count + s) * c_count + c
                                         : ((std::int64_t{k} * c_count + c) * r_count + r) * s_count + s;
          const float value = v[static_cast<std::size_t>(index)];
          if (value != 0.0f) out.push_back({k, c, r, s, index, value});
        }
  return out;
}

// The most nonzeros of one output channel: the table's entries per channel (at least 1).
int slots_per_channel(const Problem& p) {
  if (!p.weights.values) return 1;
  const std::vector<float>& v = *p.weights.values;
  const std::size_t per_k = v.size() / static_cast<std::size_t>(p.k);
  std::int64_t most = 1;
  for (std::size_t k = 0; k < static_cast<std::size_t>(p.k); ++k)
    most = std::max<std::int64_t>(most, std::count_if(v.begin() + static_cast<std::ptrdiff_t>(k * per_k),
                                                      v.begin() + static_cast<std::ptrdiff_t>((k + 1) * per_k),
                                                      [](float x) { return x != 0.0f; }));
  return static_cast<int>(most);
}

std::int64_t nonzero_count(const Problem& p) {
  if (!p.weights.values) return 0;
  return static_cast<std::int64_t>(
      std::count_if(p.weights.values->begin(), p.weights.values->end(), [](float v) { return v != 0.0f; }));
}

// The activation offset of (c, r, s) from the thread's (c 0, h0, w0), as templates/weight_sparse.cu reads it.
std::int64_t activation_offset(const Problem& p, int c, int r, int s) {
  const std::int64_t spatial = std::int64_t{r} * p.dilation.h * p.input.w + std::int64_t{s} * p.dilation.w;
  return channels_last(p.layout) ? spatial * p.c + c : std::int64_t{c} * p.input.h * p.input.w + spatial;
}

// Renders namespace ws_code: NNZ, kGather (each packed value's filter index, in code order), SLOTS (the table's
// entries per channel) and group(), a switch over the blocks' channel groups whose cases load each needed activation
// once and FMA it into the channels that use it. The table variant's is empty but for SLOTS: its code is the same for
// every filter with as many nonzeros in its fullest channel.
std::string ws_code(const Problem& p, const WeightSparseParams& s) {
  const std::vector<Nonzero> all = nonzeros(p);
  std::string body;
  std::vector<std::int64_t> gather;
  const int groups = s.table ? 0 : static_cast<int>(ceil_div(p.k, s.k_group));
  std::size_t next = 0;
  for (int g = 0; g < groups; ++g) {
    // This group's nonzeros by activation (c, r, s), then channel.
    std::map<std::tuple<int, int, int>, std::vector<const Nonzero*>> by_input;
    while (next < all.size() && all[next].k < (g + 1) * s.k_group) {
      by_input[{all[next].c, all[next].r, all[next].s}].push_back(&all[next]);
      ++next;
    }
    if (by_input.empty()) continue;  // every weight of the group is zero: the default case leaves zeros
    body += fmt::format("    case {}: {{\n", g);
    for (const auto& [input, uses] : by_input) {
      const auto [c, r, sx] = input;
      const int tap = r * p.filter.w + sx;
      body += fmt::format(
          "      {{ const float v = __ldg(x + tb[{}] + {}); const float a = (valid >> {}) & 1u ? v : 0.0f;\n", tap,
          activation_offset(p, c, r, sx), tap);
      for (const Nonzero* nz : uses) {
        const int j = nz->k - g * s.k_group;
        if (s.immediates) {
          body += fmt::format("        acc[{}] = fmaf({:a}f, a, acc[{}]);\n", j, nz->value, j);
        } else {
          body += fmt::format("        acc[{}] = fmaf(wv[{}], a, acc[{}]);\n", j, gather.size(), j);
          gather.push_back(nz->index);
        }
      }
      body += "      }\n";
    }
    body += "    } break;\n";
  }
  std::string out = "namespace ws_code {\n";
  out += fmt::format("// {} nonzero weights of {} ({:.1f}% zeros), pattern {}\n", all.size(), filter_elements(p),
                     100.0 * weight_zero_fraction(p), p.weights.pattern);
  out += fmt::format("constexpr int NNZ = {};\n", gather.size());
  out += fmt::format("constexpr int SLOTS = {};\n", s.table ? slots_per_channel(p) : 1);
  const StageGeometry stage = stage_geometry(p, s);
  out += fmt::format("constexpr int STAGE_CHANNELS = {};\n", stage.channels);
  out += fmt::format("constexpr int CHUNK_SLOTS = {};\n", stage.chunk_slots);
  out += fmt::format("constexpr int TILE_H = {}, TILE_W = {};\n", stage.tile_h, stage.tile_w);
  if (gather.empty()) {
    out += "__device__ const int kGather[1] = {0};\n";
  } else {
    out += "__device__ const int kGather[NNZ] = {";
    for (std::size_t i = 0; i < gather.size(); ++i)
      out += fmt::format("{}{}", i % 16 == 0 ? "\n  " : " ", gather[i]) + (i + 1 < gather.size() ? "," : "");
    out += "\n};\n";
  }
  out +=
      "__device__ __forceinline__ void group(int g, const float* __restrict__ x, const long long* tb, unsigned valid,\n"
      "                                      const float* __restrict__ wv, float* acc) {\n"
      "  (void)x, (void)tb, (void)valid, (void)wv;\n  switch (g) {\n";
  out += body;
  out += "    default: break;\n  }\n}\n}  // namespace ws_code\n";
  return out;
}

// The table entries of the busiest channel group: the most nonzeros k_group consecutive channels hold.
std::int64_t busiest_table_group(const Problem& p, int k_group) {
  if (!p.weights.values) return 0;
  const std::vector<float>& v = *p.weights.values;
  const std::size_t per_k = v.size() / static_cast<std::size_t>(p.k);
  std::int64_t most = 0, group = 0;
  for (int k = 0; k < p.k; ++k) {
    if (k % k_group == 0) group = 0;
    const auto row = v.begin() + static_cast<std::ptrdiff_t>(static_cast<std::size_t>(k) * per_k);
    group += std::count_if(row, row + static_cast<std::ptrdiff_t>(per_k), [](float x) { return x != 0.0f; });
    most = std::max(most, group);
  }
  return most;
}

// Distinct activation loads and FMAs of the busiest channel group (per thread and pixel).
struct GroupWork {
  double loads = 0, fmas = 0;
};
GroupWork busiest_group(const Problem& p, int k_group) {
  GroupWork worst;
  if (!p.weights.values) return worst;
  const std::vector<Nonzero> all = nonzeros(p);
  std::size_t next = 0;
  for (int g = 0; g < ceil_div(p.k, k_group); ++g) {
    std::map<std::tuple<int, int, int>, int> inputs;
    double fmas = 0;
    while (next < all.size() && all[next].k < (g + 1) * k_group) {
      ++inputs[{all[next].c, all[next].r, all[next].s}];
      ++fmas;
      ++next;
    }
    if (fmas > worst.fmas) worst = {static_cast<double>(inputs.size()), fmas};
  }
  return worst;
}

class WeightSparse final : public Family {
 public:
  const TemplateInterface& interface() const override { return weight_sparse_interface(); }

  std::optional<std::string> check_support(const Problem& p, const Gpu& gpu, const KernelSpec& spec) const override {
    if (spec.family != WeightSparseParams::family)
      return fmt::format("kernel {} is not a weight_sparse kernel", spec.family);
    const WeightSparseParams s = params_of<WeightSparseParams>(spec);
    if (std::string reason = validate(p); !reason.empty()) return "invalid problem: " + reason;
    if (p.weights.pattern.empty()) return "weight_sparse bakes the problem's own filter, and this problem has none";
    if (!p.weights.values)
      return fmt::format("weight_sparse needs the values of filter pattern {} (the problem carries only its hash)",
                         p.weights.pattern);
    if (p.precision != Precision::fp32)
      return fmt::format("precision {} is not supported by weight_sparse (fp32 only)", p.precision);
    if (p.groups != 1) return fmt::format("weight_sparse handles ungrouped convolutions only, got groups {}", p.groups);
    if (p.input.d != 1 || p.filter.d != 1) return "weight_sparse handles 1-D and 2-D convolutions only (depth 1)";
    if (p.filter.h * p.filter.w > 32)
      return fmt::format("{}x{} filter taps exceed the 32 of the tap mask", p.filter.h, p.filter.w);
    if (activation_elements(p) > kIntMax || output_elements(p) > kIntMax)
      return "weight_sparse indexes activations with int offsets: tensors must have fewer than 2^31 elements";
    if (s.block_pixels * s.split > gpu.max_threads_per_block)
      return fmt::format("{} threads exceed the gpu's {}", s.block_pixels * s.split, gpu.max_threads_per_block);
    if (const int most = s.table == kStaged ? 128 : 64; s.k_group > most || s.k_group < 1)
      return fmt::format("k_group must be 1 to {}{}, got {}", most, s.table == kStaged ? "" : " (128 with tb 2)",
                         s.k_group);
    if (const int most = s.table == kStaged ? 16 : 8; s.split > most || s.split < 1)
      return fmt::format("split must be 1 to {}{}, got {}", most, s.table == kStaged ? "" : " (16 with tb 2)", s.split);
    if (ceil_div(p.k, s.k_group) > 65535) return "grid y limit exceeded";
    if (s.live_channels && s.table != kStaged)
      return fmt::format("lc (live channels) needs the staged table (tb 2), got tb {}", s.table);
    if (s.table) {
      if (s.immediates) return "the table variants read their values from the packed array (iv must be 0 with tb 1 or 2)";
      if (s.table == kStaged && s.k_group % s.split != 0)
        return fmt::format("the staged table's {} slices share the block's {} channels unevenly (kg must be a multiple "
                           "of sk)",
                           s.split, s.k_group);
      if (const int row = stage_geometry(p, s).row; s.table == kStaged && row > kMaxStageRow)
        return fmt::format("the staged table's patch of {} floats a channel exceeds its shared memory's {}", row,
                           kMaxStageRow);
      if (s.live_channels && !stage_geometry(p, s).fits)
        return fmt::format(
            "lc: {} channels' compacted rows of {} entries exceed the staged table's shared memory even "
            "at one channel a chunk",
            s.k_group, stage_geometry(p, s).chunk_slots);
      if (s.block_pixels % 32 != 0)
        return fmt::format("the table's slices are whole warps: p must be a multiple of 32, got {}", s.block_pixels);
      if (std::int64_t{c_per_group(p)} * p.input.h * p.input.w >= kTableOffsetLimit)
        return fmt::format("an image of {} activations exceeds the table codes' 26-bit offsets",
                           std::int64_t{c_per_group(p)} * p.input.h * p.input.w);
      return std::nullopt;
    }
    if (s.pixels_per_thread != 1)
      return fmt::format("baked code computes one pixel per thread, got pt {} (pt is the table's)",
                         s.pixels_per_thread);
    if (s.split != 1)
      return fmt::format("baked code sums a channel group in one thread, got sk {} (sk is the table's)", s.split);
    if (const std::int64_t nnz = nonzero_count(p); nnz > kMaxBakedNonzeros)
      return fmt::format(
          "{} nonzero weights exceed the {} baked into one kernel (NVRTC time); the table variant "
          "(tb1) serves it",
          nnz, kMaxBakedNonzeros);
    return std::nullopt;
  }

  std::vector<KernelSpec> enumerate(const Problem& p, const Gpu& gpu) const override {
    // Ranked by estimate within each variant, the baked ones first wherever the filter may be baked (at most
    // kMaxBakedNonzeros: NVRTC time, which the estimate leaves out, about 1 s at 1.6K nonzeros on the 2-core machine).
    // Until 2026-12-02 the table came first past 512 nonzeros (0.26 s to compile): on the H200's measurements of every
    // candidate of ResNet-50 at 90% zeros its first pick took 2.1x and 1.6x the baked fastest's time on the 56 x 56
    // 1 x 1 layers of 1.6K nonzeros at batch 8 (bench/results/h200/weight-sparse-estimate-seed2-2026-12-02).
    std::vector<std::pair<double, KernelSpec>> baked, table;
    // Keeps a configuration the problem and GPU allow, with its estimate.
    const auto consider = [&](std::vector<std::pair<double, KernelSpec>>& into, const WeightSparseParams& s) {
      const KernelSpec spec = to_spec(s);
      if (!check_support(p, gpu, spec)) into.emplace_back(estimate_us(p, gpu, s), spec);
    };
    const Dims3 out = output_dims(p);
    const std::int64_t pixels = std::int64_t{p.n} * out.h * out.w;
    for (int bp : {64, 128, 256})
      for (int kg : {4, 8, 16, 32})
        for (bool iv : {false, true}) {
          if (kg > 4 && kg > p.k) continue;
          if (bp > 64 && bp > 2 * pixels) continue;
          WeightSparseParams s;
          s.block_pixels = bp;
          s.k_group = kg;
          s.immediates = iv;
          consider(baked, s);
        }
    for (int bp : {64, 128, 256})
      for (int kg : {1, 2, 4, 8})
        for (int pt : {1, 2, 4})
          for (int sk : {1, 2, 4, 8}) {
            if (kg > 1 && kg > p.k) continue;
            if (bp * pt > 64 && bp * pt > 2 * pixels) continue;
            if (bp * sk > 512) continue;
            WeightSparseParams s;
            s.block_pixels = bp;
            s.k_group = kg;
            s.table = kTable;
            s.pixels_per_thread = pt;
            s.split = sk;
            consider(table, s);
          }
    // The staged table: many channels a block, so that each staged activation serves several, shared among sk
    // slices of threads (each a shorter chain of dependent loads).
    // At high sparsity a staged activation serves kg x (1 - zeros) FMAs: 128 channels a block (in 8 or 16 slices)
    // make the staging worth it at 90% zeros. Not 8 pixels a thread (the template takes them): on the H200 the
    // fastest such kernel took 2.08x (batch 8) and 4.56x (batch 1) the time of each ResNet-50 problem's fastest at 90%
    // zeros, never under 1.13x, and enumerate's estimate put them first (bench/results/h200/
    // weight-sparse-staged-2026-12-01).
    for (int bp : {32, 64, 128})
      for (int kg : {8, 16, 32, 64, 128})
        for (int pt : {1, 2, 4})  // more pixels a thread: each entry's load and address serve more FMAs
          for (int sk : {1, 2, 4, 8, 16}) {
            if (kg > 8 && kg > 2 * p.k) continue;
            if ((kg == 128 && sk < 8) || (sk == 16 && kg < 64)) continue;
            if (bp * pt > 32 && bp * pt > 2 * pixels) continue;
            if (kg / sk * pt > 64 || kg % sk != 0) continue;  // accumulators per thread
            if (bp * sk > 512) continue;
            WeightSparseParams s;
            s.block_pixels = bp;
            s.k_group = kg;
            s.table = kStaged;
            s.pixels_per_thread = pt;
            s.split = sk;
            consider(table, s);
            // Its twin whose block compacts each chunk's rows into shared memory, dropping the entries of channels
            // whose staged patch is all zeros, for filters of several taps (kLiveChannelsTwinRatio). Not for 1 x 1:
            // a chunk's rows there hold a few entries each, which the compaction's barriers and ballots outweigh
            // (1.14x / 1.20x its twin's time on ResNet-50's 1 x 1 layers at 90% zero weights, batch 1 / 8, H200).
            if (p.filter.h * p.filter.w > 1) {
              s.live_channels = true;
              consider(table, s);
            }
          }
    const auto by_time = [](const auto& a, const auto& b) { return a.first < b.first; };
    std::stable_sort(baked.begin(), baked.end(), by_time);
    std::stable_sort(table.begin(), table.end(), by_time);
    std::vector<KernelSpec> specs;
    for (const auto& [us, spec] : baked) specs.push_back(spec);
    for (const auto& [us, spec] : table) specs.push_back(spec);
    return specs;
  }

  KernelSource render(const Problem& p, const KernelSpec& spec) const override {
    if (auto reason = check_support_without_gpu(p, spec)) throw InputError(*reason);
    const TemplateInterface& iface = interface();
    KernelSource source;
    source.entry = kernel_name(spec);
    source.file_name = source.entry + ".cu";
    source.text = render_prelude(p, spec, iface);
    source.text += ws_code(p, params_of<WeightSparseParams>(spec));
    source.text += fmt::format("#line 1 \"{}\"\n", iface.template_file);
    source.text += template_text(iface.template_file);
    source.headers = template_header_names();
    return source;
  }

  // Baked: setup gathers the nonzero values into the persistent "packed_values" (code order). Table: setup packs
  // each channel's count and codes into "pattern_codes" (K counts, then K rows of SLOTS codes; the staged table
  // then K rows of STAGE_CHUNKS + 1 chunk starts) and its values into "packed_values" (K rows of SLOTS), one thread
  // per channel. Run: the main kernel.
  LaunchPlan plan(const Problem& p, const KernelSpec& spec) const override {
    const WeightSparseParams s = params_of<WeightSparseParams>(spec);
    const Dims3 out = output_dims(p);
    const std::int64_t pixels = std::int64_t{p.n} * out.h * out.w;
    const std::int64_t slots = s.table ? std::int64_t{p.k} * slots_per_channel(p) : 0;
    const std::int64_t nnz = s.table ? slots : s.immediates ? 0 : nonzero_count(p);
    LaunchPlan plan;
    // The staged table's values are (code, value) pairs.
    plan.buffers.push_back({.name = "packed_values",
                            .bytes = std::max<std::int64_t>(4, nnz * (s.table == kStaged ? 8 : 4)),
                            .persistent = true});
    // The staged table's rows also say where each chunk of input channels starts: STAGE_CHUNKS + 1 per row.
    const std::int64_t chunk_starts = s.table == kStaged ? std::int64_t{p.k} * (stage_geometry(p, s).chunks + 1) : 0;
    plan.buffers.push_back(
        {.name = "pattern_codes", .bytes = s.table ? (p.k + slots + chunk_starts) * 4 : 4, .persistent = true});
    if (s.table)
      plan.setup.push_back(
          {.kind = LaunchStep::Kind::kernel,
           .entry_suffix = "pack_pattern",
           .geometry = {.grid = {static_cast<unsigned>(ceil_div(p.k, 256)), 1, 1}, .block = {256, 1, 1}}});
    else if (nnz > 0)
      plan.setup.push_back(
          {.kind = LaunchStep::Kind::kernel,
           .entry_suffix = "pack_values",
           .geometry = {.grid = {static_cast<unsigned>(ceil_div(nnz, 256)), 1, 1}, .block = {256, 1, 1}}});
    plan.run.push_back(
        {.kind = LaunchStep::Kind::kernel,
         .geometry = {.grid = {static_cast<unsigned>(s.table == kStaged
                                                         ? stage_geometry(p, s).blocks
                                                         : ceil_div(pixels, s.block_pixels * s.pixels_per_thread)),
                               static_cast<unsigned>(ceil_div(p.k, s.k_group)), 1},
                      .block = {static_cast<unsigned>(s.block_pixels * s.split), 1, 1}}});
    return with_early_launch(std::move(plan));  // every run entry waits first (grid_dependency.cuh)
  }

  // Per block (warps = block_pixels / 32). Baked (one pixel per thread): per warp the busiest group's distinct
  // activation loads (with their bounds test) and its FMAs; values from the packed array add a uniform load per FMA.
  // Table (pt pixels per thread): per entry of the busiest group's channels a code and a value load (uniform, from
  // shared memory), pt activation loads with their tap test, pt FMAs and the loop's few instructions; no load is
  // shared between channels; a pair of barriers per chunk of a row.
  CostFeatures cost_features(const Problem& p, const KernelSpec& spec) const override {
    const WeightSparseParams s = params_of<WeightSparseParams>(spec);
    const Dims3 out = output_dims(p);
    const std::int64_t pixels = std::int64_t{p.n} * out.h * out.w;
    const double warps = s.block_pixels / 32.0;
    const double nnz = static_cast<double>(nonzero_count(p));
    if (s.table == kStaged) {
      // Per chunk of staged channels: the tile's (or patch's) loads, global and a shared store each (the block's
      // bp * sk threads together), the rows' ends, a barrier pair, then per entry of the busiest group one uniform
      // 8-byte global load (code and value), pt shared loads (pt / 4 or pt / 2 vectors for 1x1 tiles) and pt FMAs,
      // the group's entries shared among the sk slices.
      const StageGeometry g = stage_geometry(p, s);
      const double pt = s.pixels_per_thread, sk = s.split;
      const double all_entries = static_cast<double>(busiest_table_group(p, s.k_group));
      // With lc the walk skips the entries of channels whose staged patch is all zeros: modelled as independent
      // zeros at the problem's act_sparsity (a patch of per_channel positions all zero), which clustered zeros beat.
      const double dead = s.live_channels ? std::pow(std::clamp(p.act_sparsity, 0.0, 1.0), g.per_channel) : 0.0;
      const double entries = all_entries * (1 - dead);
      const double chunks = g.chunks;
      const double all_warps = warps * sk;
      // lc's compaction: each warp of the block takes kg / warps rows a chunk, 32 entries a step of about 12
      // instructions (a global load, the mark's shared load, a ballot, a shared store), two barriers more.
      const double compaction = s.live_channels ? 12 * std::ceil(s.k_group / all_warps) *
                                                      (chunks + std::ceil(all_entries / s.k_group / 32.0)) * all_warps
                                                : 0.0;
      // Each chunk's channels x positions staged by all the block's threads together (a thread takes channels a fixed
      // stride apart where the block has more threads than a channel has positions): a thread's share.
      const double staged =
          chunks * std::ceil(static_cast<double>(g.channels) * g.per_channel / (s.block_pixels * s.split));
      const double tile_pixels = g.patch ? g.tile_h * g.tile_w : s.block_pixels * pt;
      const double vector = g.patch ? 1 : s.pixels_per_thread % 4 == 0 ? 4 : s.pixels_per_thread % 2 == 0 ? 2 : 1;
      return {
          .blocks = g.blocks * ceil_div(p.k, s.k_group),
          .threads_per_block = s.block_pixels * s.split,
          .smem_bytes_per_block =
              (g.channels * g.row + (g.patch ? 1 : s.block_pixels * s.pixels_per_thread) + s.k_group) * 4 +
              (s.live_channels ? (g.channels + s.k_group) * 4 + s.k_group * g.chunk_slots * 8 : 0),
          .flops = 2.0 * nnz * static_cast<double>(pixels),
          .dram_bytes = static_cast<double>(activation_elements(p) + output_elements(p)) * 4 + nnz * 8,
          .flops_per_block = 2.0 * entries * tile_pixels,
          .fma_instructions = warps * entries * pt,
          .shared_load_instructions = warps * (entries * pt / vector + chunks * s.k_group) + all_warps * (staged + pt),
          .global_load_instructions = all_warps * staged + warps * entries + chunks * std::ceil(s.k_group / 32.0),
          .address_instructions = warps * (entries * 2 + s.k_group * 8 * pt) +
                                  all_warps * (staged * (s.live_channels ? 6 : 4) + 30) + compaction,
          .main_loop_steps = static_cast<int>(chunks * (s.live_channels ? 1.5 : 1)),
          .pipelined = false,
          .warp_issue_rate = kWarpIssueRate};
    }
    if (s.table) {
      // Per slice (warps * split of them) a split-th of each row; the slices' sums meet in shared memory, two
      // barriers a channel.
      const double pt = s.pixels_per_thread, sk = s.split;
      const double taps = static_cast<double>(p.filter.h) * p.filter.w;
      const double entries = static_cast<double>(busiest_table_group(p, s.k_group));
      const double slice_entries = std::ceil(entries / sk);
      const double all_warps = warps * sk;
      // The rows come through shared memory: a block reads each entry once from global memory (its threads
      // together), each slice reads its entries' code and value from shared memory.
      const double staged = 2 * std::ceil(entries / (s.block_pixels * sk));
      return {
          .blocks = ceil_div(pixels, s.block_pixels * s.pixels_per_thread) * ceil_div(p.k, s.k_group),
          .threads_per_block = s.block_pixels * s.split,
          .smem_bytes_per_block = (s.split - 1) * s.pixels_per_thread * s.block_pixels * 4 + kRowChunk * 8,
          .flops = 2.0 * nnz * static_cast<double>(pixels),
          .dram_bytes = static_cast<double>(activation_elements(p) + output_elements(p)) * 4 + nnz * 8,
          .flops_per_block = 2.0 * entries * s.block_pixels * pt,
          .fma_instructions = all_warps * (slice_entries * pt + (sk > 1 ? s.k_group * pt : 0)),
          .shared_load_instructions = all_warps * (2 * slice_entries + staged + (sk > 1 ? s.k_group * pt : 0)),
          .global_load_instructions = all_warps * (slice_entries * pt + staged),
          .address_instructions = all_warps * (slice_entries * (4 + pt) + pt * (20 + 2 * taps) + s.k_group * 8 * pt),
          .main_loop_steps = static_cast<int>(s.k_group * std::ceil(std::max(1.0, entries / s.k_group) / kRowChunk)),
          .pipelined = false,
          .warp_issue_rate = kWarpIssueRate};
    }
    const GroupWork work = busiest_group(p, s.k_group);
    return {.blocks = ceil_div(pixels, s.block_pixels) * ceil_div(p.k, s.k_group),
            .threads_per_block = s.block_pixels,
            .smem_bytes_per_block = 0,
            .flops = 2.0 * nnz * static_cast<double>(pixels),
            .dram_bytes = static_cast<double>(activation_elements(p) + output_elements(p)) * 4 + nnz * 4,
            .flops_per_block = 2.0 * work.fmas * s.block_pixels,
            .fma_instructions = warps * work.fmas,
            .shared_load_instructions = 0,
            .global_load_instructions = warps * (work.loads + (s.immediates ? 0 : work.fmas)),
            .address_instructions = warps * (2 * work.loads + 20),
            .main_loop_steps = 1,
            .pipelined = true,
            .warp_issue_rate = kWarpIssueRate};
  }

  // The FMAs, loads and table entries above are counted from the filter's nonzeros.
  bool cost_features_need_filter_values() const override { return true; }

  // The nonzeros' positions are in the code (or, for the tables, laid out for them at op creation); with iv1 their
  // values too.
  FilterDependence filter_dependence(const KernelSpec& spec) const override {
    return params_of<WeightSparseParams>(spec).immediates ? FilterDependence::values : FilterDependence::pattern;
  }

  CostWeights default_cost_weights() const override { return family("igemm").default_cost_weights(); }

  // The first of enumerate's order, the staged table included. Replayed on the H200's measurements of every
  // candidate of ResNet-50 at 90% zeros (bench/results/h200/weight-sparse-staged-2026-12-01, `convgen db replay
  // --weight-sparsity 0.9`): it takes 1.178x the fastest's time at batch 8 (geometric mean, 22 problems) and 1.125x at
  // batch 1 (14 problems); 1.423x and 1.216x while the estimate charged every thread of a block with more threads than
  // a staged channel has positions a whole channel's staging (instead of its share) and a warp's dependent chain 4
  // cycles an instruction (kDependentCycles). The first but a staged table took 1.522x and 1.216x, and with the staged
  // table's 8-pixel configurations in the order 1.557x at batch 8.
  std::optional<KernelSpec> default_spec(const Problem& p, const Gpu& gpu) const override {
    const std::vector<KernelSpec> specs = enumerate(p, gpu);
    if (specs.empty()) return std::nullopt;
    return specs.front();
  }

  // First where the problem's own filter has at least kDefaultZeros zeros (what the family is for); last otherwise.
  // lc (live channels) came after the first six parameters: its earlier names mean lc0.
  std::size_t params_added_later() const override { return 1; }

  int default_rank(const Problem& p) const override {
    return p.weights.values && weight_zero_fraction(p) >= kDefaultZeros ? -2 : 3;
  }

 private:
  std::optional<std::string> check_support_without_gpu(const Problem& p, const KernelSpec& spec) const {
    Gpu any;
    any.max_threads_per_block = 1024;
    return check_support(p, any, spec);
  }

  // The cycles a warp waits, on average, between the instructions of its dependent chain (an entry's value load, its
  // shared loads, its FMAs): replayed on the H200's measurements of every weight_sparse candidate of ResNet-50 at 90%
  // zeros (bench/results/h200/weight-sparse-staged-2026-12-01, `convgen db replay --weight-sparsity 0.9`), the
  // estimate's pick took 1.226x / 1.174x the fastest's time at batch 8 / 1 with 4, 1.178x / 1.125x with 6, 1.160x /
  // 1.179x with 8 and 1.212x / 1.270x with 12.
  static constexpr double kDependentCycles = 6;
  // lc1 (the chunk's rows compacted into shared memory) against its lc0 twin, whose walk reads each entry from global
  // memory (L1) on its dependent chain: measured on the H200 over every staged configuration of cuSNN's 3 x 3 layers
  // at 90% zero weights, the twins' time ratio was 0.73-0.76 (geometric means of 255-850 pairs at batch 1 and 8) on
  // near-dense input as on 70% blob zeros (bench/results/h200/weight-and-activation-zeros-2026-12-02). Replayed there
  // (db replay), enumerate's first measured pick took 1.046x / 1.084x (cuSNN batch 1 / 8) and 1.070x / 1.075x
  // (ResNet-50 batch 1 / 8, dense input, the 48 first measured) the fastest's time; with lc1 ranked as its twin
  // 1.062x / 1.186x / 1.061x / 1.086x.
  static constexpr double kLiveChannelsTwinRatio = 0.75;
  // Rough time for ranking: the busiest group's instructions per warp over the SM's schedulers, for the busiest SM's
  // blocks. Counting the SM's warps as whole blocks (not the average share of every warp) took enumerate's first pick
  // from 1.178x / 1.125x / 1.205x to 1.137x / 1.125x / 1.151x the fastest (ResNet-50 at 90% zeros: batch 8, batch 1,
  // batch 8 on seed 2's filter; with the baked kernels first up to kMaxBakedNonzeros 1.080x / 1.076x / 1.093x). Out
  // of sample (ResNet-50's stage 2 at 95% zeros, seed 3: bench/results/h200/weight-sparse-estimate-w95-2026-12-02)
  // the two changes took it from 1.644x to 1.157x.
  double estimate_us(const Problem& p, const Gpu& gpu, const WeightSparseParams& s) const {
    const CostFeatures f = cost_features(p, to_spec(s));
    const double block_warps = s.block_pixels * s.split / 32.0;
    const double per_warp = (f.fma_instructions + f.global_load_instructions * 2 + f.address_instructions +
                             f.shared_load_instructions * 2) /
                                block_warps +
                            f.main_loop_steps * (s.table ? 40 : 0);  // the table's barriers: a pair a chunk
    const double sms = std::max(1, gpu.sm_count);
    const double clock_mhz = gpu.clock_mhz > 0 ? gpu.clock_mhz : 1700;
    // The busiest SM's warps: whole blocks (196 blocks of 16 warps put 32 on some SMs of 132, not 24).
    const double issue_cycles = std::ceil(static_cast<double>(f.blocks) / sms) * block_warps * per_warp / 4;
    const double latency_cycles = per_warp * kDependentCycles + 600;  // one warp's dependent chain and first loads
    const double walk_us = std::max(issue_cycles, latency_cycles) / clock_mhz;
    return walk_us * (s.live_channels ? kLiveChannelsTwinRatio : 1.0) + 2.0;
  }
};

}  // namespace

const Family& weight_sparse_family() {
  static const WeightSparse instance;
  return instance;
}

}  // namespace convgen
