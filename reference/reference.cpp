// reference: the float64 CPU convolution, output sampling, error measures and the deterministic random fill.
#include "reference/reference.hpp"

#include <algorithm>
#include <cmath>
#include <unordered_set>

#include <fmt/format.h>

#include "convgen/error.hpp"

namespace convgen {
namespace {

// Flat-index arithmetic of the three tensors of one problem, in its layout. All indices are 64-bit: a large
// batch of 3-D activations passes 2^31 elements.
class Indexer {
 public:
  explicit Indexer(const Problem& p)
      : p_(p), out_(output_dims(p)), cg_(c_per_group(p)), kg_(k_per_group(p)), last_(channels_last(p.layout)) {}

  std::int64_t activation(std::int64_t n, std::int64_t ch, std::int64_t d, std::int64_t h, std::int64_t w) const {
    const Dims3& in = p_.input;
    if (last_) return (((n * in.d + d) * in.h + h) * in.w + w) * p_.c + ch;
    return (((n * p_.c + ch) * in.d + d) * in.h + h) * in.w + w;
  }

  std::int64_t filter(std::int64_t k, std::int64_t c, std::int64_t t, std::int64_t r, std::int64_t s) const {
    const Dims3& f = p_.filter;
    if (last_) return (((k * f.d + t) * f.h + r) * f.w + s) * cg_ + c;
    return (((k * cg_ + c) * f.d + t) * f.h + r) * f.w + s;
  }

  // Computes one output element, given by its flat index in the output layout; the readers give element i of the
  // activation and the filter as a double.
  template <class ActivationReader, class FilterReader>
  double output(std::int64_t index, ActivationReader activation_data, FilterReader filter_data) const {
    std::int64_t n, k, o, p, q;
    if (last_) {
      k = index % p_.k, index /= p_.k;
      q = index % out_.w, index /= out_.w;
      p = index % out_.h, index /= out_.h;
      o = index % out_.d, n = index / out_.d;
    } else {
      q = index % out_.w, index /= out_.w;
      p = index % out_.h, index /= out_.h;
      o = index % out_.d, index /= out_.d;
      k = index % p_.k, n = index / p_.k;
    }
    const std::int64_t first_channel = (k / kg_) * cg_;  // output channel k reads its group's input channels
    double sum = 0;
    for (std::int64_t t = 0; t < p_.filter.d; ++t) {
      const std::int64_t d = o * p_.stride.d - p_.padding.d + t * p_.dilation.d;
      if (d < 0 || d >= p_.input.d) continue;  // padding reads zero
      for (std::int64_t r = 0; r < p_.filter.h; ++r) {
        const std::int64_t h = p * p_.stride.h - p_.padding.h + r * p_.dilation.h;
        if (h < 0 || h >= p_.input.h) continue;
        for (std::int64_t s = 0; s < p_.filter.w; ++s) {
          const std::int64_t w = q * p_.stride.w - p_.padding.w + s * p_.dilation.w;
          if (w < 0 || w >= p_.input.w) continue;
          for (std::int64_t c = 0; c < cg_; ++c) {
            double x = activation_data(activation(n, first_channel + c, d, h, w));
            if (p_.relu_on_load && x < 0) x = 0;  // the problem convolves max(0, x)
            sum += x * filter_data(filter(k, c, t, r, s));
          }
        }
      }
    }
    return sum;
  }

