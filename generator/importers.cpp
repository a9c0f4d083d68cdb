// importers: the SEER config list and the sparse-conv seed's B,C,H,W,N table, read into suites.
#include "generator/importers.hpp"

#include <array>
#include <filesystem>

#include <fmt/format.h>

#include "convgen/error.hpp"
#include "generator/csv.hpp"

namespace convgen {
namespace {

std::string stem(std::string_view file_name) { return std::filesystem::path(file_name).stem().string(); }

template <class... Args>
[[noreturn]] void fail(std::string_view file, int line, fmt::format_string<Args...> format, Args&&... args) {
  throw InputError(fmt::format("{}:{}: {}", file, line, fmt::format(format, std::forward<Args>(args)...)));
}

int field_value(std::string_view file, int line, std::string_view field, std::string_view text, int minimum) {
  const auto value = parse_integer(text);
  if (!value || *value < minimum)
    fail(file, line, "field '{}' must be a {} integer, got '{}'", field, minimum == 0 ? "non-negative" : "positive",
         text);
  return *value;
}

void check(std::string_view file, int line, const Problem& p) {
  if (const std::string reason = validate(p); !reason.empty()) fail(file, line, "{}", reason);
}

}  // namespace

Suite import_seer_list(std::string_view text, std::string_view file_name) {
  const auto lines = data_lines(text);
  if (lines.empty()) throw InputError(fmt::format("{}: empty file, expected the number of configs", file_name));
  const auto count = parse_integer(lines.front().text);
  if (!count || *count <= 0)
    fail(file_name, lines.front().number, "expected the number of configs, a positive integer, got '{}'",
         lines.front().text);
  const int found = static_cast<int>(lines.size()) - 1;
  if (found != *count) fail(file_name, lines.front().number, "the file says {} configs but {} follow", *count, found);

  constexpr std::array<std::string_view, 8> names = {"batch", "in_c", "in_w", "out_c", "out_w", "k", "stride", "pad"};
  Suite suite{.name = stem(file_name)};
  for (auto line = lines.begin() + 1; line != lines.end(); ++line) {
    const auto fields = split_whitespace(line->text);
    if (fields.size() != names.size())
      fail(file_name, line->number, "expected 8 fields 'batch in_c in_w out_c out_w k stride pad', got {}",
           fields.size());
    std::array<int, 8> v{};
    for (std::size_t i = 0; i < names.size(); ++i)
      v[i] = field_value(file_name, line->number, names[i], fields[i], names[i] == "pad" ? 0 : 1);
    const auto [batch, in_c, in_w, out_c, out_w, k, stride, pad] = v;
    const Problem p{.n = batch,
                    .c = in_c,
                    .k = out_c,
                    .input = {1, in_w, in_w},
                    .filter = {1, k, k},
                    .stride = {1, stride, stride},
                    .padding = {0, pad, pad}};
    check(file_name, line->number, p);
    if (const int expected = output_dims(p).w; expected != out_w)
      fail(file_name, line->number, "out_w {} does not follow from in_w {}, k {}, stride {}, pad {}, which give {}",
           out_w, in_w, k, stride, pad, expected);
    suite.layers.push_back({.name = fmt::format("config_{}", suite.layers.size() + 1), .problem = p});
  }
  return suite;
}

Suite import_bchwn_list(std::string_view text, std::string_view file_name) {
  const auto lines = data_lines(text);
  if (lines.empty()) throw InputError(fmt::format("{}: empty file, expected a header B,C,H,W,N", file_name));
  const auto header = split_fields(lines.front().text, ',');
  constexpr std::array<std::string_view, 5> names = {"B", "C", "H", "W", "N"};
  // Timing columns are t1, t2, ...: anything else is a different table, not one to guess at.
  bool known = header.size() >= names.size();
  for (std::size_t i = 0; known && i < header.size(); ++i)
    known = i < names.size() ? header[i] == names[i]
                             : header[i].size() > 1 && header[i][0] == 't' && parse_integer(header[i].substr(1));
  if (!known)
    fail(file_name, lines.front().number, "expected a header B,C,H,W,N followed by timing columns t1..tn, got '{}'",
         lines.front().text);

  Suite suite{.name = stem(file_name)};
  for (auto line = lines.begin() + 1; line != lines.end(); ++line) {
    const auto fields = split_fields(line->text, ',');
    if (fields.size() != header.size())
      fail(file_name, line->number, "expected {} fields as in the header, got {}", header.size(), fields.size());
    std::array<int, 5> v{};
    for (std::size_t i = 0; i < names.size(); ++i) v[i] = field_value(file_name, line->number, names[i], fields[i], 1);
    const auto [batch, c, h, w, k] = v;
    const Problem p{.n = batch,
                    .c = c,
                    .k = k,
                    .input = {1, h, w},
                    .filter = {1, 3, 3},
                    .padding = {0, 1, 1},
                    .layout = Layout::nhwc};
    check(file_name, line->number, p);
    suite.layers.push_back({.name = fmt::format("layer_{}", suite.layers.size() + 1), .problem = p});
  }
  if (suite.layers.empty())
    throw InputError(
        fmt::format("{}: no layers, expected rows after the header on line {}", file_name, lines.front().number));
  return suite;
}

}  // namespace convgen
