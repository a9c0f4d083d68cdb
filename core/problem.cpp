// problem: derived sizes, validation and the canonical key of a convolution problem.
#include "convgen/problem.hpp"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <vector>

#include <fmt/format.h>

#include "convgen/error.hpp"

namespace convgen {
namespace {

int output_extent(int in, int filter, int stride, int pad, int dil) {
  const int span = dil * (filter - 1) + 1;
  const int room = in + 2 * pad - span;
  return room < 0 ? 0 : room / stride + 1;
}

std::vector<std::string_view> split(std::string_view text, char sep) {
  std::vector<std::string_view> parts;
  std::size_t start = 0;
  while (true) {
    const std::size_t end = text.find(sep, start);
    parts.push_back(text.substr(start, end - start));
    if (end == std::string_view::npos) break;
    start = end + 1;
  }
  return parts;
}

int parse_int(std::string_view text, std::string_view key) {
  int value = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || end != text.data() + text.size())
    throw InputError(fmt::format("problem key '{}': expected an integer, got '{}'", key, text));
  return value;
}

Dims3 parse_dims(std::string_view text, std::string_view key) {
  const auto parts = split(text, 'x');
  if (parts.size() != 3)
    throw InputError(fmt::format("problem key '{}': expected three extents DxHxW, got '{}'", key, text));
  return {parse_int(parts[0], key), parse_int(parts[1], key), parse_int(parts[2], key)};
}

}  // namespace

Dims3 output_dims(const Problem& p) {
  return {output_extent(p.input.d, p.filter.d, p.stride.d, p.padding.d, p.dilation.d),
          output_extent(p.input.h, p.filter.h, p.stride.h, p.padding.h, p.dilation.h),
          output_extent(p.input.w, p.filter.w, p.stride.w, p.padding.w, p.dilation.w)};
}

std::int64_t activation_elements(const Problem& p) {
  return std::int64_t{p.n} * p.c * p.input.d * p.input.h * p.input.w;
}

std::int64_t filter_elements(const Problem& p) {
  return std::int64_t{p.k} * c_per_group(p) * p.filter.d * p.filter.h * p.filter.w;
}

std::int64_t output_elements(const Problem& p) {
  const Dims3 out = output_dims(p);
  return std::int64_t{p.n} * p.k * out.d * out.h * out.w;
}

std::int64_t flops(const Problem& p) {
  return 2 * output_elements(p) * c_per_group(p) * p.filter.d * p.filter.h * p.filter.w;
}

std::int64_t min_bytes(const Problem& p) {
  return (activation_elements(p) + filter_elements(p) + output_elements(p)) * element_bytes(p.precision);
}

std::string validate(const Problem& p) {
  const auto positive = [](int v) { return v > 0; };
  if (!positive(p.n)) return fmt::format("batch must be positive, got {}", p.n);
  if (!positive(p.c)) return fmt::format("input channels must be positive, got {}", p.c);
  if (!positive(p.k)) return fmt::format("output channels must be positive, got {}", p.k);
  if (!positive(p.groups)) return fmt::format("groups must be positive, got {}", p.groups);
  if (!(p.act_sparsity >= 0 && p.act_sparsity <= 1))
    return fmt::format("act_sparsity must be a zero fraction in [0, 1], got {}", p.act_sparsity);
  if (p.c % p.groups != 0)
    return fmt::format("input channels {} are not divisible by groups {}", p.c, p.groups);
  if (p.k % p.groups != 0)
    return fmt::format("output channels {} are not divisible by groups {}", p.k, p.groups);
  const char* names[] = {"depth", "height", "width"};
  const int in[] = {p.input.d, p.input.h, p.input.w};
  const int f[] = {p.filter.d, p.filter.h, p.filter.w};
  const int st[] = {p.stride.d, p.stride.h, p.stride.w};
  const int pad[] = {p.padding.d, p.padding.h, p.padding.w};
  const int dil[] = {p.dilation.d, p.dilation.h, p.dilation.w};
  const int r = rank(p.layout);
  for (int i = 0; i < 3; ++i) {
    if (in[i] <= 0) return fmt::format("input {} must be positive, got {}", names[i], in[i]);
    if (f[i] <= 0) return fmt::format("filter {} must be positive, got {}", names[i], f[i]);
    if (st[i] <= 0) return fmt::format("stride {} must be positive, got {}", names[i], st[i]);
    if (dil[i] <= 0) return fmt::format("dilation {} must be positive, got {}", names[i], dil[i]);
    if (pad[i] < 0) return fmt::format("padding {} must not be negative, got {}", names[i], pad[i]);
    // Dims beyond the layout's rank must be unit extents.
    if (i < 3 - r && (in[i] != 1 || f[i] != 1 || st[i] != 1 || dil[i] != 1 || pad[i] != 0))
      return fmt::format("layout {} is {}-D: {} must have extent 1, stride 1, dilation 1 and padding 0", p.layout,
                         r, names[i]);
  }
  const Dims3 out = output_dims(p);
  if (out.d <= 0 || out.h <= 0 || out.w <= 0)
    return fmt::format("padding leaves no output: output is {}x{}x{}", out.d, out.h, out.w);
  return {};
}

int act_sparsity_bucket(const Problem& p) { return static_cast<int>(std::lround(p.act_sparsity * 20)) * 5; }

