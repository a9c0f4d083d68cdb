// template_interface: what a kernel template declares (its tunable parameters, entry points and constraints), as
// the template scanner (tools/template_scanner) reads it at build time into a generated table per template.
#pragma once

#include <span>
#include <string_view>

namespace convgen {

// A place in a template, for messages that point at the template's own text.
struct TemplateLocation {
  std::string_view file;  // "templates/igemm.cu" (relative to the source root)
  int line = 0;
  int column = 0;
};

enum class ParamType { integer, boolean };

// One tunable parameter: `CONVGEN_PARAM(token, values, doc) constexpr <type> NAME = default;` in the template.
struct ParamDecl {
  std::string_view name;    // the template's constant, e.g. "BLOCK_M" (the prelude defines cfg::BLOCK_M)
  std::string_view field;   // the generated C++ member, e.g. "block_m"
  std::string_view token;   // its prefix in the kernel name, e.g. "m" in igemm_m64_...
  ParamType type = ParamType::integer;
  int default_value = 0;
  std::span<const int> allowed;  // the allowed values; empty: any value in [min, max]
  int min = 0, max = 0;          // inclusive bounds (the allowed list's extremes when it is given; 0 and 1 for bool)
  std::string_view doc;
  TemplateLocation where;
};

// One parameter of an entry point: a device pointer named for what it binds to (g_activation, g_filter, g_output,
// g_workspace, or g_<buffer> of the launch plan).
struct EntryArg {
  std::string_view name;  // "g_activation"
  std::string_view type;  // "const float *"
};

// One `extern "C" __global__` entry: CONVGEN_ENTRY (suffix "") or CONVGEN_ENTRY_NAMED(suffix).
struct EntryDecl {
  std::string_view suffix;
  std::span<const EntryArg> args;
  TemplateLocation where;
};

// One static_assert of the template, with the tunable parameters its condition names.
struct ConstraintDecl {
  std::string_view condition;  // the condition's source text
  std::string_view message;
  std::span<const std::string_view> params;  // names of the tunable parameters it mentions
  TemplateLocation where;
};

// Everything a template declares. The family's name is the template's file stem (templates/igemm.cu: "igemm").
struct TemplateInterface {
  std::string_view family;
  std::string_view template_file;  // "igemm.cu": the embedded template's name
  std::span<const ParamDecl> params;
  std::span<const EntryDecl> entries;
  std::span<const ConstraintDecl> constraints;

  // Returns the entry point of a suffix ("" for the main entry), or nullptr.
  const EntryDecl* find_entry(std::string_view suffix) const {
    for (const EntryDecl& e : entries)
      if (e.suffix == suffix) return &e;
    return nullptr;
  }
};

// Every scanned template's interface, sorted by family; generated at build time (all_interfaces.cpp) from templates/*.cu.
std::span<const TemplateInterface* const> template_interfaces();

}  // namespace convgen
