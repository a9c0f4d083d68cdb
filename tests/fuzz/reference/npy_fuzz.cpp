// npy_fuzz: the .npy reader (reference/npy.cpp) on any bytes: an array or an InputError, never a read past the
// data, and an array written by npy_bytes reads back equal.
#include "reference/npy.hpp"

#include <cstring>

#include "convgen/error.hpp"
#include "fuzz_input.hpp"

using namespace convgen;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  NpyArray array;
  try {
    array = parse_npy(fuzz::text_of(data, size), "fuzz.npy");
  } catch (const InputError&) {
    return 0;
  }
  std::int64_t count = 1;
  for (const std::int64_t d : array.shape) count *= d;
  fuzz::require(static_cast<std::int64_t>(array.values.size()) == count, "one value per element of the shape");
  const NpyArray again = parse_npy(npy_bytes(array), "fuzz.npy");
  fuzz::require(again.shape == array.shape, "npy_bytes then parse_npy keeps the shape");
  // memcmp only with values: an empty vector's data() may be null, which memcmp must not get.
  fuzz::require(again.values.size() == array.values.size() &&
                    (array.values.empty() ||
                     std::memcmp(again.values.data(), array.values.data(), array.values.size() * sizeof(float)) == 0),
                "npy_bytes then parse_npy keeps every value's bits");
  return 0;
}
