// compiler: NVRTC to cubin, option list, ptxas report parsing, failing sources saved for the user.
#include "runtime/compiler.hpp"

#include <algorithm>
#include <cctype>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <memory>
#include <mutex>
#include <regex>

#include <fmt/format.h>
#include <nvrtc.h>

namespace convgen {
namespace {

void nvrtc_check(nvrtcResult result, const char* expr, const char* file, int line) {
  if (result != NVRTC_SUCCESS)
    throw ApiError(fmt::format("{}:{}: {} failed: {}", file, line, expr, nvrtcGetErrorString(result)));
}
#define CONVGEN_NVRTC_CHECK(expr) ::convgen::nvrtc_check((expr), #expr, __FILE__, __LINE__)

// Writes the failing source where the user can open it; returns the path ("" if it could not be written).
std::string save_failing_source(const Program& program) {
  std::error_code ec;
  const auto dir = std::filesystem::temp_directory_path(ec) / "convgen-failed";
  std::filesystem::create_directories(dir, ec);
  if (ec) return {};
  const auto path = dir / program.name;
  std::ofstream out(path, std::ios::binary);
  out << program.source;
  return out ? path.string() : std::string{};
}

// RAII owner of an nvrtcProgram.
class NvrtcProgram {
 public:
  explicit NvrtcProgram(const Program& program) {
    std::vector<const char*> header_texts, header_names;
    for (const auto& [name, text] : program.headers) {
      header_names.push_back(name.c_str());
      header_texts.push_back(text.c_str());
    }
    CONVGEN_NVRTC_CHECK(nvrtcCreateProgram(&handle_, program.source.c_str(), program.name.c_str(),
                                           static_cast<int>(header_texts.size()), header_texts.data(),
                                           header_names.data()));
  }
  ~NvrtcProgram() { nvrtcDestroyProgram(&handle_); }
  NvrtcProgram(const NvrtcProgram&) = delete;
  NvrtcProgram& operator=(const NvrtcProgram&) = delete;
  nvrtcProgram get() const { return handle_; }

