// hash: FNV-1a, 64 bits: small, stable across platforms and builds, enough to tell data sets and filter patterns
// apart in keys (not a cryptographic hash).
#pragma once

#include <cstddef>
#include <cstdint>

namespace convgen {

inline constexpr std::uint64_t kFnvBasis = 0xcbf29ce484222325ull;

// Folds `size` bytes at `data` into `hash` (start from kFnvBasis).
inline std::uint64_t fnv1a(std::uint64_t hash, const void* data, std::size_t size) {
  const auto* bytes = static_cast<const unsigned char*>(data);
  for (std::size_t i = 0; i < size; ++i) hash = (hash ^ bytes[i]) * 0x100000001b3ull;
  return hash;
}

}  // namespace convgen
