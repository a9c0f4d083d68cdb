// calibration: the cost model's calibration data taken from the tuning database's measurements.
#pragma once

#include <functional>
#include <limits>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "convgen/gpu.hpp"
#include "convgen/problem.hpp"
#include "tuner/cost_model.hpp"
#include "tuner/tuning_db.hpp"

namespace convgen {

// One measurement as the model sees it, with what it came from.
struct CalibrationRow {
  Problem problem;
  KernelSpec spec;
  CalibrationSample sample;
};

struct CalibrationData {
  std::vector<CalibrationRow> rows;  // in the database's order
  int problems = 0;                  // distinct problems among the rows
  int excluded = 0;                  // ok measurements of an excluded problem
  int unusable = 0;                  // ok measurements whose kernel name no family of this build knows
  int without_filter = 0;            // ok measurements of a family whose features need the filter's values
                                     // (Family::cost_features_need_filter_values), which the database does not keep
  std::vector<CalibrationRow> held_out;  // the excluded problems' rows: what a calibration is judged on
};

// Collects the GPU's verified measurements (status ok) as calibration samples: the features from the kernel's
// family for the problem, the registers and shared memory the measurement recorded, its median time. Measurements
// of a problem in `exclude` (at any activation sparsity, precision and layout) are left out, into `held_out` (a
// study calibrates on other problems than those it judges). A family whose features need the filter's values
// (weight_sparse) cannot use the database's problems as they are: it keeps the filter's pattern hash only, and
// features recomputed without the values would count no FMA. `refill` gives such a problem its filter again (as the
// tune that measured it made it: `--weight-sparsity 0.9 --seed 1`), used where the refilled pattern matches the
// recorded one; the others are left out, counted in without_filter.
using FilterRefill = std::function<std::optional<Problem>(const Problem&)>;
CalibrationData calibration_data(const TuningDb& db, const Gpu& gpu, std::span<const Problem> exclude = {},
                                 const FilterRefill& refill = {});

// Returns the samples of the rows, in order.
std::vector<CalibrationSample> samples_of(std::span<const CalibrationRow> rows);

// How well coefficients rank each problem's measured candidates: per problem with at least 2 rows, Spearman's
// correlation of predicted with measured times, and whether the fastest measured one is among the 10 predicted
// fastest; and SEER's right pick: the one predicted fastest (the first of ties, in row order) measures within 10% of
// the fastest, over all of a problem's rows and within each family's own rows (what the model picks among that
// family's candidates); and the pick's cost: the geometric mean over problems of the measured time of the one
// predicted fastest over the fastest measured (1 when every pick is the best).
struct RankingAccuracy {
  int problems = 0;                                                // problems with at least 2 rows
  double mean_spearman = std::numeric_limits<double>::quiet_NaN();  // over problems where it is defined
  double share_best_in_top10 = 0;
  double share_right_pick = 0;  // within 10%, over the same problems
  double pick_ratio = 1;        // geometric mean of the pick's time over the best's, over the same problems
  struct Family {
    int problems = 0;  // problems with at least 2 rows of the family
    double share_right_pick = 0;
    double pick_ratio = 1;
    // A model-guided tune of the family with a budget of 10 replayed on these measurements: the best time over the
    // best of the model's 10 first, geometric mean over the problems with more than 10 rows (the tuning study's
    // ratio, without measuring again; 1 where no problem has more).
    int guided_problems = 0;
    double guided_ratio = 1;
  };
  std::map<std::string, Family> families;
};
RankingAccuracy ranking_accuracy(std::span<const CalibrationRow> rows, const Gpu& gpu,
                                 const Coefficients& coefficients);

// Each family's untuned default (Family::default_spec: its own estimate's first candidate, what the default choice
// runs) on the problems with at least 2 rows of the family: the default's measured time over the family's fastest
// measured, geometric mean over the problems where the default itself was measured. The others are counted apart: a
// default the database's tunes never measured (a search space changed since, or a budgeted tune).
struct DefaultAccuracy {
  struct Family {
    int problems = 0;  // problems with at least 2 rows of the family
    int measured = 0;  // of them, those whose default was measured
    double ratio = 1;  // the default's time over the best's, geometric mean over `measured`
    int over_1_2 = 0;  // defaults more than 1.2x the best's time
  };
  std::map<std::string, Family> families;
};
DefaultAccuracy default_accuracy(std::span<const CalibrationRow> rows, const Gpu& gpu);

}  // namespace convgen
