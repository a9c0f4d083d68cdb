// compile_sweep: how much of a configuration sweep the NVRTC tests compile. CI (2 cores, 30 minutes) compiles every
// configuration for the first architecture or precision of a sweep and a third of them (every third, and the family's
// default) for the others, whose templates are the same text; scripts/compile-sweep.sh sets CONVGEN_COMPILE_SWEEP=full
// and compiles all of them everywhere.
#pragma once

#include <cstdlib>
#include <string_view>

namespace convgen::testing_support {

// True where CONVGEN_COMPILE_SWEEP is "full".
inline bool full_compile_sweep() {
  const char* value = std::getenv("CONVGEN_COMPILE_SWEEP");
  return value && std::string_view(value) == "full";
}

// Whether the `index`-th configuration of a sweep is compiled: always in the sweep's first architecture or precision
// (`primary`), in a full sweep and for the default; otherwise every third.
inline bool compile_in_sweep(int index, bool primary, bool is_default) {
  return primary || is_default || full_compile_sweep() || index % 3 == 0;
}

}  // namespace convgen::testing_support
