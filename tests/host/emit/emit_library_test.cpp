// emit_library_test: convgen emit-lib end to end without a GPU: names, rendering, the emitted project built with
// CMake, its example and an installed consumer run, the header as C and C++, and the checked-in example up to date.
#include "emit/emit_library.hpp"
#include "igemm_params.hpp"
#include "weight_sparse_params.hpp"

#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <string>

#include <gtest/gtest.h>

#include "host/tuner/fixtures.hpp"
#include "support/run_convgen.hpp"

#include "convgen/error.hpp"
#include "convgen/weights.hpp"
#include "generator/gpu_json.hpp"
#include "reference/host_tensor.hpp"
#include "reference/npy.hpp"
#include "reference/pruning.hpp"
#include "runtime/driver.hpp"

namespace convgen {
namespace {

namespace fs = std::filesystem;

using Result = testing_support::CommandResult;
const auto run = testing_support::run_command;

std::string convgen_binary() { return std::string(CONVGEN_BINARY_DIR) + "/tools/convgen/convgen"; }
fs::path source_dir() { return CONVGEN_SOURCE_DIR; }

// A fresh folder of this test process, removed first.
fs::path temp_dir(const std::string& name) {
  const fs::path dir = fs::temp_directory_path() / ("convgen_emit_test_" + std::to_string(getpid())) / name;
  fs::remove_all(dir);
  fs::create_directories(dir);
  return dir;
}

std::string read(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

// Configures and builds a CMake project with this build's CMake, Ninja and compilers.
Result cmake_build(const fs::path& source, const fs::path& build, const std::string& extra = "") {
  const std::string cmake = CONVGEN_CMAKE_COMMAND;
  Result configure =
      run(cmake + " -S " + source.string() + " -B " + build.string() +
          " -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_MAKE_PROGRAM=" + CONVGEN_MAKE_PROGRAM +
          " -DCMAKE_CXX_COMPILER=" + CONVGEN_CXX_COMPILER + " -DCMAKE_C_COMPILER=" + CONVGEN_C_COMPILER + " " + extra);
  if (configure.exit_code != 0) return configure;
  return run(cmake + " --build " + build.string());
}

// A built kernel that was never compiled: enough to render a library without NVRTC.
LibraryKernel fake_kernel(const Problem& problem, const std::string& arch, std::vector<char> image) {
  BuiltKernel k{.problem = problem, .spec = to_spec(IgemmParams{}), .source = {}, .cubin = {}, .plan = {}};
  k.source.entry = kernel_name(k.spec);
  k.cubin.arch = arch;
  k.cubin.image = std::move(image);
  k.plan = single_launch_plan({.grid = {4, 2, 1}, .block = {128, 1, 1}, .dynamic_smem_bytes = 0}, true);
  return library_kernel(k);
}

// A plan as a Winograd or sparse family would have it: a filter transform into a persistent buffer at op creation,
// a per-call scratch buffer zeroed before the main kernel.
LaunchPlan plan_with_setup() {
  LaunchPlan plan;
  plan.buffers = {{.name = "packed", .bytes = 1000, .persistent = true},
                  {.name = "scratch", .bytes = 300, .persistent = false},
                  {.name = "partial", .bytes = 64, .persistent = false}};
  plan.setup = {{.kind = LaunchStep::Kind::kernel,
                 .entry_suffix = "pack",
                 .geometry = {.grid = {8, 1, 1}, .block = {256, 1, 1}}}};
  plan.run = {{.kind = LaunchStep::Kind::zero, .buffer = "partial"},
              {.kind = LaunchStep::Kind::kernel,
               .geometry = {.grid = {4, 2, 1}, .block = {128, 1, 1}, .dynamic_smem_bytes = 65536},
               .early_launch = true}};
  return plan;
}

Gpu gpu(const std::string& name) { return load_gpu(source_dir() / "gpus" / (name + ".json")); }

TEST(EmitLibrary, CheckLibraryNameRejectsWhatIsNotACIdentifierStartingWithALetter) {
  EXPECT_NO_THROW(check_library_name("cusnn_sm90"));
  EXPECT_NO_THROW(check_library_name("Net2"));
  for (const char* bad : {"", "2net", "_net", "my-net", "my net", "net.a"}) {
    try {
      check_library_name(bad);
      ADD_FAILURE() << bad;
    } catch (const InputError& e) {
      EXPECT_EQ(std::string(e.what()), std::string("--name: '") + bad +
                                           "' must be a C identifier starting with a letter (letters, digits and "
                                           "'_'), e.g. cusnn_sm90");
    }
  }
}

TEST(EmitLibrary, DistinctProblemsNamesAProblemByEveryLayerThatHasIt) {
  const Problem a{.n = 1, .c = 8, .k = 8, .input = {1, 8, 8}, .filter = {1, 3, 3}};
  const Problem b{.n = 1, .c = 8, .k = 16, .input = {1, 8, 8}, .filter = {1, 1, 1}};
  const Suite suite{.name = "s", .layers = {{"x", a, 1}, {"y", b, 2}, {"z", a, 3}}};
  const std::vector<Layer> distinct = distinct_problems(suite);
  ASSERT_EQ(distinct.size(), 2u);
  EXPECT_EQ(distinct[0], (Layer{"x, z", a, 4}));
  EXPECT_EQ(distinct[1], (Layer{"y", b, 2}));
}

TEST(EmitLibrary, CubinArrayTextWritesSixteenBytesALineInHex) {
  std::vector<char> image(18);
  for (std::size_t i = 0; i < image.size(); ++i) image[i] = static_cast<char>(i * 15);
  EXPECT_EQ(cubin_array_text(image),
            "0x00,0x0f,0x1e,0x2d,0x3c,0x4b,0x5a,0x69,0x78,0x87,0x96,0xa5,0xb4,0xc3,0xd2,0xe1,\n0xf0,0xff,\n");
}

TEST(EmitLibrary, RenderLibraryWritesEveryFileUnderTheLibrarysNameWithNoPlaceholderOrPathLeft) {
  const Problem p{.n = 2, .c = 8, .k = 16, .input = {1, 10, 12}, .filter = {1, 3, 3}, .padding = {0, 1, 1}};
  const LibraryDescription lib{
      .name = "mynet",
      .suite = "tiny",
      .gpus = {gpu("a100_sxm4"), gpu("h100_sxm")},
      .problems = {{.name = "conv \"one\"",
                    .problem = p,
                    .kernels = {fake_kernel(p, "sm_80", {'\x7f', 'E'}), fake_kernel(p, "sm_90", {'\x7f', 'F'})}}}};
  const auto files = render_library(lib);
  std::set<std::string> names;
  for (const auto& [name, text] : files) names.insert(name);
  EXPECT_EQ(names, (std::set<std::string>{"CMakeLists.txt", "README.md", "cmake/mynetConfig.cmake.in",
                                          "example/mynet_example.cpp", "include/mynet.h", "src/mynet_kernels.cpp",
                                          "src/mynet_kernels.hpp", "src/mynet_runtime.cpp",
                                          "src/cubins/00_conv__one__sm_80.inc", "src/cubins/00_conv__one__sm_90.inc"}));
  for (const auto& [name, text] : files) {
    EXPECT_EQ(text.find("cglib"), std::string::npos) << name;
    EXPECT_EQ(text.find("CGLIB"), std::string::npos) << name;
    EXPECT_EQ(text.find(CONVGEN_SOURCE_DIR), std::string::npos) << name;
  }
  const std::string& kernels = files.at("src/mynet_kernels.cpp");
  EXPECT_NE(kernels.find("// conv \"one\": " + problem_key(p)), std::string::npos) << kernels;
  EXPECT_NE(kernels.find("// sm_80 (" + gpu("a100_sxm4").name +
                         "): igemm_m64_n64_k8_tm4_tn4_st2_sk1_v1, from convgen's default choice (untuned); 0 "
                         "registers, 0 bytes spilled, 0 bytes static shared memory; plan: zero output, kernel\n"),
            std::string::npos)
      << kernels;
  EXPECT_NE(kernels.find("const ArgBinding run_0_sm_80_args1[] = {{Arg::activation, -1}, {Arg::filter, -1}, "
                         "{Arg::output, -1}, {Arg::workspace, -1}, {Arg::bias, -1}, {Arg::residual, -1}};\n"
                         "const Step run_0_sm_80[] = {\n"
                         "    {Step::zero, nullptr, {0, 0, 0}, {0, 0, 0}, 0, nullptr, 0, -1, false},\n"
                         "    {Step::kernel, \"igemm_m64_n64_k8_tm4_tn4_st2_sk1_v1\", {4, 2, 1}, {128, 1, 1}, 0, "
                         "run_0_sm_80_args1, 6, -1, false},\n};\n"),
            std::string::npos)
      << kernels;
  EXPECT_NE(kernels.find("{80, cubin_0_sm_80, sizeof cubin_0_sm_80, \"igemm_m64_n64_k8_tm4_tn4_st2_sk1_v1\", "
                         "nullptr, 0, 0ULL, 0ULL, nullptr, 0, run_0_sm_80, 2, 0, {0, 0, 0}},"),
            std::string::npos)
      << kernels;
  EXPECT_NE(
      kernels.find(
          "{{2, 8, 16, 1, 10, 12, 1, 3, 3, 1, 1, 1, 0, 1, 1, 1, 1, 1, 1, MYNET_LAYOUT_NCHW, "
          "MYNET_PRECISION_FP32, {0}, 0},\n     \"conv \\\"one\\\"\", 15360ULL, kernels_0, 2, \"\", nullptr, nullptr, "
          "1152ULL},"),
      std::string::npos)
      << kernels;
  EXPECT_NE(kernels.find("const char* const architectures = \"sm_80, sm_90\";"), std::string::npos);
  EXPECT_EQ(files.at("src/cubins/00_conv__one__sm_90.inc"), "// igemm_m64_n64_k8_tm4_tn4_st2_sk1_v1: sm_90 for " +
                                                                problem_key(p) +
                                                                " (conv \"one\"), 2 bytes\n"
                                                                "0x7f,0x46,\n");
  EXPECT_NE(files.at("include/mynet.h").find("mynet_status mynet_conv_forward(const mynet_problem* problem"),
            std::string::npos);
}

// A problem with an epilogue: its cglib_epilogue in the table (dispatch compares it), its kernel's bias and residual
// arguments bound to the call's tensors.
TEST(EmitLibrary, RenderLibraryWritesTheEpilogueOfAProblemAndBindsItsBiasAndResidual) {
  Problem p{.n = 1, .c = 8, .k = 8, .input = {1, 8, 8}, .filter = {1, 3, 3}, .padding = {0, 1, 1}};
  p.epilogue = parse_epilogue("alpha:0.5+bias+add:2+clip:-1:6");
  LibraryKernel k = fake_kernel(p, "sm_90", {'\x7f'});
  k.entries = {{"", {"activation", "filter", "output", "workspace", "bias", "residual"}}};
  const LibraryDescription lib{.name = "net",
                               .suite = "s",
                               .gpus = {gpu("h100_sxm")},
                               .problems = {{.name = "x", .problem = p, .kernels = {k}}}};
  const std::string kernels = render_library(lib).at("src/net_kernels.cpp");
  EXPECT_NE(kernels.find("NET_LAYOUT_NCHW, NET_PRECISION_FP32, {1, 0.5, 2.0, 1, NET_ACTIVATION_CLIP, -1.0, 6.0}, 0},"),
            std::string::npos)
      << kernels;
  EXPECT_NE(kernels.find("{{Arg::activation, -1}, {Arg::filter, -1}, {Arg::output, -1}, {Arg::workspace, -1}, "
                         "{Arg::bias, -1}, {Arg::residual, -1}};\n"),
            std::string::npos)
      << kernels;
  EXPECT_NE(kernels.find("// x: " + problem_key(p) + "\n"), std::string::npos) << kernels;
}

// A problem that applies max(0, x) on load is another problem to dispatch: its entry says so (the last field of the
// cglib_problem), and the runtime compares that field and writes "_relu" into the key as convgen does.
TEST(EmitLibrary, RenderLibraryWritesReluOnLoadIntoTheProblemItDispatchesOn) {
  Problem p{.n = 1, .c = 8, .k = 8, .input = {1, 8, 8}, .filter = {1, 3, 3}, .padding = {0, 1, 1}};
  p.relu_on_load = true;
  const LibraryDescription lib{
      .name = "net",
      .suite = "s",
      .gpus = {gpu("h100_sxm")},
      .problems = {{.name = "x", .problem = p, .kernels = {fake_kernel(p, "sm_90", {'\x7f'})}}}};
  const auto files = render_library(lib);
  const std::string kernels = files.at("src/net_kernels.cpp");
  EXPECT_NE(kernels.find("NET_LAYOUT_NCHW, NET_PRECISION_FP32, {0}, 1},"), std::string::npos) << kernels;
  EXPECT_NE(kernels.find("// x: " + problem_key(p) + "\n"), std::string::npos) << kernels;
  const std::string runtime = files.at("src/net_runtime.cpp");
  EXPECT_NE(runtime.find("(a.relu_on_load != 0) == (b.relu_on_load != 0)"), std::string::npos);
  EXPECT_NE(runtime.find("if (p->relu_on_load != 0) text += \"_relu\";"), std::string::npos);
  EXPECT_NE(files.at("include/net.h").find("int relu_on_load;"), std::string::npos);
}

// A problem emitted with its own filter: where its kernel depends on the filter (weight_sparse: the nonzeros'
// positions in the code, with iv1 their values too), the library holds the nonzero mask (and those values) to check
// the filters it is given; a kernel that reads any filter (igemm) needs neither.
TEST(EmitLibrary, RenderLibraryWritesTheNonzerosOfAFilterThatAKernelDependsOn) {
  const Problem shape{.n = 1, .c = 2, .k = 2, .input = {1, 6, 6}, .filter = {1, 3, 3}, .padding = {0, 1, 1}};
  std::vector<float> values(36, 0.0f);
  values[0] = 1.5f;
  values[9] = -0.25f;
  values[35] = 3.0f;
  const Problem p = with_weights(shape, values);
  WeightSparseParams immediates;
  immediates.immediates = true;
  LibraryKernel baked = fake_kernel(p, "sm_90", {'\x7f'});
  baked.built.spec = to_spec(immediates);
  LibraryKernel patterned = fake_kernel(p, "sm_90", {'\x7f'});
  patterned.built.spec = to_spec(WeightSparseParams{});
  const LibraryKernel dense = fake_kernel(p, "sm_90", {'\x7f'});  // igemm
  for (LibraryKernel* k : {&baked, &patterned}) k->entries = dense.entries;
  const LibraryDescription lib{.name = "net",
                               .suite = "s",
                               .gpus = {gpu("h100_sxm")},
                               .problems = {{.name = "ws", .problem = p, .kernels = {baked}},
                                            {.name = "ws_pattern", .problem = p, .kernels = {patterned}},
                                            {.name = "dense", .problem = p, .kernels = {dense}}}};
  const auto files = render_library(lib);
  const std::string& kernels = files.at("src/net_kernels.cpp");
  const std::string& pattern = p.weights.pattern;
  EXPECT_NE(kernels.find("run_0_sm_90, 2, 2, {0, 0, 0}},"), std::string::npos) << kernels;
  EXPECT_NE(kernels.find("run_1_sm_90, 2, 1, {0, 0, 0}},"), std::string::npos) << kernels;
  EXPECT_NE(kernels.find("run_2_sm_90, 2, 0, {0, 0, 0}},"), std::string::npos) << kernels;
  EXPECT_NE(kernels.find("const unsigned char weight_mask_0[] = {\n#include \"filters/00_ws_mask.inc\"\n};\n"
                         "// Their values, which a kernel has in its code: a filter given for the problem must have "
                         "them\nconst float weight_values_0[] = {\n#include \"filters/00_ws_values.inc\"\n};\n"),
            std::string::npos)
      << kernels;
  EXPECT_NE(kernels.find("kernels_0, 1, \"" + pattern + "\", weight_mask_0, weight_values_0, 36ULL},"),
            std::string::npos)
      << kernels;
  EXPECT_NE(kernels.find("kernels_1, 1, \"" + pattern + "\", weight_mask_1, nullptr, 36ULL},"), std::string::npos)
      << kernels;
  EXPECT_NE(kernels.find("kernels_2, 1, \"" + pattern + "\", nullptr, nullptr, 36ULL},"), std::string::npos) << kernels;
  EXPECT_EQ(files.at("src/filters/00_ws_mask.inc"), "// the nonzeros of ws's filter (pattern " + pattern +
                                                        "), a bit per element of 36\n0x01,0x02,0x00,0x00,0x08,\n");
  EXPECT_EQ(files.at("src/filters/00_ws_values.inc"),
            "// the values of ws's filter's nonzeros, in element order\n0x1.8p+0f, -0x1p-2f, 0x1.8p+1f,\n");
  EXPECT_EQ(files.count("src/filters/01_ws_pattern_values.inc"), 0u);
  EXPECT_EQ(files.count("src/filters/02_dense_mask.inc"), 0u);

  // A problem key read back from a database carries the pattern without the values: nothing to check against.
  LibraryDescription unknown_values = lib;
  unknown_values.problems[1].problem.weights.values = nullptr;
  try {
    render_library(unknown_values);
    ADD_FAILURE() << "rendered a library that cannot check its filters";
  } catch (const InputError& e) {
    EXPECT_EQ(std::string(e.what()),
              "ws_pattern: its kernels were made for filter pattern " + pattern +
                  ", whose values the library needs to check the filters it is given, and the problem carries only "
                  "the pattern");
  }
}

TEST(EmitLibrary, RenderLibraryWritesAPlansBuffersSetupAndRunStepsWithTheirArguments) {
  const Problem p{.n = 1, .c = 8, .k = 8, .input = {1, 8, 8}, .filter = {1, 3, 3}, .padding = {0, 1, 1}};
  LibraryKernel k = fake_kernel(p, "sm_90", {'\x7f'});
  k.plan = plan_with_setup();
  k.entries = {{"pack", {"filter", "packed"}}, {"", {"activation", "packed", "output", "scratch", "partial"}}};
  k.tuned = TunedKernel{.kernel = k.built.source.entry, .median_us = 12.345, .measurement_id = 7};
  const LibraryDescription lib{.name = "net",
                               .suite = "s",
                               .gpus = {gpu("h100_sxm")},
                               .problems = {{.name = "x", .problem = p, .kernels = {k}}}};
  const auto files = render_library(lib);
  const std::string& kernels = files.at("src/net_kernels.cpp");
  const std::string entry = "igemm_m64_n64_k8_tm4_tn4_st2_sk1_v1";
  EXPECT_NE(kernels.find(entry + ", from the tuning database (median 12.35 us, measurement 7); 0 registers, 0 bytes "
                                 "spilled, 0 bytes static shared memory; plan: setup: kernel pack; run: zero partial, "
                                 "kernel; workspace 768 B; persistent 1024 B\n"),
            std::string::npos)
      << kernels;
  // Offsets are 256-byte aligned within each block: persistent and per-call buffers are counted apart.
  EXPECT_NE(kernels.find("const PlanBuffer buffers_0_sm_90[] = {\n"
                         "    {\"packed\", 1000ULL, 0ULL, true},\n"
                         "    {\"scratch\", 300ULL, 0ULL, false},\n"
                         "    {\"partial\", 64ULL, 512ULL, false},\n};\n"),
            std::string::npos)
      << kernels;
  EXPECT_NE(kernels.find("const ArgBinding setup_0_sm_90_args0[] = {{Arg::filter, -1}, {Arg::buffer, 0}};\n"
                         "const Step setup_0_sm_90[] = {\n    {Step::kernel, \"" +
                         entry + "_pack\", {8, 1, 1}, {256, 1, 1}, 0, setup_0_sm_90_args0, 2, -1, false},\n};\n"),
            std::string::npos)
      << kernels;
  EXPECT_NE(kernels.find("const ArgBinding run_0_sm_90_args1[] = {{Arg::activation, -1}, {Arg::buffer, 0}, "
                         "{Arg::output, -1}, {Arg::buffer, 1}, {Arg::buffer, 2}};\n"),
            std::string::npos)
      << kernels;
  EXPECT_NE(kernels.find("const Step run_0_sm_90[] = {\n"
                         "    {Step::zero, nullptr, {0, 0, 0}, {0, 0, 0}, 0, nullptr, 0, 2, false},\n"
                         "    {Step::kernel, \"" +
                         entry + "\", {4, 2, 1}, {128, 1, 1}, 65536, run_0_sm_90_args1, 5, -1, true},\n};\n"),
            std::string::npos)
      << kernels;
  EXPECT_NE(kernels.find("{90, cubin_0_sm_90, sizeof cubin_0_sm_90, \"" + entry +
                         "\", buffers_0_sm_90, 3, 768ULL, 1024ULL, setup_0_sm_90, 1, run_0_sm_90, 2, 0, {0, 0, 0}},"),
            std::string::npos)
      << kernels;
  const std::string& readme = files.at("README.md");
  EXPECT_NE(readme.find("every kernel is the tuning database's fastest verified one (its measured median per call)"),
            std::string::npos)
      << readme;
  EXPECT_NE(readme.find("| `" + entry +
                        "` | database, 12.35 us | setup: kernel pack; run: zero partial, kernel; workspace 768 B; "
                        "persistent 1024 B |"),
            std::string::npos)
      << readme;
}

// With the plan passes for its architecture, a zero step launches the zero pass early with the grid zero_pass_config
// gives for the bytes it clears (a plan buffer's, or the output's), and the library embeds their cubin once.
TEST(EmitLibrary, RenderLibraryLaunchesTheZeroPassForZeroStepsWhereItHasOne) {
  const Problem big{.n = 1, .c = 8, .k = 64, .input = {1, 64, 64}, .filter = {1, 3, 3}, .padding = {0, 1, 1}};
  const Problem small{.n = 1, .c = 8, .k = 8, .input = {1, 8, 8}, .filter = {1, 3, 3}, .padding = {0, 1, 1}};
  LibraryKernel zeroes_output = fake_kernel(big, "sm_90", {'\x7f'});  // 1 MiB of fp32 output zeroed first
  zeroes_output.entries = {{"", {"activation", "filter", "output"}}};
  LibraryKernel zeroes_buffer = fake_kernel(small, "sm_90", {'\x7f'});
  zeroes_buffer.plan = plan_with_setup();  // zeroes its 64-byte buffer "partial"
  zeroes_buffer.entries = {{"pack", {"filter", "packed"}},
                           {"", {"activation", "packed", "output", "scratch", "partial"}}};
  LibraryDescription lib{.name = "net",
                         .suite = "s",
                         .gpus = {gpu("h100_sxm")},
                         .problems = {{.name = "x", .problem = big, .kernels = {zeroes_output}},
                                      {.name = "y", .problem = small, .kernels = {zeroes_buffer}}},
                         .plan_passes = {{'\x01', '\x02'}}};
  const auto files = render_library(lib);
  const std::string& kernels = files.at("src/net_kernels.cpp");
  const std::string entry = "igemm_m64_n64_k8_tm4_tn4_st2_sk1_v1";
  EXPECT_NE(kernels.find("const Step run_0_sm_90[] = {\n"
                         "    {Step::zero, \"convgen_zero_bytes\", {256, 1, 1}, {256, 1, 1}, 0, nullptr, 0, -1, "
                         "true},\n"),
            std::string::npos)
      << kernels;
  EXPECT_NE(kernels.find("const Step run_1_sm_90[] = {\n"
                         "    {Step::zero, \"convgen_zero_bytes\", {1, 1, 1}, {256, 1, 1}, 0, nullptr, 0, 2, "
                         "true},\n"),
            std::string::npos)
      << kernels;
  EXPECT_NE(kernels.find("alignas(64) const unsigned char plan_passes_sm_90[] = {\n"
                         "#include \"cubins/plan_passes_sm_90.inc\"\n"
                         "};\nconst PassImage pass_images[] = {\n    {90, plan_passes_sm_90, sizeof "
                         "plan_passes_sm_90},\n};\n"),
            std::string::npos)
      << kernels;
  EXPECT_NE(kernels.find("const PassImage* const plan_passes = pass_images;\n"), std::string::npos) << kernels;
  EXPECT_EQ(files.at("src/cubins/plan_passes_sm_90.inc"),
            "// convgen_zero_bytes, convgen_relu_b32 and convgen_relu_b16: the plan passes for sm_90, 2 bytes\n"
            "0x01,0x02,\n");
  // The same library without the plan passes zeroes with a memset, and embeds none.
  lib.plan_passes.clear();
  const auto plain = render_library(lib);
  EXPECT_NE(plain.at("src/net_kernels.cpp")
                .find("    {Step::zero, nullptr, {0, 0, 0}, {0, 0, 0}, 0, nullptr, 0, -1, false},\n"),
            std::string::npos);
  EXPECT_NE(plain.at("src/net_kernels.cpp").find("const PassImage* const plan_passes = nullptr;\n"), std::string::npos);
  EXPECT_EQ(plain.count("src/cubins/plan_passes_sm_90.inc"), 0u);
}

// A ReLU prologue (relu_on_load, a kernel that does not apply it): the relu step launches the relu pass of the
// problem's element width early, into the per-call buffer, with the grid relu_pass_config gives for its bytes; the
// kernel's g_activation binds to that buffer. A library without the plan passes refuses the plan.
TEST(EmitLibrary, AReluStepLaunchesTheReluPassAndTheKernelReadsItsBuffer) {
  Problem p{.n = 1, .c = 8, .k = 8, .input = {1, 16, 16}, .filter = {1, 3, 3}, .padding = {0, 1, 1}};
  p.relu_on_load = true;
  p.precision = Precision::fp16;
  p.layout = Layout::nhwc;
  LibraryKernel k = fake_kernel(p, "sm_90", {'\x7f'});
  k.plan = with_relu_prologue(single_launch_plan({.grid = {4, 1, 1}, .block = {128, 1, 1}}), 8 * 16 * 16 * 2);
  k.entries = {{"", {"activation", "filter", "output"}}};
  LibraryDescription lib{.name = "net",
                         .suite = "s",
                         .gpus = {gpu("h100_sxm")},
                         .problems = {{.name = "x", .problem = p, .kernels = {k}}},
                         .plan_passes = {{'\x01'}}};
  const std::string kernels = render_library(lib).at("src/net_kernels.cpp");
  EXPECT_NE(kernels.find("const ArgBinding run_0_sm_90_args1[] = {{Arg::buffer, 0}, {Arg::filter, -1}, "
                         "{Arg::output, -1}};\n"),
            std::string::npos)
      << kernels;
  EXPECT_NE(kernels.find("const Step run_0_sm_90[] = {\n"
                         "    {Step::relu, \"convgen_relu_b16\", {1, 1, 1}, {256, 1, 1}, 0, nullptr, 0, 0, "
                         "true},\n"),
            std::string::npos)
      << kernels;
  EXPECT_NE(kernels.find("    {\"rectified_activation\", 4096ULL, 0ULL, false},\n"), std::string::npos) << kernels;
  lib.plan_passes.clear();
  try {
    render_library(lib);
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("its plan has a relu step and the library has no relu pass for sm_90"),
              std::string::npos)
        << e.what();
  }
}

TEST(EmitLibrary, RenderLibraryRefusesASetupStepThatBindsAPerCallTensor) {
  const Problem p{.n = 1, .c = 8, .k = 8, .input = {1, 8, 8}, .filter = {1, 3, 3}};
  LibraryKernel k = fake_kernel(p, "sm_90", {'\x7f'});
  k.plan = plan_with_setup();
  k.entries = {{"pack", {"filter", "activation"}}, {"", {"activation", "filter", "output", "workspace"}}};
  const LibraryDescription lib{.name = "net",
                               .suite = "s",
                               .gpus = {gpu("h100_sxm")},
                               .problems = {{.name = "x", .problem = p, .kernels = {k}}}};
  try {
    render_library(lib);
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()),
              "igemm_m64_n64_k8_tm4_tn4_st2_sk1_v1 (setup): setup entry igemm_m64_n64_k8_tm4_tn4_st2_sk1_v1_pack "
              "takes g_activation; setup steps run once at op creation and may bind only the filter and persistent "
              "buffers");
  }
}

