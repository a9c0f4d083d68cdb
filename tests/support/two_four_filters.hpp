// two_four_filters: the 2:4 filters the GPU tests of the 2:4 kernels (sparse24_tc, igemm_wgmma's `sp`) verify with:
// pruned from seeded random values to 2:4, with every odd output channel zero as well, or all zero; the network
// problems they verify every configuration on; and the inputs (each problem's own filter).
#pragma once

#include <cstdint>
#include <utility>
#include <vector>

#include "convgen/weights.hpp"
#include "generator/shapes.hpp"
#include "measure/verify.hpp"
#include "reference/inputs.hpp"
#include "reference/pruning.hpp"
#include "support/corpus.hpp"

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

// The cuSNN layers in fp16 channels-last at batch 8, and the first and last in bf16 at batch 1 in `bf16_layout`, each
// with a 2:4 filter (seeds from 100).
inline std::vector<Problem> two_four_network_problems(Layout bf16_layout) {
  std::vector<Problem> problems;
  std::uint64_t seed = 100;
  const Suite cusnn = load_suite(source_dir() / "shapes" / "cusnn.csv");
  for (const Layer& layer : cusnn.layers) {
    Problem p = layer.problem;
    p.n = 8;
    problems.push_back(with_two_four_filter(p, Precision::fp16, Layout::nhwc, FilterKind::two_four, seed++));
  }
  for (const Layer& layer : {cusnn.layers.front(), cusnn.layers.back()})
    problems.push_back(with_two_four_filter(layer.problem, Precision::bf16, bf16_layout, FilterKind::two_four, seed++));
  return problems;
}

// A measurement's inputs: dense random activations and the problem's own filter.
inline ConvInputs own_filter_inputs(const Problem& p, std::uint64_t seed) {
  return ConvInputs{.activation = DenseRandom{}, .filter = expected_filter(p), .seed = seed};
}

}  // namespace convgen::testing_support
