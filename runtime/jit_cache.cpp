// jit_cache: XXH3-128 keys, the disk entry format (write-then-rename, verified on read) and compile-once locking.
#include "runtime/jit_cache.hpp"

#include <unistd.h>

#include <array>
#include <atomic>
#include <cstring>
#include <fstream>
#include <iterator>

#include <fmt/format.h>
#define XXH_INLINE_ALL
#include <xxhash.h>

#include "runtime/paths.hpp"

namespace convgen {
namespace {

// XXH3-128 of everything given to update(), streaming (xxHash, header-only here: nothing to link).
class Digest {
 public:
  Digest() {
    XXH3_INITSTATE(&state_);
    XXH3_128bits_reset(&state_);
  }
  void update(std::string_view data) { XXH3_128bits_update(&state_, data.data(), data.size()); }
  std::string hex() const {
    XXH128_canonical_t canonical;  // big-endian bytes: the digest's usual spelling (xxhsum -H2)
    XXH128_canonicalFromHash(&canonical, XXH3_128bits_digest(&state_));
    std::string out;
    for (const unsigned char byte : canonical.digest) out += fmt::format("{:02x}", byte);
    return out;
  }

 private:
  XXH3_state_t state_;
};

// Entry layout (integers little-endian as this host writes them; the key covers nothing host-specific, but a
// foreign-endian file fails the magic/version check and is recompiled):
//   magic[8] "convgenJ" | u32 format version | key[32] | u64 payload length | payload digest hex[32] | payload
//   payload = str arch | str image | str log | i32 registers, spill stores, spill loads, smem, stack, cmem0
//   str = u64 length | bytes
constexpr std::string_view kMagic = "convgenJ";
constexpr std::size_t kKeyLength = 32;

template <class T>
void put(std::string& out, T value) {
  char bytes[sizeof(T)];
  std::memcpy(bytes, &value, sizeof(T));
  out.append(bytes, sizeof(T));
}

void put_string(std::string& out, std::string_view text) {
  put<std::uint64_t>(out, text.size());
  out.append(text);
}

// A bounds-checked cursor over an entry: every read fails (returns false) past the end instead of reading on.
class Reader {
 public:
  explicit Reader(std::string_view data) : data_(data) {}

  template <class T>
  bool get(T& value) {
    if (data_.size() - offset_ < sizeof(T)) return false;
    std::memcpy(&value, data_.data() + offset_, sizeof(T));
    offset_ += sizeof(T);
    return true;
  }

  bool get_bytes(std::size_t count, std::string_view& bytes) {
    if (data_.size() - offset_ < count) return false;
    bytes = data_.substr(offset_, count);
    offset_ += count;
    return true;
  }

  bool get_string(std::string_view& text) {
    std::uint64_t length = 0;
    return get(length) && get_bytes(length, text);
  }

  bool at_end() const { return offset_ == data_.size(); }

