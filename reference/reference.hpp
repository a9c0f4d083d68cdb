// reference: the float64 CPU convolution every kernel is verified against, and the error measures.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "convgen/problem.hpp"

namespace convgen {

// Computes the forward convolution in float64 (OpenMP-parallel) for any valid problem, in the problem's
// layout: activation N C D H W (or channels-last), filter K C/g T R S (or K T R S C/g), output N K O P Q.
// Throws InputError when a span's size does not match the problem.
std::vector<double> reference_conv(const Problem& problem, std::span<const float> activation,
                                   std::span<const float> filter);

// Same, for `samples` output indices only (for shapes too large to compute whole).
std::vector<double> reference_conv_at(const Problem& problem, std::span<const float> activation,
                                      std::span<const float> filter, std::span<const std::int64_t> output_indices);

// How far a result is from the reference.
struct ErrorStats {
  double rel_l2 = 0;        // ||out - ref|| / ||ref||
  double max_abs = 0;       // max |out - ref|
  std::int64_t nan_count = 0;
  std::int64_t compared = 0;
};

// Compares `output` (all outputs, or those at `indices` when given) with the reference values.
ErrorStats compare(std::span<const float> output, std::span<const double> reference);

// Returns the relative L2 limit for a precision (DESIGN.md: fp32 1e-5, tf32 2e-3, fp16/bf16 1e-2).
double error_limit(Precision precision);

// True when the stats pass: no NaN and rel_l2 within the limit.
bool passes(const ErrorStats& stats, Precision precision);

// Fills `data` with uniform random values in [-1, 1) from `seed` (never all zeros).
void fill_random(std::span<float> data, std::uint64_t seed);

}  // namespace convgen
