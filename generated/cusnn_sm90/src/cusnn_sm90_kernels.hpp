// cusnn_sm90_kernels.hpp: the table of embedded kernels that cusnn_sm90_kernels.cpp (written by convgen emit-lib) defines.
#pragma once

#include <cstddef>

#include "cusnn_sm90.h"

namespace cusnn_sm90_internal {

// One problem's kernel compiled for one architecture, with how to launch it.
struct KernelImage {
  int arch;                    // compute capability of the cubin: 90 for sm_90
  const unsigned char* cubin;  // the cubin (ELF), loaded with cuModuleLoadData
  std::size_t cubin_bytes;
  const char* entry;  // the kernel's symbol: its canonical convgen name
  unsigned grid[3];
  unsigned block[3];
  unsigned dynamic_smem_bytes;
  bool zero_output_first;  // the kernel accumulates into the output (split-K): zero it first
};

// One problem the library serves, and its kernel for each architecture.
struct ProblemEntry {
  cusnn_sm90_problem problem;
  const char* name;                 // the suite's layer name(s)
  unsigned long long output_bytes;  // zeroed before kernels that accumulate
  const KernelImage* kernels;
  std::size_t kernel_count;
};

extern const ProblemEntry problems[];
extern const std::size_t problem_count;

// The architectures the library has cubins for, as "sm_80, sm_90", for messages.
extern const char* const architectures;

}  // namespace cusnn_sm90_internal
