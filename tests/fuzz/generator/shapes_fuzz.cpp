// shapes_fuzz: the shapes CSV reader (generator/shapes.cpp, generator/csv.cpp) on any bytes: a suite or an
// InputError, sizes that never overflow, and a suite written by write_suite_csv reads back equal.
#include "generator/shapes.hpp"

#include "convgen/error.hpp"
#include "fuzz_input.hpp"

using namespace convgen;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  Suite suite;
  try {
    suite = parse_suite(fuzz::text_of(data, size), "fuzz.csv");
  } catch (const InputError&) {
    return 0;
  }
  for (const Layer& layer : suite.layers) {
    const Problem& p = layer.problem;
    fuzz::require(flops(p) > 0 && min_bytes(p) > 0, "a valid problem has positive FLOPs and bytes");
    fuzz::require(problem_key(parse_problem_key(problem_key(p))) == problem_key(p), "problem key round trip");
  }
  std::string written;
  try {
    written = write_suite_csv(suite);
  } catch (const InputError&) {
    return 0;  // a name the reader took but CSV cannot hold (a leading '#' when 'name' is not the first column)
  }
  fuzz::require(parse_suite(written, "fuzz.csv") == suite, "write_suite_csv then parse_suite gives the same suite");
  return 0;
}
