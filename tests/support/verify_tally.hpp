// verify_tally: the GPU verification tests' record: per table (e.g. "verified cases per family") and key (a family,
// a precision and layout), the cases, failures and worst relative error, printed when the test binary ends and
// appended to the file $CONVGEN_VERIFY_REPORT names (CTest keeps a passing test's output to itself).
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>
#include <string>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "measure/verification.hpp"

namespace convgen::testing_support {

struct VerifyTally {
  int cases = 0;
  int failures = 0;
  double worst_rel_l2 = 0;
  std::string worst_case;
};

// Tables by title, tallies by key, both in name order.
inline std::map<std::string, std::map<std::string, VerifyTally>>& verify_tallies() {
  static std::map<std::string, std::map<std::string, VerifyTally>> tables;
  return tables;
}

// Counts one verification under `table` and `key`; `label` names the case when it is the worst so far.
inline void tally_verification(const std::string& table, const std::string& key, const std::string& label,
                               const Verification& v) {
  VerifyTally& t = verify_tallies()[table][key];
  ++t.cases;
  if (!v.passed) ++t.failures;
  if (v.stats.rel_l2 > t.worst_rel_l2 || v.stats.nan_count > 0) {
    t.worst_rel_l2 = std::max(t.worst_rel_l2, v.stats.nan_count > 0 ? INFINITY : v.stats.rel_l2);
    t.worst_case = label;
  }
}

class VerifyTallyPrinter : public testing::Environment {
 public:
  void TearDown() override {
    std::string text;
    for (const auto& [title, tallies] : verify_tallies()) {
      text += title + ":\n";
      for (const auto& [key, t] : tallies)
        text += fmt::format("  {:<20} {:5} cases, {} failed, worst rel L2 {:.3g} ({})\n", key, t.cases, t.failures,
                            t.worst_rel_l2, t.worst_case);
    }
    if (text.empty()) return;
    std::printf("\n%s", text.c_str());
    if (const char* path = std::getenv("CONVGEN_VERIFY_REPORT"); path && *path) std::ofstream(path, std::ios::app) << text;
  }
};
// Registered once per test binary, whichever test files include this header.
inline const testing::Environment* const kVerifyTallyPrinter = testing::AddGlobalTestEnvironment(new VerifyTallyPrinter);

}  // namespace convgen::testing_support