// The emitted table and run time compile for a plan with setup steps, buffers and a scratch buffer zeroed by the
// zero pass.
TEST(EmitLibrary, AnEmittedPlanWithSetupAndBuffersCompiles) {
  const Problem p{.n = 1, .c = 8, .k = 8, .input = {1, 8, 8}, .filter = {1, 3, 3}, .padding = {0, 1, 1}};
  LibraryKernel k = fake_kernel(p, "sm_90", {'\x7f'});
  k.plan = plan_with_setup();
  k.entries = {{"pack", {"filter", "packed"}}, {"", {"activation", "packed", "output", "scratch", "partial"}}};
  const LibraryDescription lib{.name = "net",
                               .suite = "s",
                               .gpus = {gpu("h100_sxm")},
                               .problems = {{.name = "x", .problem = p, .kernels = {k}}},
                               .plan_passes = {{'\x7f'}}};
  const fs::path dir = temp_dir("plan");
  write_library(dir / "net", render_library(lib));
  const Result r = cmake_build(dir / "net", dir / "build", "-DNET_BUILD_EXAMPLE=OFF -DNET_INSTALL=OFF");
  EXPECT_EQ(r.exit_code, 0) << r.output;
  fs::remove_all(dir);
}

// A plan as igemm_wgmma's `tma` and `ta` have it: the main entry takes tensor maps by value, the filter's and the
// activation's, which the run time encodes over each call's tensor (the activation's over the buffer a ReLU prologue
// fills, where the plan has one), and one the kernel never reads (zeros). The table defines each map before the
// bindings that point at it; the run time compiles.
TEST(EmitLibrary, TensorMapArgumentsAreWrittenWithTheirMapsAndCompile) {
  const Problem p{.n = 1, .c = 64, .k = 64, .input = {1, 8, 8}, .filter = {1, 3, 3}, .padding = {0, 1, 1}};
  LibraryKernel k = fake_kernel(p, "sm_90", {'\x7f'});
  k.plan = single_launch_plan({.grid = {1, 2, 1}, .block = {256, 1, 1}});
  k.plan.tensor_maps = {{.name = "filter_map",
                         .tensor = "filter",
                         .spec = {.type = TensorMapSpec::Type::bfloat16,
                                  .rank = 2,
                                  .dims = {576, 64, 1, 1, 1},
                                  .strides = {1152, 0, 0, 0},
                                  .box = {64, 32, 1, 1, 1}}},
                        {.name = "activation_map",
                         .tensor = "activation",
                         .spec = {.type = TensorMapSpec::Type::float16,
                                  .rank = 4,
                                  .dims = {64, 8, 8, 1, 1},
                                  .strides = {128, 1024, 8192, 0},
                                  .im2col = true,
                                  .lower_corner = {-1, -1, 0},
                                  .upper_corner = {-1, -1, 0},
                                  .channels = 64,
                                  .pixels = 128,
                                  .element_strides = {1, 2, 2, 1, 1}}},
                        {.name = "unused_map"}};
  k.entries = {{"", {"activation", "filter", "output", "filter_map", "activation_map", "unused_map"}}};
  const LibraryDescription lib{.name = "net",
                               .suite = "s",
                               .gpus = {gpu("h100_sxm")},
                               .problems = {{.name = "x", .problem = p, .kernels = {k}}}};
  const auto files = render_library(lib);
  const std::string& kernels = files.at("src/net_kernels.cpp");
  EXPECT_NE(kernels.find("const TensorMap run_0_sm_90_args0_filter_map = {TensorMap::filter, -1, 2, 2, "
                         "{576, 64, 1, 1, 1}, {1152, 0, 0, 0}, {64, 32, 1, 1, 1}, true, {1, 1, 1, 1, 1}, false, "
                         "{0, 0, 0}, {0, 0, 0}, 0, 0};\n"
                         "const TensorMap run_0_sm_90_args0_activation_map = {TensorMap::activation, -1, 1, 4, "
                         "{64, 8, 8, 1, 1}, {128, 1024, 8192, 0}, {0, 0, 0, 0, 0}, true, {1, 2, 2, 1, 1}, true, "
                         "{-1, -1, 0}, {-1, -1, 0}, 64, 128};\n"
                         "const ArgBinding run_0_sm_90_args0[] = {{Arg::activation, -1}, {Arg::filter, -1}, "
                         "{Arg::output, -1}, {Arg::map, -1, &run_0_sm_90_args0_filter_map}, "
                         "{Arg::map, -1, &run_0_sm_90_args0_activation_map}, {Arg::map, -1, nullptr}};\n"),
            std::string::npos)
      << kernels;
  EXPECT_EQ(kernels.find("setup_0_sm_90[]"), std::string::npos) << kernels;  // no setup
  const fs::path dir = temp_dir("tensor_map");
  write_library(dir / "net", files);
  const Result r = cmake_build(dir / "net", dir / "build", "-DNET_BUILD_EXAMPLE=OFF -DNET_INSTALL=OFF");
  EXPECT_EQ(r.exit_code, 0) << r.output;
  fs::remove_all(dir);
  // With a ReLU prologue the kernel reads its buffer as the activation: the map is encoded over that buffer.
  k.plan.buffers = {{.name = "relu_activation", .bytes = 8192}};
  k.plan.activation_buffer = "relu_activation";
  const LibraryDescription relu{.name = "net",
                                .suite = "s",
                                .gpus = {gpu("h100_sxm")},
                                .problems = {{.name = "x", .problem = p, .kernels = {k}}}};
  EXPECT_NE(render_library(relu)
                .at("src/net_kernels.cpp")
                .find("const TensorMap run_0_sm_90_args0_activation_map = {TensorMap::activation, 0, 1, 4, "),
            std::string::npos);
}

