// cli_test: the convgen program end to end on this machine: help, analyze, generate, and clean errors.
#include <sys/wait.h>

#include <array>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include "support/run_convgen.hpp"
#include "support/scratch_dir.hpp"

#include "runtime/driver.hpp"

namespace convgen {
namespace {

using Result = testing_support::CommandResult;
using testing_support::run_convgen;

std::string shapes(const char* name) { return std::string(CONVGEN_SOURCE_DIR) + "/shapes/" + name; }

TEST(Cli, HelpListsEverySubcommand) {
  const Result r = run_convgen("--help");
  EXPECT_EQ(r.exit_code, 0) << r.output;
  for (const char* sub : {"generate", "analyze", "gpu", "run", "import", "fold"})
    EXPECT_NE(r.output.find(sub), std::string::npos) << sub;
}

TEST(Cli, AnalyzePrintsEveryLayerAndTheNetworkTotals) {
  const Result r = run_convgen("analyze --shapes " + shapes("cusnn.csv") + " --gpu h100_sxm --batch 8");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("cusnn on NVIDIA H100"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("total"), std::string::npos) << r.output;
}

// --defaults shows why the default choice is what it is: every family in default_choice's order, the first that
// serves the problem being the choice; --problem takes keys instead of a shapes file.
TEST(Cli, AnalyzeDefaultsListsEveryFamilyInTheOrderOfTheDefaultChoice) {
  const std::string stem = "n1_c3_k64_i1x224x224_f1x7x7_s1x2x2_p0x3x3_d1x1x1_g1_nchw_fp32";
  const std::string strided = "n1_c64_k64_i1x56x56_f1x3x3_s1x2x2_p0x1x1_d1x1x1_g1_nchw_fp32";
  const Result r = run_convgen("analyze --gpu h100_sxm --defaults --problem " + stem + " --problem " + strided);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const std::size_t stem_at = r.output.find(stem + " " + stem + " -> stem_");
  const std::size_t strided_at = r.output.find(strided + " " + strided + " -> act_sparse_");
  ASSERT_NE(stem_at, std::string::npos) << r.output;
  ASSERT_NE(strided_at, std::string::npos) << r.output;
  // The stem's block: stem (rank -1) before igemm (0) before direct (1), fp32 problems refused by the tensor-core
  // families, with why.
  const std::string block = r.output.substr(stem_at, strided_at - stem_at);
  EXPECT_LT(block.find(" stem "), block.find(" igemm ")) << block;
  EXPECT_LT(block.find(" igemm "), block.find(" direct ")) << block;
  EXPECT_NE(block.find("igemm_tc       -  (precision fp32 is not supported by igemm_tc"), std::string::npos) << block;
  const Result both = run_convgen("analyze --gpu h100_sxm --shapes " + shapes("cusnn.csv") + " --problem " + stem);
  EXPECT_EQ(both.exit_code, 108) << both.output;  // CLI11's ExcludesError
  EXPECT_NE(both.output.find("excludes"), std::string::npos) << both.output;
  const Result neither = run_convgen("analyze --gpu h100_sxm");
  EXPECT_EQ(neither.exit_code, 1);
  EXPECT_EQ(neither.output, "convgen: error: analyze: give --shapes FILE or --problem KEY\n");
}

TEST(Cli, AnalyzeLayerTakesOneLayerAndNamesAMissingOne) {
  const Result r =
      run_convgen("analyze --shapes " + shapes("cusnn.csv") + " --gpu h100_sxm --layer dense_128to32_28");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("dense_128to32_28"), std::string::npos) << r.output;
  EXPECT_EQ(r.output.find("dense_128to32_56"), std::string::npos) << r.output;
  const Result missing = run_convgen("analyze --shapes " + shapes("cusnn.csv") + " --gpu h100_sxm --layer conv9");
  EXPECT_EQ(missing.exit_code, 1);
  EXPECT_EQ(missing.output, "convgen: error: cusnn: no layer named 'conv9'\n");
}

// --precision and --layout reach analyze: the floor is the precision's tensor-core peak, and a bad value is named.
TEST(Cli, AnalyzeTakesThePrecisionAndLayoutOfEveryLayer) {
  const Result r =
      run_convgen("analyze --shapes " + shapes("cusnn.csv") + " --gpu h100_sxm --precision fp16 --layout nhwc");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("; fp16 "), std::string::npos) << r.output;
  const Result fp32 = run_convgen("analyze --shapes " + shapes("cusnn.csv") + " --gpu h100_sxm");
  EXPECT_NE(fp32.output.find("; fp32 "), std::string::npos) << fp32.output;
  EXPECT_NE(r.output, fp32.output);  // the floors differ: 990 against 67 TFLOP/s
  const Result bad = run_convgen("analyze --shapes " + shapes("cusnn.csv") + " --gpu h100_sxm --precision fp8");
  EXPECT_EQ(bad.exit_code, 1);
  EXPECT_EQ(bad.output, "convgen: error: --precision: unknown 'fp8', expected one of fp32, tf32, fp16, bf16\n");
}

