// analysis: per-layer FLOPs, bytes, arithmetic intensity and roofline floor on a GPU, with count-weighted totals.
#pragma once

#include <string>
#include <vector>

#include "convgen/gpu.hpp"
#include "convgen/problem.hpp"
#include "generator/shapes.hpp"

namespace convgen {

// What one layer costs at best on a GPU. The floor is the roofline bound: no kernel can beat it, so it is the
// yardstick for both our kernels and cuDNN's.
struct LayerAnalysis {
  std::string name;
  Problem problem;
  int count = 1;               // runs per network pass
  double flops = 0;            // one run
  double bytes = 0;            // one run, each tensor moved once (min_bytes)
  double intensity = 0;        // FLOP per byte
  double floor_us = 0;         // max(flops / peak FLOP/s of the precision, bytes / DRAM bandwidth)
  bool compute_bound = false;  // the compute time is the larger of the two
  // Winograd's floor, stated separately (0 where it does not apply: only 3x3 and 3x3x3, stride 1, dilation 1):
  // the same bound with the multiplies of F(4x4, 3x3) — 36 per 16 outputs instead of 144, 4x fewer (3-D:
  // F(4x4x4, 3x3x3), 8x fewer) — transforms not counted, so no Winograd kernel beats it either.
  double winograd_flops = 0;
  double winograd_floor_us = 0;
  bool operator==(const LayerAnalysis&) const = default;
};

// A network's layers and its totals, each layer weighted by its count.
struct NetworkAnalysis {
  std::string name;  // the suite's
  std::vector<LayerAnalysis> layers;
  double total_flops = 0;
  double total_bytes = 0;
  double total_floor_us = 0;
  bool operator==(const NetworkAnalysis&) const = default;
};

// Analyzes one layer on `gpu`. Throws InputError when the GPU lacks the peak rate of the layer's precision or its
// DRAM bandwidth, or the problem is invalid.
LayerAnalysis analyze_layer(const Layer& layer, const Gpu& gpu);

// The factor by which Winograd F(4x4, 3x3) (F(4x4x4, 3x3x3) in 3-D) cuts a problem's multiplies: 4 (8), or 0 when
// it does not apply (other filter sizes, stride or dilation not 1).
double winograd_flop_reduction(const Problem& p);

// Analyzes every layer of a suite and sums the count-weighted totals.
//   NetworkAnalysis a = analyze(load_suite("shapes/resnet50.csv"), gpu);
NetworkAnalysis analyze(const Suite& suite, const Gpu& gpu);

// Formats an aligned text table: layer, shape, count, GFLOP, MB, FLOP/B, floor µs, bound (per run), then a
// count-weighted totals line.
std::string format_analysis_table(const NetworkAnalysis& analysis, const Gpu& gpu);

// Returns the analysis as JSON text (indented), with the GPU's name and arch.
std::string analysis_to_json(const NetworkAnalysis& analysis, const Gpu& gpu);

}  // namespace convgen