TEST(EmitLibrary, ChooseKernelsTakesTheDatabasesBestAndTheDefaultOnlyWithFallback) {
  const Problem tuned{.n = 1, .c = 64, .k = 64, .input = {1, 56, 56}, .filter = {1, 3, 3}, .padding = {0, 1, 1}};
  const Problem untuned{.n = 1, .c = 8, .k = 16, .input = {1, 8, 8}, .filter = {1, 1, 1}};
  const std::vector<Layer> layers = {{"a", tuned, 1}, {"b", untuned, 1}};
  const std::vector<Gpu> gpus = {gpu("h100_sxm")};
  const std::string best = "igemm_m64_n64_k8_tm4_tn4_st2_sk1_v1";
  LibraryChoice choice{.tuned = [&](const Gpu&, const Problem& problem) -> std::optional<TunedKernel> {
                         if (problem == tuned)
                           return TunedKernel{.kernel = best, .median_us = 41.5, .measurement_id = 3};
                         return std::nullopt;
                       },
                       .fallback_default = false,
                       .source = "--db t.sqlite",
                       .tune_command = "convgen tune --shapes s.csv --db t.sqlite"};
  try {
    choose_kernels(layers, gpus, choice);
    ADD_FAILURE() << "no error";
  } catch (const InputError& e) {
    EXPECT_EQ(std::string(e.what()),
              "--db t.sqlite: no verified kernel for 1 of 2 problems x architectures:\n  b on " + gpus[0].name +
                  " (sm_90): " + problem_key(untuned) +
                  "\nfill it with `convgen tune --shapes s.csv --db t.sqlite` on each GPU named, or pass --fallback "
                  "default to take convgen's default choice for these");
  }
  choice.fallback_default = true;
  const auto chosen = choose_kernels(layers, gpus, choice);
  ASSERT_EQ(chosen.size(), 1u);
  ASSERT_EQ(chosen[0].size(), 2u);
  EXPECT_EQ(chosen[0][0], (ChosenKernel{.spec = parse_kernel_name(best),
                                        .tuned = TunedKernel{.kernel = best, .median_us = 41.5, .measurement_id = 3}}));
  EXPECT_EQ(chosen[0][1], (ChosenKernel{.spec = default_choice(untuned, gpus[0]), .tuned = std::nullopt}));
  // Without a database every kernel is the default choice.
  const auto defaults = choose_kernels(layers, gpus, {});
  EXPECT_EQ(defaults[0][0], (ChosenKernel{.spec = default_choice(tuned, gpus[0]), .tuned = std::nullopt}));
}

