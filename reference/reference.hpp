// reference: the float64 CPU convolution every kernel is verified against, and the error measures.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "convgen/problem.hpp"
#include "reference/host_tensor.hpp"

namespace convgen {

// Computes the forward convolution (cross-correlation) in float64, OpenMP-parallel, for any valid problem, in the
// problem's layout: activation N C D H W (or N D H W C), filter K C/g T R S (or K T R S C/g), output N K O P Q (or
// N O P Q K). Throws InputError when the problem is invalid or a span's size does not match it.
//   auto out = reference_conv(problem, activation, filter);  // out.size() == output_elements(problem)
std::vector<double> reference_conv(const Problem& problem, std::span<const float> activation,
                                   std::span<const float> filter);
// The same from typed tensors of any element type (each may differ from the other and from the problem's).
std::vector<double> reference_conv(const Problem& problem, const HostTensor& activation, const HostTensor& filter);

// Computes only the outputs at `output_indices` (flat indices in the problem's output layout), in that order, for
// shapes too large to compute whole. Throws InputError for an index outside the output.
std::vector<double> reference_conv_at(const Problem& problem, std::span<const float> activation,
                                      std::span<const float> filter, std::span<const std::int64_t> output_indices);
std::vector<double> reference_conv_at(const Problem& problem, const HostTensor& activation, const HostTensor& filter,
                                      std::span<const std::int64_t> output_indices);

// Applies the problem's epilogue, act(alpha * conv + beta * residual + bias[k]), in float64 to conv values: values[i]
// is the conv at output index indices[i], or at i when `indices` is empty (every output). `bias` (K elements) and
// `residual` (the output's) are read only when the epilogue uses them and may be empty otherwise. Throws InputError
// when a tensor the epilogue reads has the wrong size. Returns the L2 norm of the values before the activation
// (alpha * conv + beta * residual + bias; the values' own norm when the epilogue is the identity): the scale a
// saturating activation's output error is measured against (compare's `scale_l2`).
//   auto out = reference_conv(p, a, f);
//   apply_epilogue(p, out, {}, bias, residual);
double apply_epilogue(const Problem& problem, std::span<double> values, std::span<const std::int64_t> indices,
                      const HostTensor& bias, const HostTensor& residual);

// Returns the output channel k of a flat output index in the problem's layout.
std::int64_t output_channel(const Problem& problem, std::int64_t index);

// Picks `count` distinct output indices, sorted, deterministic per seed; all indices when the output has no more
// than `count` elements.
std::vector<std::int64_t> sample_output_indices(const Problem& problem, std::int64_t count, std::uint64_t seed);

// How far a result is from the reference.
struct ErrorStats {
  double rel_l2 = 0;           // ||out - ref|| / max(||ref||, scale_l2), or ||out - ref|| when both are zero
  double max_abs = 0;          // max |out - ref| over the finite outputs
  std::int64_t nan_count = 0;  // outputs that are NaN or infinite
  std::int64_t compared = 0;
  std::int64_t max_abs_index = -1;    // flat output index of max_abs (-1: no finite output compared)
  std::int64_t first_nan_index = -1;  // flat output index of the first NaN or Inf compared (-1: none)
};

// Compares `output` with the reference values, element by element; the sizes must match. `scale_l2`, where larger
// than the reference's own norm, is the norm the error is relative to: the norm of the values before a saturating
// activation (relu, relu6, clip; apply_epilogue returns it). Those activations are 1-Lipschitz, so they cannot
// enlarge an error, but clipping shrinks the norm it would be relative to: fp32's rounding of a large sum before a
// clip to [-0.5, 0.5] is no larger an error than the same sum unclipped.
ErrorStats compare(std::span<const float> output, std::span<const double> reference, double scale_l2 = 0);

// Compares the whole `output` at `indices` with `reference`, which holds the reference values at those indices
// (as reference_conv_at returns them).
ErrorStats compare(std::span<const float> output, std::span<const double> reference,
                   std::span<const std::int64_t> indices, double scale_l2 = 0);

// The same for an output of any element type.
ErrorStats compare(const HostTensor& output, std::span<const double> reference, double scale_l2 = 0);
ErrorStats compare(const HostTensor& output, std::span<const double> reference, std::span<const std::int64_t> indices,
                   double scale_l2 = 0);

// Returns the number of NaN or infinite values in `output`.
std::int64_t count_not_finite(const HostTensor& output);

// Returns the relative L2 limit for a precision (DESIGN.md: fp32 1e-5, tf32 2e-3, fp16/bf16 1e-2).
double error_limit(Precision precision);

// True when the stats pass: something was compared, no NaN or Inf, and rel_l2 within the limit.
bool passes(const ErrorStats& stats, Precision precision);

// Fills `data` with uniform random values in (-1, 1) from `seed`: splitmix64, 24 bits per value mapped to the odd
// multiples of 2^-24, so every value is exact in fp32, never zero, and the same on every platform.
void fill_random(std::span<float> data, std::uint64_t seed);
// The same values, rounded to the tensor's type (never to zero: 2^-24 is an fp16 subnormal, and bf16 has fp32's range).
void fill_random(HostTensor& data, std::uint64_t seed);

// The generator behind fill_random, for the input generators (reference/inputs): one splitmix64 step, and one value
// of fill_random's distribution.
std::uint64_t random_bits(std::uint64_t& state);
float random_nonzero(std::uint64_t& state);

}  // namespace convgen