TEST(Cli, GenerateWritesSourceCubinAndManifestForEachLayer) {
  const auto out = testing_support::process_scratch() / "convgen_cli_test_generate";
  std::filesystem::remove_all(out);
  const Result r = run_convgen("generate --no-cache --shapes " + shapes("resnet20_cifar.csv") +
                               " --gpu a100_sxm4 --out " + out.string());
  ASSERT_EQ(r.exit_code, 0) << r.output;
  std::ifstream in(out / "manifest.json");
  const auto manifest = nlohmann::json::parse(in);
  EXPECT_EQ(manifest["arch"], "sm_80");
  ASSERT_GT(manifest["kernels"].size(), 3u);
  EXPECT_TRUE(manifest["failures"].empty());
  for (const auto& k : manifest["kernels"]) {
    EXPECT_TRUE(std::filesystem::exists(out / k["source"].get<std::string>())) << k;
    EXPECT_GT(std::filesystem::file_size(out / k["cubin"].get<std::string>()), 0u) << k;
    EXPECT_GT(k["registers"].get<int>(), 0) << k;
  }
  std::filesystem::remove_all(out);
}

// On sm_90 channels-last tf32, fp16 and bf16 go to igemm_wgmma (compiled for sm_90a); every precision on sm_80 to
// igemm_tc.
TEST(Cli, GenerateInTf32Fp16AndBf16ChoosesTheTensorCoreFamilyForSm80AndSm90) {
  const auto out = testing_support::process_scratch() / "convgen_cli_test_generate_precision";
  for (const char* gpu : {"a100_sxm4", "h100_sxm"})
    for (const char* precision : {"tf32", "fp16", "bf16"}) {
      std::filesystem::remove_all(out);
      const Result r = run_convgen(std::string("generate --no-cache --shapes ") + shapes("cusnn.csv") +
                                   " --layer res_64to64_56 --layout nhwc --precision " + precision + " --gpu " + gpu +
                                   " --out " + out.string());
      ASSERT_EQ(r.exit_code, 0) << r.output;
      std::ifstream in(out / "manifest.json");
      const auto manifest = nlohmann::json::parse(in);
      ASSERT_EQ(manifest["kernels"].size(), 1u) << r.output;
      const auto& k = manifest["kernels"][0];
      const bool wgmma = std::string(gpu) == "h100_sxm";
      EXPECT_EQ(k["family"], wgmma ? "igemm_wgmma" : "igemm_tc") << k;
      EXPECT_NE(k["problem"].get<std::string>().find(std::string("_nhwc_") + precision), std::string::npos) << k;
      EXPECT_GT(k["registers"].get<int>(), 0) << k;
      EXPECT_EQ(k["spill_store_bytes"].get<int>(), 0) << k;
    }
  std::filesystem::remove_all(out);
}

