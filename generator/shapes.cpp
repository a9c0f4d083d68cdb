// shapes: parsing, checking and writing the shapes CSV format of shapes/README.md.
#include "generator/shapes.hpp"

#include <algorithm>
#include <array>
#include <map>
#include <optional>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "convgen/error.hpp"
#include "generator/csv.hpp"

namespace convgen {
namespace {

// Every column the format knows, in the order write_suite_csv writes them.
constexpr std::array<std::string_view, 21> kColumns = {
    "name",       "n",        "c",           "k",        "d",      "h",      "w",         "t",     "r",
    "s",          "stride",   "pad",         "dilation", "groups", "layout", "precision", "count", "act_sparsity",
    "input_relu", "epilogue", "relu_on_load"};
constexpr std::array<std::string_view, 8> kRequired = {"name", "n", "c", "k", "h", "w", "r", "s"};

std::string column_list() {
  std::string out;
  for (const auto column : kColumns) out += (out.empty() ? "" : ", ") + std::string(column);
  return out;
}

// The fields of one data line, by column, and where the line is (for messages).
struct Row {
  std::string_view file;
  int line = 0;
  std::array<std::optional<std::string_view>, kColumns.size()> fields{};

  std::optional<std::string_view> get(std::string_view column) const {
    const auto at = std::find(kColumns.begin(), kColumns.end(), column);
    return fields[at - kColumns.begin()];
  }

