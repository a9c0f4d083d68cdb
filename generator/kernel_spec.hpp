// kernel_spec: a kernel family plus its parameters, with a canonical name that encodes every field and parses back.
#pragma once

#include <array>
#include <string>
#include <string_view>

#include "convgen/enum_names.hpp"

namespace convgen {

// One kind of kernel. DESIGN.md names the families to come (igemm_tc, act_sparse, weight_sparse ...).
enum class FamilyKind { direct, igemm };

template <>
struct EnumNames<FamilyKind> {
  static constexpr std::array table = {
      std::pair{FamilyKind::direct, std::string_view("direct")},
      std::pair{FamilyKind::igemm, std::string_view("igemm")},
  };
};

// A kernel configuration. In GEMM terms (igemm) M is output channels, N output pixels (n, o, p, q) and the
// reduction runs over (c, t, r, s); `direct` uses the same fields for output channels, output pixels and
// input channels per step. Which fields a family uses, and their limits, is the family's check_support.
struct KernelSpec {
  FamilyKind family = FamilyKind::igemm;
  int block_m = 64;   // output channels per block
  int block_n = 64;   // output pixels per block
  int block_k = 8;    // reduction elements (igemm) or input channels (direct) per shared-memory stage
  int thread_m = 4;   // output channels per thread
  int thread_n = 4;   // output pixels per thread
  int stages = 2;     // shared-memory buffers: 1, or 2 for double buffering
  int split_k = 1;    // blocks that share one output tile's reduction
  int vector = 1;     // elements per global load where the layout allows
  bool operator==(const KernelSpec&) const = default;
};

// Returns the canonical name, e.g. "igemm_m64_n64_k8_tm4_tn4_st2_sk1_v1": the entry symbol, cache-key
// prefix, tuning-DB key, file stem and test name.
std::string kernel_name(const KernelSpec& spec);

// Parses a name written by kernel_name; throws InputError naming the token that was wrong.
KernelSpec parse_kernel_name(std::string_view name);

// Threads per block of a spec: (block_m / thread_m) * (block_n / thread_n).
inline int threads_per_block(const KernelSpec& spec) {
  return (spec.block_m / spec.thread_m) * (spec.block_n / spec.thread_n);
}

}  // namespace convgen

template <>
struct fmt::formatter<convgen::KernelSpec> : fmt::formatter<std::string_view> {
  template <class Ctx>
  auto format(const convgen::KernelSpec& spec, Ctx& ctx) const {
    return fmt::formatter<std::string_view>::format(convgen::kernel_name(spec), ctx);
  }
};
