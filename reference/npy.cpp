// npy: the .npy reader and writer (https://numpy.org/doc/stable/reference/generated/numpy.lib.format.html).
#include "reference/npy.hpp"

#include <bit>
#include <cstring>
#include <fstream>
#include <iterator>
#include <string_view>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "convgen/error.hpp"

namespace convgen {
namespace {

constexpr std::string_view kMagic = "\x93NUMPY";

// The value text of `key` in the header dict ("'descr': '<f4', 'fortran_order': False, 'shape': (3, 4), "), up
// to the next top-level comma or the closing brace; empty when absent.
std::string_view dict_value(std::string_view header, std::string_view key) {
  const std::string quoted = fmt::format("'{}'", key);
  std::size_t at = header.find(quoted);
  if (at == std::string_view::npos) return {};
  at = header.find(':', at + quoted.size());
  if (at == std::string_view::npos) return {};
  std::size_t begin = header.find_first_not_of(' ', at + 1);
  if (begin == std::string_view::npos) return {};
  std::size_t end = begin;
  int depth = 0;
  for (; end < header.size(); ++end) {
    const char c = header[end];
    if (c == '(') ++depth;
    if (c == ')') --depth;
    if (depth == 0 && (c == ',' || c == '}')) break;
    if (depth < 0) break;
  }
  return header.substr(begin, end - begin);
}

std::vector<std::int64_t> parse_shape(std::string_view text, std::string_view file) {
  if (text.size() < 2 || text.front() != '(' || text.back() != ')')
    throw InputError(fmt::format("{}: shape '{}' is not a tuple", file, text));
  std::vector<std::int64_t> shape;
  std::string_view inner = text.substr(1, text.size() - 2);
  while (!inner.empty()) {
    const std::size_t comma = inner.find(',');
    std::string_view item = inner.substr(0, comma);
    while (!item.empty() && item.front() == ' ') item.remove_prefix(1);
    while (!item.empty() && item.back() == ' ') item.remove_suffix(1);
    if (!item.empty()) {
      std::int64_t value = 0;
      for (const char c : item) {
        if (c < '0' || c > '9') throw InputError(fmt::format("{}: shape '{}' is not a tuple of sizes", file, text));
        if (__builtin_mul_overflow(value, 10, &value) || __builtin_add_overflow(value, c - '0', &value))
          throw InputError(fmt::format("{}: shape '{}' has a size that does not fit 64 bits", file, text));
      }
      shape.push_back(value);
    }
    if (comma == std::string_view::npos) break;
    inner.remove_prefix(comma + 1);
  }
  return shape;
}

}  // namespace

NpyArray read_npy(const std::filesystem::path& path) {
  const std::string file = path.string();
  std::ifstream in(path, std::ios::binary);
  if (!in) throw InputError(fmt::format("{}: no such file (expected a float32 .npy file)", file));
  const std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  return parse_npy(bytes, file);
}

NpyArray parse_npy(std::string_view bytes, std::string_view file) {
  if (bytes.size() < 10 || bytes.substr(0, kMagic.size()) != kMagic)
    throw InputError(fmt::format("{}: not a .npy file (no \\x93NUMPY magic)", file));
  const int major = static_cast<unsigned char>(bytes[6]);
  std::size_t header_len = 0, header_at = 0;
  if (major == 1) {
    header_len = static_cast<unsigned char>(bytes[8]) | static_cast<std::size_t>(static_cast<unsigned char>(bytes[9]))
                                                            << 8;
    header_at = 10;
  } else if (major == 2 || major == 3) {
    if (bytes.size() < 12) throw InputError(fmt::format("{}: truncated .npy header", file));
    for (int i = 0; i < 4; ++i)
      header_len |= static_cast<std::size_t>(static_cast<unsigned char>(bytes[8 + i])) << (8 * i);
    header_at = 12;
  } else {
    throw InputError(fmt::format("{}: .npy format version {} is not supported (1 to 3 are)", file, major));
  }
  if (header_len > bytes.size() - header_at) throw InputError(fmt::format("{}: truncated .npy header", file));
  const std::string_view header = bytes.substr(header_at, header_len);
  const std::string_view descr = dict_value(header, "descr");
  if (descr != "'<f4'")
    throw InputError(fmt::format("{}: dtype {}, expected '<f4' (float32, little-endian)", file,
                                 descr.empty() ? std::string_view("missing") : descr));
  if (dict_value(header, "fortran_order") != "False")
    throw InputError(fmt::format("{}: Fortran-order array, expected C order (numpy.ascontiguousarray)", file));
  NpyArray array{.shape = parse_shape(dict_value(header, "shape"), file)};
  const std::size_t data_at = header_at + header_len;
  const std::size_t data_bytes = bytes.size() - data_at;
  // The product is checked as it grows: a shape like (2**40, 2**40) must not wrap around to a small count.
  std::int64_t count = 1;
  bool fits = true;
  for (const std::int64_t d : array.shape) fits = fits && !__builtin_mul_overflow(count, d, &count);
  std::int64_t needed = 0;
  fits = fits && !__builtin_mul_overflow(count, std::int64_t{4}, &needed);
  if (!fits)
    throw InputError(fmt::format("{}: shape ({}) is too large: its byte count does not fit 64 bits", file,
                                 fmt::join(array.shape, ", ")));
  if (data_bytes < static_cast<std::uint64_t>(needed))
    throw InputError(fmt::format("{}: {} bytes of data, expected {} for shape ({})", file, data_bytes, needed,
                                 fmt::join(array.shape, ", ")));
  array.values.resize(static_cast<std::size_t>(count));
  static_assert(std::endian::native == std::endian::little, "the .npy reader assumes a little-endian host");
  // An array with a zero extent has no values, and an empty vector's data() may be null, which memcpy must not get.
  if (needed > 0) std::memcpy(array.values.data(), bytes.data() + data_at, static_cast<std::size_t>(needed));
  return array;
}

std::string npy_bytes(const NpyArray& array) {
  std::string shape = fmt::format("{}", fmt::join(array.shape, ", "));
  if (array.shape.size() == 1) shape += ",";
  std::string header = fmt::format("{{'descr': '<f4', 'fortran_order': False, 'shape': ({}), }}", shape);
  // Pad with spaces so that the data starts at a multiple of 64 bytes, then a newline.
  const std::size_t total = kMagic.size() + 4 + header.size() + 1;
  header.append((64 - total % 64) % 64, ' ');
  header += '\n';
  std::string out(kMagic);
  out += '\x01';
  out += '\x00';
  out += static_cast<char>(header.size() & 0xff);
  out += static_cast<char>(header.size() >> 8);
  out += header;
  out.append(reinterpret_cast<const char*>(array.values.data()), array.values.size() * 4);
  return out;
}

}  // namespace convgen