 private:
  std::string_view data_;
  std::size_t offset_ = 0;
};

std::string serialize_payload(const Cubin& cubin) {
  std::string payload;
  put_string(payload, cubin.arch);
  put_string(payload, std::string_view(cubin.image.data(), cubin.image.size()));
  put_string(payload, cubin.log);
  const PtxasReport& r = cubin.report;
  for (const int figure :
       {r.registers, r.spill_store_bytes, r.spill_load_bytes, r.smem_bytes, r.stack_bytes, r.cmem0_bytes})
    put<std::int32_t>(payload, figure);
  return payload;
}

}  // namespace

std::optional<Cubin> parse_jit_cache_entry(std::string_view data, std::string_view key) {
  Reader reader(data);
  std::string_view magic, stored_key, checksum, payload;
  std::uint32_t version = 0;
  std::uint64_t payload_length = 0;
  if (!reader.get_bytes(kMagic.size(), magic) || magic != kMagic) return std::nullopt;
  if (!reader.get(version) || version != JitCache::kFormatVersion) return std::nullopt;
  if (!reader.get_bytes(kKeyLength, stored_key) || stored_key != key) return std::nullopt;
  if (!reader.get(payload_length) || !reader.get_bytes(kKeyLength, checksum)) return std::nullopt;
  if (!reader.get_bytes(payload_length, payload) || !reader.at_end()) return std::nullopt;
  if (digest_hex(payload) != checksum) return std::nullopt;

  Reader fields(payload);
  std::string_view arch, image, log;
  std::array<std::int32_t, 6> figures{};
  if (!fields.get_string(arch) || !fields.get_string(image) || !fields.get_string(log)) return std::nullopt;
  for (std::int32_t& figure : figures)
    if (!fields.get(figure)) return std::nullopt;
  if (!fields.at_end()) return std::nullopt;
  return Cubin{.arch = std::string(arch),
               .image = std::vector<char>(image.begin(), image.end()),
               .log = std::string(log),
               .report = {.registers = figures[0],
                          .spill_store_bytes = figures[1],
                          .spill_load_bytes = figures[2],
                          .smem_bytes = figures[3],
                          .stack_bytes = figures[4],
                          .cmem0_bytes = figures[5]},
               .compile_ms = 0,
               .entry_reports = parse_ptxas_reports(std::string(log))};
}

std::string jit_cache_entry(std::string_view key, const Cubin& cubin) {
  const std::string payload = serialize_payload(cubin);
  std::string entry;
  entry.reserve(payload.size() + 256);
  entry.append(kMagic);
  put<std::uint32_t>(entry, JitCache::kFormatVersion);
  entry.append(key);
  put<std::uint64_t>(entry, payload.size());
  entry.append(digest_hex(payload));
  entry.append(payload);
  return entry;
}

std::string digest_hex(std::string_view data) {
  Digest digest;
  digest.update(data);
  return digest.hex();
}

std::filesystem::path default_jit_cache_dir() { return user_cache_dir() / "jit"; }

JitCache::JitCache(std::optional<std::filesystem::path> disk_dir) : JitCache(std::move(disk_dir), nvrtc_version()) {}

JitCache::JitCache(std::optional<std::filesystem::path> disk_dir, std::string nvrtc_version)
    : disk_dir_(std::move(disk_dir)), nvrtc_version_(std::move(nvrtc_version)) {
  if (!disk_dir_) return;
  std::error_code ec;
  std::filesystem::create_directories(*disk_dir_, ec);
  if (ec)
    throw InputError(fmt::format("jit cache folder '{}': cannot create it: {}", disk_dir_->string(), ec.message()));
}

std::string JitCache::key(const Program& program, const CompileOptions& options) const {
  // Every field is length-prefixed, so no two different field lists give the same material.
  Digest hash;
  const auto add = [&hash](std::string_view field) {
    hash.update(fmt::format("{}:", field.size()));
    hash.update(field);
  };
  add("convgen-jit");
  add(std::to_string(kFormatVersion));
  add(nvrtc_version_);
  add(options.arch);
  const std::vector<std::string> nvrtc_list = nvrtc_options(options);
  add(std::to_string(nvrtc_list.size()));
  for (const std::string& option : nvrtc_list) add(option);
  add(program.name);
  add(program.source);
  add(std::to_string(program.headers.size()));
  for (const auto& [name, text] : program.headers) {
    add(name);
    add(text);
  }
  return hash.hex();
}

std::optional<std::filesystem::path> JitCache::entry_path(const std::string& key) const {
  if (!disk_dir_) return std::nullopt;
  return *disk_dir_ / (key + ".cgjit");
}

JitCache::Stats JitCache::stats() const {
  std::lock_guard lock(mutex_);
  return stats_;
}

Cubin JitCache::get_or_compile(const Program& program, const CompileOptions& options) {
  const std::string k = key(program, options);
  std::promise<Cubin> promise;
  {
    std::unique_lock lock(mutex_);
    if (const auto it = entries_.find(k); it != entries_.end()) {
      ++stats_.memory_hits;
      const std::shared_future<Cubin> pending = it->second;
      lock.unlock();
      return pending.get();  // waits while another thread compiles it; rethrows its failure
    }
    entries_.emplace(k, promise.get_future().share());
  }
  try {
    std::optional<Cubin> cubin = load_entry(k);
    if (cubin) {
      std::lock_guard lock(mutex_);
      ++stats_.disk_hits;
    } else {
      {
        std::lock_guard lock(mutex_);
        ++stats_.misses;
      }
      cubin = compile_for_cache(program, options);
      {
        std::lock_guard lock(mutex_);
        ++stats_.compiles;
      }
      store_entry(k, *cubin);
    }
    Cubin cached = *cubin;
    cached.compile_ms = 0;
    promise.set_value(std::move(cached));
    return *std::move(cubin);
  } catch (...) {
    // Forget the key so that a later request tries again; threads already waiting get this exception.
    {
      std::lock_guard lock(mutex_);
      entries_.erase(k);
    }
    promise.set_exception(std::current_exception());
    throw;
  }
}

std::optional<Cubin> JitCache::load_entry(const std::string& key) {
  if (!disk_dir_) return std::nullopt;
  const std::filesystem::path path = *entry_path(key);
  // Only a regular file is an entry: a folder or a device in its place is a miss (its write then fails and is
  // counted), never an exception; so is a file that fails while being read.
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path, ec)) return std::nullopt;
  std::string data;
  try {
    std::ifstream in(path, std::ios::binary);
    if (!in) return std::nullopt;
    data.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  } catch (const std::ios_base::failure&) {
    return std::nullopt;
  }
  if (std::optional<Cubin> cubin = parse_jit_cache_entry(data, key)) return cubin;
  // Never load a damaged entry: drop it; the recompile writes a good one in its place.
  std::filesystem::remove(path, ec);
  std::lock_guard lock(mutex_);
  ++stats_.corrupt_entries;
  return std::nullopt;
}

