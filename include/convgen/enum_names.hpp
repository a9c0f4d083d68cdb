// enum_names: one name table per enum drives to_string, parsing and fmt formatting.
#pragma once

#include <array>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

#include <fmt/format.h>

namespace convgen {

// Specialize EnumNames<E> with `static constexpr std::array table` of {value, name} pairs.
template <class E>
struct EnumNames;

template <class E>
concept NamedEnum = requires { EnumNames<E>::table; };

// Returns the table name of `value`, or "?" for a value missing from the table.
template <NamedEnum E>
constexpr std::string_view to_string(E value) {
  for (const auto& [v, name] : EnumNames<E>::table)
    if (v == value) return name;
  return "?";
}

// Parses a table name back (exact, lower case); nothing when the name is unknown.
template <NamedEnum E>
constexpr std::optional<E> parse_enum(std::string_view text) {
  for (const auto& [v, name] : EnumNames<E>::table)
    if (name == text) return v;
  return std::nullopt;
}

// Lists the table's names joined by ", " (for "expected one of ..." messages).
template <NamedEnum E>
std::string enum_choices() {
  std::string out;
  for (const auto& [v, name] : EnumNames<E>::table) {
    if (!out.empty()) out += ", ";
    out += name;
  }
  return out;
}

}  // namespace convgen

template <convgen::NamedEnum E>
struct fmt::formatter<E> : fmt::formatter<std::string_view> {
  template <class Ctx>
  auto format(E value, Ctx& ctx) const {
    return fmt::formatter<std::string_view>::format(convgen::to_string(value), ctx);
  }
};
