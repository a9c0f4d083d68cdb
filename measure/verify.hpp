// verify: a built kernel of ours as a pipeline candidate, and one kernel verified on the GPU (`convgen run`, the API's
// cost-model policy, the GPU tests), through the one pipeline (measure/verification).
#pragma once

#include "conv/conv_kernel.hpp"
#include "measure/verification.hpp"
#include "reference/inputs.hpp"

namespace convgen {

// Returns `kernel` as a candidate named by its entry (the canonical kernel name): its module loaded now and its
// workspace allocated, both kept alive by the candidate. Throws when the module does not load.
ConvCandidate kernel_candidate(const BuiltKernel& kernel);

// Verifies `kernel` on the current device on `inputs` (dense random from seed 1 by default): the output poisoned
// with NaN before the run so an unwritten output fails, compared with the float64 reference by relative L2 error
// (the precision's limit) and max error.
//   Verification v = verify_on_gpu(kernel, {.activation = SparseRandom{SparsityPattern::uniform, 0.5}, .seed = 3});
Verification verify_on_gpu(const BuiltKernel& kernel, const ConvInputs& inputs = {});

}  // namespace convgen
