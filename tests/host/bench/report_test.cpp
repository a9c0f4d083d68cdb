// report_test: best route, headline mode and speedup rules, and the JSON, CSV and Markdown goldens of a small
// hand-built report. Regenerate the goldens with CONVGEN_UPDATE_GOLDEN=1 (see bench/README.md).
#include "bench/report.hpp"

#include <cstdlib>
#include <fstream>
#include <sstream>

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

namespace convgen {
namespace {

const std::string kGoldenDir = std::string(CONVGEN_SOURCE_DIR) + "/tests/host/bench/golden/";

// Compares `actual` with the golden file, or rewrites the file when CONVGEN_UPDATE_GOLDEN=1.
void expect_golden(const std::string& actual, const std::string& name) {
  const std::string path = kGoldenDir + name;
  if (const char* update = std::getenv("CONVGEN_UPDATE_GOLDEN"); update != nullptr && std::string(update) == "1") {
    std::ofstream(path, std::ios::binary) << actual;
    std::cout << "updated " << path << "\n";
    return;
  }
  std::ifstream file(path, std::ios::binary);
  ASSERT_TRUE(file) << "missing golden file " << path << " (run with CONVGEN_UPDATE_GOLDEN=1 to create it)";
  std::stringstream expected;
  expected << file.rdbuf();
  if (expected.str() == actual) return;
  // Point at the first line that differs: the whole texts are long.
  std::istringstream e(expected.str()), a(actual);
  std::string expected_line, actual_line;
  int line = 0;
  while (true) {
    ++line;
    const bool more_expected = static_cast<bool>(std::getline(e, expected_line));
    const bool more_actual = static_cast<bool>(std::getline(a, actual_line));
    if (!more_expected && !more_actual) break;
    if (!more_expected || !more_actual || expected_line != actual_line) {
      ADD_FAILURE() << path << ":" << line
                    << ": differs from the output\n  expected: " << (more_expected ? expected_line : "<end of file>")
                    << "\n  actual:   " << (more_actual ? actual_line : "<end of output>")
                    << "\nIf the change is intended, rerun with CONVGEN_UPDATE_GOLDEN=1 and review the diff.";
      return;
    }
  }
  ADD_FAILURE() << path << ": differs from the output (line endings?)";
}

TimingResult timing(std::vector<double> stream, std::vector<double> graph, std::string graph_error = "") {
  TimingResult t{.stream = summarize(stream), .calls_per_sample = 10, .stream_samples_us = stream};
  if (graph.empty()) {
    t.graph_error = std::move(graph_error);
  } else {
    t.graph = summarize(graph);
    t.graph_samples_us = graph;
  }
  return t;
}

ErrorStats error(double rel_l2) { return {.rel_l2 = rel_l2, .max_abs = rel_l2 * 4, .nan_count = 0, .compared = 4096}; }

Problem conv2d(int c, int k, int hw, int rs, int stride, int pad) {
  return {.c = c,
          .k = k,
          .input = {1, hw, hw},
          .filter = {1, rs, rs},
          .stride = {1, stride, stride},
          .padding = {0, pad, pad}};
}

CudnnEntry legacy(std::string algo) { return {.route = "legacy", .algo = std::move(algo)}; }

// Two suites, three layers: an unsupported cuDNN route, one that fails verification (and is the fastest), a
// cuDNN route and one of ours that cannot be captured into a graph, and energy present and absent.
BenchReport sample_report() {
  BenchReport report{
      .provenance =
          {
              .gpu = "NVIDIA H100 80GB HBM3",
              .arch = "sm_90",
              .driver = "570.86.15",
              .cuda_driver = "12.8",
              .cuda_toolkit = "13.0",
              .nvrtc = "13.0",
              .cudnn = "9.14.0",
              .convgen_version = "0.1.0",
              .convgen_commit = "abc123def456",
              .command_line = "convgen bench --shapes shapes/resnet50.csv --shapes 'my shapes/cosmoflow.csv'",
              .date = "2025-03-01T12:00:00Z",
              .start = {.sm_clock_mhz = 1980, .power_w = 120.5, .time = "2025-03-01T12:00:00Z"},
              .end = {.sm_clock_mhz = 1755, .power_w = 310.25, .time = "2025-03-01T12:05:00Z"},
          },
      .timing = {.samples = 3},
  };

  BenchRow conv1{.suite = "resnet50",
                 .layer = "conv1",
                 .count = 1,
                 .problem = conv2d(3, 64, 224, 7, 2, 3),
                 .math = "strict_fp32",
                 .buffer_sets = 11,
                 .activation = "blob sparse, 70% zeros",
                 .zero_fraction = 0.7001,
                 .floor_us = 2.5};
  conv1.problem.act_sparsity = 0.7;
  conv1.cudnn = {legacy("IMPLICIT_GEMM"),
                 legacy("WINOGRAD_NONFUSED"),
                 {.route = "graph", .algo = "engine 3 [heur_a #0, all]", .knobs = "TILE_SIZE=2,SPLIT_K=1"}};
  conv1.cudnn[0].error = error(1e-7);
  conv1.cudnn[0].timing = timing({20, 21, 22}, {18, 19, 20});
  conv1.cudnn[1].status = RouteStatus::unsupported;
  conv1.cudnn[1].reason = "CUDNN_STATUS_NOT_SUPPORTED";
  conv1.cudnn[2].workspace_bytes = 1 << 20;
  conv1.cudnn[2].error = error(2e-7);
  conv1.cudnn[2].timing = timing({16, 17, 18}, {15, 15.5, 16});
  conv1.ours = {.kernel = "igemm_m64_n64_k8_tm4_tn4_st2_sk1_v1",
                .error = error(3e-7),
                .timing = timing({14, 15, 16}, {12, 12.5, 13}),
                .energy_mj = 0.5};
  conv1.our_candidates = {conv1.ours,
                          {.kernel = "direct_m8_n32_k2_tm1_tn1",
                           .status = RouteStatus::failed_verification,
                           .reason = "rel L2 3.1e-02 above 1e-05",
                           .error = error(3.1e-2)},
                          {.kernel = "winograd_gemm_m4_bm32_bn32_bk16_tm4_tn4",
                           .error = error(2e-6),
                           .timing = timing({15, 16, 17}, {13, 13.5, 14})}};
  conv1.cudnn_energy_mj = 0.625;
  conv1.start = {.sm_clock_mhz = 1980, .power_w = 250, .time = "2025-03-01T12:00:10Z"};
  conv1.end = {.sm_clock_mhz = 1965, .power_w = 300, .time = "2025-03-01T12:00:20Z"};

  BenchRow conv2{.suite = "resnet50",
                 .layer = "conv2_3x3",
                 .count = 3,
                 .problem = conv2d(64, 64, 56, 3, 1, 1),
                 .math = "strict_fp32",
                 .buffer_sets = 29, .floor_us = 2, .winograd_floor_us = 0.6};
  conv2.cudnn = {legacy("IMPLICIT_GEMM"),
                 legacy("WINOGRAD_NONFUSED"),
                 {.route = "graph", .algo = "engine 3 [heur_a #0, all]", .knobs = "TILE_SIZE=2,SPLIT_K=1"}};
  conv2.cudnn[0].error = error(1e-7);
  conv2.cudnn[0].timing = timing({30, 31, 32}, {28, 29, 30});
  conv2.cudnn[1].status = RouteStatus::failed_verification;
  conv2.cudnn[1].reason = "rel L2 7.9e-04 above 1e-05";
  conv2.cudnn[1].error = error(7.9e-4);
  conv2.cudnn[1].timing = timing({10, 11, 12}, {9, 9.5, 10});
  conv2.cudnn[2].error = error(1.5e-7);
  conv2.cudnn[2].timing = timing({25, 26, 27}, {}, "operation not permitted when stream is capturing");
  conv2.ours = {.kernel = "direct_k16_p64_v1",
                .error = error(2.5e-7),
                .timing = timing({24, 25, 26}, {20, 20.5, 21}),
                .energy_note = "the energy counter did not advance in 2 s of calls"};
  conv2.cudnn_energy_note = "the energy counter did not advance in 2 s of calls";
  conv2.start = {.sm_clock_mhz = 1965, .power_w = 300, .time = "2025-03-01T12:00:20Z"};
  conv2.end = {.sm_clock_mhz = 1950, .power_w = 305, .time = "2025-03-01T12:00:40Z"};

  BenchRow conv0{.suite = "cosmoflow",
                 .layer = "conv0",
                 .count = 1,
                 .problem = {.c = 16, .k = 32, .input = {66, 66, 66}, .filter = {3, 3, 3}, .layout = Layout::ncdhw},
                 .math = "strict_fp32",
                 .buffer_sets = 1};
  conv0.cudnn = {legacy("IMPLICIT_GEMM"), legacy("WINOGRAD_NONFUSED")};
  conv0.cudnn[0].error = error(1e-7);
  conv0.cudnn[0].timing = timing({100, 101, 102}, {99, 100, 101});
  conv0.cudnn[1].status = RouteStatus::unsupported;
  conv0.cudnn[1].reason = "CUDNN_STATUS_NOT_SUPPORTED";
  conv0.ours = {.kernel = "direct_k32_p128_v1",
                .error = error(4e-7),
                .timing = timing({90, 91, 92}, {}, "cannot instantiate a captured graph: CUDA_ERROR_INVALID_VALUE"),
                .energy_mj = 4.25};
  conv0.cudnn_energy_mj = 5.5;
  conv0.start = {.time = "2025-03-01T12:00:40Z"};
  conv0.end = {.time = "2025-03-01T12:01:00Z"};

  report.rows = {conv1, conv2, conv0};
  return report;
}

TEST(Report, GraphModeWhenBothSidesWereCaptured) {
  const BenchReport report = sample_report();
  EXPECT_EQ(headline_mode(report.rows[0]), HeadlineMode::graph);
  EXPECT_EQ(cudnn_best(report.rows[0]), 2u);
  EXPECT_DOUBLE_EQ(*speedup(report.rows[0]), 15.5 / 12.5);
}

TEST(Report, AFastRouteThatFailedVerificationIsNeverBest) {
  const BenchRow row = sample_report().rows[1];
  EXPECT_EQ(headline_mode(row), HeadlineMode::graph);
  // WINOGRAD_NONFUSED is fastest but wrong; the graph engine has no graph time: IMPLICIT_GEMM is the best.
  EXPECT_EQ(cudnn_best(row), 0u);
  EXPECT_DOUBLE_EQ(*speedup(row), 29 / 20.5);
}

TEST(Report, TheSeedsGemmBaselineIsTheFastestOkLegacyGemmRoute) {
  const BenchRow row = sample_report().rows[0];
  // The graph engine is faster (15.5) but not one of the seed's three: IMPLICIT_GEMM (19) is its baseline.
  EXPECT_EQ(cudnn_gemm_best(row), 0u);
  EXPECT_DOUBLE_EQ(*gemm_speedup(row), 19 / 12.5);
  EXPECT_TRUE(is_seed_gemm_route(legacy("IMPLICIT_PRECOMP_GEMM")));
  EXPECT_TRUE(is_seed_gemm_route(legacy("GEMM")));
  EXPECT_FALSE(is_seed_gemm_route(legacy("WINOGRAD")));
  EXPECT_FALSE(is_seed_gemm_route({.route = "graph", .algo = "GEMM"}));
  BenchRow no_gemm = row;
  no_gemm.cudnn[0].status = RouteStatus::failed_verification;
  EXPECT_EQ(cudnn_gemm_best(no_gemm), std::nullopt);
  EXPECT_EQ(gemm_speedup(no_gemm), std::nullopt);
}

TEST(Report, StreamModeWhenOursCouldNotBeCaptured) {
  const BenchRow row = sample_report().rows[2];
  EXPECT_EQ(headline_mode(row), HeadlineMode::stream);
  EXPECT_EQ(cudnn_best(row), 0u);
  EXPECT_DOUBLE_EQ(*speedup(row), 101.0 / 91);
}

TEST(Report, StreamModeWhenNoCudnnRouteWasCaptured) {
  BenchRow row = sample_report().rows[0];
  for (CudnnEntry& entry : row.cudnn)
    if (entry.timing) entry.timing->graph.reset();
  EXPECT_EQ(headline_mode(row), HeadlineMode::stream);
  EXPECT_EQ(cudnn_best(row), 2u);
  EXPECT_DOUBLE_EQ(*speedup(row), 17.0 / 15);
}

TEST(Report, NoSpeedupWhenOursFailedVerification) {
  BenchReport report = sample_report();
  BenchRow& row = report.rows[2];
  row.ours.status = RouteStatus::failed_verification;
  row.ours.reason = "rel L2 3.1e-02 above 1e-05";
  EXPECT_FALSE(speedup(row).has_value());
  EXPECT_EQ(headline_mode(row), HeadlineMode::stream);
  const std::string markdown = report_markdown(report);
  EXPECT_NE(markdown.find("Not compared: conv0 (ours failed_verification: rel L2 3.1e-02 above 1e-05)."),
            std::string::npos)
      << markdown;
  EXPECT_NE(markdown.find("No layer has both a cuDNN and an ours time."), std::string::npos) << markdown;
  const nlohmann::json json = nlohmann::json::parse(report_json(report));
  EXPECT_TRUE(json["rows"][2]["speedup"].is_null());
}

TEST(Report, NoBestWhenNoRouteIsOk) {
  BenchRow row = sample_report().rows[2];
  for (CudnnEntry& entry : row.cudnn) entry.status = RouteStatus::unsupported;
  EXPECT_FALSE(cudnn_best(row).has_value());
  EXPECT_FALSE(speedup(row).has_value());
}

TEST(Report, CudnnAlsoComparesItsFastestVerifiedRouteInTheRowsModeAndAddsATable) {
  BenchReport report = sample_report();
  BenchRow& row = report.rows[0];  // graph mode, ours 12.5 µs by graph replay
  CudnnEntry fast_but_wrong = legacy("WINOGRAD");
  fast_but_wrong.status = RouteStatus::failed_verification;
  fast_but_wrong.timing = timing({1, 1, 1}, {1, 1, 1});
  CudnnEntry precomp = legacy("IMPLICIT_PRECOMP_GEMM");
  precomp.timing = timing({8, 8, 8}, {7, 7, 7});
  precomp.error = error(2e-4);
  CudnnEntry uncaptured{.route = "graph", .algo = "engine 3 [all]"};
  uncaptured.timing = timing({6, 6, 6}, {}, "not capturable");
  row.cudnn_also = CudnnAlso{.precision = Precision::fp16, .math = "tensor_op",
                             .routes = {fast_but_wrong, precomp, uncaptured}};
  const std::optional<CudnnAlsoBest> best = cudnn_also_best(row);
  ASSERT_TRUE(best.has_value());
  EXPECT_EQ(best->route, 1u);  // the wrong one never; the uncaptured one has no graph time
  EXPECT_EQ(best->mode, HeadlineMode::graph);
  EXPECT_DOUBLE_EQ(*cudnn_also_speedup(row), 7 / 12.5);
  // No route with a graph time: both sides on stream launches.
  BenchRow stream_only = row;
  stream_only.cudnn_also->routes[1].timing = timing({8, 8, 8}, {});
  EXPECT_EQ(cudnn_also_best(stream_only)->route, 2u);
  EXPECT_DOUBLE_EQ(*cudnn_also_speedup(stream_only), 6 / *median_us(row.ours.timing, HeadlineMode::stream));
  // Nothing without the option, nor without an ok route.
  EXPECT_FALSE(cudnn_also_best(report.rows[1]).has_value());
  BenchRow none_ok = row;
  for (CudnnEntry& e : none_ok.cudnn_also->routes) e.status = RouteStatus::unsupported;
  EXPECT_FALSE(cudnn_also_speedup(none_ok).has_value());

  const nlohmann::json json = nlohmann::json::parse(report_json(report));
  EXPECT_EQ(json["rows"][0]["cudnn_also"]["precision"], "fp16");
  EXPECT_EQ(json["rows"][0]["cudnn_also"]["routes"].size(), 3u);
  EXPECT_EQ(json["rows"][0]["cudnn_also"]["best"]["algo"], "IMPLICIT_PRECOMP_GEMM");
  EXPECT_DOUBLE_EQ(json["rows"][0]["cudnn_also"]["best"]["us"].get<double>(), 7);
  EXPECT_DOUBLE_EQ(json["rows"][0]["cudnn_also"]["speedup"].get<double>(), 7 / 12.5);
  EXPECT_FALSE(json["rows"][1].contains("cudnn_also"));
  const std::string markdown = report_markdown(report);
  EXPECT_NE(markdown.find("### Against cuDNN in fp16 (tensor_op), timed in the same run after ours"),
            std::string::npos)
      << markdown;
  EXPECT_NE(markdown.find("| conv1 | 7.00 | legacy:IMPLICIT_PRECOMP_GEMM | 12.50 | 0.56× | graph | 2.0e-04 / "),
            std::string::npos)
      << markdown;
  EXPECT_NE(markdown.find("Geometric-mean speedup over cuDNN fp16 0.56× over 1 layers; worst conv1 (0.56×)."),
            std::string::npos)
      << markdown;
}

TEST(Report, RouteLabelsShowKnobs) {
  EXPECT_EQ(route_label(legacy("GEMM")), "legacy:GEMM");
  EXPECT_EQ(route_label({.route = "graph", .algo = "engine 3 [all]", .knobs = "TILE_SIZE=2,SPLIT_K=1"}),
            "graph:engine 3 [all]{TILE_SIZE=2,SPLIT_K=1}");
}

TEST(Report, JsonHasTheSchemaAndEveryRowField) {
  const nlohmann::json json = nlohmann::json::parse(report_json(sample_report()));
  EXPECT_EQ(json["schema"], kReportSchema);
  ASSERT_EQ(json["rows"].size(), 3u);
  const nlohmann::json& row = json["rows"][0];
  for (const char* key :
       {"suite", "layer", "batch", "count", "problem", "shape", "precision", "math", "buffer_sets", "device", "cudnn",
        "cudnn_best", "cudnn_energy_mj", "cudnn_energy_note", "ours", "our_candidates", "headline_mode", "speedup"})
    EXPECT_TRUE(row.contains(key)) << key;
  for (const char* key : {"route", "algo", "median_us", "graph_median_us"})
    EXPECT_TRUE(row["cudnn_best"].contains(key)) << key;
  for (const char* key : {"kernel", "median_us", "p10_us", "p90_us", "graph_median_us", "rel_l2_error", "energy_mj"})
    EXPECT_TRUE(row["ours"].contains(key)) << key;
  for (const char* key : {"route", "algo", "status", "median_us", "p10_us", "p90_us", "rel_l2_error", "knobs"})
    EXPECT_TRUE(row["cudnn"][0].contains(key)) << key;
  EXPECT_EQ(row["ours"]["samples"]["graph"], nlohmann::json::array({12, 12.5, 13}));
  // Every candidate of ours, the failed one with its reason, each without samples.
  ASSERT_EQ(row["our_candidates"].size(), 3u);
  EXPECT_EQ(row["our_candidates"][1]["status"], "failed_verification");
  EXPECT_EQ(row["our_candidates"][1]["graph_median_us"], nullptr);
  EXPECT_EQ(row["our_candidates"][2]["kernel"], "winograd_gemm_m4_bm32_bn32_bk16_tm4_tn4");
  EXPECT_EQ(row["our_candidates"][2]["graph_median_us"], 13.5);
  for (const nlohmann::json& candidate : row["our_candidates"]) EXPECT_FALSE(candidate.contains("samples"));
  EXPECT_TRUE(json["rows"][1]["our_candidates"].empty());
}

TEST(Report, JsonMatchesTheGolden) { expect_golden(report_json(sample_report()), "report.json"); }

TEST(Report, CsvMatchesTheGolden) { expect_golden(report_csv(sample_report()), "report.csv"); }

TEST(Report, MarkdownMatchesTheGolden) { expect_golden(report_markdown(sample_report()), "report.md"); }

TEST(Report, ANetworkChainIsWrittenUnderItsBatchInTheMarkdownAndInTheJson) {
  BenchReport report = sample_report();
  const int batch = report.rows.front().problem.n;
  report.chains.push_back({.batch = batch,
                           .calls = 5,
                           .layers = 2,
                           .left_out = {"conv9"},
                           .early = SampleStats{.median = 10.0},
                           .plain = SampleStats{.median = 12.5},
                           .per_layer_sum_us = 10.25});
  report.chains.push_back({.batch = batch + 1000, .calls = 1, .layers = 1, .error = "no batch of that size"});
  const std::string markdown = report_markdown(report);
  EXPECT_NE(markdown.find("Network as one chain of our kernels (5 calls of 2 layers in network order, one graph, each "
                          "layer's buffers warm): 10.00 µs launched early, 12.50 µs without (1.25×); the per-layer "
                          "sum above is 10.25 µs.\nLeft out of the chain: conv9.\n"),
            std::string::npos)
      << markdown;
  EXPECT_EQ(markdown.find("no batch of that size"), std::string::npos) << "a chain of a batch with no section";
  const auto json = nlohmann::json::parse(report_json(report));
  ASSERT_EQ(json["chains"].size(), 2u);
  EXPECT_EQ(json["chains"][0]["early_stats"]["median"], 10.0);
  EXPECT_EQ(json["chains"][0]["per_layer_sum_us"], 10.25);
  EXPECT_TRUE(json["chains"][1]["early_stats"].is_null());
  EXPECT_EQ(json["chains"][1]["error"], "no batch of that size");
}

TEST(Report, AnOursOnlyRunSaysCudnnWasNotRunAndSumsOursAlone) {
  BenchReport report = sample_report();
  report.cudnn_routes = false;
  for (BenchRow& row : report.rows) row.cudnn.clear();
  // The first section's rows (a section per suite, batch and precision).
  double expected = 0;
  int timed = 0, in_section = 0;
  for (const BenchRow& row : report.rows) {
    if (row.suite != report.rows.front().suite || row.problem.n != report.rows.front().problem.n) continue;
    ++in_section;
    if (const auto us = median_us(row.ours.timing, headline_mode(row)); us && row.ours.status == RouteStatus::ok) {
      expected += row.count * *us;
      ++timed;
    }
  }
  ASSERT_GT(timed, 0);
  const std::string markdown = report_markdown(report);
  EXPECT_NE(markdown.find(fmt::format("cuDNN was not run (--ours-only). Ours, Σ count × time over {} of {} layers: "
                                      "{:.2f} µs.\n",
                                      timed, in_section, expected)),
            std::string::npos)
      << markdown;
  EXPECT_EQ(markdown.find("Not compared"), std::string::npos) << markdown;
  EXPECT_EQ(markdown.find("Geometric-mean speedup"), std::string::npos) << markdown;
  EXPECT_FALSE(nlohmann::json::parse(report_json(report))["cudnn_routes"].get<bool>());
}

}  // namespace
}  // namespace convgen
