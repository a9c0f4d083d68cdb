// igemm_wgmma_verify_test: the Hopper tensor-core family verified on the GPU against the float64 reference (outputs
// poisoned, inputs random, the precision's limit), on a GPU with wgmma (compute capability 9.0; skipped elsewhere):
// the edge-case corpus channels-last in fp16, bf16 and tf32; every block tile and pipeline depth on a problem with
// partial tiles in every dimension, in both pipelines (shared and warp-specialized) and both reduction orders
// (tap-major and chunk-major, which pads the 24 channels to a row: 64, tf32 32); every configuration the search space
// offers on the cusnn layers; split-K of every count; the fused epilogue, in the main kernel and in split-K's reduce;
// the filter by TMA, the filter's width folded into the channels, several tiles a block and split-K in a cluster on the
// corpus; the pixel rows by TMA on 1 x 1 problems; two warpgroups on a 64-pixel tile's channels; filter multicast in
// clusters of 2 and 4 on the corpus and on clusters the pixel tiles do not fill; the halo patch on every tap window and
// partial spatial tile; the operands swapped on the corpus and partial tiles; the pixel rows by TMA in im2col mode on
// every stride, dilation and padding; consecutive calls launched early (programmatic dependent launch), each reading
// the previous one's output. Prints, and appends to $CONVGEN_VERIFY_REPORT, the cases, failures and worst
// error per precision.
#include <algorithm>
#include <array>
#include <functional>
#include <string>
#include <string_view>
#include <tuple>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

#include "igemm_wgmma_params.hpp"
#include "conv/conv_kernel.hpp"
#include "measure/verify.hpp"
#include "runtime/device.hpp"
#include "runtime/driver.hpp"
#include "support/chained_calls.hpp"
#include "support/corpus.hpp"
#include "support/verify_cases.hpp"

namespace convgen {
namespace {

using namespace testing_support;

const std::string kTallyTable = "igemm_wgmma verified cases per precision and layout (configuration, shape)";
constexpr std::array kPrecisions = {Precision::fp16, Precision::bf16, Precision::tf32};

Problem with(Problem p, Precision precision, Layout layout) {
  p.precision = precision;
  p.layout = layout;
  return p;
}

class IgemmWgmmaGpu : public testing::Test {
 protected:
  void SetUp() override {
    if (!cuda_available()) GTEST_SKIP() << "no CUDA device: " << no_device_reason();
    context_ = std::make_unique<Context>(0);
    gpu_ = query_device(0);
    if (!has_wgmma(gpu_)) GTEST_SKIP() << "igemm_wgmma needs compute capability 9.0; this GPU is " << gpu_.arch;
  }

  int verify_all(const std::vector<Case>& cases, std::uint64_t seed) {
    return verify_cases(cases, gpu_, cache_, seed, kTallyTable);
  }

  // Every corpus layer the family serves, channels-last, in every precision: its default configuration changed by
  // each of `variants`, where the family accepts the result; each case labelled `label` and the layer.
  std::vector<Case> default_variants(std::string_view label,
                                     const std::vector<std::function<void(IgemmWgmmaParams&)>>& variants) const {
    std::vector<Case> cases;
    for (Precision precision : kPrecisions)
      for (const Layer& layer : edge_cases().layers) {
        const Problem p = with(layer.problem, precision, channels_last_of(layer.problem.layout));
        const std::optional<KernelSpec> chosen = wgmma_.default_spec(p, gpu_);
        if (!chosen) continue;
        for (const auto& change : variants) {
          IgemmWgmmaParams t = params_of<IgemmWgmmaParams>(*chosen);
          change(t);
          const KernelSpec s = to_spec(t);
          if (wgmma_.check_support(p, gpu_, s)) continue;
          cases.push_back({fmt::format("{} {} {}", label, layer.name, precision), p, s});
        }
      }
    return cases;
  }

