// plan_passes: the built-in kernels that run a launch plan's zero and relu steps, one module per architecture.
// - The zero pass clears a buffer the plan's kernels accumulate into, in place of a memset: launched early like the
//   plan's kernels (programmatic dependent launch, sm_90 and later), so that the stream's chain of kernels is not
//   broken by a memset node, before which and after which nothing overlaps. CONVGEN_ZERO_STEP=memset restores
//   cuMemsetD8Async (an A/B switch).
// - The relu pass writes max(0, x) of the caller's activation into a per-call buffer, the ReLU prologue of a problem
//   that asks for it on load (Problem::relu_on_load) and whose kernel does not apply it itself (with_relu_prologue).
#pragma once

#include <cstdint>
#include <string>

#include "convgen/problem.hpp"
#include "runtime/compiler.hpp"
#include "runtime/module.hpp"

namespace convgen {

// The zero pass's entry point: convgen_zero_bytes(unsigned char* out, unsigned long long bytes); it waits for the
// stream's previous kernel (griddepcontrol.wait) before it writes, and lets the next one start as its blocks exit.
inline constexpr const char* kZeroPassEntry = "convgen_zero_bytes";

// The relu pass's entry points, by element width: (const void* in, void* out, unsigned long long bytes) writes
// max(0, x) of each element of `in` to `out`, as the sign bit says (a negative value, -0 and a NaN with the sign
// bit become +0; the rest is copied bit for bit, which is max(0, x) in fp32, fp16 and bf16 alike). It waits for the
// stream's previous kernel before it reads, like the zero pass.
inline constexpr const char* kReluPass32Entry = "convgen_relu_b32";
inline constexpr const char* kReluPass16Entry = "convgen_relu_b16";

// The relu pass's entry for a precision's elements (fp32 and tf32: 32 bits; fp16 and bf16: 16).
const char* relu_pass_entry(Precision precision);

// The plan passes compiled for `arch` ("sm_90"), once per process and architecture (thread-safe).
const Cubin& plan_passes_cubin(const std::string& arch);

// The grid and block that zero `bytes` (at least one block; a grid-stride loop past 1024 blocks).
LaunchConfig zero_pass_config(std::int64_t bytes, bool early);

// The grid and block of the relu pass over `bytes` (the same shape: 16 bytes a thread, a grid-stride loop).
LaunchConfig relu_pass_config(std::int64_t bytes, bool early);

// Whether zero steps run the zero pass (the default) or a memset (CONVGEN_ZERO_STEP=memset), read once. Any other
// value is an InputError naming the variable.
bool zero_step_by_kernel();

// Parses CONVGEN_ZERO_STEP's value: null or empty or "kernel" -> true, "memset" -> false; anything else throws.
bool parse_zero_step(const char* value);

}  // namespace convgen
