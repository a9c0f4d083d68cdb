// kernel_spec (test stand-in): the new KernelSpec shape, until generator/kernel_spec.hpp has it; only the generated
// interface check compiles against this file.
#pragma once

#include <string>
#include <vector>

namespace convgen {

struct KernelSpec {
  std::string family;
  std::vector<int> values;
  bool operator==(const KernelSpec&) const = default;
};

}  // namespace convgen
