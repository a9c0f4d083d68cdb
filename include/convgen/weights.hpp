// weights: a problem's own filter — its shape in the problem's layout, its nonzero pattern's hash, attaching
// values to a problem (checked), and its zeros.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "convgen/problem.hpp"

namespace convgen {

// The filter's dimensions in its memory layout, outermost first, and their names: K C T R S for channels-first
// layouts (K R S C / K T R S C for channels-last), C per group, without the unit dims of the rank
// (2-D NCHW: K C R S; 1-D NCW: K C S).
struct FilterShape {
  std::vector<std::int64_t> dims;
  std::vector<char> names;  // 'K', 'C', 'T', 'R', 'S'
};
FilterShape filter_shape(const Problem& p);

// "(64, 64, 3, 3) (K, C, R, S)".
std::string describe(const FilterShape& shape);

// Returns 16 hex digits hashing the filter's shape and the positions of its nonzero values (not the values):
// filters with the same pattern share kernels that bake the pattern. `values` has filter_elements(p) elements.
std::string weight_pattern_hash(const Problem& p, std::span<const float> values);

// Returns `p` carrying `values` as its filter (pattern hashed). Throws InputError, prefixed by `source` (a file
// name, or "filter"), when the count is not filter_elements(p) or a value is NaN or infinite (naming its index
// and coordinates).
Problem with_weights(const Problem& p, std::vector<float> values, const std::string& source = "filter");

// Fraction of the problem's filter values that are exactly zero (0 without values).
double weight_zero_fraction(const Problem& p);

// Whether the problem's filter is 2:4 structured-sparse, as mma.sp takes it: in each output channel's row of the
// filter (its C/g x T x R x S values in memory order) every chunk of 4 consecutive values from the row's start, a
// shorter last one too, holds at most 2 nonzeros. False when the problem carries no filter values.
bool is_two_four_sparse(const Problem& p);

}  // namespace convgen
