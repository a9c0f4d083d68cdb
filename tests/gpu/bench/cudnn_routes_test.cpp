// cudnn_routes_test: every cuDNN route of a few layers (NCHW 3x3, NHWC grouped, 3-D, TF32, FP16) is listed once, the
// supported ones launch, and their outputs are compared with the float64 reference; prints the route table.
#include "bench/cudnn_routes.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <functional>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "bench/cudnn_check.hpp"
#include "measure/verification.hpp"
#include "reference/reference.hpp"
#include "runtime/driver.hpp"
#include "runtime/module.hpp"
#include "support/corpus.hpp"

namespace convgen {
namespace {

struct RouteResult {
  std::string launch;  // "ok" or why the launch failed
  ErrorStats stats;
  bool passed = false;
  std::string graph_replay;  // "ok", "mismatch" or why capture failed
};

class CudnnRoutes : public testing::Test {
 protected:
  void SetUp() override {
    if (!cuda_available()) GTEST_SKIP() << "no CUDA device: " << no_device_reason();
    context_ = std::make_unique<Context>(0);
    stream_ = std::make_unique<Stream>();
  }

  // Builds the baseline, launches every supported route on random inputs with a poisoned output, compares with the
  // reference, prints the table and checks what must hold for every problem.
  std::vector<RouteResult> run_all(const Problem& problem, const CudnnBaseline& cudnn, bool print = true) {
    const auto& routes = cudnn.routes();
    // The pipeline makes the inputs in the problem's element type (fp16 values rounded), so the reference sees
    // exactly what the GPU does, and poisons the output before every run. Zeros where the problem expects them (for
    // relu_on_load, negatives there).
    ConvMeasurement measurement(problem,
                                {.activation = expected_activation(problem, SparsityPattern::uniform), .seed = 1});
    DeviceBuffer workspace(std::max<std::size_t>(cudnn.max_workspace_bytes(), 4));

    std::vector<RouteResult> results(routes.size());
    for (std::size_t i = 0; i < routes.size(); ++i) {
      if (!routes[i].supported()) continue;
      RouteResult& r = results[i];
      const ConvCandidate candidate{routes[i].algo, [&, i](const ConvPointers& t, CUstream s) {
                                      cudnn.launch(i, t.activation, t.filter, t.output, t.bias, t.residual,
                                                   workspace.ptr(), s);
                                    }};
      try {
        r.stats = measurement.verify(candidate, *stream_).stats;
        r.launch = "ok";
        r.passed = passes(r.stats, problem.precision);
      } catch (const CudnnError& e) {
        r.launch = e.what();
        continue;
      }
      // What the benchmark's graph-replay mode will meet: does the route capture into a CUDA graph?
      try {
        const ConvPointers tensors = measurement.pointers(0);
        const Graph graph = Graph::capture(stream_->get(), [&] { candidate.launch(tensors, stream_->get()); });
        const ConvCandidate replay{candidate.name, [&graph](const ConvPointers&, CUstream s) { graph.launch(s); }};
        const ErrorStats again = measurement.verify(replay, *stream_).stats;
        r.graph_replay = passes(again, problem.precision) == r.passed ? "ok" : "mismatch";
      } catch (const Error& e) {
        r.graph_replay = e.what();
        stream_ = std::make_unique<Stream>();  // a failed capture may leave the stream unusable
      }
    }
    if (print) print_table(problem, cudnn, results);
    return results;
  }

  static void print_table(const Problem& problem, const CudnnBaseline& cudnn, const std::vector<RouteResult>& results) {
    std::string text = fmt::format("\n{} ({}, {}), cuDNN {}: {} routes\n", describe(problem), problem.layout,
                                   cudnn.math(), cudnn_version(), cudnn.routes().size());
    text += fmt::format("  {:<6} {:<44} {:<40} {:>11} {:>10}  {}\n", "route", "algo", "status", "workspace", "rel L2",
                        "notes / knobs / launch / graph replay");
    for (std::size_t i = 0; i < cudnn.routes().size(); ++i) {
      const CudnnRoute& r = cudnn.routes()[i];
      const RouteResult& res = results[i];
      std::string error = "-";
      if (res.launch == "ok")
        error = res.stats.nan_count > 0 ? fmt::format("{} NaN", res.stats.nan_count)
                                        : fmt::format("{:.2e}", res.stats.rel_l2);
      std::string extra = r.numerical_notes;
      if (!r.behavior_notes.empty()) extra += (extra.empty() ? "" : " ") + std::string("{") + r.behavior_notes + "}";
      if (!r.knobs.empty()) extra += " " + r.knobs;
      if (!res.launch.empty() && res.launch != "ok") extra += " launch: " + res.launch;
      if (!res.graph_replay.empty() && res.graph_replay != "ok") extra += " graph: " + res.graph_replay;
      if (res.launch == "ok" && !res.passed) extra += " FAILS VERIFICATION";
      std::string status = r.status;
      if (status.size() > 40) status = status.substr(0, 37) + "...";
      text += fmt::format("  {:<6} {:<44} {:<40} {:>11} {:>10}  {}\n", r.route, r.algo, status, r.workspace_bytes,
                          error, extra);
    }
    for (const std::string& warning : cudnn.warnings()) text += "  warning: " + warning + "\n";
    std::printf("%s", text.c_str());
  }

