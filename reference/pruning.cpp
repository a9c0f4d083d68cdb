// pruning: magnitude pruning per output channel of a seeded random filter.
#include "reference/pruning.hpp"

#include <algorithm>
#include <cmath>
#include <numeric>

#include <fmt/format.h>

#include "convgen/error.hpp"
#include "reference/inputs.hpp"

namespace convgen {

namespace {

// The dense seeded random filter both prunings start from, as fp32 values in the problem's filter layout.
std::vector<float> dense_random_filter(const Problem& p, std::uint64_t seed) {
  Problem fp32 = p;
  fp32.precision = Precision::fp32;
  fp32.weights = {};
  const HostTensor dense = make_tensor(fp32, TensorRole::filter, DenseRandom{}, seed);
  std::vector<float> values(static_cast<std::size_t>(dense.size()));
  for (std::size_t i = 0; i < values.size(); ++i) values[i] = dense.get(static_cast<std::int64_t>(i));
  return values;
}

}  // namespace

std::vector<float> pruned_random_filter(const Problem& p, double zero_fraction, std::uint64_t seed) {
  if (!(zero_fraction >= 0 && zero_fraction <= 1))
    throw InputError(fmt::format("weight sparsity {} is not a zero fraction in [0, 1]", zero_fraction));
  std::vector<float> values = dense_random_filter(p, seed);
  // K is the outermost dim of the filter in every layout: each output channel's values are contiguous.
  const std::size_t per_k = values.size() / static_cast<std::size_t>(p.k);
  const auto pruned = static_cast<std::size_t>(std::llround(zero_fraction * static_cast<double>(per_k)));
  std::vector<std::size_t> order(per_k);
  for (std::size_t k = 0; k < static_cast<std::size_t>(p.k); ++k) {
    float* filter = values.data() + k * per_k;
    std::iota(order.begin(), order.end(), std::size_t{0});
    std::stable_sort(order.begin(), order.end(),
                     [&](std::size_t a, std::size_t b) { return std::fabs(filter[a]) < std::fabs(filter[b]); });
    for (std::size_t i = 0; i < pruned; ++i) filter[order[i]] = 0.0f;
  }
  return values;
}

std::vector<float> two_four_pruned_random_filter(const Problem& p, std::uint64_t seed) {
  std::vector<float> values = dense_random_filter(p, seed);
  const std::size_t row = values.size() / static_cast<std::size_t>(p.k);
  for (std::size_t start = 0; start < values.size(); start += row)
    for (std::size_t chunk = 0; chunk < row; chunk += 4) {
      float* v = values.data() + start + chunk;
      const std::size_t size = std::min<std::size_t>(4, row - chunk);
      if (size <= 2) continue;
      std::size_t order[4] = {0, 1, 2, 3};
      std::stable_sort(order, order + size,
                       [&](std::size_t a, std::size_t b) { return std::fabs(v[a]) < std::fabs(v[b]); });
      for (std::size_t i = 0; i + 2 < size; ++i) v[order[i]] = 0.0f;
    }
  return values;
}

}  // namespace convgen
