// jit_cache_fuzz: JIT cache entries as read from disk (runtime/jit_cache.cpp) on any bytes: a cubin or nothing,
// never a read past the entry. The input's first 32 bytes are the key the entry is read for; an entry rebuilt from
// a parsed cubin is byte for byte the input.
#include "runtime/jit_cache.hpp"

#include "fuzz_input.hpp"

using namespace convgen;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text = fuzz::text_of(data, size);
  if (text.size() < 32) return 0;
  const std::string_view key = text.substr(0, 32);  // a key's length (digest_hex)
  const std::string_view entry = text.substr(32);
  const std::optional<Cubin> cubin = parse_jit_cache_entry(entry, key);
  if (!cubin) return 0;
  fuzz::require(jit_cache_entry(key, *cubin) == entry, "a parsed entry written again is the same bytes");
  return 0;
}
