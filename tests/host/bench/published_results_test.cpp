// published_results_test: every bench report published under bench/results/ (a STEM.json.gz beside a STEM.md
// written by `convgen bench`) has its pictures (STEM_roofline, STEM_speedup and STEM_network, SVG and PNG) somewhere
// under the same GPU's folder, as issue 15 asks of every published run.
#include <algorithm>
#include <filesystem>
#include <fstream>
#include <set>
#include <string>
#include <vector>

#include <gtest/gtest.h>

namespace convgen {
namespace {

namespace fs = std::filesystem;

// Whether `markdown` was written by `convgen bench` (report_markdown's first line).
bool is_bench_markdown(const fs::path& markdown) {
  std::ifstream in(markdown);
  std::string first;
  std::getline(in, first);
  return first == "# convgen vs cuDNN";
}

TEST(PublishedResults, EveryBenchReportHasItsPictures) {
  const fs::path results = fs::path(CONVGEN_SOURCE_DIR) / "bench" / "results";
  ASSERT_TRUE(fs::is_directory(results)) << results;
  int reports = 0;
  for (const fs::directory_entry& gpu : fs::directory_iterator(results)) {
    if (!gpu.is_directory()) continue;
    std::set<std::string> pictures;  // file names of every picture under this GPU's folder
    std::vector<fs::path> stems;     // the bench reports' paths without .json.gz
    for (const fs::directory_entry& e : fs::recursive_directory_iterator(gpu.path())) {
      const std::string name = e.path().filename().string();
      if (name.ends_with(".svg") || name.ends_with(".png")) pictures.insert(name);
      if (!name.ends_with(".json.gz")) continue;
      const fs::path stem = e.path().parent_path() / name.substr(0, name.size() - std::string(".json.gz").size());
      if (is_bench_markdown(fs::path(stem).concat(".md"))) stems.push_back(stem);
    }
    for (const fs::path& stem : stems) {
      ++reports;
      for (const char* kind : {"_roofline", "_speedup", "_network"})
        for (const char* format : {".svg", ".png"}) {
          // A report of several suites has STEM_SUITE_KIND pictures: any picture starting with the stem and
          // ending with the kind counts.
          const std::string prefix = stem.filename().string(), suffix = std::string(kind) + format;
          const bool found = std::any_of(pictures.begin(), pictures.end(), [&](const std::string& p) {
            return p.starts_with(prefix) && p.ends_with(suffix);
          });
          EXPECT_TRUE(found) << fs::relative(stem, results).string() << " has no " << prefix << "*" << suffix
                             << " under " << gpu.path().filename().string()
                             << "/ (convgen plot --out FOLDER/plots REPORT.json.gz)";
        }
    }
  }
  EXPECT_GT(reports, 20) << "the published bench reports were not found";
}

}  // namespace
}  // namespace convgen
