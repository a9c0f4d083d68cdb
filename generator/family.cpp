// family: the registry of kernel families and the choice made without tuning.
#include "generator/family.hpp"

#include <fmt/format.h>

#include "convgen/error.hpp"
#include "generator/families/families.hpp"

namespace convgen {

const Family& family(FamilyKind kind) {
  switch (kind) {
    case FamilyKind::direct: return direct_family();
    case FamilyKind::igemm: return igemm_family();
  }
  throw Error(fmt::format("no family registered for kind {}", static_cast<int>(kind)));
}

std::vector<const Family*> all_families() {
  std::vector<const Family*> families;
  for (const auto& [kind, name] : EnumNames<FamilyKind>::table) families.push_back(&family(kind));
  return families;
}

std::optional<std::string> check_support(const Problem& problem, const Gpu& gpu, const KernelSpec& spec) {
  if (std::string reason = validate(problem); !reason.empty()) return "invalid problem: " + reason;
  return family(spec.family).check_support(problem, gpu, spec);
}

KernelSpec default_choice(const Problem& problem, const Gpu& gpu) {
  if (std::string reason = validate(problem); !reason.empty())
    throw InputError(fmt::format("invalid problem {}: {}", problem_key(problem), reason));
  std::string reasons;
  // Few channels per group (stems, depthwise and grouped layers) leave a GEMM's tiles mostly empty: direct first.
  const bool few_channels = c_per_group(problem) <= 8 || problem.groups > 1;
  const std::array order = few_channels ? std::array{FamilyKind::direct, FamilyKind::igemm}
                                        : std::array{FamilyKind::igemm, FamilyKind::direct};
  for (FamilyKind kind : order) {
    const Family& f = family(kind);
    if (auto spec = f.default_spec(problem, gpu)) return *spec;
    reasons += fmt::format("; {}: no supported configuration", kind);
  }
  throw InputError(fmt::format("no family serves {}{}", problem_key(problem), reasons));
}

}  // namespace convgen