// --relu-on-load on a GPU without a GPU: a sparse 3x3 layer takes act_sparse's relu1 kernel (no prologue), the same
// layer in fp16 a tensor-core kernel behind the ReLU prologue, and the manifest says which.
TEST(Cli, GenerateWithReluOnLoadSaysWhichKernelsRunBehindTheReluPrologue) {
  const auto out = testing_support::process_scratch() / "convgen_cli_test_generate_relu";
  for (const char* precision : {"fp32", "fp16"}) {
    std::filesystem::remove_all(out);
    const Result r = run_convgen(std::string("generate --no-cache --shapes ") + shapes("cusnn.csv") +
                                 " --layer res_64to64_56 --act-sparsity 0.5 --relu-on-load --precision " + precision +
                                 " --gpu h100_sxm --out " + out.string());
    ASSERT_EQ(r.exit_code, 0) << r.output;
    std::ifstream in(out / "manifest.json");
    const auto manifest = nlohmann::json::parse(in);
    ASSERT_EQ(manifest["kernels"].size(), 1u) << r.output;
    const auto& k = manifest["kernels"][0];
    const bool fp32 = std::string(precision) == "fp32";
    EXPECT_NE(k["problem"].get<std::string>().find("_z50_relu"), std::string::npos) << k;
    EXPECT_EQ(k["relu_prologue"], !fp32) << k;
    if (fp32) {
      EXPECT_NE(k["kernel"].get<std::string>().find("_relu1_"), std::string::npos) << k;
    }
    EXPECT_EQ(k["launches"].get<int>() >= 2, !fp32 || k["zero_output_first"].get<bool>()) << k;
    EXPECT_EQ(k["workspace_bytes"].get<std::int64_t>() >= 64 * 56 * 56 * (fp32 ? 4 : 2), !fp32) << k;
  }
  std::filesystem::remove_all(out);
}

TEST(Cli, AnUnknownPrecisionOrLayoutNamesTheChoices) {
  Result r = run_convgen("generate --shapes " + shapes("cusnn.csv") + " --precision fp8");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.output.find("convgen: error: --precision: unknown 'fp8', expected one of fp32, tf32, fp16, bf16"),
            std::string::npos)
      << r.output;
  r = run_convgen("generate --shapes " + shapes("cusnn.csv") + " --layout hwcn");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.output.find("convgen: error: --layout: unknown 'hwcn', expected one of ncw, nwc, nchw, nhwc, ncdhw, "
                          "ndhwc"),
            std::string::npos)
      << r.output;
}

TEST(Cli, ABadShapesFileFailsWithFileLineAndReason) {
  const auto path = testing_support::process_scratch() / "convgen_cli_bad.csv";
  std::ofstream(path) << "name,n,c,k,h,w,r,s,stride\nbad,1,3,8,8,8,3,3,0\n";
  const Result r = run_convgen("analyze --shapes " + path.string() + " --gpu h100_sxm");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.output.find("convgen: error: " + path.string() + ":2: column 'stride'"), std::string::npos) << r.output;
}

TEST(Cli, AnUnknownGpuNameListsTheKnownOnes) {
  const Result r = run_convgen("analyze --shapes " + shapes("cusnn.csv") + " --gpu h900");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.output.find("h100_sxm"), std::string::npos) << r.output;
}

TEST(Cli, RunWithoutAGpuSaysThereIsNoCudaDevice) {
  if (cuda_available()) GTEST_SKIP() << "a CUDA device is present";
  const Result r = run_convgen("run --shapes " + shapes("cusnn.csv") + " --layer dense_128to32_56");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.output.find("no CUDA device"), std::string::npos) << r.output;
}

}  // namespace
}  // namespace convgen

