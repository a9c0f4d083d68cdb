// importers_fuzz: the SEER list and B,C,H,W,N readers (generator/importers.cpp) on any bytes: a suite or an
// InputError, and every imported suite survives the shapes CSV round trip.
#include "generator/importers.hpp"

#include "convgen/error.hpp"
#include "fuzz_input.hpp"
#include "generator/shapes.hpp"

using namespace convgen;

namespace {

void round_trip(const Suite& suite) {
  fuzz::require(parse_suite(write_suite_csv(suite), "fuzz.csv") == suite, "imported suite reads back from CSV");
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text = fuzz::text_of(data, size);
  try {
    round_trip(import_seer_list(text, "fuzz.txt"));
  } catch (const InputError&) {
  }
  try {
    round_trip(import_bchwn_list(text, "fuzz.csv"));
  } catch (const InputError&) {
  }
  return 0;
}
