// cost_model: predicted kernel time from occupancy, waves and the work of each kind against the GPU's rates (after
// SEER), calibrated per GPU and family.
#pragma once

#include <cstddef>
#include <limits>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <tuple>
#include <vector>

#include "convgen/enum_names.hpp"
#include "convgen/gpu.hpp"
#include "generator/family.hpp"
#include "generator/kernel_spec.hpp"
#include "runtime/compiler.hpp"

namespace convgen {

class TuningDb;

// The version of the model's formula; a calibration fitted for another version is not used.
inline constexpr int cost_model_version = 3;

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

// The terms of the model. Each is a time (or a count) of one kind of work of the launch on the GPU at its nominal
// rates; the predicted time is their sum, each weighed by a coefficient calibrated per GPU and family:
//   fma, shared_loads, global_loads, address: issue time of the busiest SM: the warp instructions of its blocks
//     (ceil(blocks / SMs) of them) over 4 schedulers issuing one per cycle at the GPU's clock, in µs;
//   serial_steps, pipelined_steps: waves × main-loop steps, the latency each step exposes, counted apart for
//     kernels that overlap the next step's loads (pipelined) and those that do not; waves = ceil(blocks /
//     (resident blocks per SM × SMs)), resident from occupancy() with the ptxas report's registers;
//   waves: the waves, for each one's fill and drain;
//   atomics: the atomically added output bytes over the DRAM bandwidth, in µs;
//   extra_launches: operations launched besides the kernel;
//   dram: the launch's DRAM bytes over the DRAM bandwidth, in µs;
//   launch: 1, for the fixed cost of a launch.
// A sum, not SEER's max(compute, memory): the SIMT kernels of these families issue their math, loads and address
// arithmetic from the same schedulers, and at small batch they wait on latency more than on bandwidth.
enum class CostTerm {
  fma,
  shared_loads,
  global_loads,
  address,
  serial_steps,
  pipelined_steps,
  waves,
  atomics,
  extra_launches,
  dram,
  launch
};
inline constexpr std::size_t cost_term_count = 11;

template <>
struct EnumNames<CostTerm> {
  static constexpr std::array table = {
      std::pair{CostTerm::fma, std::string_view("fma")},
      std::pair{CostTerm::shared_loads, std::string_view("shared_loads")},
      std::pair{CostTerm::global_loads, std::string_view("global_loads")},
      std::pair{CostTerm::address, std::string_view("address")},
      std::pair{CostTerm::serial_steps, std::string_view("serial_steps")},
      std::pair{CostTerm::pipelined_steps, std::string_view("pipelined_steps")},
      std::pair{CostTerm::waves, std::string_view("waves")},
      std::pair{CostTerm::atomics, std::string_view("atomics")},
      std::pair{CostTerm::extra_launches, std::string_view("extra_launches")},
      std::pair{CostTerm::dram, std::string_view("dram")},
      std::pair{CostTerm::launch, std::string_view("launch")},
  };
};
static_assert(EnumNames<CostTerm>::table.size() == cost_term_count);

using CostTerms = CostWeights;
static_assert(std::tuple_size_v<CostTerms> == cost_term_count, "a family's CostWeights has one weight per term");

// The model's coefficients: one weight per term and family (µs per µs of a time term, µs per step, per wave, per
// launch). A family without weights here uses its own default_cost_weights() (the built-in families' defaults
// were fitted on an NVIDIA H200, bench/results/h200/tuning-study.md says how); on other GPUs they are a start
// until `convgen db calibrate` fits that GPU's own.
struct Coefficients {
  std::map<std::string, CostTerms, std::less<>> weights;
  // Returns the family's weights: these coefficients' own, else the family's defaults. Throws InputError for an
  // unregistered family without weights here.
  CostTerms of(std::string_view family) const;
  // Returns the family's weights for writing (its defaults copied in first when missing).
  CostTerms& of(std::string_view family);
  bool operator==(const Coefficients&) const = default;
};

struct Prediction {
  double time_us = std::numeric_limits<double>::infinity();  // infinite when the kernel cannot launch
  double waves = 0;                                          // ceil(blocks / (resident blocks per SM × SMs))
  double last_wave_fill = 0;  // ε: the share of the last wave's slots that hold a block, in (0, 1]
  int resident_blocks_per_sm = 0;
  CostTerms terms_us{};  // each term times its coefficient: the parts of time_us
  // Returns the term that contributes most (meaningless for a kernel that cannot launch: all terms are 0).
  CostTerm largest_term() const;
  bool operator==(const Prediction&) const = default;
};

// Returns the model's terms for a kernel, unweighted (see CostTerm), or nothing when it cannot launch (no block
// fits an SM). Registers come from the ptxas report; shared memory is the larger of the features' (static +
// dynamic) and the report's (static). Throws InputError for a launch without blocks or a descriptor without SM
// count, clock or DRAM bandwidth.
std::optional<CostTerms> cost_terms(const CostFeatures& features, const PtxasReport& report, const Gpu& gpu);

// Predicts a kernel's time: Σ coefficient × term over the family's coefficients.
Prediction predict(std::string_view family, const CostFeatures& features, const PtxasReport& report, const Gpu& gpu,
                   const Coefficients& coefficients = {});

// Returns the indices of `predictions` ordered by ascending predicted time (ties keep their order; kernels that
// cannot launch come last).
std::vector<std::size_t> rank(std::span<const Prediction> predictions);

// One measured kernel for calibration.
struct CalibrationSample {
  std::string family;
  CostFeatures features;
  PtxasReport report;
  double measured_us = 0;
};

struct FamilyCalibration {
  int samples = 0;                // samples of the family the fit used (those that launch, with a positive time)
  bool fitted = false;            // false: too few samples, the coefficients given to calibrate() were kept
  double rms_relative_error = 0;  // sqrt(mean(((predicted − measured) / measured)²)) with the coefficients kept
  bool operator==(const FamilyCalibration&) const = default;
};

struct Calibration {
  Coefficients coefficients;
  std::map<std::string, FamilyCalibration, std::less<>> families;  // every family with samples
  int samples = 0;  // all families
  bool operator==(const Calibration&) const = default;
};

// Fewest samples of a family calibrate() fits; with fewer the family keeps its starting coefficients.
inline constexpr int min_calibration_samples = 3 * static_cast<int>(cost_term_count);

// Fits the coefficients of each family to measured times by non-negative least squares on the relative error
// ((predicted − measured) / measured): a ranking cares about ratios, so a 5 µs kernel counts as much as a 5 ms
// one, and no kind of work may make a kernel faster. Terms no sample exercises get 0. A family with fewer than
// min_calibration_samples samples keeps its coefficients from `start`. Throws InputError when no family has
// enough.
Calibration calibrate(std::span<const CalibrationSample> samples, const Gpu& gpu, const Coefficients& start = {});

// Solves min ‖A x − b‖² subject to x ≥ 0 (Lawson and Hanson's active-set method); A is rows × columns, row-major.
// Exposed for its tests.
std::vector<double> nonnegative_least_squares(std::span<const double> a, std::span<const double> b,
                                              std::size_t columns);

// Stores a calibration for the GPU in the tuning database (model version cost_model_version).
void save_calibration(TuningDb& db, const Gpu& gpu, const Calibration& calibration);

// Returns the GPU's calibration for this model version, or nothing (then use Coefficients{}).
std::optional<Calibration> load_calibration(const TuningDb& db, const Gpu& gpu);

// Returns "igemm: fma 2.18, address 0.618, …": one family's non-zero weights ("igemm: all 0" when none).
std::string describe_weights(std::string_view family, const CostTerms& weights);

// Returns "direct: …; igemm: …": describe_weights of every registered family.
std::string describe_coefficients(const Coefficients& coefficients);

// Returns Spearman's rank correlation of two equally long series (ties get their average rank): 1 when they
// order alike, −1 when reversed. NaN when a series is constant. Throws InputError for different lengths or fewer
// than 2 values.
double spearman(std::span<const double> a, std::span<const double> b);

// Returns true when one of the `k` candidates predicted fastest is within `tolerance` (0.1 = 10%, SEER's rule)
// of the fastest measured time. Throws InputError for different lengths or an empty series.
bool best_in_top_k(std::span<const double> predicted_us, std::span<const double> measured_us, std::size_t k,
                   double tolerance = 0.0);

}  // namespace convgen
