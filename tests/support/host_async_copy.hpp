// host_async_copy: templates/async_copy.cuh's cp.async on the host, for the emulation tests (include it before the
// template): a copy lands at once (or is zero-filled), so commit and wait have nothing to do. That is one order the
// hardware may take; the template's barriers, ring indices and zero-fill are what the emulation checks.
#pragma once

#include <cstring>

#define CONVGEN_ASYNC_COPY_CUH
namespace convgen::async {
template <int BYTES>
inline void copy(float* shared, const float* global, bool full) {
  static_assert(BYTES == 4 || BYTES == 16, "cp.async copies 4 or 16 bytes here");
  if (full)
    std::memcpy(shared, global, BYTES);
  else
    std::memset(shared, 0, BYTES);
}
template <int = 0>
inline void commit() {}
template <int PENDING>
inline void wait() {}
}  // namespace convgen::async
