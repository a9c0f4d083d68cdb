// verify: runs a built kernel on the GPU on random inputs with a poisoned output and compares it with the
// float64 CPU reference.
#pragma once

#include <cstdint>

#include "conv/conv_kernel.hpp"
#include "reference/reference.hpp"

namespace convgen {

struct Verification {
  ErrorStats stats;
  bool passed = false;
  bool sampled = false;        // only a random sample of outputs was compared (large shapes)
  double kernel_ms = 0;        // one launch, from events (a rough figure, not a benchmark)
};

// Outputs compared in full up to this many reference multiply-adds; beyond it a sample of 8192 outputs.
inline constexpr std::int64_t kFullReferenceMacs = std::int64_t{1} << 28;

// Verifies `kernel` on the current device: inputs random from `seed` (never zeros), the output poisoned with
// NaN before the run so an unwritten output fails, compared with reference_conv by relative L2 and max error.
Verification verify_on_gpu(const BuiltKernel& kernel, std::uint64_t seed);

}  // namespace convgen
