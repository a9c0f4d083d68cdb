// csv: numbered data lines, field splitting and integer parsing for the shapes and importer files.
#include "generator/csv.hpp"

#include <charconv>
#include <cmath>
#include <fstream>
#include <sstream>

namespace convgen {
namespace {

std::string_view trim(std::string_view text) {
  const auto first = text.find_first_not_of(" \t\r");
  if (first == std::string_view::npos) return {};
  const auto last = text.find_last_not_of(" \t\r");
  return text.substr(first, last - first + 1);
}

}  // namespace

std::vector<TextLine> data_lines(std::string_view text) {
  // Spreadsheet exports often start with a UTF-8 byte order mark; it is not part of the first column's name.
  if (text.starts_with("\xEF\xBB\xBF")) text.remove_prefix(3);
  std::vector<TextLine> lines;
  int number = 0;
  std::size_t start = 0;
  while (start < text.size()) {
    const std::size_t end = text.find('\n', start);
    const std::string_view line = trim(text.substr(start, end == std::string_view::npos ? end : end - start));
    ++number;
    if (!line.empty() && line.front() != '#') lines.push_back({.number = number, .text = line});
    if (end == std::string_view::npos) break;
    start = end + 1;
  }
  return lines;
}

std::vector<std::string_view> split_fields(std::string_view line, char separator) {
  std::vector<std::string_view> fields;
  std::size_t start = 0;
  while (true) {
    const std::size_t end = line.find(separator, start);
    fields.push_back(trim(line.substr(start, end == std::string_view::npos ? end : end - start)));
    if (end == std::string_view::npos) break;
    start = end + 1;
  }
  return fields;
}

std::vector<std::string_view> split_whitespace(std::string_view line) {
  std::vector<std::string_view> fields;
  std::size_t start = line.find_first_not_of(" \t\r");
  while (start != std::string_view::npos) {
    const std::size_t end = line.find_first_of(" \t\r", start);
    fields.push_back(line.substr(start, end == std::string_view::npos ? end : end - start));
    start = end == std::string_view::npos ? end : line.find_first_not_of(" \t\r", end);
  }
  return fields;
}

std::optional<int> parse_integer(std::string_view text) {
  int value = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (text.empty() || ec != std::errc() || end != text.data() + text.size()) return std::nullopt;
  return value;
}

std::optional<double> parse_number(std::string_view text) {
  double value = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (text.empty() || ec != std::errc() || end != text.data() + text.size() || !std::isfinite(value))
    return std::nullopt;
  return value;
}

std::optional<std::string> read_text_file(const std::filesystem::path& path) {
  std::error_code error;
  if (std::filesystem::is_directory(path, error)) return std::nullopt;
  std::ifstream in(path, std::ios::binary);
  if (!in) return std::nullopt;
  std::ostringstream text;
  text << in.rdbuf();
  return std::move(text).str();
}

}  // namespace convgen
