// tensor_maps_sm90_kernels.hpp: the table of embedded kernels and their launch plans that tensor_maps_sm90_kernels.cpp (written by
// convgen emit-lib) defines.
#pragma once

#include <cstddef>

#include "tensor_maps_sm90.h"

namespace tensor_maps_sm90_internal {

struct TensorMap;

// What a kernel argument binds to: a tensor of the call (the epilogue's bias and residual included), the caller's
// workspace, a buffer of the plan, or a TMA tensor map passed by value (128 bytes, encoded on every call over the
// call's tensor).
enum class Arg : unsigned char { activation, filter, output, workspace, buffer, bias, residual, map };

struct ArgBinding {
  Arg arg;
  int buffer;                      // Arg::buffer: index into KernelImage::buffers; else -1
  const TensorMap* map = nullptr;  // Arg::map: the map; nullptr for 128 zero bytes (one the kernel never reads)
};

// A device buffer of a plan besides the tensors: per call, at `offset` in the caller's workspace; persistent, at
// `offset` in the block an op allocates at creation (filled by the setup steps).
struct PlanBuffer {
  const char* name;
  unsigned long long bytes;
  unsigned long long offset;
  bool persistent;
};

// A TMA tensor map, encoded over the address of the call's `tensor` (cuTensorMapEncodeTiled's arguments besides it,
// or with im2col cuTensorMapEncodeIm2col's): element type (0 fp32, 1 fp16, 2 bf16), rank, sizes, byte strides of
// dimensions 1 .. rank - 1, box and element strides, innermost first; zeros out of bounds, the 128-byte swizzle or
// none; im2col: the bounding box's corners (per spatial dimension, innermost first), channels and pixels a copy (box
// unused).
struct TensorMap {
  enum Tensor : unsigned char { activation, filter };
  Tensor tensor;
  int buffer;  // -1: over the tensor; else over KernelImage::buffers[buffer] (a ReLU prologue's activation)
  int type;
  unsigned rank;
  unsigned long long dims[5];
  unsigned long long strides[4];
  unsigned box[5];
  bool swizzle_128b;
  unsigned element_strides[5];
  bool im2col;
  int lower_corner[3];
  int upper_corner[3];
  unsigned channels;
  unsigned pixels;
};

// One operation of a plan: launch an entry of the kernel's cubin, zero the output or a plan buffer, write max(0, x)
// of the call's activation into a per-call buffer (a ReLU prologue: the kernel steps then read that buffer as their
// activation). A zero step with an entry launches
// the library's zero pass for the architecture (in PassImage: arguments the buffer and its bytes, the grid and block
// given); without one it is a memset. A relu step launches the relu pass its entry names (in PassImage: arguments
// the activation, the buffer and its bytes).
struct Step {
  enum Kind : unsigned char { kernel, zero, relu };
  Kind kind;
  const char* entry;  // kernel: the symbol; zero: the zero pass's, or nullptr (a memset); relu: the relu pass's
  unsigned grid[3];
  unsigned block[3];
  unsigned dynamic_smem_bytes;
  const ArgBinding* args;  // kernel: one per entry parameter, in order
  std::size_t arg_count;
  int zero_buffer;    // zero: -1 for the output, else an index into KernelImage::buffers; relu: its buffer
  bool early_launch;  // kernel and pass: launched early (programmatic stream serialization; the kernel waits for the
                      // stream's previous kernel before it touches global memory)
};

// The plan passes compiled for one architecture: convgen_zero_bytes(unsigned char* out, unsigned long long bytes)
// zeroes `bytes` bytes at `out` after the stream's previous kernel, so that it can be launched early like the plans'
// kernels (a memset node cannot: the chain of early launches breaks before and after it); convgen_relu_b32 and
// convgen_relu_b16 (const void* in, void* out, unsigned long long bytes) write max(0, x) of each 32- or 16-bit
// element of `in` to `out`, after the stream's previous kernel too.
struct PassImage {
  int arch;  // compute capability of the cubin, as KernelImage::arch
  const unsigned char* cubin;
  std::size_t cubin_bytes;
};

// One problem's kernel compiled for one architecture, with its plan: setup steps run once when an op is created,
// run steps on every call.
struct KernelImage {
  int arch;                    // compute capability of the cubin: 90 for sm_90
  const unsigned char* cubin;  // the cubin (ELF), loaded with cuModuleLoadData
  std::size_t cubin_bytes;
  const char* kernel;  // the canonical convgen name of the kernel (its main entry's symbol)
  const PlanBuffer* buffers;
  std::size_t buffer_count;
  unsigned long long workspace_bytes;   // the caller's workspace a call needs
  unsigned long long persistent_bytes;  // what an op allocates at creation
  const Step* setup;
  std::size_t setup_count;
  const Step* run;
  std::size_t run_count;
  // What the kernel depends on of the problem's own filter (convgen's FilterDependence), checked at op creation: 0
  // nothing but its shape, 1 its nonzeros lie within ProblemEntry::weight_mask, 2 those and their values
  // (ProblemEntry::weight_values: the kernel has them in its code).
  unsigned char filter_check;
  // What the run's kernels need of the caller's activation, filter and output addresses, in bytes (0: one element):
  // their widest loads and stores (convgen's LaunchPlan::tensor_alignment). A call with an address that is not a
  // multiple is refused.
  unsigned char alignment[3];
};

// One problem the library serves, and its kernel for each architecture.
struct ProblemEntry {
  tensor_maps_sm90_problem problem;
  const char* name;                 // the suite's layer name(s)
  unsigned long long output_bytes;  // what a zero step of the output clears
  const KernelImage* kernels;
  std::size_t kernel_count;
  // The problem's own filter, where it was emitted with one (emit-lib --weights, --weight-sparsity): convgen's pattern
  // hash ("" when none); its nonzeros, a bit per filter element in the problem's filter layout (element i is bit i % 8
  // of byte i / 8), where a kernel checks them; their values in element order, where a kernel has them in its code.
  const char* weight_pattern;
  const unsigned char* weight_mask;    // nullptr when no kernel checks the filter
  const float* weight_values;          // nullptr when no kernel has the values in its code
  unsigned long long filter_elements;  // the filter's elements (K C/g T R S)
};

extern const ProblemEntry problems[];
extern const std::size_t problem_count;

// The plan passes of each architecture whose plans have zero steps with an entry or relu steps (nullptr and 0 when
// none has).
extern const PassImage* const plan_passes;
extern const std::size_t plan_pass_count;

// The architectures the library has cubins for, as "sm_80, sm_90", for messages.
extern const char* const architectures;

}  // namespace tensor_maps_sm90_internal
