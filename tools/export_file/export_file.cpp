#include "tools/export_file/export_file.hpp"

#include <fstream>
#include <memory>
#include <string_view>

#include <fmt/format.h>
#include <zlib.h>

#include "convgen/error.hpp"

namespace convgen {
namespace {

// zlib's message for a stream, without the path it puts in front.
std::string gzip_error(gzFile in, const std::string& path) {
  int code = Z_OK;
  std::string_view message = gzerror(in, &code);
  if (message.starts_with(path + ": ")) message.remove_prefix(path.size() + 2);
  return fmt::format("{}: not a readable gzip file: {}", path, message);
}

}  // namespace

std::string read_export_file(const std::filesystem::path& path) {
  const std::string name = path.string();
  if (!std::ifstream(path, std::ios::binary))
    throw InputError(
        fmt::format("{}: cannot open the file (expected a JSON file written by `convgen db export`, or it gzipped)",
                    name));
  const std::unique_ptr<gzFile_s, int (*)(gzFile)> in(gzopen(name.c_str(), "rb"), gzclose);
  if (!in) throw InputError(fmt::format("{}: cannot open the file: out of memory", name));
  std::string text;
  char chunk[1 << 16];
  for (;;) {
    const int got = gzread(in.get(), chunk, sizeof chunk);
    if (got < 0) throw InputError(gzip_error(in.get(), name));
    if (got == 0) break;
    text.append(chunk, static_cast<std::size_t>(got));
  }
  int code = Z_OK;
  gzerror(in.get(), &code);
  if (code != Z_OK) throw InputError(gzip_error(in.get(), name));  // a stream cut short
  return text;
}

}  // namespace convgen
