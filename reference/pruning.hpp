// pruning: reproducible pruned filters for tests and benchmarks (`--weight-sparsity 0.9 --seed N`).
#pragma once

#include <cstdint>
#include <vector>

#include "convgen/problem.hpp"

namespace convgen {

// Returns seeded random fp32 values for p's filter (the dense random filter make_tensor gives for `seed`),
// magnitude-pruned per output channel: in each of the K filters, the round(zero_fraction x C/g x T x R x S) values
// of smallest magnitude become zero (ties broken by position), so every output channel has the same sparsity.
// Throws InputError for a fraction outside [0, 1].
//   Problem pruned = with_weights(p, pruned_random_filter(p, 0.9, 1));
std::vector<float> pruned_random_filter(const Problem& p, double zero_fraction, std::uint64_t seed);

// Returns the same seeded random values pruned to 2:4 (`--weight-sparsity 2:4`): in each output channel's row (its
// C/g x T x R x S values in memory order), every chunk of 4 consecutive values from the row's start keeps its 2 of
// largest magnitude (ties broken by position), a shorter last chunk at most 2; is_two_four_sparse holds for them.
std::vector<float> two_four_pruned_random_filter(const Problem& p, std::uint64_t seed);

}  // namespace convgen