  // What every problem's routes must satisfy.
  static void check_routes(const Problem& problem, const CudnnBaseline& cudnn,
                           const std::vector<RouteResult>& results) {
    const auto& routes = cudnn.routes();
    std::set<std::string> algos;
    std::set<std::string> graph_configs;
    std::vector<std::string> legacy;
    bool legacy_supported = false, graph_supported = false, graph_passed = false;
    for (std::size_t i = 0; i < routes.size(); ++i) {
      const CudnnRoute& r = routes[i];
      EXPECT_FALSE(r.status.empty()) << r.algo;
      EXPECT_TRUE(algos.insert(r.route + " " + r.algo).second) << "listed twice: " << r.route << " " << r.algo;
      if (r.route == "legacy") {
        legacy.push_back(r.algo);
        legacy_supported |= r.supported() && results[i].launch == "ok";
      } else {
        ASSERT_EQ(r.route, "graph");
        EXPECT_TRUE(graph_configs.insert(fmt::format("{}|{}", r.index, r.knobs)).second)
            << "engine " << r.index << " with knobs '" << r.knobs << "' listed twice";
        graph_supported |= r.supported() && results[i].launch == "ok";
        graph_passed |= results[i].passed;
      }
      if (problem.precision == Precision::fp32) {
        const bool tensor_cores = r.numerical_notes.find("TENSOR_CORE") != std::string::npos ||
                                  r.numerical_notes.find("DOWN_CONVERT_INPUTS") != std::string::npos;
        const bool excluded = r.status.rfind("excluded: ", 0) == 0;
        EXPECT_EQ(excluded, tensor_cores) << r.algo << " " << r.status << " " << r.numerical_notes;
      }
    }
    EXPECT_EQ(legacy, (std::vector<std::string>{"IMPLICIT_GEMM", "IMPLICIT_PRECOMP_GEMM", "GEMM", "DIRECT", "FFT",
                                                "FFT_TILING", "WINOGRAD", "WINOGRAD_NONFUSED"}));
    EXPECT_TRUE(legacy_supported) << "no legacy route launched";
    EXPECT_TRUE(graph_supported) << "no graph route launched";
    EXPECT_TRUE(graph_passed) << "no graph route passed verification";
    // IMPLICIT_GEMM is the first route and serves nearly every problem: where it runs it must be right. The one
    // exception seen (cuDNN 9.14, H200): fp32 NDHWC, where it is unsupported and another legacy algorithm serves.
    ASSERT_EQ(routes[0].algo, "IMPLICIT_GEMM");
    if (problem.layout == Layout::ndhwc && !routes[0].supported()) return;
    EXPECT_TRUE(routes[0].supported()) << routes[0].status << " " << routes[0].status_detail;
    EXPECT_EQ(results[0].launch, "ok");
    EXPECT_TRUE(results[0].passed) << "IMPLICIT_GEMM rel L2 " << results[0].stats.rel_l2 << ", NaN "
                                   << results[0].stats.nan_count;
  }

  void check_problem(const Problem& problem) {
    const auto start = std::chrono::steady_clock::now();
    std::unique_ptr<CudnnBaseline> cudnn;
    ASSERT_NO_THROW(cudnn = std::make_unique<CudnnBaseline>(problem)) << describe(problem);
    const double build_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    std::printf("\nbuilt %zu routes in %.2f s\n", cudnn->routes().size(), build_s);
    const std::vector<RouteResult> results = run_all(problem, *cudnn);
    check_routes(problem, *cudnn, results);
  }

