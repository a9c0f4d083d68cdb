// cost_model: occupancy, waves and the weighted sum of the kinds of work; its non-negative least-squares calibration
// per family; accuracy measures.
#include "tuner/cost_model.hpp"

#include <algorithm>
#include <array>
#include <climits>
#include <cmath>
#include <numeric>
#include <set>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "convgen/error.hpp"
#include "tuner/tuning_db.hpp"

namespace convgen {
namespace {

constexpr int kWarpSize = 32;
// Registers are allocated per warp in units of 256, i.e. 8 per thread.
constexpr int kRegisterUnit = 8;
// Shared memory the system reserves per resident block on sm_80 and later (CUDA occupancy calculator).
constexpr int kReservedSmemPerBlock = 1024;
// Warp schedulers per SM (sm_70 and later), each issuing one warp instruction per cycle.
constexpr double kSchedulersPerSm = 4;

int round_up(int value, int unit) { return (value + unit - 1) / unit * unit; }

std::size_t index(CostTerm term) { return static_cast<std::size_t>(term); }

// What the model knows of a kernel on the GPU before the coefficients: occupancy, waves and the terms.
struct Analysis {
  Occupancy occupancy;
  double waves = 0;
  double last_wave_fill = 0;
  CostTerms terms{};
};

Analysis analyze(const CostFeatures& f, const PtxasReport& report, const Gpu& gpu) {
  if (f.blocks <= 0)
    throw InputError(fmt::format("cost model: the launch must have at least one block, got {}", f.blocks));
  if (gpu.sm_count <= 0 || !(gpu.clock_mhz > 0) || !(gpu.dram_bandwidth_gbs > 0))
    throw InputError(
        fmt::format("cost model: {} must give a positive SM count, clock and DRAM bandwidth", gpu.name));
  Analysis a;
  a.occupancy =
      occupancy(f.threads_per_block, report.registers, std::max(f.smem_bytes_per_block, report.smem_bytes), gpu);
  const int resident = a.occupancy.blocks_per_sm;
  if (resident == 0) return a;
  const double blocks = static_cast<double>(f.blocks);
  const double blocks_per_wave = static_cast<double>(resident) * gpu.sm_count;
  a.waves = std::ceil(blocks / blocks_per_wave);
  a.last_wave_fill = (blocks - (a.waves - 1) * blocks_per_wave) / blocks_per_wave;
  // The busiest SM runs ceil(blocks / SMs) blocks over the launch; its schedulers issue their instructions.
  const double blocks_on_busiest_sm = std::ceil(blocks / gpu.sm_count);
  // The schedulers' issue rate, or with few warps resident at once on the busiest SM, what those warps issue.
  const double warps_at_once =
      std::min<double>(resident, blocks_on_busiest_sm) * std::ceil(static_cast<double>(f.threads_per_block) / kWarpSize);
  const double per_cycle =
      f.warp_issue_rate > 0 ? std::min(kSchedulersPerSm, warps_at_once * f.warp_issue_rate) : kSchedulersPerSm;
  const auto issue_us = [&](double instructions_per_block) {
    return blocks_on_busiest_sm * instructions_per_block / (per_cycle * gpu.clock_mhz);  // MHz: cycles per µs
  };
  const double bytes_per_us = gpu.dram_bandwidth_gbs * 1e3;  // 1 GB/s = 1e3 B/µs
  const double steps = a.waves * f.main_loop_steps;
  CostTerms& t = a.terms;
  t[index(CostTerm::fma)] = issue_us(f.fma_instructions);
  t[index(CostTerm::shared_loads)] = issue_us(f.shared_load_instructions);
  t[index(CostTerm::global_loads)] = issue_us(f.global_load_instructions);
  t[index(CostTerm::address)] = issue_us(f.address_instructions);
  t[index(CostTerm::serial_steps)] = (f.pipelined ? 0 : steps) + f.extra_serial_steps;
  t[index(CostTerm::pipelined_steps)] = f.pipelined ? steps : 0;
  t[index(CostTerm::waves)] = a.waves;
  t[index(CostTerm::atomics)] = f.atomic_outputs * 4 / bytes_per_us;
  t[index(CostTerm::extra_launches)] = f.extra_launches;
  t[index(CostTerm::dram)] = f.dram_bytes / bytes_per_us;
  t[index(CostTerm::launch)] = 1;
  return a;
}

double weighted_sum(const CostTerms& terms, const CostTerms& weights) {
  double sum = 0;
  for (std::size_t i = 0; i < cost_term_count; ++i) sum += terms[i] * weights[i];
  return sum;
}

}  // namespace

CostTerms Coefficients::of(std::string_view family) const {
  if (auto it = weights.find(family); it != weights.end()) return it->second;
  return convgen::family(family).default_cost_weights();
}

CostTerms& Coefficients::of(std::string_view family) {
  auto it = weights.find(family);
  if (it == weights.end()) it = weights.emplace(std::string(family), convgen::family(family).default_cost_weights()).first;
  return it->second;
}

CostTerm Prediction::largest_term() const {
  return static_cast<CostTerm>(std::max_element(terms_us.begin(), terms_us.end()) - terms_us.begin());
}

Occupancy occupancy(int threads_per_block, int registers_per_thread, int smem_bytes_per_block, const Gpu& gpu) {
  if (threads_per_block <= 0 || threads_per_block > gpu.max_threads_per_block ||
      registers_per_thread > gpu.max_regs_per_thread || smem_bytes_per_block > max_smem_per_block_bytes(gpu))
    return {.blocks_per_sm = 0, .limit = OccupancyLimit::cannot_launch};
  const int threads = round_up(threads_per_block, kWarpSize);
  const std::int64_t registers = static_cast<std::int64_t>(round_up(registers_per_thread, kRegisterUnit)) * threads;
  if (gpu.regs_per_block > 0 && registers > gpu.regs_per_block)
    return {.blocks_per_sm = 0, .limit = OccupancyLimit::cannot_launch};
  const int smem = smem_bytes_per_block + (compute_capability(gpu) >= 80 ? kReservedSmemPerBlock : 0);

  const std::array<std::pair<OccupancyLimit, std::int64_t>, 4> limits = {{
      {OccupancyLimit::blocks, gpu.max_blocks_per_sm},
      {OccupancyLimit::threads, gpu.max_threads_per_sm / threads},
      {OccupancyLimit::registers, registers > 0 ? gpu.regs_per_sm / registers : INT_MAX},
      {OccupancyLimit::smem, smem > 0 ? gpu.smem_per_sm_bytes / smem : INT_MAX},
  }};
  Occupancy result{.blocks_per_sm = INT_MAX, .limit = OccupancyLimit::blocks};
  for (const auto& [limit, blocks] : limits) {
    if (blocks < result.blocks_per_sm) result = {.blocks_per_sm = static_cast<int>(blocks), .limit = limit};
  }
  return result;
}

std::optional<CostTerms> cost_terms(const CostFeatures& features, const PtxasReport& report, const Gpu& gpu) {
  const Analysis a = analyze(features, report, gpu);
  if (a.occupancy.blocks_per_sm == 0) return std::nullopt;
  return a.terms;
}

Prediction predict(std::string_view family, const CostFeatures& features, const PtxasReport& report, const Gpu& gpu,
                   const Coefficients& coefficients) {
  const Analysis a = analyze(features, report, gpu);
  Prediction p;
  p.resident_blocks_per_sm = a.occupancy.blocks_per_sm;
  if (p.resident_blocks_per_sm == 0) return p;
  p.waves = a.waves;
  p.last_wave_fill = a.last_wave_fill;
  const CostTerms w = coefficients.of(family);
  for (std::size_t i = 0; i < cost_term_count; ++i) p.terms_us[i] = a.terms[i] * w[i];
  p.time_us = weighted_sum(a.terms, w);
  return p;
}

std::vector<std::size_t> rank(std::span<const Prediction> predictions) {
  std::vector<std::size_t> order(predictions.size());
  std::iota(order.begin(), order.end(), std::size_t{0});
  std::stable_sort(order.begin(), order.end(),
                   [&](std::size_t a, std::size_t b) { return predictions[a].time_us < predictions[b].time_us; });
  return order;
}

std::vector<double> nonnegative_least_squares(std::span<const double> a, std::span<const double> b,
                                              std::size_t columns) {
  const std::size_t rows = b.size();
  if (columns == 0 || a.size() != rows * columns)
    throw InputError(fmt::format("nonnegative_least_squares: a has {} values, expected {} rows x {} columns", a.size(),
                                 rows, columns));
  // Each column scaled to unit norm (the solution is scaled back at the end): the tolerances below are relative to
  // the largest column, and would otherwise take a column far smaller than the others for a dependent one.
  std::vector<double> norm(columns, 0.0);
  for (std::size_t r = 0; r < rows; ++r)
    for (std::size_t c = 0; c < columns; ++c) norm[c] += a[r * columns + c] * a[r * columns + c];
  for (double& n : norm) n = n > 0 ? std::sqrt(n) : 1.0;
  const auto at = [&](std::size_t r, std::size_t c) { return a[r * columns + c] / norm[c]; };
  // Works on the normal equations (columns are few): G = AᵀA, h = Aᵀb; the gradient of ½‖Ax − b‖² is Gx − h.
  std::vector<double> g(columns * columns, 0.0), h(columns, 0.0);
  for (std::size_t r = 0; r < rows; ++r)
    for (std::size_t i = 0; i < columns; ++i) {
      h[i] += at(r, i) * b[r];
      for (std::size_t j = 0; j < columns; ++j) g[i * columns + j] += at(r, i) * at(r, j);
    }
  double scale = 0;
  for (std::size_t i = 0; i < columns; ++i) scale = std::max(scale, g[i * columns + i]);
  const double tolerance = 1e-12 * std::max(scale, 1e-300);

  // Solves G_PP z_P = h_P over the passive set P by Gaussian elimination with partial pivoting; z is 0 off P.
  const auto solve_passive = [&](const std::vector<bool>& passive, std::vector<double>& z) {
    std::vector<std::size_t> vars;
    for (std::size_t i = 0; i < columns; ++i)
      if (passive[i]) vars.push_back(i);
    const std::size_t n = vars.size();
    std::vector<double> m(n * (n + 1));
    for (std::size_t r = 0; r < n; ++r) {
      for (std::size_t c = 0; c < n; ++c) m[r * (n + 1) + c] = g[vars[r] * columns + vars[c]];
      m[r * (n + 1) + n] = h[vars[r]];
    }
    for (std::size_t col = 0; col < n; ++col) {
      std::size_t pivot = col;
      for (std::size_t r = col + 1; r < n; ++r)
        if (std::abs(m[r * (n + 1) + col]) > std::abs(m[pivot * (n + 1) + col])) pivot = r;
      if (std::abs(m[pivot * (n + 1) + col]) <= tolerance) return false;  // dependent columns
      for (std::size_t c = 0; c <= n; ++c) std::swap(m[col * (n + 1) + c], m[pivot * (n + 1) + c]);
      for (std::size_t r = 0; r < n; ++r) {
        if (r == col) continue;
        const double factor = m[r * (n + 1) + col] / m[col * (n + 1) + col];
        for (std::size_t c = col; c <= n; ++c) m[r * (n + 1) + c] -= factor * m[col * (n + 1) + c];
      }
    }
    z.assign(columns, 0.0);
    for (std::size_t r = 0; r < n; ++r) z[vars[r]] = m[r * (n + 1) + n] / m[r * (n + 1) + r];
    return true;
  };

  std::vector<double> x(columns, 0.0);
  std::vector<bool> passive(columns, false), excluded(columns, false);
  for (std::size_t outer = 0; outer < 3 * columns; ++outer) {
    // The steepest descent direction among the variables held at 0.
    std::optional<std::size_t> best;
    double best_w = 0;
    for (std::size_t i = 0; i < columns; ++i) {
      if (passive[i] || excluded[i]) continue;
      double w = h[i];
      for (std::size_t j = 0; j < columns; ++j) w -= g[i * columns + j] * x[j];
      if (w > tolerance && w > best_w) {
        best_w = w;
        best = i;
      }
    }
    if (!best) break;
    passive[*best] = true;
    std::vector<double> z;
    if (!solve_passive(passive, z)) {
      // The column depends on those already in: it adds nothing.
      passive[*best] = false;
      excluded[*best] = true;
      continue;
    }
    for (std::size_t inner = 0; inner < 3 * columns; ++inner) {
      bool feasible = true;
      for (std::size_t i = 0; i < columns; ++i)
        if (passive[i] && z[i] <= 0) feasible = false;
      if (feasible) break;
      // Step from x toward z as far as every variable stays non-negative; drop those that reach 0.
      double alpha = 1;
      for (std::size_t i = 0; i < columns; ++i)
        if (passive[i] && z[i] <= 0) alpha = std::min(alpha, x[i] / (x[i] - z[i]));
      for (std::size_t i = 0; i < columns; ++i) {
        x[i] += alpha * (z[i] - x[i]);
        if (passive[i] && x[i] <= tolerance) {
          passive[i] = false;
          x[i] = 0;
        }
      }
      if (!solve_passive(passive, z)) break;
    }
    for (std::size_t i = 0; i < columns; ++i) x[i] = passive[i] ? std::max(z[i], 0.0) : 0.0;
  }
  for (std::size_t i = 0; i < columns; ++i) x[i] /= norm[i];
  return x;
}

Calibration calibrate(std::span<const CalibrationSample> samples, const Gpu& gpu, const Coefficients& start) {
  Calibration result{.coefficients = start};
  std::map<std::string, std::vector<std::pair<CostTerms, double>>, std::less<>> usable;
  for (const CalibrationSample& s : samples) {
    if (!(s.measured_us > 0) || !std::isfinite(s.measured_us)) continue;
    if (auto terms = cost_terms(s.features, s.report, gpu)) usable[s.family].emplace_back(*terms, s.measured_us);
  }
  bool any = false;
  std::string counts;
  std::map<std::string, std::size_t, std::less<>> count_of;  // every registered family, and any other sampled
  for (const Family* f : all_families()) count_of[std::string(f->name())] = 0;
  for (const auto& [family_name, rows] : usable) count_of[family_name] = rows.size();
  for (const auto& [family_name, count] : count_of)
    counts += fmt::format("{}{} {}", counts.empty() ? "" : ", ", family_name, count);
  for (const auto& [family_name, rows] : usable) {
    FamilyCalibration& fc = result.families[family_name];
    fc.samples = static_cast<int>(rows.size());
    result.samples += fc.samples;
    CostTerms& weights = result.coefficients.of(family_name);
    if (fc.samples >= min_calibration_samples) {
      // Rows scaled by 1 / measured: ‖A w − 1‖² is the sum of squared relative errors.
      std::vector<double> a;
      a.reserve(rows.size() * cost_term_count);
      for (const auto& [terms, us] : rows)
        for (double t : terms) a.push_back(t / us);
      const std::vector<double> ones(rows.size(), 1.0);
      const std::vector<double> w = nonnegative_least_squares(a, ones, cost_term_count);
      std::copy(w.begin(), w.end(), weights.begin());
      fc.fitted = true;
      any = true;
    }
    double sum = 0;
    for (const auto& [terms, us] : rows) {
      const double e = (weighted_sum(terms, weights) - us) / us;
      sum += e * e;
    }
    fc.rms_relative_error = rows.empty() ? 0 : std::sqrt(sum / static_cast<double>(rows.size()));
  }
  if (!any)
    throw InputError(fmt::format("calibrate: need at least {} measurements of launchable kernels of one family, got {}",
                                 min_calibration_samples, counts));
  return result;
}

std::string describe_weights(std::string_view family, const CostTerms& weights) {
  std::string text;
  for (std::size_t t = 0; t < cost_term_count; ++t)
    if (weights[t] != 0)
      text += fmt::format("{}{} {:.3g}", text.empty() ? "" : ", ", EnumNames<CostTerm>::table[t].second, weights[t]);
  return fmt::format("{}: {}", family, text.empty() ? "all 0" : text);
}

std::string describe_coefficients(const Coefficients& coefficients) {
  std::string out;
  for (const Family* f : all_families())
    out += (out.empty() ? "" : "; ") + describe_weights(f->name(), coefficients.of(f->name()));
  return out;
}

void save_calibration(TuningDb& db, const Gpu& gpu, const Calibration& calibration) {
  // A family's entry holds its weights where the calibration has its own, and its fit where it had samples.
  std::set<std::string, std::less<>> names;
  for (const auto& [name, weights] : calibration.coefficients.weights) names.insert(name);
  for (const auto& [name, fit] : calibration.families) names.insert(name);
  nlohmann::json families = nlohmann::json::object();
  for (const std::string& name : names) {
    nlohmann::json entry = nlohmann::json::object();
    if (auto it = calibration.coefficients.weights.find(name); it != calibration.coefficients.weights.end()) {
      nlohmann::json weights = nlohmann::json::object();
      for (std::size_t t = 0; t < cost_term_count; ++t)
        weights[std::string(EnumNames<CostTerm>::table[t].second)] = it->second[t];
      entry["weights"] = weights;
    }
    if (auto it = calibration.families.find(name); it != calibration.families.end()) {
      entry["samples"] = it->second.samples;
      entry["fitted"] = it->second.fitted;
      entry["rms_relative_error"] = it->second.rms_relative_error;
    }
    families[name] = entry;
  }
  db.save_calibration(gpu, {.model_version = cost_model_version,
                            .coefficients_json = nlohmann::json{{"families", families}}.dump(),
                            .samples = calibration.samples});
}

std::optional<Calibration> load_calibration(const TuningDb& db, const Gpu& gpu) {
  const auto stored = db.load_calibration(gpu, cost_model_version);
  if (!stored) return std::nullopt;
  try {
    const auto j = nlohmann::json::parse(stored->coefficients_json);
    Calibration c{.samples = stored->samples};
    // Families the calibration lacks keep their own defaults; families this build does not register are skipped.
    for (const auto& [name, family] : j.at("families").items()) {
      if (!find_family(name)) continue;
      if (family.contains("weights")) {
        CostTerms& weights = c.coefficients.weights[name];
        for (std::size_t t = 0; t < cost_term_count; ++t)
          weights[t] = family.at("weights").at(std::string(EnumNames<CostTerm>::table[t].second)).get<double>();
      }
      if (family.contains("samples"))
        c.families[name] = {.samples = family.at("samples").get<int>(),
                            .fitted = family.at("fitted").get<bool>(),
                            .rms_relative_error = family.at("rms_relative_error").get<double>()};
    }
    return c;
  } catch (const nlohmann::json::exception& e) {
    throw InputError(fmt::format("{}: calibration of {} does not hold the model's coefficients: {}", db.path().string(),
                                 describe_gpu(gpu), e.what()));
  }
}

namespace {

// Ranks from 1, ties given the average of the ranks they span.
std::vector<double> average_ranks(std::span<const double> values) {
  std::vector<std::size_t> order(values.size());
  std::iota(order.begin(), order.end(), std::size_t{0});
  std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) { return values[a] < values[b]; });
  std::vector<double> ranks(values.size());
  for (std::size_t i = 0; i < order.size();) {
    std::size_t j = i;
    while (j + 1 < order.size() && values[order[j + 1]] == values[order[i]]) ++j;
    const double average = (static_cast<double>(i) + static_cast<double>(j)) / 2 + 1;
    for (std::size_t t = i; t <= j; ++t) ranks[order[t]] = average;
    i = j + 1;
  }
  return ranks;
}

}  // namespace

