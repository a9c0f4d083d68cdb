// zero_pass: the kernel that runs a launch plan's zero step (a buffer the plan's kernels accumulate into, zeroed
// before them on every call), in place of a memset: launched early like the plan's kernels (programmatic dependent
// launch, sm_90 and later), so that the stream's chain of kernels is not broken by a memset node, before which and
// after which nothing overlaps. CONVGEN_ZERO_STEP=memset restores cuMemsetD8Async (an A/B switch).
#pragma once

#include <cstdint>
#include <string>

#include "runtime/compiler.hpp"
#include "runtime/module.hpp"

namespace convgen {

// The zero pass's entry point: convgen_zero_bytes(unsigned char* out, unsigned long long bytes); it waits for the
// stream's previous kernel (griddepcontrol.wait) before it writes, and lets the next one start as its blocks exit.
inline constexpr const char* kZeroPassEntry = "convgen_zero_bytes";

// The zero pass compiled for `arch` ("sm_90"), once per process and architecture (thread-safe).
const Cubin& zero_pass_cubin(const std::string& arch);

// The grid and block that zero `bytes` (at least one block; a grid-stride loop past 1024 blocks).
LaunchConfig zero_pass_config(std::int64_t bytes, bool early);

// Whether zero steps run the zero pass (the default) or a memset (CONVGEN_ZERO_STEP=memset), read once. Any other
// value is an InputError naming the variable.
bool zero_step_by_kernel();

// Parses CONVGEN_ZERO_STEP's value: null or empty or "kernel" -> true, "memset" -> false; anything else throws.
bool parse_zero_step(const char* value);

}  // namespace convgen
