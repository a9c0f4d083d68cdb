// random_problems: a seeded generator of random valid convolution problems for the stress test.
#include "generator/random_problems.hpp"

#include <algorithm>
#include <array>
#include <random>

#include <fmt/format.h>

#include "convgen/error.hpp"

namespace convgen {
namespace {

std::uint64_t splitmix64(std::uint64_t x) {
  x += 0x9e3779b97f4a7c15;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9;
  x = (x ^ (x >> 27)) * 0x94d049bb133111eb;
  return x ^ (x >> 31);
}

// Draws from std::mt19937_64, whose sequence the standard fixes, through mappings of our own: the standard's
// distributions are implemented differently by each standard library. Every draw is a statement of its own, since
// the order in which a call's arguments are evaluated is not fixed either.
class Draw {
 public:
  explicit Draw(std::uint64_t seed) : engine_(seed) {}

  // Uniform in [lo, hi] (the modulo's bias is below 2^-50 for these ranges).
  int between(int lo, int hi) { return lo + static_cast<int>(engine_() % static_cast<std::uint64_t>(hi - lo + 1)); }
  // Uniform in [0, 1).
  double unit() { return static_cast<double>(engine_() >> 11) * 0x1.0p-53; }
  bool chance(double p) { return unit() < p; }
  template <class T>
  T pick(const std::vector<T>& values) {
    return values[static_cast<std::size_t>(between(0, static_cast<int>(values.size()) - 1))];
  }

