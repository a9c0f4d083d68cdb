// family: the interface every kernel family answers, and the registry of families.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "convgen/gpu.hpp"
#include "convgen/problem.hpp"
#include "generator/kernel_spec.hpp"
#include "generator/launch_plan.hpp"
#include "generator/template_interface.hpp"

namespace convgen {

// A rendered kernel: what NVRTC compiles. `headers` are the template headers the source includes.
struct KernelSource {
  std::string entry;                 // the main kernel's symbol: kernel_name(spec)
  std::string file_name;             // name given to NVRTC, e.g. "igemm_m64_n64_k8_tm4_tn4_st2_sk1_v1.cu"
  std::string text;                  // prelude + #line + template
  std::vector<std::string> headers;  // names of embedded template headers it includes
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
  // Instructions one warp issues per cycle at most (its dependent chains): with fewer warps on an SM than the
  // schedulers could keep busy at that rate, the issue terms count warps × rate per cycle instead of the 4
  // schedulers. 0: the schedulers alone bound the issue (the tensor-core families, whose instructions are mostly
  // mma that the tensor pipes pace).
  double warp_issue_rate = 0;
  // Per launch:
  // Latency outside the main launch's loop, in main-loop steps, counted once (not per wave): the dependent chain of
  // one thread of another launch of the call (winograd_gemm's transforms), which a small layer's few threads expose.
  double extra_serial_steps = 0;
  double atomic_outputs = 0;  // output elements accumulated with atomic adds (split-K: every split's partial sums)
  int extra_launches = 0;     // operations launched besides the kernel (split-K: zeroing the output first)
  bool operator==(const CostFeatures&) const = default;
};

// The cost model's weights of one family, one per term in tuner/cost_model.hpp's CostTerm order (fma,
// shared_loads, global_loads, address, serial_steps, pipelined_steps, waves, atomics, extra_launches, dram, launch).
using CostWeights = std::array<double, 11>;

// How much of a problem's own filter a kernel depends on (Family::filter_dependence), weakest first.
enum class FilterDependence { none, pattern, values };

// One kind of kernel: its template (templates/<name>.cu, whose declared interface the build scans) plus one C++
// file (generator/families/<name>.cpp) defining `const Family& <name>_family()`. The build generates the registry
// from those file names; nothing else names a family.
class Family {
 public:
  virtual ~Family() = default;

  // Returns the template's scanned interface: its parameters (which make up the spec and the kernel name) and
  // entry points.
  virtual const TemplateInterface& interface() const = 0;
  std::string_view name() const { return interface().family; }

  // Lists the configurations worth trying on this problem and GPU, every one passing check_support.
  virtual std::vector<KernelSpec> enumerate(const Problem& problem, const Gpu& gpu) const = 0;

  // Returns nothing when the family can run `spec` on `problem` on `gpu`, else the reason it cannot.
  virtual std::optional<std::string> check_support(const Problem& problem, const Gpu& gpu,
                                                   const KernelSpec& spec) const = 0;

  // Renders the kernel source with the shape and configuration baked in as constants (default: the prelude of
  // generator/render.hpp and the family's template).
  virtual KernelSource render(const Problem& problem, const KernelSpec& spec) const;

  // Returns how to run the kernel: buffers, one-time setup and the launches of every call.
  virtual LaunchPlan plan(const Problem& problem, const KernelSpec& spec) const = 0;

  virtual CostFeatures cost_features(const Problem& problem, const KernelSpec& spec) const = 0;

  // Whether cost_features reads the filter's values (a family that bakes them into the code counts its nonzeros). A
  // tuning database keeps a filter's pattern hash, not its values, so `db calibrate` cannot recompute such a
  // family's features from its measurements and leaves them out.
  virtual bool cost_features_need_filter_values() const { return false; }

  // What of the problem's own filter (Problem::weights) the kernel's code or plan was made for, beyond its shape: a
  // filter given at run time must agree with it (a library that embeds the kernel checks that it does, emit-lib).
  //   none:    any filter of the shape (the default: the kernel reads every value of the filter it is given);
  //   pattern: the filter's nonzeros must lie within the problem's pattern (baked positions, a packed layout);
  //   values:  the same, and each of them must have the problem's value (the values are immediates in the code).
  virtual FilterDependence filter_dependence(const KernelSpec& spec) const;