 private:
  const Problem& p_;
  Dims3 out_;
  std::int64_t cg_, kg_;
  bool last_;
};

void check_inputs(const Problem& problem, std::int64_t activation_size, std::int64_t filter_size) {
  if (const std::string reason = validate(problem); !reason.empty())
    throw InputError(fmt::format("invalid problem {}: {}", problem_key(problem), reason));
  const auto check_size = [&](const char* what, std::int64_t size, std::int64_t expected) {
    if (size != expected)
      throw InputError(
          fmt::format("{} has {} elements, expected {} for {}", what, size, expected, problem_key(problem)));
  };
  check_size("activation", activation_size, activation_elements(problem));
  check_size("filter", filter_size, filter_elements(problem));
}

// splitmix64 (Steele, Lea, Flood 2014; the seeding generator of xoshiro): one 64-bit add and a fixed mix, so the
// stream is the same with every compiler and standard library.
std::uint64_t splitmix64(std::uint64_t& state) {
  std::uint64_t z = (state += 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

}  // namespace

namespace {

// Element readers: a double from element i of a float span or of a typed tensor.
struct FloatReader {
  const float* data;
  double operator()(std::int64_t i) const { return data[i]; }
};
struct TensorReader {
  const HostTensor* tensor;
  double operator()(std::int64_t i) const { return tensor->get(i); }
};

// Calls fn(reader) with the fastest reader of `tensor` (a plain pointer for fp32 data).
template <class Fn>
auto with_reader(const HostTensor& tensor, Fn fn) {
  if (tensor.type() == DataType::fp32)
    return fn(FloatReader{reinterpret_cast<const float*>(tensor.bytes().data())});
  return fn(TensorReader{&tensor});
}

template <class A, class F>
std::vector<double> conv_all(const Problem& problem, A activation, F filter) {
  const Indexer indexer(problem);
  const std::int64_t count = output_elements(problem);
  std::vector<double> output(static_cast<std::size_t>(count));
#pragma omp parallel for schedule(static)
  for (std::int64_t i = 0; i < count; ++i) output[i] = indexer.output(i, activation, filter);
  return output;
}

template <class A, class F>
std::vector<double> conv_at(const Problem& problem, A activation, F filter,
                            std::span<const std::int64_t> output_indices) {
  const std::int64_t count = output_elements(problem);
  for (std::int64_t index : output_indices)
    if (index < 0 || index >= count)
      throw InputError(
          fmt::format("output index {} is out of range [0, {}) for {}", index, count, problem_key(problem)));
  const Indexer indexer(problem);
  const auto samples = static_cast<std::int64_t>(output_indices.size());
  std::vector<double> output(output_indices.size());
#pragma omp parallel for schedule(static)
  for (std::int64_t i = 0; i < samples; ++i) output[i] = indexer.output(output_indices[i], activation, filter);
  return output;
}

std::int64_t ssize(std::span<const float> values) { return static_cast<std::int64_t>(values.size()); }

}  // namespace

std::vector<double> reference_conv(const Problem& problem, std::span<const float> activation,
                                   std::span<const float> filter) {
  check_inputs(problem, ssize(activation), ssize(filter));
  return conv_all(problem, FloatReader{activation.data()}, FloatReader{filter.data()});
}

std::vector<double> reference_conv(const Problem& problem, const HostTensor& activation, const HostTensor& filter) {
  check_inputs(problem, activation.size(), filter.size());
  return with_reader(activation, [&](auto a) {
    return with_reader(filter, [&](auto f) { return conv_all(problem, a, f); });
  });
}

std::vector<double> reference_conv_at(const Problem& problem, std::span<const float> activation,
                                      std::span<const float> filter, std::span<const std::int64_t> output_indices) {
  check_inputs(problem, ssize(activation), ssize(filter));
  return conv_at(problem, FloatReader{activation.data()}, FloatReader{filter.data()}, output_indices);
}

std::vector<double> reference_conv_at(const Problem& problem, const HostTensor& activation, const HostTensor& filter,
                                      std::span<const std::int64_t> output_indices) {
  check_inputs(problem, activation.size(), filter.size());
  return with_reader(activation, [&](auto a) {
    return with_reader(filter, [&](auto f) { return conv_at(problem, a, f, output_indices); });
  });
}

std::int64_t output_channel(const Problem& problem, std::int64_t index) {
  if (channels_last(problem.layout)) return index % problem.k;
  const Dims3 out = output_dims(problem);
  return index / (std::int64_t{out.d} * out.h * out.w) % problem.k;
}

double apply_epilogue(const Problem& problem, std::span<double> values, std::span<const std::int64_t> indices,
                      const HostTensor& bias, const HostTensor& residual) {
  const Epilogue& e = problem.epilogue;
  if (is_identity(e)) {
    double sum_sq = 0;
    for (const double v : values) sum_sq += v * v;
    return std::sqrt(sum_sq);
  }
  if (!indices.empty() && indices.size() != values.size())
    throw InputError(fmt::format("epilogue: {} values for {} output indices", values.size(), indices.size()));
  if (e.bias && bias.size() != problem.k)
    throw InputError(fmt::format("the epilogue's bias has {} elements, expected {} (K) for {}", bias.size(), problem.k,
                                 problem_key(problem)));
  if (reads_residual(e) && residual.size() != output_elements(problem))
    throw InputError(fmt::format("the epilogue's residual has {} elements, expected {} (the output's) for {}",
                                 residual.size(), output_elements(problem), problem_key(problem)));
  const auto count = static_cast<std::int64_t>(values.size());
  double pre_activation_sq = 0;
#pragma omp parallel for schedule(static) reduction(+ : pre_activation_sq)
  for (std::int64_t i = 0; i < count; ++i) {
    const std::int64_t index = indices.empty() ? i : indices[i];
    double v = e.alpha * values[i];
    if (reads_residual(e)) v += e.beta * static_cast<double>(residual.get(index));
    if (e.bias) v += static_cast<double>(bias.get(output_channel(problem, index)));
    pre_activation_sq += v * v;
    switch (e.act) {
      case Activation::none:
        break;
      case Activation::relu:
        v = std::max(v, 0.0);
        break;
      case Activation::relu6:
        v = std::clamp(v, 0.0, 6.0);
        break;
      case Activation::clip:
        v = std::clamp(v, e.clip_lo, e.clip_hi);
        break;
    }
    values[i] = v;
  }
  return std::sqrt(pre_activation_sq);
}

std::vector<std::int64_t> sample_output_indices(const Problem& problem, std::int64_t count, std::uint64_t seed) {
  if (count < 0) throw InputError(fmt::format("sample count must not be negative, got {}", count));
  const std::int64_t total = output_elements(problem);
  std::vector<std::int64_t> indices;
  if (total <= count) {
    indices.resize(static_cast<std::size_t>(total));
    for (std::int64_t i = 0; i < total; ++i) indices[i] = i;
    return indices;
  }
  // Floyd's algorithm: `count` distinct values from [0, total) in `count` draws. The modulo bias is below
  // total / 2^64, far too small to matter for picking samples.
  std::unordered_set<std::int64_t> chosen;
  chosen.reserve(static_cast<std::size_t>(count));
  std::uint64_t state = seed;
  for (std::int64_t j = total - count; j < total; ++j) {
    const auto pick = static_cast<std::int64_t>(splitmix64(state) % static_cast<std::uint64_t>(j + 1));
    chosen.insert(chosen.contains(pick) ? j : pick);
  }
  indices.assign(chosen.begin(), chosen.end());
  std::sort(indices.begin(), indices.end());
  return indices;
}

namespace {

// Accumulates the error of one output value against its reference.
struct ErrorAccumulator {
  double diff_sq = 0, ref_sq = 0, scale_l2 = 0;
  ErrorStats stats;

  void add(float out, double ref, std::int64_t index) {
    ++stats.compared;
    if (!std::isfinite(out)) {
      if (stats.nan_count++ == 0) stats.first_nan_index = index;
      return;
    }
    const double diff = double{out} - ref;
    diff_sq += diff * diff;
    ref_sq += ref * ref;
    if (std::abs(diff) > stats.max_abs || stats.max_abs_index < 0) {
      stats.max_abs = std::abs(diff);
      stats.max_abs_index = index;
    }
  }

  ErrorStats finish() {
    // An all-zero reference has no scale to be relative to: the absolute L2 error stands in.
    const double scale = std::max(std::sqrt(ref_sq), scale_l2);
    stats.rel_l2 = scale > 0 ? std::sqrt(diff_sq) / scale : std::sqrt(diff_sq);
    return stats;
  }
};

template <class Output>
ErrorStats compare_all(const Output& output, std::int64_t size, std::span<const double> reference, double scale_l2) {
  if (size != static_cast<std::int64_t>(reference.size()))
    throw InputError(fmt::format("output has {} elements, expected {} (the reference's)", size, reference.size()));
  ErrorAccumulator acc{.scale_l2 = scale_l2};
  for (std::int64_t i = 0; i < size; ++i) acc.add(output(i), reference[static_cast<std::size_t>(i)], i);
  return acc.finish();
}

template <class Output>
ErrorStats compare_at(const Output& output, std::int64_t size, std::span<const double> reference,
                      std::span<const std::int64_t> indices, double scale_l2) {
  if (indices.size() != reference.size())
    throw InputError(
        fmt::format("reference has {} values, expected one per index ({})", reference.size(), indices.size()));
  ErrorAccumulator acc{.scale_l2 = scale_l2};
  for (std::size_t i = 0; i < indices.size(); ++i) {
    const std::int64_t index = indices[i];
    if (index < 0 || index >= size)
      throw InputError(fmt::format("index {} is out of range for an output of {} elements", index, size));
    acc.add(output(index), reference[i], index);
  }
  return acc.finish();
}

}  // namespace

ErrorStats compare(std::span<const float> output, std::span<const double> reference, double scale_l2) {
  return compare_all([&](std::int64_t i) { return output[static_cast<std::size_t>(i)]; }, ssize(output), reference,
                     scale_l2);
}

ErrorStats compare(std::span<const float> output, std::span<const double> reference,
                   std::span<const std::int64_t> indices, double scale_l2) {
  return compare_at([&](std::int64_t i) { return output[static_cast<std::size_t>(i)]; }, ssize(output), reference,
                    indices, scale_l2);
}

ErrorStats compare(const HostTensor& output, std::span<const double> reference, double scale_l2) {
  return compare_all([&](std::int64_t i) { return output.get(i); }, output.size(), reference, scale_l2);
}

ErrorStats compare(const HostTensor& output, std::span<const double> reference, std::span<const std::int64_t> indices,
                   double scale_l2) {
  return compare_at([&](std::int64_t i) { return output.get(i); }, output.size(), reference, indices, scale_l2);
}

std::int64_t count_not_finite(const HostTensor& output) {
  std::int64_t count = 0;
  for (std::int64_t i = 0; i < output.size(); ++i) count += !std::isfinite(output.get(i));
  return count;
}

double error_limit(Precision precision) {
  switch (precision) {
    case Precision::fp32:
      return 1e-5;
    case Precision::tf32:
      return 2e-3;
    case Precision::fp16:
    case Precision::bf16:
      return 1e-2;
  }
  return 0;
}

bool passes(const ErrorStats& stats, Precision precision) {
  // Comparing nothing verifies nothing, so it does not pass.
  return stats.compared > 0 && stats.nan_count == 0 && stats.rel_l2 <= error_limit(precision);
}

float random_nonzero(std::uint64_t& state) {
  // Top 24 bits m give (2m + 1 - 2^24) / 2^24: odd numerators, so never zero, and exact in a float mantissa.
  const auto m = static_cast<std::int64_t>(splitmix64(state) >> 40);
  return static_cast<float>(static_cast<double>(2 * m + 1 - (std::int64_t{1} << 24)) / 16777216.0);
}

std::uint64_t random_bits(std::uint64_t& state) { return splitmix64(state); }

void fill_random(std::span<float> data, std::uint64_t seed) {
  std::uint64_t state = seed;
  for (float& value : data) value = random_nonzero(state);
}

void fill_random(HostTensor& data, std::uint64_t seed) {
  std::uint64_t state = seed;
  for (std::int64_t i = 0; i < data.size(); ++i) data.set(i, random_nonzero(state));
}

}  // namespace convgen