 private:
  std::mt19937_64 engine_;
};

// Channels: mostly small (where odd counts and tile remainders live), some up to 256.
int draw_channels(Draw& draw) {
  const int kind = draw.between(0, 99);
  if (kind < 35) return draw.between(1, 8);
  if (kind < 75) return draw.between(9, 64);
  return draw.between(65, 256);
}

int draw_batch(Draw& draw) {
  const int kind = draw.between(0, 99);
  if (kind < 55) return 1;
  if (kind < 80) return draw.between(2, 4);
  if (kind < 95) return draw.between(5, 16);
  return draw.between(17, 32);
}

Epilogue draw_epilogue(Draw& draw) {
  Epilogue e;
  if (draw.chance(0.2)) e.alpha = draw.pick(std::vector<double>{0.5, 2, -1});
  e.bias = draw.chance(0.6);
  if (draw.chance(0.5)) e.beta = draw.pick(std::vector<double>{1, 0.5, 2});
  const int act = draw.between(0, 3);
  e.act = static_cast<Activation>(act);
  if (e.act == Activation::clip) {
    e.clip_lo = -0.5;
    e.clip_hi = 0.5;
  }
  if (is_identity(e)) e.act = Activation::relu;
  return e;
}

Dims3 dims(const std::array<int, 3>& v) { return {v[0], v[1], v[2]}; }

Layout layout_of(int rank, bool channels_last) {
  if (rank == 1) return channels_last ? Layout::nwc : Layout::ncw;
  if (rank == 2) return channels_last ? Layout::nhwc : Layout::nchw;
  return channels_last ? Layout::ndhwc : Layout::ncdhw;
}

void check_options(const RandomProblemOptions& o) {
  if (o.ranks.empty()) throw InputError("random problems: no spatial rank to draw from, expected some of 1, 2, 3");
  for (const int r : o.ranks)
    if (r < 1 || r > 3) throw InputError(fmt::format("random problems: rank {} is not 1, 2 or 3", r));
  if (o.precisions.empty()) throw InputError("random problems: no precision to draw from");
  if (o.max_macs < 4096)
    throw InputError(fmt::format("random problems: max_macs must be at least 4096, got {}", o.max_macs));
  for (const double share : {o.act_sparse_share, o.weight_sparse_share, o.epilogue_share, o.relu_on_load_share})
    if (!(share >= 0 && share <= 1))
      throw InputError(fmt::format("random problems: a share must be in [0, 1], got {}", share));
}

// The smallest input extent that leaves one output for a filter extent, dilation and padding.
int min_input(int filter, int dilation, int padding) { return std::max(1, dilation * (filter - 1) + 1 - 2 * padding); }

}  // namespace

std::int64_t macs(const Problem& p) {
  return output_elements(p) * c_per_group(p) * p.filter.d * p.filter.h * p.filter.w;
}

RandomProblem random_problem(std::uint64_t seed, int index, const RandomProblemOptions& options) {
  check_options(options);
  RandomProblem out{.index = index, .seed = splitmix64(splitmix64(seed) ^ static_cast<std::uint64_t>(index))};
  Draw draw(out.seed);

  const int rank = draw.pick(options.ranks);
  const bool last = draw.chance(0.5);
  const Precision precision = draw.pick(options.precisions);
  const int first = 3 - rank;  // the first spatial dim in use (d, h, w = 0, 1, 2)

  // Filter: 1x1, square (3x3 most often, as in networks; winograd serves only those), or each extent its own (1 to
  // 7).
  std::array<int, 3> f{1, 1, 1}, st{1, 1, 1}, dil{1, 1, 1}, pad{0, 0, 0}, in{1, 1, 1};
  const int filter_kind = draw.between(0, 99);
  const int any_square = draw.between(1, 7);
  const int square = draw.chance(0.4) ? 3 : any_square;
  for (int i = first; i < 3; ++i) f[i] = filter_kind < 15 ? 1 : filter_kind < 60 ? square : draw.between(1, 7);
  // Stride: 1; the same 2 or 3 in every dim; or each dim its own.
  const int stride_kind = draw.between(0, 99);
  const int same_stride = draw.between(0, 2) < 2 ? 2 : 3;
  for (int i = first; i < 3; ++i) st[i] = stride_kind < 55 ? 1 : stride_kind < 85 ? same_stride : draw.between(1, 3);
  // Dilation, likewise rarer.
  const int dilation_kind = draw.between(0, 99);
  const int same_dilation = draw.between(2, 3);
  for (int i = first; i < 3; ++i)
    dil[i] = dilation_kind < 75 ? 1 : dilation_kind < 90 ? same_dilation : draw.between(1, 3);
  // Padding: none; "same" (half the dilated filter); or anything up to the dilated filter's extent - 1.
  const int padding_kind = draw.between(0, 99);
  for (int i = first; i < 3; ++i) {
    const int reach = dil[i] * (f[i] - 1);
    pad[i] = padding_kind < 35 ? 0 : padding_kind < 75 ? reach / 2 : draw.between(0, reach);
  }
  // Input extents: from the least that leaves an output, mostly small.
  const int extra = rank == 1 ? 200 : rank == 2 ? 48 : 14;
  for (int i = first; i < 3; ++i) {
    const int spread = draw.between(0, extra);
    in[i] = min_input(f[i], dil[i], pad[i]) + draw.between(0, spread);
  }

  // Groups: dense, grouped (2 to 8 groups) or depthwise (C/g = 1, K/g 1 or 2).
  const int groups_kind = draw.between(0, 99);
  int groups = 1, cpg = 1, kpg = 1;
  if (groups_kind < 65) {
    cpg = draw_channels(draw);
    kpg = draw_channels(draw);
  } else if (groups_kind < 85) {
    groups = draw.between(2, 8);
    cpg = draw.between(1, 32);
    kpg = draw.between(1, 32);
  } else {
    groups = draw.between(2, 64);
    kpg = draw.between(1, 2);
  }
  const int batch = draw_batch(draw);

  Problem p{.n = batch, .groups = groups, .layout = layout_of(rank, last), .precision = precision};
  const auto set_shape = [&] {
    p.groups = groups;
    p.c = groups * cpg;
    p.k = groups * kpg;
    p.input = dims(in);
    p.filter = dims(f);
    p.stride = dims(st);
    p.padding = dims(pad);
    p.dilation = dims(dil);
  };
  set_shape();
  // Within the cap: halve the largest of batch, groups (grouped ones keep 2), C/g, K/g and the output extents; a
  // filter shrinks only when all of those are 1.
  while (macs(p) > options.max_macs) {
    const Dims3 o = output_dims(p);
    const std::array<int, 7> sizes{p.n, groups > 2 ? groups : 1, cpg, kpg, o.d, o.h, o.w};
    const auto largest = std::max_element(sizes.begin(), sizes.end());
    if (*largest > 1) {
      const int which = static_cast<int>(largest - sizes.begin());
      const int half = (*largest + 1) / 2;
      if (which == 0) p.n = half;
      if (which == 1) groups = std::max(2, *largest / 2);
      if (which == 2) cpg = half;
      if (which == 3) kpg = half;
      if (which >= 4) {
        const int i = which - 4;
        const int smaller = std::max(min_input(f[i], dil[i], pad[i]), in[i] - st[i] * (*largest / 2));
        // At its least input the output may still be long where the padding is wide (a 1x1 filter padded by 3):
        // then the padding halves.
        if (smaller < in[i]) {
          in[i] = smaller;
        } else {
          pad[i] /= 2;
          in[i] = std::max(in[i], min_input(f[i], dil[i], pad[i]));
        }
      }
    } else {
      const int i = static_cast<int>(std::max_element(f.begin(), f.end()) - f.begin());
      f[i] -= 1;
      pad[i] = std::min(pad[i], dil[i] * (f[i] - 1));
      in[i] = std::max(in[i], min_input(f[i], dil[i], pad[i]));
    }
    set_shape();
  }

  const int sparse_zeros = draw.between(0, 2);
  if (draw.chance(options.act_sparse_share)) p.act_sparsity = std::array{0.5, 0.7, 0.9}[sparse_zeros];
  const int weight_zeros = draw.between(0, 2);
  if (draw.chance(options.weight_sparse_share)) out.weight_sparsity = std::array{0.5, 0.8, 0.95}[weight_zeros];
  out.two_four = out.weight_sparsity == 0.5 && (precision == Precision::fp16 || precision == Precision::bf16);
  if (draw.chance(options.epilogue_share)) p.epilogue = draw_epilogue(draw);
  // Drawn last, so that the earlier draws of a seed are those of a generator without it.
  if (p.act_sparsity > 0 && draw.chance(options.relu_on_load_share)) p.relu_on_load = true;

  // The construction keeps every problem valid; a reason here is a bug of the generator's.
  if (const std::string reason = validate(p); !reason.empty())
    throw Error(fmt::format("random problem {} of seed {} is invalid: {}: {}", index, seed, reason, problem_key(p)));
  out.problem = p;
  return out;
}

std::vector<RandomProblem> random_problems(std::uint64_t seed, int count, const RandomProblemOptions& options) {
  std::vector<RandomProblem> out;
  out.reserve(static_cast<std::size_t>(std::max(count, 0)));
  for (int i = 0; i < count; ++i) out.push_back(random_problem(seed, i, options));
  return out;
}

namespace {

std::string size_bucket(int v) {
  if (v == 1) return "1";
  if (v <= 4) return "2-4";
  if (v <= 16) return "5-16";
  if (v <= 64) return "17-64";
  return "65+";
}

// "1", "2", "3" when every dim in use has that value, else "mixed".
std::string same_or_mixed(const Problem& p, const Dims3& v) {
  const int first = 3 - rank(p.layout);
  const std::array<int, 3> values{v.d, v.h, v.w};
  for (int i = first + 1; i < 3; ++i)
    if (values[i] != values[first]) return "mixed";
  return std::to_string(values[first]);
}

}  // namespace

std::vector<std::pair<std::string_view, std::string>> coverage_buckets(const RandomProblem& rp) {
  const Problem& p = rp.problem;
  const int first = 3 - rank(p.layout);
  const std::array<int, 3> f{p.filter.d, p.filter.h, p.filter.w};
  const std::array<int, 3> st{p.stride.d, p.stride.h, p.stride.w};
  const std::array<int, 3> pad{p.padding.d, p.padding.h, p.padding.w};
  std::vector<std::pair<std::string_view, std::string>> out;
  out.emplace_back("dims", fmt::format("{}-D", rank(p.layout)));
  out.emplace_back("layout", std::string(to_string(p.layout)));
  const bool all_one = std::all_of(f.begin() + first, f.end(), [](int v) { return v == 1; });
  const bool equal = std::all_of(f.begin() + first, f.end(), [&](int v) { return v == f[first]; });
  out.emplace_back("filter", all_one ? "1x1" : equal ? "square" : "non-square");
  std::array<bool, 8> seen{};
  for (int i = first; i < 3; ++i)
    if (!std::exchange(seen[static_cast<std::size_t>(std::min(f[i], 7))], true))
      out.emplace_back("filter extent", std::to_string(f[i]));
  out.emplace_back("stride", same_or_mixed(p, p.stride));
  out.emplace_back("dilation", same_or_mixed(p, p.dilation));
  bool padded = false, beyond = false;
  for (int i = first; i < 3; ++i) {
    padded = padded || pad[i] > 0;
    beyond = beyond || pad[i] > st[i];
  }
  out.emplace_back("padding", !padded ? "none" : beyond ? "beyond stride" : "at most stride");
  out.emplace_back("groups", p.groups == 1 ? "dense" : c_per_group(p) == 1 ? "depthwise" : "grouped");
  out.emplace_back("precision", std::string(to_string(p.precision)));
  out.emplace_back("batch", p.n == 1 ? "1" : p.n <= 4 ? "2-4" : p.n <= 16 ? "5-16" : "17+");
  out.emplace_back("C/g", size_bucket(c_per_group(p)));
  out.emplace_back("K/g", size_bucket(k_per_group(p)));
  const std::int64_t m = macs(p);
  out.emplace_back("MACs", m < (1 << 16)   ? "< 2^16"
                           : m < (1 << 20) ? "2^16-2^20"
                           : m < (1 << 22) ? "2^20-2^22"
                                           : ">= 2^22");
  out.emplace_back("activation zeros", fmt::format("{}%", act_sparsity_bucket(p)));
  out.emplace_back("ReLU on load", p.relu_on_load ? "yes" : "no");
  out.emplace_back("filter zeros",
                   rp.two_four ? "2:4" : fmt::format("{}%", static_cast<int>(rp.weight_sparsity * 100 + 0.5)));
  const Epilogue& e = p.epilogue;
  if (is_identity(e)) out.emplace_back("epilogue", "none");
  if (e.alpha != 1) out.emplace_back("epilogue", "alpha");
  if (e.bias) out.emplace_back("epilogue", "bias");
  if (reads_residual(e)) out.emplace_back("epilogue", "add");
  if (e.act != Activation::none) out.emplace_back("epilogue", std::string(to_string(e.act)));
  return out;
}

const std::vector<CoverageAxis>& coverage_axes() {
  static const std::vector<CoverageAxis> axes = [] {
    std::vector<CoverageAxis> out = {
        {"dims", {"1-D", "2-D", "3-D"}},
        {"layout", {}},
        {"filter", {"1x1", "square", "non-square"}},
        {"filter extent", {"1", "2", "3", "4", "5", "6", "7"}},
        {"stride", {"1", "2", "3", "mixed"}},
        {"dilation", {"1", "2", "3", "mixed"}},
        {"padding", {"none", "at most stride", "beyond stride"}},
        {"groups", {"dense", "grouped", "depthwise"}},
        {"precision", {}},
        {"batch", {"1", "2-4", "5-16", "17+"}},
        {"C/g", {"1", "2-4", "5-16", "17-64", "65+"}},
        {"K/g", {"1", "2-4", "5-16", "17-64", "65+"}},
        {"MACs", {"< 2^16", "2^16-2^20", "2^20-2^22", ">= 2^22"}},
        {"activation zeros", {"0%", "50%", "70%", "90%"}},
        {"ReLU on load", {"no", "yes"}},
        {"filter zeros", {"0%", "50%", "2:4", "80%", "95%"}},
        {"epilogue", {"none", "alpha", "bias", "add", "relu", "relu6", "clip"}},
    };
    for (const auto& [layout, name] : EnumNames<Layout>::table) out[1].buckets.emplace_back(name);
    for (const auto& [precision, name] : EnumNames<Precision>::table) out[8].buckets.emplace_back(name);
    return out;
  }();
  return axes;
}

}  // namespace convgen