  // Returns the cost model's weights for this family until a calibration of the GPU includes it; never all zero
  // (a family must not be predicted at 0 µs and ranked first for want of a calibration).
  virtual CostWeights default_cost_weights() const = 0;

  // Returns the configuration to use without tuning, or nothing when the family serves no configuration here.
  virtual std::optional<KernelSpec> default_spec(const Problem& problem, const Gpu& gpu) const = 0;

  // Returns the family's place in default_choice's order for this problem: lower is tried first.
  virtual int default_rank(const Problem& problem) const = 0;

  // Whether a configuration applies max(0, x) to the activation as it loads it (a problem's relu_on_load). Every
  // family serves such a problem: plan_for gives a configuration that does not a ReLU prologue (with_relu_prologue).
  virtual bool applies_relu_on_load(const KernelSpec&) const { return false; }

  // Returns the architecture NVRTC compiles this family's kernels for on `gpu`: the GPU's own (default), or its
  // arch-specific variant (sm_90a) for a family that uses instructions only that variant has (wgmma).
  virtual std::string compile_arch(const Gpu& gpu) const { return gpu.arch; }

  // Returns the tokens an earlier convgen wrote after this family's parameters and that parse_kernel_name still
  // accepts and drops (e.g. "_st1_sk1_v1" of the old direct names); empty when none.
  virtual std::string_view legacy_name_suffix() const { return {}; }

  // Returns how many of the family's last parameters the names of an earlier convgen lack (declared later, each with
  // the default that is what those kernels did): parse_kernel_name gives a name without them their defaults.
  virtual std::size_t params_added_later() const { return 0; }
};

// Returns every registered family, ordered by name.
const std::vector<const Family*>& all_families();

// Returns the family of a name; throws InputError naming the registered families when there is none.
const Family& family(std::string_view name);

// Returns the family of a name, or nullptr.
const Family* find_family(std::string_view name);

// Returns "direct, igemm": the registered families' names.
std::string family_names();

// The architecture NVRTC compiles `spec` for on `gpu` (its family's compile_arch).
std::string compile_arch(const KernelSpec& spec, const Gpu& gpu);

// How to run `spec` on `problem`: its family's plan, with a ReLU prologue where the problem asks for max(0, x) on load
// and the configuration does not apply it (with_relu_prologue). Every caller that runs a kernel asks here.
LaunchPlan plan_for(const Problem& problem, const KernelSpec& spec);

// The cost model's features of `spec` on `problem`: its family's, plus the ReLU prologue's launch and traffic (the
// activation read and written once) where plan_for adds one.
CostFeatures cost_features_for(const Problem& problem, const KernelSpec& spec);

// Whether plan_for gives `spec` a ReLU prologue on `problem`.
bool needs_relu_prologue(const Problem& problem, const KernelSpec& spec);

// Checks that `spec` belongs to a family that supports it; nothing or the reason.
std::optional<std::string> check_support(const Problem& problem, const Gpu& gpu, const KernelSpec& spec);

// A default choice across families without tuning: the families ordered by default_rank for the problem, the first
// whose default_spec exists. Throws InputError naming every family's reason when none serves the problem.
KernelSpec default_choice(const Problem& problem, const Gpu& gpu);

// Each family's place in default_choice for a problem: its default_rank, its default configuration where it serves
// the problem, else why it does not. family_defaults lists every family in default_choice's order (rank, then
// name), so the first with a spec is the default choice: what `convgen analyze --defaults` shows.
struct FamilyDefault {
  std::string family;
  int rank = 0;
  std::optional<KernelSpec> spec;
  std::string reason;  // why the family serves none of the problem, when spec is empty
};
std::vector<FamilyDefault> family_defaults(const Problem& problem, const Gpu& gpu);

// Whether direct goes before igemm in default_choice: few channels per group (stems, depthwise and grouped layers)
// leave a GEMM's tiles mostly empty, except in ungrouped 2-D layers with a filter of 5x5 or more, whose reduction
// over C x R x S fills igemm's (on the H200 the 7x7 stride-2 stem on 3 channels ran 1.6-1.85x faster on igemm's
// default than on direct's at batch 1 to 8, where 3x3 layers of 1 to 3 channels, 2-D and 3-D, mostly ran faster on
// direct's: bench/results/h200/default-choice-2026-11-29/).
bool direct_before_igemm(const Problem& problem);

}  // namespace convgen
