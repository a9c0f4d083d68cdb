// fuzz_input: what every libFuzzer target shares: the input as text, and the check that stops a run on a broken
// property (libFuzzer saves the input that broke it).
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string_view>

namespace convgen::fuzz {

inline std::string_view text_of(const std::uint8_t* data, std::size_t size) {
  return {reinterpret_cast<const char*>(data), size};
}

// Aborts with `what` unless `condition` holds: a round trip that changed a value is a bug like a crash.
inline void require(bool condition, const char* what) {
  if (condition) return;
  std::fprintf(stderr, "fuzz property broken: %s\n", what);
  std::abort();
}

}  // namespace convgen::fuzz