TEST(EmitLibrary, BuildLibraryRefusesTwoGpusOfOneArchitecture) {
  JitCache cache(std::nullopt);
  ThreadPool pool(1);
  const Suite suite{.name = "s", .layers = {{"x", Problem{.c = 8, .k = 8, .input = {1, 8, 8}}, 1}}};
  try {
    build_library("net", suite, {gpu("h100_sxm"), gpu("h200")}, cache, pool);
    ADD_FAILURE() << "no error";
  } catch (const InputError& e) {
    EXPECT_EQ(std::string(e.what()), "--gpu: " + gpu("h100_sxm").name + " and " + gpu("h200").name +
                                         " are both sm_90: the library holds one kernel per architecture");
  }
  EXPECT_EQ(cache.stats().misses, 0);
}

TEST(EmitLibrary, HeaderCompilesAsStrictCAndAsCxxWithNoCudaHeader) {
  const fs::path dir = temp_dir("header");
  std::ofstream(dir / "mynet.h", std::ios::binary) << skeleton_file("cglib.h", "mynet");
  const std::string flags = " -Wall -Wextra -pedantic -Werror -fsyntax-only ";
  const Result c = run(std::string(CONVGEN_C_COMPILER) + " -std=c99" + flags + "-x c " + (dir / "mynet.h").string());
  EXPECT_EQ(c.exit_code, 0) << c.output;
  const Result cxx =
      run(std::string(CONVGEN_CXX_COMPILER) + " -std=c++17" + flags + "-x c++ " + (dir / "mynet.h").string());
  EXPECT_EQ(cxx.exit_code, 0) << cxx.output;
}

