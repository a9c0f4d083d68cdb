// export_file: the text of a tuning export file (`convgen db export`), plain or gzip-compressed as bench/results/
// publishes them, for `db import`, `db replay` and the tests that replay published measurements.
#pragma once

#include <filesystem>
#include <string>

namespace convgen {

// Returns the file's text, gunzipped where it is gzipped (zlib reads both). Throws InputError naming the file when it
// cannot be opened or its gzip stream is broken or cut short.
std::string read_export_file(const std::filesystem::path& path);

}  // namespace convgen
