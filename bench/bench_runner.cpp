// bench_runner: per layer, build ours and cuDNN's routes, verify every one against float64, time the verified ones
// interleaved in both modes, measure energy of the two winners, and read clocks and power around the layer.
#include "bench/bench_runner.hpp"

#include <algorithm>
#include <cmath>
#include <numeric>

#include <fmt/format.h>

#include "measure/nvml.hpp"
#include "bench/network_chain.hpp"
#include "bench/provenance.hpp"
#include "measure/verification.hpp"
#include "measure/verify.hpp"
#include "conv/conv_kernel.hpp"
#include "convgen/error.hpp"
#include "generator/analysis.hpp"
#include "reference/reference.hpp"
#include "runtime/module.hpp"
#include "runtime/paths.hpp"

namespace convgen {
namespace {

Layout with_channels_last(Layout layout, bool last) {
  switch (rank(layout)) {
    case 1: return last ? Layout::nwc : Layout::ncw;
    case 2: return last ? Layout::nhwc : Layout::nchw;
    default: return last ? Layout::ndhwc : Layout::ncdhw;
  }
}

// Energy per call of `c` at the GPU's pace: as many calls as take about kEnergyReplayUs (from `call_us`, its timed
// median) captured into one graph, each replay one of energy_per_call's calls. Launched one call at a time from the
// stream, a call whose host side costs more than its kernel (cuDNN's legacy calls: tens of microseconds) leaves the
// GPU idle between calls, and the counter charges that idle power to every call (on the H200, 20-48 mJ a call of a
// 4 us kernel: kilowatts). A candidate that cannot be captured is measured by stream launches, and its note says so.
constexpr double kEnergyReplayUs = 200;
EnergyMeasurement energy_at_gpu_pace(const Nvml* nvml, const Candidate& c, double call_us, CUstream stream) {
  const int calls = static_cast<int>(std::clamp(std::ceil(kEnergyReplayUs / std::max(call_us, 0.1)), 1.0, 1000.0));
  std::optional<Graph> graph;
  std::string capture_error;
  try {
    graph.emplace(Graph::capture(stream, [&] {
      for (int i = 0; i < calls; ++i) c.enqueue(stream, 0);
    }));
    graph->launch(stream);  // the first launch uploads the graph
    CONVGEN_CU_CHECK(driver().cuStreamSynchronize(stream));
  } catch (const std::exception& e) {
    graph.reset();
    capture_error = e.what();
  }
  if (!graph) {
    EnergyMeasurement e = energy_per_call(
        nvml, [&] { c.enqueue(stream, 0); }, stream);
    if (e.mj_per_call)
      e.unavailable = fmt::format("measured by stream launches (host gaps between calls count): {}", capture_error);
    return e;
  }
  EnergyMeasurement e = energy_per_call(
      nvml, [&] { graph->launch(stream); }, stream);
  if (e.mj_per_call) *e.mj_per_call /= calls;
  e.calls *= calls;
  return e;
}

std::string error_text(const std::exception_ptr& error) {
  try {
    std::rethrow_exception(error);
  } catch (const std::exception& e) {
    return e.what();
  }
}

// Whether ours may come from `family`: every family when `families` is empty, else the named ones.
bool wanted_family(const std::vector<std::string>& families, std::string_view family) {
  return families.empty() || std::find(families.begin(), families.end(), family) != families.end();
}

// Our candidates for a problem: the default choice, then each family's default and first enumerated specs; only
// the named families when `families` is not empty.
std::vector<KernelSpec> our_candidates(const Problem& p, const Gpu& gpu, int per_family,
                                       const std::vector<std::string>& families) {
  std::vector<KernelSpec> specs;
  const auto wanted = [&](std::string_view family) { return wanted_family(families, family); };
  const auto add = [&](const KernelSpec& s) {
    if (wanted(s.family) && std::find(specs.begin(), specs.end(), s) == specs.end()) specs.push_back(s);
  };
  try {
    add(default_choice(p, gpu));
  } catch (const InputError&) {
    // No family serves the problem: the row says so.
  }
  for (const Family* f : all_families()) {
    if (!wanted(f->name())) continue;
    if (auto s = f->default_spec(p, gpu)) add(*s);
    int taken = 0;
    for (const KernelSpec& s : f->enumerate(p, gpu)) {
      if (taken++ >= per_family) break;
      add(s);
    }
  }
  return specs;
}

// Times candidates [0, screened) (cuDNN's routes) in a screening round, then the fastest `finalists` of them, those
// marked in `always_final` (the seed's GEMM baseline, so that it has full-protocol times too) and every candidate
// from `screened` on (ours) by the full protocol, interleaved. Screened-out routes keep their screening times
// (kScreenSamples samples, stream only), which the report shows as such.
std::vector<TimingResult> time_screened(std::span<const Candidate> candidates, std::size_t screened,
                                        const std::vector<bool>& always_final, const TimingOptions& timing,
                                        int finalists, Stream& stream) {
  if (finalists <= 0 || screened <= static_cast<std::size_t>(finalists))
    return time_interleaved(candidates, timing, stream);
  TimingOptions screen = timing;
  screen.samples = kScreenSamples;
  screen.graph = false;
  std::vector<TimingResult> results = time_interleaved(candidates.first(screened), screen, stream);
  std::vector<std::size_t> order(screened);
  std::iota(order.begin(), order.end(), std::size_t{0});
  std::sort(order.begin(), order.end(),
            [&](std::size_t a, std::size_t b) { return results[a].stream.median < results[b].stream.median; });
  std::stable_partition(order.begin() + finalists, order.end(), [&](std::size_t i) { return always_final[i]; });
  const auto kept = std::count_if(order.begin() + finalists, order.end(), [&](std::size_t i) { return always_final[i]; });
  order.resize(static_cast<std::size_t>(finalists + kept));
  std::vector<Candidate> final_round;
  for (std::size_t i : order) final_round.push_back(candidates[i]);
  for (std::size_t i = screened; i < candidates.size(); ++i) final_round.push_back(candidates[i]);
  const std::vector<TimingResult> full = time_interleaved(final_round, timing, stream);
  for (std::size_t f = 0; f < order.size(); ++f) results[order[f]] = full[f];
  for (std::size_t i = screened; i < candidates.size(); ++i) results.push_back(full[order.size() + i - screened]);
  return results;
}

// Verifies one cuDNN route against `measurement`; the entry says how it went, and `candidate` is timed when it is
// ok.
CudnnEntry verify_route(const CudnnRoute& route, const ConvCandidate& candidate, ConvMeasurement& measurement,
                        Stream& stream) {
  CudnnEntry entry{.route = route.route, .algo = route.algo, .knobs = route.knobs,
                   .workspace_bytes = static_cast<std::int64_t>(route.workspace_bytes)};
  if (!route.supported()) {
    entry.status = RouteStatus::unsupported;
    entry.reason = route.status_detail.empty() ? route.status : route.status + ": " + route.status_detail;
    return entry;
  }
  try {
    const Verification v = measurement.verify(candidate, stream);
    entry.error = v.stats;
    if (!v.passed) {
      entry.status = RouteStatus::failed_verification;
      entry.reason = v.failure;
    }
  } catch (const std::exception& e) {
    entry.status = RouteStatus::error;
    entry.reason = e.what();
    stream.synchronize();
  }
  return entry;
}

// cuDNN's routes on `p` in `precision` (--cudnn-also): the same activation and filter sources and seed, its own
// float64 reference and tolerance, screened and timed by the same protocol (its own buffer sets: a narrower type's
// tensors need more of them to leave nothing in L2).
CudnnAlso time_cudnn_also(const Problem& p, Precision precision, const Gpu& gpu, const BenchOptions& options,
                          const TensorSource& activation, const TensorSource& filter, std::uint64_t seed,
                          TimingOptions timing, Stream& stream) {
  Problem q = p;
  q.precision = precision;
  timing.buffer_sets = buffer_sets_to_defeat_l2(buffer_set_bytes(q), gpu.l2_bytes, options.warm);
  CudnnAlso also{.precision = precision, .math = std::string(to_string(cudnn_math(precision))), .routes = {}};
  CudnnBaseline cudnn(q, options.cudnn);
  DeviceBuffer workspace(std::max<std::size_t>(cudnn.max_workspace_bytes(), 256));
  ConvMeasurement measurement(q, {.activation = activation, .filter = filter, .seed = seed}, timing.buffer_sets);
  std::vector<Candidate> timed;
  std::vector<std::size_t> entry_of;  // timed[i] is also.routes[entry_of[i]]
  const auto& routes = cudnn.routes();
  for (std::size_t r = 0; r < routes.size(); ++r) {
    ConvCandidate candidate{fmt::format("cudnn {} {}", precision, routes[r].algo),
                            [&cudnn, &workspace, r](const ConvPointers& t, CUstream s) {
                              cudnn.launch(r, t.activation, t.filter, t.output, t.bias, t.residual, workspace.ptr(), s);
                            }};
    also.routes.push_back(verify_route(routes[r], candidate, measurement, stream));
    if (also.routes.back().status == RouteStatus::ok) {
      entry_of.push_back(r);
      timed.push_back(measurement.timed(candidate));
    }
  }
  const std::vector<bool> always_final(timed.size(), false);
  const std::vector<TimingResult> results =
      time_screened(timed, timed.size(), always_final, timing, options.finalists, stream);
  for (std::size_t i = 0; i < timed.size(); ++i) also.routes[entry_of[i]].timing = results[i];
  stream.synchronize();
  return also;
}

class LayerBench {
 public:
  LayerBench(const Gpu& gpu, const BenchOptions& options, JitCache& cache, ThreadPool& pool, const Nvml* nvml)
      : gpu_(gpu), options_(options), cache_(cache), pool_(pool), nvml_(nvml) {}

