// kernel_spec: canonical kernel names, written and parsed back.
#include "generator/kernel_spec.hpp"

#include <charconv>

#include <fmt/format.h>

#include "convgen/error.hpp"

namespace convgen {
namespace {

// The name's fields after the family, in order: token prefix and member.
struct Field {
  std::string_view prefix;
  int KernelSpec::*member;
};
constexpr std::array kFields = {
    Field{"m", &KernelSpec::block_m},   Field{"n", &KernelSpec::block_n},  Field{"k", &KernelSpec::block_k},
    Field{"tm", &KernelSpec::thread_m}, Field{"tn", &KernelSpec::thread_n}, Field{"st", &KernelSpec::stages},
    Field{"sk", &KernelSpec::split_k},  Field{"v", &KernelSpec::vector},
};

}  // namespace

std::string kernel_name(const KernelSpec& spec) {
  std::string name{to_string(spec.family)};
  for (const Field& f : kFields) name += fmt::format("_{}{}", f.prefix, spec.*f.member);
  return name;
}

KernelSpec parse_kernel_name(std::string_view name) {
  KernelSpec spec;
  // The family name may itself hold '_' (igemm_tc): match the longest family name that prefixes `name`.
  std::size_t family_len = 0;
  for (const auto& [kind, family_name] : EnumNames<FamilyKind>::table) {
    if (name.substr(0, family_name.size()) == family_name && family_name.size() > family_len &&
        (name.size() == family_name.size() || name[family_name.size()] == '_')) {
      spec.family = kind;
      family_len = family_name.size();
    }
  }
  if (family_len == 0)
    throw InputError(fmt::format("kernel name '{}': unknown family, expected one of {}", name,
                                 enum_choices<FamilyKind>()));
  std::string_view rest = name.substr(family_len);
  for (const Field& f : kFields) {
    if (rest.empty() || rest[0] != '_' || rest.substr(1, f.prefix.size()) != f.prefix)
      throw InputError(fmt::format("kernel name '{}': expected field '_{}<number>' at '{}'", name, f.prefix, rest));
    rest.remove_prefix(1 + f.prefix.size());
    int value = 0;
    const auto [end, ec] = std::from_chars(rest.data(), rest.data() + rest.size(), value);
    if (ec != std::errc() || value <= 0)
      throw InputError(fmt::format("kernel name '{}': field '{}' must be a positive integer", name, f.prefix));
    spec.*f.member = value;
    rest.remove_prefix(static_cast<std::size_t>(end - rest.data()));
  }
  if (!rest.empty()) throw InputError(fmt::format("kernel name '{}': unexpected trailing '{}'", name, rest));
  return spec;
}

}  // namespace convgen