TEST(EmitLibraryCli, BadNamesAndFallbackWithoutADatabaseAreRefusedWithClearErrors) {
  const std::string shapes = (source_dir() / "shapes" / "cusnn.csv").string();
  Result r = run(convgen_binary() + " emit-lib --shapes " + shapes + " --gpu h100_sxm --name 9x --out /tmp/x");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.output,
            "convgen: error: --name: '9x' must be a C identifier starting with a letter (letters, digits and '_'), "
            "e.g. cusnn_sm90\n");
  r = run(convgen_binary() + " emit-lib --shapes " + shapes +
          " --gpu h100_sxm --name x --out /tmp/x --fallback default");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.output,
            "convgen: error: --fallback: only with --db (without a database every kernel is the default choice)\n");
  r = run(convgen_binary() + " emit-lib --shapes " + shapes +
          " --gpu h100_sxm --name x --out /tmp/x --db /nonexistent.sqlite");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.output, "convgen: error: --db /nonexistent.sqlite: no such tuning database\n");
}

// --precision fp16 --layout nhwc: the library's problems are fp16 channels-last, served by tensor-core kernels.
TEST(EmitLibraryCli, PrecisionAndLayoutReachEveryProblemOfTheLibrary) {
  const fs::path dir = temp_dir("fp16");
  {
    std::ofstream csv(dir / "one.csv");
    csv << "name,n,c,k,h,w,r,s,stride,pad,count\nres_64to64_14,1,64,64,14,14,3,3,1,1,1\n";
  }
  const Result r = run(convgen_binary() + " emit-lib --no-cache --shapes " + (dir / "one.csv").string() +
                       " --gpu h100_sxm --name half16 --precision fp16 --layout nhwc --out " + (dir / "lib").string());
  ASSERT_EQ(r.exit_code, 0) << r.output;
  std::ifstream header(dir / "lib" / "include" / "half16.h");
  const std::string text((std::istreambuf_iterator<char>(header)), std::istreambuf_iterator<char>());
  EXPECT_NE(text.find("HALF16_PRECISION_FP16"), std::string::npos);
  EXPECT_NE(r.output.find("igemm_wgmma_"), std::string::npos) << r.output;  // fp16 channels-last on sm_90
  std::ifstream cubin(dir / "lib" / "src" / "cubins" / "00_res_64to64_14_sm_90.inc");
  const std::string table((std::istreambuf_iterator<char>(cubin)), std::istreambuf_iterator<char>());
  EXPECT_NE(table.find("_nhwc_fp16"), std::string::npos) << table.substr(0, 400);
}

