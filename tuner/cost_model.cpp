// cost_model: occupancy, waves and the two-branch time model; its least-squares calibration; accuracy measures.
#include "tuner/cost_model.hpp"

#include <algorithm>
#include <array>
#include <climits>
#include <cmath>
#include <numeric>

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

int round_up(int value, int unit) { return (value + unit - 1) / unit * unit; }

// The two branches of the model for one kernel, with unit coefficients: the time a full-speed SM needs for its
// resident blocks' FLOPs over every wave, and the time DRAM needs for the launch's bytes over (waves − 1 + ε).
struct Branches {
  Occupancy occupancy;
  double waves = 0;
  double last_wave_fill = 0;
  double compute_us = 0;
  double memory_us = 0;
};

Branches branches(const CostFeatures& f, const PtxasReport& report, const Gpu& gpu, Precision math) {
  if (f.blocks <= 0)
    throw InputError(fmt::format("cost model: the launch must have at least one block, got {}", f.blocks));
  const double peak_tflops_value = peak_tflops(gpu, math);
  if (!(peak_tflops_value > 0) || gpu.sm_count <= 0 || !(gpu.dram_bandwidth_gbs > 0))
    throw InputError(fmt::format("cost model: {} must give a positive SM count, {} peak and DRAM bandwidth", gpu.name,
                                 to_string(math)));
  Branches b;
  b.occupancy =
      occupancy(f.threads_per_block, report.registers, std::max(f.smem_bytes_per_block, report.smem_bytes), gpu);
  const int resident = b.occupancy.blocks_per_sm;
  if (resident == 0) return b;
  const double blocks_per_wave = static_cast<double>(resident) * gpu.sm_count;
  const double blocks = static_cast<double>(f.blocks);
  b.waves = std::ceil(blocks / blocks_per_wave);
  b.last_wave_fill = (blocks - (b.waves - 1) * blocks_per_wave) / blocks_per_wave;
  const double flops_per_us_per_sm = peak_tflops_value * 1e6 / gpu.sm_count;  // 1 TFLOP/s = 1e6 FLOP/µs
  const double bytes_per_us = gpu.dram_bandwidth_gbs * 1e3;                   // 1 GB/s = 1e3 B/µs
  b.compute_us = b.waves * f.flops_per_block * resident / flops_per_us_per_sm;
  const double bytes_per_wave = f.dram_bytes / blocks * blocks_per_wave;
  b.memory_us = (b.waves - 1 + b.last_wave_fill) * bytes_per_wave / bytes_per_us;
  return b;
}

double model_time(const Branches& b, const Coefficients& c) {
  return std::max(c.compute * b.compute_us, c.memory * b.memory_us) + c.launch_us;
}

// Solves the weighted least-squares normal equations A x = y restricted to the variables in `mask`, by Gaussian
// elimination with partial pivoting. Returns false when the restricted system is singular.
bool solve_subset(const std::array<std::array<double, 3>, 3>& a, const std::array<double, 3>& y, unsigned mask,
                  std::array<double, 3>& x) {
  std::array<int, 3> vars{};
  int n = 0;
  for (int i = 0; i < 3; ++i)
    if (mask & (1u << i)) vars[n++] = i;
  std::array<std::array<double, 4>, 3> m{};
  for (int r = 0; r < n; ++r) {
    for (int c = 0; c < n; ++c) m[r][c] = a[vars[r]][vars[c]];
    m[r][n] = y[vars[r]];
  }
  for (int col = 0; col < n; ++col) {
    int pivot = col;
    for (int r = col + 1; r < n; ++r)
      if (std::abs(m[r][col]) > std::abs(m[pivot][col])) pivot = r;
    if (std::abs(m[pivot][col]) < 1e-12 * std::max(1.0, std::abs(a[vars[col]][vars[col]]))) return false;
    std::swap(m[col], m[pivot]);
    for (int r = 0; r < n; ++r) {
      if (r == col) continue;
      const double factor = m[r][col] / m[col][col];
      for (int c = col; c <= n; ++c) m[r][c] -= factor * m[col][c];
    }
  }
  x = {0, 0, 0};
  for (int r = 0; r < n; ++r) x[vars[r]] = m[r][n] / m[r][r];
  return true;
}

struct Usable {
  Branches branches;
  double measured_us = 0;
};

double rms_relative_error(std::span<const Usable> samples, const Coefficients& c) {
  double sum = 0;
  for (const Usable& s : samples) {
    const double e = (model_time(s.branches, c) - s.measured_us) / s.measured_us;
    sum += e * e;
  }
  return std::sqrt(sum / static_cast<double>(samples.size()));
}

