// launch_plan: what running one built kernel takes: its buffers, a one-time setup (a transformed or packed
// filter kept with the op) and the operations of every call.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace convgen {

// How one kernel of a plan is launched.
struct LaunchGeometry {
  std::array<unsigned, 3> grid{1, 1, 1};
  std::array<unsigned, 3> block{1, 1, 1};
  unsigned dynamic_smem_bytes = 0;
  bool operator==(const LaunchGeometry&) const = default;
};

// A device buffer the plan needs besides the three tensors. Per-call buffers are carved from the caller's
// workspace; persistent ones are allocated once per op and filter, and filled by the setup steps.
struct PlanBuffer {
  std::string name;  // binds to an entry parameter g_<name>
  std::int64_t bytes = 0;
  bool persistent = false;
  bool operator==(const PlanBuffer&) const = default;
};

// A TMA tensor map (CUDA's CUtensorMap, 128 bytes), tiled or im2col: what cuTensorMapEncodeTiled (or Im2col) takes
// besides the tensor's address (PlanTensorMap says which tensor's). Dimensions, strides and box run innermost first;
// the out-of-bounds fill is zero.
struct TensorMapSpec {
  enum class Type { float32, float16, bfloat16 };
  Type type = Type::float16;
  int rank = 2;                           // 1 to 5
  std::array<std::int64_t, 5> dims{};     // elements per dimension
  std::array<std::int64_t, 4> strides{};  // bytes between consecutive entries of dimensions 1 .. rank - 1
  std::array<unsigned, 5> box{};          // elements per dimension of one copy
  bool swizzle_128b = true;               // the 128-byte swizzle (the inner box is 128 bytes), else none
  // im2col (cuTensorMapEncodeIm2col) instead of tiled: a channels-last activation (dims C, W, H, N, or C, W, H, D, N),
  // each copy `pixels` pixels of `channels` channels walked through the bounding box the corners give (per spatial
  // dimension, innermost first: the window of a tap-0 base pixel, relative to 0 and to the extent - 1), the traversal
  // stride per dimension in element_strides (1 for the channels and the images); box is then unused.
  bool im2col = false;
  std::array<int, 3> lower_corner{};
  std::array<int, 3> upper_corner{};
  unsigned channels = 0;
  unsigned pixels = 0;
  std::array<unsigned, 5> element_strides{1, 1, 1, 1, 1};
  bool operator==(const TensorMapSpec&) const = default;
};

// A tensor map an entry takes by value (a __grid_constant__ parameter g_<name>, 128 bytes): the launcher encodes it
// on the host over the call's `tensor` ("filter" or "activation") and passes it with the launch, so that the kernel
// reads it where it lies, with no copy in global memory to write or fence. An entry parameter whose map the kernel
// never reads is still one of the plan's, with `tensor` empty: it binds 128 zero bytes.
struct PlanTensorMap {
  std::string name;    // binds to the entry parameter g_<name>
  std::string tensor;  // "filter", "activation" or "" (unused: zeros)
  TensorMapSpec spec;
  bool operator==(const PlanTensorMap&) const = default;
};

// One operation of a plan: launch an entry point of the kernel's module, zero a buffer, or write max(0, x) of the
// caller's activation into a buffer (the ReLU prologue of a relu_on_load problem whose kernel does not apply it as it
// loads). Zero and relu steps run the built-in passes of conv/plan_passes.hpp.
struct LaunchStep {
  enum class Kind { kernel, zero, relu };
  Kind kind = Kind::kernel;
  std::string entry_suffix;  // kernel: "" for CONVGEN_ENTRY, else the CONVGEN_ENTRY_NAMED suffix
  LaunchGeometry geometry;   // kernel
  // zero: "output" or a plan buffer's name; relu: the per-call buffer it writes
  std::string buffer;
  // kernel: may launch early, while the stream's previous kernel still runs (programmatic dependent launch, sm_90 and
  // later). Its template promises that every block executes griddepcontrol.wait (convgen::wait_for_previous_grid)
  // before it reads or writes global memory that an earlier kernel of the stream may write or read; before that it
  // may only set up shared memory. Launched normally where the promise is not made.
  bool early_launch = false;
  bool operator==(const LaunchStep&) const = default;
};

// The address alignment, in bytes, that a plan's run steps need of the caller's tensors: their widest accesses
// (16-byte copies, float4 loads, paired or staged stores). 0 where no step reads or writes the tensor wider than one
// element. A launch refuses a pointer that is not a multiple (check_tensor_alignment; the emitted library's calls).
struct TensorAlignment {
  int activation = 0;
  int filter = 0;
  int output = 0;
  bool operator==(const TensorAlignment&) const = default;
};

