// plan_passes: the kernels of a plan's zero and relu steps (see plan_passes.hpp).
#include "conv/plan_passes.hpp"

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

constexpr int kPassThreads = 256;
constexpr std::int64_t kPassMaxBlocks = 1024;

// The zero pass: bytes before the first 16-byte boundary and after the last one are written one at a time (fewer
// than 16 each, by the first threads); the rest as 16-byte stores, grid-stride.
// The relu pass: where input and output share their offset from a 16-byte boundary (the workspace buffer it writes
// is 256-byte aligned, so an aligned activation), the elements before the first boundary and after the last one one
// at a time, the rest four 32-bit words a thread; elsewhere every element alone, grid-stride. A 32-bit word holds
// one fp32 element or two 16-bit ones, each cleared where its sign bit is set.
constexpr const char* kPassSource = R"(#include "grid_dependency.cuh"

struct __align__(16) convgen_pass16 { unsigned x, y, z, w; };

extern "C" __global__ void __launch_bounds__(256) convgen_zero_bytes(unsigned char* out, unsigned long long bytes) {
  convgen::wait_for_previous_grid();  // the previous kernel may still read or add into the buffer
  const unsigned long long misaligned = (unsigned long long)out & 15ull;
  unsigned long long head = misaligned == 0 ? 0 : 16 - misaligned;
  if (head > bytes) head = bytes;
  const unsigned long long vectors = (bytes - head) / 16;
  const unsigned long long tail = head + vectors * 16;
  const unsigned long long first = (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x;
  const unsigned long long stride = (unsigned long long)gridDim.x * blockDim.x;
  convgen_pass16* v = reinterpret_cast<convgen_pass16*>(out + head);
  for (unsigned long long i = first; i < vectors; i += stride) v[i] = convgen_pass16{0u, 0u, 0u, 0u};
  if (first < head) out[first] = 0;
  if (first < bytes - tail) out[tail + first] = 0;
}

__device__ __forceinline__ unsigned convgen_relu_word32(unsigned w) { return (w & 0x80000000u) ? 0u : w; }
__device__ __forceinline__ unsigned convgen_relu_word16(unsigned w) {
  return w & ~(((w >> 15) & 0x00010001u) * 0xffffu);  // each half cleared where its sign bit is set
}
__device__ __forceinline__ unsigned short convgen_relu_half(unsigned short h) {
  return (h & 0x8000u) ? (unsigned short)0 : h;
}

template <int kBits>
__device__ __forceinline__ void convgen_relu(const unsigned char* in, unsigned char* out, unsigned long long bytes) {
  convgen::wait_for_previous_grid();  // the previous kernel may still write the activation, or read the buffer
  constexpr unsigned long long kElement = kBits / 8;
  const unsigned long long first = (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x;
  const unsigned long long stride = (unsigned long long)gridDim.x * blockDim.x;
  const unsigned long long misaligned = (unsigned long long)in & 15ull;
  const bool vectors_apply = misaligned == ((unsigned long long)out & 15ull) && misaligned % kElement == 0;
  unsigned long long head = vectors_apply ? (16 - misaligned) & 15ull : bytes;
  if (head > bytes) head = bytes;
  // The elements outside the aligned vectors (all of them where input and output do not share an alignment).
  const unsigned long long vectors = (bytes - head) / 16;
  const unsigned long long tail = head + vectors * 16;
  const unsigned long long loose = head / kElement + (bytes - tail) / kElement;
  for (unsigned long long e = first; e < loose; e += stride) {
    const unsigned long long at = e < head / kElement ? e * kElement : tail + (e - head / kElement) * kElement;
    if (kBits == 32) {
      const unsigned w = *reinterpret_cast<const unsigned*>(in + at);
      *reinterpret_cast<unsigned*>(out + at) = convgen_relu_word32(w);
    } else {
      const unsigned short h = *reinterpret_cast<const unsigned short*>(in + at);
      *reinterpret_cast<unsigned short*>(out + at) = convgen_relu_half(h);
    }
  }
  const convgen_pass16* src = reinterpret_cast<const convgen_pass16*>(in + head);
  convgen_pass16* dst = reinterpret_cast<convgen_pass16*>(out + head);
  for (unsigned long long i = first; i < vectors; i += stride) {
    convgen_pass16 v = src[i];
    if (kBits == 32) {
      v.x = convgen_relu_word32(v.x), v.y = convgen_relu_word32(v.y);
      v.z = convgen_relu_word32(v.z), v.w = convgen_relu_word32(v.w);
    } else {
      v.x = convgen_relu_word16(v.x), v.y = convgen_relu_word16(v.y);
      v.z = convgen_relu_word16(v.z), v.w = convgen_relu_word16(v.w);
    }
    dst[i] = v;
  }
}

extern "C" __global__ void __launch_bounds__(256) convgen_relu_b32(const unsigned char* in, unsigned char* out,
                                                                  unsigned long long bytes) {
  convgen_relu<32>(in, out, bytes);
}

extern "C" __global__ void __launch_bounds__(256) convgen_relu_b16(const unsigned char* in, unsigned char* out,
                                                                  unsigned long long bytes) {
  convgen_relu<16>(in, out, bytes);
}
)";

LaunchConfig pass_config(std::int64_t bytes, bool early) {
  const std::int64_t vectors = std::max<std::int64_t>(bytes / 16, 1);
  const std::int64_t blocks = std::clamp<std::int64_t>((vectors + kPassThreads - 1) / kPassThreads, 1, kPassMaxBlocks);
  return {.grid = {static_cast<unsigned>(blocks), 1, 1}, .block = {kPassThreads, 1, 1}, .early = early};
}

}  // namespace

const char* relu_pass_entry(Precision precision) {
  return element_bytes(precision) == 2 ? kReluPass16Entry : kReluPass32Entry;
}

const Cubin& plan_passes_cubin(const std::string& arch) {
  static std::mutex mutex;
  static auto* cubins = new std::map<std::string, std::unique_ptr<Cubin>>();  // left to the OS at exit
  const std::lock_guard lock(mutex);
  std::unique_ptr<Cubin>& cubin = (*cubins)[arch];
  if (!cubin) {
    const Program program{.name = "convgen_plan_passes.cu",
                          .source = kPassSource,
                          .headers = {{"grid_dependency.cuh", template_text("grid_dependency.cuh")}}};
    cubin = std::make_unique<Cubin>(compile(program, kernel_compile_options(arch)));
  }
  return *cubin;
}

LaunchConfig zero_pass_config(std::int64_t bytes, bool early) { return pass_config(bytes, early); }

LaunchConfig relu_pass_config(std::int64_t bytes, bool early) { return pass_config(bytes, early); }

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
