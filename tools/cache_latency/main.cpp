// convgen-cache-latency: what getting a compiled kernel costs once it was compiled before, per layer of a suite:
// build_kernel answered from memory (the same JitCache: the kernel it remembers, nothing rendered or keyed), and from
// disk (a new JitCache on the same folder, as a new process has: the source rendered, keyed and its entry read), each
// the median of --repeats, beside the cold compile.
// No GPU needed: loading the cubin into a device is not part of it.
//   convgen-cache-latency --shapes shapes/resnet50.csv --gpu gpus/h100_sxm.json
#include <algorithm>
#include <chrono>
#include <filesystem>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include "conv/conv_kernel.hpp"
#include "convgen/error.hpp"
#include "generator/family.hpp"
#include "generator/gpu_json.hpp"
#include "generator/shapes.hpp"
#include "runtime/jit_cache.hpp"

namespace {

using Clock = std::chrono::steady_clock;

template <class F>
double median_us(int repeats, F&& call) {
  std::vector<double> times;
  for (int i = 0; i < repeats; ++i) {
    const auto start = Clock::now();
    call();
    times.push_back(std::chrono::duration<double, std::micro>(Clock::now() - start).count());
  }
  std::nth_element(times.begin(), times.begin() + repeats / 2, times.end());
  return times[repeats / 2];
}

double percentile(std::vector<double> values, double q) {
  std::sort(values.begin(), values.end());
  return values[std::min(values.size() - 1, static_cast<std::size_t>(q * static_cast<double>(values.size())))];
}

}  // namespace

int main(int argc, char** argv) {
  using namespace convgen;
  CLI::App app{"convgen-cache-latency: the JIT cache's hit times (memory, disk) per layer's default kernel"};
  std::string shapes, gpu_file = "gpus/h100_sxm.json", folder;
  int repeats = 200;
  app.add_option("--shapes", shapes, "Shapes file (suite CSV)")->required();
  app.add_option("--gpu", gpu_file, "GPU descriptor (.json file)")->capture_default_str();
  app.add_option("--folder", folder, "Cache folder, emptied first (default: a fresh one in the temporary folder)");
  app.add_option("--repeats", repeats, "Hits timed per layer and kind (the median is printed)")
      ->check(CLI::Range(1, 100000))
      ->capture_default_str();
  CLI11_PARSE(app, argc, argv);
  try {
    const Gpu gpu = load_gpu(gpu_file);
    const std::filesystem::path dir =
        folder.empty() ? std::filesystem::temp_directory_path() / "convgen-cache-latency" : std::filesystem::path(folder);
    std::filesystem::remove_all(dir);
    JitCache cache(dir);
    const Suite suite = load_suite(shapes);
    fmt::print("| layer | kernel | compile ms | memory hit µs | disk hit µs |\n|---|---|--:|--:|--:|\n");
    std::vector<double> compiles, memory, disk;
    for (const Layer& layer : suite.layers) {
      const KernelSpec spec = default_choice(layer.problem, gpu);
      const BuiltKernel built = build_kernel(layer.problem, spec, gpu, cache);
      // A layer whose kernel an earlier layer built (the same problem twice in a suite) compiled nothing: its 0 ms
      // is not a compile time, and stays out of the percentiles.
      const bool compiled = built.cubin.compile_ms > 0;
      if (compiled) compiles.push_back(built.cubin.compile_ms);
      memory.push_back(median_us(repeats, [&] { build_kernel(layer.problem, spec, gpu, cache); }));
      disk.push_back(median_us(repeats, [&] {
        JitCache fresh(dir);
        build_kernel(layer.problem, spec, gpu, fresh);
      }));
      fmt::print("| {} | {} | {} | {:.1f} | {:.1f} |\n", layer.name, kernel_name(spec),
                 compiled ? fmt::format("{:.0f}", compiles.back()) : std::string("— (built before)"), memory.back(),
                 disk.back());
    }
    if (compiles.empty()) throw InputError(fmt::format("{}: no layer compiled a kernel", shapes));
    fmt::print("\n{} layers on {} ({}): {} kernels compiled, p50 {:.0f} ms, p90 {:.0f} ms; memory hit p50 {:.1f} µs, "
               "p90 {:.1f} µs; disk hit p50 {:.1f} µs, p90 {:.1f} µs\n",
               suite.layers.size(), gpu.name, gpu.arch, compiles.size(), percentile(compiles, 0.5),
               percentile(compiles, 0.9),
               percentile(memory, 0.5), percentile(memory, 0.9), percentile(disk, 0.5), percentile(disk, 0.9));
    std::filesystem::remove_all(dir);
  } catch (const Error& e) {
    fmt::print(stderr, "convgen-cache-latency: error: {}\n", e.what());
    return 1;
  }
  return 0;
}
