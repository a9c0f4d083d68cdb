// Interim stand-in for the scanner's output for templates/direct.cu (replaced by the generated file).
#pragma once
#include <string_view>
#include "generator/kernel_spec.hpp"
#include "generator/template_interface.hpp"
namespace convgen {
struct DirectParams {
  static constexpr std::string_view family = "direct";
  int block_m = 4;
  int block_n = 128;
  int block_k = 1;
  int thread_m = 1;
  int thread_n = 2;
  bool operator==(const DirectParams&) const = default;
};
const TemplateInterface& direct_interface();
KernelSpec to_spec(const DirectParams& params);
void from_spec(const KernelSpec& spec, DirectParams& params);
}  // namespace convgen
