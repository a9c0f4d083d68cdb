// corpus: test helpers that load the checked-in shapes and GPU descriptors and render kernels into programs.
#pragma once

#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

#include <fmt/format.h>

#include "convgen/error.hpp"
#include "convgen/gpu.hpp"
#include "generator/family.hpp"
#include "generator/gpu_json.hpp"
#include "generator/render.hpp"
#include "generator/shapes.hpp"
#include "runtime/compiler.hpp"

namespace convgen::testing_support {

inline std::filesystem::path source_dir() { return CONVGEN_SOURCE_DIR; }

inline Suite edge_cases() { return load_suite(source_dir() / "shapes" / "edge_cases.csv"); }

inline Gpu h100() { return load_gpu(source_dir() / "gpus" / "h100_sxm.json"); }

// A long reduction (512 channels x 9 taps: 72 steps of 64) on few output pixels, the case split-K exists for; K = 96
// is a partial 64-channel tile.
inline Problem long_reduction(Precision precision) {
  return {.n = 1,
          .c = 512,
          .k = 96,
          .input = {1, 7, 7},
          .filter = {1, 3, 3},
          .padding = {0, 1, 1},
          .layout = Layout::nhwc,
          .precision = precision};
}

// The channels-last layout of the same rank (channels-last layouts are their own).
inline Layout channels_last_of(Layout layout) {
  switch (layout) {
    case Layout::ncw:
      return Layout::nwc;
    case Layout::nchw:
      return Layout::nhwc;
    case Layout::ncdhw:
      return Layout::ndhwc;
    default:
      return layout;
  }
}

// Every suite file under shapes/.
inline std::vector<std::filesystem::path> suite_files() {
  std::vector<std::filesystem::path> files;
  for (const auto& entry : std::filesystem::directory_iterator(source_dir() / "shapes"))
    if (entry.path().extension() == ".csv") files.push_back(entry.path());
  std::sort(files.begin(), files.end());
  return files;
}

// The configurations a test exercises for a family on a problem: the default choice, then the first
// `extra` other candidates of enumerate().
inline std::vector<KernelSpec> representative_specs(const Family& family, const Problem& problem, const Gpu& gpu,
                                                    std::size_t extra) {
  std::vector<KernelSpec> specs;
  if (auto spec = family.default_spec(problem, gpu)) specs.push_back(*spec);
  for (const KernelSpec& s : family.enumerate(problem, gpu)) {
    if (specs.size() > extra) break;
    if (std::find(specs.begin(), specs.end(), s) == specs.end()) specs.push_back(s);
  }
  return specs;
}

// The index of a family's parameter by its token ("relu" for act_sparse's relu1); throws Error naming the family
// where it declares none.
inline std::size_t param_index(const Family& family, std::string_view token) {
  const auto& params = family.interface().params;
  for (std::size_t i = 0; i < params.size(); ++i)
    if (params[i].token == token) return i;
  throw Error(fmt::format("{} declares no parameter '{}'", family.name(), token));
}

// Gtest-friendly parameter name: letters, digits and '_' only.
inline std::string test_name(std::string text) {
  for (char& ch : text)
    if (!std::isalnum(static_cast<unsigned char>(ch))) ch = '_';
  return text;
}

}  // namespace convgen::testing_support