 private:
  nvrtcProgram handle_ = nullptr;
};

}  // namespace

std::vector<std::string> nvrtc_options(const CompileOptions& options) {
  std::vector<std::string> list = {
      fmt::format("--gpu-architecture={}", options.arch),
      "--std=c++17",
      "--device-as-default-execution-space",
      "--fmad=true",
      "--ptxas-options=-v",
      // NVRTC 13 keeps its own cache (in the driver's ComputeCache when libcuda is present) and a hit there
      // returns an empty log, losing the ptxas report; convgen's JitCache does the caching, keyed on all inputs.
      "--no-cache",
  };
  list.insert(list.end(), options.extra.begin(), options.extra.end());
  return list;
}

Cubin compile(const Program& program, const CompileOptions& options) {
  const auto start = std::chrono::steady_clock::now();
  check_nvrtc_arch(options.arch);
  NvrtcProgram prog(program);
  const std::vector<std::string> opts = nvrtc_options(options);
  std::vector<const char*> opt_ptrs;
  for (const auto& o : opts) opt_ptrs.push_back(o.c_str());
  const nvrtcResult result = nvrtcCompileProgram(prog.get(), static_cast<int>(opt_ptrs.size()), opt_ptrs.data());

  std::size_t log_size = 0;
  CONVGEN_NVRTC_CHECK(nvrtcGetProgramLogSize(prog.get(), &log_size));
  std::string log(log_size, '\0');
  if (log_size > 0) CONVGEN_NVRTC_CHECK(nvrtcGetProgramLog(prog.get(), log.data()));
  while (!log.empty() && (log.back() == '\0' || log.back() == '\n')) log.pop_back();

  if (result != NVRTC_SUCCESS) {
    const std::string saved = save_failing_source(program);
    throw CompileError(fmt::format("nvrtc failed to compile {} for {} ({}); options: {}; source saved to {}\n{}",
                                   program.name, options.arch, nvrtcGetErrorString(result), fmt::join(opts, " "),
                                   saved.empty() ? "(nowhere: could not write)" : saved, log),
                       log, opts, saved);
  }
  Cubin cubin;
  cubin.arch = options.arch;
  std::size_t size = 0;
  CONVGEN_NVRTC_CHECK(nvrtcGetCUBINSize(prog.get(), &size));
  cubin.image.resize(size);
  CONVGEN_NVRTC_CHECK(nvrtcGetCUBIN(prog.get(), cubin.image.data()));
  cubin.log = std::move(log);
  cubin.report = parse_ptxas_report(cubin.log);
  cubin.entry_reports = parse_ptxas_reports(cubin.log);
  cubin.compile_ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  return cubin;
}

namespace {

// The compile set by set_cache_compiler; null: compile(). Shared, so that a compile that started keeps the function
// it started with.
std::mutex cache_compiler_mutex;
std::shared_ptr<const CompileFunction> cache_compiler;

}  // namespace

void set_cache_compiler(CompileFunction compile_function) {
  std::shared_ptr<const CompileFunction> chosen;
  if (compile_function) chosen = std::make_shared<const CompileFunction>(std::move(compile_function));
  std::lock_guard lock(cache_compiler_mutex);
  cache_compiler = std::move(chosen);
}

Cubin compile_for_cache(const Program& program, const CompileOptions& options) {
  std::shared_ptr<const CompileFunction> chosen;
  {
    std::lock_guard lock(cache_compiler_mutex);
    chosen = cache_compiler;
  }
  return chosen ? (*chosen)(program, options) : compile(program, options);
}

PtxasReport parse_ptxas_report(const std::string& full_log) {
  // Only the first kernel's figures: stop where a second "Compiling entry function" begins.
  const std::size_t first = full_log.find("Compiling entry function");
  const std::size_t second =
      first == std::string::npos ? std::string::npos : full_log.find("Compiling entry function", first + 1);
  const std::string log = full_log.substr(0, second);
  PtxasReport report;
  std::smatch m;
  static const std::regex registers(R"(Used (\d+) registers)");
  static const std::regex spills(R"((\d+) bytes spill stores, (\d+) bytes spill loads)");
  static const std::regex stack(R"((\d+) bytes stack frame)");
  static const std::regex smem(R"((\d+) bytes smem)");
  static const std::regex cmem(R"((\d+) bytes cmem\[0\])");
  if (std::regex_search(log, m, registers)) report.registers = std::stoi(m[1]);
  if (std::regex_search(log, m, spills)) {
    report.spill_store_bytes = std::stoi(m[1]);
    report.spill_load_bytes = std::stoi(m[2]);
  }
  if (std::regex_search(log, m, stack)) report.stack_bytes = std::stoi(m[1]);
  if (std::regex_search(log, m, smem)) report.smem_bytes = std::stoi(m[1]);
  if (std::regex_search(log, m, cmem)) report.cmem0_bytes = std::stoi(m[1]);
  return report;
}

std::map<std::string, PtxasReport> parse_ptxas_reports(const std::string& log) {
  // Each kernel's figures follow its "Compiling entry function 'name'" line, up to the next kernel's.
  static const std::regex entry(R"(Compiling entry function '([^']+)')");
  std::map<std::string, PtxasReport> reports;
  std::vector<std::pair<std::string, std::size_t>> starts;
  for (auto it = std::sregex_iterator(log.begin(), log.end(), entry); it != std::sregex_iterator(); ++it)
    starts.emplace_back((*it)[1].str(), static_cast<std::size_t>(it->position()));
  for (std::size_t i = 0; i < starts.size(); ++i) {
    const std::size_t end = i + 1 < starts.size() ? starts[i + 1].second : log.size();
    reports[starts[i].first] = parse_ptxas_report(log.substr(starts[i].second, end - starts[i].second));
  }
  return reports;
}

std::string nvrtc_version() {
  int major = 0, minor = 0;
  CONVGEN_NVRTC_CHECK(nvrtcVersion(&major, &minor));
  return fmt::format("{}.{}", major, minor);
}

std::vector<std::string> nvrtc_supported_archs() {
  int count = 0;
  CONVGEN_NVRTC_CHECK(nvrtcGetNumSupportedArchs(&count));
  std::vector<int> numbers(static_cast<std::size_t>(count));
  if (count > 0) CONVGEN_NVRTC_CHECK(nvrtcGetSupportedArchs(numbers.data()));
  std::vector<std::string> archs;
  for (int n : numbers) archs.push_back(fmt::format("sm_{}", n));
  return archs;
}

void check_nvrtc_arch(const std::string& arch) {
  static const std::vector<std::string> supported = nvrtc_supported_archs();
  // "sm_90a" (architecture-specific features) is compiled by an NVRTC that compiles sm_90.
  std::string base = arch;
  while (!base.empty() && std::isalpha(static_cast<unsigned char>(base.back()))) base.pop_back();
  if (std::find(supported.begin(), supported.end(), base) != supported.end()) return;
  throw InputError(fmt::format("NVRTC {} cannot compile for {} (it compiles for {}): use a GPU of one of these "
                               "architectures, or a CUDA toolkit whose NVRTC still compiles for {}",
                               nvrtc_version(), arch, fmt::join(supported, ", "), arch));
}

}  // namespace convgen
