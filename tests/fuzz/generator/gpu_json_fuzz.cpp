// gpu_json_fuzz: the GPU descriptor reader (generator/gpu_json.cpp) on any bytes: a Gpu or an InputError (never a
// JSON library exception), and a descriptor written by gpu_to_json reads back equal.
#include "generator/gpu_json.hpp"

#include "convgen/error.hpp"
#include "fuzz_input.hpp"

using namespace convgen;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  Gpu gpu;
  try {
    gpu = parse_gpu_json(fuzz::text_of(data, size), "fuzz.json");
  } catch (const InputError&) {
    return 0;
  }
  fuzz::require(parse_gpu_json(gpu_to_json(gpu), "fuzz.json") == gpu, "gpu_to_json then parse_gpu_json");
  return 0;
}