void JitCache::store_entry(const std::string& key, const Cubin& cubin) {
  if (!disk_dir_) return;
  static std::atomic<std::uint64_t> counter{0};
  const std::string entry = jit_cache_entry(key, cubin);

  // Same folder as the entry, so the rename is atomic; the name is unique per process and write.
  const std::filesystem::path final_path = *entry_path(key);
  const std::filesystem::path temp_path =
      *disk_dir_ / fmt::format("{}.tmp.{}.{}", key, static_cast<long>(getpid()), counter++);
  std::error_code ec;
  {
    std::ofstream out(temp_path, std::ios::binary | std::ios::trunc);
    out.write(entry.data(), static_cast<std::streamsize>(entry.size()));
    out.close();
    if (!out) ec = std::make_error_code(std::errc::io_error);
  }
  if (!ec) std::filesystem::rename(temp_path, final_path, ec);
  if (ec) {
    std::error_code ignored;
    std::filesystem::remove(temp_path, ignored);
    std::lock_guard lock(mutex_);
    ++stats_.disk_write_failures;
  }
}

const Cubin& CompileOutcome::cubin() const {
  if (const auto* error = std::get_if<std::exception_ptr>(&result)) std::rethrow_exception(*error);
  return std::get<Cubin>(result);
}

std::vector<CompileOutcome> compile_all(JitCache& cache, std::span<const Program> programs,
                                        const CompileOptions& options, ThreadPool& pool) {
  std::vector<std::future<Cubin>> futures;
  futures.reserve(programs.size());
  for (const Program& program : programs)
    futures.push_back(pool.submit([&cache, &program, &options] { return cache.get_or_compile(program, options); }));
  std::vector<CompileOutcome> outcomes;
  outcomes.reserve(programs.size());
  for (std::future<Cubin>& future : futures) {
    try {
      outcomes.push_back({.result = future.get()});
    } catch (...) {
      // Set in place: GCC 12 warns falsely (-Wmaybe-uninitialized) about the Cubin alternative's strings when the
      // variant is converted from the exception_ptr.
      outcomes.emplace_back().result.emplace<std::exception_ptr>(std::current_exception());
    }
  }
  return outcomes;
}

}  // namespace convgen