  std::unique_ptr<Context> context_;
  std::unique_ptr<Stream> stream_;
};

// A problem with an epilogue: cuDNN's side is the fused legacy call (cudnnConvolutionBiasActivationForward) for each
// algorithm, verified against the reference with the same epilogue; the graph API's fused engines are not built yet
// and a warning says so.
TEST_F(CudnnRoutes, AnEpilogueIsServedByTheLegacyFusedCallVerifiedAgainstTheSameEpilogue) {
  for (const Problem& base :
       {Problem{.c = 64, .k = 64, .input = {1, 14, 14}, .filter = {1, 3, 3}, .padding = {0, 1, 1}},
        Problem{.n = 2,
        .c = 32,
        .k = 48,
        .input = {1, 9, 9},
        .filter = {1, 3, 3},
        .padding = {0, 1, 1},
        .layout = Layout::nhwc,
        .precision = Precision::fp16}}) {
    for (const char* text : {"bias+add+relu", "alpha:0.5+bias+add:2+relu", "bias", "add"}) {
      Problem problem = base;
      problem.epilogue = parse_epilogue(text);
      const CudnnBaseline cudnn(problem);
      const std::vector<RouteResult> results = run_all(problem, cudnn);
      ASSERT_EQ(cudnn.routes().size(), 8u) << "the 8 legacy algorithms, fused; no graph route";
      bool passed = false;
      for (std::size_t i = 0; i < cudnn.routes().size(); ++i) {
        EXPECT_EQ(cudnn.routes()[i].route, "legacy_fused");
        passed |= results[i].passed;
      }
      EXPECT_TRUE(passed) << text << ": no fused route passed verification";
      ASSERT_FALSE(cudnn.warnings().empty());
      EXPECT_NE(cudnn.warnings().back().find("graph API: the fused conv -> bias -> add -> activation engines are "
                                             "not built"),
                std::string::npos);
    }
  }
}

// relu_on_load, which no cuDNN convolution fuses: every route runs a ReLU pass into a scratch tensor first, so the
// routes that pass verification compute the convolution of max(0, x) on an input with negatives.
TEST_F(CudnnRoutes, ReluOnLoadIsServedWithAReluPassFirstAndVerifiedAgainstTheRectifiedReference) {
  for (Problem problem : {Problem{.c = 64, .k = 64, .input = {1, 14, 14}, .filter = {1, 3, 3}, .padding = {0, 1, 1}},
                          Problem{.n = 2,
                          .c = 32,
                          .k = 48,
                          .input = {1, 9, 9},
                          .filter = {1, 3, 3},
                          .padding = {0, 1, 1},
                          .layout = Layout::nhwc}}) {
    problem.act_sparsity = 0.5;
    problem.relu_on_load = true;
    const CudnnBaseline cudnn(problem);
    const std::vector<RouteResult> results = run_all(problem, cudnn);
    int passed = 0;
    for (const RouteResult& r : results) passed += r.passed;
    EXPECT_GE(passed, 3) << problem_key(problem);
    bool warned = false;
    for (const std::string& w : cudnn.warnings()) warned |= w.find("cudnnActivationForward") != std::string::npos;
    EXPECT_TRUE(warned);
  }
}

TEST_F(CudnnRoutes, Relu6AndClipAreListedAsOutsideTheLegacyFusedCall) {
  Problem problem{.c = 16, .k = 16, .input = {1, 8, 8}, .filter = {1, 3, 3}, .padding = {0, 1, 1}};
  problem.epilogue = parse_epilogue("bias+relu6");
  const CudnnBaseline cudnn(problem);
  ASSERT_EQ(cudnn.routes().size(), 8u);
  for (const CudnnRoute& r : cudnn.routes())
    EXPECT_EQ(r.status, "excluded: cudnnConvolutionBiasActivationForward serves relu and identity only, not relu6");
}

TEST_F(CudnnRoutes, Nchw3x3LayerHasEveryRouteListedAndTheSupportedOnesVerified) {
  check_problem(Problem{.c = 64, .k = 64, .input = {1, 14, 14}, .filter = {1, 3, 3}, .padding = {0, 1, 1}});
}

TEST_F(CudnnRoutes, NhwcGroupedLayerHasEveryRouteListedAndTheSupportedOnesVerified) {
  check_problem(Problem{.n = 2,
                        .c = 32,
                        .k = 64,
                        .input = {1, 10, 12},
                        .filter = {1, 3, 3},
                        .stride = {1, 2, 1},
                        .padding = {0, 1, 1},
                        .groups = 4,
                        .layout = Layout::nhwc});
}

TEST_F(CudnnRoutes, ThreeDimensionalLayerHasEveryRouteListedAndTheSupportedOnesVerified) {
  check_problem(
      Problem{.c = 8, .k = 16, .input = {6, 8, 8}, .filter = {3, 3, 3}, .padding = {1, 1, 1}, .layout = Layout::ncdhw});
}

TEST_F(CudnnRoutes, Tf32AllowsTensorCoreEnginesAndMeetsTheTf32Limit) {
  const Problem problem{
      .c = 64, .k = 64, .input = {1, 14, 14}, .filter = {1, 3, 3}, .padding = {0, 1, 1}, .precision = Precision::tf32};
  const CudnnBaseline cudnn(problem);
  const std::vector<RouteResult> results = run_all(problem, cudnn);
  check_routes(problem, cudnn, results);
  for (const CudnnRoute& r : cudnn.routes()) EXPECT_EQ(r.status.rfind("excluded: ", 0), std::string::npos) << r.algo;
}

TEST_F(CudnnRoutes, Fp16NhwcLayerHasEveryRouteListedAndTheSupportedOnesVerified) {
  check_problem(Problem{.c = 64,
                        .k = 64,
                        .input = {1, 14, 14},
                        .filter = {1, 3, 3},
                        .padding = {0, 1, 1},
                        .layout = Layout::nhwc,
                        .precision = Precision::fp16});
}

TEST_F(CudnnRoutes, Bf16NhwcLayerHasEveryRouteListedAndTheSupportedOnesVerified) {
  check_problem(Problem{.c = 64,
                        .k = 64,
                        .input = {1, 14, 14},
                        .filter = {1, 3, 3},
                        .padding = {0, 1, 1},
                        .layout = Layout::nhwc,
                        .precision = Precision::bf16});
}

TEST_F(CudnnRoutes, Tf32LayerHasEveryRouteListedAndTheSupportedOnesVerified) {
  check_problem(Problem{.c = 64, .k = 64, .input = {1, 14, 14}, .filter = {1, 3, 3}, .padding = {0, 1, 1},
                        .precision = Precision::tf32});
}

// Every edge case (1-D, 3-D, odd sizes, stride, dilation, groups, depthwise, batch > 1) in its own layout: prints
// one line per layer and the routes that fail verification.
TEST_F(CudnnRoutes, EveryEdgeCaseHasItsRoutesListedAndTheSupportedOnesVerified) {
  for (const Layer& layer : testing_support::edge_cases().layers) {
    SCOPED_TRACE(layer.name);
    const CudnnBaseline cudnn(layer.problem);
    const std::vector<RouteResult> results = run_all(layer.problem, cudnn, false);
    check_routes(layer.problem, cudnn, results);
    int supported = 0, passed = 0;
    std::string failures;
    for (std::size_t i = 0; i < results.size(); ++i) {
      const CudnnRoute& r = cudnn.routes()[i];
      supported += r.supported();
      passed += results[i].passed;
      if (r.supported() && !results[i].passed)
        failures +=
            fmt::format(" {} {}: {}", r.route, r.algo,
                        results[i].launch == "ok" ? fmt::format("{:.2e}", results[i].stats.rel_l2) : results[i].launch);
    }
    std::printf("%-28s %-44s %3zu routes, %3d supported, %3d verified%s\n", layer.name.c_str(),
                describe(layer.problem).c_str(), cudnn.routes().size(), supported, passed, failures.c_str());
  }
}

TEST_F(CudnnRoutes, LaunchRefusesAnUnknownIndexAndAnUnsupportedRoute) {
  const Problem problem{.c = 4, .k = 4, .input = {1, 6, 6}, .filter = {1, 3, 3}};
  const CudnnBaseline cudnn(problem);
  const std::size_t count = cudnn.routes().size();
  try {
    cudnn.launch(count, 0, 0, 0, 0, stream_->get());
    ADD_FAILURE() << "no InputError";
  } catch (const InputError& e) {
    EXPECT_EQ(std::string(e.what()),
              fmt::format("cudnn route index {} out of range: the problem has {} routes", count, count));
  }
  for (std::size_t i = 0; i < count; ++i) {
    const CudnnRoute& r = cudnn.routes()[i];
    if (r.supported()) continue;
    try {
      cudnn.launch(i, 0, 0, 0, 0, stream_->get());
      ADD_FAILURE() << "no InputError";
    } catch (const InputError& e) {
      EXPECT_EQ(std::string(e.what()),
                fmt::format("cudnn route {} {} is not supported: {}", r.route, r.algo, r.status));
    }
    break;
  }
}

}  // namespace
}  // namespace convgen