std::string problem_key(const Problem& p) {
  const int zeros = act_sparsity_bucket(p);
  return fmt::format("n{}_c{}_k{}_i{}x{}x{}_f{}x{}x{}_s{}x{}x{}_p{}x{}x{}_d{}x{}x{}_g{}_{}_{}", p.n, p.c, p.k,
                     p.input.d, p.input.h, p.input.w, p.filter.d, p.filter.h, p.filter.w, p.stride.d, p.stride.h,
                     p.stride.w, p.padding.d, p.padding.h, p.padding.w, p.dilation.d, p.dilation.h, p.dilation.w,
                     p.groups, p.layout, p.precision) +
         (zeros != 0 ? fmt::format("_z{}", zeros) : std::string()) +
         (p.weights.pattern.empty() ? std::string() : "_w" + p.weights.pattern);
}

Problem parse_problem_key(std::string_view key) {
  const auto tokens = split(key, '_');
  if (tokens.size() < 11 || tokens.size() > 13)
    throw InputError(
        fmt::format("problem key '{}': expected 11 to 13 fields separated by '_', got {}", key, tokens.size()));
  const auto field = [&](int i, char prefix) {
    if (tokens[i].empty() || tokens[i][0] != prefix)
      throw InputError(fmt::format("problem key '{}': field {} must start with '{}', got '{}'", key, i + 1, prefix,
                                   tokens[i]));
    return tokens[i].substr(1);
  };
  Problem p{
      .n = parse_int(field(0, 'n'), key),
      .c = parse_int(field(1, 'c'), key),
      .k = parse_int(field(2, 'k'), key),
      .input = parse_dims(field(3, 'i'), key),
      .filter = parse_dims(field(4, 'f'), key),
      .stride = parse_dims(field(5, 's'), key),
      .padding = parse_dims(field(6, 'p'), key),
      .dilation = parse_dims(field(7, 'd'), key),
      .groups = parse_int(field(8, 'g'), key),
  };
  const auto layout = parse_enum<Layout>(tokens[9]);
  if (!layout)
    throw InputError(fmt::format("problem key '{}': unknown layout '{}', expected one of {}", key, tokens[9],
                                 enum_choices<Layout>()));
  const auto precision = parse_enum<Precision>(tokens[10]);
  if (!precision)
    throw InputError(fmt::format("problem key '{}': unknown precision '{}', expected one of {}", key, tokens[10],
                                 enum_choices<Precision>()));
  p.layout = *layout;
  p.precision = *precision;
  // Then the optional sparsity bucket "z<percent>" and filter pattern "w<16 hex digits>", in that order.
  std::size_t next = 11;
  if (next < tokens.size() && !tokens[next].empty() && tokens[next][0] == 'z') {
    const int zeros = parse_int(field(static_cast<int>(next), 'z'), key);
    if (zeros <= 0 || zeros > 100 || zeros % 5 != 0)
      throw InputError(fmt::format("problem key '{}': sparsity bucket '{}' must be a multiple of 5 in 5..100", key,
                                   tokens[next]));
    p.act_sparsity = zeros / 100.0;
    ++next;
  }
  if (next < tokens.size()) {
    const std::string_view pattern = field(static_cast<int>(next), 'w');
    if (pattern.size() != 16 || pattern.find_first_not_of("0123456789abcdef") != std::string_view::npos)
      throw InputError(fmt::format("problem key '{}': filter pattern '{}' must be 'w' and 16 lowercase hex digits",
                                   key, tokens[next]));
    p.weights.pattern = std::string(pattern);
    ++next;
  }
  if (next != tokens.size())
    throw InputError(fmt::format("problem key '{}': unexpected field '{}' after the precision (expected z<bucket> "
                                 "then w<pattern>)",
                                 key, tokens[next]));
  return p;
}

std::string describe(const Problem& p) {
  const Dims3 out = output_dims(p);
  const int r = rank(p.layout);
  std::string filter, input;
  if (r == 3) {
    filter = fmt::format("{}x{}x{}", p.filter.d, p.filter.h, p.filter.w);
    input = fmt::format("{}x{}x{}", p.input.d, p.input.h, p.input.w);
  } else if (r == 2) {
    filter = fmt::format("{}x{}", p.filter.h, p.filter.w);
    input = fmt::format("{}x{}", p.input.h, p.input.w);
  } else {
    filter = fmt::format("{}", p.filter.w);
    input = fmt::format("{}", p.input.w);
  }
  std::string text = fmt::format("{}->{} {} s{} p{}", p.c, p.k, filter, p.stride.w, p.padding.w);
  if (p.dilation.w != 1) text += fmt::format(" d{}", p.dilation.w);
  if (p.groups != 1) text += fmt::format(" g{}", p.groups);
  if (r == 3) {
    text += fmt::format(" at {} -> {}x{}x{}", input, out.d, out.h, out.w);
  } else if (r == 2) {
    text += fmt::format(" at {} -> {}x{}", input, out.h, out.w);
  } else {
    text += fmt::format(" at {} -> {}", input, out.w);
  }
  text += fmt::format(", n{}", p.n);
  if (p.act_sparsity != 0) text += fmt::format(", {:.0f}% zeros", p.act_sparsity * 100);
  if (p.weights.values) {
    const auto zeros = std::count(p.weights.values->begin(), p.weights.values->end(), 0.0f);
    text += fmt::format(", its filter ({:.0f}% zeros)", 100.0 * static_cast<double>(zeros) /
                                                          static_cast<double>(std::max<std::size_t>(1, p.weights.values->size())));
  } else if (!p.weights.pattern.empty()) {
    text += fmt::format(", filter pattern {}", p.weights.pattern);
  }
  return text;
}

}  // namespace convgen