namespace convgen {
namespace {

TEST(Cli, AnalyzeReadsTheSeerListAndTheSeedsBchwnListByTheirFirstLine) {
  const auto dir = std::filesystem::temp_directory_path();
  std::ofstream(dir / "convgen_cli_seer.txt") << "2\n1 64 56 64 56 3 1 1\n8 3 224 64 112 7 2 3\n";
  std::ofstream(dir / "convgen_cli_bchwn.csv") << "B,C,H,W,N,t1\n1,128,28,28,32,25.7\n";
  const Result seer = run_convgen("analyze --shapes " + (dir / "convgen_cli_seer.txt").string() + " --gpu h100_sxm");
  ASSERT_EQ(seer.exit_code, 0) << seer.output;
  EXPECT_NE(seer.output.find("3->64 7x7 s2 p3 at 224x224 -> 112x112, n8"), std::string::npos) << seer.output;
  const Result bchwn = run_convgen("analyze --shapes " + (dir / "convgen_cli_bchwn.csv").string() + " --gpu h100_sxm");
  ASSERT_EQ(bchwn.exit_code, 0) << bchwn.output;
  EXPECT_NE(bchwn.output.find("128->32 3x3 s1 p1 at 28x28 -> 28x28, n1"), std::string::npos) << bchwn.output;
}

// convgen links no ONNX: `import onnx` runs convgen-onnx-import beside it, and says how to get it where it is missing.
TEST(Cli, ConvgenLinksNoOnnxAndImportOnnxWithoutTheImporterSaysHowToBuildIt) {
  const auto dir = testing_support::process_scratch() / "convgen_cli_no_importer";
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  std::filesystem::copy_file(std::string(CONVGEN_BINARY_DIR) + "/tools/convgen/convgen", dir / "convgen");
  const Result r = testing_support::run_command((dir / "convgen").string() + " import onnx model.onnx --out x.csv");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.output,
            "convgen: error: import onnx needs convgen-onnx-import, which was not built: it is built next "
            "to convgen (" +
                dir.string() +
                ") where the ONNX library is installed; install libonnx-dev and "
                "libprotobuf-dev (run scripts/setup.sh as root) and configure and build again\n");
  const Result help = run_convgen("import --help");
  EXPECT_NE(help.output.find("onnx"), std::string::npos) << help.output;
  std::filesystem::remove_all(dir);
  const Result ldd = testing_support::run_command("ldd " + std::string(CONVGEN_BINARY_DIR) + "/tools/convgen/convgen");
  ASSERT_EQ(ldd.exit_code, 0) << ldd.output;
  EXPECT_EQ(ldd.output.find("libonnx"), std::string::npos) << ldd.output;
  EXPECT_EQ(ldd.output.find("libprotobuf"), std::string::npos) << ldd.output;
}

// The binaries carry their data (templates, GPU descriptors, shapes) and name no path of the machine they were built
// on: this test knows the source and build folders, the binaries must not.
TEST(Cli, TheBinariesNameNoPathOfTheBuildMachine) {
#ifdef CONVGEN_SANITIZED
  GTEST_SKIP() << "UBSan's type descriptors name each lambda by its source path: the release build is the one checked";
#endif
  for (const std::string relative : {"tools/convgen/convgen", "api/libconvgen_api.a"}) {
    const std::filesystem::path path = std::filesystem::path(CONVGEN_BINARY_DIR) / relative;
    std::ifstream in(path, std::ios::binary);
    ASSERT_TRUE(in) << path;
    const std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    EXPECT_EQ(bytes.find(CONVGEN_SOURCE_DIR), std::string::npos) << relative << " names " << CONVGEN_SOURCE_DIR;
    EXPECT_EQ(bytes.find(CONVGEN_BINARY_DIR), std::string::npos) << relative << " names " << CONVGEN_BINARY_DIR;
  }
}

// A program convgen runs (here the plot interpreter, chosen by $CONVGEN_PYTHON) that crashes is named with its
// signal, and convgen exits as a shell would (128 + the signal), instead of ending with no word.
TEST(Cli, AProgramConvgenRunsThatCrashesIsNamedWithItsSignal) {
  const auto script = testing_support::process_scratch() / "convgen_cli_crashing_python.sh";
  std::ofstream(script) << "#!/bin/sh\nkill -SEGV $$\n";
  std::filesystem::permissions(script, std::filesystem::perms::owner_all);
  const Result r = run_convgen("plot report.json", "CONVGEN_PYTHON=" + script.string());
  EXPECT_EQ(r.exit_code, 128 + 11) << r.output;
  EXPECT_NE(r.output.find("convgen: error: " + script.string() + " ended on signal 11 ("), std::string::npos)
      << r.output;
  std::filesystem::remove(script);
}

// Away from the source tree, with no $CONVGEN_DATA_ROOT, short names resolve to the embedded gpus/ and shapes/.
TEST(Cli, ShortGpuAndShapesNamesResolveWithoutASourceTree) {
  const auto dir = testing_support::process_scratch() / "convgen_cli_no_source";
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  const std::string convgen = std::string(CONVGEN_BINARY_DIR) + "/tools/convgen/convgen";
  for (const char* shapes_name : {"cusnn", "cusnn.csv", "shapes/cusnn.csv"}) {
    const Result r = testing_support::run_command("cd " + dir.string() + " && env -u CONVGEN_DATA_ROOT " + convgen +
                                                  " analyze --shapes " + shapes_name + " --gpu h100_sxm");
    ASSERT_EQ(r.exit_code, 0) << shapes_name << ": " << r.output;
    EXPECT_NE(r.output.find("cusnn on NVIDIA H100"), std::string::npos) << r.output;
  }
  // A file of that name in the working folder wins over the embedded copy.
  std::ofstream(dir / "cusnn.csv") << "name,n,c,k,h,w,r,s,stride\nmine,1,8,8,8,8,3,3,1\n";
  Result r = testing_support::run_command("cd " + dir.string() + " && env -u CONVGEN_DATA_ROOT " + convgen +
                                          " analyze --shapes cusnn.csv --gpu h100_sxm");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("mine"), std::string::npos) << r.output;
  // $CONVGEN_DATA_ROOT's files win over the embedded ones.
  std::filesystem::create_directories(dir / "root" / "gpus");
  std::ifstream h100(std::string(CONVGEN_SOURCE_DIR) + "/gpus/h100_sxm.json");
  std::string json((std::istreambuf_iterator<char>(h100)), std::istreambuf_iterator<char>());
  json.replace(json.find("NVIDIA H100"), 11, "Root's H100");
  std::ofstream(dir / "root" / "gpus" / "h100_sxm.json") << json;
  r = testing_support::run_command("cd " + dir.string() + " && CONVGEN_DATA_ROOT=" + (dir / "root").string() + " " +
                                   convgen + " analyze --shapes shapes/resnet50.csv --gpu h100_sxm");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("Root's H100"), std::string::npos) << r.output;
  r = testing_support::run_command("cd " + dir.string() + " && " + convgen + " analyze --shapes nope --gpu h100_sxm");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.output.find(
                "convgen: error: nope: cannot open shapes file (built-in shapes: act_sparse_extra, cosmoflow, cusnn, "),
            std::string::npos)
      << r.output;
  std::filesystem::remove_all(dir);
}

