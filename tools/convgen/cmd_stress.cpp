// cmd_stress: `convgen stress`: seeded random problems (generator/random_problems), each served by every family that
// supports it, compiled, run and verified against the float64 reference as `convgen run` verifies; a summary by
// family, the shapes covered and every failure with the `convgen run` line that repeats it.
#include <chrono>
#include <cmath>
#include <future>
#include <map>
#include <mutex>
#include <random>
#include <thread>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "convgen/error.hpp"
#include "convgen/version.hpp"
#include "convgen/weights.hpp"
#include "generator/random_problems.hpp"
#include "measure/verify.hpp"
#include "reference/pruning.hpp"
#include "runtime/compiler.hpp"
#include "runtime/device.hpp"
#include "runtime/module.hpp"
#include "runtime/paths.hpp"
#include "tools/convgen/cli_common.hpp"
#include "tools/convgen/commands.hpp"

namespace convgen::cli {
namespace {

struct Options {
  int count = 200;
  std::uint64_t seed = 1;
  std::string families;
  std::string gpu = "live";
  std::string precisions = "fp32";
  std::string dims = "2,3";
  std::int64_t max_macs = RandomProblemOptions{}.max_macs;
  int random_candidates = 0;
  std::string out;
  bool dry_run = false;
  bool no_compile = false;
  bool no_cache = false;
  unsigned jobs = 0;
};

// Problems whose kernels compile together; the next chunk compiles while this one runs on the GPU.
constexpr int kChunkProblems = 16;

std::vector<std::string> split_list(const std::string& text) {
  std::vector<std::string> out;
  std::size_t start = 0;
  while (start <= text.size()) {
    const std::size_t end = std::min(text.find(',', start), text.size());
    if (end > start) out.push_back(text.substr(start, end - start));
    start = end + 1;
  }
  return out;
}

RandomProblemOptions problem_options(const Options& opts) {
  RandomProblemOptions o{.ranks = {}, .precisions = {}, .max_macs = opts.max_macs};
  for (const std::string& word : split_list(opts.dims)) {
    if (word != "1" && word != "2" && word != "3")
      throw InputError(fmt::format("--dims: unknown '{}', expected a list of 1, 2, 3", word));
    o.ranks.push_back(word[0] - '0');
  }
  const std::vector<std::string> precisions =
      opts.precisions == "all" ? std::vector<std::string>{"fp32", "tf32", "fp16", "bf16"} : split_list(opts.precisions);
  for (const std::string& word : precisions) {
    const auto p = parse_enum<Precision>(word);
    if (!p)
      throw InputError(
          fmt::format("--precision: unknown '{}', expected a list of {} (or all)", word, enum_choices<Precision>()));
    o.precisions.push_back(*p);
  }
  if (o.ranks.empty()) throw InputError("--dims: expected a list of 1, 2, 3");
  if (o.precisions.empty()) throw InputError("--precision: expected a list of fp32, tf32, fp16, bf16 (or all)");
  if (opts.max_macs < 4096) throw InputError(fmt::format("--max-macs must be at least 4096, got {}", opts.max_macs));
  return o;
}

std::vector<const Family*> selected_families(const std::string& names) {
  if (names.empty() || names == "all") return all_families();
  std::vector<const Family*> out;
  for (const std::string& name : split_list(names)) out.push_back(&family(name));
  return out;
}

// One problem of the run: the generated one, with its pruned filter attached where it has one.
struct StressProblem {
  RandomProblem generated;
  Problem problem;
  std::string key;  // the key without the filter's pattern: what `convgen run --problem` takes
};

// One kernel to verify on one problem.
struct Case {
  int problem = 0;  // index into the problems
  const Family* family = nullptr;
  KernelSpec spec;
  bool is_default = true;
};

enum class Status { passed, failed, compiled };

struct CaseResult {
  Status status = Status::failed;
  double rel_l2 = 0;
  double limit = 0;
  std::string message;  // a failure's
};

// The family's default kernel and, with `random_candidates`, that many others of its enumeration drawn from the
// problem's seed (std::mt19937_64, our own mapping to an index). Nothing when the family serves no default.
std::vector<Case> cases_of(int index, const StressProblem& sp, const Family& f, const Gpu& gpu, int random_candidates) {
  const std::optional<KernelSpec> chosen = f.default_spec(sp.problem, gpu);
  if (!chosen) return {};
  std::vector<Case> out{{.problem = index, .family = &f, .spec = *chosen}};
  if (random_candidates <= 0) return out;
  std::vector<KernelSpec> others = f.enumerate(sp.problem, gpu);
  std::erase(others, *chosen);
  std::uint64_t family_hash = 1469598103934665603ull;  // FNV-1a of the name
  for (const char ch : f.name()) family_hash = (family_hash ^ static_cast<unsigned char>(ch)) * 1099511628211ull;
  std::mt19937_64 engine(sp.generated.seed ^ family_hash);
  for (int i = 0; i < random_candidates && !others.empty(); ++i) {
    const std::size_t pick = static_cast<std::size_t>(engine() % others.size());
    out.push_back({.problem = index, .family = &f, .spec = others[pick], .is_default = false});
    others.erase(others.begin() + static_cast<std::ptrdiff_t>(pick));
  }
  return out;
}

std::string what_of(const std::exception_ptr& error) {
  try {
    std::rethrow_exception(error);
  } catch (const std::exception& e) {
    return e.what();
  } catch (...) {
    return "unknown exception";
  }
}

// The `convgen run` line that repeats one case: the same problem, kernel, inputs (seed) and filter.
std::string run_line(const Options& opts, const StressProblem& sp, const KernelSpec& spec) {
  std::string line =
      fmt::format("convgen run --problem {} --kernel {} --seed {}", sp.key, kernel_name(spec), sp.generated.seed);
  if (sp.generated.two_four)
    line += " --weight-sparsity 2:4";
  else if (sp.generated.weight_sparsity > 0)
    line += fmt::format(" --weight-sparsity {}", sp.generated.weight_sparsity);
  if (opts.gpu != "live") line += " --gpu " + opts.gpu;
  return line;
}

struct FamilyTally {
  int problems = 0;     // problems it was asked about
  int unsupported = 0;  // problems it serves no kernel for
  int kernels = 0;
  int passed = 0;
  int failed = 0;
  int compiled = 0;        // --dry-run
  double worst_ratio = 0;  // worst relative L2 error over the precision's limit
  double worst_rel_l2 = 0;
  std::string worst_case;
};

struct Summary {
  std::map<std::string, FamilyTally> families;
  std::map<std::string, std::map<std::string, int>> coverage;  // axis -> bucket -> problems
  std::vector<nlohmann::json> failures;
  nlohmann::json results = nlohmann::json::array();
  double seconds = 0;
  JitCache::Stats cache;
};

std::string markdown(const Options& opts, const RandomProblemOptions& po, const Gpu& gpu, const Summary& s) {
  std::vector<std::string> precisions;
  for (const Precision p : po.precisions) precisions.emplace_back(to_string(p));
  std::string md = fmt::format(
      "# convgen stress: {} problems of seed {} ({}-D; {}; at most {} MACs each), {} on {} ({})\n\n", opts.count,
      opts.seed, fmt::join(po.ranks, "-D, "), fmt::join(precisions, ", "), po.max_macs,
      opts.dry_run ? (opts.no_compile ? "chosen, not compiled" : "compiled, not run") : "verified", gpu.name, gpu.arch);
  md += opts.dry_run
            ? "| family | problems | unsupported | kernels | compiled | failed |\n|---|---:|---:|---:|---:|---:|\n"
            : "| family | problems | unsupported | kernels | passed | failed | worst rel L2 | of the limit | "
              "worst case |\n|---|---:|---:|---:|---:|---:|---:|---:|---|\n";
  FamilyTally total;
  for (const auto& [name, t] : s.families) {
    if (opts.dry_run)
      md += fmt::format("| {} | {} | {} | {} | {} | {} |\n", name, t.problems, t.unsupported, t.kernels, t.compiled,
                        t.failed);
    else
      md += fmt::format("| {} | {} | {} | {} | {} | {} | {:.3g} | {:.3g} | {} |\n", name, t.problems, t.unsupported,
                        t.kernels, t.passed, t.failed, t.worst_rel_l2, t.worst_ratio,
                        t.worst_case.empty() ? "-" : "`" + t.worst_case + "`");
    total.kernels += t.kernels;
    total.passed += t.passed;
    total.failed += t.failed;
    total.compiled += t.compiled;
  }
  md += fmt::format("\n{} kernels: {} {}, {} failed, in {:.0f} s ({} compiled, {} from the JIT cache)\n\n",
                    total.kernels, opts.dry_run ? total.compiled : total.passed, opts.dry_run ? "compiled" : "passed",
                    total.failed, s.seconds, s.cache.compiles, s.cache.memory_hits + s.cache.disk_hits);
  md += "## Shapes covered (problems per bucket)\n\n| axis | buckets |\n|---|---|\n";
  for (const CoverageAxis& axis : coverage_axes()) {
    const auto counts = s.coverage.find(std::string(axis.axis));
    std::vector<std::string> buckets;
    for (const std::string& bucket : axis.buckets) {
      const int n = counts == s.coverage.end() || !counts->second.contains(bucket) ? 0 : counts->second.at(bucket);
      buckets.push_back(fmt::format("{} {}", bucket, n));
    }
    md += fmt::format("| {} | {} |\n", axis.axis, fmt::join(buckets, ", "));
  }
  md += "\n## Failures\n\n";
  if (s.failures.empty()) md += "none\n";
  for (const nlohmann::json& f : s.failures)
    md += fmt::format("- problem {} ({}), {}: {}\n  `{}`\n", f["problem"].get<int>(), f["family"].get<std::string>(),
                      f["kernel"].get<std::string>(), f["error"].get<std::string>(), f["repeat"].get<std::string>());
  return md;
}

nlohmann::json json_report(const Options& opts, const RandomProblemOptions& po, const Gpu& gpu, const Summary& s) {
  nlohmann::json families = nlohmann::json::object();
  for (const auto& [name, t] : s.families)
    families[name] = {{"problems", t.problems},
                      {"unsupported", t.unsupported},
                      {"kernels", t.kernels},
                      {"passed", t.passed},
                      {"failed", t.failed},
                      {"compiled", t.compiled},
                      {"worst_rel_l2", t.worst_rel_l2},
                      {"worst_of_limit", t.worst_ratio},
                      {"worst_case", t.worst_case}};
  std::vector<std::string> precisions;
  for (const Precision p : po.precisions) precisions.emplace_back(to_string(p));
  return {{"command", invocation()},
          {"convgen", build_version()},
          {"commit", build_commit()},
          {"nvrtc", nvrtc_version()},
          {"gpu", gpu.name},
          {"arch", gpu.arch},
          {"seed", opts.seed},
          {"count", opts.count},
          {"dims", po.ranks},
          {"precisions", precisions},
          {"max_macs", po.max_macs},
          {"random_candidates", opts.random_candidates},
          {"mode", opts.dry_run ? (opts.no_compile ? "chosen" : "compiled") : "verified"},
          {"seconds", s.seconds},
          {"families", families},
          {"coverage", s.coverage},
          {"failures", s.failures},
          {"results", s.results}};
}

void run_stress(const Options& opts) {
  if (opts.count < 0) throw InputError(fmt::format("--count must not be negative, got {}", opts.count));
  if (opts.no_compile && !opts.dry_run) throw InputError("--no-compile goes with --dry-run");
  if (opts.random_candidates < 0)
    throw InputError(fmt::format("--random-candidates must not be negative, got {}", opts.random_candidates));
  const RandomProblemOptions po = problem_options(opts);
  const std::vector<const Family*> families = selected_families(opts.families);
  const Gpu gpu = load_gpu_descriptor(opts.gpu, !opts.dry_run);
  std::optional<Context> context;
  if (!opts.dry_run) context.emplace(0);  // "no CUDA device: ..." here, before any work, where there is none
  const auto start = std::chrono::steady_clock::now();

  Summary summary;
  std::vector<StressProblem> problems;
  std::vector<Case> cases;
  for (const RandomProblem& rp : random_problems(opts.seed, opts.count, po)) {
    StressProblem sp{.generated = rp, .problem = rp.problem, .key = problem_key(rp.problem)};
    if (rp.two_four)
      sp.problem = with_weights(rp.problem, two_four_pruned_random_filter(rp.problem, rp.seed));
    else if (rp.weight_sparsity > 0)
      sp.problem = with_weights(rp.problem, pruned_random_filter(rp.problem, rp.weight_sparsity, rp.seed));
    for (const auto& [axis, bucket] : coverage_buckets(rp)) {
      ++summary.coverage[std::string(axis)][bucket];
    }
    const int index = static_cast<int>(problems.size());
    for (const Family* f : families) {
      FamilyTally& t = summary.families[std::string(f->name())];
      ++t.problems;
      std::vector<Case> mine = cases_of(index, sp, *f, gpu, opts.random_candidates);
      if (mine.empty()) ++t.unsupported;
      t.kernels += static_cast<int>(mine.size());
      cases.insert(cases.end(), mine.begin(), mine.end());
    }
    problems.push_back(std::move(sp));
  }

  const auto record = [&](const Case& c, const CaseResult& r) {
    const StressProblem& sp = problems[static_cast<std::size_t>(c.problem)];
    FamilyTally& t = summary.families[std::string(c.family->name())];
    const std::string name = kernel_name(c.spec);
    if (r.status == Status::passed) ++t.passed;
    if (r.status == Status::compiled) ++t.compiled;
    if (r.status == Status::failed) {
      ++t.failed;
      const std::string repeat = run_line(opts, sp, c.spec);
      summary.failures.push_back({{"problem", c.problem},
                                  {"key", sp.key},
                                  {"family", c.family->name()},
                                  {"kernel", name},
                                  {"error", r.message},
                                  {"repeat", repeat}});
      fmt::print(stderr, "FAIL problem {} {}: {}\n  {}\n", c.problem, name, r.message, repeat);
    }
    const double ratio = r.limit > 0 ? r.rel_l2 / r.limit : 0;
    if (r.status != Status::compiled && (t.worst_case.empty() || ratio > t.worst_ratio)) {
      t.worst_ratio = ratio;
      t.worst_rel_l2 = r.rel_l2;
      t.worst_case = fmt::format("{} on problem {}", name, c.problem);
    }
    summary.results.push_back({{"problem", c.problem},
                               {"key", sp.key},
                               {"family", c.family->name()},
                               {"kernel", name},
                               {"default", c.is_default},
                               {"status", r.status == Status::passed     ? "passed"
                                          : r.status == Status::compiled ? "compiled"
                                                                         : "failed"},
                               {"rel_l2", r.rel_l2}});
  };

  if (opts.no_compile) {
    for (const Case& c : cases) {
      const StressProblem& sp = problems[static_cast<std::size_t>(c.problem)];
      fmt::print("{} {}: {}\n", c.problem, sp.key, kernel_name(c.spec));
    }
  } else {
    // Chunks of problems: the kernels of chunk i + 1 compile (on the pool: worker processes) while chunk i runs.
    // Each chunk has its JIT cache object, so that the cubins of a long run are not all kept in memory.
    ThreadPool pool(opts.jobs > 0 ? opts.jobs : usable_cores());
    std::vector<std::pair<std::size_t, std::size_t>> chunks;  // [first, last) of cases
    for (std::size_t first = 0; first < cases.size();) {
      std::size_t last = first;
      const int chunk_end = cases[first].problem + kChunkProblems;
      while (last < cases.size() && cases[last].problem < chunk_end) ++last;
      chunks.emplace_back(first, last);
      first = last;
    }
    std::mutex stats_mutex;
    const auto build_chunk = [&](std::size_t chunk) {
      std::vector<BuildRequest> requests;
      for (std::size_t i = chunks[chunk].first; i < chunks[chunk].second; ++i)
        requests.push_back({problems[static_cast<std::size_t>(cases[i].problem)].problem, cases[i].spec});
      JitCache cache(opts.no_cache ? std::nullopt : std::optional(user_cache_dir() / "jit"));
      std::vector<BuildOutcome> outcomes = build_kernels(requests, gpu, cache, pool);
      const JitCache::Stats stats = cache.stats();
      std::lock_guard lock(stats_mutex);
      summary.cache.compiles += stats.compiles;
      summary.cache.memory_hits += stats.memory_hits;
      summary.cache.disk_hits += stats.disk_hits;
      return outcomes;
    };
    Progress progress(opts.dry_run ? "compiling" : "stress", cases.size());
    std::future<std::vector<BuildOutcome>> next;
    if (!chunks.empty()) next = std::async(std::launch::async, build_chunk, 0);
    for (std::size_t chunk = 0; chunk < chunks.size(); ++chunk) {
      std::vector<BuildOutcome> outcomes = next.get();
      if (chunk + 1 < chunks.size()) next = std::async(std::launch::async, build_chunk, chunk + 1);
      // One measurement (inputs, float64 reference) per problem, shared by its kernels, as `convgen run` makes it.
      std::unique_ptr<ConvMeasurement> measurement;
      std::string measurement_error;
      int measured = -1;
      Stream* stream = nullptr;
      std::optional<Stream> owned_stream;
      if (!opts.dry_run) stream = &owned_stream.emplace();
      for (std::size_t i = chunks[chunk].first; i < chunks[chunk].second; ++i) {
        const Case& c = cases[i];
        const StressProblem& sp = problems[static_cast<std::size_t>(c.problem)];
        const BuildOutcome& outcome = outcomes[i - chunks[chunk].first];
        CaseResult r{.limit = error_limit(sp.problem.precision)};
        if (const auto* error = std::get_if<std::exception_ptr>(&outcome)) {
          r.message = "does not build: " + what_of(*error);
        } else if (opts.dry_run) {
          r.status = Status::compiled;
        } else {
          if (measured != c.problem) {
            measurement.reset();
            measurement_error.clear();
            measured = c.problem;
            try {
              measurement = std::make_unique<ConvMeasurement>(
                  sp.problem, expected_inputs(sp.problem, SparsityPattern::blob, sp.generated.seed));
            } catch (const std::exception& e) {
              measurement_error = e.what();
            }
          }
          if (!measurement) {
            r.message = "cannot be measured: " + measurement_error;
          } else {
            try {
              const Verification v = measurement->verify(kernel_candidate(std::get<BuiltKernel>(outcome)), *stream);
              r.status = v.passed ? Status::passed : Status::failed;
              r.rel_l2 = v.stats.nan_count > 0 ? INFINITY : v.stats.rel_l2;
              r.message = v.failure;
            } catch (const std::exception& e) {
              r.message = fmt::format("the launch failed: {}", e.what());
            }
          }
        }
        record(c, r);
        progress.step(fmt::format("problem {} {}: {}", c.problem, kernel_name(c.spec),
                                  r.status == Status::failed ? "FAIL" : "ok"));
      }
    }
    progress.done();
  }
  summary.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();

  const std::string md = markdown(opts, po, gpu, summary);
  fmt::print("{}", md);
  if (!opts.out.empty()) {
    const bool json = opts.out.ends_with(".json");
    write_output_file(opts.out, json ? json_report(opts, po, gpu, summary).dump(2) + "\n" : md);
    fmt::print(stderr, "wrote {}\n", opts.out);
  }
  if (!summary.failures.empty())
    throw Error(fmt::format("{} of {} kernels failed {}", summary.failures.size(), cases.size(),
                            opts.dry_run ? "to build" : "verification"));
}

}  // namespace

void add_stress_command(CLI::App& app) {
  auto opts = std::make_shared<Options>();
  CLI::App* cmd = app.add_subcommand(
      "stress",
      "Generate seeded random valid problems (2-D and 3-D, both layouts, filters 1-7 and non-square, strides, "
      "padding, dilation, groups and depthwise, batches, activation and filter zeros, epilogues), and verify every "
      "family's default kernel for each on the GPU against the float64 reference; a summary by family, the shapes "
      "covered and every failure with the `convgen run` line that repeats it. Fails when any kernel fails");
  cmd->add_option("--count", opts->count, "Problems to generate")->capture_default_str();
  cmd->add_option("--seed", opts->seed,
                  "Seed of the problem sequence: the same problems on every machine (problem i does not depend on "
                  "--count)")
      ->capture_default_str();
  cmd->add_option("--families", opts->families, "Families to verify, comma-separated (default: all)");
  cmd->add_option("--gpu", opts->gpu, "GPU descriptor; the present device's properties win")->capture_default_str();
  cmd->add_option("--precision", opts->precisions,
                  "Precisions the problems are drawn from, comma-separated, or all (tf32, fp16 and bf16 go to the "
                  "families that serve them: igemm, igemm_tc, igemm_wgmma, sparse24_tc)")
      ->capture_default_str();
  cmd->add_option("--dims", opts->dims, "Spatial dims the problems are drawn from: a list of 1, 2, 3")
      ->capture_default_str();
  cmd->add_option("--max-macs", opts->max_macs,
                  "Multiply-adds per problem at most (the float64 reference's work; sizes shrink to fit)")
      ->capture_default_str();
  cmd->add_option("--random-candidates", opts->random_candidates,
                  "Besides each family's default kernel, verify this many other kernels of its enumeration, drawn "
                  "from the problem's seed")
      ->capture_default_str();
  cmd->add_option("--out", opts->out,
                  "Also write the summary to FILE: JSON (every kernel's result) when it ends "
                  "in .json, else Markdown");
  cmd->add_flag("--dry-run", opts->dry_run,
                "Generate the problems and compile their kernels, without a GPU (give --gpu NAME); nothing runs");
  cmd->add_flag("--no-compile", opts->no_compile,
                "With --dry-run: only list each problem's kernels, one line each, without compiling");
  cmd->add_flag("--no-cache", opts->no_cache, "Compile without the disk JIT cache");
  cmd->add_option("--jobs", opts->jobs, "Concurrent compiles (default: one per core this process may run on)");
  cmd->callback([opts] { run_stress(*opts); });
}

}  // namespace convgen::cli
