// affine_concat: the pre-activation pass (see affine_concat.hpp).
#include "conv/affine_concat.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <memory>
#include <mutex>
#include <tuple>

#include <fmt/format.h>

#include "conv/conv_kernel.hpp"
#include "convgen/error.hpp"
#include "generator/render.hpp"

namespace convgen {
namespace {

constexpr unsigned kThreads = 256;
constexpr std::int64_t kMaxBlocksX = 1024;

// The element type's code in templates/affine_concat.cuh (AC_ELEMENT).
int element_code(Precision precision) {
  switch (precision) {
    case Precision::fp32:
    case Precision::tf32:
      return 0;
    case Precision::fp16:
      return 1;
    case Precision::bf16:
      return 2;
  }
  return 0;
}

}  // namespace

void check_affine_concat(const AffineConcat& pass) {
  if (pass.inputs.empty()) throw InputError("affine_concat: no input given");
  if (pass.channels.size() != pass.inputs.size())
    throw InputError(fmt::format("affine_concat: {} inputs but {} channel counts: expected one count per input",
                                 pass.inputs.size(), pass.channels.size()));
  for (std::size_t i = 0; i < pass.inputs.size(); ++i) {
    if (pass.inputs[i] == 0) throw InputError(fmt::format("affine_concat: input {} is a null pointer", i));
    if (pass.channels[i] < 1)
      throw InputError(
          fmt::format("affine_concat: input {} has {} channels: expected at least 1", i, pass.channels[i]));
  }
  if (pass.out_channels() > std::numeric_limits<int>::max())
    throw InputError(fmt::format("affine_concat: {} output channels: expected at most {}", pass.out_channels(),
                                 std::numeric_limits<int>::max()));
  if (pass.batch < 1) throw InputError(fmt::format("affine_concat: batch {}: expected at least 1", pass.batch));
  if (pass.pixels < 1) throw InputError(fmt::format("affine_concat: pixels {}: expected at least 1", pass.pixels));
  if (pass.output == 0) throw InputError("affine_concat: the output is a null pointer");
  if (pass.scale == 0 || pass.shift == 0)
    throw InputError("affine_concat: scale and shift must both be given (fp32, one per output channel)");
  if (pass.act == Activation::clip && !(pass.clip_lo <= pass.clip_hi))
    throw InputError(
        fmt::format("affine_concat: clip bounds {} and {}: expected clip_lo <= clip_hi", pass.clip_lo, pass.clip_hi));
}

int affine_concat_vector(const AffineConcat& pass) {
  const int element = element_bytes(pass.precision);
  for (int vector : {8, 4, 2}) {
    const int bytes = vector * element;
    if (bytes > 16) continue;
    bool fits = pass.output % bytes == 0 && (pass.channels_last || pass.pixels % vector == 0);
    for (std::size_t i = 0; fits && i < pass.inputs.size(); ++i)
      fits = pass.inputs[i] % bytes == 0 && (!pass.channels_last || pass.channels[i] % vector == 0);
    if (fits) return vector;
  }
  return 1;
}

Program affine_concat_program(Precision precision, int vector) {
  return {.name = fmt::format("convgen_affine_concat_e{}_v{}.cu", element_code(precision), vector),
          .source = fmt::format("#define AC_ELEMENT {}\n#define AC_VECTOR {}\n#include \"affine_concat.cuh\"\n",
                                element_code(precision), vector),
          .headers = {{"affine_concat.cuh", template_text("affine_concat.cuh")},
                      {"element.cuh", template_text("element.cuh")},
                      {"grid_dependency.cuh", template_text("grid_dependency.cuh")}}};
}

const Cubin& affine_concat_cubin(const std::string& arch, Precision precision, int vector) {
  static std::mutex mutex;
  static auto* cubins = new std::map<std::tuple<std::string, int, int>, std::unique_ptr<Cubin>>();  // left to the OS
  const std::lock_guard lock(mutex);
  std::unique_ptr<Cubin>& cubin = (*cubins)[{arch, element_code(precision), vector}];
  if (!cubin)
    cubin = std::make_unique<Cubin>(compile(affine_concat_program(precision, vector), kernel_compile_options(arch)));
  return *cubin;
}

std::vector<AffineConcatLaunch> plan_affine_concat(const AffineConcat& pass, int vector, bool early) {
  std::vector<AffineConcatLaunch> launches;
  int channel = 0;
  for (std::size_t begin = 0; begin < pass.inputs.size(); begin += kAffineConcatMaxInputs) {
    const std::size_t end = std::min(pass.inputs.size(), begin + kAffineConcatMaxInputs);
    AffineConcatLaunch launch;
    launch.first_channel = channel;
    std::int64_t largest = 0;
    for (std::size_t i = begin; i < end; ++i) {
      const std::size_t slot = i - begin;
      launch.segments.data[slot] = reinterpret_cast<const void*>(pass.inputs[i]);
      launch.segments.channels[slot] = pass.channels[i];
      launch.segments.first[slot] = channel - launch.first_channel;
      channel += pass.channels[i];
      largest = std::max(largest, static_cast<std::int64_t>(pass.batch) * pass.pixels * pass.channels[i] / vector);
    }
    launch.segments.count = static_cast<int>(end - begin);
    const std::int64_t blocks = std::clamp<std::int64_t>((largest + kThreads - 1) / kThreads, 1, kMaxBlocksX);
    launch.config = {.grid = {static_cast<unsigned>(blocks), static_cast<unsigned>(launch.segments.count), 1},
                     .block = {kThreads, 1, 1},
                     .early = early};
    launches.push_back(launch);
  }
  return launches;
}

std::array<float, 2> affine_concat_clamp(const AffineConcat& pass) {
  constexpr float inf = std::numeric_limits<float>::infinity();
  switch (pass.act) {
    case Activation::none:
      return {-inf, inf};
    case Activation::relu:
      return {0.0f, inf};
    case Activation::relu6:
      return {0.0f, 6.0f};
    case Activation::clip:
      return {pass.clip_lo, pass.clip_hi};
  }
  return {-inf, inf};
}

void launch_affine_concat(const Kernel& kernel, const AffineConcat& pass,
                          const std::vector<AffineConcatLaunch>& launches, CUstream stream) {
  const auto [lo, hi] = affine_concat_clamp(pass);
  CUdeviceptr output = pass.output, scale = pass.scale, shift = pass.shift;
  int batch = pass.batch, out_channels = static_cast<int>(pass.out_channels()), channels_last = pass.channels_last;
  long long pixels = pass.pixels;
  float low = lo, high = hi;
  for (const AffineConcatLaunch& launch : launches) {
    AffineConcatSegments segments = launch.segments;
    int first_channel = launch.first_channel;
    std::array<void*, 11> args = {&output,       &segments,      &scale,         &shift, &batch, &pixels,
                                  &out_channels, &first_channel, &channels_last, &low,   &high};
    convgen::launch(kernel, launch.config, args, stream);
  }
}

}  // namespace convgen