  const Family& wgmma_ = family("igemm_wgmma");
  std::unique_ptr<Context> context_;
  Gpu gpu_;
  JitCache cache_{std::nullopt};
};

TEST_F(IgemmWgmmaGpu, RepresentativeConfigurationsAreCorrectOnTheEdgeCaseCorpusInEveryPrecision) {
  std::vector<Case> cases;
  int served = 0;
  for (const Layer& layer : edge_cases().layers)
    for (Precision precision : kPrecisions) {
      const Problem p = with(layer.problem, precision, channels_last_of(layer.problem.layout));
      const std::vector<KernelSpec> specs = representative_specs(wgmma_, p, gpu_, 3);
      if (specs.empty()) continue;  // grouped, channels per group not a multiple of 16 bytes
      ++served;
      for (const KernelSpec& s : specs) cases.push_back({fmt::format("{} {}", layer.name, precision), p, s});
    }
  EXPECT_GT(served, 20) << "igemm_wgmma served too few corpus layers";
  EXPECT_EQ(verify_all(cases, 1), static_cast<int>(cases.size()));
}

// The filter by TMA (`tma`; the search space offered it once this passed) on every corpus layer the family
// serves, channels-last, in every precision: each layer's default configuration made warp-specialized with TMA, in
// both reduction orders where chunk-major serves (groups, output channels that are no multiple of the tile, strides,
// dilation, 1-D and 3-D among them).
TEST_F(IgemmWgmmaGpu, TheFilterByTmaIsCorrectOnTheEdgeCaseCorpus) {
  std::vector<std::function<void(IgemmWgmmaParams&)>> variants;
  for (bool chunk_major : {false, true})
    variants.push_back([chunk_major](IgemmWgmmaParams& t) {
      t.warp_specialized = true;
      t.tma_filter = true;
      t.chunk_major = chunk_major;
    });
  const std::vector<Case> cases = default_variants("tma", variants);
  EXPECT_GT(cases.size(), 40u) << "TMA served too few corpus layers";
  EXPECT_EQ(verify_all(cases, 1), static_cast<int>(cases.size()));
}

// The filter's tensor map (`tma`) is a parameter the launcher encodes on the host over each call's filter: a plan
// without padded channels has nothing for prepare to write, so even a first prepare inside a CUDA graph capture is
// fine, and the captured calls' output is byte for byte the plain calls'. The same values at another address (a map
// encoded anew) give the same output.
TEST_F(IgemmWgmmaGpu, TheFilterByTmaIsAParameterThatAGraphCaptureRecords) {
  const Problem p = parse_problem_key("n1_c64_k64_i1x14x14_f1x3x3_s1x1x1_p0x1x1_d1x1x1_g1_nhwc_fp16");
  // The first configuration the search space offers with the filter by TMA, one output tile a block, no split.
  std::optional<KernelSpec> spec;
  for (const KernelSpec& s : wgmma_.enumerate(p, gpu_)) {
    const IgemmWgmmaParams t = params_of<IgemmWgmmaParams>(s);
    if (t.tma_filter && !t.tma_activation && t.split_k == 1 && t.multicast <= 1 && !t.halo) {
      spec = s;
      break;
    }
  }
  ASSERT_TRUE(spec.has_value()) << "enumerate offers no filter by TMA for " << problem_key(p);
  const BuiltKernel kernel = build_kernel(p, *spec, gpu_, cache_);
  EXPECT_TRUE(kernel.plan.setup.empty());
  const auto bytes = [](std::int64_t elements) { return static_cast<std::size_t>(elements) * 2; };
  DeviceBuffer activation(bytes(activation_elements(p))), filter(bytes(filter_elements(p)));
  DeviceBuffer moved_filter(bytes(filter_elements(p)));
  DeviceBuffer plain_out(bytes(output_elements(p))), graph_out(bytes(output_elements(p)));
  DeviceBuffer moved_out(bytes(output_elements(p)));
  DeviceBuffer workspace(static_cast<std::size_t>(std::max<std::int64_t>(kernel.workspace_bytes(), 4)));
  std::vector<std::uint16_t> values(static_cast<std::size_t>(std::max(activation_elements(p), filter_elements(p))));
  for (std::size_t i = 0; i < values.size(); ++i) values[i] = static_cast<std::uint16_t>(0x3000 + (i * 37) % 0x0c00);
  activation.upload_bytes(values.data(), activation.size());
  filter.upload_bytes(values.data(), filter.size());
  moved_filter.upload_bytes(values.data(), moved_filter.size());
  Stream stream;

  ConvLauncher launcher(kernel);
  Graph graph = Graph::capture(stream.get(), [&] {
    launcher.prepare(filter.ptr(), stream.get());
    launcher.launch(activation.ptr(), filter.ptr(), graph_out.ptr(), workspace.ptr(), stream.get());
  });
  launcher.launch(activation.ptr(), filter.ptr(), plain_out.ptr(), workspace.ptr(), stream.get());
  launcher.prepare(moved_filter.ptr(), stream.get());
  launcher.launch(activation.ptr(), moved_filter.ptr(), moved_out.ptr(), workspace.ptr(), stream.get());
  graph.launch(stream.get());
  graph.launch(stream.get());
  stream.synchronize();
  std::vector<std::uint16_t> plain(plain_out.size() / 2), replayed(graph_out.size() / 2), moved(moved_out.size() / 2);
  plain_out.download_bytes(plain.data(), plain_out.size());
  graph_out.download_bytes(replayed.data(), graph_out.size());
  moved_out.download_bytes(moved.data(), moved_out.size());
  EXPECT_EQ(plain, replayed);
  EXPECT_EQ(plain, moved);
  EXPECT_TRUE(std::any_of(plain.begin(), plain.end(), [](std::uint16_t h) { return h != 0; }));
}

// Several output tiles a block (ws2-ws8: the producer loads the next tile while the consumers store this one) on
// every corpus layer the family serves, in every precision: each layer's default made ws2 and ws3, with the filter
// by cp.async and by TMA, in both reduction orders where chunk-major serves.
TEST_F(IgemmWgmmaGpu, SeveralTilesABlockAreCorrectOnTheEdgeCaseCorpus) {
  std::vector<std::function<void(IgemmWgmmaParams&)>> variants;
  for (int tiles : {2, 3})
    for (bool tma : {false, true})
      for (bool chunk_major : {false, true})
        for (bool warp_copy : {false, true})
          variants.push_back([tiles, tma, chunk_major, warp_copy](IgemmWgmmaParams& t) {
            t.warp_specialized = tiles;
            t.tma_filter = tma;
            t.chunk_major = chunk_major;
            t.warp_copy_output = warp_copy;
          });
  const std::vector<Case> cases = default_variants("tiles", variants);
  EXPECT_GT(cases.size(), 100u) << "several tiles a block served too few corpus layers";
  const auto copying = std::count_if(
      cases.begin(), cases.end(), [](const Case& c) { return params_of<IgemmWgmmaParams>(c.spec).warp_copy_output; });
  EXPECT_GT(copying, 30) << "the warps' copy of the output (oc1) served too few corpus layers";
  EXPECT_EQ(verify_all(cases, 1), static_cast<int>(cases.size()));
}

// The filter's width folded into the channels (`fw`) on every corpus layer where it serves (ungrouped, channels not
// whole 16-byte loads, a filter wider than one tap: 1-D, 2-D and 3-D, strides, dilation, padding beyond the filter),
// in every precision: each layer's default made `fw1` (the copy pass) and `fw2` (folded as loaded, 4-byte copies
// zero-filled outside each input row), in both pipelines and both reduction orders where they serve, and fw2 with
// three tiles a block.
TEST_F(IgemmWgmmaGpu, TheFilterWidthFoldedIntoTheChannelsIsCorrectOnTheEdgeCaseCorpus) {
  std::vector<std::function<void(IgemmWgmmaParams&)>> variants;
  for (int fold : {1, 2})
    for (int warp_specialized : {0, 1, 3})
      for (bool chunk_major : {false, true}) {
        if (warp_specialized == 3 && (fold == 1 || chunk_major)) continue;
        variants.push_back([fold, warp_specialized, chunk_major](IgemmWgmmaParams& t) {
          t.fold_width = fold;
          t.tma_filter = false;
          t.warp_specialized = warp_specialized;
          t.chunk_major = chunk_major;
        });
      }
  const std::vector<Case> cases = default_variants("fw", variants);
  const auto on_load = std::count_if(cases.begin(), cases.end(),
                                     [](const Case& c) { return params_of<IgemmWgmmaParams>(c.spec).fold_width == 2; });
  EXPECT_GT(cases.size() - on_load, 40u) << "fw1 served too few corpus layers";
  EXPECT_GT(on_load, 20) << "fw2 served too few corpus layers";
  EXPECT_EQ(verify_all(cases, 1), static_cast<int>(cases.size()));
}

// 2 x 9 x 11 output pixels (198: a partial last tile of every BLOCK_M), 40 output channels (a partial last tile of
// every BLOCK_N), a reduction of 24 * 9 = 216 (a partial last step of 64): every block tile with the shallowest and the
// deepest pipeline, with one and two K atoms a step (216 is a whole step of 128 and a partial one).
TEST_F(IgemmWgmmaGpu, EveryBlockTileAndPipelineDepthIsCorrectOnPartialTilesInEveryDimension) {
  // shared, warp-specialized, shared chunk-major, the filter by TMA (warp-specialized, tap-major and chunk-major), and
  // several tiles a block (3 tap-major; 2 chunk-major with TMA)
  constexpr int kPipelines = 7;
  constexpr std::array<int, kPipelines> kWarpSpecialized = {0, 1, 0, 1, 1, 3, 2};
  constexpr std::array<bool, kPipelines> kChunkMajor = {false, false, true, false, true, false, true};
  constexpr std::array<bool, kPipelines> kTma = {false, false, false, true, true, false, true};
  std::vector<Case> cases;
  for (Precision precision : kPrecisions) {
    const Problem p{.n = 2,
                    .c = 24,
                    .k = 40,
                    .input = {1, 9, 11},
                    .filter = {1, 3, 3},
                    .padding = {0, 1, 1},
                    .layout = Layout::nhwc,
                    .precision = precision};
    for (int block_m : {64, 128, 192, 256})
      for (int block_n : {16, 32, 64, 96, 128, 192, 256})
        for (int k_atoms : {1, 2})
          for (int stages : {3, 6})
            for (int pipeline = 0; pipeline < kPipelines; ++pipeline) {
              const KernelSpec s = to_spec(IgemmWgmmaParams{.block_m = block_m,
                                                            .block_n = block_n,
                                                            .k_atoms = k_atoms,
                                                            .stages = stages,
                                                            .split_k = 1,
                                                            .chunk_major = kChunkMajor[pipeline],
                                                            .warp_specialized = kWarpSpecialized[pipeline],
                                                            .tma_filter = kTma[pipeline]});
              // Six stages of the larger tiles (three with two K atoms) exceed the shared memory, 256 x 192 and
              // 256 x 256 the registers (most of 256 pixels warp-specialized).
              if (wgmma_.check_support(p, gpu_, s)) continue;
              cases.push_back({fmt::format("partial tiles {}", precision), p, s});
            }
  }
  EXPECT_GE(cases.size(), 700u) << "fewer block tiles than the template declares are supported";
  EXPECT_EQ(verify_all(cases, 50), static_cast<int>(cases.size()));
}

// The channel widths only wave-filling twins use (multiples of 16 between the search's widths), on a layer whose 200
// channels leave a partial last channel tile for each: every pixel tile, the shared and the warp-specialized pipeline,
// the filter by TMA, several tiles a block (the bulk output in 16-bit precisions) and split-K in a cluster.
TEST_F(IgemmWgmmaGpu, EveryWaveFillingChannelWidthIsCorrectOnPartialChannelTiles) {
  struct Pipeline {
    int warp_specialized;
    bool tma;
    int split_k;
    bool cluster_reduce;
  };
  constexpr std::array<Pipeline, 5> kPipelines = {
      {{0, false, 1, false}, {1, false, 1, false}, {1, true, 1, false}, {2, true, 1, false}, {1, true, 2, true}}};
  std::vector<Case> cases;
  for (Precision precision : kPrecisions) {
    const Problem p{.n = 2,
                    .c = 40,
                    .k = 200,
                    .input = {1, 7, 9},
                    .filter = {1, 3, 3},
                    .padding = {0, 1, 1},
                    .layout = Layout::nhwc,
                    .precision = precision};
    for (int block_m : {64, 128, 192})
      for (int block_n : {48, 80, 112, 144, 160, 176, 208, 224, 240})
        for (const Pipeline& pipeline : kPipelines)
          for (int stages : {4, 3}) {
            const KernelSpec s = to_spec(IgemmWgmmaParams{.block_m = block_m,
                                                          .block_n = block_n,
                                                          .k_atoms = 1,
                                                          .stages = stages,
                                                          .split_k = pipeline.split_k,
                                                          .warp_specialized = pipeline.warp_specialized,
                                                          .tma_filter = pipeline.tma,
                                                          .cluster_reduce = pipeline.cluster_reduce});
            if (wgmma_.check_support(p, gpu_, s)) continue;
            cases.push_back({fmt::format("wave-filling width {}", precision), p, s});
            break;  // the deepest of the two that fits
          }
  }
  EXPECT_GE(cases.size(), 350u) << "fewer channel widths than the template declares are supported";
  EXPECT_EQ(verify_all(cases, 51), static_cast<int>(cases.size()));
}

// Every configuration enumerate() offers, that is every one the tuner can pick: the cusnn layers in fp16 NHWC at
// batch 1 and 8, a strided ResNet-50 layer, the deepest cusnn layer in bf16, and the first and the deepest in tf32.
TEST_F(IgemmWgmmaGpu, EveryEnumeratedConfigurationIsCorrectOnNetworkLayers) {
  std::vector<Problem> problems;
  const Suite cusnn = load_suite(source_dir() / "shapes" / "cusnn.csv");
  for (const Layer& layer : cusnn.layers)
    for (int batch : {1, 8}) {
      Problem p = with(layer.problem, Precision::fp16, Layout::nhwc);
      p.n = batch;
      problems.push_back(p);
    }
  problems.push_back(with(cusnn.layers.back().problem, Precision::bf16, Layout::nhwc));
  problems.push_back(with(cusnn.layers.front().problem, Precision::tf32, Layout::nhwc));
  problems.push_back(with(cusnn.layers.back().problem, Precision::tf32, Layout::nhwc));
  for (const Layer& layer : load_suite(source_dir() / "shapes" / "resnet50.csv").layers)
    if (layer.problem.stride.h == 2 && layer.problem.c % 8 == 0) {
      problems.push_back(with(layer.problem, Precision::fp16, Layout::nhwc));
      break;
    }
  std::vector<Case> cases;
  for (const Problem& p : problems) {
    const std::vector<KernelSpec> specs = wgmma_.enumerate(p, gpu_);
    EXPECT_FALSE(specs.empty()) << problem_key(p);
    for (const KernelSpec& s : specs) cases.push_back({problem_key(p), p, s});
  }
  EXPECT_EQ(verify_all(cases, 100), static_cast<int>(cases.size()));
}

TEST_F(IgemmWgmmaGpu, SplitKOfEveryCountAddsThePartialSumsCorrectly) {
  std::vector<Case> cases;
  for (Precision precision : kPrecisions) {
    const Problem p = long_reduction(precision);
    for (int split_k : {2, 3, 5, 8, 12, 24})  // 72 steps of 64 (tf32 144 of 32): 24 splits leave none empty
      // shared, warp-specialized, warp-specialized chunk-major, both of these with the filter by TMA, and 3 tiles a
      // block (the splits among a block's tiles)
      for (int pipeline = 0; pipeline < 6; ++pipeline) {
        const KernelSpec s = to_spec(IgemmWgmmaParams{.block_m = 64,
                                                      .block_n = 64,
                                                      .stages = 4,
                                                      .split_k = split_k,
                                                      .chunk_major = pipeline == 2 || pipeline == 4,
                                                      .warp_specialized = pipeline == 5 ? 3 : pipeline >= 1,
                                                      .tma_filter = pipeline >= 3});
        ASSERT_EQ(wgmma_.check_support(p, gpu_, s), std::nullopt) << kernel_name(s);
        cases.push_back({fmt::format("split_k {} {}", split_k, precision), p, s});
      }
  }
  EXPECT_EQ(verify_all(cases, 500), static_cast<int>(cases.size()));
}

// Split-K in a cluster (`cr`: the splits' blocks add their partial sums in each other's shared memory): on the long
// reduction, every cluster size, block tiles whose rows divide unevenly among the blocks (192 in 5) and channels
// that end inside a block tile (96 of 128), in both pipelines, with the filter by TMA and chunk-major; with the fused
// epilogue; and on every corpus layer the family serves, each default split in 2 and 3 where the reduction allows
// (output channels no multiple of 4 among them: the stores one channel at a time).
TEST_F(IgemmWgmmaGpu, SplitKInAClusterAddsThePartialSumsCorrectly) {
  std::vector<Case> cases;
  for (Precision precision : kPrecisions) {
    Problem p = long_reduction(precision);
    for (int split_k : {2, 3, 5, 8})
      for (const auto& [block_m, block_n] : {std::pair{64, 64}, std::pair{192, 128}, std::pair{128, 32}})
        // shared, warp-specialized, warp-specialized chunk-major with the filter by TMA
        for (int pipeline = 0; pipeline < 3; ++pipeline) {
          const KernelSpec s = to_spec(IgemmWgmmaParams{.block_m = block_m,
                                                        .block_n = block_n,
                                                        .stages = 4,
                                                        .split_k = split_k,
                                                        .chunk_major = pipeline == 2,
                                                        .warp_specialized = pipeline >= 1,
                                                        .tma_filter = pipeline == 2,
                                                        .cluster_reduce = true});
          ASSERT_EQ(wgmma_.check_support(p, gpu_, s), std::nullopt) << kernel_name(s);
          cases.push_back({fmt::format("cluster split_k {} {}", split_k, precision), p, s});
        }
    p.epilogue = parse_epilogue("alpha:1.5+bias+add:0.5+relu6");
    for (int pipeline = 0; pipeline < 2; ++pipeline)
      cases.push_back({fmt::format("cluster {} {}", to_string(p.epilogue), precision), p,
                       to_spec(IgemmWgmmaParams{.block_m = 128,
                                                .block_n = 64,
                                                .stages = 4,
                                                .split_k = 4,
                                                .warp_specialized = pipeline,
                                                .cluster_reduce = true})});
  }
  std::vector<std::function<void(IgemmWgmmaParams&)>> variants;
  for (int split_k : {2, 3})
    variants.push_back([split_k](IgemmWgmmaParams& t) {
      t.warp_specialized = std::min(t.warp_specialized, 1);
      t.split_k = split_k;
      t.cluster_reduce = true;
    });
  const std::vector<Case> corpus = default_variants("cluster", variants);
  EXPECT_GT(corpus.size(), 40u) << "split-K in a cluster served too few corpus layers";
  cases.insert(cases.end(), corpus.begin(), corpus.end());
  EXPECT_EQ(verify_all(cases, 1300), static_cast<int>(cases.size()));
}

// The pixel rows by TMA (`ta`: the launcher's map of the call's activation, a kernel parameter) on 1 x 1 problems of
// stride 1: pixels that end inside a tile (392 in 128s), channels that end inside a K atom (40, 320 in 64s: two atoms
// a step past the reduction, zeros), one K atom and two, split through a workspace and in a cluster, several tiles a
// block (the output by bulk copies), the operands swapped (the pixel rows the wgmma's B, one warpgroup and two on
// them, in tiles of 128 and 192 pixels and of 112 and 96: any wgmma N), the fused epilogue with a residual; and every
// corpus layer the family serves where ta does (1-D, 3-D, batches), each default made warp-specialized with both
// operands by TMA.
TEST_F(IgemmWgmmaGpu, ThePixelRowsByTmaAreCorrectOnPointwiseProblems) {
  std::vector<Case> cases;
  for (Precision precision : kPrecisions)
    for (int c : {256, 40, 320}) {
      Problem p{.n = 2, .c = c, .k = 96, .input = {1, 14, 14}, .filter = {1, 1, 1}, .layout = Layout::nhwc,
                .precision = precision};
      // Pixel tiles: 128, and 64, 192, 112, 96, 48, 32 and 16 (the last five swapped: any wgmma N).
      constexpr int kPixels[14] = {128, 128, 128, 128, 128, 64, 128, 128, 192, 112, 96, 48, 32, 16};
      for (int variant = 0; variant < 14; ++variant) {
        IgemmWgmmaParams t{.block_m = kPixels[variant],
                           .block_n = 64,
                           .k_atoms = variant == 1 ? 2 : 1,
                           .stages = 4,
                           .split_k = variant == 2 || variant == 3 ? 2 : 1,
                           .warp_specialized = variant == 4 ? 2 : 1,
                           .tma_filter = true,
                           .cluster_reduce = variant == 3,
                           .tma_activation = true,
                           .split_n = variant == 7 || variant == 10 || variant == 12,
                           .swap_ab = variant >= 6};
        const KernelSpec s = to_spec(t);
        if (wgmma_.check_support(p, gpu_, s)) continue;  // 40 channels: one step, no split
        cases.push_back({fmt::format("ta {} c{} {}", kernel_name(s), c, precision), p, s});
      }
      p.epilogue = parse_epilogue("alpha:1.5+bias+add:0.5+relu6");
      cases.push_back({fmt::format("ta epilogue c{} {}", c, precision), p,
                       to_spec(IgemmWgmmaParams{.block_m = 128,
                                                .block_n = 32,
                                                .warp_specialized = 1,
                                                .tma_filter = true,
                                                .tma_activation = true})});
    }
  const std::vector<Case> corpus = default_variants("ta", {[](IgemmWgmmaParams& t) {
                                                      t.warp_specialized = std::max(t.warp_specialized, 1);
                                                      t.chunk_major = false;
                                                      t.cluster_reduce = false;
                                                      t.tma_filter = true;
                                                      t.tma_activation = true;
                                                    }});
  EXPECT_GE(corpus.size(), 3u) << "the pixel rows by TMA must serve the corpus's 1 x 1 layer in every precision";
  cases.insert(cases.end(), corpus.begin(), corpus.end());
  EXPECT_GT(cases.size(), 50u);
  EXPECT_EQ(verify_all(cases, 1700), static_cast<int>(cases.size()));
}

// Two warpgroups on a 64-pixel tile's channels (`wn`, each half the block's channels): every corpus layer the family
// serves, each default made a 64-pixel tile of two warpgroups, shared and warp-specialized (the filter by TMA), in
// both reduction orders; the long reduction with every block width that halves to a wgmma N, split through a
// workspace and in a cluster, and the fused epilogue (the staged output, the direct stores and the partial tiles of a
// cluster all write from the channel half they own).
// Filter multicast (`mc`: clusters of 2 or 4 pixel tiles, each block's TMA copying its share of the filter tile into
// every block of the cluster) on every corpus layer the family serves, in every precision: each default made
// warp-specialized with the filter by TMA in clusters of 2 and 4 (its channel tile widened to whole 8-row shares where
// it is narrower), in both reduction orders. Then pixel tiles that do not fill the last cluster (its extra blocks
// copy their share and store nothing: 7 tiles of 64 in clusters of 4, and a single tile of the long reduction in
// clusters of 2 and 4), channel tiles past K (200 of 256), split-K through a workspace and the fused epilogue.
TEST_F(IgemmWgmmaGpu, FilterMulticastIsCorrectOnTheEdgeCaseCorpusAndOnPartialClusters) {
  std::vector<std::function<void(IgemmWgmmaParams&)>> variants;
  for (int multicast : {2, 4})
    for (bool chunk_major : {false, true})
      variants.push_back([multicast, chunk_major](IgemmWgmmaParams& t) {
        t.warp_specialized = 1;
        t.tma_filter = true;
        t.cluster_reduce = false;
        t.split_n = false;
        t.chunk_major = chunk_major;
        t.multicast = multicast;
        t.block_n = std::max(t.block_n, 8 * multicast);
      });
  std::vector<Case> cases = default_variants("mc", variants);
  EXPECT_GT(cases.size(), 100u) << "filter multicast served too few corpus layers";
  const Problem partial{.n = 3,
                        .c = 64,
                        .k = 200,
                        .input = {1, 13, 11},
                        .filter = {1, 3, 3},
                        .padding = {0, 1, 1},
                        .layout = Layout::nhwc};  // 429 pixels: 7 tiles of 64, 4 of 128
  for (Precision precision : kPrecisions) {
    for (const auto& [block_m, block_n, multicast, chunk_major] :
         {std::tuple{64, 64, 4, false}, std::tuple{64, 128, 2, true}, std::tuple{128, 256, 4, false},
          std::tuple{192, 32, 4, true}, std::tuple{64, 16, 2, false}}) {
      const Problem p = with(partial, precision, Layout::nhwc);
      const KernelSpec s = to_spec(IgemmWgmmaParams{.block_m = block_m,
                                                    .block_n = block_n,
                                                    .stages = 4,
                                                    .chunk_major = chunk_major,
                                                    .warp_specialized = 1,
                                                    .tma_filter = true,
                                                    .multicast = multicast});
      if (wgmma_.check_support(p, gpu_, s)) continue;  // registers of the widest tiles
      cases.push_back({fmt::format("mc partial {} {}", kernel_name(s), precision), p, s});
    }
    Problem deep = long_reduction(precision);
    for (const auto& [multicast, split_k] : {std::pair{2, 1}, std::pair{4, 1}, std::pair{2, 3}, std::pair{4, 2}}) {
      const KernelSpec s = to_spec(IgemmWgmmaParams{.block_m = 64,
                                                    .block_n = 64,
                                                    .stages = 5,
                                                    .split_k = split_k,
                                                    .warp_specialized = 1,
                                                    .tma_filter = true,
                                                    .multicast = multicast});
      ASSERT_EQ(wgmma_.check_support(deep, gpu_, s), std::nullopt) << kernel_name(s);
      cases.push_back({fmt::format("mc deep {} {}", kernel_name(s), precision), deep, s});
    }
    deep.epilogue = parse_epilogue("alpha:1.5+bias+add:0.5+relu6");
    for (int split_k : {1, 2})
      cases.push_back({fmt::format("mc epilogue split {} {}", split_k, precision), deep,
                       to_spec(IgemmWgmmaParams{.block_m = 64,
                                                .block_n = 32,
                                                .stages = 4,
                                                .split_k = split_k,
                                                .warp_specialized = 1,
                                                .tma_filter = true,
                                                .multicast = 4})});
  }
  EXPECT_EQ(verify_all(cases, 2200), static_cast<int>(cases.size()));
}

// The halo (`hl`: each 64-channel chunk's input patch loaded once, every tap's wgmma reading its window of it, the
// window's start mid-swizzle-period) on 2-D stride-1 problems whose output tiles of 8 rows by 8 columns a warpgroup end
// inside the image in both directions: 3 x 3 with padding 1, none and 2 (outputs wider than the input), 5 x 5, 3 x 5
// and 1 x 3 filters, channels of 1 to 8 chunks, output channels that end inside the channel tile, 1 to 4 multiplying
// warpgroups, 2 to 4 stages and 1 to 4 tiles a block (the stages running on from tile to tile), the filter in the
// stages (hl1) or loaded once a block (hl2, where the output channels are one tile), in fp16, bf16 and tf32 (whose
// chunk is 32 channels); every corpus layer it serves; the fused epilogue.
TEST_F(IgemmWgmmaGpu, TheHaloPatchIsCorrectForEveryTapWindowAndPartialTile) {
  const auto problem = [](int n, int c, int k, int h, int w, int r, int s, int pad_h, int pad_w) {
    return Problem{.n = n,
                   .c = c,
                   .k = k,
                   .input = {1, h, w},
                   .filter = {1, r, s},
                   .padding = {0, pad_h, pad_w},
                   .layout = Layout::nhwc};
  };
  const std::vector<std::pair<std::string, Problem>> problems = {
      {"3x3 p1 13x11", problem(2, 64, 96, 13, 11, 3, 3, 1, 1)},
      {"3x3 p0 12x20", problem(1, 128, 40, 12, 20, 3, 3, 0, 0)},
      {"3x3 p2 9x9", problem(1, 64, 64, 9, 9, 3, 3, 2, 2)},
      {"5x5 p2 9x20", problem(1, 128, 48, 9, 20, 5, 5, 2, 2)},
      {"3x5 p1,2 14x14", problem(1, 64, 64, 14, 14, 3, 5, 1, 2)},
      {"1x3 p0,1 6x30", problem(3, 64, 32, 6, 30, 1, 3, 0, 1)},
      {"3x3 p1 7x7 deep", problem(2, 512, 64, 7, 7, 3, 3, 1, 1)},
  };
  std::vector<Case> cases;
  for (Precision precision : kPrecisions)
    for (const auto& [label, shape] : problems)
      for (const auto& [block_m, block_n, stages, tiles, halo] :
           {std::tuple{64, 32, 3, 1, 1}, std::tuple{128, 64, 2, 1, 1}, std::tuple{192, 16, 4, 1, 1},
            std::tuple{256, 32, 2, 1, 1}, std::tuple{64, 128, 2, 1, 1}, std::tuple{128, 64, 2, 3, 1},
            std::tuple{64, 32, 3, 2, 1}, std::tuple{128, 64, 4, 3, 2}, std::tuple{64, 128, 3, 2, 2},
            std::tuple{192, 48, 3, 1, 2}, std::tuple{128, 96, 2, 4, 2}}) {
        const Problem p = with(shape, precision, Layout::nhwc);
        const KernelSpec s = to_spec(IgemmWgmmaParams{.block_m = block_m,
                                                      .block_n = block_n,
                                                      .stages = stages,
                                                      .warp_specialized = tiles,
                                                      .tma_filter = true,
                                                      .halo = halo});
        if (wgmma_.check_support(p, gpu_, s)) continue;  // the stages of the widest filters' taps
        cases.push_back({fmt::format("hl {} {} {}", label, kernel_name(s), precision), p, s});
      }
  EXPECT_GT(cases.size(), 90u) << "the halo served too few problems";
  std::vector<std::function<void(IgemmWgmmaParams&)>> variants;
  for (int block_m : {64, 128})
    variants.push_back([block_m](IgemmWgmmaParams& t) {
      t = IgemmWgmmaParams{.block_m = block_m,
                           .block_n = 32,
                           .stages = 2,
                           .warp_specialized = 1,
                           .tma_filter = true,
                           .halo = true};
    });
  const std::vector<Case> corpus = default_variants("hl", variants);
  cases.insert(cases.end(), corpus.begin(), corpus.end());
  for (Precision precision : kPrecisions) {
    Problem p = with(problems[0].second, precision, Layout::nhwc);
    p.epilogue = parse_epilogue("alpha:1.5+bias+add:0.5+relu6");
    cases.push_back({fmt::format("hl epilogue {}", precision), p,
                     to_spec(IgemmWgmmaParams{.block_m = 128,
                                              .block_n = 64,
                                              .stages = 2,
                                              .warp_specialized = 1,
                                              .tma_filter = true,
                                              .halo = true})});
  }
  EXPECT_EQ(verify_all(cases, 2300), static_cast<int>(cases.size()));
}

// The pixel rows by TMA in im2col mode (`ta2`: each K atom one tap's 128-byte chunk of channels, one copy of BLOCK_M
// pixels from the tile's first pixel's tap-0 input pixel, the copy engine walking the output's pixels through the
// map's bounding box, across rows and images, zeros outside the input) on every corpus layer the family serves, in
// every precision: each default made warp-specialized with both operands by TMA, in both reduction orders (tap-major
// where a tap's channels are whole rows), one tile a block and several, and swapped. Then strides 1 to 3, dilation 2,
// padding 0 to 3, 1 x 1 to 7 x 7 and 1 x 3 filters, channels of less than a row (24: zeros past them), 1.5 rows (96)
// and groups of whole rows; tiles of 64 to 256 pixels ending past the last image; split-K; the fused epilogue.
TEST_F(IgemmWgmmaGpu, PixelRowsByTmaInIm2colModeAreCorrectForEveryStrideDilationAndPadding) {
  std::vector<std::function<void(IgemmWgmmaParams&)>> variants;
  for (int order = 0; order < 2; ++order)
    for (int kind = 0; kind < 3; ++kind)
      variants.push_back([order, kind](IgemmWgmmaParams& t) {
        t.warp_specialized = kind == 1 ? 3 : 1;
        t.tma_filter = true;
        t.tma_activation = 2;
        t.chunk_major = order == 1;
        t.multicast = 1;
        t.halo = 0;
        t.split_n = false;
        t.cluster_reduce = kind == 0 ? t.cluster_reduce : false;
        t.split_k = kind == 2 ? 1 : t.split_k;
        t.swap_ab = kind == 2;
        if (kind == 2) t.block_n = std::max(64, (t.block_n + 63) / 64 * 64);
      });
  std::vector<Case> cases = default_variants("ta2", variants);
  EXPECT_GT(cases.size(), 100u) << "im2col served too few corpus layers";
  const auto problem = [](int n, int c, int k, int h, int w, int r, int s, int stride, int pad, int dil, int groups) {
    return Problem{.n = n,
                   .c = c,
                   .k = k,
                   .input = {1, h, w},
                   .filter = {1, r, s},
                   .stride = {1, stride, stride},
                   .padding = {0, pad, pad},
                   .dilation = {1, dil, dil},
                   .groups = groups,
                   .layout = Layout::nhwc};
  };
  const std::vector<std::pair<std::string, Problem>> problems = {
      {"3x3 s1 p1 13x11", problem(3, 64, 96, 13, 11, 3, 3, 1, 1, 1, 1)},
      {"3x3 s2 p1 15x17", problem(2, 128, 64, 15, 17, 3, 3, 2, 1, 1, 1)},
      {"3x3 s1 p2 d2 12x9", problem(2, 64, 48, 12, 9, 3, 3, 1, 2, 2, 1)},
      {"5x5 s1 p0 9x20", problem(1, 64, 40, 9, 20, 5, 5, 1, 0, 1, 1)},
      {"7x7 s2 p3 23x21", problem(2, 64, 64, 23, 21, 7, 7, 2, 3, 1, 1)},
      {"1x1 s2 p0 14x14", problem(4, 192, 128, 14, 14, 1, 1, 2, 0, 1, 1)},
      {"3x3 s3 p1 20x19", problem(1, 64, 32, 20, 19, 3, 3, 3, 1, 1, 1)},
      {"3x3 c24 11x13", problem(2, 24, 32, 11, 13, 3, 3, 1, 1, 1, 1)},
      {"3x3 c96 10x10", problem(2, 96, 64, 10, 10, 3, 3, 1, 1, 1, 1)},
      {"3x3 g2 9x9", problem(2, 256, 128, 9, 9, 3, 3, 1, 1, 1, 2)},
      {"1x3 p1 6x30", problem(3, 64, 32, 6, 30, 1, 3, 1, 1, 1, 1)},
  };
  for (Precision precision : kPrecisions)
    for (const auto& [label, shape] : problems)
      for (const auto& [block_m, block_n, chunk_major, split_k, tiles] :
           {std::tuple{64, 64, false, 1, 1}, std::tuple{128, 32, true, 1, 1}, std::tuple{256, 64, false, 1, 1},
            std::tuple{192, 128, true, 1, 1}, std::tuple{128, 64, false, 3, 1}, std::tuple{128, 64, true, 1, 3}}) {
        const Problem p = with(shape, precision, Layout::nhwc);
        const KernelSpec s = to_spec(IgemmWgmmaParams{.block_m = block_m,
                                                      .block_n = block_n,
                                                      .stages = 4,
                                                      .split_k = split_k,
                                                      .chunk_major = chunk_major,
                                                      .warp_specialized = tiles,
                                                      .tma_filter = true,
                                                      .tma_activation = 2});
        if (wgmma_.check_support(p, gpu_, s)) continue;  // tap-major on channels that are not whole rows
        cases.push_back({fmt::format("ta2 {} {} {}", label, kernel_name(s), precision), p, s});
      }
  for (Precision precision : kPrecisions) {
    Problem p = with(problems[1].second, precision, Layout::nhwc);
    p.epilogue = parse_epilogue("alpha:1.5+bias+add:0.5+relu6");
    for (int split_k : {1, 2})
      cases.push_back({fmt::format("ta2 epilogue split {} {}", split_k, precision), p,
                       to_spec(IgemmWgmmaParams{.block_m = 128,
                                                .block_n = 64,
                                                .stages = 4,
                                                .split_k = split_k,
                                                .warp_specialized = 1,
                                                .tma_filter = true,
                                                .tma_activation = 2})});
  }
  EXPECT_EQ(verify_all(cases, 2500), static_cast<int>(cases.size()));
}

// The operands swapped (`sw`: the filter tile the wgmma's A, 64 output channels a warpgroup, the pixel tile its B, the
// output written transposed into the stages and stored from there) on every corpus layer the family serves, in every
// precision: each default made swapped, its channel tile widened to whole 64s, in the shared and the warp-specialized
// pipeline (the filter by cp.async and by TMA), both reduction orders, one warpgroup a 64 channels and two (`wn`, each
// half the pixels). Then every tile of 64 to 256 pixels by 64 to 256 channels on a problem whose pixels and output
// channels end inside the tile (429 pixels, 200 channels), the long reduction, groups, and the fused epilogue.
TEST_F(IgemmWgmmaGpu, SwappedOperandsAreCorrectOnTheEdgeCaseCorpusAndPartialTiles) {
  std::vector<std::function<void(IgemmWgmmaParams&)>> variants;
  for (int pipeline = 0; pipeline < 4; ++pipeline)
    for (bool halves : {false, true})
      variants.push_back([pipeline, halves](IgemmWgmmaParams& t) {
        t.block_n = std::max(64, (t.block_n + 63) / 64 * 64);
        t.block_m = halves ? std::max(t.block_m, 128) : t.block_m;
        t.split_k = 1;
        t.cluster_reduce = false;
        t.multicast = 1;
        t.halo = 0;
        t.tma_activation = false;
        t.warp_specialized = pipeline > 0 ? 1 : 0;
        t.tma_filter = pipeline >= 2;
        t.chunk_major = pipeline == 3;
        t.split_n = halves;
        t.swap_ab = true;
      });
  std::vector<Case> cases = default_variants("sw", variants);
  EXPECT_GT(cases.size(), 150u) << "the swapped operands served too few corpus layers";
  const Problem partial{.n = 3,
                        .c = 64,
                        .k = 200,
                        .input = {1, 13, 11},
                        .filter = {1, 3, 3},
                        .padding = {0, 1, 1},
                        .layout = Layout::nhwc};  // 429 pixels
  Problem grouped = partial;
  grouped.c = 128;
  grouped.k = 256;
  grouped.groups = 2;
  for (Precision precision : kPrecisions) {
    for (const Problem& shape : {partial, grouped})
      for (int block_m : {64, 128, 192, 256, 16, 32, 48, 112, 160})  // with the operands swapped, any wgmma N
        for (int block_n : {64, 128, 192, 256})
          for (int pipeline = 0; pipeline < 3; ++pipeline)
            for (bool halves : {false, true}) {
              const Problem p = with(shape, precision, Layout::nhwc);
              const KernelSpec s = to_spec(IgemmWgmmaParams{.block_m = block_m,
                                                            .block_n = block_n,
                                                            .stages = 4,
                                                            .warp_specialized = pipeline > 0 ? 1 : 0,
                                                            .tma_filter = pipeline == 2,
                                                            .split_n = halves,
                                                            .swap_ab = true});
              if (wgmma_.check_support(p, gpu_, s)) continue;  // threads, registers, rows among the loaders
              cases.push_back({fmt::format("sw partial{} {} {}", shape.groups > 1 ? " grouped" : "", kernel_name(s),
                                           precision),
                               p, s});
            }
    Problem deep = long_reduction(precision);
    for (int block_n : {64, 128})
      cases.push_back({fmt::format("sw deep {} {}", block_n, precision), deep,
                       to_spec(IgemmWgmmaParams{.block_m = 256,
                                                .block_n = block_n,
                                                .stages = 4,
                                                .warp_specialized = 1,
                                                .tma_filter = true,
                                                .swap_ab = true})});
    deep.epilogue = parse_epilogue("alpha:1.5+bias+add:0.5+relu6");
    for (int pipeline = 0; pipeline < 2; ++pipeline)
      cases.push_back({fmt::format("sw epilogue {} {}", pipeline, precision), deep,
                       to_spec(IgemmWgmmaParams{.block_m = 128,
                                                .block_n = 64,
                                                .stages = 4,
                                                .warp_specialized = pipeline,
                                                .tma_filter = pipeline == 1,
                                                .swap_ab = true})});
  }
  EXPECT_EQ(verify_all(cases, 2400), static_cast<int>(cases.size()));
}

TEST_F(IgemmWgmmaGpu, TwoWarpgroupsOnAPixelTilesChannelsAreCorrect) {
  std::vector<std::function<void(IgemmWgmmaParams&)>> variants;
  for (int pipeline = 0; pipeline < 3; ++pipeline)
    variants.push_back([pipeline](IgemmWgmmaParams& t) {
      t.block_m = 64;
      t.block_n = std::max(t.block_n, 32);
      t.warp_specialized = pipeline > 0;
      t.tma_filter = pipeline == 2;
      t.chunk_major = pipeline == 1;
      t.split_n = true;
    });
  std::vector<Case> cases = default_variants("wn", variants);
  EXPECT_GT(cases.size(), 100u) << "two warpgroups a 64-pixel tile served too few corpus layers";
  for (Precision precision : kPrecisions) {
    Problem p = long_reduction(precision);
    for (int block_n : {32, 64, 128, 192, 256})
      for (int variant = 0; variant < 3; ++variant) {
        const KernelSpec s = to_spec(IgemmWgmmaParams{.block_m = 64,
                                                      .block_n = block_n,
                                                      .stages = 4,
                                                      .split_k = variant == 0 ? 1 : 3,
                                                      .warp_specialized = variant != 1,
                                                      .tma_filter = variant == 2,
                                                      .cluster_reduce = variant == 2,
                                                      .split_n = true});
        ASSERT_EQ(wgmma_.check_support(p, gpu_, s), std::nullopt) << kernel_name(s);
        cases.push_back({fmt::format("wn {} {}", kernel_name(s), precision), p, s});
      }
    p.epilogue = parse_epilogue("alpha:1.5+bias+add:0.5+relu6");
    for (int split_k : {1, 2})
      cases.push_back({fmt::format("wn epilogue split {} {}", split_k, precision), p,
                       to_spec(IgemmWgmmaParams{.block_m = 64,
                                                .block_n = 128,
                                                .stages = 4,
                                                .split_k = split_k,
                                                .warp_specialized = 1,
                                                .tma_filter = true,
                                                .cluster_reduce = split_k > 1,
                                                .split_n = true})});
  }
  EXPECT_EQ(verify_all(cases, 2100), static_cast<int>(cases.size()));
}

// Each epilogue term (bias, residual with a scale, relu6, clip, alpha) on corpus layers, with and without split-K.
TEST_F(IgemmWgmmaGpu, TheFusedEpilogueIsAppliedInTheMainKernelAndInSplitKsReduce) {
  std::vector<Case> cases;
  const std::vector<Epilogue> epilogues = {parse_epilogue("alpha:1.5+bias+add:0.5+relu6"),
                                           parse_epilogue("bias+clip:-0.5:1")};
  for (Precision precision : kPrecisions)
    for (const Epilogue& e : epilogues) {
      Problem p = long_reduction(precision);
      p.epilogue = e;
      for (int split_k : {1, 4})
        // shared, warp-specialized, shared chunk-major, TMA, TMA with 2 tiles a block, and those with the warps
        // copying their output out (16-bit, unsplit)
        for (int pipeline = 0; pipeline < 6; ++pipeline) {
          if (pipeline == 5 && (split_k > 1 || precision == Precision::tf32)) continue;
          cases.push_back({fmt::format("{} {}", to_string(e), precision), p,
                           to_spec(IgemmWgmmaParams{.block_m = 64,
                                                    .block_n = 32,
                                                    .stages = 4,
                                                    .split_k = split_k,
                                                    .chunk_major = pipeline == 2,
                                                    .warp_specialized = std::array{0, 1, 0, 1, 2, 2}[pipeline],
                                                    .tma_filter = pipeline >= 3,
                                                    .warp_copy_output = pipeline == 5})});
        }
      for (const char* name : {"c32_k100_3x3", "groups4_batch2"})
        for (const Layer& layer : edge_cases().layers)
          if (layer.name == name) {
            Problem q = with(layer.problem, precision, channels_last_of(layer.problem.layout));
            q.epilogue = e;
            for (const KernelSpec& s : representative_specs(wgmma_, q, gpu_, 1))
              cases.push_back({fmt::format("{} {} {}", name, to_string(e), precision), q, s});
          }
    }
  EXPECT_EQ(verify_all(cases, 900), static_cast<int>(cases.size()));
}

// Early launch (programmatic dependent launch): two calls back to back on one stream, the second reading the first's
// output and writing over the first's input (y = conv(x), then x = conv(y)), with the intermediate poisoned with NaN
// before: each call's output matches the reference of the input it was given. A block that read its input, or wrote
// its output or workspace, before the previous kernel had ended would read the poison or spoil the first call's
// input. Layers with C = K (one wave and several), in the pipelines, the filter and pixel rows by TMA, split-K through
// the reduce pass and in a cluster, and padded channels (pad_activation first).
TEST_F(IgemmWgmmaGpu, ConsecutiveCallsLaunchedEarlyReadThePreviousCallsOutput) {
  ASSERT_TRUE(early_launch_enabled()) << "CONVGEN_EARLY_LAUNCH=0 turns off what this test checks";
  const auto layer = [](int n, int c, int hw, int r) {
    return Problem{.n = n, .c = c, .k = c, .input = {1, hw, hw}, .filter = {1, r, r},
                   .padding = {0, r / 2, r / 2}, .layout = Layout::nhwc, .precision = Precision::fp16};
  };
  const std::vector<std::function<void(IgemmWgmmaParams&)>> variants = {
      [](IgemmWgmmaParams&) {},
      [](IgemmWgmmaParams& t) { t = IgemmWgmmaParams{.block_m = 64, .block_n = 64, .stages = 4}; },
      [](IgemmWgmmaParams& t) { t = IgemmWgmmaParams{.block_n = 64, .warp_specialized = 1, .tma_filter = true}; },
      [](IgemmWgmmaParams& t) {
        t = IgemmWgmmaParams{.block_n = 64, .warp_specialized = 1, .tma_filter = true, .tma_activation = 2};
      },
      [](IgemmWgmmaParams& t) { t = IgemmWgmmaParams{.block_m = 64, .block_n = 64, .split_k = 4}; },
      [](IgemmWgmmaParams& t) {
        t = IgemmWgmmaParams{.block_m = 64, .block_n = 64, .split_k = 2, .warp_specialized = 1,
                             .cluster_reduce = true};
      },
      [](IgemmWgmmaParams& t) { t = IgemmWgmmaParams{.block_n = 64, .warp_specialized = 3}; },
  };
  int chains = 0;
  for (const Problem& p : {layer(1, 64, 14, 3), layer(8, 64, 56, 3), layer(4, 256, 14, 1), layer(2, 24, 20, 3)}) {
    const std::optional<KernelSpec> chosen = wgmma_.default_spec(p, gpu_);
    ASSERT_TRUE(chosen.has_value()) << problem_key(p);
    for (const auto& change : variants) {
      IgemmWgmmaParams t = params_of<IgemmWgmmaParams>(*chosen);
      change(t);
      const KernelSpec spec = to_spec(t);
      if (wgmma_.check_support(p, gpu_, spec)) continue;
      const BuiltKernel kernel = build_kernel(p, spec, gpu_, cache_);
      for (const LaunchStep& step : kernel.plan.run)
        if (step.kind == LaunchStep::Kind::kernel) {
          EXPECT_TRUE(step.early_launch) << kernel.source.entry;
        }
      verify_chained_calls(kernel, 7);
      ++chains;
    }
  }
  EXPECT_GE(chains, 20);
}

}  // namespace
}  // namespace convgen