double spearman(std::span<const double> a, std::span<const double> b) {
  if (a.size() != b.size())
    throw InputError(fmt::format("spearman: the series must be equally long, got {} and {}", a.size(), b.size()));
  if (a.size() < 2) throw InputError(fmt::format("spearman: need at least 2 pairs, got {}", a.size()));
  const std::vector<double> ra = average_ranks(a);
  const std::vector<double> rb = average_ranks(b);
  const double mean = (static_cast<double>(a.size()) + 1) / 2;  // the mean of ranks 1..n, ties or not
  double sab = 0, saa = 0, sbb = 0;
  for (std::size_t i = 0; i < a.size(); ++i) {
    sab += (ra[i] - mean) * (rb[i] - mean);
    saa += (ra[i] - mean) * (ra[i] - mean);
    sbb += (rb[i] - mean) * (rb[i] - mean);
  }
  if (saa == 0 || sbb == 0) return std::nan("");
  return sab / std::sqrt(saa * sbb);
}

bool best_in_top_k(std::span<const double> predicted_us, std::span<const double> measured_us, std::size_t k,
                   double tolerance) {
  if (predicted_us.size() != measured_us.size())
    throw InputError(fmt::format("best_in_top_k: the series must be equally long, got {} and {}", predicted_us.size(),
                                 measured_us.size()));
  if (predicted_us.empty()) throw InputError("best_in_top_k: need at least one candidate");
  std::vector<std::size_t> order(predicted_us.size());
  std::iota(order.begin(), order.end(), std::size_t{0});
  std::stable_sort(order.begin(), order.end(),
                   [&](std::size_t a, std::size_t b) { return predicted_us[a] < predicted_us[b]; });
  const double fastest = *std::min_element(measured_us.begin(), measured_us.end());
  const std::size_t top = std::min(k, order.size());
  return std::any_of(order.begin(), order.begin() + static_cast<std::ptrdiff_t>(top),
                     [&](std::size_t i) { return measured_us[i] <= fastest * (1 + tolerance); });
}

}  // namespace convgen
