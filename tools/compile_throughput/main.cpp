// convgen-compile-throughput: how many NVRTC compiles per second a machine does with K at once, in K threads of one
// process (compile() on a thread pool, as convgen did before) against K worker processes (CompilerProcesses, as the
// convgen tool does now), and what one compile then takes (p50, p90, worst): issue 16's bound. The kernels are the
// default kernel of every layer of a suite (or, with --all, every family's candidates: what a cold tune compiles),
// each distinct program once; no JIT cache, no GPU.
//   convgen-compile-throughput --shapes shapes/resnet50.csv --gpu gpus/h100_sxm.json --concurrency 1,2,16,32
//   convgen-compile-throughput --shapes shapes/cusnn.csv --batch 8 --all --concurrency 32   (scripts/tune-scaling.sh)
#include <algorithm>
#include <chrono>
#include <future>
#include <map>
#include <memory>
#include <set>
#include <thread>
#include <utility>
#include <vector>

#include <fmt/format.h>
#include <CLI/CLI.hpp>

#include "conv/conv_kernel.hpp"
#include "convgen/error.hpp"
#include "generator/family.hpp"
#include "generator/gpu_json.hpp"
#include "generator/shapes.hpp"
#include "runtime/compiler.hpp"
#include "runtime/compiler_processes.hpp"
#include "runtime/thread_pool.hpp"

