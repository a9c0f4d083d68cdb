// bench_runner: measures each layer of a suite against every cuDNN route, verified first, by the protocol.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "bench/cudnn_routes.hpp"
#include "bench/report.hpp"
#include "measure/timing.hpp"
#include "convgen/gpu.hpp"
#include "generator/kernel_spec.hpp"
#include "generator/shapes.hpp"
#include "reference/inputs.hpp"

namespace convgen {

struct BenchOptions {
  std::vector<int> batches;               // empty: the shapes file's batch
  Precision precision = Precision::fp32;  // fp32 (strict FMA), tf32, fp16 or bf16 (tensor-op math; ours: none yet)
  std::optional<Layout> layout;           // channels-first or -last override; the rank stays the layer's
  bool warm = false;                      // allow L2 residency (else rotate buffer sets past 2 x L2)
  bool chain = false;  // after each batch's rows, its network as one chain of our kernels (bench/network_chain.hpp)
  TimingOptions timing;                   // buffer_sets is set per layer
  int candidates_per_family = 3;          // ours: each family's default plus its first enumerated candidates
  std::vector<std::string> families;      // ours only from these families (empty: every registered family)
  // cuDNN offers ~100 routes per layer. Every verified route is screened (stream launches, kScreenSamples samples);
  // the `finalists` fastest go on to the full protocol with ours, interleaved. 0 takes every route to the end.
  int finalists = 8;
  // false (--ours-only): no cuDNN route is built, verified or timed; the rows have ours alone (and the chains).
  bool cudnn_routes = true;
  CudnnOptions cudnn;
  std::uint64_t seed = 1;
  // Further kernels of ours to try for a problem, e.g. the tuning database's best (`convgen bench` passes it).
  std::function<std::vector<KernelSpec>(const Problem&)> extra_candidates;
  // The inputs both sides are verified and timed on (the seed is `seed` plus the layer's index). No activation: each
  // layer's expected one (expected_activation: dense, or its act_sparsity with zeros in `pattern`).
  std::optional<TensorSource> activation;
  SparsityPattern pattern = SparsityPattern::blob;
  std::optional<TensorSource> filter;  // none: the problem's own (expected_filter)
  // Also time cuDNN's routes on each layer in this precision (its own math mode), verified and timed after ours in
  // the same run (BenchRow::cudnn_also); none, or the run's own precision: no such comparison.
  std::optional<Precision> cudnn_also;
  // Called after each layer with the report so far (its provenance's end state read then): `convgen bench` saves it,
  // so that a run cut short keeps the layers it finished.
  std::function<void(const BenchReport&)> on_row;
};

// Samples per route in the screening round.
inline constexpr int kScreenSamples = 3;

// Called before each stage of each layer: (layer index, layer count, text).
using BenchProgress = std::function<void(std::size_t, std::size_t, const std::string&)>;

// Runs the benchmark of every layer of `suite` at every batch on device 0 (a context must be current).
// `gpu` is the live device's descriptor; `command_line` goes into the provenance.
BenchReport run_bench(const Suite& suite, const Gpu& gpu, const BenchOptions& options,
                      const std::string& command_line, const BenchProgress& progress = {});

// The problem a layer is benchmarked as: batch, precision and layout applied.
Problem bench_problem(const Problem& layer, int batch, const BenchOptions& options);

}  // namespace convgen
