// search_order: how well a family's search order picks among measured candidates, without a GPU. A family lists its
// candidates best estimate first (enumerate); per GPU and problem, the first of them that was measured is what the
// estimate would choose among those measurements, and its time against the fastest measured says how good the
// choice was; the fastest measured candidate the family still lists, against the fastest measured, says what its
// search space keeps. Replayed on a tuning database or an export (`convgen db replay`), it checks a change of the
// cost model or the search space against every published measurement, as the generator is now, on the GPU the
// records describe.
#pragma once

#include <span>
#include <string>
#include <vector>

#include "convgen/gpu.hpp"
#include "convgen/problem.hpp"
#include "generator/family.hpp"
#include "tuner/tuning_db.hpp"

namespace convgen {

// One GPU and problem: the family's first measured candidate in its order against the fastest measured.
struct OrderPick {
  Gpu gpu;
  Problem problem;
  std::string pick;  // canonical kernel names
  double pick_us = 0;
  std::string best;
  double best_us = 0;
  int measured = 0;  // the family's kernels measured ok for the problem (the fastest median of each)
  double listed_best_us = 0;  // the fastest measured of those the family lists (best_us where it lists the fastest)
  bool best_listed() const { return listed_best_us == best_us; }
  double ratio() const { return pick_us / best_us; }
};

struct OrderReplay {
  std::vector<OrderPick> picks;  // by GPU, then problem key
  // Problems with ok measurements of the family of which the family lists none now (its search space moved on).
  int unlisted = 0;
  int unreadable = 0;  // ok measurements whose kernel name the family no longer reads (a value it dropped)
  int best_listed = 0;  // picks whose fastest measured the family still lists
  double geomean_ratio = 0;  // of pick_us / best_us over `picks`; 0 when there are none
  // Of listed_best_us / best_us over `picks`: what a tune of every listed candidate would lose against the fastest
  // measured (1 when the family lists the fastest of every problem).
  double geomean_listed_ratio = 0;
};

// Replays `family`'s search order on `measurements` (any family's, any status: only the family's ok ones count; a
// kernel measured more than once counts at its fastest median; names of earlier convgens are read as theirs).
OrderReplay replay_search_order(const Family& family, std::span<const MeasurementRecord> measurements);

}  // namespace convgen
