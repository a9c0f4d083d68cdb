// Interim stand-in for the scanner's output for templates/igemm.cu (replaced by the generated file).
#pragma once
#include <string_view>
#include "generator/kernel_spec.hpp"
#include "generator/template_interface.hpp"
namespace convgen {
struct IgemmParams {
  static constexpr std::string_view family = "igemm";
  int block_m = 64;
  int block_n = 64;
  int block_k = 8;
  int thread_m = 4;
  int thread_n = 4;
  int stages = 2;
  int split_k = 1;
  int vector = 1;
  bool operator==(const IgemmParams&) const = default;
};
const TemplateInterface& igemm_interface();
KernelSpec to_spec(const IgemmParams& params);
void from_spec(const KernelSpec& spec, IgemmParams& params);
}  // namespace convgen