  BenchRow run(const std::string& suite, const Layer& layer, const Problem& p, std::uint64_t seed,
               const std::function<void(const std::string&)>& stage);

 private:
  const Gpu& gpu_;
  const BenchOptions& options_;
  JitCache& cache_;
  ThreadPool& pool_;
  const Nvml* nvml_;
};

BenchRow LayerBench::run(const std::string& suite, const Layer& layer, const Problem& p, std::uint64_t seed,
                         const std::function<void(const std::string&)>& stage) {
  BenchRow row{.suite = suite, .layer = layer.name, .count = layer.count, .problem = p,
               .math = std::string(to_string(cudnn_math(p.precision)))};
  row.start = device_state(nvml_);
  try {
    const LayerAnalysis roofline = analyze_layer({.name = layer.name, .problem = p, .count = layer.count}, gpu_);
    row.floor_us = roofline.floor_us;
    row.winograd_floor_us = roofline.winograd_floor_us;
  } catch (const InputError&) {
    // The descriptor lacks a peak or the bandwidth: the row has no floor (0), the report shows a dash.
  }

  stage("compiling ours");
  std::vector<BuildRequest> requests;
  std::vector<KernelSpec> specs = our_candidates(p, gpu_, options_.candidates_per_family, options_.families);
  if (options_.extra_candidates)
    for (const KernelSpec& s : options_.extra_candidates(p))
      if (wanted_family(options_.families, s.family) && std::find(specs.begin(), specs.end(), s) == specs.end())
        specs.push_back(s);
  for (const KernelSpec& s : specs) requests.push_back({p, s});
  const std::vector<BuildOutcome> built = build_kernels(requests, gpu_, cache_, pool_);

  std::optional<CudnnBaseline> cudnn;
  if (options_.cudnn_routes) {
    stage("building cuDNN routes");
    cudnn.emplace(p, options_.cudnn);
  }

  // Buffers: enough sets that rotating through them leaves nothing of the last call in L2 (unless --warm).
  row.buffer_sets = buffer_sets_to_defeat_l2(buffer_set_bytes(p), gpu_.l2_bytes, options_.warm);
  DeviceBuffer cudnn_workspace(std::max<std::size_t>(cudnn ? cudnn->max_workspace_bytes() : 0, 256));

  stage("making the inputs and the float64 reference");
  const TensorSource activation = options_.activation ? *options_.activation : expected_activation(p, options_.pattern);
  const TensorSource filter = options_.filter ? *options_.filter : expected_filter(p);
  ConvMeasurement measurement(p, {.activation = activation, .filter = filter, .seed = seed}, row.buffer_sets);
  row.activation = describe(activation);
  row.zero_fraction = loaded_zero_fraction(p, measurement.inputs().activation);
  Stream stream;

  // Verify every route and candidate; the verified ones become timing candidates.
  stage("verifying");
  std::vector<ConvCandidate> candidates;
  std::vector<std::size_t> candidate_cudnn_entry;  // candidate i < cudnn_count: its row.cudnn index
  const std::vector<CudnnRoute> no_routes;
  const auto& routes = cudnn ? cudnn->routes() : no_routes;
  for (std::size_t r = 0; r < routes.size(); ++r) {
    ConvCandidate candidate{
        fmt::format("cudnn {}", routes[r].algo), [&cudnn, &cudnn_workspace, r](const ConvPointers& t, CUstream s) {
          cudnn->launch(r, t.activation, t.filter, t.output, t.bias, t.residual, cudnn_workspace.ptr(), s);
        }};
    CudnnEntry entry = verify_route(routes[r], candidate, measurement, stream);
    if (entry.status == RouteStatus::ok) {
      candidate_cudnn_entry.push_back(row.cudnn.size());
      candidates.push_back(std::move(candidate));
    }
    row.cudnn.push_back(std::move(entry));
  }
  const std::size_t cudnn_count = candidates.size();

  std::vector<OursEntry> ours;
  std::vector<std::optional<std::size_t>> ours_candidate;  // parallel to `ours`: its timing candidate, if verified
  std::string build_failures;
  for (std::size_t i = 0; i < built.size(); ++i) {
    if (const auto* error = std::get_if<std::exception_ptr>(&built[i])) {
      build_failures += fmt::format("{}: {}; ", kernel_name(requests[i].spec), error_text(*error));
      continue;
    }
    const BuiltKernel& k = std::get<BuiltKernel>(built[i]);
    OursEntry entry{.kernel = k.source.entry};
    try {
      ConvCandidate candidate = kernel_candidate(k);
      const Verification v = measurement.verify(candidate, stream);
      entry.error = v.stats;
      if (!v.passed) {
        entry.status = RouteStatus::failed_verification;
        entry.reason = v.failure;
      } else {
        ours_candidate.resize(ours.size() + 1);
        ours_candidate[ours.size()] = candidates.size();
        candidates.push_back(std::move(candidate));
      }
    } catch (const std::exception& e) {
      entry.status = RouteStatus::error;
      entry.reason = e.what();
    }
    ours.push_back(std::move(entry));
    ours_candidate.resize(ours.size());
  }

  stage(fmt::format("timing {} cuDNN routes and {} of ours", cudnn_count, candidates.size() - cudnn_count));
  TimingOptions timing = options_.timing;
  timing.buffer_sets = row.buffer_sets;
  std::vector<Candidate> timed;
  for (const ConvCandidate& c : candidates) timed.push_back(measurement.timed(c));
  std::vector<bool> always_final(cudnn_count);
  for (std::size_t c = 0; c < cudnn_count; ++c) always_final[c] = is_seed_gemm_route(row.cudnn[candidate_cudnn_entry[c]]);
  const std::vector<TimingResult> results =
      time_screened(timed, cudnn_count, always_final, timing, options_.finalists, stream);
  for (std::size_t c = 0; c < cudnn_count; ++c) row.cudnn[candidate_cudnn_entry[c]].timing = results[c];

  // Ours: the fastest verified candidate in the headline mode (graph replay where it could be captured).
  const auto headline = [](const TimingResult& t) { return t.graph ? t.graph->median : t.stream.median; };
  std::optional<std::size_t> best_ours;
  for (std::size_t i = 0; i < ours.size(); ++i) {
    if (!ours_candidate[i]) continue;
    ours[i].timing = results[*ours_candidate[i]];
    if (!best_ours || headline(*ours[i].timing) < headline(*ours[*best_ours].timing)) best_ours = i;
  }
  if (best_ours) {
    row.ours = ours[*best_ours];
  } else if (!ours.empty()) {
    row.ours = ours.front();  // every candidate failed: show the first failure
  } else {
    row.ours = {.kernel = "", .status = RouteStatus::unsupported,
                .reason = build_failures.empty() ? fmt::format("no family serves this problem ({} {})", p.layout,
                                                               p.precision)
                                                 : build_failures};
  }

  int failed = 0;
  for (const OursEntry& e : ours) failed += e.status != RouteStatus::ok;
  if (failed > 0 && row.ours.status == RouteStatus::ok)
    row.ours.reason = fmt::format("{} of {} candidates failed verification or launch", failed, ours.size());
  row.our_candidates = std::move(ours);

  if (options_.cudnn_also && *options_.cudnn_also != p.precision) {
    stage(fmt::format("verifying and timing cuDNN's routes in {}", *options_.cudnn_also));
    row.cudnn_also = time_cudnn_also(p, *options_.cudnn_also, gpu_, options_, activation, filter, seed, timing, stream);
  }

  stage("energy");
  if (best_ours) {
    const Candidate& c = timed[*ours_candidate[*best_ours]];
    const EnergyMeasurement e = energy_at_gpu_pace(nvml_, c, headline(*row.ours.timing), stream.get());
    row.ours.energy_mj = e.mj_per_call;
    row.ours.energy_note = e.unavailable;
  }
  if (const auto best = cudnn_best(row)) {
    const auto it = std::find(candidate_cudnn_entry.begin(), candidate_cudnn_entry.end(), *best);
    const std::size_t index = static_cast<std::size_t>(it - candidate_cudnn_entry.begin());
    const EnergyMeasurement e = energy_at_gpu_pace(nvml_, timed[index], headline(results[index]), stream.get());
    row.cudnn_energy_mj = e.mj_per_call;
    row.cudnn_energy_note = e.unavailable;
  }
  stream.synchronize();
  row.end = device_state(nvml_);
  return row;
}

}  // namespace

Problem bench_problem(const Problem& layer, int batch, const BenchOptions& options) {
  Problem p = layer;
  if (batch > 0) p.n = batch;
  p.precision = options.precision;
  if (options.layout) p.layout = with_channels_last(p.layout, channels_last(*options.layout));
  return p;
}

BenchReport run_bench(const Suite& suite, const Gpu& gpu, const BenchOptions& options,
                      const std::string& command_line, const BenchProgress& progress) {
  check_timing_options(options.timing);
  const Nvml* nvml = Nvml::open(0);
  BenchReport report{.provenance = collect_provenance(0, nvml, cudnn_version(), command_line),
                     .timing = options.timing, .warm = options.warm,
                     .early_launch = early_launch_enabled(), .cudnn_routes = options.cudnn_routes, .rows = {}};
  JitCache cache(user_cache_dir() / "jit");
  ThreadPool pool;
  LayerBench bench(gpu, options, cache, pool, nvml);

  const std::vector<int> batches = options.batches.empty() ? std::vector<int>{0} : options.batches;
  const std::size_t total = batches.size() * suite.layers.size();
  std::size_t index = 0;
  for (int batch : batches) {
    const std::size_t first_row = report.rows.size();
    for (const Layer& layer : suite.layers) {
      const Problem p = bench_problem(layer.problem, batch, options);
      const auto stage = [&](const std::string& what) {
        if (progress) progress(index, total, fmt::format("{} n{}: {}", layer.name, p.n, what));
      };
      report.rows.push_back(bench.run(suite.name, layer, p, options.seed + index, stage));
      ++index;
      if (options.on_row && index < total) {
        BenchReport so_far = report;
        so_far.provenance.end = device_state(nvml);
        options.on_row(so_far);
      }
    }
    if (options.chain) {
      if (progress) progress(index - 1, total, fmt::format("batch {}: the network as one chain of our kernels", batch));
      const std::vector<BenchRow> rows(report.rows.begin() + static_cast<std::ptrdiff_t>(first_row), report.rows.end());
      if (auto chain = time_network_chain(rows, gpu, cache, pool, options.timing, options.seed))
        report.chains.push_back(std::move(*chain));
    }
  }
  report.provenance.end = device_state(nvml);
  return report;
}

}  // namespace convgen
