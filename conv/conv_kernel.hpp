// conv_kernel: binds the generator to the runtime: renders, compiles (through the JIT cache) and launches one
// convolution kernel.
#pragma once

#include <cstdint>
#include <exception>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <variant>
#include <vector>

#include <cuda.h>

#include "convgen/problem.hpp"
#include "generator/family.hpp"
#include "generator/kernel_spec.hpp"
#include "runtime/compiler.hpp"
#include "runtime/jit_cache.hpp"
#include "runtime/thread_pool.hpp"

namespace convgen {

// A rendered and compiled kernel for one problem, with the plan that runs it.
struct BuiltKernel {
  Problem problem;
  KernelSpec spec;
  KernelSource source;
  Cubin cubin;
  LaunchPlan plan;
  // Bytes of the per-call workspace the caller passes to launch().
  std::int64_t workspace_bytes() const { return plan.workspace_bytes(); }
};

// Returns the symbol of a plan step's entry point: the main entry (kernel_name) or `<main>_<suffix>`.
std::string entry_symbol(const BuiltKernel& kernel, const std::string& suffix);

// Turns rendered source into an NVRTC program, with every template header.
Program to_program(const KernelSource& source);

// Returns the NVRTC options every kernel is compiled with for `arch` ("sm_90"): the architecture, and --minimal. The
// templates include no CUDA header and use none of what --minimal leaves out of NVRTC's front end (textures and
// surfaces, the device runtime and device-side launches, the runtime and driver APIs' types): 6 ms of a 180 ms p50
// compile of resnet50's default kernels, 10 ms of igemm_tc's, and the cubins are the same bytes
// (bench/results/nvrtc-debian12/compile_phases.md; tests/nvrtc/conv_kernel_compile_test.cpp checks every family).
// CONVGEN_NVRTC_OPTIONS adds options of the user's (split at spaces) after those.
CompileOptions kernel_compile_options(const std::string& arch);

// Renders and compiles `spec` for `problem` for `gpu`'s architecture (kernel_compile_options) through `cache`.
// Throws InputError when the family declines the problem (check_support's reason), CompileError on failure.
BuiltKernel build_kernel(const Problem& problem, const KernelSpec& spec, const Gpu& gpu, JitCache& cache);

// One kernel to build, and the outcome of building it (a kernel, or the exception it raised).
struct BuildRequest {
  Problem problem;
  KernelSpec spec;
};
using BuildOutcome = std::variant<BuiltKernel, std::exception_ptr>;

// Builds many kernels in parallel on `pool`; one failure does not stop the others. `on_done(i)` is called on
// the calling thread as outcome i becomes available, in order (for progress displays). Throws InputError, building
// nothing, when NVRTC cannot compile for an architecture the kernels need (check_nvrtc_arch).
std::vector<BuildOutcome> build_kernels(std::span<const BuildRequest> requests, const Gpu& gpu, JitCache& cache,
                                        ThreadPool& pool, const std::function<void(std::size_t)>& on_done = {});

// The device tensors a problem's epilogue reads: the bias (K values) and the residual (the output's shape, layout and
// type); 0 for one it does not read.
struct EpiloguePointers {
  CUdeviceptr bias = 0;
  CUdeviceptr residual = 0;
};

// Throws InputError, naming the problem and the tensor, when its epilogue reads a bias or a residual whose pointer is
// 0 ("n1_..._ebias+relu: its epilogue adds a bias (K values): the bias pointer is null").
void check_epilogue_pointers(const Problem& problem, const EpiloguePointers& epilogue);

// Whether the plans' early_launch steps (launch_plan.hpp) launch early, overlapping the stream's previous kernel: on
// unless the environment sets CONVGEN_EARLY_LAUNCH=0, or set_early_launch(false) turned it off for the process (the
// bench's and the tuner's `--early-launch off`, to measure what it gives). The kernels are the same either way.
bool early_launch_enabled();
void set_early_launch(bool enabled);

// The shared-memory carveout every ConvLauncher asks its kernels to run with (Kernel::set_preferred_smem_carveout,
// a percentage of the SM's maximum shared memory), from the environment's CONVGEN_SMEM_CARVEOUT (0 to 100); none when
// it is unset, and the driver picks each kernel's. A knob for measuring whether kernels of different carveouts back
// to back (an SM reconfigures its L1/shared split between them) cost a network's chain; not measured yet.
std::optional<int> smem_carveout_from_environment();
// CONVGEN_SMEM_CARVEOUT's value read: none for null or empty; throws InputError naming the variable for anything but
// an integer from 0 to 100.
std::optional<int> parse_smem_carveout(const char* value);

// A built kernel loaded into the current CUDA context, with the persistent buffers of its plan (a transformed or
// packed filter): one prepared copy per filter it was prepared with, so that launches with several filters (modules
// that share one op) never prepare again, and never read another filter's copy.
//   ConvLauncher launcher(kernel);
//   launcher.prepare(filter, stream);                      // once per filter; nothing to do for most plans
//   launcher.launch(activation, filter, output, workspace, stream);
class ConvLauncher {
 public:
  explicit ConvLauncher(const BuiltKernel& kernel);
  ~ConvLauncher();
  ConvLauncher(const ConvLauncher&) = delete;
  ConvLauncher& operator=(const ConvLauncher&) = delete;

  // Enqueues the plan's one-time setup on `stream`, reading `filter` into its own persistent buffers (allocated on
  // its first prepare, kept until the launcher goes). Call it again when that filter's values change. A plan without
  // setup needs no call. The setup's tensor maps (the filter read by TMA) depend on the filter's address alone: they
  // are written by the first prepare with a filter, outside any CUDA graph capture (a capture cannot record their
  // copy from the host: ApiError), and later prepares, captured or not, keep them.
  void prepare(CUdeviceptr filter, CUstream stream);

  // Enqueues one convolution on `stream`: the plan's run steps (zeroing the output first when the kernel
  // accumulates). `workspace` holds kernel().workspace_bytes() bytes (may be 0 when that is 0); `epilogue` the
  // bias and residual the problem's epilogue reads; `prepared_from` the filter whose prepared copy the run reads
  // (0: `filter` itself; a measurement whose buffer sets hold one filter's values in several places prepares one).
  // Throws Error when the plan has a setup that prepare() has not run for that filter, InputError
  // (check_epilogue_pointers) when the epilogue reads a tensor whose pointer is 0, and InputError (misaligned_tensor)
  // when a tensor's address is not the multiple the plan needs (its tensor_alignment).
  void launch(CUdeviceptr activation, CUdeviceptr filter, CUdeviceptr output, CUdeviceptr workspace, CUstream stream,
              const EpiloguePointers& epilogue = {}, CUdeviceptr prepared_from = 0) const;

  const BuiltKernel& kernel() const { return kernel_; }
  // Whether launch() may run with `filter`: the plan has no setup, or prepare() ran for it.
  bool prepared(CUdeviceptr filter) const;
  // How many filters have a prepared copy.
  std::size_t prepared_count() const;

 private:
  struct Loaded;
  BuiltKernel kernel_;
  std::unique_ptr<Loaded> loaded_;
};

}  // namespace convgen
