// family: the interface every kernel family answers, and the registry of families.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "convgen/gpu.hpp"
#include "convgen/problem.hpp"
#include "generator/kernel_spec.hpp"

namespace convgen {

// A rendered kernel: what NVRTC compiles. `headers` are the template headers the source includes.
struct KernelSource {
  std::string entry;                 // the kernel's symbol: kernel_name(spec)
  std::string file_name;             // name given to NVRTC, e.g. "igemm_m64_n64_k8_tm4_tn4_st2_sk1_v1.cu"
  std::string text;                  // prelude + #line + template
  std::vector<std::string> headers;  // names of embedded template headers it includes
};

// How a kernel is launched. Every kernel takes (activation, filter, output, workspace) device pointers.
struct LaunchGeometry {
  std::array<unsigned, 3> grid{1, 1, 1};
  std::array<unsigned, 3> block{1, 1, 1};
  unsigned dynamic_smem_bytes = 0;
  bool zero_output_first = false;    // the kernel accumulates into the output (split-K with atomics)
  bool operator==(const LaunchGeometry&) const = default;
};

// What the cost model needs to know of one kernel on one problem: the launch, and per block the work of its main
// loop counted in warp instructions (issue slots) by kind. Counts are the family's estimates from its template's
// structure; the model weighs each kind with coefficients calibrated per GPU (tuner/cost_model.hpp).
struct CostFeatures {
  std::int64_t blocks = 0;            // launched blocks
  int threads_per_block = 0;
  int smem_bytes_per_block = 0;       // static + dynamic shared memory
  double flops = 0;                   // useful FLOPs (2 per multiply-add) of the whole launch
  double dram_bytes = 0;              // bytes the launch is expected to move through DRAM
  double flops_per_block = 0;         // executed FLOPs, padding of partial tiles included
  // Per block, warp instructions:
  double fma_instructions = 0;          // fused multiply-adds (32 per warp instruction)
  double shared_load_instructions = 0;  // shared-memory reads of the inner loop
  double global_load_instructions = 0;  // global-memory loads
  double address_instructions = 0;      // index arithmetic of the global loads (padding and im2col checks)
  int main_loop_steps = 0;              // iterations of the main loop, each with a barrier and its loads' latency
  bool pipelined = false;               // the next step's global loads overlap this step's math (double buffering)
  // Per launch:
  double atomic_outputs = 0;  // output elements accumulated with atomic adds (split-K: every split's partial sums)
  int extra_launches = 0;     // operations launched besides the kernel (split-K: zeroing the output first)
  bool operator==(const CostFeatures&) const = default;
};

// One kind of kernel. Implementations are stateless singletons reached through family().
class Family {
 public:
  virtual ~Family() = default;
  virtual FamilyKind kind() const = 0;

  // Lists the configurations worth trying on this problem and GPU, every one passing check_support.
  virtual std::vector<KernelSpec> enumerate(const Problem& problem, const Gpu& gpu) const = 0;

  // Returns nothing when the family can run `spec` on `problem` on `gpu`, else the reason it cannot.
  virtual std::optional<std::string> check_support(const Problem& problem, const Gpu& gpu,
                                                   const KernelSpec& spec) const = 0;

  // Renders the kernel source with the shape and configuration baked in as constants.
  virtual KernelSource render(const Problem& problem, const KernelSpec& spec) const = 0;

  virtual LaunchGeometry launch_geometry(const Problem& problem, const KernelSpec& spec) const = 0;

  // Bytes of scratch device memory the kernel needs (passed as its workspace pointer).
  virtual std::int64_t workspace_bytes(const Problem&, const KernelSpec&) const { return 0; }

  virtual CostFeatures cost_features(const Problem& problem, const KernelSpec& spec) const = 0;

  // Returns the configuration to use without tuning, or nothing when the family serves no configuration here.
  virtual std::optional<KernelSpec> default_spec(const Problem& problem, const Gpu& gpu) const = 0;
};

// Returns the family of a kind.
const Family& family(FamilyKind kind);

// Returns every family, in FamilyKind order.
std::vector<const Family*> all_families();

// Checks that `spec` belongs to a family that supports it; nothing or the reason.
std::optional<std::string> check_support(const Problem& problem, const Gpu& gpu, const KernelSpec& spec);

// A default choice across families without tuning: direct first for few channels per group or grouped layers,
// igemm first otherwise; the first family whose default_spec exists. Throws InputError naming every family's reason when none serves the problem.
KernelSpec default_choice(const Problem& problem, const Gpu& gpu);

}  // namespace convgen
