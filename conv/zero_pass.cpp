// zero_pass: a plan's zero step as a kernel (see zero_pass.hpp).
#include "conv/zero_pass.hpp"

#include <algorithm>
#include <cstdlib>
#include <map>
#include <memory>
#include <mutex>
#include <string_view>

#include <fmt/format.h>

#include "conv/conv_kernel.hpp"
#include "convgen/error.hpp"
#include "generator/render.hpp"

namespace convgen {
namespace {

constexpr int kZeroThreads = 256;
constexpr std::int64_t kZeroMaxBlocks = 1024;

// Bytes before the first 16-byte boundary and after the last one are written one at a time (fewer than 16 each, by
// the first threads); the rest as 16-byte stores, grid-stride.
constexpr const char* kZeroPassSource = R"(#include "grid_dependency.cuh"

struct __align__(16) convgen_zero16 { unsigned x, y, z, w; };

extern "C" __global__ void __launch_bounds__(256) convgen_zero_bytes(unsigned char* out, unsigned long long bytes) {
  convgen::wait_for_previous_grid();  // the previous kernel may still read or add into the buffer
  const unsigned long long misaligned = (unsigned long long)out & 15ull;
  unsigned long long head = misaligned == 0 ? 0 : 16 - misaligned;
  if (head > bytes) head = bytes;
  const unsigned long long vectors = (bytes - head) / 16;
  const unsigned long long tail = head + vectors * 16;
  const unsigned long long first = (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x;
  const unsigned long long stride = (unsigned long long)gridDim.x * blockDim.x;
  convgen_zero16* v = reinterpret_cast<convgen_zero16*>(out + head);
  for (unsigned long long i = first; i < vectors; i += stride) v[i] = convgen_zero16{0u, 0u, 0u, 0u};
  if (first < head) out[first] = 0;
  if (first < bytes - tail) out[tail + first] = 0;
}
)";

}  // namespace

const Cubin& zero_pass_cubin(const std::string& arch) {
  static std::mutex mutex;
  static auto* cubins = new std::map<std::string, std::unique_ptr<Cubin>>();  // left to the OS at exit
  const std::lock_guard lock(mutex);
  std::unique_ptr<Cubin>& cubin = (*cubins)[arch];
  if (!cubin) {
    const Program program{.name = "convgen_zero_pass.cu",
                          .source = kZeroPassSource,
                          .headers = {{"grid_dependency.cuh", template_text("grid_dependency.cuh")}}};
    cubin = std::make_unique<Cubin>(compile(program, kernel_compile_options(arch)));
  }
  return *cubin;
}

LaunchConfig zero_pass_config(std::int64_t bytes, bool early) {
  const std::int64_t vectors = std::max<std::int64_t>(bytes / 16, 1);
  const std::int64_t blocks = std::clamp<std::int64_t>((vectors + kZeroThreads - 1) / kZeroThreads, 1, kZeroMaxBlocks);
  return {.grid = {static_cast<unsigned>(blocks), 1, 1}, .block = {kZeroThreads, 1, 1}, .early = early};
}

bool parse_zero_step(const char* value) {
  if (value == nullptr || *value == '\0') return true;
  const std::string_view text(value);
  if (text == "kernel") return true;
  if (text == "memset") return false;
  throw InputError(fmt::format("CONVGEN_ZERO_STEP: expected 'kernel' or 'memset', got '{}'", text));
}

bool zero_step_by_kernel() {
  static const bool by_kernel = parse_zero_step(std::getenv("CONVGEN_ZERO_STEP"));
  return by_kernel;
}

}  // namespace convgen
