// emit: writes a scanned template interface as generated C++ (params struct, tables, spec codec) and as JSON.
#pragma once

#include <string>
#include <vector>

#include "scan.hpp"

namespace convgen::scanner {

// "igemm" -> "IgemmParams", "act_sparse" -> "ActSparseParams".
std::string params_struct_name(const std::string& family);

// <family>_params.hpp: struct <Family>Params with #line directives to the template's declarations.
std::string params_header(const Interface& interface);
// <family>_interface.cpp: the TemplateInterface tables, <family>_interface(), to_spec and from_spec.
std::string interface_source(const Interface& interface);
// all_interfaces.cpp: template_interfaces() over every family, sorted by name.
std::string registry_source(std::vector<std::string> families);
// The interface as JSON (tests and docs).
std::string interface_json(const Interface& interface);

// Writes `text` to `path` unless the file already holds exactly that (so that ninja sees no change).
void write_if_changed(const std::string& path, const std::string& text);

}  // namespace convgen::scanner