// A database the test writes knows one of two layers: emit-lib refuses without --fallback (naming the missing layer
// and the tune command) and with it builds the tuned kernel for one and the default for the other, saying which.
TEST(EmitLibraryCli, DbBuildsTheDatabasesBestKernelsAndSaysWhichCameFromIt) {
  const fs::path dir = temp_dir("db");
  {
    std::ofstream csv(dir / "two.csv");
    csv << "name,n,c,k,h,w,r,s,stride,pad,count\n"
           "res_64to64_56,1,64,64,56,56,3,3,1,1,1\n"
           "res_512to512_7,1,512,512,7,7,3,3,1,1,1\n";
  }
  const Suite suite = load_suite(dir / "two.csv");
  const std::string best = "igemm_m64_n64_k8_tm4_tn4_st2_sk1_v1";
  {
    TuningDb db = TuningDb::open(dir / "tuned.sqlite");
    db.record(testing_tuner::measured(gpu("h100_sxm"), suite.layers[0].problem, best, 41.5));
    db.record(
        testing_tuner::measured(gpu("h100_sxm"), suite.layers[0].problem, "igemm_m32_n64_k8_tm4_tn4_st2_sk1_v1", 50.0));
    db.record(testing_tuner::measured(gpu("h200"), suite.layers[1].problem, best, 10.0));  // another GPU
  }
  const std::string args = "CONVGEN_CACHE_DIR=" + (dir / "cache").string() + " " + convgen_binary() +
                           " emit-lib --shapes " + (dir / "two.csv").string() + " --gpu h100_sxm --name tuned --out " +
                           (dir / "tuned").string() + " --db " + (dir / "tuned.sqlite").string();
  Result r = run(args);
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.output, "convgen: error: --db " + (dir / "tuned.sqlite").string() +
                          ": no verified kernel for 1 of 2 problems x architectures:\n  res_512to512_7 on " +
                          gpu("h100_sxm").name + " (sm_90): " + problem_key(suite.layers[1].problem) +
                          "\nfill it with `convgen tune --shapes " + (dir / "two.csv").string() + " --db " +
                          (dir / "tuned.sqlite").string() +
                          "` on each GPU named, or pass --fallback default to take convgen's default choice for "
                          "these\n");
  EXPECT_FALSE(fs::exists(dir / "tuned"));

  r = run(args + " --fallback default");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("1 kernels from the tuning database, 1 default"), std::string::npos) << r.output;
  const std::string readme = read(dir / "tuned" / "README.md");
  EXPECT_NE(readme.find("1 of 2 kernels are the tuning database's fastest verified ones"), std::string::npos) << readme;
  EXPECT_NE(readme.find("| res_64to64_56 | 64->64 3x3 s1 p1 at 56x56 -> 56x56, n1 | `" + best +
                        "` | database, 41.50 us | kernel |"),
            std::string::npos)
      << readme;
  const std::string fallback = kernel_name(default_choice(suite.layers[1].problem, gpu("h100_sxm")));
  EXPECT_NE(readme.find("| res_512to512_7 | 512->512 3x3 s1 p1 at 7x7 -> 7x7, n1 | `" + fallback + "` | default |"),
            std::string::npos)
      << readme;
  const std::string kernels = read(dir / "tuned" / "src" / "tuned_kernels.cpp");
  EXPECT_NE(kernels.find(best + ", from the tuning database (median 41.50 us, measurement 1);"), std::string::npos)
      << kernels;
  EXPECT_NE(kernels.find(fallback + ", from convgen's default choice (untuned);"), std::string::npos) << kernels;

  // Records made on a device that names itself otherwise than the descriptor (another board of the same chip: same
  // architecture and SMs): the error says whose records the database has and how to name that GPU.
  Gpu device = gpu("h200");
  device.name = "NVIDIA H200 NVL";
  {
    TuningDb db = TuningDb::open(dir / "device.sqlite");
    db.record(testing_tuner::measured(device, suite.layers[0].problem, best, 41.5));
  }
  r = run("CONVGEN_CACHE_DIR=" + (dir / "cache").string() + " " + convgen_binary() + " emit-lib --shapes " +
          (dir / "two.csv").string() + " --gpu h200 --name tuned --out " + (dir / "device").string() + " --db " +
          (dir / "device.sqlite").string());
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(
      r.output.find("\nthe database has no records for " + gpu("h200").name +
                    " but has some for NVIDIA H200 NVL (sm_90, 132 SMs): to use them, pass --gpu a descriptor named "
                    "as that GPU reports itself (`convgen gpu detect --out gpu.json` on it)\n"),
      std::string::npos)
      << r.output;
  fs::remove_all(dir);
}

