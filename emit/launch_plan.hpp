// launch_plan: emit-lib's stand-in for generator/launch_plan.hpp (the core's LaunchPlan, same shape), built from
// today's LaunchGeometry until BuiltKernel carries a plan; the rebase onto the core swaps this header for that one.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "generator/family.hpp"

namespace convgen {

// A device buffer the plan needs besides the three tensors. Per-call buffers are carved from the caller's
// workspace; persistent ones are allocated once per op and filled by the setup steps.
struct PlanBuffer {
  std::string name;  // binds to an entry parameter g_<name>
  std::int64_t bytes = 0;
  bool persistent = false;
  bool operator==(const PlanBuffer&) const = default;
};

// One operation of a plan: launch an entry point of the kernel's module, or zero a buffer.
struct LaunchStep {
  enum class Kind { kernel, zero };
  Kind kind = Kind::kernel;
  std::string entry_suffix;  // kernel: "" for CONVGEN_ENTRY, else the CONVGEN_ENTRY_NAMED suffix
  LaunchGeometry geometry;   // kernel
  std::string buffer;        // zero: "output" or a plan buffer's name
  bool operator==(const LaunchStep&) const = default;
};

// Everything a caller does to run a kernel: on op creation, allocate the persistent buffers and run `setup`
// (which may read the filter); on every call, run `run` with a workspace of workspace_bytes().
struct LaunchPlan {
  std::vector<PlanBuffer> buffers;
  std::vector<LaunchStep> setup;
  std::vector<LaunchStep> run;

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
  bool operator==(const LaunchPlan&) const = default;

 private:
  std::int64_t block_bytes(bool persistent) const {
    std::int64_t total = 0;
    for (const PlanBuffer& b : buffers)
      if (b.persistent == persistent) total += (b.bytes + alignment - 1) / alignment * alignment;
    return total;
  }
};

// A plan of one kernel launch (zeroing the output first when the kernel accumulates into it).
inline LaunchPlan single_launch_plan(const LaunchGeometry& geometry, bool zero_output_first = false) {
  LaunchPlan plan;
  if (zero_output_first) plan.run.push_back({.kind = LaunchStep::Kind::zero, .buffer = "output"});
  plan.run.push_back({.kind = LaunchStep::Kind::kernel, .geometry = geometry});
  return plan;
}

}  // namespace convgen
