// kernel_spec_fuzz: kernel names (generator/kernel_spec.cpp) on any bytes: a spec or an InputError, and the
// canonical name of a parsed spec parses back to the same spec and is its own canonical name.
#include "generator/kernel_spec.hpp"

#include "convgen/error.hpp"
#include "fuzz_input.hpp"

using namespace convgen;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  KernelSpec spec;
  try {
    spec = parse_kernel_name(fuzz::text_of(data, size));
  } catch (const InputError&) {
    return 0;
  }
  const std::string name = kernel_name(spec);
  fuzz::require(parse_kernel_name(name) == spec, "kernel_name then parse_kernel_name gives the same spec");
  fuzz::require(kernel_name(parse_kernel_name(name)) == name, "a canonical name is its own canonical name");
  return 0;
}