// Emits three cusnn layers for sm_80 and sm_90 (named cusnn_sm90, the name examples/ consumes), builds the project,
// runs its example, installs it, and builds and runs examples/ against the installed package.
TEST(EmitLibraryCli, EmittedProjectBuildsItsExampleRunsAndAnInstalledConsumerLinksIt) {
  const fs::path dir = temp_dir("project");
  {
    std::ofstream csv(dir / "three.csv");
    csv << "name,n,c,k,h,w,r,s,stride,pad,count\n"
           "dense_128to32_56,1,128,32,56,56,3,3,1,1,1\n"
           "res_64to64_56,1,64,64,56,56,3,3,1,1,1\n"
           "res_512to512_7,1,512,512,7,7,3,3,1,1,1\n";
  }
  const fs::path lib = dir / "cusnn_sm90";
  Result r =
      run("CONVGEN_CACHE_DIR=" + (dir / "cache").string() + " " + convgen_binary() + " emit-lib --shapes " +
          (dir / "three.csv").string() + " --gpu a100_sxm4 --gpu h100_sxm --name cusnn_sm90 --out " + lib.string());
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("emitted cusnn_sm90 (3 problems x 2 architectures, 6 compiled, 0 from cache; 0 kernels "
                          "from the tuning database, 6 default)"),
            std::string::npos)
      << r.output;

  r = cmake_build(lib, lib / "build");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  r = run((lib / "build" / "cusnn_sm90_example").string());
  EXPECT_NE(r.output.find("cusnn_sm90: 3 problems\n"), std::string::npos) << r.output;
  if (cuda_available()) {
    EXPECT_TRUE(r.exit_code == 0 || r.output.find("CUSNN_SM90_ERROR_NO_KERNEL_FOR_ARCH") != std::string::npos)
        << r.output;
  } else {
    // No GPU here: the example must say so and exit with its documented status 2, not crash.
    EXPECT_EQ(r.exit_code, 2) << r.output;
    EXPECT_TRUE(r.output.find("cusnn_sm90_example: CUSNN_SM90_ERROR_NO_DRIVER: the CUDA driver could not be "
                              "loaded: libcuda.so.1 could not be loaded (") != std::string::npos ||
                r.output.find("cusnn_sm90_example: CUSNN_SM90_ERROR_NO_DEVICE: no CUDA device: ") != std::string::npos)
        << r.output;
  }

  r = run(std::string(CONVGEN_CMAKE_COMMAND) + " --install " + (lib / "build").string() + " --prefix " +
          (dir / "prefix").string());
  ASSERT_EQ(r.exit_code, 0) << r.output;
  r = cmake_build(source_dir() / "examples", dir / "consumer", "-DCMAKE_PREFIX_PATH=" + (dir / "prefix").string());
  ASSERT_EQ(r.exit_code, 0) << r.output;
  r = run((dir / "consumer" / "consumer").string());
  const std::string key = "n3_c128_k32_i1x56x56_f1x3x3_s1x1x1_p0x1x1_d1x1x1_g1_nchw_fp32";
  EXPECT_NE(r.output.find("res_512to512_7       n1_c512_k512_i1x7x7_f1x3x3_s1x1x1_p0x1x1_d1x1x1_g1_nchw_fp32\n"),
            std::string::npos)
      << r.output;
  EXPECT_NE(r.output.find("CUSNN_SM90_ERROR_UNKNOWN_PROBLEM: no kernel for this problem: problem " + key +
                          " was not emitted into cusnn_sm90 (it serves 3 problems; see cusnn_sm90_problem_at)\n"),
            std::string::npos)
      << r.output;
  EXPECT_NE(r.output.find("fallback asked for " + key +
                          "\nwith a fallback: CUSNN_SM90_ERROR_UNKNOWN_PROBLEM: no "
                          "kernel for this problem (1 call)\n"),
            std::string::npos)
      << r.output;
  if (!cuda_available()) {
    EXPECT_EQ(r.exit_code, 2) << r.output;
  }
  fs::remove_all(dir);
}

// A C++ initializer list of floats that reads back exactly.
std::string float_list(const std::vector<float>& values) {
  std::string out;
  for (const float v : values) out += fmt::format("{:a}f, ", v);
  return out;
}

std::string replace_all(std::string text, const std::string& from, const std::string& to) {
  for (std::size_t at = text.find(from); at != std::string::npos; at = text.find(from, at + to.size()))
    text.replace(at, from.size(), to);
  return text;
}

// The same as fp16 bits.
std::string half_list(const std::vector<float>& values) {
  std::string out;
  for (const float v : values) out += fmt::format("0x{:04x}, ", float_to_half(v));
  return out;
}

// Emits the suite `csv` (its text) with `emit_args` as library `name` for sm_90, builds and installs it, then builds
// and runs a program linking it that prints each problem's name and weight pattern, the status and message of
// <name>_check_filter for each of `filters` (name, initializer of `element`s) against problem 0, and those of a
// one-shot call of problem 0. Returns the program's result.
Result emit_and_check_filters(const fs::path& dir, const std::string& name, const std::string& csv,
                              const std::string& emit_args, const std::string& element,
                              const std::vector<std::pair<std::string, std::string>>& filters) {
  std::ofstream(dir / "suite.csv") << csv;
  const fs::path lib = dir / name;
  Result r =
      run("CONVGEN_CACHE_DIR=" + (dir / "cache").string() + " " + convgen_binary() + " emit-lib --shapes " +
          (dir / "suite.csv").string() + " --gpu h100_sxm --name " + name + " --out " + lib.string() + " " + emit_args);
  if (r.exit_code != 0) return r;
  if ((r = cmake_build(lib, lib / "build")).exit_code != 0) return r;
  r = run(std::string(CONVGEN_CMAKE_COMMAND) + " --install " + (lib / "build").string() + " --prefix " +
          (dir / "prefix").string());
  if (r.exit_code != 0) return r;
  fs::create_directories(dir / "checker");
  std::ofstream(dir / "checker" / "CMakeLists.txt")
      << "cmake_minimum_required(VERSION 3.21)\nproject(checker LANGUAGES C CXX)\nfind_package(" << name
      << " REQUIRED)\nadd_executable(checker checker.cpp)\ntarget_link_libraries(checker PRIVATE " << name
      << "::" << name << ")\n";
  std::string program = "#include <cstdio>\n#include \"" + name + ".h\"\n";
  for (std::size_t i = 0; i < filters.size(); ++i)
    program += fmt::format("const {} filter{}[] = {{{}}};\n", element, i, filters[i].second);
  program +=
      "int main() {\n"
      "  for (size_t i = 0; i < cglib_problem_count(); ++i)\n"
      "    std::printf(\"%s %s\\n\", cglib_problem_name(i), cglib_problem_weight_pattern(i));\n"
      "  const cglib_problem* p = cglib_problem_at(0);\n";
  for (std::size_t i = 0; i < filters.size(); ++i)
    program += fmt::format(
        "  {{\n    const cglib_status status = cglib_check_filter(p, filter{});\n"
        "    std::printf(\"{}: %s | %s\\n\", cglib_status_string(status), cglib_last_error_message());\n  }}\n",
        i, filters[i].first);
  program +=
      "  const cglib_status status = cglib_conv_forward(p, 1, 1, 1, nullptr);\n"
      "  std::printf(\"forward: %s | %s\\n\", cglib_status_string(status), cglib_last_error_message());\n}\n";
  std::ofstream(dir / "checker" / "checker.cpp") << replace_all(program, "cglib", name);
  r = cmake_build(dir / "checker", dir / "checker" / "build", "-DCMAKE_PREFIX_PATH=" + (dir / "prefix").string());
  if (r.exit_code != 0) return r;
  return run((dir / "checker" / "build" / "checker").string());
}

// "element 17 (k 0, c 1, r 2, s 2)" of a K C 3 3 filter with `c` channels.
std::string kcrs_element(std::size_t i, std::size_t c) {
  return fmt::format("element {} (k {}, c {}, r {}, s {})", i, i / (9 * c), i / 9 % c, i / 3 % 3, i % 3);
}

// The first element zero in every one of `filters`.
std::size_t first_zero_in_all(const std::vector<const std::vector<float>*>& filters) {
  for (std::size_t i = 0; i < filters[0]->size(); ++i)
    if (std::all_of(filters.begin(), filters.end(), [&](const std::vector<float>* f) { return (*f)[i] == 0.0f; }))
      return i;
  return filters[0]->size();
}

