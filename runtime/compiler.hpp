// compiler: NVRTC compilation of kernel source to a cubin for a real architecture, with the ptxas report.
#pragma once

#include <functional>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "convgen/error.hpp"

namespace convgen {

// A program to compile: the source, its name (for messages and #line) and the headers it may include.
struct Program {
  std::string name;                                        // "igemm_m64_....cu"
  std::string source;
  std::vector<std::pair<std::string, std::string>> headers;  // {include name, text}
};

struct CompileOptions {
  std::string arch = "sm_90";              // a real architecture: sm_80, sm_90, sm_90a ...
  std::vector<std::string> extra;          // further NVRTC options
  bool operator==(const CompileOptions&) const = default;
};

// What ptxas said of one kernel (-v): registers, spills, shared memory and stack.
struct PtxasReport {
  int registers = 0;
  int spill_store_bytes = 0;
  int spill_load_bytes = 0;
  int smem_bytes = 0;         // static shared memory
  int stack_bytes = 0;
  int cmem0_bytes = 0;        // kernel parameter constant bank
  bool operator==(const PtxasReport&) const = default;
};

// A compiled program.
struct Cubin {
  std::string arch;
  std::vector<char> image;    // the cubin (ELF)
  std::string log;            // NVRTC's log, including the ptxas report
  PtxasReport report;         // of the first kernel in the log
  double compile_ms = 0;      // wall time of the compile (0 when it came from a cache)
  // Every kernel's report in the log, by entry function name: parsed once when compiled or read from disk, so that
  // a cache hit costs no parsing (std::regex over the log takes about 100 µs).
  std::map<std::string, PtxasReport> entry_reports;
};

// Returns the full NVRTC option list for `options` (architecture, language standard, ptxas -v ...).
std::vector<std::string> nvrtc_options(const CompileOptions& options);

// Compiles `program` with NVRTC to a cubin. Throws CompileError on failure.
Cubin compile(const Program& program, const CompileOptions& options);

// A way to compile: compile() itself, or the same work done elsewhere (CompilerProcesses: in worker processes).
using CompileFunction = std::function<Cubin(const Program&, const CompileOptions&)>;

// Chooses how this process compiles on a JIT cache miss (compile_for_cache); an empty function restores compile()
// in this process, the default. Set it before compiles start, not while they run (WorkerCompiles does both ends).
void set_cache_compiler(CompileFunction compile_function);

// Compiles as set_cache_compiler chose: what a JitCache runs on a miss.
Cubin compile_for_cache(const Program& program, const CompileOptions& options);

// Parses the ptxas -v report in an NVRTC log ("Used 40 registers, ..."); zeros where a figure is absent.
PtxasReport parse_ptxas_report(const std::string& log);

// Returns the report of every kernel in an NVRTC log, by entry function name (a program may hold several).
std::map<std::string, PtxasReport> parse_ptxas_reports(const std::string& log);

// Returns NVRTC's version as "major.minor".
std::string nvrtc_version();

// Returns the architectures this NVRTC compiles for, as "sm_75", "sm_80", ... (nvrtcGetSupportedArchs).
std::vector<std::string> nvrtc_supported_archs();

// Throws InputError naming what this NVRTC does compile for when it cannot compile for `arch` ("sm_90" or an
// architecture-specific "sm_90a", judged by its number): one clear message before any kernel is built, instead of
// NVRTC's "invalid value for --gpu-architecture" once per kernel (CUDA 13 dropped sm_70, for instance).
void check_nvrtc_arch(const std::string& arch);

// A failed NVRTC compile: what() has the kernel name, options and log; the source is saved to a file.
class CompileError : public Error {
 public:
  CompileError(std::string message, std::string log, std::vector<std::string> options, std::string saved_source)
      : Error(std::move(message)), log_(std::move(log)), options_(std::move(options)),
        saved_source_(std::move(saved_source)) {}
  const std::string& log() const { return log_; }
  const std::vector<std::string>& options() const { return options_; }
  const std::string& saved_source() const { return saved_source_; }

 private:
  std::string log_;
  std::vector<std::string> options_;
  std::string saved_source_;
};

}  // namespace convgen