// One alternating fit from a starting point: assign branches, solve, repeat until the assignment is stable.
Coefficients fit_from(std::span<const Usable> samples, Coefficients c) {
  std::vector<bool> compute_side(samples.size());
  for (int iteration = 0; iteration < 100; ++iteration) {
    bool changed = iteration == 0;
    for (std::size_t i = 0; i < samples.size(); ++i) {
      const bool side = c.compute * samples[i].branches.compute_us >= c.memory * samples[i].branches.memory_us;
      changed = changed || side != compute_side[i];
      compute_side[i] = side;
    }
    if (!changed) break;
    // Rows f = (C, 0, 1) or (0, M, 1), weighted by 1 / measured: minimizes the sum of squared relative errors.
    std::array<std::array<double, 3>, 3> a{};
    std::array<double, 3> y{};
    for (std::size_t i = 0; i < samples.size(); ++i) {
      const double w = 1.0 / samples[i].measured_us;
      const std::array<double, 3> f = {compute_side[i] ? samples[i].branches.compute_us * w : 0,
                                       compute_side[i] ? 0 : samples[i].branches.memory_us * w, w};
      for (int r = 0; r < 3; ++r) {
        for (int col = 0; col < 3; ++col) a[r][col] += f[r] * f[col];
        y[r] += f[r] * samples[i].measured_us * w;
      }
    }
    // A coefficient no sample informs (no sample on its side) keeps its value.
    unsigned informed = 0;
    for (int v = 0; v < 3; ++v)
      if (a[v][v] > 0) informed |= 1u << v;
    // Exact non-negative least squares for three unknowns: the best feasible solution over every active set.
    std::array<double, 3> best_x{c.compute, c.memory, c.launch_us};
    double best_objective = INFINITY;
    for (unsigned mask = 0; mask < 8; ++mask) {
      if ((mask & ~informed) != 0) continue;
      std::array<double, 3> x{};
      if (mask != 0 && !solve_subset(a, y, mask, x)) continue;
      if (std::any_of(x.begin(), x.end(), [](double v) { return v < 0; })) continue;
      // Objective up to a constant: x'Ax − 2x'y.
      double objective = 0;
      for (int r = 0; r < 3; ++r) {
        for (int col = 0; col < 3; ++col) objective += x[r] * a[r][col] * x[col];
        objective -= 2 * x[r] * y[r];
      }
      if (objective < best_objective) {
        best_objective = objective;
        best_x = x;
        for (int v = 0; v < 3; ++v)
          if (!(informed & (1u << v))) best_x[v] = v == 0 ? c.compute : v == 1 ? c.memory : c.launch_us;
      }
    }
    c = {.compute = best_x[0], .memory = best_x[1], .launch_us = best_x[2]};
  }
  return c;
}

}  // namespace

Occupancy occupancy(int threads_per_block, int registers_per_thread, int smem_bytes_per_block, const Gpu& gpu) {
  const int smem_limit = std::max(gpu.smem_per_block_bytes, gpu.smem_per_block_optin_bytes);
  if (threads_per_block <= 0 || threads_per_block > gpu.max_threads_per_block ||
      registers_per_thread > gpu.max_regs_per_thread || smem_bytes_per_block > smem_limit)
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

Prediction predict(const CostFeatures& features, const PtxasReport& report, const Gpu& gpu,
                   const Coefficients& coefficients, Precision math) {
  const Branches b = branches(features, report, gpu, math);
  Prediction p;
  p.resident_blocks_per_sm = b.occupancy.blocks_per_sm;
  if (p.resident_blocks_per_sm == 0) return p;
  p.waves = b.waves;
  p.last_wave_fill = b.last_wave_fill;
  p.compute_us = coefficients.compute * b.compute_us;
  p.memory_us = coefficients.memory * b.memory_us;
  p.compute_bound = p.compute_us >= p.memory_us;
  p.time_us = std::max(p.compute_us, p.memory_us) + coefficients.launch_us;
  return p;
}

std::vector<std::size_t> rank(std::span<const Prediction> predictions) {
  std::vector<std::size_t> order(predictions.size());
  std::iota(order.begin(), order.end(), std::size_t{0});
  std::stable_sort(order.begin(), order.end(),
                   [&](std::size_t a, std::size_t b) { return predictions[a].time_us < predictions[b].time_us; });
  return order;
}

Calibration calibrate(std::span<const CalibrationSample> samples, const Gpu& gpu) {
  std::vector<Usable> usable;
  for (const CalibrationSample& s : samples) {
    if (!(s.measured_us > 0) || !std::isfinite(s.measured_us)) continue;
    const Branches b = branches(s.features, s.report, gpu, s.math);
    if (b.occupancy.blocks_per_sm == 0) continue;
    usable.push_back({.branches = b, .measured_us = s.measured_us});
  }
  if (usable.size() < 3)
    throw InputError(
        fmt::format("calibrate: need at least 3 measurements of kernels that launch, got {}", usable.size()));
  // The alternating fit finds a local optimum; starting from several compute/memory balances finds the best one.
  Calibration best;
  double best_error = INFINITY;
  for (const double memory : {0.125, 0.25, 0.5, 1.0, 2.0, 4.0, 8.0}) {
    const Coefficients c = fit_from(usable, {.compute = 1.0, .memory = memory, .launch_us = 3.0});
    const double error = rms_relative_error(usable, c);
    if (error < best_error) {
      best_error = error;
      best = {.coefficients = c, .samples = static_cast<int>(usable.size()), .rms_relative_error = error};
    }
  }
  return best;
}

void save_calibration(TuningDb& db, const Gpu& gpu, const Calibration& calibration) {
  const nlohmann::json coefficients{
      {"compute", calibration.coefficients.compute},
      {"memory", calibration.coefficients.memory},
      {"launch_us", calibration.coefficients.launch_us},
      {"rms_relative_error", calibration.rms_relative_error},
  };
  db.save_calibration(
      gpu,
      {.model_version = cost_model_version, .coefficients_json = coefficients.dump(), .samples = calibration.samples});
}

std::optional<Calibration> load_calibration(const TuningDb& db, const Gpu& gpu) {
  const auto stored = db.load_calibration(gpu, cost_model_version);
  if (!stored) return std::nullopt;
  try {
    const auto j = nlohmann::json::parse(stored->coefficients_json);
    return Calibration{.coefficients = {.compute = j.at("compute").get<double>(),
                                        .memory = j.at("memory").get<double>(),
                                        .launch_us = j.at("launch_us").get<double>()},
                       .samples = stored->samples,
                       .rms_relative_error = j.at("rms_relative_error").get<double>()};
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
