// random_problems: a seeded generator of random valid convolution problems for the stress test (`convgen stress`),
// the same on every machine and standard library for the same seed, index and options.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "convgen/problem.hpp"

namespace convgen {

// What the generator draws from. The sizes are bounded by max_macs: the float64 reference of every problem stays
// cheap (2^24 multiply-adds take about 20 ms on one core).
struct RandomProblemOptions {
  std::vector<int> ranks{2, 3};                        // spatial dims: 1, 2 and/or 3
  std::vector<Precision> precisions{Precision::fp32};  // each problem takes one, uniformly
  std::int64_t max_macs = std::int64_t{1} << 24;       // multiply-adds of one problem (macs()); at least 4096
  double act_sparse_share = 0.2;                       // problems that expect zeros in their activation (50, 70 or 90%)
  double weight_sparse_share = 0.15;  // problems verified on a pruned filter of their own (50, 80 or 95% zeros)
  double epilogue_share = 0.25;       // problems with a fused epilogue (bias, residual, activation)
  // Of the problems that expect zeros: those whose input comes before its ReLU, which the kernel applies on load
  // (relu_on_load; served by the families that apply it, where they serve the shape).
  double relu_on_load_share = 0.3;
  bool operator==(const RandomProblemOptions&) const = default;
};

// One generated problem. It carries no filter of its own: where weight_sparsity is not 0 the caller attaches
//   with_weights(problem, two_four ? two_four_pruned_random_filter(problem, seed)
//                                  : pruned_random_filter(problem, weight_sparsity, seed))
// (reference/pruning.hpp; the generator knows no tensors). In fp16 and bf16 the 50% draw is 2:4 (two_four): the
// structure sparse24_tc serves, so that a stress run in those precisions reaches it.
struct RandomProblem {
  int index = 0;           // its place in the sequence
  std::uint64_t seed = 0;  // its own seed (from the sequence's seed and the index): for its inputs and filter
  Problem problem;
  double weight_sparsity = 0;
  bool two_four = false;  // the filter pruned 2:4 (weight_sparsity 0.5)
  bool operator==(const RandomProblem&) const = default;
};

// Returns problem `index` of the sequence that `seed` starts: valid (convgen::validate), within options.max_macs,
// drawn with std::mt19937_64 and the generator's own mappings to ranges (the standard distributions differ between
// standard libraries). Problem i does not depend on the count: `--count 40` is the first 40 of `--count 2000`.
// Throws InputError for options it cannot serve (no rank, a rank outside 1..3, no precision, max_macs below 4096,
// a share outside [0, 1]).
//   RandomProblem p = random_problem(1, 17, {.ranks = {3}});
RandomProblem random_problem(std::uint64_t seed, int index, const RandomProblemOptions& options = {});

// Returns problems 0 .. count - 1 of the sequence.
std::vector<RandomProblem> random_problems(std::uint64_t seed, int count, const RandomProblemOptions& options = {});

// Returns the multiply-adds of the float64 reference: output elements x C/groups x T x R x S.
std::int64_t macs(const Problem& p);

// Returns the problem's buckets on the stress test's coverage axes, as (axis, bucket) pairs in a fixed order of
// axes: dims ("2-D"), layout, filter ("1x1", "square", "non-square"), filter extent (one pair for each distinct
// extent of the problem's dims: "1" .. "7"), stride and dilation ("1", "2", "3" or "mixed"), padding ("none", "at
// most stride", "beyond stride"), groups ("dense", "grouped", "depthwise"), precision, batch ("1", "2-4", "5-16",
// "17+"), C/g and K/g ("1", "2-4", "5-16", "17-64", "65+"), MACs ("< 2^16", "2^16-2^20", "2^20-2^22", ">= 2^22"),
// activation zeros and filter zeros ("0%", "50%" ..., "2:4") and epilogue (one pair for each of its terms: "alpha",
// "bias", "add", then the activation; or "none").
//   coverage_buckets(p) -> {{"dims", "3-D"}, {"layout", "ndhwc"}, {"filter", "non-square"}, {"filter extent", "1"},
//   ...}
std::vector<std::pair<std::string_view, std::string>> coverage_buckets(const RandomProblem& p);

// One coverage axis and every bucket coverage_buckets may put a problem in, in display order.
struct CoverageAxis {
  std::string_view axis;
  std::vector<std::string> buckets;
};

// Returns the axes of coverage_buckets in its order, each with all of its buckets (precision: all four; dims and
// layout: those of all three ranks).
const std::vector<CoverageAxis>& coverage_axes();

}  // namespace convgen
