// affine_concat: runs the pre-activation pass (include/convgen/affine_concat.hpp) with templates/affine_concat.cuh:
// the program per element type and vector width, the widest vector a pass allows, and its launches (one per
// kAffineConcatMaxInputs inputs).
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "convgen/affine_concat.hpp"
#include "runtime/compiler.hpp"
#include "runtime/module.hpp"

namespace convgen {

inline constexpr const char* kAffineConcatEntry = "convgen_affine_concat";
inline constexpr int kAffineConcatMaxInputs = 64;  // templates/affine_concat.cuh's kMaxSegments

// The kernel's Segments parameter as the host lays it out (templates/affine_concat.cuh; the emulation test checks
// that both agree).
struct AffineConcatSegments {
  std::array<const void*, kAffineConcatMaxInputs> data{};
  std::array<int, kAffineConcatMaxInputs> channels{};
  std::array<int, kAffineConcatMaxInputs> first{};
  int count = 0;
};

// One launch: its inputs, the output channel they start at, and its grid (blockIdx.y: the input).
struct AffineConcatLaunch {
  AffineConcatSegments segments;
  int first_channel = 0;
  LaunchConfig config;
};

// The elements each thread moves at once: the widest of 8 (16-bit types), 4, 2 and 1 whose bytes (at most 16) divide
// every input's and the output's address, and every input's channel count (channels-last) or the pixels
// (channels-first).
int affine_concat_vector(const AffineConcat& pass);

// The program of (precision, vector): templates/affine_concat.cuh with AC_ELEMENT and AC_VECTOR defined.
Program affine_concat_program(Precision precision, int vector);

// That program compiled for `arch`, once per process (thread-safe).
const Cubin& affine_concat_cubin(const std::string& arch, Precision precision, int vector);

// The launches of a checked pass, in order: inputs in groups of kAffineConcatMaxInputs; 256 threads a block, enough
// blocks along x for the largest input of the group (at most 1024: a block strides past that), launched early
// where `early`.
std::vector<AffineConcatLaunch> plan_affine_concat(const AffineConcat& pass, int vector, bool early);

// The activation's clamp, lo and hi (none: -inf and inf; relu: 0 and inf; relu6: 0 and 6; clip: its bounds).
std::array<float, 2> affine_concat_clamp(const AffineConcat& pass);

// Enqueues the pass on `stream` with `kernel` (affine_concat_cubin's entry, loaded in the current context).
void launch_affine_concat(const Kernel& kernel, const AffineConcat& pass,
                          const std::vector<AffineConcatLaunch>& launches, CUstream stream);

}  // namespace convgen