// Everything a caller does to run a kernel: once per filter, allocate the persistent buffers and run `setup`
// (which may read the filter); on every call, run `run` with a workspace of workspace_bytes().
struct LaunchPlan {
  std::vector<PlanBuffer> buffers;
  std::vector<PlanTensorMap> tensor_maps;  // the entries' by-value tensor map parameters
  std::vector<LaunchStep> setup;
  std::vector<LaunchStep> run;
  // Where the run's kernel steps read the activation (their g_activation): empty for the caller's tensor, else the
  // per-call buffer a relu step fills from it (with_relu_prologue).
  std::string activation_buffer;
  // What the run's kernels need of the caller's activation, filter and output addresses.
  TensorAlignment tensor_alignment;

  // Alignment of every buffer within the workspace or the persistent block.
  static constexpr std::int64_t alignment = 256;

  std::int64_t workspace_bytes() const { return block_bytes(false); }
  std::int64_t persistent_bytes() const { return block_bytes(true); }
  // Byte offset of a buffer within its block (workspace or persistent); -1 for an unknown name.
  std::int64_t offset_of(const std::string& name) const {
    std::int64_t offsets[2] = {0, 0};
    for (const PlanBuffer& b : buffers) {
      std::int64_t& offset = offsets[b.persistent ? 1 : 0];
      if (b.name == name) return offset;
      offset += (b.bytes + alignment - 1) / alignment * alignment;
    }
    return -1;
  }
  const PlanBuffer* find(const std::string& name) const {
    for (const PlanBuffer& b : buffers)
      if (b.name == name) return &b;
    return nullptr;
  }
  const PlanTensorMap* find_map(const std::string& name) const {
    for (const PlanTensorMap& m : tensor_maps)
      if (m.name == name) return &m;
    return nullptr;
  }
  // Whether a call zeroes the output before its kernels (they accumulate into it).
  bool zeroes_output_first() const {
    return !run.empty() && run.front().kind == LaunchStep::Kind::zero && run.front().buffer == "output";
  }
  // The geometry of the main entry's step of `run` (CONVGEN_ENTRY: the kernel a manifest's registers are of), else
  // of its first kernel step. Most plans have one kernel; winograd_gemm's main entry is its second.
  const LaunchGeometry& main_geometry() const;
  bool operator==(const LaunchPlan&) const = default;

 private:
  std::int64_t block_bytes(bool persistent) const {
    std::int64_t total = 0;
    for (const PlanBuffer& b : buffers)
      if (b.persistent == persistent) total += (b.bytes + alignment - 1) / alignment * alignment;
    return total;
  }
};

// Returns `plan` with every kernel step of `run` marked early_launch: for a family whose template's run entries all
// wait for the previous grid before they touch global memory (each begins with convgen::wait_for_previous_grid(), or
// does only what grid_dependency.cuh allows before it).
LaunchPlan with_early_launch(LaunchPlan plan);

// Whether `arch` ("sm_90a", "sm_80") has programmatic dependent launch: sm_90 and later (before it the templates'
// waits compile to nothing).
bool has_early_launch(std::string_view arch);

// Whether `arch` has thread-block clusters and distributed shared memory: sm_90 and later.
bool has_thread_block_clusters(std::string_view arch);

// Whether a kernel step launches early on `arch`: it allows it, and the architecture has it.
inline bool launches_early(const LaunchStep& step, std::string_view arch) {
  return step.early_launch && has_early_launch(arch);
}

// A plan of one kernel launch (zeroing the output first when the kernel accumulates into it).
LaunchPlan single_launch_plan(const LaunchGeometry& geometry, bool zero_output_first = false);

// The name of the per-call buffer a ReLU prologue writes (with_relu_prologue).
inline constexpr const char* kRectifiedActivation = "rectified_activation";

// Returns `plan` with a ReLU prologue: a per-call buffer of the activation's `activation_bytes`, a relu step that
// writes max(0, x) of the caller's activation into it before the first kernel step of `run` (after a zero step that
// precedes it), and the kernel steps reading the activation from it. For a problem asking for max(0, x) on load
// (Problem::relu_on_load) whose kernel does not apply it itself (Family::applies_relu_on_load).
LaunchPlan with_relu_prologue(LaunchPlan plan, std::int64_t activation_bytes);

// The error a launch of `plan` with these caller addresses would meet, or "" where each is a multiple of what the plan
// needs of it (plan.tensor_alignment) and of its element's `element_bytes`: names the tensor, its address and what
// reads it. A filter the plan reads only through its setup (into a persistent copy) is checked where it is read.
std::string misaligned_tensor(const LaunchPlan& plan, int element_bytes, std::uint64_t activation, std::uint64_t filter,
                              std::uint64_t output);

// Split-K through a second pass, as the tensor-core templates do it: with split_k > 1 the main kernel writes fp32
// partial sums of all `outputs` to the per-call buffer "partials" (split_k x outputs x 4 bytes, bound as
// g_workspace), and the template's `reduce` entry, one thread per output in blocks of `reduce_threads`, adds them
// after it. Appends both to `plan`; nothing for split_k 1.
void add_split_k_reduce(LaunchPlan& plan, std::int64_t outputs, int split_k, int reduce_threads);

}  // namespace convgen
