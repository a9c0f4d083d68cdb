// problem_fuzz: problem keys (core/problem.cpp), as the tuning database and manifests read them back, on any bytes:
// a valid problem or an InputError, and the key of a parsed problem parses back to the same key.
#include "convgen/problem.hpp"

#include "convgen/error.hpp"
#include "fuzz_input.hpp"

using namespace convgen;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  Problem p;
  try {
    p = parse_problem_key(fuzz::text_of(data, size));
  } catch (const InputError&) {
    return 0;
  }
  fuzz::require(validate(p).empty(), "a parsed key is a valid problem");
  fuzz::require(flops(p) > 0 && min_bytes(p) > 0, "a valid problem has positive FLOPs and bytes");
  const std::string key = problem_key(p);
  fuzz::require(problem_key(parse_problem_key(key)) == key, "problem_key then parse_problem_key");
  (void)describe(p);
  return 0;
}
