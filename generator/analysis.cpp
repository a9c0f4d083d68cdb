// analysis: roofline numbers per layer and per network, as a text table and as JSON.
#include "generator/analysis.hpp"

#include <algorithm>
#include <array>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "convgen/error.hpp"

namespace convgen {

double winograd_flop_reduction(const Problem& p) {
  const bool unit = p.stride == Dims3{1, 1, 1} && p.dilation == Dims3{1, 1, 1};
  if (!unit || p.filter.h != 3 || p.filter.w != 3) return 0;
  if (p.filter.d == 1) return 144.0 / 36;    // F(4x4, 3x3): 16 outputs x 9 taps against a 6x6 tile
  if (p.filter.d == 3) return 1728.0 / 216;  // F(4x4x4, 3x3x3): 64 x 27 against 6x6x6
  return 0;
}

LayerAnalysis analyze_layer(const Layer& layer, const Gpu& gpu) {
  const Problem& p = layer.problem;
  if (const std::string reason = validate(p); !reason.empty())
    throw InputError(fmt::format("layer '{}': {}", layer.name, reason));
  const double peak = peak_tflops(gpu, p.precision) * 1e12;
  if (peak <= 0)
    throw InputError(fmt::format("gpu '{}': peak_{}_tflops must be positive to analyze {} layer '{}', got {}", gpu.name,
                                 p.precision, p.precision, layer.name, peak_tflops(gpu, p.precision)));
  if (gpu.dram_bandwidth_gbs <= 0)
    throw InputError(
        fmt::format("gpu '{}': dram_bandwidth_gbs must be positive, got {}", gpu.name, gpu.dram_bandwidth_gbs));
  const double flop_count = static_cast<double>(flops(p));
  const double byte_count = static_cast<double>(min_bytes(p));
  const double compute_us = flop_count / peak * 1e6;
  const double memory_us = byte_count / (gpu.dram_bandwidth_gbs * 1e9) * 1e6;
  const double reduction = winograd_flop_reduction(p);
  const double winograd_flops = reduction > 0 ? flop_count / reduction : 0;
  return {
      .name = layer.name,
      .problem = p,
      .count = layer.count,
      .flops = flop_count,
      .bytes = byte_count,
      .intensity = flop_count / byte_count,
      .floor_us = std::max(compute_us, memory_us),
      .compute_bound = compute_us >= memory_us,
      .winograd_flops = winograd_flops,
      .winograd_floor_us = reduction > 0 ? std::max(winograd_flops / peak * 1e6, memory_us) : 0,
  };
}

NetworkAnalysis analyze(const Suite& suite, const Gpu& gpu) {
  NetworkAnalysis result{.name = suite.name};
  for (const Layer& layer : suite.layers) {
    LayerAnalysis a = analyze_layer(layer, gpu);
    result.total_flops += a.flops * a.count;
    result.total_bytes += a.bytes * a.count;
    result.total_floor_us += a.floor_us * a.count;
    result.layers.push_back(std::move(a));
  }
  return result;
}

namespace {

// Display width of UTF-8 text: one column per code point (the table's only non-ASCII text is "µ").
std::size_t display_width(std::string_view text) {
  return static_cast<std::size_t>(
      std::count_if(text.begin(), text.end(), [](char ch) { return (static_cast<unsigned char>(ch) & 0xC0) != 0x80; }));
}

constexpr std::size_t column_count = 8;
using Row = std::array<std::string, column_count>;

Row layer_row(const std::string& name, const std::string& shape, int count, double flop_count, double byte_count,
              double floor_us, const std::string& bound) {
  return {name,
          shape,
          fmt::format("{}", count),
          fmt::format("{:.3f}", flop_count / 1e9),
          fmt::format("{:.3f}", byte_count / 1e6),
          fmt::format("{:.1f}", byte_count > 0 ? flop_count / byte_count : 0.0),
          fmt::format("{:.2f}", floor_us),
          bound};
}

}  // namespace

std::string format_analysis_table(const NetworkAnalysis& analysis, const Gpu& gpu) {
  // Text columns (layer, shape, bound) align left, numbers right.
  constexpr std::array<bool, column_count> left = {true, true, false, false, false, false, false, true};
  std::vector<Row> rows;
  rows.push_back({"layer", "shape", "count", "GFLOP", "MB", "FLOP/B", "floor µs", "bound"});
  int total_count = 0;
  for (const LayerAnalysis& a : analysis.layers) {
    rows.push_back(layer_row(a.name, describe(a.problem), a.count, a.flops, a.bytes, a.floor_us,
                             a.compute_bound ? "compute" : "memory"));
    total_count += a.count;
  }
  rows.push_back(
      layer_row("total", "", total_count, analysis.total_flops, analysis.total_bytes, analysis.total_floor_us, ""));

  std::array<std::size_t, column_count> width{};
  for (const Row& row : rows)
    for (std::size_t i = 0; i < column_count; ++i) width[i] = std::max(width[i], display_width(row[i]));
  std::size_t line_width = 2 * (column_count - 1);
  for (std::size_t w : width) line_width += w;

  std::string out;
  for (std::size_t r = 0; r < rows.size(); ++r) {
    if (r + 1 == rows.size()) out += std::string(line_width, '-') + "\n";  // rule above the totals
    std::string line;
    for (std::size_t i = 0; i < column_count; ++i) {
      const std::string padding(width[i] - display_width(rows[r][i]), ' ');
      if (i > 0) line += "  ";
      line += left[i] ? rows[r][i] + padding : padding + rows[r][i];
    }
    line.erase(line.find_last_not_of(' ') + 1);
    out += line + "\n";
  }

  // The ceilings the floors were taken against, once per precision present.
  out += fmt::format("roofline on {}: DRAM {:.0f} GB/s", gpu.name, gpu.dram_bandwidth_gbs);
  for (Precision precision : {Precision::fp32, Precision::tf32, Precision::fp16, Precision::bf16}) {
    const bool present = std::any_of(analysis.layers.begin(), analysis.layers.end(),
                                     [&](const LayerAnalysis& a) { return a.problem.precision == precision; });
    if (!present) continue;
    const double tflops = peak_tflops(gpu, precision);
    out += fmt::format("; {} {:.1f} TFLOP/s (ridge {:.1f} FLOP/B)", precision, tflops,
                       tflops * 1e3 / gpu.dram_bandwidth_gbs);
  }
  return out + "\n";
}

std::string analysis_to_json(const NetworkAnalysis& analysis, const Gpu& gpu) {
  nlohmann::ordered_json layers = nlohmann::ordered_json::array();
  int total_count = 0;
  for (const LayerAnalysis& a : analysis.layers) {
    layers.push_back({
        {"name", a.name},
        {"problem", problem_key(a.problem)},
        {"shape", describe(a.problem)},
        {"count", a.count},
        {"flops", a.flops},
        {"bytes", a.bytes},
        {"intensity", a.intensity},
        {"floor_us", a.floor_us},
        {"bound", a.compute_bound ? "compute" : "memory"},
        {"winograd_floor_us", a.winograd_floor_us > 0 ? nlohmann::json(a.winograd_floor_us) : nlohmann::json(nullptr)},
    });
    total_count += a.count;
  }
  const nlohmann::ordered_json json = {
      {"suite", analysis.name},
      {"gpu", {{"name", gpu.name}, {"arch", gpu.arch}, {"dram_bandwidth_gbs", gpu.dram_bandwidth_gbs}}},
      {"layers", layers},
      {"total",
       {{"count", total_count},
        {"flops", analysis.total_flops},
        {"bytes", analysis.total_bytes},
        {"intensity", analysis.total_bytes > 0 ? analysis.total_flops / analysis.total_bytes : 0.0},
        {"floor_us", analysis.total_floor_us}}},
  };
  return json.dump(2);
}

}  // namespace convgen
