// jit_cache: SHA-256 keys, the disk entry format (write-then-rename, verified on read) and compile-once locking.
#include "runtime/jit_cache.hpp"

#include <unistd.h>

#include <array>
#include <atomic>
#include <cstring>
#include <fstream>
#include <iterator>

#include <fmt/format.h>

#include "runtime/paths.hpp"

namespace convgen {
namespace {

// SHA-256 (FIPS 180-4), small and dependency-free: the cache key must not collide for different programs.
class Sha256 {
 public:
  void update(std::string_view data) {
    for (const char ch : data) {
      block_[block_size_++] = static_cast<std::uint8_t>(ch);
      if (block_size_ == 64) {
        compress();
        block_size_ = 0;
      }
    }
    length_bits_ += static_cast<std::uint64_t>(data.size()) * 8;
  }

  std::string hex() {
    const std::uint64_t length_bits = length_bits_;
    update(std::string_view("\x80", 1));
    while (block_size_ != 56) update(std::string_view("\0", 1));
    for (int i = 7; i >= 0; --i) block_[block_size_++] = static_cast<std::uint8_t>(length_bits >> (8 * i));
    compress();
    std::string out;
    for (const std::uint32_t word : state_) out += fmt::format("{:08x}", word);
    return out;
  }

 private:
  static std::uint32_t rotr(std::uint32_t x, int n) { return (x >> n) | (x << (32 - n)); }

  void compress() {
    static constexpr std::array<std::uint32_t, 64> k = {
        0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5,
        0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174,
        0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
        0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967,
        0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85,
        0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
        0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
        0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2};
    std::array<std::uint32_t, 64> w{};
    for (int i = 0; i < 16; ++i)
      w[i] = std::uint32_t{block_[4 * i]} << 24 | std::uint32_t{block_[4 * i + 1]} << 16 |
             std::uint32_t{block_[4 * i + 2]} << 8 | std::uint32_t{block_[4 * i + 3]};
    for (int i = 16; i < 64; ++i) {
      const std::uint32_t s0 = rotr(w[i - 15], 7) ^ rotr(w[i - 15], 18) ^ (w[i - 15] >> 3);
      const std::uint32_t s1 = rotr(w[i - 2], 17) ^ rotr(w[i - 2], 19) ^ (w[i - 2] >> 10);
      w[i] = w[i - 16] + s0 + w[i - 7] + s1;
    }
    auto [a, b, c, d, e, f, g, h] = state_;
    for (int i = 0; i < 64; ++i) {
      const std::uint32_t t1 = h + (rotr(e, 6) ^ rotr(e, 11) ^ rotr(e, 25)) + ((e & f) ^ (~e & g)) + k[i] + w[i];
      const std::uint32_t t2 = (rotr(a, 2) ^ rotr(a, 13) ^ rotr(a, 22)) + ((a & b) ^ (a & c) ^ (b & c));
      h = g, g = f, f = e, e = d + t1, d = c, c = b, b = a, a = t1 + t2;
    }
    const std::array<std::uint32_t, 8> add = {a, b, c, d, e, f, g, h};
    for (int i = 0; i < 8; ++i) state_[i] += add[i];
  }

  std::array<std::uint32_t, 8> state_ = {0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a,
                                         0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19};
  std::array<std::uint8_t, 64> block_{};
  std::size_t block_size_ = 0;
  std::uint64_t length_bits_ = 0;
};

// Entry layout (integers little-endian as this host writes them; the key covers nothing host-specific, but a
// foreign-endian file fails the magic/version check and is recompiled):
//   magic[8] "convgenJ" | u32 format version | key[64] | u64 payload length | payload sha256 hex[64] | payload
//   payload = str arch | str image | str log | i32 registers, spill stores, spill loads, smem, stack, cmem0
//   str = u64 length | bytes
constexpr std::string_view kMagic = "convgenJ";
constexpr std::size_t kKeyLength = 64;

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
  if (!reader.get(payload_length) || !reader.get_bytes(64, checksum)) return std::nullopt;
  if (!reader.get_bytes(payload_length, payload) || !reader.at_end()) return std::nullopt;
  if (sha256_hex(payload) != checksum) return std::nullopt;

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
               .compile_ms = 0};
}

std::string jit_cache_entry(std::string_view key, const Cubin& cubin) {
  const std::string payload = serialize_payload(cubin);
  std::string entry;
  entry.reserve(payload.size() + 256);
  entry.append(kMagic);
  put<std::uint32_t>(entry, JitCache::kFormatVersion);
  entry.append(key);
  put<std::uint64_t>(entry, payload.size());
  entry.append(sha256_hex(payload));
  entry.append(payload);
  return entry;
}

std::string sha256_hex(std::string_view data) {
  Sha256 hash;
  hash.update(data);
  return hash.hex();
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
  Sha256 hash;
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
      cubin = compile(program, options);
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
      outcomes.push_back({.result = std::current_exception()});
    }
  }
  return outcomes;
}

}  // namespace convgen
