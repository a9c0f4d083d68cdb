// emit_library: turns a suite's layers and their kernels into a self-contained CMake project (convgen emit-lib).
#pragma once

#include <filesystem>
#include <functional>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "conv/conv_kernel.hpp"
#include "convgen/gpu.hpp"
#include "generator/shapes.hpp"
#include "runtime/jit_cache.hpp"
#include "runtime/thread_pool.hpp"

namespace convgen {

// Throws InputError unless `name` can name the library: a C identifier that starts with a letter (it becomes
// libNAME.a, NAME.h, the NAME_ prefix of the C API, namespace NAME and the CMake package NAME::NAME).
void check_library_name(std::string_view name);

// One problem the library serves, and its kernel built for each of the library's architectures (in order).
struct LibraryProblem {
  std::string name;  // the layer's name; several joined by ", " when layers share the problem
  Problem problem;
  std::vector<BuiltKernel> kernels;  // kernels[i] is for LibraryDescription::gpus[i]
};

// Everything the emitted files are made from. Nothing in it varies between runs for the same inputs.
struct LibraryDescription {
  std::string name;       // checked by check_library_name
  std::string suite;      // the suite's name, for comments
  std::vector<Gpu> gpus;  // one per architecture, in --gpu order
  std::vector<LibraryProblem> problems;
};

// Returns the distinct problems of a suite in suite order, each named by every layer that has it (the library
// dispatches on the exact problem, so layers that share one share its kernel).
std::vector<Layer> distinct_problems(const Suite& suite);

// Chooses a kernel for every distinct problem of `suite` on every GPU (default_choice: the tuning database is
// issue 4's) and builds them through `cache` on `pool`; `on_built(item)` is called as each finishes. Throws
// InputError for a bad name, no GPU, two GPUs of one architecture or a kernel that needs a workspace, and Error
// listing every kernel that failed to build.
LibraryDescription build_library(std::string_view name, const Suite& suite, const std::vector<Gpu>& gpus,
                                 JitCache& cache, ThreadPool& pool,
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
