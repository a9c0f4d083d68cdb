// npy: reading and writing NumPy .npy files of float32 (format versions 1.0 to 3.0, C order, little-endian), the
// format `--weights DIR` takes one filter per layer in. No Debian library reads .npy from C++; the format is a
// magic string, a header dict and the raw array.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

namespace convgen {

struct NpyArray {
  std::vector<std::int64_t> shape;
  std::vector<float> values;  // C order
};

// Reads a float32 array. Throws InputError naming the file and what was expected: no such file, not a .npy file,
// a dtype other than '<f4' (float32), Fortran order, or fewer bytes than the shape needs.
NpyArray read_npy(const std::filesystem::path& path);

// Parses the bytes of a .npy file as read_npy does; `file` names the input in error messages. A shape whose size
// or byte count does not fit 64 bits is refused like a truncated file, never wrapped.
NpyArray parse_npy(std::string_view bytes, std::string_view file);

// The bytes of a version-1.0 .npy file holding `array` ('<f4', C order).
std::string npy_bytes(const NpyArray& array);

}  // namespace convgen
