// problem: derived sizes, validation and the canonical key of a convolution problem.
#include "convgen/problem.hpp"

#include <algorithm>
#include <charconv>
#include <climits>
#include <cmath>
#include <initializer_list>
#include <optional>
#include <vector>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "convgen/error.hpp"

namespace convgen {
namespace {

// In 64 bits: the extents are ints, but 2 pad + in and dil (f - 1) need not be (validate refuses an output
// extent past an int; output_dims of an unvalidated problem clamps rather than wrap).
std::int64_t output_extent64(int in, int filter, int stride, int pad, int dil) {
  const std::int64_t span = std::int64_t{dil} * (filter - 1) + 1;
  const std::int64_t room = std::int64_t{in} + 2 * std::int64_t{pad} - span;
  return room < 0 || stride <= 0 ? 0 : room / stride + 1;
}

int output_extent(int in, int filter, int stride, int pad, int dil) {
  return static_cast<int>(std::min<std::int64_t>(output_extent64(in, filter, stride, pad, dil), INT_MAX));
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

// The product of non-negative factors, or nothing when it does not fit 64 bits.
std::optional<std::int64_t> product(std::initializer_list<std::int64_t> factors) {
  std::int64_t out = 1;
  for (const std::int64_t f : factors)
    if (__builtin_mul_overflow(out, f, &out)) return std::nullopt;
  return out;
}

// The sum of sizes, or nothing when one is missing or the sum does not fit.
std::optional<std::int64_t> operator+(std::optional<std::int64_t> a, std::optional<std::int64_t> b) {
  std::int64_t out = 0;
  if (!a || !b || __builtin_add_overflow(*a, *b, &out)) return std::nullopt;
  return out;
}

// A number of epilogue text: std::to_chars's shortest form that reads back to the same double, without the '+' of a
// positive exponent ("1e20", "1e-07"): '+' joins the terms. The emitted library's run time writes keys the same way.
std::string number_text(double value) {
  char buffer[64];
  const auto [end, ec] = std::to_chars(buffer, buffer + sizeof buffer, value);
  std::string text(buffer, ec == std::errc() ? end : buffer);
  std::erase(text, '+');
  return text;
}

constexpr std::string_view kEpilogueTerms =
    "'none' or terms joined by '+': alpha:A, bias, add, add:B, relu, relu6, clip:LO:HI (the activation last)";

std::optional<double> parse_double(std::string_view text) {
  double value = 0;
  // from_chars takes no leading '+'; a number of the text never has one.
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (text.empty() || ec != std::errc() || end != text.data() + text.size() || !std::isfinite(value))
    return std::nullopt;
  return value;
}

}  // namespace

std::string to_string(const Epilogue& e) {
  std::vector<std::string> terms;
  if (e.alpha != 1) terms.push_back("alpha:" + number_text(e.alpha));
  if (e.bias) terms.emplace_back("bias");
  if (e.beta == 1)
    terms.emplace_back("add");
  else if (e.beta != 0)
    terms.push_back("add:" + number_text(e.beta));
  if (e.act == Activation::clip)
    terms.push_back(fmt::format("clip:{}:{}", number_text(e.clip_lo), number_text(e.clip_hi)));
  else if (e.act != Activation::none)
    terms.emplace_back(to_string(e.act));
  return terms.empty() ? "none" : fmt::format("{}", fmt::join(terms, "+"));
}

Epilogue parse_epilogue(std::string_view text) {
  Epilogue e;
  if (text == "none") return e;
  bool seen_alpha = false, seen_add = false, seen_act = false;
  for (const std::string_view term : split(text, '+')) {
    const auto parts = split(term, ':');
    const std::string_view name = parts[0];
    const auto fail = [&](std::string_view why) {
      return InputError(fmt::format("{} in '{}', expected {}", why, text, kEpilogueTerms));
    };
    const auto number = [&](std::size_t i) {
      const auto value = parse_double(parts[i]);
      if (!value) throw fail(fmt::format("term '{}' needs a finite number, got '{}'", term, parts[i]));
      return *value;
    };
    const auto arguments = [&](std::size_t count) {
      if (parts.size() != count + 1)
        throw fail(fmt::format("term '{}' takes {} number{}", term, count, count == 1 ? "" : "s"));
    };
    if (seen_act) throw fail(fmt::format("term '{}' follows the activation", term));
    if (name == "alpha") {
      if (seen_alpha) throw fail("alpha given twice");
      arguments(1);
      e.alpha = number(1);
      seen_alpha = true;
    } else if (name == "bias") {
      if (e.bias) throw fail("bias given twice");
      arguments(0);
      e.bias = true;
    } else if (name == "add") {
      if (seen_add) throw fail("add given twice");
      if (parts.size() > 2) arguments(1);
      e.beta = parts.size() == 2 ? number(1) : 1.0;
      seen_add = true;
    } else if (name == "relu" || name == "relu6") {
      arguments(0);
      e.act = name == "relu" ? Activation::relu : Activation::relu6;
      seen_act = true;
    } else if (name == "clip") {
      arguments(2);
      e.act = Activation::clip;
      e.clip_lo = number(1);
      e.clip_hi = number(2);
      seen_act = true;
    } else {
      throw fail(fmt::format("unknown term '{}'", term));
    }
  }
  if (const std::string reason = validate(e); !reason.empty()) throw InputError(fmt::format("'{}': {}", text, reason));
  return e;
}

std::string validate(const Epilogue& e) {
  if (!std::isfinite(e.alpha)) return fmt::format("epilogue alpha must be finite, got {}", e.alpha);
  if (!std::isfinite(e.beta)) return fmt::format("epilogue beta must be finite, got {}", e.beta);
  if (!std::isfinite(e.clip_lo) || !std::isfinite(e.clip_hi))
    return fmt::format("epilogue clip bounds must be finite, got {} and {}", e.clip_lo, e.clip_hi);
  if (e.act != Activation::clip && (e.clip_lo != 0 || e.clip_hi != 0))
    return fmt::format("epilogue clip bounds are for the clip activation, got {} and {} with {}", e.clip_lo, e.clip_hi,
                       e.act);
  if (e.act == Activation::clip && e.clip_lo > e.clip_hi)
    return fmt::format("epilogue clip bounds must be in order (LO <= HI), got {} and {}", e.clip_lo, e.clip_hi);
  return {};
}

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
  // The epilogue's bias and residual are read once too, where it reads them.
  const std::int64_t epilogue = (p.epilogue.bias ? p.k : 0) + (reads_residual(p.epilogue) ? output_elements(p) : 0);
  return (activation_elements(p) + filter_elements(p) + output_elements(p) + epilogue) * element_bytes(p.precision);
}

std::string validate(const Problem& p) {
  const auto positive = [](int v) { return v > 0; };
  if (!positive(p.n)) return fmt::format("batch must be positive, got {}", p.n);
  if (!positive(p.c)) return fmt::format("input channels must be positive, got {}", p.c);
  if (!positive(p.k)) return fmt::format("output channels must be positive, got {}", p.k);
  if (!positive(p.groups)) return fmt::format("groups must be positive, got {}", p.groups);
  if (!(p.act_sparsity >= 0 && p.act_sparsity <= 1))
    return fmt::format("act_sparsity must be a zero fraction in [0, 1], got {}", p.act_sparsity);
  if (const std::string reason = validate(p.epilogue); !reason.empty()) return reason;
  if (p.c % p.groups != 0) return fmt::format("input channels {} are not divisible by groups {}", p.c, p.groups);
  if (p.k % p.groups != 0) return fmt::format("output channels {} are not divisible by groups {}", p.k, p.groups);
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
      return fmt::format("layout {} is {}-D: {} must have extent 1, stride 1, dilation 1 and padding 0", p.layout, r,
                         names[i]);
  }
  std::int64_t out[3];
  for (int i = 0; i < 3; ++i) {
    out[i] = output_extent64(in[i], f[i], st[i], pad[i], dil[i]);
    if (out[i] > INT_MAX)
      return fmt::format("output {} is {}, more than the largest extent, {}", names[i], out[i], INT_MAX);
  }
  if (out[0] <= 0 || out[1] <= 0 || out[2] <= 0)
    return fmt::format("padding leaves no output: output is {}x{}x{}", out[0], out[1], out[2]);
  // Sizes are counted in 64 bits (elements, bytes, FLOPs, offsets in the kernels): a problem whose products do not
  // fit is refused here rather than wrapped.
  const std::int64_t cpg = p.c / p.groups;
  const auto bytes = product({std::int64_t{p.n} * p.c, in[0], in[1], in[2]}) + product({p.k, cpg, f[0], f[1], f[2]}) +
                     product({std::int64_t{p.n} * p.k, out[0], out[1], out[2]});
  if (!bytes || !product({*bytes, element_bytes(p.precision)}))
    return fmt::format(
        "problem is too large: its tensors' byte count does not fit 64 bits ({}x{}x{}x{}x{} input, "
        "{} output channels)",
        p.n, p.c, in[0], in[1], in[2], p.k);
  if (!product({2 * std::int64_t{p.n} * p.k, out[0], out[1], out[2], cpg, f[0], f[1], f[2]}))
    return fmt::format(
        "problem is too large: its FLOP count does not fit 64 bits ({}x{}x{}x{}x{} input, {} output "
        "channels, {}x{}x{} filter)",
        p.n, p.c, in[0], in[1], in[2], p.k, f[0], f[1], f[2]);
  return {};
}

