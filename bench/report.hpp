// report: the benchmark's result model (one row per layer: every cuDNN route, cuDNN's best, ours) and its JSON,
// CSV and Markdown writers. bench/README.md documents every field.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "bench/provenance.hpp"
#include "measure/timing.hpp"
#include "convgen/enum_names.hpp"
#include "convgen/problem.hpp"
#include "reference/reference.hpp"

namespace convgen {

// The version of the JSON layout; bench/README.md describes this one.
inline constexpr int kReportSchema = 1;

// What happened to one way of computing a layer. Only `ok` routes take part in "best" and in speedups; a route
// that failed verification keeps its time in the JSON (a fast wrong answer is worth seeing) but nowhere else.
enum class RouteStatus { ok, unsupported, failed_verification, error };

template <>
struct EnumNames<RouteStatus> {
  static constexpr std::array table = {
      std::pair{RouteStatus::ok, std::string_view("ok")},
      std::pair{RouteStatus::unsupported, std::string_view("unsupported")},
      std::pair{RouteStatus::failed_verification, std::string_view("failed_verification")},
      std::pair{RouteStatus::error, std::string_view("error")},
  };
};

// Which times a row's speedup compares: graph replays where both sides could be captured, else stream launches.
enum class HeadlineMode { graph, stream };

template <>
struct EnumNames<HeadlineMode> {
  static constexpr std::array table = {
      std::pair{HeadlineMode::graph, std::string_view("graph")},
      std::pair{HeadlineMode::stream, std::string_view("stream")},
  };
};

// One cuDNN route on one layer (bench/cudnn_routes.hpp CudnnRoute names it).
struct CudnnEntry {
  std::string route;  // "legacy" or "graph"
  std::string algo;   // "IMPLICIT_PRECOMP_GEMM", "engine 3 [heur_a #0, all]"
  std::string knobs;  // "" for default knobs
  RouteStatus status = RouteStatus::ok;
  std::string reason;  // why not ok ("CUDNN_STATUS_NOT_SUPPORTED", the error text), else ""
  std::int64_t workspace_bytes = 0;
  std::optional<ErrorStats> error;     // against the float64 reference; empty when it did not run
  std::optional<TimingResult> timing;  // empty when not timed
};

// Our kernel on one layer.
struct OursEntry {
  std::string kernel;  // canonical kernel name
  RouteStatus status = RouteStatus::ok;
  std::string reason;
  std::optional<ErrorStats> error;
  std::optional<TimingResult> timing;
  std::optional<double> energy_mj;  // per call (measure/nvml.hpp energy_per_call)
  std::string energy_note;          // why energy_mj is empty, or that it was measured by stream launches
};

// cuDNN's routes on the same layer in another precision (`convgen bench --cudnn-also`), in that precision's math
// mode, verified against its own float64 reference and timed in the same run, after ours: what a user who could
// switch precision would get from cuDNN instead (a pruned fp32 kernel of ours against cuDNN's dense fp16).
struct CudnnAlso {
  Precision precision = Precision::fp16;
  std::string math;                // "tensor_op", "tf32", "strict_fp32"
  std::vector<CudnnEntry> routes;  // every route, as in BenchRow::cudnn
};

// One layer of one suite at one batch size.
struct BenchRow {
  std::string suite;              // "resnet50"
  std::string layer;              // "conv2_3x3"
  int count = 1;                  // runs per network pass (network totals weight by it)
  Problem problem;                // the batch is problem.n
  std::string math;               // the math mode both sides are held to ("strict_fp32", "tf32", "tensor_op")
  int buffer_sets = 1;            // sets rotated while timing (1: warm, or one set already exceeds 2 x L2)
  std::string activation;         // the input both sides ran on: "dense random", "blob sparse, 70% zeros"
  double zero_fraction = 0;       // of that activation, counted
  double floor_us = 0;            // the roofline floor on the GPU (generator/analysis.hpp); 0 when unknown
  double winograd_floor_us = 0;   // the same with Winograd's reduced multiplies; 0 where it does not apply
  std::vector<CudnnEntry> cudnn;  // every route, in the order cuDNN's routes were listed
  OursEntry ours;                         // the fastest ok one of our_candidates (else the first)
  std::vector<OursEntry> our_candidates;  // every kernel of ours built for the row, in the order tried (the default
                                          // choice, then per family its default and the model's next, then the
                                          // database's), with its status, error and times
  std::optional<double> cudnn_energy_mj;  // per call, of the best cuDNN route
  std::string cudnn_energy_note;
  std::optional<CudnnAlso> cudnn_also;  // with --cudnn-also
  DeviceState start;  // clocks and power when the layer started and ended
  DeviceState end;
};

// One batch's network as one chain of our kernels (bench/network_chain.hpp), against the per-layer figures.
struct NetworkChain {
  int batch = 0;
  int calls = 0;                       // kernel calls of ours in one chain (the rows' counts summed)
  int layers = 0;                      // rows in it
  std::vector<std::string> left_out;   // rows without a verified kernel of ours
  std::optional<SampleStats> early;    // one chain, graph replay, our kernels launched early where they allow
  std::optional<SampleStats> plain;    // the same, never early
  double per_layer_sum_us = 0;         // the same rows' count x per-layer median (graph replay, cold L2)
  std::string error;                   // why there is no time
};

// A whole run: provenance, the timing protocol's settings, and the rows in the order measured.
struct BenchReport {
  Provenance provenance;
  TimingOptions timing;
  bool warm = false;  // L2 residency allowed (--warm); else buffer sets rotated (cold)
  // Our kernels that may launch early did (conv_kernel.hpp's early_launch_enabled): each call's blocks may start while
  // the previous call ends, as consecutive layers of a network would (--early-launch off: never).
  bool early_launch = true;
  bool cudnn_routes = true;  // cuDNN's routes were run (--ours-only: not; the rows have ours alone)
  std::vector<BenchRow> rows;
  std::vector<NetworkChain> chains;  // `convgen bench --chain`: per batch
};

// Returns the median of `timing` in `mode` (µs per call); empty when there is no such time.
std::optional<double> median_us(const std::optional<TimingResult>& timing, HeadlineMode mode);

// Returns graph when ours and at least one ok cuDNN route have graph times, else stream.
HeadlineMode headline_mode(const BenchRow& row);

// Returns the index in row.cudnn of the fastest ok route in the row's headline mode; empty when none has a time.
// In graph mode, routes that could not be captured are left out: the headline is what a graph-replaying
// application gets.
std::optional<std::size_t> cudnn_best(const BenchRow& row);

// Returns cuDNN best ÷ ours in the headline mode; empty unless both sides have an ok, timed result.
std::optional<double> speedup(const BenchRow& row);

// The fastest ok route of row.cudnn_also (index in its routes) and its time, in the row's headline mode where that
// route has it, else both sides on stream launches; and its time ÷ ours in that same mode. Empty without
// --cudnn-also, an ok timed route or an ok time of ours.
struct CudnnAlsoBest {
  std::size_t route = 0;
  double us = 0;
  HeadlineMode mode = HeadlineMode::stream;
};
std::optional<CudnnAlsoBest> cudnn_also_best(const BenchRow& row);
std::optional<double> cudnn_also_speedup(const BenchRow& row);

// The sparse-conv seed's baseline: the fastest ok route among the legacy IMPLICIT_GEMM, IMPLICIT_PRECOMP_GEMM and
// GEMM algorithms in the row's headline mode (index in row.cudnn), and cuDNN GEMM-only ÷ ours.
bool is_seed_gemm_route(const CudnnEntry& entry);
std::optional<std::size_t> cudnn_gemm_best(const BenchRow& row);
std::optional<double> gemm_speedup(const BenchRow& row);

// Names a route's column in the CSV and its route in tables: "legacy:GEMM", "graph:engine 3 [all]{TILE=2}".
std::string route_label(const CudnnEntry& entry);

// Writes the report as JSON text (schema kReportSchema, indented by 2, keys in a fixed order).
std::string report_json(const BenchReport& report);

// Writes a CSV row per layer in the seed's layout: B,C,H,W,N (batch, in channels, input height and width, out
// channels), D,T,R,S, stride, pad, dilation, groups, one column per cuDNN route (legacy first, then graph, in
// order of first appearance; µs in the row's headline mode, empty when the route has no ok time in it),
// cudnn_best_us, cudnn_best_route, ours_us, ours_kernel, speedup, mode, then suite, layer, count, precision.
std::string report_csv(const BenchReport& report);

// Writes a Markdown summary: the provenance, then per (suite, batch, precision) a table of layers, the
// geometric-mean speedup, the worst layer, and network totals weighted by the count column.
std::string report_markdown(const BenchReport& report);

}  // namespace convgen