// `convgen fold` writes a shapes file that analyze reads back, prints the intensity before and after, and refuses a
// batch the factor does not divide.
TEST(Cli, FoldWritesTheFoldedSuiteAndItsArithmeticIntensity) {
  const auto out = testing_support::process_scratch() / "convgen_cli_fold.csv";
  std::filesystem::remove(out);
  const Result r = run_convgen("fold --shapes " + shapes("noscope_taipei.csv") + " --factor 4 --batch 1024 --out " +
                               out.string());
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("unfolded  noscope_taipei"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("folded    noscope_taipei_fold4"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("( 1024 images)"), std::string::npos) << r.output;
  const Result a = run_convgen("analyze --shapes " + out.string() + " --gpu h100_sxm");
  ASSERT_EQ(a.exit_code, 0) << a.output;
  EXPECT_NE(a.output.find("12->128 3x3 s1 p1 at 50x50 -> 50x50, n256"), std::string::npos) << a.output;
  const Result exact = run_convgen("fold --shapes " + shapes("noscope_taipei.csv") + " --factor 4 --batch 1024 --exact");
  ASSERT_EQ(exact.exit_code, 0) << exact.output;
  EXPECT_NE(exact.output.find("conv2,256,256,256,1,50,50,1,3,3,1,1,1,4,"), std::string::npos) << exact.output;
  const Result bad = run_convgen("fold --shapes " + shapes("noscope_taipei.csv") + " --factor 3");
  EXPECT_EQ(bad.exit_code, 1);
  EXPECT_EQ(bad.output,
            "convgen: error: fold: layer 'conv1': batch 1 is not a multiple of the fold factor 3 (set the batch with "
            "--batch)\n");
  std::filesystem::remove(out);
}

TEST(Cli, WeightsFromNpyFilesAreCheckedAndMadeFiltersArePruned) {
  const auto dir = testing_support::process_scratch() / "convgen_cli_weights";
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  const auto csv = dir / "two.csv";
  std::ofstream(csv) << "name,n,c,k,h,w,r,s,pad\na,1,4,2,6,6,3,3,1\nb,1,2,3,6,6,1,1,0\n";
  // No file for layer a.
  Result r = run_convgen("analyze --gpu h100_sxm --shapes " + csv.string() + " --weights " + dir.string());
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.output.find((dir / "a.npy").string() + ": no such file (expected a float32 .npy file); expected the "
                                                     "filter of layer 'a'"),
            std::string::npos)
      << r.output;
  EXPECT_NE(r.output.find("shape (2, 4, 3, 3) (K, C, R, S)"), std::string::npos) << r.output;
  // a.npy with the wrong shape, as numpy would write it.
  const auto write = [&](const std::string& name, const std::string& shape, int count) {
    std::string header = "{'descr': '<f4', 'fortran_order': False, 'shape': (" + shape + "), }";
    header.append(118 - header.size() - 1, ' ');
    header += '\n';
    std::ofstream out(dir / name, std::ios::binary);
    out << std::string("\x93NUMPY\x01\x00", 8) << static_cast<char>(header.size()) << '\0' << header;
    for (int i = 0; i < count; ++i) {
      const float v = i % 2 == 0 ? 0.0f : 0.25f;
      out.write(reinterpret_cast<const char*>(&v), sizeof v);
    }
  };
  write("a.npy", "2, 3, 3, 4", 72);
  r = run_convgen("analyze --gpu h100_sxm --shapes " + csv.string() + " --weights " + dir.string());
  EXPECT_NE(r.output.find((dir / "a.npy").string() + ": shape (2, 3, 3, 4), expected the filter of layer 'a'"),
            std::string::npos)
      << r.output;
  write("a.npy", "2, 4, 3, 3", 72);
  write("b.npy", "3, 2, 1, 1", 6);
  r = run_convgen("analyze --gpu h100_sxm --shapes " + csv.string() + " --weights " + dir.string());
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("its filter (50% zeros)"), std::string::npos) << r.output;
  r = run_convgen("analyze --gpu h100_sxm --shapes " + csv.string() + " --weight-sparsity 0.9");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("its filter (89% zeros)"), std::string::npos) << r.output;  // round(0.9 x 36) = 32 of 36
  r = run_convgen("analyze --gpu h100_sxm --shapes " + csv.string() + " --weight-sparsity 0.9 --weights " +
                  dir.string());
  EXPECT_NE(r.exit_code, 0) << r.output;
  // 2:4: half of every row of 4 x 3 x 3 = 36 values is zero; a word that is neither a fraction nor 2:4 is refused.
  r = run_convgen("analyze --gpu h100_sxm --shapes " + csv.string() + " --weight-sparsity 2:4");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("its filter (50% zeros)"), std::string::npos) << r.output;
  for (const char* bad : {"1.5", "2:8", "0.9x", "half"}) {
    r = run_convgen("analyze --gpu h100_sxm --shapes " + csv.string() + " --weight-sparsity " + bad);
    EXPECT_NE(r.exit_code, 0) << bad;
    EXPECT_NE(r.output.find(std::string("--weight-sparsity: '") + bad +
                            "' is neither a zero fraction in [0, 1] nor 2:4"),
              std::string::npos)
        << r.output;
  }
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace convgen
