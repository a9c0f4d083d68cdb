// emit_library: turns a suite's layers and their kernels into a self-contained CMake project (convgen emit-lib).
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "conv/conv_kernel.hpp"
#include "convgen/gpu.hpp"
#include "generator/launch_plan.hpp"
#include "generator/shapes.hpp"
#include "runtime/jit_cache.hpp"
#include "runtime/thread_pool.hpp"

namespace convgen {

// Throws InputError unless `name` can name the library: a C identifier that starts with a letter (it becomes
// libNAME.a, NAME.h, the NAME_ prefix of the C API, namespace NAME and the CMake package NAME::NAME).
void check_library_name(std::string_view name);

// A kernel the tuning database measured fastest (and verified) for a problem on a GPU.
struct TunedKernel {
  std::string kernel;  // canonical kernel name
  double median_us = 0;
  std::int64_t measurement_id = 0;
  bool operator==(const TunedKernel&) const = default;
};

// Returns the tuning database's best verified kernel for a problem on a GPU, or nothing (TuningDb::best).
using TunedLookup = std::function<std::optional<TunedKernel>(const Gpu&, const Problem&)>;

// Where build_library takes its kernels from.
struct LibraryChoice {
  TunedLookup tuned;              // empty: every kernel is convgen's default choice (default_choice)
  bool fallback_default = false;  // with `tuned`: the default choice where it has nothing, else an error
  std::string source;             // with `tuned`: the database as the user named it, for messages ("--db t.db")
  std::string tune_command;       // with `tuned`: the command that would fill it, for the error
  std::string hint;               // with `tuned`: what else the error says (the database's GPUs), or empty
};

// One kernel of the library: built for one problem and architecture, how to run it, and where it came from.
struct LibraryKernel {
  BuiltKernel built;
  LaunchPlan plan;  // plan_of(built)
  // Per entry of the plan's kernel steps (by suffix), what each parameter binds to (entry_arguments).
  std::map<std::string, std::vector<std::string>> entries;
  std::optional<TunedKernel> tuned;  // from the tuning database; nothing: convgen's default choice
};

// Returns a library kernel with its plan and entries' arguments (plan_of, entry_arguments).
LibraryKernel library_kernel(const BuiltKernel& kernel, std::optional<TunedKernel> tuned = std::nullopt);

// One problem the library serves, and its kernel built for each of the library's architectures (in order).
struct LibraryProblem {
  std::string name;  // the layer's name; several joined by ", " when layers share the problem
  Problem problem;
  std::vector<LibraryKernel> kernels;  // kernels[i] is for LibraryDescription::gpus[i]
};

// Everything the emitted files are made from. Nothing in it varies between runs for the same inputs.
struct LibraryDescription {
  std::string name;       // checked by check_library_name
  std::string suite;      // the suite's name, for comments
  std::vector<Gpu> gpus;  // one per architecture, in --gpu order
  std::vector<LibraryProblem> problems;
  // plan_passes[g]: the plan passes (conv/plan_passes.hpp) compiled for gpus[g], which the library launches for the
  // zero and relu steps of that architecture's plans (early, like the plans' kernels); empty where no plan has one.
  // A description without them (shorter than gpus) zeroes with a memset, and refuses a plan with a relu step.
  std::vector<std::vector<char>> plan_passes;
};

// Returns the distinct problems of a suite in suite order, each named by every layer that has it (the library
// dispatches on the exact problem, so layers that share one share its kernel).
std::vector<Layer> distinct_problems(const Suite& suite);

// Returns how a built kernel runs: its buffers, setup steps and run steps.
LaunchPlan plan_of(const BuiltKernel& kernel);

// Returns what each parameter of the kernel's entry `entry_suffix` binds to, in order: "activation", "filter",
// "output", "workspace" (the caller's workspace) or the name of a buffer of its plan.
std::vector<std::string> entry_arguments(const BuiltKernel& kernel, std::string_view entry_suffix);

// A kernel chosen for one problem on one GPU, before it is built.
struct ChosenKernel {
  KernelSpec spec;
  std::optional<TunedKernel> tuned;  // nothing: the default choice
  bool operator==(const ChosenKernel&) const = default;
};

// Chooses the kernel of every layer (distinct problems) on every GPU: chosen[g][i] for gpus[g] and layers[i].
// With choice.tuned, the database's best; a problem it lacks takes the default choice with
// choice.fallback_default, else InputError lists every such problem and GPU and says how to fill the database.
std::vector<std::vector<ChosenKernel>> choose_kernels(const std::vector<Layer>& layers, const std::vector<Gpu>& gpus,
                                                      const LibraryChoice& choice);

// Chooses a kernel for every distinct problem of `suite` on every GPU (choose_kernels) and builds them through
// `cache` on `pool`; `on_built(item)` is called as each finishes. Throws InputError for a bad name, no GPU, two
// GPUs of one architecture or problems missing from the database, and Error listing every kernel that failed to
// build.
LibraryDescription build_library(std::string_view name, const Suite& suite, const std::vector<Gpu>& gpus,
                                 JitCache& cache, ThreadPool& pool, const LibraryChoice& choice = {},
                                 const std::function<void(const std::string&)>& on_built = {});

// Returns the files of the emitted project, by path relative to its folder ("include/NAME.h" ...). The same
// description gives the same bytes: no dates, no absolute paths, no commit.
std::map<std::string, std::string> render_library(const LibraryDescription& library);

// Writes `files` under `out` (creating folders); throws InputError naming a file that cannot be written.
void write_library(const std::filesystem::path& out, const std::map<std::string, std::string>& files);

// Returns a file of the project skeleton (emit/skeleton/<file>) with the placeholder library name cglib
// (and CGLIB) replaced by `library` (and its upper case). Throws InputError for an unknown file.
std::string skeleton_file(std::string_view file, std::string_view library);

// Returns the cubin bytes as the body of a C array: "0x7f,0x45,...", 16 bytes a line.
std::string cubin_array_text(const std::vector<char>& image);

}  // namespace convgen
