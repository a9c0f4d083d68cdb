// export_file_test: reading a tuning export file (tools/export_file), plain or gzipped, and its errors.
#include "tools/export_file/export_file.hpp"

#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "convgen/error.hpp"

namespace convgen {
namespace {

std::filesystem::path scratch(const std::string& name) {
  return std::filesystem::temp_directory_path() / fmt::format("convgen-export-file-{}-{}", getpid(), name);
}

std::string error_of(const std::filesystem::path& path) {
  try {
    read_export_file(path);
  } catch (const InputError& e) {
    return e.what();
  }
  return "no error";
}

TEST(ExportFile, ReadsPlainAndGzippedTextAlike) {
  const std::filesystem::path plain = scratch("plain.json");
  std::ofstream(plain) << "{\"format\": \"convgen-tuning\"}\n";
  EXPECT_EQ(read_export_file(plain), "{\"format\": \"convgen-tuning\"}\n");
  // A published export, gzipped: its text is JSON from the first byte.
  const std::string published = read_export_file(std::string(CONVGEN_SOURCE_DIR) +
                                                 "/bench/results/h200/bulk-output-2026-11-29/"
                                                 "resnet50-fp16-n8-measurements.json.gz");
  EXPECT_EQ(published.substr(0, 1), "{");
  EXPECT_NE(published.find("\"convgen-tuning\""), std::string::npos);
  std::filesystem::remove(plain);
}

TEST(ExportFile, AMissingFileOrABrokenGzipStreamIsAnInputErrorNamingTheFile) {
  const std::filesystem::path missing = scratch("missing.json.gz");
  EXPECT_EQ(error_of(missing), fmt::format("{}: cannot open the file (expected a JSON file written by `convgen db "
                                           "export`, or it gzipped)",
                                           missing.string()));
  // A gzip header cut short after its magic bytes.
  const std::filesystem::path cut = scratch("cut.json.gz");
  std::ofstream(cut, std::ios::binary) << std::string("\x1f\x8b\x08\x00\x00\x00", 6);
  EXPECT_NE(error_of(cut).find(cut.string() + ": not a readable gzip file: "), std::string::npos) << error_of(cut);
  std::filesystem::remove(cut);
}

}  // namespace
}  // namespace convgen
