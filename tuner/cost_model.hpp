// cost_model: predicted kernel time from occupancy, waves and the GPU's ceilings (after SEER), calibrated per GPU.
#pragma once

#include <cstddef>
#include <limits>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "convgen/enum_names.hpp"
#include "convgen/gpu.hpp"
#include "generator/family.hpp"
#include "runtime/compiler.hpp"

namespace convgen {

class TuningDb;

// The version of the model's formula; a calibration fitted for another version is not used.
inline constexpr int cost_model_version = 1;

// What limits the blocks resident on one SM.
enum class OccupancyLimit { blocks, threads, registers, smem, cannot_launch };

template <>
struct EnumNames<OccupancyLimit> {
  static constexpr std::array table = {
      std::pair{OccupancyLimit::blocks, std::string_view("blocks")},
      std::pair{OccupancyLimit::threads, std::string_view("threads")},
      std::pair{OccupancyLimit::registers, std::string_view("registers")},
      std::pair{OccupancyLimit::smem, std::string_view("smem")},
      std::pair{OccupancyLimit::cannot_launch, std::string_view("cannot_launch")},
  };
};

struct Occupancy {
  int blocks_per_sm = 0;  // 0 when the block does not fit an SM at all
  OccupancyLimit limit = OccupancyLimit::blocks;
  bool operator==(const Occupancy&) const = default;
};

// Returns how many blocks of a kernel fit on one SM at once, by the simple rules the CUDA occupancy calculator
// uses:
//   threads:   the block's threads rounded up to whole warps;
//   registers: registers per thread rounded up to a multiple of 8 (the allocation unit is 256 registers per warp,
//              i.e. 8 per thread), times the block's warp-rounded threads; 0 registers (no report) does not limit;
//   smem:      the block's shared memory plus 1 KiB the system reserves per block on sm_80 and later;
//   blocks:    the GPU's maximum resident blocks per SM.
// A block that exceeds a per-block limit (threads, registers per thread or block, opt-in shared memory) gets 0.
//   occupancy(256, 64, 16 * 1024, h100) == Occupancy{.blocks_per_sm = 4, .limit = OccupancyLimit::registers}
Occupancy occupancy(int threads_per_block, int registers_per_thread, int smem_bytes_per_block, const Gpu& gpu);

// Calibrated factors of the model: time = max(compute × a_c, memory × a_m) + launch.
struct Coefficients {
  double compute = 1.0;    // a_c: multiplies the compute time at the GPU's peak
  double memory = 1.0;     // a_m: multiplies the DRAM time at the GPU's bandwidth
  double launch_us = 3.0;  // b: launch and fixed cost per kernel
  bool operator==(const Coefficients&) const = default;
};

struct Prediction {
  double time_us = std::numeric_limits<double>::infinity();  // infinite when the kernel cannot launch
  double waves = 0;                                          // ceil(blocks / (resident blocks per SM × SMs))
  double last_wave_fill = 0;  // ε: the share of the last wave's slots that hold a block, in (0, 1]
  int resident_blocks_per_sm = 0;
  bool compute_bound = false;
  double compute_us = 0;  // the two branches before the max, coefficients applied
  double memory_us = 0;
  bool operator==(const Prediction&) const = default;
};

// Predicts a kernel's time (after SEER):
//   compute = waves × a_c × flops_per_block × resident / (peak FLOP/s of `math` per SM)
//     (every wave, the last included, takes as long as a full one: its blocks run side by side);
//   memory  = (waves − 1 + ε) × a_m × DRAM bytes per wave / bandwidth  (bytes per wave = dram_bytes × blocks per
//     wave / blocks, so this is a_m × dram_bytes / bandwidth: a partial last wave moves only its own bytes);
//   time    = max(compute, memory) + b.
// Registers come from the ptxas report; shared memory is the larger of the features' (static + dynamic) and the
// report's (static). `math` picks the peak: fp32 for SIMT kernels whatever the data type.
Prediction predict(const CostFeatures& features, const PtxasReport& report, const Gpu& gpu,
                   const Coefficients& coefficients = {}, Precision math = Precision::fp32);

// Returns the indices of `predictions` ordered by ascending predicted time (ties keep their order; kernels that
// cannot launch come last).
std::vector<std::size_t> rank(std::span<const Prediction> predictions);

// One measured kernel for calibration.
struct CalibrationSample {
  CostFeatures features;
  PtxasReport report;
  double measured_us = 0;
  Precision math = Precision::fp32;
};

struct Calibration {
  Coefficients coefficients;
  int samples = 0;                // samples the fit used (those that can launch, with a positive time)
  double rms_relative_error = 0;  // sqrt(mean(((predicted − measured) / measured)²)) after the fit
  bool operator==(const Calibration&) const = default;
};

// Fits the coefficients to measured times by least squares on the relative error ((predicted − measured) /
// measured): a ranking cares about ratios, so a 5 µs kernel counts as much as a 5 ms one. The max() makes the
// model piecewise linear: each sample is assigned to its bound branch, (a_c, a_m, b) are solved by non-negative
// least squares (exact, over the 8 active sets), and the assignment is repeated until it no longer changes.
// Throws InputError with fewer than 3 usable samples.
Calibration calibrate(std::span<const CalibrationSample> samples, const Gpu& gpu);

// Stores a calibration for the GPU in the tuning database (model version cost_model_version).
void save_calibration(TuningDb& db, const Gpu& gpu, const Calibration& calibration);

// Returns the GPU's calibration for this model version, or nothing (then use Coefficients{}).
std::optional<Calibration> load_calibration(const TuningDb& db, const Gpu& gpu);

// Returns Spearman's rank correlation of two equally long series (ties get their average rank): 1 when they
// order alike, −1 when reversed. NaN when a series is constant. Throws InputError for different lengths or fewer
// than 2 values.
double spearman(std::span<const double> a, std::span<const double> b);

// Returns true when one of the `k` candidates predicted fastest is within `tolerance` (0.1 = 10%, SEER's rule)
// of the fastest measured time. Throws InputError for different lengths or an empty series.
bool best_in_top_k(std::span<const double> predicted_us, std::span<const double> measured_us, std::size_t k,
                   double tolerance = 0.0);

}  // namespace convgen
