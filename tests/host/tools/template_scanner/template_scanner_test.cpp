// Tests of convgen-template-scan: what it reads from the real templates, each validation error and each lint finding
// (exact messages, on the small bad templates under bad/), its generated files, and `convgen lint-template`.
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "support/run_convgen.hpp"

namespace convgen {
namespace {

using testing_support::run_command;
using testing_support::run_convgen;
namespace fs = std::filesystem;

const std::string kSource = CONVGEN_SOURCE_DIR;
const std::string kScanner = std::string(CONVGEN_BINARY_DIR) + "/tools/convgen/convgen-template-scan";

// Runs the scanner from the source root, so paths in messages read templates/... and tests/....
testing_support::CommandResult scan(const std::string& args) {
  return run_command("cd " + kSource + " && " + kScanner + " -I templates " + args);
}

std::string bad(const std::string& name) { return "tests/host/tools/template_scanner/bad/" + name + ".cu"; }

std::string read(const fs::path& path) {
  std::ifstream in(path);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

fs::path fresh_dir(const std::string& name) {
  const fs::path dir = fs::temp_directory_path() / ("convgen_scanner_" + name + "_" + std::to_string(getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  return dir;
}

TEST(TemplateScanner, ReadsIgemmsParametersEntryAndConstraints) {
  const auto r = scan("--json templates/igemm.cu");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const auto json = nlohmann::json::parse(r.output);
  EXPECT_EQ(json["family"], "igemm");
  EXPECT_EQ(json["source"], "templates/igemm.cu");

  std::vector<std::string> tokens, names;
  for (const auto& p : json["params"]) {
    tokens.push_back(p["token"]);
    names.push_back(p["name"]);
  }
  EXPECT_EQ(tokens, (std::vector<std::string>{"m", "n", "k", "tm", "tn", "st", "sk", "v"}));
  EXPECT_EQ(names, (std::vector<std::string>{"BLOCK_M", "BLOCK_N", "BLOCK_K", "THREAD_M", "THREAD_N", "STAGES",
                                             "SPLIT_K", "VECTOR"}));
  EXPECT_EQ(json["params"][0]["default"], 64);
  EXPECT_EQ(json["params"][0]["allowed"], (std::vector<int>{16, 32, 64, 128, 256}));
  EXPECT_EQ(json["params"][6]["min"], 1);
  EXPECT_EQ(json["params"][6]["max"], 64);
  EXPECT_TRUE(json["params"][6]["allowed"].empty());

  ASSERT_EQ(json["entries"].size(), 1u);
  EXPECT_EQ(json["entries"][0]["symbol"], "convgen_igemm_default");
  EXPECT_EQ(json["entries"][0]["suffix"], "");
  std::vector<std::string> args;
  for (const auto& a : json["entries"][0]["args"]) args.push_back(a["name"]);
  EXPECT_EQ(args,
            (std::vector<std::string>{"g_activation", "g_filter", "g_output", "g_workspace", "g_bias", "g_residual"}));
  // The data type is the template's own (float, or fp16 / bf16 bits: PRECISION), as the scanner reads it.
  EXPECT_EQ(json["entries"][0]["args"][0]["type"], "const igemm::element_t *__restrict");
  EXPECT_EQ(json["entries"][0]["args"][3]["type"], "float *__restrict");  // split-K needs no workspace: float

  bool found = false;
  for (const auto& c : json["constraints"])
    if (c["message"] == "STAGES must be 1 or 2") {
      found = true;
      EXPECT_EQ(c["condition"], "STAGES == 1 || STAGES == 2");
      EXPECT_EQ(c["params"], (std::vector<std::string>{"STAGES"}));
      EXPECT_EQ(c["where"]["file"], "templates/igemm.cu");
    }
  EXPECT_TRUE(found) << r.output;
}

TEST(TemplateScanner, ReadsDirectsFiveParameters) {
  const auto r = scan("--json templates/direct.cu");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const auto json = nlohmann::json::parse(r.output);
  std::vector<std::string> tokens;
  for (const auto& p : json["params"]) tokens.push_back(p["token"]);
  EXPECT_EQ(tokens, (std::vector<std::string>{"m", "n", "k", "tm", "tn"}));
}

TEST(TemplateScanner, RejectsEachBrokenDeclarationWithItsLocation) {
  const std::pair<std::string, std::string> cases[] = {
      {"default_not_allowed", ":6:51: error: default 48 of parameter BLOCK_M is not among its allowed values 16,32"},
      {"duplicate_token", ":7:50: error: token 'm' of parameter THREAD_M is already used by BLOCK_M"},
      {"duplicate_name", ":7:50: error: parameter block_m has the same field name 'block_m' as BLOCK_M"},
      {"missing_token", ":6:48: error: parameter BLOCK_M has no token (its prefix in kernel names)"},
      {"malformed_values",
       ":6:50: error: values '1,,2' of parameter BLOCK_M must be a comma list of distinct integers, a range lo..hi "
       "or bool"},
      {"no_entry",
       ":1:1: error: no main entry: expected extern \"C\" __global__ void CONVGEN_ENTRY(...) (the symbol "
       "convgen_no_entry_default)"},
      {"pointer_name",
       ":9:68: error: pointer parameter 'input' of entry 'convgen_pointer_name_default' must be named g_<what it "
       "binds to> (g_activation, g_filter, g_output, g_workspace or g_<plan buffer>)"},
      {"param_type", ":6:50: error: parameter BLOCK_M has type 'long'; a tunable parameter is a constexpr int or bool"},
  };
  for (const auto& [name, message] : cases) {
    SCOPED_TRACE(name);
    const auto r = scan(bad(name));
    EXPECT_EQ(r.exit_code, 1);
    EXPECT_EQ(r.output, bad(name) + message + "\n");
  }
}

TEST(TemplateScanner, LintReportsEachFindingOnASmallBadTemplate) {
  const std::pair<std::string, std::string> cases[] = {
      {"lint_dynamic_index",
       ":14:35: warning: per-thread array 'r_value' is indexed by a value not known at compile time; it will live in "
       "local memory [per-thread-dynamic-index]\n" +
           bad("lint_dynamic_index") +
           ":16:37: warning: per-thread array 'r_sum' is indexed by a value not known at compile time; it will live "
           "in local memory [per-thread-dynamic-index]"},
      {"lint_no_restrict",
       ":9:55: warning: pointer parameter 'g_activation' of entry 'convgen_lint_no_restrict_default' is not "
       "__restrict__ [entry-restrict]"},
      {"lint_include",
       ":9:1: warning: #include \"helpers.h\" is outside the allowed set: common.cuh, interface.cuh and other "
       "templates/*.cuh [include]"},
      {"lint_unused_param", ":7:51: warning: parameter BLOCK_N is declared but never used [unused-param]"},
      {"lint_static_assert_message",
       ":9:1: warning: static_assert without a message; say what the constraint requires [static-assert-message]"},
  };
  for (const auto& [name, message] : cases) {
    SCOPED_TRACE(name);
    const auto r = scan("--lint " + bad(name));
    EXPECT_EQ(r.exit_code, 1);
    EXPECT_EQ(r.output, bad(name) + message + "\n");
    // Without --lint the same template declares a valid interface.
    EXPECT_EQ(scan(bad(name)).exit_code, 0) << scan(bad(name)).output;
  }
}

TEST(TemplateScanner, LintsEveryRealTemplateClean) {
  for (const auto& entry : fs::directory_iterator(kSource + "/templates")) {
    if (entry.path().extension() != ".cu") continue;
    SCOPED_TRACE(entry.path().string());
    const auto r = scan("--lint templates/" + entry.path().filename().string());
    EXPECT_EQ(r.exit_code, 0);
    EXPECT_EQ(r.output, "");
  }
}

TEST(TemplateScanner, WritesParamsHeaderWithLineDirectivesAndInterfaceSource) {
  const fs::path dir = fresh_dir("out");
  const auto r = scan("--source-root " + kSource + " --out-dir " + dir.string() + " templates/igemm.cu");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const std::string header = read(dir / "igemm_params.hpp");
  EXPECT_NE(header.find("struct IgemmParams {\n  static constexpr std::string_view family = \"igemm\";\n#line "),
            std::string::npos)
      << header;
  EXPECT_NE(header.find(" \"templates/igemm.cu\"\n  int block_m = 64;  // output channels per block (GEMM M tile)\n"),
            std::string::npos)
      << header;
  EXPECT_NE(header.find("KernelSpec to_spec(const IgemmParams& params);"), std::string::npos);
  const std::string source = read(dir / "igemm_interface.cpp");
  EXPECT_NE(source.find(".name = \"BLOCK_M\", .field = \"block_m\", .token = \"m\""), std::string::npos) << source;

  // A second run with nothing changed leaves the files alone (ninja rebuilds nothing).
  const auto before = fs::last_write_time(dir / "igemm_params.hpp");
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  ASSERT_EQ(scan("--source-root " + kSource + " --out-dir " + dir.string() + " templates/igemm.cu").exit_code, 0);
  EXPECT_EQ(fs::last_write_time(dir / "igemm_params.hpp"), before);
  fs::remove_all(dir);
}

TEST(TemplateScanner, RegistryListsEveryFamilySorted) {
  const fs::path dir = fresh_dir("registry");
  const auto r = scan("--registry --out-dir " + dir.string() + " templates/igemm.cu templates/direct.cu");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const std::string source = read(dir / "all_interfaces.cpp");
  EXPECT_NE(
      source.find("static const TemplateInterface* const interfaces[] = {&direct_interface(), &igemm_interface()};"),
      std::string::npos)
      << source;
  fs::remove_all(dir);
}

TEST(LintTemplateCommand, RunsTheScannerNextToConvgen) {
  const auto clean =
      run_convgen("lint-template " + kSource + "/templates/igemm.cu " + kSource + "/templates/direct.cu");
  EXPECT_EQ(clean.exit_code, 0) << clean.output;
  EXPECT_EQ(clean.output, "");
  const auto r = run_convgen("lint-template " + kSource + "/" + bad("lint_no_restrict"));
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.output.find("lint_no_restrict.cu:9:55: warning: pointer parameter 'g_activation' of entry "
                          "'convgen_lint_no_restrict_default' is not __restrict__ [entry-restrict]"),
            std::string::npos)
      << r.output;
}

TEST(LintTemplateCommand, SaysWhereItLookedWhenTheScannerIsMissing) {
  const fs::path dir = fresh_dir("lonely");
  fs::copy_file(std::string(CONVGEN_BINARY_DIR) + "/tools/convgen/convgen", dir / "convgen");
  const auto r = run_command((dir / "convgen").string() + " lint-template " + kSource + "/templates/igemm.cu");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.output,
            "convgen: error: lint-template needs convgen-template-scan, which is built with Clang (scripts/setup.sh "
            "installs it); not found next to " +
                (dir / "convgen").string() + "\n");
  fs::remove_all(dir);
}

}  // namespace
}  // namespace convgen
