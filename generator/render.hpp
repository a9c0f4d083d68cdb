// render: turns a problem and a configuration into kernel source: a prelude of constants, then the template.
#pragma once

#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "convgen/problem.hpp"
#include "generator/family.hpp"
#include "generator/kernel_spec.hpp"

namespace convgen {

// Returns a template's text: from the folder named by the CONVGEN_TEMPLATE_DIR environment variable when set
// (development), else the copy embedded at build time. Throws InputError for an unknown name.
std::string template_text(std::string_view name);

// Whether template_text reads the CONVGEN_TEMPLATE_DIR folder (whose files may change while a process runs) rather
// than the embedded copies (fixed for the process's life).
bool templates_from_folder();

// Returns the names of every template header (*.cuh), which NVRTC receives as include headers.
std::vector<std::string> template_header_names();

// A constant a family adds to the prelude beyond the shape and its parameters (igemm_tc's PRECISION), rendered as
// `constexpr int <name> = <value>;  // <comment>` at the end of namespace `cfg`.
struct PreludeConstant {
  std::string name;
  int value = 0;
  std::string comment;
};

// The prelude constant PRECISION, convgen::Precision's value for the problem (0 fp32, 1 tf32, 2 fp16, 3 bf16): what
// the templates that take more than one data type read.
PreludeConstant precision_constant(const Problem& problem);

// Renders the epilogue as the prelude's `struct Epilogue` (in namespace cfg; templates/epilogue.cuh reads it): BIAS
// and RESIDUAL, ACT (convgen::Activation's value), ALPHA, BETA, CLIP_LO and CLIP_HI.
std::string render_epilogue(const Epilogue& epilogue);

// Renders the prelude: `#define CONVGEN_PRELUDE`, the entry symbol, and the problem and the spec's parameters (as
// the template declares them) as constexpr constants in namespace `cfg` (see templates/README.md for the list), the
// problem's epilogue (render_epilogue), then the family's `extra` constants.
std::string render_prelude(const Problem& problem, const KernelSpec& spec, const TemplateInterface& iface,
                           std::span<const PreludeConstant> extra = {});

// Renders a whole kernel: the prelude, then `#line 1 "<template>"` and the template's text.
KernelSource render_kernel(const Problem& problem, const KernelSpec& spec, const TemplateInterface& iface,
                           std::span<const PreludeConstant> extra = {});

}  // namespace convgen
