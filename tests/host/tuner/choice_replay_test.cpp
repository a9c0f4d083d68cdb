// choice_replay_test: the choices made without tuning (first-run default, cost_model_only, the model over all),
// replayed on measurements against the fastest measured.
#include "tuner/choice_replay.hpp"

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "generator/family.hpp"
#include "tests/host/tuner/fixtures.hpp"

namespace convgen {
namespace {

using namespace testing_tuner;

std::vector<std::string> default_names(const Problem& p, const Gpu& gpu) {
  std::vector<std::string> names;
  for (const FamilyDefault& d : family_defaults(p, gpu))
    if (d.spec) names.push_back(kernel_name(*d.spec));
  return names;
}

// Every default of the problem measured (the i-th at 10 + i µs), and `fastest` (not a default) at 5 µs.
std::vector<MeasurementRecord> tuned(const Gpu& gpu, const Problem& p, const std::string& fastest) {
  std::vector<MeasurementRecord> records;
  const std::vector<std::string> defaults = default_names(p, gpu);
  for (std::size_t i = 0; i < defaults.size(); ++i)
    records.push_back(measured(gpu, p, defaults[i], 10.0 + static_cast<double>(i)));
  records.push_back(measured(gpu, p, fastest, 5.0));
  return records;
}

TEST(ReplayChoices, TakesEachChoiceAgainstTheFastestMeasured) {
  const Gpu gpu = h200();
  const Problem p = conv3x3();
  const std::vector<std::string> defaults = default_names(p, gpu);
  ASSERT_GE(defaults.size(), 2u);
  const std::string fastest = igemm(32);
  ASSERT_EQ(std::find(defaults.begin(), defaults.end(), fastest), defaults.end());
  std::vector<MeasurementRecord> records = tuned(gpu, p, fastest);
  records.push_back(measured(gpu, p, defaults[0], 20.0));  // measured again, slower: its fastest median counts
  records.push_back(failed(gpu, p, igemm(64), MeasurementStatus::launch_error, "no"));

  const ChoiceReplay r = replay_choices(records);
  ASSERT_EQ(r.problems.size(), 1u);
  EXPECT_EQ(r.incomplete, 0);
  const ProblemChoices& c = r.problems[0];
  EXPECT_EQ(c.defaults, static_cast<int>(defaults.size()));
  EXPECT_EQ(c.measured, static_cast<int>(defaults.size()) + 1);  // the failed one does not count
  EXPECT_EQ(c.first_run.kernel, kernel_name(default_choice(p, gpu)));
  EXPECT_EQ(c.first_run.measured_us, 10.0);
  EXPECT_NE(std::find(defaults.begin(), defaults.end(), c.cost_model.kernel), defaults.end()) << c.cost_model.kernel;
  EXPECT_EQ(c.fastest.kernel, fastest);
  EXPECT_EQ(c.fastest.measured_us, 5.0);
  EXPECT_DOUBLE_EQ(r.first_run_ratio, 2.0);
  EXPECT_DOUBLE_EQ(r.cost_model_ratio, c.cost_model.measured_us / 5.0);
  EXPECT_DOUBLE_EQ(r.model_all_ratio, c.model_all.measured_us / 5.0);
  EXPECT_EQ(r.cost_model_is_first_run, c.cost_model.kernel == c.first_run.kernel ? 1 : 0);
}

TEST(ReplayChoices, LeavesOutAProblemWithADefaultNotMeasuredAndKeepsTheOthers) {
  const Gpu gpu = h200();
  const Problem a = conv3x3();
  const Problem b = conv1x1();
  std::vector<MeasurementRecord> records = tuned(gpu, a, igemm(32));
  std::vector<MeasurementRecord> more = tuned(gpu, b, igemm(32));
  records.insert(records.end(), more.begin(), more.end());
  ASSERT_EQ(replay_choices(records).problems.size(), 2u);

  const std::string missing = default_names(b, gpu).back();
  std::erase_if(records, [&](const MeasurementRecord& m) { return m.problem == b && m.kernel == missing; });
  const ChoiceReplay r = replay_choices(records);
  ASSERT_EQ(r.problems.size(), 1u);
  EXPECT_EQ(r.problems[0].problem, a);
  EXPECT_EQ(r.incomplete, 1);
}

TEST(ReplayChoices, NothingMeasuredGivesNoProblem) {
  const ChoiceReplay r = replay_choices({});
  EXPECT_TRUE(r.problems.empty());
  EXPECT_EQ(r.first_run_ratio, 0);
}

}  // namespace
}  // namespace convgen