int act_sparsity_bucket(const Problem& p) { return static_cast<int>(std::lround(p.act_sparsity * 20)) * 5; }

std::string problem_key(const Problem& p) {
  const int zeros = act_sparsity_bucket(p);
  return fmt::format("n{}_c{}_k{}_i{}x{}x{}_f{}x{}x{}_s{}x{}x{}_p{}x{}x{}_d{}x{}x{}_g{}_{}_{}", p.n, p.c, p.k,
                     p.input.d, p.input.h, p.input.w, p.filter.d, p.filter.h, p.filter.w, p.stride.d, p.stride.h,
                     p.stride.w, p.padding.d, p.padding.h, p.padding.w, p.dilation.d, p.dilation.h, p.dilation.w,
                     p.groups, p.layout, p.precision) +
         (zeros != 0 ? fmt::format("_z{}", zeros) : std::string()) + (p.relu_on_load ? "_relu" : "") +
         (p.weights.pattern.empty() ? std::string() : "_w" + p.weights.pattern) +
         (is_identity(p.epilogue) ? std::string() : "_e" + to_string(p.epilogue));
}

Problem parse_problem_key(std::string_view key) {
  const auto tokens = split(key, '_');
  if (tokens.size() < 11 || tokens.size() > 15)
    throw InputError(
        fmt::format("problem key '{}': expected 11 to 15 fields separated by '_', got {}", key, tokens.size()));
  const auto field = [&](int i, char prefix) {
    if (tokens[i].empty() || tokens[i][0] != prefix)
      throw InputError(
          fmt::format("problem key '{}': field {} must start with '{}', got '{}'", key, i + 1, prefix, tokens[i]));
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
  // Then the optional sparsity bucket "z<percent>", "relu" (max(0, x) on load), filter pattern "w<16 hex digits>" and
  // epilogue "e<text>", in that order.
  std::size_t next = 11;
  if (next < tokens.size() && !tokens[next].empty() && tokens[next][0] == 'z') {
    const int zeros = parse_int(field(static_cast<int>(next), 'z'), key);
    if (zeros <= 0 || zeros > 100 || zeros % 5 != 0)
      throw InputError(
          fmt::format("problem key '{}': sparsity bucket '{}' must be a multiple of 5 in 5..100", key, tokens[next]));
    p.act_sparsity = zeros / 100.0;
    ++next;
  }
  if (next < tokens.size() && tokens[next] == "relu") {
    p.relu_on_load = true;
    ++next;
  }
  if (next < tokens.size() && !tokens[next].empty() && tokens[next][0] == 'w') {
    const std::string_view pattern = field(static_cast<int>(next), 'w');
    if (pattern.size() != 16 || pattern.find_first_not_of("0123456789abcdef") != std::string_view::npos)
      throw InputError(fmt::format("problem key '{}': filter pattern '{}' must be 'w' and 16 lowercase hex digits", key,
                                   tokens[next]));
    p.weights.pattern = std::string(pattern);
    ++next;
  }
  if (next < tokens.size() && !tokens[next].empty() && tokens[next][0] == 'e') {
    const std::string_view text = field(static_cast<int>(next), 'e');
    try {
      p.epilogue = parse_epilogue(text);
    } catch (const InputError& e) {
      throw InputError(fmt::format("problem key '{}': epilogue {}", key, e.what()));
    }
    // The key writes the canonical text only, and never "none": another spelling would be a second key.
    if (is_identity(p.epilogue) || to_string(p.epilogue) != text)
      throw InputError(fmt::format("problem key '{}': epilogue '{}' is not in its canonical form '{}'", key, text,
                                   is_identity(p.epilogue) ? "(no field)" : to_string(p.epilogue)));
    ++next;
  }
  if (next != tokens.size())
    throw InputError(
        fmt::format("problem key '{}': unexpected field '{}' after the precision (expected z<bucket>, "
                    "relu, w<pattern> then e<epilogue>)",
                    key, tokens[next]));
  // A key read back from a database or a manifest is outside data too: every caller may divide by groups.
  if (const std::string reason = validate(p); !reason.empty())
    throw InputError(fmt::format("problem key '{}': {}", key, reason));
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
  if (p.relu_on_load) text += ", max(0, x) on load";
  if (!is_identity(p.epilogue)) text += ", epilogue " + to_string(p.epilogue);
  if (p.weights.values) {
    const auto zeros = std::count(p.weights.values->begin(), p.weights.values->end(), 0.0f);
    text += fmt::format(
        ", its filter ({:.0f}% zeros)",
        100.0 * static_cast<double>(zeros) / static_cast<double>(std::max<std::size_t>(1, p.weights.values->size())));
  } else if (!p.weights.pattern.empty()) {
    text += fmt::format(", filter pattern {}", p.weights.pattern);
  }
  return text;
}

}  // namespace convgen
