// search_order_test: replaying a family's search order on measurements (tuner/search_order.hpp), on made-up records
// of igemm on the H100 descriptor, and on the H200 measurements bench/results/ publishes: the families' picks there
// must stay as good as the figures docs/architecture.md lists.
#include "tuner/search_order.hpp"

#include <algorithm>
#include <cmath>
#include <map>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "convgen/error.hpp"
#include "tests/host/tuner/fixtures.hpp"
#include "tools/export_file/export_file.hpp"

namespace convgen {
namespace {

using testing_tuner::conv1x1;
using testing_tuner::conv3x3;
using testing_tuner::failed;
using testing_tuner::h100;
using testing_tuner::measured;

// The family's candidates for the problem, in its order (best estimate first).
std::vector<std::string> listed(const Problem& p, const Gpu& gpu) {
  std::vector<std::string> names;
  for (const KernelSpec& spec : family("igemm").enumerate(p, gpu)) names.push_back(kernel_name(spec));
  return names;
}

// An igemm kernel of a valid name the search space does not offer for the problem (igemm(block_m): 64 pixels, 8
// reduction elements a step, 4 x 4 a thread; the first such tile it does not list), or "" where it lists them all.
std::string unlisted_igemm(const Problem& p, const Gpu& gpu) {
  const std::vector<std::string> order = listed(p, gpu);
  for (int block_m : {16, 32, 64, 128, 256})
    if (std::find(order.begin(), order.end(), testing_tuner::igemm(block_m)) == order.end())
      return testing_tuner::igemm(block_m);
  return "";
}

TEST(SearchOrder, PicksTheFirstMeasuredCandidateInTheFamilysOrderAgainstTheFastestMeasured) {
  const Gpu gpu = h100();
  const Problem p = conv3x3();
  const std::vector<std::string> order = listed(p, gpu);
  ASSERT_GE(order.size(), 6u);
  // The 2nd, 4th and 6th of the order measured (the 1st not): the 2nd is the pick, the 6th the fastest. A second
  // measurement of the 2nd, faster, counts; failures and other families' kernels do not.
  const std::vector<MeasurementRecord> records = {
      measured(gpu, p, order[3], 30.0),
      measured(gpu, p, order[1], 50.0),
      measured(gpu, p, order[5], 20.0),
      measured(gpu, p, order[1], 40.0),
      failed(gpu, p, order[0], MeasurementStatus::wrong_result, "rel L2 0.5"),
      measured(gpu, p, "direct_k4_p4_q8_cb8_u1_l0", 1.0),
  };
  const OrderReplay r = replay_search_order(family("igemm"), records);
  ASSERT_EQ(r.picks.size(), 1u);
  EXPECT_EQ(r.picks[0].pick, order[1]);
  EXPECT_DOUBLE_EQ(r.picks[0].pick_us, 40.0);
  EXPECT_EQ(r.picks[0].best, order[5]);
  EXPECT_DOUBLE_EQ(r.picks[0].best_us, 20.0);
  EXPECT_EQ(r.picks[0].measured, 3);
  EXPECT_DOUBLE_EQ(r.picks[0].listed_best_us, 20.0);
  EXPECT_TRUE(r.picks[0].best_listed());
  EXPECT_DOUBLE_EQ(r.geomean_ratio, 2.0);
  EXPECT_DOUBLE_EQ(r.geomean_listed_ratio, 1.0);
  EXPECT_EQ(r.best_listed, 1);
  EXPECT_EQ(r.unlisted, 0);
  EXPECT_EQ(r.unreadable, 0);
}

TEST(SearchOrder, TheGeometricMeanIsOverProblemsAndProblemsOfEachGpuApart) {
  const Gpu gpu = h100();
  Gpu other = h100();
  other.name = "Another GPU";
  const std::vector<std::string> a = listed(conv3x3(), gpu);
  const std::vector<std::string> b = listed(conv1x1(), gpu);
  const std::vector<MeasurementRecord> records = {
      measured(gpu, conv3x3(), a[0], 10.0),   measured(gpu, conv3x3(), a[1], 10.0),    // ratio 1
      measured(gpu, conv1x1(), b[0], 40.0),   measured(gpu, conv1x1(), b[1], 10.0),    // ratio 4
      measured(other, conv1x1(), b[0], 10.0), measured(other, conv1x1(), b[1], 20.0),  // ratio 1, its own GPU
  };
  const OrderReplay r = replay_search_order(family("igemm"), records);
  ASSERT_EQ(r.picks.size(), 3u);
  EXPECT_NEAR(r.geomean_ratio, std::cbrt(4.0), 1e-12);
}

TEST(SearchOrder, SaysHowMuchSlowerTheFastestItStillListsIsWhereItNoLongerListsTheFastest) {
  const Gpu gpu = h100();
  const std::vector<std::string> order = listed(conv1x1(), gpu);
  const std::string unlisted_kernel = unlisted_igemm(conv1x1(), gpu);
  ASSERT_FALSE(unlisted_kernel.empty());
  // The fastest measured (10 us) is no longer listed; of the listed ones the 3rd is the fastest (12.5 us).
  const std::vector<MeasurementRecord> records = {measured(gpu, conv1x1(), unlisted_kernel, 10.0),
                                                  measured(gpu, conv1x1(), order[0], 20.0),
                                                  measured(gpu, conv1x1(), order[2], 12.5)};
  const OrderReplay r = replay_search_order(family("igemm"), records);
  ASSERT_EQ(r.picks.size(), 1u);
  EXPECT_EQ(r.picks[0].best, unlisted_kernel);
  EXPECT_FALSE(r.picks[0].best_listed());
  EXPECT_DOUBLE_EQ(r.picks[0].listed_best_us, 12.5);
  EXPECT_DOUBLE_EQ(r.geomean_ratio, 2.0);
  EXPECT_DOUBLE_EQ(r.geomean_listed_ratio, 1.25);
  EXPECT_EQ(r.best_listed, 0);
}

TEST(SearchOrder, CountsProblemsWhoseKernelsTheOrderNoLongerListsAndNamesItNoLongerReads) {
  const Gpu gpu = h100();
  // A kernel the search space does not offer for the problem, and a name with a value the family does not have (a
  // tile of 3 channels).
  const std::string unlisted_kernel = unlisted_igemm(conv1x1(), gpu);
  ASSERT_FALSE(unlisted_kernel.empty());
  const std::vector<MeasurementRecord> records = {measured(gpu, conv1x1(), unlisted_kernel, 10.0),
                                                  measured(gpu, conv3x3(), "igemm_m3_n64_k8_tm4_tn4_st2_sk1_v1", 5.0)};
  const OrderReplay r = replay_search_order(family("igemm"), records);
  EXPECT_TRUE(r.picks.empty());
  EXPECT_EQ(r.unlisted, 1);
  EXPECT_EQ(r.unreadable, 1);
  EXPECT_EQ(r.geomean_ratio, 0);
}

// The published H200 measurements (`tune`, most of them of every candidate: `--budget 0`), replayed on the generator
// as it is now, against the figures docs/architecture.md lists (tuner/search_order, each rounded): a change of a search
// space or a cost model that picks worse on them fails here. Each file's folder has a README that says what it
// measured.
TEST(SearchOrder, ThePicksOnThePublishedH200MeasurementsStayWithinTheQuotedFigures) {
  struct Set {
    const char* file;    // under bench/results/h200/
    const char* family;  // whose order is replayed
    double quoted;       // the geometric mean of pick / fastest
    double listed;       // of the fastest it lists / fastest (a search space that drops good kernels fails)
    std::size_t problems = 20;  // at least this many problems replayed
  };
  const std::vector<Set> sets = {
      {"wave-filling-widths-2026-11-29/resnet50-fp16-n32-measurements.json.gz", "igemm_wgmma", 1.038, 1.000},
      {"wave-filling-widths-2026-11-29/resnet50-fp16-n8-measurements.json.gz", "igemm_wgmma", 1.080, 1.000},
      {"wave-filling-widths-2026-11-29/resnet50-fp16-n1-measurements.json.gz", "igemm_wgmma", 1.037, 1.000},
      {"cluster-split-2026-11-29/resnet50-fp16-n32-measurements.json.gz", "igemm_wgmma", 1.036, 1.000},
      {"two-warpgroups-2026-11-29/small-m-fp16-n8-measurements.json.gz", "igemm_wgmma", 1.092, 1.007, 8},
      {"two-warpgroups-2026-11-29/small-m-fp16-n1-measurements.json.gz", "igemm_wgmma", 1.031, 1.000, 8},
      {"bulk-output-2026-11-29/resnet50-fp16-n32-measurements.json.gz", "igemm_wgmma", 1.041, 1.000},
      {"bulk-output-2026-11-29/resnet50-fp16-n8-measurements.json.gz", "igemm_wgmma", 1.054, 1.000},
      {"tiles-per-block-2026-11-29/resnet50-tf32-n32-measurements.json.gz", "igemm_wgmma", 1.050, 1.000},
      {"tma-filter-2026-11-29/cusnn-fp16-measurements.json.gz", "igemm_wgmma", 1.078, 1.000},
      {"tma-filter-2026-11-29/resnet50-tf32-measurements.json.gz", "igemm_wgmma", 1.048, 1.000},
      {"wgmma-defaults-2026-11-29/tuned-measurements.json.gz", "igemm_wgmma", 1.053, 1.000},
      {"wgmma-tf32-2026-11-29/tuned-measurements.json.gz", "igemm_wgmma", 1.082, 1.012},
      {"fold-width-conv1-2026-11-29/tuned-measurements.json.gz", "igemm_wgmma", 1.046, 1.000},
      {"warp-copy-output-2026-12-02/resnet50-fp16-n32-measurements.json.gz", "igemm_wgmma", 1.092, 1.000},
      {"warp-copy-output-2026-12-02/resnet50-fp16-n8-measurements.json.gz", "igemm_wgmma", 1.059, 1.000},
      {"fold-on-load-2026-12-02/conv1-fp16-measurements.json.gz", "igemm_wgmma", 1.010, 1.000, 3},
      {"fold-on-load-2026-12-02/tf32-eight-byte-copies/conv1-tf32-measurements.json.gz", "igemm_wgmma", 1.074, 1.000,
       3},
      {"wgmma-tf32-2026-11-29/tuned-measurements.json.gz", "igemm_tc", 1.089, 1.000},
      {"resnet50-n4-n32-2026-11-29/tuned-measurements.json.gz", "igemm", 1.087, 1.005},
      {"winograd-gemm-2026-11-29/tuned-measurements.json.gz", "igemm", 1.084, 1.000},
      {"pointwise-2026-11-28/tuned-measurements.json.gz", "igemm", 1.090, 1.009},
      {"resnet50-n4-n32-2026-11-29/tuned-measurements.json.gz", "direct", 1.010, 1.000},
      {"resnet50-n4-n32-2026-11-29/tuned-measurements.json.gz", "winograd_gemm", 1.043, 1.000},
      {"resnet50-n4-n32-2026-11-29/tuned-measurements.json.gz", "pointwise", 1.085, 1.010},
      {"winograd-gemm-2026-11-29/tuned-measurements.json.gz", "winograd_gemm", 1.041, 1.000},
      {"winograd-gemm-2026-11-29/tuned-measurements.json.gz", "pointwise", 1.075, 1.014},
      {"pointwise-2026-11-28/tuned-measurements.json.gz", "pointwise", 1.087, 1.008},
  };
  // Each export read once (several families replay the same one; parsing is most of the test's time, 40 times more
  // under ASan).
  std::map<std::string, std::vector<MeasurementRecord>> exports;
  for (const Set& set : sets) {
    const std::string path = std::string(CONVGEN_SOURCE_DIR) + "/bench/results/h200/" + set.file;
    auto [read, fresh] = exports.try_emplace(set.file);
    if (fresh) read->second = parse_export_json(read_export_file(path), path);
    const OrderReplay r = replay_search_order(family(set.family), read->second);
    EXPECT_GE(r.picks.size(), set.problems) << set.file << " " << set.family;
    EXPECT_LE(r.geomean_ratio, set.quoted + 5e-4) << set.file << " " << set.family;
    EXPECT_LE(r.geomean_listed_ratio, set.listed + 5e-4) << set.file << " " << set.family;
  }
}

}  // namespace
}  // namespace convgen
