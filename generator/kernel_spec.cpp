// kernel_spec: canonical kernel names, written and parsed back through the family's declared parameters.
#include "generator/kernel_spec.hpp"

#include <algorithm>
#include <charconv>

#include <fmt/format.h>

#include "convgen/error.hpp"
#include "generator/family.hpp"

namespace convgen {
namespace {

bool allowed(const ParamDecl& p, int value) {
  if (!p.allowed.empty()) return std::find(p.allowed.begin(), p.allowed.end(), value) != p.allowed.end();
  return value >= p.min && value <= p.max;
}

std::string allowed_text(const ParamDecl& p) {
  if (!p.allowed.empty()) return fmt::format("one of {}", fmt::join(p.allowed, ", "));
  return fmt::format("from {} to {}", p.min, p.max);
}

}  // namespace

std::string_view family_name_of(std::string_view kernel) {
  std::string_view best;
  for (const Family* f : all_families()) {
    const std::string_view name = f->name();
    if (kernel.substr(0, name.size()) == name && name.size() > best.size() &&
        (kernel.size() == name.size() || kernel[name.size()] == '_'))
      best = name;
  }
  return best;
}

std::string kernel_name(const KernelSpec& spec) {
  const TemplateInterface& iface = family(spec.family).interface();
  if (spec.values.size() != iface.params.size())
    throw InputError(fmt::format("a {} kernel has {} parameters, got {}", spec.family, iface.params.size(),
                                 spec.values.size()));
  std::string name = spec.family;
  for (std::size_t i = 0; i < iface.params.size(); ++i) name += fmt::format("_{}{}", iface.params[i].token, spec.values[i]);
  return name;
}

KernelSpec parse_kernel_name(std::string_view name) {
  const std::string_view family_name = family_name_of(name);
  if (family_name.empty())
    throw InputError(fmt::format("kernel name '{}': unknown family, expected one of {}", name, family_names()));
  const Family& f = family(family_name);
  KernelSpec spec{.family = std::string(family_name), .values = {}};
  std::string_view rest = name.substr(family_name.size());
  const std::span<const ParamDecl> params = f.interface().params;
  for (std::size_t i = 0; i < params.size(); ++i) {
    const ParamDecl& p = params[i];
    if (rest.empty() && params.size() - i <= f.params_added_later()) {  // an earlier convgen's name
      spec.values.push_back(p.default_value);
      continue;
    }
    if (rest.empty() || rest[0] != '_' || rest.substr(1, p.token.size()) != p.token)
      throw InputError(fmt::format("kernel name '{}': expected field '_{}<number>' at '{}'", name, p.token, rest));
    rest.remove_prefix(1 + p.token.size());
    int value = 0;
    const auto [end, ec] = std::from_chars(rest.data(), rest.data() + rest.size(), value);
    if (ec != std::errc() || end == rest.data())
      throw InputError(fmt::format("kernel name '{}': field '{}' must be an integer", name, p.token));
    if (!allowed(p, value))
      throw InputError(fmt::format("kernel name '{}': field '{}' ({}) must be {}, got {}", name, p.token, p.doc,
                                   allowed_text(p), value));
    spec.values.push_back(value);
    rest.remove_prefix(static_cast<std::size_t>(end - rest.data()));
  }
  if (!rest.empty() && rest == f.legacy_name_suffix()) rest = {};
  if (!rest.empty()) throw InputError(fmt::format("kernel name '{}': unexpected trailing '{}'", name, rest));
  return spec;
}

}  // namespace convgen
