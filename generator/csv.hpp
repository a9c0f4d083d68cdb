// csv: splits the text of the shapes and importer files into numbered lines and trimmed fields.
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace convgen {

// One line that holds data: its 1-based number in the file (for error messages) and its trimmed text.
struct TextLine {
  int number = 0;
  std::string_view text;
  bool operator==(const TextLine&) const = default;
};

// Returns the lines of `text` that hold data: blank lines and lines whose first non-blank character is '#' are
// skipped. Handles "\n" and "\r\n" line ends and a leading UTF-8 byte order mark. The views point into `text`.
std::vector<TextLine> data_lines(std::string_view text);

// Splits a line at every `separator` and trims spaces and tabs from each field. The files we read hold numbers
// and plain names, so there is no quoting: "a, b,c" -> {"a", "b", "c"}.
std::vector<std::string_view> split_fields(std::string_view line, char separator);

// Splits a line at runs of spaces and tabs: " 1  2\t3 " -> {"1", "2", "3"}.
std::vector<std::string_view> split_whitespace(std::string_view line);

// Parses a whole decimal integer (an optional leading '-', digits, nothing after); nothing when it is not one
// or does not fit an int.
std::optional<int> parse_integer(std::string_view text);
// Parses a whole field as a finite decimal number ("0.5", "1e-3"); nothing when it is not one.
std::optional<double> parse_number(std::string_view text);

// Reads a whole file; nothing when it cannot be opened or is not a regular file.
std::optional<std::string> read_text_file(const std::filesystem::path& path);

}  // namespace convgen
