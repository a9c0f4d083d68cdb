// inputs: dense, sparse (uniform, channel, blob) and given input tensors, and the identity of their data.
#include "reference/inputs.hpp"

#include <algorithm>
#include <cmath>
#include <vector>

#include <fmt/format.h>

#include "convgen/hash.hpp"

#include "convgen/error.hpp"
#include "reference/reference.hpp"

namespace convgen {
namespace {

// A tensor seen as channels: `outer` (N or K) x `channels` (C or C/g) planes of d x h x w, in the problem's layout.
struct Planes {
  std::int64_t outer = 1, channels = 1;
  Dims3 dims;
  bool last = false;

  std::int64_t spatial() const { return std::int64_t{dims.d} * dims.h * dims.w; }
  std::int64_t index(std::int64_t o, std::int64_t ch, std::int64_t s) const {
    return last ? (o * spatial() + s) * channels + ch : (o * channels + ch) * spatial() + s;
  }
};

Planes planes_of(const Problem& p, TensorRole role) {
  if (role == TensorRole::activation)
    return {.outer = p.n, .channels = p.c, .dims = p.input, .last = channels_last(p.layout)};
  return {.outer = p.k, .channels = c_per_group(p), .dims = p.filter, .last = channels_last(p.layout)};
}

// Seeds of the zero positions and of the blob field: streams apart from the values' (which stay the dense ones).
constexpr std::uint64_t kMaskStream = 0x6a09e667f3bcc909ull;
constexpr std::uint64_t kBiasStream = 0xbb67ae8584caa73bull;

double unit_random(std::uint64_t& state) {  // [0, 1)
  return static_cast<double>(random_bits(state) >> 11) * 0x1p-53;
}

// Marks exactly `chosen` of `total` items, uniformly (Knuth's selection sampling, Algorithm S), calling mark(i).
template <class Mark>
void select_exactly(std::int64_t total, std::int64_t chosen, std::uint64_t& state, Mark mark) {
  std::int64_t taken = 0;
  for (std::int64_t i = 0; i < total && taken < chosen; ++i) {
    if (static_cast<double>(total - i) * unit_random(state) < static_cast<double>(chosen - taken)) {
      mark(i);
      ++taken;
    }
  }
}

// Averages over a window of `radius` either side along one axis (the window clipped at the edges).
void box_blur(std::vector<double>& field, const Dims3& dims, int axis, int radius) {
  const std::int64_t extent = axis == 0 ? dims.d : axis == 1 ? dims.h : dims.w;
  if (extent <= 1 || radius <= 0) return;
  const std::int64_t stride = axis == 0 ? std::int64_t{dims.h} * dims.w : axis == 1 ? dims.w : 1;
  const std::int64_t lines = static_cast<std::int64_t>(field.size()) / extent;
  std::vector<double> prefix(static_cast<std::size_t>(extent) + 1);
  for (std::int64_t line = 0; line < lines; ++line) {
    // The line's first element: the index with this axis at 0.
    const std::int64_t base = (line / stride) * stride * extent + line % stride;
    prefix[0] = 0;
    for (std::int64_t i = 0; i < extent; ++i) prefix[i + 1] = prefix[i] + field[base + i * stride];
    for (std::int64_t i = 0; i < extent; ++i) {
      const std::int64_t lo = std::max<std::int64_t>(0, i - radius), hi = std::min(extent - 1, i + radius);
      field[base + i * stride] = (prefix[hi + 1] - prefix[lo]) / static_cast<double>(hi - lo + 1);
    }
  }
}

int blur_radius(int extent) { return std::max(1, extent / 16); }

// The blob field of every element: per plane, uniform noise box-blurred twice along each axis (close to a Gaussian
// blur), standardized, plus the channel's bias.
std::vector<double> blob_field(const Planes& planes, std::int64_t size, std::uint64_t seed) {
  std::vector<double> values(static_cast<std::size_t>(size));
  std::uint64_t bias_state = seed ^ kBiasStream;
  std::vector<double> bias(static_cast<std::size_t>(planes.channels));
  for (double& b : bias) b = 2 * unit_random(bias_state) - 1;
  std::uint64_t state = seed ^ kMaskStream;
  std::vector<double> field(static_cast<std::size_t>(planes.spatial()));
  for (std::int64_t o = 0; o < planes.outer; ++o) {
    for (std::int64_t ch = 0; ch < planes.channels; ++ch) {
      for (double& x : field) x = 2 * unit_random(state) - 1;
      for (int pass = 0; pass < 2; ++pass) {
        box_blur(field, planes.dims, 0, blur_radius(planes.dims.d));
        box_blur(field, planes.dims, 1, blur_radius(planes.dims.h));
        box_blur(field, planes.dims, 2, blur_radius(planes.dims.w));
      }
      double mean = 0, sq = 0;
      for (double x : field) mean += x;
      mean /= static_cast<double>(field.size());
      for (double x : field) sq += (x - mean) * (x - mean);
      const double sd = std::sqrt(sq / static_cast<double>(field.size()));
      for (std::int64_t s = 0; s < planes.spatial(); ++s) {
        const double z = sd > 0 ? (field[static_cast<std::size_t>(s)] - mean) / sd : 0;
        values[static_cast<std::size_t>(planes.index(o, ch, s))] = z + bias[static_cast<std::size_t>(ch)];
      }
    }
  }
  return values;
}

void zero_by_pattern(HostTensor& tensor, const Planes& planes, const SparseRandom& sparse, std::uint64_t seed) {
  const std::int64_t size = tensor.size();
  std::uint64_t state = seed ^ kMaskStream;
  switch (sparse.pattern) {
    case SparsityPattern::uniform: {
      const auto zeros = static_cast<std::int64_t>(std::llround(sparse.zero_fraction * static_cast<double>(size)));
      select_exactly(size, zeros, state, [&](std::int64_t i) { tensor.set(i, 0.0f); });
      return;
    }
    case SparsityPattern::channel: {
      const std::int64_t count = planes.outer * planes.channels;
      const auto zeros = static_cast<std::int64_t>(std::llround(sparse.zero_fraction * static_cast<double>(count)));
      select_exactly(count, zeros, state, [&](std::int64_t plane) {
        for (std::int64_t s = 0; s < planes.spatial(); ++s)
          tensor.set(planes.index(plane / planes.channels, plane % planes.channels, s), 0.0f);
      });
      return;
    }
    case SparsityPattern::blob: {
      const auto zeros = static_cast<std::int64_t>(std::llround(sparse.zero_fraction * static_cast<double>(size)));
      if (zeros == 0) return;
      const std::vector<double> values = blob_field(planes, size, seed);
      if (zeros >= size) {
        for (std::int64_t i = 0; i < size; ++i) tensor.set(i, 0.0f);
        return;
      }
      std::vector<double> sorted = values;
      std::nth_element(sorted.begin(), sorted.begin() + zeros, sorted.end());
      const double threshold = sorted[static_cast<std::size_t>(zeros)];  // the ReLU's: below it, zero
      for (std::int64_t i = 0; i < size; ++i)
        if (values[static_cast<std::size_t>(i)] < threshold) tensor.set(i, 0.0f);
      return;
    }
  }
}


std::string canonical(const TensorSource& source, std::uint64_t seed) {
  if (std::holds_alternative<DenseRandom>(source)) return fmt::format("dense;seed={}", seed);
  if (const auto* sparse = std::get_if<SparseRandom>(&source))
    return fmt::format("sparse;{};{:.17g};seed={}", sparse->pattern, sparse->zero_fraction, seed);
  return "given";
}

}  // namespace

TensorSource expected_activation(const Problem& p, SparsityPattern pattern) {
  if (p.act_sparsity == 0) return DenseRandom{};
  return SparseRandom{pattern, p.act_sparsity};
}

TensorSource expected_filter(const Problem& p) {
  if (p.weights.pattern.empty()) return DenseRandom{};
  if (!p.weights.values)
    throw InputError(fmt::format("problem {} carries filter pattern {} but not its values: give the filter "
                                 "(--weights DIR, --weight-sparsity, or with_weights)",
                                 problem_key(p), p.weights.pattern));
  return GivenTensor{std::make_shared<const HostTensor>(HostTensor::from_floats(storage_type(p.precision), *p.weights.values))};
}

ConvInputs expected_inputs(const Problem& p, SparsityPattern pattern, std::uint64_t seed) {
  return {.activation = expected_activation(p, pattern), .filter = expected_filter(p), .seed = seed};
}

std::uint64_t tensor_seed(TensorRole role, std::uint64_t seed) {
  switch (role) {
    case TensorRole::filter:
      return seed ^ 0x9e3779b97f4a7c15ull;
    case TensorRole::bias:
      return seed ^ 0xc2b2ae3d27d4eb4full;
    case TensorRole::residual:
      return seed ^ 0x165667b19e3779f9ull;
    default:
      return seed;
  }
}

HostTensor make_tensor(const Problem& p, TensorRole role, const TensorSource& source, std::uint64_t seed) {
  if (role == TensorRole::output) throw InputError("inputs are the activation and the filter, not the output");
  const DataType type = storage_type(p.precision);
  if (const auto* given = std::get_if<GivenTensor>(&source)) {
    if (!given->tensor) throw InputError(fmt::format("the given {} is empty", role));
    const std::int64_t expected = tensor_elements(p, role);
    if (given->tensor->size() != expected)
      throw InputError(fmt::format("the given {} has {} elements, expected {} for {}", role, given->tensor->size(),
                                   expected, problem_key(p)));
    return given->tensor->converted(type);
  }
  HostTensor tensor = HostTensor::for_problem(p, role);
  fill_random(tensor, seed);
  const bool before_relu = p.relu_on_load && role == TensorRole::activation;
  const HostTensor dense = before_relu ? tensor : HostTensor{};
  if (const auto* sparse = std::get_if<SparseRandom>(&source)) {
    if (!(sparse->zero_fraction >= 0 && sparse->zero_fraction <= 1))
      throw InputError(fmt::format("zero fraction must be in [0, 1], got {}", sparse->zero_fraction));
    zero_by_pattern(tensor, planes_of(p, role), *sparse, seed);
  }
  // An activation the kernel passes through max(0, x) as it loads it (relu_on_load) is the producer's output before
  // its ReLU: negative where the ReLU will leave a zero, positive elsewhere, so the zero fraction the kernel sees is
  // the source's.
  if (before_relu)
    for (std::int64_t i = 0; i < tensor.size(); ++i) {
      const float v = tensor.get(i);
      tensor.set(i, v == 0 ? -std::fabs(dense.get(i)) : std::fabs(v));
    }
  return tensor;
}

InputTensors make_inputs(const Problem& p, const ConvInputs& inputs) {
  InputTensors out{
      .activation =
          make_tensor(p, TensorRole::activation, inputs.activation, tensor_seed(TensorRole::activation, inputs.seed)),
      .filter = make_tensor(p, TensorRole::filter, inputs.filter, tensor_seed(TensorRole::filter, inputs.seed))};
  if (p.epilogue.bias)
    out.bias = make_tensor(p, TensorRole::bias, DenseRandom{}, tensor_seed(TensorRole::bias, inputs.seed));
  if (reads_residual(p.epilogue))
    out.residual = make_tensor(p, TensorRole::residual, DenseRandom{}, tensor_seed(TensorRole::residual, inputs.seed));
  return out;
}

std::string data_identity(const TensorSource& source, std::uint64_t seed) {
  const std::string text = canonical(source, seed);
  std::uint64_t hash = fnv1a(kFnvBasis, text.data(), text.size());
  if (const auto* given = std::get_if<GivenTensor>(&source); given && given->tensor) {
    const std::string type(to_string(given->tensor->type()));
    hash = fnv1a(hash, type.data(), type.size());
    hash = fnv1a(hash, given->tensor->bytes().data(), given->tensor->size_bytes());
  }
  return fmt::format("{:016x}", hash);
}

std::string data_identity(const ConvInputs& inputs) {
  const std::string text = data_identity(inputs.activation, tensor_seed(TensorRole::activation, inputs.seed)) + ";" +
                           data_identity(inputs.filter, tensor_seed(TensorRole::filter, inputs.seed));
  return fmt::format("{:016x}", fnv1a(kFnvBasis, text.data(), text.size()));
}

std::string data_key(const Problem& p, std::string_view identity) {
  return fmt::format("{}_data{}", problem_key(p), identity);
}

std::string describe(const TensorSource& source) {
  if (std::holds_alternative<DenseRandom>(source)) return "dense random";
  if (const auto* sparse = std::get_if<SparseRandom>(&source))
    return fmt::format("{} sparse, {:g}% zeros", sparse->pattern, sparse->zero_fraction * 100);
  const auto& given = std::get<GivenTensor>(source);
  return given.tensor ? fmt::format("given {} tensor", given.tensor->type()) : "given tensor (empty)";
}

double zero_fraction(const HostTensor& tensor) {
  if (tensor.size() == 0) return 0;
  std::int64_t zeros = 0;
  for (std::int64_t i = 0; i < tensor.size(); ++i) zeros += tensor.get(i) == 0.0f;
  return static_cast<double>(zeros) / static_cast<double>(tensor.size());
}

double loaded_zero_fraction(const Problem& p, const HostTensor& activation) {
  if (!p.relu_on_load) return zero_fraction(activation);
  if (activation.size() == 0) return 0;
  std::int64_t zeros = 0;
  for (std::int64_t i = 0; i < activation.size(); ++i) zeros += !(activation.get(i) > 0.0f);
  return static_cast<double>(zeros) / static_cast<double>(activation.size());
}

}  // namespace convgen
