// bench_runner_test: benches two small layers on the GPU and checks the JSON report against the documented schema
// (bench/README.md): every field present, every legacy algorithm listed with a status, both sides verified, energy
// per call a power a GPU draws.
#include "bench/bench_runner.hpp"

#include <set>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "runtime/device.hpp"
#include "runtime/driver.hpp"
#include "runtime/module.hpp"
#include "support/corpus.hpp"

namespace convgen {
namespace {

using namespace testing_support;

void expect_keys(const nlohmann::json& object, std::initializer_list<const char*> keys, const std::string& where) {
  for (const char* key : keys) EXPECT_TRUE(object.contains(key)) << where << " has no '" << key << "'";
}

TEST(BenchRunner, TwoSmallLayersGiveAReportWithEveryFieldAndEveryLegacyAlgorithm) {
  if (!cuda_available()) GTEST_SKIP() << "no CUDA device: " << no_device_reason();
  Context context(0);
  const Gpu gpu = query_device(0);
  Suite suite{.name = "two_layers", .layers = {}};
  for (const Layer& layer : edge_cases().layers)
    if (layer.name == "pointwise_1x1" || layer.name == "c32_k100_3x3") suite.layers.push_back(layer);
  ASSERT_EQ(suite.layers.size(), 2u);

  const BenchReport report = run_bench(suite, gpu, {.batches = {1, 2}, .chain = true}, "convgen bench (test)");
  const auto json = nlohmann::json::parse(report_json(report));

  EXPECT_EQ(json["schema"], kReportSchema);
  expect_keys(json, {"provenance", "timing", "warm", "rows"}, "report");
  expect_keys(json["provenance"], {"gpu", "arch", "driver", "cuda_driver", "nvrtc", "cudnn", "convgen_version",
                                   "convgen_commit", "command_line", "date", "start", "end"},
              "provenance");
  ASSERT_EQ(json["rows"].size(), 4u);  // 2 layers x 2 batches
  for (const auto& row : json["rows"]) {
    const std::string where = row.value("layer", std::string("?"));
    expect_keys(row, {"suite", "layer", "batch", "count", "problem", "precision", "math", "buffer_sets", "cudnn",
                      "cudnn_best", "ours", "cudnn_energy_mj", "headline_mode", "speedup"},
                where);
    expect_keys(row["problem"], {"n", "c", "k", "d", "h", "w", "t", "r", "s", "stride", "padding", "dilation",
                                 "groups", "layout", "precision"},
                where + " problem");
    expect_keys(row["cudnn_best"], {"route", "algo", "median_us", "graph_median_us"}, where + " cudnn_best");
    expect_keys(row["ours"], {"kernel", "median_us", "p10_us", "p90_us", "graph_median_us", "rel_l2_error",
                              "energy_mj"},
                where + " ours");
    std::set<std::string> legacy;
    for (const auto& entry : row["cudnn"]) {
      expect_keys(entry, {"route", "algo", "status", "median_us", "p10_us", "p90_us", "rel_l2_error"}, where);
      EXPECT_FALSE(entry["status"].get<std::string>().empty()) << where;
      if (entry["route"] == "legacy") legacy.insert(entry["algo"].get<std::string>());
    }
    for (const auto& [algo, name] : EnumNames<LegacyAlgo>::table)
      EXPECT_TRUE(legacy.count(std::string(name))) << where << ": legacy " << name << " is not listed";
    // Both sides verified and timed: ours passes the fp32 limit, and the speedup is a positive number.
    EXPECT_EQ(row["ours"]["status"], "ok") << where << ": " << row["ours"]["reason"];
    EXPECT_LE(row["ours"]["rel_l2_error"].get<double>(), 1e-5) << where;
    ASSERT_TRUE(row["speedup"].is_number()) << where;
    EXPECT_GT(row["speedup"].get<double>(), 0) << where;
    EXPECT_GT(row["cudnn_best"]["median_us"].get<double>(), 0) << where;
    // Energy per call at the GPU's pace (graph replays): over the call's own time (cold L2, slower than the warm
    // replays), a power no GPU draws would be idle time between host-bound calls charged to each call (cuDNN's legacy
    // calls measured one launch at a time: 20-48 mJ for a 4 us kernel on the H200).
    const auto expect_a_power_a_gpu_draws = [&](const nlohmann::json& mj, const nlohmann::json& us, const char* side) {
      if (!mj.is_number() || !us.is_number()) return;  // NVML has no energy counter here
      const double watts = mj.get<double>() * 1e-3 / (us.get<double>() * 1e-6);
      EXPECT_LT(watts, 1500) << where << " " << side << ": " << mj << " mJ a call of " << us << " us";
    };
    expect_a_power_a_gpu_draws(row["cudnn_energy_mj"], row["cudnn_best"]["median_us"], "cuDNN");
    expect_a_power_a_gpu_draws(row["ours"]["energy_mj"], row["ours"]["median_us"], "ours");
  }
  // The CSV has one line per row plus its header; the Markdown names the suite.
  const std::string csv = report_csv(report);
  EXPECT_EQ(std::count(csv.begin(), csv.end(), '\n'), 5);
  EXPECT_NE(report_markdown(report).find("two_layers"), std::string::npos);
  // --chain: per batch, both layers' kernels of ours in one chain, timed launched early and not.
  ASSERT_EQ(json["chains"].size(), 2u);
  for (const auto& chain : json["chains"]) {
    EXPECT_EQ(chain["calls"], 2) << chain.dump();
    EXPECT_EQ(chain["layers"], 2) << chain.dump();
    EXPECT_GT(chain["early_stats"]["median"].get<double>(), 0) << chain.dump();
    EXPECT_GT(chain["plain_stats"]["median"].get<double>(), 0) << chain.dump();
    EXPECT_GT(chain["per_layer_sum_us"].get<double>(), 0) << chain.dump();
  }
  EXPECT_NE(report_markdown(report).find("Network as one chain of our kernels (2 calls of 2 layers"),
            std::string::npos);
}

}  // namespace
}  // namespace convgen
