// kernel_spec: a kernel family plus its own parameters, with a canonical name that encodes every field and parses
// back.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include <fmt/format.h>

namespace convgen {

// A kernel configuration: the family's name and one value per parameter its template declares, in declaration
// order (generator/template_interface.hpp; the family's generated <Family>Params struct is the typed view).
struct KernelSpec {
  std::string family;
  std::vector<int> values;
  bool operator==(const KernelSpec&) const = default;
};

// Returns the canonical name: the family, then "_<token><value>" per declared parameter, e.g.
// "igemm_m64_n64_k8_tm4_tn4_st2_sk1_v1". It is the entry symbol, cache-key prefix, tuning-DB key, file stem and
// test name. Throws InputError for an unregistered family or a spec of the wrong arity.
std::string kernel_name(const KernelSpec& spec);

// Parses a name written by kernel_name (or by an earlier convgen whose names the family still accepts); throws
// InputError naming the token that was wrong or the value that is not allowed.
KernelSpec parse_kernel_name(std::string_view name);

// Returns the registered family whose name prefixes `kernel` (the longest, so "igemm_tc_..." is not "igemm"), or
// an empty view when none does.
std::string_view family_name_of(std::string_view kernel);

// Returns the typed parameters of a spec of the family `Params` belongs to (the generated struct); throws
// InputError for a spec of another family.
template <class Params>
Params params_of(const KernelSpec& spec) {
  Params params;
  from_spec(spec, params);
  return params;
}

// Returns the canonical name of a family's typed parameters (the generated <Family>Params struct).
template <class Params>
  requires requires(const Params& params) { to_spec(params); }
std::string kernel_name(const Params& params) {
  return kernel_name(to_spec(params));
}

}  // namespace convgen

template <>
struct fmt::formatter<convgen::KernelSpec> : fmt::formatter<std::string_view> {
  template <class Ctx>
  auto format(const convgen::KernelSpec& spec, Ctx& ctx) const {
    return fmt::formatter<std::string_view>::format(convgen::kernel_name(spec), ctx);
  }
};
