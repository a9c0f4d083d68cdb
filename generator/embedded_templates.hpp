// embedded_templates: the kernel templates' text, compiled into the binary (see cmake/EmbedTemplates.cmake).
#pragma once

#include <string_view>
#include <vector>

namespace convgen {

struct EmbeddedTemplate {
  std::string_view name;  // file name under templates/, e.g. "igemm.cu"
  std::string_view text;
};

// Returns every file of templates/ as embedded at build time.
const std::vector<EmbeddedTemplate>& embedded_templates();

}  // namespace convgen
