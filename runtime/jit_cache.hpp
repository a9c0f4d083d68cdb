// jit_cache: compiled cubins kept in memory and on disk, keyed by everything that changes the binary.
#pragma once

#include <any>
#include <cstdint>
#include <exception>
#include <filesystem>
#include <future>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "runtime/compiler.hpp"
#include "runtime/thread_pool.hpp"

namespace convgen {

// Returns the XXH3-128 digest of `data` (xxHash) as 32 lower-case hex digits, as `xxhsum -H2` prints it. Keys and
// entry checksums use it: 128 bits make an accidental collision of two programs' keys negligible, and it hashes a
// rendered kernel (about 35 KB with its headers) in microseconds, which a cache hit pays every time. It is not
// cryptographic, and need not be: whoever can write the cache folder can place any entry under any key.
std::string digest_hex(std::string_view data);

// Returns the JIT cache's default disk folder, user_cache_dir() / "jit".
std::filesystem::path default_jit_cache_dir();

// A cache of NVRTC compiles: in memory, and on disk when given a folder (one file per key, written to a
// temporary file and renamed into place, so readers never see half an entry). Thread-safe: concurrent
// requests for one key compile once, the others wait for that compile. It also remembers results made from its
// cubins (recall, remember) for as long as it lives.
//   JitCache cache;                                   // disk entries under default_jit_cache_dir()
//   Cubin cubin = cache.get_or_compile(program, {.arch = "sm_90"});
class JitCache {
 public:
  // Part of every key and every entry: bump it when the entry layout or the key's material changes.
  static constexpr std::uint32_t kFormatVersion = 2;  // 2: XXH3-128 keys and checksums (1: SHA-256)

  struct Stats {
    std::int64_t memory_hits = 0;      // found in memory (recalls too), or already being compiled by another thread
    std::int64_t disk_hits = 0;        // loaded from a valid disk entry
    std::int64_t misses = 0;           // in neither memory nor on disk: compiled (counted even if the compile fails)
    std::int64_t corrupt_entries = 0;  // disk entries rejected (magic, version, key, length or checksum) and deleted
    std::int64_t compiles = 0;         // NVRTC compiles that succeeded
    std::int64_t disk_write_failures = 0;  // entries that could not be written (the cubin is still returned)
    std::int64_t recalls = 0;  // memory hits answered by a remembered result (recall), without get_or_compile
    bool operator==(const Stats&) const = default;
  };

  // Keeps entries on disk under `disk_dir` (created when missing; throws InputError if it cannot be), or in
  // memory only when `disk_dir` is std::nullopt.
  explicit JitCache(std::optional<std::filesystem::path> disk_dir = default_jit_cache_dir());

  // As above, with the keys of another NVRTC version than the one loaded: what a folder shared with another
  // toolkit holds (a test writes such entries and checks that they are never loaded).
  JitCache(std::optional<std::filesystem::path> disk_dir, std::string nvrtc_version);

  // Returns the cubin of `program` compiled with `options`, from memory, disk or a fresh compile (which is then
  // stored). A compile error propagates as CompileError and nothing is cached. Cached cubins have compile_ms 0.
  Cubin get_or_compile(const Program& program, const CompileOptions& options);

  // Returns the key (32 hex digits, digest_hex) of the cache format version, NVRTC version, architecture, the full NVRTC
  // option list, the program's name, source, and every header's name and text.
  std::string key(const Program& program, const CompileOptions& options) const;

  // Returns the disk entry's path for `key` (whether or not it exists); std::nullopt for a memory-only cache.
  std::optional<std::filesystem::path> entry_path(const std::string& key) const;

  Stats stats() const;

  // Results made from this cache's cubins, kept for the cache's lifetime so that asking again skips the work that
  // made them (build_kernel keeps every kernel it built: building it again renders and keys nothing). `id` names
  // everything the result depends on, and its kind ("built_kernel|..."); another cache object, on this folder or
  // another, remembers nothing of this one's, so it still finds its cubins on disk or compiles them.
  //   if (auto kept = cache.recall<BuiltKernel>(id)) return *kept;
  //   cache.remember(id, std::make_shared<const BuiltKernel>(kernel));
  // recall returns what is remembered under `id` as a T (counted as a memory hit and a recall), or nullptr when
  // nothing is, or something of another type; remember keeps the first value given for an id (threads that built
  // the same result at once give the same value).
  template <class T>
  std::shared_ptr<const T> recall(const std::string& id);
  template <class T>
  void remember(const std::string& id, std::shared_ptr<const T> value);

 private:
  std::optional<Cubin> load_entry(const std::string& key);
  void store_entry(const std::string& key, const Cubin& cubin);

  std::optional<std::filesystem::path> disk_dir_;
  std::string nvrtc_version_;
  mutable std::mutex mutex_;
  std::map<std::string, std::shared_future<Cubin>> entries_;  // ready, or being compiled by one thread
  std::map<std::string, std::any> remembered_;                // recall/remember: a std::shared_ptr<const T> each
  Stats stats_;
};

template <class T>
std::shared_ptr<const T> JitCache::recall(const std::string& id) {
  std::lock_guard lock(mutex_);
  const auto found = remembered_.find(id);
  if (found == remembered_.end()) return nullptr;
  const auto* value = std::any_cast<std::shared_ptr<const T>>(&found->second);
  if (!value) return nullptr;
  ++stats_.memory_hits;
  ++stats_.recalls;
  return *value;
}

template <class T>
void JitCache::remember(const std::string& id, std::shared_ptr<const T> value) {
  std::lock_guard lock(mutex_);
  remembered_.try_emplace(id, std::move(value));
}

// Returns the disk entry that holds `cubin` under `key`, as the cache writes it (layout in jit_cache.cpp).
std::string jit_cache_entry(std::string_view key, const Cubin& cubin);

// Returns the cubin of a disk entry when the entry is whole and belongs to `key` (magic, format version, key,
// lengths and the payload's digest all agree), else nothing: the cache then deletes and recompiles it. Reads
// nothing past the end of `data`, whatever its bytes.
std::optional<Cubin> parse_jit_cache_entry(std::string_view data, std::string_view key);

// One program's outcome in compile_all: its cubin, or the exception its compile threw.
struct CompileOutcome {
  std::variant<Cubin, std::exception_ptr> result;

  bool ok() const { return std::holds_alternative<Cubin>(result); }
  // Returns the cubin; rethrows the compile's exception when !ok().
  const Cubin& cubin() const;
};

// Compiles every program through `cache` on `pool`, in parallel; outcome i belongs to programs[i], and one
// failure does not lose the others.
std::vector<CompileOutcome> compile_all(JitCache& cache, std::span<const Program> programs,
                                        const CompileOptions& options, ThreadPool& pool);

}  // namespace convgen
