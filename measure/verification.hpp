// verification: what the benchmark and the tuner share to check a launch against the float64 reference before
// its time counts: the reference outputs, the tensors of one call, and one poisoned run compared.
#pragma once

#include <cstdint>
#include <functional>
#include <span>
#include <vector>

#include <cuda.h>

#include "convgen/problem.hpp"
#include "reference/reference.hpp"
#include "runtime/module.hpp"

namespace convgen {

// One buffer set: the three tensors of one call.
struct BufferSet {
  DeviceBuffer activation, filter, output;
};

// Returns `count` buffer sets for `p`, each holding the same activation and filter (the output is left as is).
std::vector<BufferSet> make_buffer_sets(const Problem& p, int count, std::span<const float> activation,
                                        std::span<const float> filter);

// The float64 reference of one layer: every output, or a sample of them for large layers.
struct ReferenceOutputs {
  std::vector<std::int64_t> indices;  // empty: every output
  std::vector<double> values;
};

// Computes the reference: in full up to kFullReferenceMacs multiply-adds (measure/verify.hpp), else at 8192 output
// indices drawn from `seed`.
ReferenceOutputs compute_reference(const Problem& p, std::span<const float> activation, std::span<const float> filter,
                                   std::uint64_t seed);

// Runs `launch` once with `output` poisoned (NaN) first and compares what it wrote with the reference; `scratch`
// holds the downloaded output (output_elements floats). NaNs anywhere in the output count, also when only a sample
// is compared, so an unwritten output fails.
ErrorStats verify_launch(const std::function<void(CUstream)>& launch, DeviceBuffer& output,
                         const ReferenceOutputs& ref, std::vector<float>& scratch, Stream& stream);

}  // namespace convgen
