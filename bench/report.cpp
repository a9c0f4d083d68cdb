// report: best route, headline mode and speedup of a row, and the JSON, CSV and Markdown writers.
#include "bench/report.hpp"

#include <algorithm>
#include <cmath>
#include <map>
#include <set>
#include <tuple>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "measure/stats.hpp"

namespace convgen {
namespace {

using Json = nlohmann::ordered_json;

Json or_null(const std::optional<double>& value) { return value ? Json(*value) : Json(nullptr); }

// Ours' and cuDNN best's time in the row's headline mode, when ok and timed (below).
std::optional<double> ours_us(const BenchRow& row);
std::optional<double> best_us(const BenchRow& row);

const SampleStats* stats_in(const std::optional<TimingResult>& timing, HeadlineMode mode) {
  if (!timing) return nullptr;
  if (mode == HeadlineMode::stream) return &timing->stream;
  return timing->graph ? &*timing->graph : nullptr;
}

bool timed_ok(RouteStatus status, const std::optional<TimingResult>& timing, HeadlineMode mode) {
  return status == RouteStatus::ok && stats_in(timing, mode) != nullptr;
}

// ---- JSON

Json stats_json(const SampleStats* stats) {
  if (stats == nullptr) return nullptr;
  return {{"median", stats->median}, {"p10", stats->p10},   {"p90", stats->p90},     {"min", stats->min},
          {"max", stats->max},       {"mean", stats->mean}, {"count", stats->count}, {"outliers", stats->outliers}};
}

// The flat time fields the issue names (median_us, p10_us, ...) and the graph ones.
void put_times(Json& json, const std::optional<TimingResult>& timing) {
  const SampleStats* stream = stats_in(timing, HeadlineMode::stream);
  const SampleStats* graph = stats_in(timing, HeadlineMode::graph);
  json["median_us"] = stream ? Json(stream->median) : Json(nullptr);
  json["p10_us"] = stream ? Json(stream->p10) : Json(nullptr);
  json["p90_us"] = stream ? Json(stream->p90) : Json(nullptr);
  json["graph_median_us"] = graph ? Json(graph->median) : Json(nullptr);
  json["graph_p10_us"] = graph ? Json(graph->p10) : Json(nullptr);
  json["graph_p90_us"] = graph ? Json(graph->p90) : Json(nullptr);
  json["graph_error"] = timing ? timing->graph_error : "";
}

void put_error(Json& json, const std::optional<ErrorStats>& error) {
  json["rel_l2_error"] = error ? Json(error->rel_l2) : Json(nullptr);
  json["max_abs_error"] = error ? Json(error->max_abs) : Json(nullptr);
  json["nan_count"] = error ? Json(error->nan_count) : Json(nullptr);
  json["compared"] = error ? Json(error->compared) : Json(nullptr);
}

// Everything measured: full statistics of both modes and every sample.
void put_samples(Json& json, const std::optional<TimingResult>& timing) {
  json["calls_per_sample"] = timing ? Json(timing->calls_per_sample) : Json(nullptr);
  json["stream_stats"] = stats_json(stats_in(timing, HeadlineMode::stream));
  json["graph_stats"] = stats_json(stats_in(timing, HeadlineMode::graph));
  json["samples"] = {{"stream", timing ? Json(timing->stream_samples_us) : Json::array()},
                     {"graph", timing ? Json(timing->graph_samples_us) : Json::array()}};
}

Json problem_json(const Problem& p) {
  const Dims3 out = output_dims(p);
  const auto triple = [](const Dims3& d) { return Json::array({d.d, d.h, d.w}); };
  return {{"key", problem_key(p)},
          {"n", p.n},
          {"c", p.c},
          {"k", p.k},
          {"d", p.input.d},
          {"h", p.input.h},
          {"w", p.input.w},
          {"t", p.filter.d},
          {"r", p.filter.h},
          {"s", p.filter.w},
          {"o", out.d},
          {"p", out.h},
          {"q", out.w},
          {"stride", triple(p.stride)},
          {"padding", triple(p.padding)},
          {"dilation", triple(p.dilation)},
          {"groups", p.groups},
          {"layout", to_string(p.layout)},
          {"precision", to_string(p.precision)}};
}

Json cudnn_json(const CudnnEntry& e) {
  Json json = {{"route", e.route},   {"algo", e.algo},
               {"knobs", e.knobs},   {"status", to_string(e.status)},
               {"reason", e.reason}, {"workspace_bytes", e.workspace_bytes}};
  put_times(json, e.timing);
  put_error(json, e.error);
  put_samples(json, e.timing);
  return json;
}

Json ours_json(const OursEntry& e) {
  Json json = {{"kernel", e.kernel}, {"status", to_string(e.status)}, {"reason", e.reason}};
  put_times(json, e.timing);
  put_error(json, e.error);
  json["energy_mj"] = or_null(e.energy_mj);
  json["energy_note"] = e.energy_note;
  put_samples(json, e.timing);
  return json;
}

Json row_json(const BenchRow& row) {
  Json json = {{"suite", row.suite},
               {"layer", row.layer},
               {"batch", row.problem.n},
               {"count", row.count},
               {"problem", problem_json(row.problem)},
               {"shape", describe(row.problem)},
               {"precision", to_string(row.problem.precision)},
               {"math", row.math},
               {"act_sparsity", row.problem.act_sparsity},
               {"activation", row.activation},
               {"zero_fraction", row.zero_fraction},
               {"buffer_sets", row.buffer_sets},
               {"device", {{"start", to_json(row.start)}, {"end", to_json(row.end)}}}};
  json["cudnn"] = Json::array();
  for (const CudnnEntry& entry : row.cudnn) json["cudnn"].push_back(cudnn_json(entry));
  const std::optional<std::size_t> best = cudnn_best(row);
  if (best) {
    const CudnnEntry& b = row.cudnn[*best];
    json["cudnn_best"] = {{"route", b.route},
                          {"algo", b.algo},
                          {"knobs", b.knobs},
                          {"median_us", or_null(median_us(b.timing, HeadlineMode::stream))},
                          {"graph_median_us", or_null(median_us(b.timing, HeadlineMode::graph))},
                          {"rel_l2_error", b.error ? Json(b.error->rel_l2) : Json(nullptr)}};
  } else {
    json["cudnn_best"] = nullptr;
  }
  if (const auto gemm = cudnn_gemm_best(row)) {
    const CudnnEntry& g = row.cudnn[*gemm];
    json["cudnn_gemm_best"] = {{"algo", g.algo}, {"us", or_null(median_us(g.timing, headline_mode(row)))}};
  } else {
    json["cudnn_gemm_best"] = nullptr;
  }
  json["gemm_speedup"] = or_null(gemm_speedup(row));
  json["cudnn_energy_mj"] = or_null(row.cudnn_energy_mj);
  json["cudnn_energy_note"] = row.cudnn_energy_note;
  json["ours"] = ours_json(row.ours);
  // Every candidate's summary, without samples (they would multiply the file): what the tuned and untuned picks of
  // each family measured beside the winner.
  json["our_candidates"] = Json::array();
  for (const OursEntry& e : row.our_candidates) {
    Json candidate = {{"kernel", e.kernel}, {"status", to_string(e.status)}, {"reason", e.reason}};
    put_times(candidate, e.timing);
    candidate["rel_l2_error"] = e.error ? Json(e.error->rel_l2) : Json(nullptr);
    json["our_candidates"].push_back(std::move(candidate));
  }
  const auto over_floor = [&](const std::optional<double>& us) {
    return us && row.floor_us > 0 ? Json(*us / row.floor_us) : Json(nullptr);
  };
  json["roofline"] = {{"floor_us", row.floor_us > 0 ? Json(row.floor_us) : Json(nullptr)},
                      {"winograd_floor_us", row.winograd_floor_us > 0 ? Json(row.winograd_floor_us) : Json(nullptr)},
                      {"ours_over_floor", over_floor(ours_us(row))},
                      {"cudnn_over_floor", over_floor(best_us(row))}};
  json["headline_mode"] = to_string(headline_mode(row));
  json["speedup"] = or_null(speedup(row));
  if (row.cudnn_also) {  // only with --cudnn-also: reports without it keep their layout
    Json also = {{"precision", to_string(row.cudnn_also->precision)}, {"math", row.cudnn_also->math}};
    also["routes"] = Json::array();
    for (const CudnnEntry& entry : row.cudnn_also->routes) also["routes"].push_back(cudnn_json(entry));
    if (const auto also_best = cudnn_also_best(row)) {
      const CudnnEntry& b = row.cudnn_also->routes[also_best->route];
      also["best"] = {{"route", b.route},
                      {"algo", b.algo},
                      {"knobs", b.knobs},
                      {"us", also_best->us},
                      {"mode", to_string(also_best->mode)},
                      {"rel_l2_error", b.error ? Json(b.error->rel_l2) : Json(nullptr)}};
    } else {
      also["best"] = nullptr;
    }
    also["speedup"] = or_null(cudnn_also_speedup(row));
    json["cudnn_also"] = std::move(also);
  }
  return json;
}

// ---- CSV and Markdown

std::string csv_field(const std::string& text) {
  if (text.find_first_of(",\"\n") == std::string::npos) return text;
  std::string quoted = "\"";
  for (const char c : text) quoted += c == '"' ? std::string("\"\"") : std::string(1, c);
  return quoted + "\"";
}

// A stride, padding or dilation as one CSV cell: one number when equal in every dim of the problem's rank.
std::string dims_cell(const Dims3& v, Layout layout) {
  switch (rank(layout)) {
    case 1:
      return fmt::format("{}", v.w);
    case 2:
      return v.h == v.w ? fmt::format("{}", v.h) : fmt::format("{}x{}", v.h, v.w);
    default:
      return v.d == v.h && v.h == v.w ? fmt::format("{}", v.d) : fmt::format("{}x{}x{}", v.d, v.h, v.w);
  }
}

std::string us_cell(const std::optional<double>& us) { return us ? fmt::format("{:.2f}", *us) : ""; }

std::optional<double> ours_us(const BenchRow& row) {
  return row.ours.status == RouteStatus::ok ? median_us(row.ours.timing, headline_mode(row)) : std::nullopt;
}

std::optional<double> best_us(const BenchRow& row) {
  const std::optional<std::size_t> best = cudnn_best(row);
  return best ? median_us(row.cudnn[*best].timing, headline_mode(row)) : std::nullopt;
}

std::string md_escape(const std::string& text) {
  std::string out;
  for (const char c : text) out += c == '|' ? std::string("\\|") : std::string(1, c);
  return out;
}

std::string md_or_dash(const std::string& text) { return text.empty() ? "—" : text; }

std::string state_range(const std::optional<double>& start, const std::optional<double>& end, const char* unit,
                        const char* format) {
  const auto one = [&](const std::optional<double>& v) {
    return v ? fmt::format(fmt::runtime(format), *v) : std::string("unknown");
  };
  return fmt::format("{} → {} {}", one(start), one(end), unit);
}

}  // namespace

std::optional<double> median_us(const std::optional<TimingResult>& timing, HeadlineMode mode) {
  const SampleStats* stats = stats_in(timing, mode);
  return stats ? std::optional<double>(stats->median) : std::nullopt;
}

HeadlineMode headline_mode(const BenchRow& row) {
  if (!timed_ok(row.ours.status, row.ours.timing, HeadlineMode::graph)) return HeadlineMode::stream;
  for (const CudnnEntry& entry : row.cudnn)
    if (timed_ok(entry.status, entry.timing, HeadlineMode::graph)) return HeadlineMode::graph;
  return HeadlineMode::stream;
}

std::optional<std::size_t> cudnn_best(const BenchRow& row) {
  const HeadlineMode mode = headline_mode(row);
  std::optional<std::size_t> best;
  for (std::size_t i = 0; i < row.cudnn.size(); ++i) {
    const CudnnEntry& entry = row.cudnn[i];
    if (!timed_ok(entry.status, entry.timing, mode)) continue;
    if (!best || *median_us(entry.timing, mode) < *median_us(row.cudnn[*best].timing, mode)) best = i;
  }
  return best;
}

std::optional<CudnnAlsoBest> cudnn_also_best(const BenchRow& row) {
  if (!row.cudnn_also) return std::nullopt;
  const auto fastest = [&](HeadlineMode mode) -> std::optional<CudnnAlsoBest> {
    std::optional<CudnnAlsoBest> best;
    for (std::size_t i = 0; i < row.cudnn_also->routes.size(); ++i) {
      const CudnnEntry& entry = row.cudnn_also->routes[i];
      if (!timed_ok(entry.status, entry.timing, mode)) continue;
      const double us = *median_us(entry.timing, mode);
      if (!best || us < best->us) best = CudnnAlsoBest{.route = i, .us = us, .mode = mode};
    }
    return best;
  };
  if (headline_mode(row) == HeadlineMode::graph)
    if (auto best = fastest(HeadlineMode::graph)) return best;
  return fastest(HeadlineMode::stream);
}

std::optional<double> cudnn_also_speedup(const BenchRow& row) {
  const std::optional<CudnnAlsoBest> best = cudnn_also_best(row);
  if (!best || row.ours.status != RouteStatus::ok) return std::nullopt;
  const std::optional<double> ours = median_us(row.ours.timing, best->mode);
  if (!ours || *ours <= 0) return std::nullopt;
  return best->us / *ours;
}

std::optional<double> speedup(const BenchRow& row) {
  const std::optional<double> ours = ours_us(row);
  const std::optional<double> cudnn = best_us(row);
  if (!ours || !cudnn || *ours <= 0) return std::nullopt;
  return *cudnn / *ours;
}

bool is_seed_gemm_route(const CudnnEntry& entry) {
  // The legacy algorithms, plain or fused (a problem with an epilogue: cudnnConvolutionBiasActivationForward).
  return entry.route.starts_with("legacy") &&
         (entry.algo == "IMPLICIT_GEMM" || entry.algo == "IMPLICIT_PRECOMP_GEMM" || entry.algo == "GEMM");
}

std::optional<std::size_t> cudnn_gemm_best(const BenchRow& row) {
  const HeadlineMode mode = headline_mode(row);
  std::optional<std::size_t> best;
  for (std::size_t i = 0; i < row.cudnn.size(); ++i) {
    const CudnnEntry& entry = row.cudnn[i];
    if (!is_seed_gemm_route(entry) || !timed_ok(entry.status, entry.timing, mode)) continue;
    if (!best || *median_us(entry.timing, mode) < *median_us(row.cudnn[*best].timing, mode)) best = i;
  }
  return best;
}

std::optional<double> gemm_speedup(const BenchRow& row) {
  const std::optional<double> ours = ours_us(row);
  const std::optional<std::size_t> best = cudnn_gemm_best(row);
  if (!ours || !best || *ours <= 0) return std::nullopt;
  return *median_us(row.cudnn[*best].timing, headline_mode(row)) / *ours;
}

std::string route_label(const CudnnEntry& entry) {
  std::string label = entry.route + ":" + entry.algo;
  if (!entry.knobs.empty()) label += "{" + entry.knobs + "}";
  return label;
}

namespace {

// `convgen bench --chain`'s line: the network as one chain of our kernels, against the per-layer sum.
std::string chain_markdown(const NetworkChain& chain) {
  std::string out = fmt::format(
      "Network as one chain of our kernels ({} calls of {} layers in network order, one graph, each layer's buffers "
      "warm): ",
      chain.calls, chain.layers);
  if (!chain.early || !chain.plain) return out + fmt::format("not timed ({}).\n", md_escape(chain.error));
  out += fmt::format("{:.2f} µs launched early, {:.2f} µs without ({:.2f}×); the per-layer sum above is {:.2f} µs.\n",
                     chain.early->median, chain.plain->median, chain.plain->median / chain.early->median,
                     chain.per_layer_sum_us);
  if (!chain.left_out.empty())
    out += fmt::format("Left out of the chain: {}.\n", md_escape(fmt::format("{}", fmt::join(chain.left_out, "; "))));
  return out;
}

}  // namespace

std::string report_json(const BenchReport& report) {
  Json json = {{"schema", kReportSchema}, {"provenance", to_json(report.provenance)}};
  json["timing"] = {{"warmup_calls", report.timing.warmup_calls},
                    {"samples", report.timing.samples},
                    {"calls_per_sample", report.timing.calls_per_sample},
                    {"graph", report.timing.graph}};
  json["warm"] = report.warm;
  json["early_launch"] = report.early_launch;
  json["cudnn_routes"] = report.cudnn_routes;
  json["rows"] = Json::array();
  for (const BenchRow& row : report.rows) json["rows"].push_back(row_json(row));
  if (!report.chains.empty()) {
    json["chains"] = Json::array();
    for (const NetworkChain& chain : report.chains)
      json["chains"].push_back({{"batch", chain.batch},
                                {"calls", chain.calls},
                                {"layers", chain.layers},
                                {"left_out", chain.left_out},
                                {"early_stats", stats_json(chain.early ? &*chain.early : nullptr)},
                                {"plain_stats", stats_json(chain.plain ? &*chain.plain : nullptr)},
                                {"per_layer_sum_us", chain.per_layer_sum_us},
                                {"error", chain.error}});
  }
  return json.dump(2) + "\n";
}

std::string report_csv(const BenchReport& report) {
  // Route columns: legacy algorithms first, then the rest, each in order of first appearance.
  std::vector<std::string> columns;
  std::set<std::string> seen;
  for (const bool legacy : {true, false})
    for (const BenchRow& row : report.rows)
      for (const CudnnEntry& entry : row.cudnn)
        if (entry.route.starts_with("legacy") == legacy && seen.insert(route_label(entry)).second)
          columns.push_back(route_label(entry));

  std::string out = "B,C,H,W,N,D,T,R,S,stride,pad,dilation,groups";
  for (const std::string& column : columns) out += fmt::format(",{}", csv_field(column));
  out += ",cudnn_best_us,cudnn_best_route,ours_us,ours_kernel,speedup,mode,suite,layer,count,precision,"
         "cudnn_gemm_us,gemm_speedup,act_sparsity,zero_fraction,activation,cudnn_energy_mj,ours_energy_mj,floor_us,"
         "winograd_floor_us\n";
  for (const BenchRow& row : report.rows) {
    const Problem& p = row.problem;
    const HeadlineMode mode = headline_mode(row);
    out += fmt::format("{},{},{},{},{},{},{},{},{},{},{},{},{}", p.n, p.c, p.input.h, p.input.w, p.k, p.input.d,
                       p.filter.d, p.filter.h, p.filter.w, dims_cell(p.stride, p.layout),
                       dims_cell(p.padding, p.layout), dims_cell(p.dilation, p.layout), p.groups);
    std::map<std::string, std::string> cells;
    for (const CudnnEntry& entry : row.cudnn)
      if (entry.status == RouteStatus::ok) cells[route_label(entry)] = us_cell(median_us(entry.timing, mode));
    for (const std::string& column : columns) out += fmt::format(",{}", cells[column]);
    const std::optional<std::size_t> best = cudnn_best(row);
    const std::optional<double> ratio = speedup(row);
    out += fmt::format(",{},{},{},{},{},{},{},{},{},{}", us_cell(best_us(row)),
                       best ? csv_field(route_label(row.cudnn[*best])) : "", us_cell(ours_us(row)),
                       csv_field(row.ours.kernel), ratio ? fmt::format("{:.3f}", *ratio) : "", to_string(mode),
                       csv_field(row.suite), csv_field(row.layer), row.count, to_string(p.precision));
    const std::optional<std::size_t> gemm = cudnn_gemm_best(row);
    const std::optional<double> gemm_ratio = gemm_speedup(row);
    const auto energy_cell = [](const std::optional<double>& mj) { return mj ? fmt::format("{:.5f}", *mj) : ""; };
    const auto floor_cell = [](double us) { return us > 0 ? fmt::format("{:.3f}", us) : ""; };
    out += fmt::format(",{},{},{},{:.4f},{},{},{},{},{}\n",
                       gemm ? us_cell(median_us(row.cudnn[*gemm].timing, mode)) : "",
                       gemm_ratio ? fmt::format("{:.3f}", *gemm_ratio) : "", p.act_sparsity, row.zero_fraction,
                       csv_field(row.activation), energy_cell(row.cudnn_energy_mj), energy_cell(row.ours.energy_mj),
                       floor_cell(row.floor_us), floor_cell(row.winograd_floor_us));
  }
  return out;
}

namespace {

// A relative L2 error as the tables show it, or a dash where there is none.
std::string error_text(const std::optional<ErrorStats>& e) {
  return e ? fmt::format("{:.1e}", e->rel_l2) : std::string("—");
}

// With --cudnn-also: per layer cuDNN's best in the other precision against ours, its geometric mean and network
// totals; nothing for rows without it.
std::string cudnn_also_markdown(const std::vector<const BenchRow*>& rows) {
  const BenchRow* first = nullptr;
  for (const BenchRow* row : rows)
    if (row->cudnn_also && !first) first = row;
  if (!first) return "";
  std::string out = fmt::format(
      "\n### Against cuDNN in {} ({}), timed in the same run after ours\n\n"
      "Each of cuDNN's routes in {} verified against its own float64 reference (the same activation and filter "
      "values, rounded to {}). Speedup = that best ÷ ours, in the mode named (graph where both were captured).\n\n"
      "| layer | cuDNN {} best µs | route | ours µs | speedup | mode | rel L2 cuDNN {} / ours |\n"
      "|---|--:|---|--:|--:|---|--:|\n",
      first->cudnn_also->precision, first->cudnn_also->math, first->cudnn_also->precision,
      first->cudnn_also->precision, first->cudnn_also->precision, first->cudnn_also->precision);
  double log_sum = 0, cudnn_total = 0, ours_total = 0;
  int compared = 0;
  const BenchRow* worst = nullptr;
  for (const BenchRow* row : rows) {
    if (!row->cudnn_also) continue;
    const std::optional<CudnnAlsoBest> best = cudnn_also_best(*row);
    const std::optional<double> ratio = cudnn_also_speedup(*row);
    const std::optional<double> ours =
        row->ours.status == RouteStatus::ok && best ? median_us(row->ours.timing, best->mode) : std::nullopt;
    out += fmt::format("| {} | {} | {} | {} | {} | {} | {} / {} |\n", md_escape(row->layer),
                       best ? fmt::format("{:.2f}", best->us) : "—",
                       best ? md_escape(route_label(row->cudnn_also->routes[best->route])) : "—",
                       md_or_dash(us_cell(ours)), ratio ? fmt::format("{:.2f}×", *ratio) : "—",
                       best ? to_string(best->mode) : "—",
                       best ? error_text(row->cudnn_also->routes[best->route].error) : "—",
                       error_text(row->ours.error));
    if (!ratio) continue;
    ++compared;
    log_sum += std::log(*ratio);
    cudnn_total += row->count * best->us;
    ours_total += row->count * best->us / *ratio;  // ours in the same mode: the ratio is cuDNN's ÷ ours
    if (!worst || *ratio < *cudnn_also_speedup(*worst)) worst = row;
  }
  out += "\n";
  if (compared == 0) return out + fmt::format("No layer has both a cuDNN {} and an ours time.\n",
                                              first->cudnn_also->precision);
  out += fmt::format("Geometric-mean speedup over cuDNN {} {:.2f}× over {} layers; worst {} ({:.2f}×).\n",
                     first->cudnn_also->precision, std::exp(log_sum / compared), compared, md_escape(worst->layer),
                     *cudnn_also_speedup(*worst));
  out += fmt::format("Network total, Σ count × time over the same layers: cuDNN {} {:.2f} µs, ours {:.2f} µs, "
                     "cuDNN ÷ ours {:.2f}×.\n",
                     first->cudnn_also->precision, cudnn_total, ours_total, cudnn_total / ours_total);
  return out;
}

}  // namespace

std::string report_markdown(const BenchReport& report) {
  const Provenance& p = report.provenance;
  std::string out = "# convgen vs cuDNN\n\n| run | |\n|---|---|\n";
  out += fmt::format("| GPU | {} ({}) |\n", md_escape(p.gpu), p.arch);
  out += fmt::format("| driver | {}; CUDA {} (built with {}) |\n",
                     p.driver.empty() ? "unknown (NVML: " + md_escape(p.nvml) + ")" : p.driver, p.cuda_driver,
                     p.cuda_toolkit);
  out += fmt::format("| NVRTC | {} |\n| cuDNN | {} |\n", p.nvrtc, md_or_dash(p.cudnn));
  out += fmt::format("| convgen | {} ({}) |\n| date | {} |\n", p.convgen_version, p.convgen_commit, p.date);
  out += fmt::format("| command | `{}` |\n", md_escape(p.command_line));
  out += fmt::format("| timing | {} samples × {} calls after {} warm-up calls; graph replay {}; {}; {} |\n",
                     report.timing.samples, report.timing.calls_per_sample, report.timing.warmup_calls,
                     report.timing.graph ? "timed" : "off",
                     report.warm ? "warm L2 (residency allowed)" : "cold L2 (buffer sets rotated)",
                     report.early_launch ? "ours launched early where the kernel allows (each call's blocks may start "
                                           "as the previous call ends)"
                                         : "ours never launched early (--early-launch off)");
  out += fmt::format("| SM clock | {} |\n", state_range(p.start.sm_clock_mhz, p.end.sm_clock_mhz, "MHz", "{:.0f}"));
  out += fmt::format("| power | {} |\n\n", state_range(p.start.power_w, p.end.power_w, "W", "{:.1f}"));
  out +=
      "Times are medians in µs per call. Speedup = cuDNN best ÷ ours, on graph-replay medians where both sides "
      "could be captured, else on stream-launch medians (column mode). rel L2: relative L2 error against the "
      "float64 reference.\n";

  // Groups in order of first appearance.
  using Key = std::tuple<std::string, int, Precision>;
  std::vector<Key> keys;
  std::map<Key, std::vector<const BenchRow*>> groups;
  for (const BenchRow& row : report.rows) {
    const Key key{row.suite, row.problem.n, row.problem.precision};
    if (!groups.contains(key)) keys.push_back(key);
    groups[key].push_back(&row);
  }

  for (const Key& key : keys) {
    const std::vector<const BenchRow*>& rows = groups[key];
    out += fmt::format("\n## {}, batch {}, {} ({})\n\n", std::get<0>(key), std::get<1>(key), std::get<2>(key),
                       md_or_dash(rows.front()->math));
    out +=
        "| layer | shape | count | zeros | cuDNN best µs | cuDNN route | ours µs | our kernel | speedup | "
        "speedup vs cuDNN GEMM | mode | floor µs (Winograd) | ÷ floor cuDNN / ours | rel L2 cuDNN / ours | "
        "energy mJ cuDNN / ours |\n"
        "|---|---|--:|--:|--:|---|--:|---|--:|--:|---|--:|--:|--:|--:|\n";
    double log_sum = 0, cudnn_total = 0, ours_total = 0, gemm_log_sum = 0, floor_total = 0;
    int compared = 0, graph_rows = 0, gemm_compared = 0;
    // Each compared layer's time over twice its floor, ours and cuDNN's (issue 13's batch-1 bound: the median layer
    // within 2 × floor + 2 µs).
    std::vector<double> ours_over_twice_floor, cudnn_over_twice_floor;
    double cudnn_energy_total = 0, ours_energy_total = 0;
    bool energy_complete = true;
    const BenchRow* worst = nullptr;
    std::vector<std::string> not_compared, suspicious;
    for (const BenchRow* row : rows) {
      const std::optional<std::size_t> best = cudnn_best(*row);
      const std::optional<double> ratio = speedup(*row);
      const HeadlineMode mode = headline_mode(*row);
      const auto energy_text = [](const std::optional<double>& mj) {
        return mj ? fmt::format("{:.3f}", *mj) : std::string("—");
      };
      std::string kernel = md_or_dash(row->ours.kernel);
      if (row->ours.status != RouteStatus::ok) kernel += fmt::format(" ({})", to_string(row->ours.status));
      const std::optional<double> gemm_ratio = gemm_speedup(*row);
      const auto floor_text = [&] {
        if (row->floor_us <= 0) return std::string("—");
        return row->winograd_floor_us > 0 ? fmt::format("{:.2f} ({:.2f})", row->floor_us, row->winograd_floor_us)
                                          : fmt::format("{:.2f}", row->floor_us);
      };
      const auto over_floor = [&](const std::optional<double>& us) {
        return us && row->floor_us > 0 ? fmt::format("{:.1f}", *us / row->floor_us) : std::string("—");
      };
      out += fmt::format(
          "| {} | {} | {} | {:.0f}% | {} | {} | {} | {} | {} | {} | {} | {} | {} / {} | {} / {} | {} / {} |\n",
          md_escape(row->layer), md_escape(describe(row->problem)), row->count, row->zero_fraction * 100,
          md_or_dash(us_cell(best_us(*row))), best ? md_escape(route_label(row->cudnn[*best])) : "—",
          md_or_dash(us_cell(ours_us(*row))), md_escape(kernel), ratio ? fmt::format("{:.2f}×", *ratio) : "—",
          gemm_ratio ? fmt::format("{:.2f}×", *gemm_ratio) : "—", to_string(mode), floor_text(),
          over_floor(best_us(*row)), over_floor(ours_us(*row)), best ? error_text(row->cudnn[*best].error) : "—",
          error_text(row->ours.error), energy_text(row->cudnn_energy_mj), energy_text(row->ours.energy_mj));
      if (ratio) {
        ++compared;
        graph_rows += mode == HeadlineMode::graph;
        log_sum += std::log(*ratio);
        cudnn_total += row->count * *best_us(*row);
        ours_total += row->count * *ours_us(*row);
        floor_total += row->count * row->floor_us;
        if (row->floor_us > 0) {
          ours_over_twice_floor.push_back(*ours_us(*row) - 2 * row->floor_us);
          cudnn_over_twice_floor.push_back(*best_us(*row) - 2 * row->floor_us);
        }
        if (row->cudnn_energy_mj && row->ours.energy_mj) {
          cudnn_energy_total += row->count * *row->cudnn_energy_mj;
          ours_energy_total += row->count * *row->ours.energy_mj;
        } else {
          energy_complete = false;
        }
        if (gemm_ratio) {
          ++gemm_compared;
          gemm_log_sum += std::log(*gemm_ratio);
        }
        if (worst == nullptr || *ratio < *speedup(*worst)) worst = row;
      } else if (row->ours.status != RouteStatus::ok) {
        not_compared.push_back(fmt::format("{} (ours {}{})", row->layer, to_string(row->ours.status),
                                           row->ours.reason.empty() ? "" : ": " + row->ours.reason));
      } else {
        not_compared.push_back(
            fmt::format("{} ({})", row->layer, best ? "ours has no time" : "no cuDNN route has an ok time"));
      }
      for (const CudnnEntry& entry : row->cudnn)
        if (entry.status == RouteStatus::failed_verification || entry.status == RouteStatus::error)
          suspicious.push_back(fmt::format("{} {} ({}{})", row->layer, route_label(entry), to_string(entry.status),
                                           entry.reason.empty() ? "" : ": " + entry.reason));
    }
    out += "\n";
    if (!report.cudnn_routes) {
      double ours_only_total = 0;
      int timed = 0;
      for (const BenchRow* row : rows)
        if (const std::optional<double> us = ours_us(*row); us && row->ours.status == RouteStatus::ok) {
          ours_only_total += row->count * *us;
          ++timed;
        }
      out += fmt::format("cuDNN was not run (--ours-only). Ours, Σ count × time over {} of {} layers: {:.2f} µs.\n",
                         timed, rows.size(), ours_only_total);
      not_compared.clear();
    } else if (compared == 0) {
      out += "No layer has both a cuDNN and an ours time.\n";
    } else {
      const std::string modes = graph_rows == compared ? "graph replay"
                                : graph_rows == 0      ? "stream launches"
                                                       : fmt::format("graph replay for {}, stream launches for {}",
                                                                     graph_rows, compared - graph_rows);
      out +=
          fmt::format("Geometric-mean speedup {:.2f}× over {} of {} layers; worst {} ({:.2f}×).\n",
                      std::exp(log_sum / compared), compared, rows.size(), md_escape(worst->layer), *speedup(*worst));
      out += fmt::format(
          "Network total, Σ count × time over the same layers: cuDNN {:.2f} µs, ours {:.2f} µs, cuDNN ÷ ours "
          "{:.2f}× ({}).\n",
          cudnn_total, ours_total, cudnn_total / ours_total, modes);
      if (floor_total > 0)
        out += fmt::format("Roofline floor of the same layers, Σ count × floor: {:.2f} µs; cuDNN at {:.1f}× it, ours at "
                           "{:.1f}×.\n",
                           floor_total, cudnn_total / floor_total, ours_total / floor_total);
      if (!ours_over_twice_floor.empty()) {
        const auto within = [](const std::vector<double>& over) {
          return std::count_if(over.begin(), over.end(), [](double us) { return us <= 2.0; });
        };
        out += fmt::format(
            "Time over twice the floor, median layer: ours {:.2f} µs, cuDNN {:.2f} µs; layers within 2 × floor + 2 µs: "
            "ours {} of {}, cuDNN {} of {}.\n",
            summarize(ours_over_twice_floor).median, summarize(cudnn_over_twice_floor).median,
            within(ours_over_twice_floor), ours_over_twice_floor.size(), within(cudnn_over_twice_floor),
            cudnn_over_twice_floor.size());
      }
      if (energy_complete && ours_energy_total > 0)
        out += fmt::format("Network energy, Σ count × energy per call: cuDNN {:.3f} mJ, ours {:.3f} mJ.\n",
                           cudnn_energy_total, ours_energy_total);
      if (gemm_compared > 0)
        out += fmt::format(
            "Against the sparse-conv seed's baseline (the fastest of cuDNN's legacy IMPLICIT_GEMM, "
            "IMPLICIT_PRECOMP_GEMM and GEMM): geometric-mean speedup {:.2f}× over {} layers.\n",
            std::exp(gemm_log_sum / gemm_compared), gemm_compared);
    }
    if (!not_compared.empty())
      out += fmt::format("Not compared: {}.\n", md_escape(fmt::format("{}", fmt::join(not_compared, "; "))));
    if (!suspicious.empty())
      out += fmt::format("cuDNN routes left out of best: {}.\n",
                         md_escape(fmt::format("{}", fmt::join(suspicious, "; "))));
    out += cudnn_also_markdown(rows);
    for (const NetworkChain& chain : report.chains)
      if (chain.batch == std::get<1>(key)) out += chain_markdown(chain);
  }
  return out;
}

}  // namespace convgen
