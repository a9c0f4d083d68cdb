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

}  // namespace convgen