  template <class... Args>
  [[noreturn]] void fail(fmt::format_string<Args...> format, Args&&... args) const {
    throw InputError(fmt::format("{}:{}: {}", file, line, fmt::format(format, std::forward<Args>(args)...)));
  }
};

int positive(const Row& row, std::string_view column, int fallback) {
  const auto text = row.get(column);
  if (!text) return fallback;
  const auto value = parse_integer(*text);
  if (!value || *value <= 0) row.fail("column '{}' must be a positive integer, got '{}'", column, *text);
  return *value;
}

// Reads stride, pad or dilation: one integer for every spatial dim of the layout, or one per dim (HxW, DxHxW).
// Dims beyond the layout's rank keep the neutral value (stride and dilation 1, padding 0).
Dims3 spatial(const Row& row, std::string_view column, Layout layout, int minimum) {
  const int neutral = minimum == 0 ? 0 : 1;
  const auto text = row.get(column);
  const int r = rank(layout);
  std::array<int, 3> dims = {neutral, neutral, neutral};
  if (text) {
    const auto parts = split_fields(*text, 'x');
    std::vector<int> values;
    for (const auto part : parts) {
      const auto value = parse_integer(part);
      if (!value || *value < minimum) break;
      values.push_back(*value);
    }
    if (values.size() != parts.size() || (parts.size() != 1 && static_cast<int>(parts.size()) != r)) {
      const char* kind = minimum == 0 ? "a non-negative integer" : "a positive integer";
      const char* per_dim = r == 3 ? " or DxHxW" : r == 2 ? " or HxW" : "";
      row.fail("column '{}' must be {}{} (layout {} is {}-D), got '{}'", column, kind, per_dim, layout, r, *text);
    }
    for (int i = 0; i < r; ++i) dims[3 - r + i] = values.size() == 1 ? values[0] : values[i];
  }
  return {dims[0], dims[1], dims[2]};
}

template <class E>
E named(const Row& row, std::string_view column, E fallback) {
  const auto text = row.get(column);
  if (!text) return fallback;
  const auto value = parse_enum<E>(*text);
  if (!value) row.fail("column '{}' must be one of {}, got '{}'", column, enum_choices<E>(), *text);
  return *value;
}

// A 0/1 column, 0 when absent.
bool flag(const Row& row, std::string_view column) {
  const auto text = row.get(column);
  if (!text || *text == "0") return false;
  if (*text == "1") return true;
  row.fail("column '{}' must be 0 or 1, got '{}'", column, *text);
}

// Reads the epilogue column: "none", or terms joined by '+' (convgen::parse_epilogue: "bias+add+relu").
Epilogue epilogue(const Row& row) {
  const auto text = row.get("epilogue");
  if (!text) return {};
  try {
    return parse_epilogue(*text);
  } catch (const InputError& e) {
    row.fail("column 'epilogue': {}", e.what());
  }
}

Layer parse_layer(const Row& row) {
  const std::string_view name = *row.get("name");
  if (name.empty()) row.fail("column 'name' must not be empty");
  Problem p{
      .n = positive(row, "n", 1),
      .c = positive(row, "c", 1),
      .k = positive(row, "k", 1),
      .input = {positive(row, "d", 1), positive(row, "h", 1), positive(row, "w", 1)},
      .filter = {positive(row, "t", 1), positive(row, "r", 1), positive(row, "s", 1)},
      .groups = positive(row, "groups", 1),
  };
  // A row with depth in its input or filter is 3-D unless it names its layout.
  const bool flat = p.input.d == 1 && p.filter.d == 1;
  p.layout = named<Layout>(row, "layout", flat ? Layout::nchw : Layout::ncdhw);
  p.precision = named<Precision>(row, "precision", Precision::fp32);
  p.stride = spatial(row, "stride", p.layout, 1);
  p.padding = spatial(row, "pad", p.layout, 0);
  p.dilation = spatial(row, "dilation", p.layout, 1);
  if (const auto text = row.get("act_sparsity")) {
    const auto zeros = parse_number(*text);
    if (!zeros || *zeros < 0 || *zeros > 1)
      row.fail("column 'act_sparsity' must be a zero fraction in [0, 1], got '{}'", *text);
    p.act_sparsity = *zeros;
  }
  p.epilogue = epilogue(row);
  p.relu_on_load = flag(row, "relu_on_load");
  const int count = positive(row, "count", 1);
  if (const std::string reason = validate(p); !reason.empty()) row.fail("{}", reason);
  return {.name = std::string(name), .problem = p, .count = count, .input_relu = flag(row, "input_relu")};
}

// Writes stride, pad or dilation as one integer when every dim of the layout's rank agrees, else per dim.
std::string spatial_field(const Dims3& dims, Layout layout) {
  const int r = rank(layout);
  const std::array<int, 3> all = {dims.d, dims.h, dims.w};
  const bool same = std::all_of(all.end() - r, all.end(), [&](int v) { return v == all[2]; });
  if (same) return fmt::format("{}", all[2]);
  return fmt::format("{}", fmt::join(all.end() - r, all.end(), "x"));
}

}  // namespace

Suite parse_suite(std::string_view text, std::string_view file_name) {
  const auto lines = data_lines(text);
  if (lines.empty())
    throw InputError(fmt::format("{}: empty file, expected a header line naming the columns", file_name));

  // The header maps each field position to a known column.
  const TextLine& header = lines.front();
  std::vector<std::size_t> column_of;
  for (const auto field : split_fields(header.text, ',')) {
    const auto at = std::find(kColumns.begin(), kColumns.end(), field);
    if (at == kColumns.end())
      throw InputError(fmt::format("{}:{}: unknown column '{}', expected one of {}", file_name, header.number, field,
                                   column_list()));
    const auto index = static_cast<std::size_t>(at - kColumns.begin());
    if (std::find(column_of.begin(), column_of.end(), index) != column_of.end())
      throw InputError(fmt::format("{}:{}: duplicate column '{}'", file_name, header.number, field));
    column_of.push_back(index);
  }
  for (const auto required : kRequired) {
    const auto index =
        static_cast<std::size_t>(std::find(kColumns.begin(), kColumns.end(), required) - kColumns.begin());
    if (std::find(column_of.begin(), column_of.end(), index) == column_of.end())
      throw InputError(fmt::format("{}:{}: missing required column '{}'", file_name, header.number, required));
  }

  Suite suite{.name = std::filesystem::path(file_name).stem().string()};
  std::map<std::string, int> line_of_name;
  for (auto line = lines.begin() + 1; line != lines.end(); ++line) {
    const auto fields = split_fields(line->text, ',');
    Row row{.file = file_name, .line = line->number};
    if (fields.size() != column_of.size())
      row.fail("expected {} fields as in the header, got {}", column_of.size(), fields.size());
    for (std::size_t i = 0; i < fields.size(); ++i) row.fields[column_of[i]] = fields[i];
    Layer layer = parse_layer(row);
    // Names are unique (shapes/README.md): they name generated files, weights files and report rows.
    const auto [first, inserted] = line_of_name.emplace(layer.name, line->number);
    if (!inserted) row.fail("duplicate layer name '{}' (first on line {})", layer.name, first->second);
    suite.layers.push_back(std::move(layer));
  }
  if (suite.layers.empty())
    throw InputError(fmt::format("{}: no layers, expected rows after the header on line {}", file_name, header.number));
  return suite;
}

Suite load_suite(const std::filesystem::path& path) {
  const auto text = read_text_file(path);
  if (!text) throw InputError(fmt::format("{}: cannot open shapes file", path.string()));
  return parse_suite(*text, path.string());
}

std::string write_suite_csv(const Suite& suite) {
  std::string out = column_list();
  out.erase(std::remove(out.begin(), out.end(), ' '), out.end());
  out += '\n';
  for (const Layer& layer : suite.layers) {
    // A name must survive the trip: no separators, no comment mark, nothing the reader trims.
    const std::string& name = layer.name;
    if (name.empty() || name.front() == '#' || name.find_first_of(",\n\r") != std::string::npos ||
        name.front() == ' ' || name.back() == ' ' || name.front() == '\t' || name.back() == '\t')
      throw InputError(
          fmt::format("layer name '{}' cannot be written to CSV: it must be non-empty, without commas, "
                      "line breaks, a leading '#' or surrounding blanks",
                      name));
    const Problem& p = layer.problem;
    out +=
        fmt::format("{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{}\n", name, p.n, p.c, p.k, p.input.d,
                    p.input.h, p.input.w, p.filter.d, p.filter.h, p.filter.w, spatial_field(p.stride, p.layout),
                    spatial_field(p.padding, p.layout), spatial_field(p.dilation, p.layout), p.groups, p.layout,
                    p.precision, layer.count, p.act_sparsity, static_cast<int>(layer.input_relu), to_string(p.epilogue),
                    static_cast<int>(p.relu_on_load));
  }
  return out;
}

std::vector<Layer> merge_identical_layers(const std::vector<Layer>& layers) {
  std::vector<Layer> merged;
  for (const Layer& layer : layers) {
    const auto same = std::find_if(merged.begin(), merged.end(), [&](const Layer& m) {
      return m.problem == layer.problem && m.input_relu == layer.input_relu;
    });
    if (same == merged.end())
      merged.push_back(layer);
    else
      same->count += layer.count;
  }
  return merged;
}

Suite with_batch(const Suite& suite, int n) {
  if (n <= 0) throw InputError(fmt::format("batch override must be a positive integer, got {}", n));
  Suite out = suite;
  for (Layer& layer : out.layers) layer.problem.n = n;
  return out;
}

std::int64_t suite_flops(const Suite& suite) {
  std::int64_t total = 0;
  for (const Layer& layer : suite.layers) total += flops(layer.problem) * layer.count;
  return total;
}

int suite_conv_count(const Suite& suite) {
  int total = 0;
  for (const Layer& layer : suite.layers) total += layer.count;
  return total;
}

}  // namespace convgen