// emit-lib --weights: two layers of one shape with different pruned filters get a kernel each (weight_sparse, its
// nonzeros' positions in the code). The built library tells their filters apart, refuses one that neither kernel was
// made for (naming the element), and sends a one-shot call to an op, which checks the filter once. No GPU needed:
// cglib_check_filter reads host memory.
TEST(EmitLibraryCli, ALibraryEmittedWithWeightsChecksTheFiltersItIsGiven) {
  const fs::path dir = temp_dir("weights");
  const Problem shape{.n = 1, .c = 4, .k = 8, .input = {1, 6, 6}, .filter = {1, 3, 3}, .padding = {0, 1, 1}};
  const std::vector<float> a = pruned_random_filter(shape, 0.9, 1);
  const std::vector<float> b = pruned_random_filter(shape, 0.9, 2);
  fs::create_directories(dir / "w");
  std::ofstream(dir / "w" / "a.npy", std::ios::binary) << npy_bytes({.shape = {8, 4, 3, 3}, .values = a});
  std::ofstream(dir / "w" / "b.npy", std::ios::binary) << npy_bytes({.shape = {8, 4, 3, 3}, .values = b});
  std::vector<float> c = a;  // a's filter with a nonzero where neither a's nor b's has one
  const std::size_t extra = first_zero_in_all({&a, &b});
  ASSERT_LT(extra, c.size());
  c[extra] = 0.5f;

  const Result r = emit_and_check_filters(
      dir, "wlib", "name,n,c,k,h,w,r,s,stride,pad,count\na,1,4,8,6,6,3,3,1,1,1\nb,1,4,8,6,6,3,3,1,1,1\n",
      "--weights " + (dir / "w").string(), "float", {{"a", float_list(a)}, {"b", float_list(b)}, {"c", float_list(c)}});
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const std::string pattern_a = weight_pattern_hash(shape, a), pattern_b = weight_pattern_hash(shape, b);
  ASSERT_NE(pattern_a, pattern_b);
  const std::string key = problem_key(shape);
  EXPECT_NE(r.output.find("a " + pattern_a + "\nb " + pattern_b + "\n"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("a: WLIB_SUCCESS: no error | \n"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("b: WLIB_SUCCESS: no error | \n"), std::string::npos) << r.output;
  // Against a's kernel the first difference is the extra nonzero (c has a's values elsewhere, so also where a's kernel
  // has them in its code); against b's, whichever comes first of its kinds.
  EXPECT_NE(r.output.find("c: WLIB_ERROR_FILTER_MISMATCH: the filter is not one the problem's kernels were made for | "
                          "wlib_check_filter: problem " +
                          key +
                          ": the filter given is not one this library's kernels for the problem were made for "
                          "(emit-lib --weights):\n  layer a (filter pattern " +
                          pattern_a + "): " + kcrs_element(extra, 4) +
                          " is 0.5 where the filter its kernel was made for has a zero\n  layer b (filter pattern " +
                          pattern_b + "): element "),
            std::string::npos)
      << r.output;
  EXPECT_NE(r.output.find("forward: WLIB_ERROR_NEEDS_OP: the problem's plan needs an op (setup, workspace or a filter "
                          "to check) | problem " +
                          key + " (a): its kernels were made for the layer's own filter (pattern " + pattern_a +
                          "); run it through wlib_op_create, which checks the filter once, and wlib_op_run\n"),
            std::string::npos)
      << r.output;
  fs::remove_all(dir);
}

// --weight-sparsity 2:4 in fp16: sparse24_tc's pack keeps 2 values of 4, so the library refuses an fp16 filter with a
// nonzero outside the pattern, a subnormal one included (the check reads the filter's own bits).
TEST(EmitLibraryCli, ATwoFourLibraryInFp16ChecksTheHalfFilterItIsGiven) {
  const fs::path dir = temp_dir("two_four");
  Problem shape{.n = 1, .c = 16, .k = 32, .input = {1, 6, 6}, .filter = {1, 3, 3}, .padding = {0, 1, 1}};
  shape.precision = Precision::fp16;
  const std::vector<float> a = two_four_pruned_random_filter(shape, 7);
  const std::size_t extra = first_zero_in_all({&a});
  ASSERT_LT(extra, a.size());
  std::vector<float> tiny = a, large = a;
  tiny[extra] = 5.9604645e-8f;  // the smallest fp16 subnormal, 2^-24
  large[extra] = -2.0f;
  const Result r =
      emit_and_check_filters(dir, "tlib", "name,n,c,k,h,w,r,s,stride,pad,count\nsparse,1,16,32,6,6,3,3,1,1,1\n",
                             "--weight-sparsity 2:4 --seed 7 --precision fp16", "unsigned short",
                             {{"a", half_list(a)}, {"tiny", half_list(tiny)}, {"large", half_list(large)}});
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const std::string head =
      "TLIB_ERROR_FILTER_MISMATCH: the filter is not one the problem's kernels were made for | "
      "tlib_check_filter: problem " +
      problem_key(shape) +
      ": the filter given is not one this library's kernels for the problem were made for "
      "(emit-lib --weights):\n  layer sparse (filter pattern " +
      weight_pattern_hash(shape, a) + "): " + kcrs_element(extra, 16);
  EXPECT_NE(r.output.find("a: TLIB_SUCCESS: no error | \n"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("tiny: " + head + " is 5.9604645e-08 where the filter its kernel was made for has a zero\n"),
            std::string::npos)
      << r.output;
  EXPECT_NE(r.output.find("large: " + head + " is -2 where the filter its kernel was made for has a zero\n"),
            std::string::npos)
      << r.output;
  fs::remove_all(dir);
}

// generated/cusnn_sm90, generated/weight_twins_sm90 and generated/relu_on_load_sm90 must be what
// scripts/regen-examples.sh writes today, byte for byte.
TEST(EmitLibraryCli, CheckedInExampleLibrariesAreWhatRegenExamplesWritesToday) {
  const fs::path dir = temp_dir("regen");
  const Result r = run("CONVGEN=" + convgen_binary() + " CONVGEN_CACHE_DIR=" + (dir / "cache").string() + " sh " +
                       (source_dir() / "scripts" / "regen-examples.sh").string() + " " + dir.string());
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const auto files_under = [](const fs::path& root) {
    std::set<std::string> files;
    if (!fs::exists(root)) return files;
    for (const auto& entry : fs::recursive_directory_iterator(root)) {
      const std::string relative = fs::relative(entry.path(), root).generic_string();
      if (relative == "build" || relative.starts_with("build/")) continue;  // a local build of the example
      if (entry.is_regular_file()) files.insert(relative);
    }
    return files;
  };
  for (const std::string library : {"cusnn_sm90", "weight_twins_sm90", "relu_on_load_sm90", "tensor_maps_sm90"}) {
    const std::set<std::string> want = files_under(dir / library);
    EXPECT_FALSE(want.empty()) << library << " was not emitted";
    const std::set<std::string> have = files_under(source_dir() / "generated" / library);
    const std::string fix = "; run scripts/regen-examples.sh (after building convgen) and commit generated/" + library;
    for (const std::string& f : want)
      if (!have.contains(f)) ADD_FAILURE() << "generated/" << library << "/" << f << " is missing" << fix;
    for (const std::string& f : have)
      if (!want.contains(f)) ADD_FAILURE() << "generated/" << library << "/" << f << " is no longer emitted" << fix;
    for (const std::string& f : want)
      if (have.contains(f) && read(dir / library / f) != read(source_dir() / "generated" / library / f))
        ADD_FAILURE() << "generated/" << library << "/" << f << " is stale" << fix;
  }
  fs::remove_all(dir);
}

// generated/tensor_maps_sm90 exists to run tensor maps passed by value through an emitted library on the GPU (its
// example, the EmitLibraryExample GPU test): its kernels must bind the filter's map and the activation's, tiled (`ta1`)
// and in im2col mode (`ta2`). A change of the default choices that loses one says so here.
TEST(EmitLibraryCli, TheTensorMapsExampleLibraryBindsTheFiltersAndBothKindsOfActivationMaps) {
  const std::string kernels =
      read(source_dir() / "generated" / "tensor_maps_sm90" / "src" / "tensor_maps_sm90_kernels.cpp");
  const auto count = [&](std::string_view what) {
    std::size_t n = 0;
    for (std::size_t at = kernels.find(what); at != std::string::npos; at = kernels.find(what, at + 1)) ++n;
    return n;
  };
  EXPECT_GE(count("= {TensorMap::filter, -1, "), 3u);
  EXPECT_GE(count("= {TensorMap::activation, -1, "), 2u);
  EXPECT_GE(count("_ta1_"), 1u);  // the kernel names in the comments
  EXPECT_GE(count("_ta2_"), 1u);
  EXPECT_GE(count("_cr1_"), 1u);  // a split in a cluster
}

}  // namespace
}  // namespace convgen
