// pruning: magnitude pruning per output channel of a seeded random filter.
#include "reference/pruning.hpp"

#include <algorithm>
#include <cmath>
#include <numeric>

#include <fmt/format.h>

#include "convgen/error.hpp"
#include "reference/inputs.hpp"

namespace convgen {

std::vector<float> pruned_random_filter(const Problem& p, double zero_fraction, std::uint64_t seed) {
  if (!(zero_fraction >= 0 && zero_fraction <= 1))
    throw InputError(fmt::format("weight sparsity {} is not a zero fraction in [0, 1]", zero_fraction));
  Problem fp32 = p;
  fp32.precision = Precision::fp32;
  fp32.weights = {};
  const HostTensor dense = make_tensor(fp32, TensorRole::filter, DenseRandom{}, seed);
  std::vector<float> values(static_cast<std::size_t>(dense.size()));
  for (std::size_t i = 0; i < values.size(); ++i) values[i] = dense.get(static_cast<std::int64_t>(i));
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

}  // namespace convgen