namespace {

using namespace convgen;
using Clock = std::chrono::steady_clock;

double ms_since(Clock::time_point start) {
  return std::chrono::duration<double, std::milli>(Clock::now() - start).count();
}

double percentile(std::vector<double> values, double q) {
  if (values.empty()) return 0;
  std::sort(values.begin(), values.end());
  return values[std::min(values.size() - 1, static_cast<std::size_t>(q * static_cast<double>(values.size())))];
}

// The programs to compile: each layer's default kernel, or every candidate with `all`; each distinct one once (as
// the JIT cache would compile it once).
std::vector<Program> suite_programs(const Suite& suite, const Gpu& gpu, bool all) {
  std::vector<Program> programs;
  std::set<std::pair<std::string, std::string>> seen;
  for (const Layer& layer : suite.layers) {
    std::vector<KernelSpec> specs;
    if (all) {
      for (const Family* f : all_families())
        for (const KernelSpec& spec : f->enumerate(layer.problem, gpu)) specs.push_back(spec);
    } else {
      specs.push_back(default_choice(layer.problem, gpu));
    }
    for (const KernelSpec& spec : specs) {
      Program program = to_program(family(spec.family).render(layer.problem, spec));
      if (seen.emplace(program.name, program.source).second) programs.push_back(std::move(program));
    }
  }
  return programs;
}

struct Run {
  std::string mode;
  unsigned concurrency = 1;
  double start_ms = 0;  // the warm-up: one small compile per slot, at once (starts the workers)
  double wall_ms = 0;
  std::vector<double> compile_ms;  // per kernel, from the call to its return (a worker's: with the round trip)
  int failures = 0;
};

// Compiles every program, `concurrency` at once, in threads of this process or in worker processes.
Run measure(const std::string& mode, unsigned concurrency, const std::vector<Program>& programs,
            const CompileOptions& options, const std::filesystem::path& worker) {
  ThreadPool pool(concurrency);
  std::unique_ptr<CompilerProcesses> processes;
  if (mode == "processes") processes = std::make_unique<CompilerProcesses>(worker, concurrency);
  const auto compile_one = [&](const Program& program) {
    return processes ? processes->compile(program, options) : compile(program, options);
  };
  // Times one compile; a failure is said on stderr and gives a negative time.
  const auto timed = [&](const Program& program) {
    const auto start = Clock::now();
    try {
      compile_one(program);
    } catch (const Error& e) {
      fmt::print(stderr, "{}: {}\n", program.name, e.what());
      return -1.0;
    }
    return ms_since(start);
  };
  Run run{.mode = mode, .concurrency = concurrency};
  const Program warm_up{.name = "warm_up.cu", .source = "extern \"C\" __global__ void warm_up() {}\n"};
  const auto start = Clock::now();
  std::vector<std::future<double>> warm_ups;
  for (unsigned i = 0; i < concurrency; ++i) warm_ups.push_back(pool.submit([&] { return timed(warm_up); }));
  for (auto& w : warm_ups) w.get();
  run.start_ms = ms_since(start);

  const auto wall_start = Clock::now();
  std::vector<std::future<double>> times;
  for (const Program& program : programs) times.push_back(pool.submit([&] { return timed(program); }));
  for (auto& t : times) {
    const double ms = t.get();
    if (ms < 0)
      ++run.failures;
    else
      run.compile_ms.push_back(ms);
  }
  run.wall_ms = ms_since(wall_start);
  return run;
}

double per_second(const Run& run) {
  return run.wall_ms > 0 ? 1000.0 * static_cast<double>(run.compile_ms.size()) / run.wall_ms : 0;
}

// A run's cells from mode to start ms, without the outer bars.
std::string row(const Run& run) {
  return fmt::format("{} | {} | {} | {} | {:.1f} | {:.2f} | {:.0f} | {:.0f} | {:.0f} | {:.0f}", run.mode,
                     run.concurrency, run.compile_ms.size(), run.failures, run.wall_ms / 1000, per_second(run),
                     percentile(run.compile_ms, 0.5), percentile(run.compile_ms, 0.9), percentile(run.compile_ms, 1.0),
                     run.start_ms);
}

constexpr const char* kHeader =
    "mode | at once | kernels | failed | wall s | kernels/s | p50 ms | p90 ms | worst ms | start ms |\n";
constexpr const char* kAlignment = "---|--:|--:|--:|--:|--:|--:|--:|--:|--:|\n";

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{
      "convgen-compile-throughput: NVRTC compiles per second with K at once, in K threads of one process against K "
      "worker processes (convgen-nvrtc-worker), and each compile's time; no GPU needed"};
  std::string shapes, gpu_file = "gpus/h100_sxm.json", worker_option;
  std::vector<unsigned> concurrency = {1, usable_cores()};
  std::vector<std::string> modes = {"threads", "processes"};
  bool all = false;
  std::size_t limit = 0;
  int batch = 0, rounds = 1;
  app.add_option("--shapes", shapes, "Shapes file (suite CSV), e.g. shapes/resnet50.csv")->required();
  app.add_option("--gpu", gpu_file, "GPU descriptor (.json file): the architecture and the default kernels")
      ->capture_default_str();
  app.add_option("--concurrency", concurrency,
                 "Compiles at once, comma-separated (default: 1 and this machine's cores)")
      ->delimiter(',')
      ->check(CLI::Range(1u, 1024u));
  app.add_option("--mode", modes,
                 "threads (compile() on a thread pool) and/or processes (worker processes), comma-separated")
      ->delimiter(',')
      ->check(CLI::IsMember({"threads", "processes"}))
      ->capture_default_str();
  app.add_option("--batch", batch, "Batch size of every layer (0: the file's)")->check(CLI::NonNegativeNumber);
  app.add_flag("--all", all, "Every family's candidates of every layer (a cold tune's compiles), not the defaults");
  app.add_option("--limit", limit, "Compile only the first N distinct kernels (0: all)")->capture_default_str();
  app.add_option("--rounds", rounds,
                 "Measure every mode and concurrency this many times, the modes' order alternating, and sum up the "
                 "best round of each (for a machine under other load)")
      ->check(CLI::Range(1, 1000))
      ->capture_default_str();
  app.add_option("--worker", worker_option,
                 "The worker program (default: $CONVGEN_NVRTC_WORKER, else convgen-nvrtc-worker beside this program)");
  CLI11_PARSE(app, argc, argv);
  try {
    const Gpu gpu = load_gpu(gpu_file);
    Suite suite = load_suite(shapes);
    if (batch > 0)
      for (Layer& layer : suite.layers) layer.problem.n = batch;
    std::vector<Program> programs = suite_programs(suite, gpu, all);
    if (limit > 0 && programs.size() > limit) programs.resize(limit);
    std::filesystem::path worker = worker_option;
    if (worker.empty() && std::find(modes.begin(), modes.end(), "processes") != modes.end()) {
      const NvrtcWorkerLookup lookup = find_nvrtc_worker();
      if (!lookup.worker)
        throw InputError(
            fmt::format("no worker for --mode processes: {}; give --worker",
                        lookup.missing_reason.empty() ? "CONVGEN_NVRTC_WORKER=none" : lookup.missing_reason));
      worker = *lookup.worker;
    }
    fmt::print("# NVRTC compile throughput: {} for {} ({})\n\n", suite.name, gpu.name, gpu.arch);
    fmt::print(
        "{} distinct kernels ({}), {} cores, NVRTC {}; per kernel: from the call to its return (a worker's "
        "round trip included); start: one small compile per slot at once, before the timed ones (starts the "
        "workers).\n\n",
        programs.size(), all ? "every candidate" : "each layer's default", usable_cores(),
        nvrtc_version());
    fmt::print("| round | {}|--:|{}", kHeader, kAlignment);
    // Rounds alternate the modes' order, so that neither always runs first on a machine whose load drifts.
    std::map<std::pair<std::string, unsigned>, std::vector<Run>> runs;
    for (int round = 1; round <= rounds; ++round)
      for (const unsigned k : concurrency)
        for (std::size_t m = 0; m < modes.size(); ++m) {
          const std::string& mode = modes[round % 2 == 1 ? m : modes.size() - 1 - m];
          const Run run = measure(mode, k, programs, {.arch = gpu.arch}, worker);
          fmt::print("| {} | {} |\n", round, row(run));
          std::fflush(stdout);
          runs[{mode, k}].push_back(run);
        }
    if (rounds > 1) {
      fmt::print("\nThe best round (most kernels/s) of each:\n\n| {}|{}", kHeader, kAlignment);
      const auto slower = [](const Run& a, const Run& b) { return per_second(a) < per_second(b); };
      for (const unsigned k : concurrency)
        for (const std::string& mode : modes) {
          const std::vector<Run>& of = runs[{mode, k}];
          fmt::print("| {} |\n", row(*std::max_element(of.begin(), of.end(), slower)));
        }
    }
  } catch (const Error& e) {
    fmt::print(stderr, "convgen-compile-throughput: error: {}\n", e.what());
    return 1;
  }
  return 0;
}
