// two_four_filters: the 2:4 filters the GPU tests of the 2:4 kernels (sparse24_tc, igemm_wgmma's `sp`) verify with:
// pruned from seeded random values to 2:4, with every odd output channel zero as well, or all zero.
#pragma once

#include <cstdint>
#include <utility>
#include <vector>

#include "convgen/weights.hpp"
#include "reference/pruning.hpp"

namespace convgen::testing_support {

enum class FilterKind { two_four, odd_channels_zero, all_zero };

// `p` in `precision` and `layout`, carrying a 2:4 filter of `kind` drawn from `seed`.
inline Problem with_two_four_filter(Problem p, Precision precision, Layout layout, FilterKind kind,
                                    std::uint64_t seed) {
  p.precision = precision;
  p.layout = layout;
  std::vector<float> values = two_four_pruned_random_filter(p, seed);
  const std::size_t per_k = values.size() / static_cast<std::size_t>(p.k);
  for (std::size_t i = 0; i < values.size(); ++i)
    if (kind == FilterKind::all_zero || (kind == FilterKind::odd_channels_zero && (i / per_k) % 2 == 1))
      values[i] = 0.0f;
  return with_weights(p, std::move(values));
}

inline const char* name_of(FilterKind kind) {
  switch (kind) {
    case FilterKind::two_four:
      return "2:4";
    case FilterKind::odd_channels_zero:
      return "2:4, odd channels zero";
    case FilterKind::all_zero:
      return "all zero";
  }
  return "?";
}

}  // namespace convgen::testing_support
