// tensor_maps_sm90_runtime.cpp: the library's run time: loads the CUDA driver, finds the problem's kernel, loads it, runs its
// plan.
#include <dlfcn.h>

#include <cuda.h>

#include <algorithm>
#include <charconv>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <map>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "tensor_maps_sm90.h"
#include "tensor_maps_sm90_kernels.hpp"

namespace {

using tensor_maps_sm90_internal::Arg;
using tensor_maps_sm90_internal::KernelImage;
using tensor_maps_sm90_internal::ProblemEntry;
using tensor_maps_sm90_internal::Step;

#define TENSOR_MAPS_SM90_STRINGIFY_(x) #x
#define TENSOR_MAPS_SM90_STRINGIFY(x) TENSOR_MAPS_SM90_STRINGIFY_(x)

// The driver entry points the library calls. cuda.h maps each name to its current versioned symbol
// (cuCtxGetCurrent stays, cuMemAlloc becomes cuMemAlloc_v2 ...): each is resolved by the name it expands to.
// clang-format off
#define TENSOR_MAPS_SM90_DRIVER_FUNCTIONS(X) \
  X(cuInit) X(cuDeviceGetCount) X(cuDeviceGet) X(cuDeviceGetAttribute) X(cuCtxGetCurrent) X(cuCtxSetCurrent) \
  X(cuCtxGetDevice) X(cuDevicePrimaryCtxRetain) X(cuModuleLoadData) X(cuModuleGetFunction) X(cuFuncSetAttribute) \
  X(cuLaunchKernel) X(cuLaunchKernelEx) X(cuMemsetD32Async) X(cuMemsetD8Async) X(cuGetErrorName) X(cuGetErrorString) \
  X(cuMemAlloc) X(cuMemFree) X(cuStreamSynchronize) X(cuCtxPushCurrent) X(cuCtxPopCurrent) X(cuMemcpyHtoDAsync) \
  X(cuMemcpyDtoH) X(cuTensorMapEncodeTiled) X(cuTensorMapEncodeIm2col) X(cuCtxGetId)
// clang-format on

struct Driver {
#define TENSOR_MAPS_SM90_MEMBER(name) decltype(&::name) name = nullptr;
  TENSOR_MAPS_SM90_DRIVER_FUNCTIONS(TENSOR_MAPS_SM90_MEMBER)
#undef TENSOR_MAPS_SM90_MEMBER
  tensor_maps_sm90_status status = TENSOR_MAPS_SM90_SUCCESS;  // TENSOR_MAPS_SM90_ERROR_NO_DRIVER or _NO_DEVICE when unusable
  std::string reason;                   // why it is unusable
};

std::string error_text(const Driver& d, CUresult result) {
  const char* name = nullptr;
  const char* text = nullptr;
  if (d.cuGetErrorName != nullptr) d.cuGetErrorName(result, &name);
  if (d.cuGetErrorString != nullptr) d.cuGetErrorString(result, &text);
  if (name == nullptr) return "CUDA error " + std::to_string(static_cast<int>(result));
  return std::string(name) + " (" + (text ? text : "no description") + ")";
}

Driver load_driver() {
  Driver d;
  void* handle = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (handle == nullptr) {
    const char* why = dlerror();
    d.status = TENSOR_MAPS_SM90_ERROR_NO_DRIVER;
    d.reason = std::string("libcuda.so.1 could not be loaded (") + (why ? why : "no reason given") + ")";
    return d;
  }
#define TENSOR_MAPS_SM90_RESOLVE(name)                                                                     \
  d.name = reinterpret_cast<decltype(d.name)>(dlsym(handle, TENSOR_MAPS_SM90_STRINGIFY(name)));            \
  if (d.name == nullptr && d.reason.empty()) {                                                  \
    d.status = TENSOR_MAPS_SM90_ERROR_NO_DRIVER;                                                           \
    d.reason = "libcuda.so.1 lacks the entry point " TENSOR_MAPS_SM90_STRINGIFY(name) " (the driver is " \
               "older than the CUDA headers the library was built with)"; \
  }
  TENSOR_MAPS_SM90_DRIVER_FUNCTIONS(TENSOR_MAPS_SM90_RESOLVE)
#undef TENSOR_MAPS_SM90_RESOLVE
  if (d.status != TENSOR_MAPS_SM90_SUCCESS) return d;
  if (const CUresult result = d.cuInit(0); result != CUDA_SUCCESS) {
    d.status = result == CUDA_ERROR_NO_DEVICE ? TENSOR_MAPS_SM90_ERROR_NO_DEVICE : TENSOR_MAPS_SM90_ERROR_NO_DRIVER;
    d.reason = "cuInit failed: " + error_text(d, result);
    return d;
  }
  int count = 0;
  if (d.cuDeviceGetCount(&count) != CUDA_SUCCESS || count <= 0) {
    d.status = TENSOR_MAPS_SM90_ERROR_NO_DEVICE;
    d.reason = "the driver reports 0 devices";
  }
  return d;
}

// Loaded once per process and never unloaded, so no destructor order can outlive it.
const Driver& driver() {
  static const Driver d = load_driver();
  return d;
}

// A kernel image loaded into one context: the function of every kernel step of its setup and run, and of every
// zero step that launches the zero pass and relu step (nullptr for a memset).
struct LoadedImage {
  std::vector<CUfunction> setup;  // setup[i] for image.setup[i]
  std::vector<CUfunction> run;
};

// Per context: its device's compute capability, the kernel images loaded into it so far, and the plan passes of each
// architecture it has loaded.
struct ContextState {
  int arch = 0;
  std::map<const KernelImage*, LoadedImage> images;  // never erased: ops point into it
  std::map<int, CUmodule> plan_passes;               // by KernelImage::arch
};

struct State {
  std::mutex mutex;
  // By the driver's unique context ID (cuCtxGetId), not the handle: a context destroyed and created again (the
  // primary context released by its last user, cudaDeviceReset) may come back at the same address, without the
  // modules loaded into the old one.
  std::map<unsigned long long, ContextState> contexts;
  tensor_maps_sm90_fallback_fn fallback = nullptr;
  void* fallback_user = nullptr;
};

State& state() {
  static State* s = new State;  // leaked on purpose: usable from other static destructors
  return *s;
}

thread_local std::string last_error;

tensor_maps_sm90_status fail(tensor_maps_sm90_status status, std::string message) {
  last_error = std::move(message);
  return status;
}

tensor_maps_sm90_status cuda_fail(const Driver& d, const char* call, CUresult result) {
  return fail(TENSOR_MAPS_SM90_ERROR_CUDA, std::string(call) + " failed: " + error_text(d, result));
}

std::string key_of(const tensor_maps_sm90_problem& p) {
  std::string key(tensor_maps_sm90_problem_key(&p, nullptr, 0), '\0');
  tensor_maps_sm90_problem_key(&p, &key[0], key.size() + 1);
  return key;
}

// The epilogue as convgen holds it: a disabled one is the identity.
tensor_maps_sm90_epilogue normalized(const tensor_maps_sm90_epilogue& e) {
  tensor_maps_sm90_epilogue out = e;
  if (!e.enabled) {
    out.alpha = 1;
    out.beta = 0;
    out.bias = 0;
    out.act = TENSOR_MAPS_SM90_ACTIVATION_NONE;
    out.clip_lo = out.clip_hi = 0;
  }
  out.enabled = 1;
  out.bias = out.bias != 0;
  return out;
}

bool same_epilogue(const tensor_maps_sm90_epilogue& x, const tensor_maps_sm90_epilogue& y) {
  const tensor_maps_sm90_epilogue a = normalized(x), b = normalized(y);
  return a.alpha == b.alpha && a.beta == b.beta && a.bias == b.bias && a.act == b.act && a.clip_lo == b.clip_lo &&
         a.clip_hi == b.clip_hi;
}

bool is_identity(const tensor_maps_sm90_epilogue& e) {
  tensor_maps_sm90_epilogue identity = {};
  return same_epilogue(e, identity);
}

// A number as convgen's key writes it: the shortest form that reads back, without a positive exponent's '+'.
std::string number_text(double value) {
  char buffer[64];
  const std::to_chars_result r = std::to_chars(buffer, buffer + sizeof buffer, value);
  std::string text(buffer, r.ec == std::errc() ? r.ptr : buffer);
  std::string out;
  for (char c : text)
    if (c != '+') out += c;
  return out;
}

// The epilogue's text in convgen's canonical form (convgen::to_string): alpha, bias, add, then the activation.
std::string epilogue_text(const tensor_maps_sm90_epilogue& raw) {
  const tensor_maps_sm90_epilogue e = normalized(raw);
  std::string out;
  const auto term = [&out](const std::string& t) { out += (out.empty() ? "" : "+") + t; };
  if (e.alpha != 1) term("alpha:" + number_text(e.alpha));
  if (e.bias) term("bias");
  if (e.beta == 1)
    term("add");
  else if (e.beta != 0)
    term("add:" + number_text(e.beta));
  if (e.act == TENSOR_MAPS_SM90_ACTIVATION_RELU) term("relu");
  if (e.act == TENSOR_MAPS_SM90_ACTIVATION_RELU6) term("relu6");
  if (e.act == TENSOR_MAPS_SM90_ACTIVATION_CLIP) term("clip:" + number_text(e.clip_lo) + ":" + number_text(e.clip_hi));
  return out;
}

bool same_problem(const tensor_maps_sm90_problem& a, const tensor_maps_sm90_problem& b) {
  return a.n == b.n && a.c == b.c && a.k == b.k && a.d == b.d && a.h == b.h && a.w == b.w && a.t == b.t && a.r == b.r &&
         a.s == b.s && a.stride_d == b.stride_d && a.stride_h == b.stride_h && a.stride_w == b.stride_w &&
         a.pad_d == b.pad_d && a.pad_h == b.pad_h && a.pad_w == b.pad_w && a.dilation_d == b.dilation_d &&
         a.dilation_h == b.dilation_h && a.dilation_w == b.dilation_w && a.groups == b.groups && a.layout == b.layout &&
         a.precision == b.precision && same_epilogue(a.epilogue, b.epilogue) &&
         (a.relu_on_load != 0) == (b.relu_on_load != 0);
}

const ProblemEntry* find_problem(const tensor_maps_sm90_problem& p) {
  for (std::size_t i = 0; i < tensor_maps_sm90_internal::problem_count; ++i)
    if (same_problem(tensor_maps_sm90_internal::problems[i].problem, p)) return &tensor_maps_sm90_internal::problems[i];
  return nullptr;
}

// Every entry of the problem: several where layers of one shape were emitted with filters of their own that the
// kernels depend on (their patterns differ).
std::vector<const ProblemEntry*> find_problems(const tensor_maps_sm90_problem& p) {
  std::vector<const ProblemEntry*> entries;
  for (std::size_t i = 0; i < tensor_maps_sm90_internal::problem_count; ++i)
    if (same_problem(tensor_maps_sm90_internal::problems[i].problem, p)) entries.push_back(&tensor_maps_sm90_internal::problems[i]);
  return entries;
}

bool channels_last(tensor_maps_sm90_layout layout) {
  return layout == TENSOR_MAPS_SM90_LAYOUT_NWC || layout == TENSOR_MAPS_SM90_LAYOUT_NHWC || layout == TENSOR_MAPS_SM90_LAYOUT_NDHWC;
}

std::size_t element_bytes(tensor_maps_sm90_precision precision) {
  return precision == TENSOR_MAPS_SM90_PRECISION_FP16 || precision == TENSOR_MAPS_SM90_PRECISION_BF16 ? 2 : 4;
}

// Filter element i of the problem (in its precision) as a float.
float filter_value(const tensor_maps_sm90_problem& p, const unsigned char* filter, unsigned long long i) {
  if (element_bytes(p.precision) == 4) {
    float v = 0;
    std::memcpy(&v, filter + i * 4, 4);
    return v;
  }
  std::uint16_t h = 0;
  std::memcpy(&h, filter + i * 2, 2);
  std::uint32_t bits = 0;
  if (p.precision == TENSOR_MAPS_SM90_PRECISION_BF16) {
    bits = std::uint32_t{h} << 16;
  } else {  // IEEE half: sign, 5 exponent bits, 10 mantissa bits
    const std::uint32_t sign = std::uint32_t{h & 0x8000u} << 16, exponent = (h >> 10) & 0x1fu, mantissa = h & 0x3ffu;
    if (exponent == 0x1f) {
      bits = sign | 0x7f800000u | (mantissa << 13);
    } else if (exponent != 0) {
      bits = sign | ((exponent + 112) << 23) | (mantissa << 13);
    } else {  // zero or subnormal: mantissa * 2^-24
      const float magnitude = static_cast<float>(mantissa) * 5.9604644775390625e-8f;
      std::memcpy(&bits, &magnitude, 4);
      bits |= sign;
    }
  }
  float v = 0;
  std::memcpy(&v, &bits, 4);
  return v;
}

// A float as the shortest text that reads back ("0.25", "-1e-08").
std::string float_text(float value) {
  char buffer[32];
  const std::to_chars_result r = std::to_chars(buffer, buffer + sizeof buffer, value);
  return std::string(buffer, r.ec == std::errc() ? r.ptr : buffer);
}

// "element 17 (k 0, c 1, r 2, s 2)": filter element i's coordinates in the problem's filter layout (K C [T] [R] S,
// or K [T] [R] S C channels-last), as convgen names them.
std::string element_text(const tensor_maps_sm90_problem& p, unsigned long long i) {
  const int rank = p.layout == TENSOR_MAPS_SM90_LAYOUT_NCW || p.layout == TENSOR_MAPS_SM90_LAYOUT_NWC       ? 1
                   : p.layout == TENSOR_MAPS_SM90_LAYOUT_NCDHW || p.layout == TENSOR_MAPS_SM90_LAYOUT_NDHWC ? 3
                                                                                      : 2;
  std::vector<std::pair<char, long long>> dims = {{'k', p.k}};
  if (!channels_last(p.layout)) dims.push_back({'c', p.c / p.groups});
  if (rank == 3) dims.push_back({'t', p.t});
  if (rank >= 2) dims.push_back({'r', p.r});
  dims.push_back({'s', p.s});
  if (channels_last(p.layout)) dims.push_back({'c', p.c / p.groups});
  std::vector<long long> coords(dims.size());
  unsigned long long rest = i;
  for (std::size_t d = dims.size(); d-- > 0;) {
    coords[d] = static_cast<long long>(rest % static_cast<unsigned long long>(dims[d].second));
    rest /= static_cast<unsigned long long>(dims[d].second);
  }
  std::string text = "element " + std::to_string(i) + " (";
  for (std::size_t d = 0; d < dims.size(); ++d)
    text += (d == 0 ? "" : ", ") + std::string(1, dims[d].first) + " " + std::to_string(coords[d]);
  return text + ")";
}

// The most an entry's kernels check of a filter (KernelImage::filter_check).
unsigned char filter_check_of(const ProblemEntry& entry) {
  unsigned char most = 0;
  for (std::size_t i = 0; i < entry.kernel_count; ++i)
    if (entry.kernels[i].filter_check > most) most = entry.kernels[i].filter_check;
  return most;
}

// Checks a filter in host memory against what the entry's kernel depends on (`check`: KernelImage::filter_check):
// "" when the kernel serves it, else the first element that differs, and how.
std::string filter_mismatch(const ProblemEntry& entry, unsigned char check, const unsigned char* filter) {
  if (check == 0 || entry.weight_mask == nullptr) return "";
  const tensor_maps_sm90_problem& p = entry.problem;
  const auto differs = [&](unsigned long long i, float v, const std::string& how) {
    return "layer " + std::string(entry.name) + " (filter pattern " + entry.weight_pattern +
           "): " + element_text(p, i) + " is " + float_text(v) + how;
  };
  unsigned long long nonzero = 0;  // the nonzeros of the entry's filter before element i
  for (unsigned long long i = 0; i < entry.filter_elements; ++i) {
    const bool in_pattern = (entry.weight_mask[i / 8] >> (i % 8)) & 1u;
    const float v = filter_value(p, filter, i);
    if (!in_pattern && v != 0.0f) return differs(i, v, " where the filter its kernel was made for has a zero");
    if (!in_pattern) continue;
    if (check >= 2 && entry.weight_values != nullptr && !(v == entry.weight_values[nonzero]))
      return differs(i, v, " where its kernel has " + float_text(entry.weight_values[nonzero]) + " in its code");
    ++nonzero;
  }
  return "";
}

// The message of a filter that none of the problem's entries serves.
tensor_maps_sm90_status filter_refused(const char* call, const tensor_maps_sm90_problem& p, const std::string& mismatches) {
  return fail(TENSOR_MAPS_SM90_ERROR_FILTER_MISMATCH, std::string(call) + ": problem " + key_of(p) +
                                               ": the filter given is not one this library's kernels for the problem "
                                               "were made for (emit-lib --weights):" +
                                               mismatches);
}

// A cubin for sm_XY runs on devices of the same major version and a minor version of at least Y: the highest such.
const KernelImage* find_image(const ProblemEntry& entry, int arch) {
  const KernelImage* best = nullptr;
  for (std::size_t i = 0; i < entry.kernel_count; ++i) {
    const KernelImage& image = entry.kernels[i];
    if (image.arch / 10 == arch / 10 && image.arch <= arch && (best == nullptr || image.arch > best->arch))
      best = &image;
  }
  return best;
}

// Finds the calling thread's context (making device 0's primary context current when there is none) and its
// compute capability. Call with the state's mutex held.
tensor_maps_sm90_status current_context(const Driver& d, CUcontext* context, ContextState** context_state) {
  if (d.status != TENSOR_MAPS_SM90_SUCCESS) return fail(d.status, d.reason);
  CUresult result = d.cuCtxGetCurrent(context);
  if (result != CUDA_SUCCESS) return cuda_fail(d, "cuCtxGetCurrent", result);
  if (*context == nullptr) {
    CUdevice device = 0;
    if ((result = d.cuDeviceGet(&device, 0)) != CUDA_SUCCESS) return cuda_fail(d, "cuDeviceGet", result);
    if ((result = d.cuDevicePrimaryCtxRetain(context, device)) != CUDA_SUCCESS)
      return cuda_fail(d, "cuDevicePrimaryCtxRetain", result);
    if ((result = d.cuCtxSetCurrent(*context)) != CUDA_SUCCESS) return cuda_fail(d, "cuCtxSetCurrent", result);
  }
  unsigned long long context_id = 0;
  if ((result = d.cuCtxGetId(*context, &context_id)) != CUDA_SUCCESS) return cuda_fail(d, "cuCtxGetId", result);
  auto [it, inserted] = state().contexts.try_emplace(context_id);
  if (inserted) {
    CUdevice device = 0;
    int major = 0;
    int minor = 0;
    if ((result = d.cuCtxGetDevice(&device)) != CUDA_SUCCESS ||
        (result = d.cuDeviceGetAttribute(&major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, device)) !=
            CUDA_SUCCESS ||
        (result = d.cuDeviceGetAttribute(&minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, device)) !=
            CUDA_SUCCESS) {
      state().contexts.erase(it);
      return cuda_fail(d, "querying the device's compute capability", result);
    }
    it->second.arch = major * 10 + minor;
  }
  *context_state = &it->second;
  return TENSOR_MAPS_SM90_SUCCESS;
}

std::string no_arch_message(int arch) {
  return "this GPU is sm_" + std::to_string(arch) + " and the library has cubins for " + tensor_maps_sm90_internal::architectures +
         " only";
}

// Returns the plan pass `entry` for `arch` in the context, loading the passes' module on first use. Mutex held.
tensor_maps_sm90_status pass_function(const Driver& d, ContextState& context, int arch, const char* entry, CUfunction* function) {
  auto it = context.plan_passes.find(arch);
  if (it == context.plan_passes.end()) {
    const tensor_maps_sm90_internal::PassImage* image = nullptr;
    for (std::size_t i = 0; i < tensor_maps_sm90_internal::plan_pass_count; ++i)
      if (tensor_maps_sm90_internal::plan_passes[i].arch == arch) image = &tensor_maps_sm90_internal::plan_passes[i];
    if (image == nullptr)
      return fail(TENSOR_MAPS_SM90_ERROR_CUDA, "the library has no plan passes for sm_" + std::to_string(arch) +
                                        ", which a plan's zero or relu step launches (the emitted files are "
                                        "inconsistent)");
    CUmodule module = nullptr;  // stays loaded for the context's life
    const CUresult result = d.cuModuleLoadData(&module, image->cubin);
    if (result != CUDA_SUCCESS)
      return fail(TENSOR_MAPS_SM90_ERROR_CUDA,
                  "loading the plan passes (sm_" + std::to_string(arch) + ") failed: " + error_text(d, result));
    it = context.plan_passes.emplace(arch, module).first;
  }
  const CUresult result = d.cuModuleGetFunction(function, it->second, entry);
  if (result != CUDA_SUCCESS)
    return fail(TENSOR_MAPS_SM90_ERROR_CUDA, std::string("cuModuleGetFunction of the plan pass ") + entry + " (sm_" +
                                      std::to_string(arch) + ") failed: " + error_text(d, result));
  return TENSOR_MAPS_SM90_SUCCESS;
}

// Returns the function of one kernel step, from a module already loaded, or the plan pass of a zero step that
// launches it or of a relu step. Mutex held.
tensor_maps_sm90_status get_function(const Driver& d, ContextState& context, CUmodule module, const KernelImage& image,
                          const Step& step, CUfunction* function) {
  *function = nullptr;
  if ((step.kind == Step::zero || step.kind == Step::relu) && step.entry != nullptr)
    return pass_function(d, context, image.arch, step.entry, function);
  if (step.kind != Step::kernel) return TENSOR_MAPS_SM90_SUCCESS;
  CUresult result = d.cuModuleGetFunction(function, module, step.entry);
  if (result != CUDA_SUCCESS)
    return fail(TENSOR_MAPS_SM90_ERROR_CUDA, std::string("cuModuleGetFunction of ") + step.entry + " (sm_" +
                                      std::to_string(image.arch) + ") failed: " + error_text(d, result));
  if (step.dynamic_smem_bytes > 48 * 1024 &&
      (result = d.cuFuncSetAttribute(*function, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                                     static_cast<int>(step.dynamic_smem_bytes))) != CUDA_SUCCESS)
    return fail(TENSOR_MAPS_SM90_ERROR_CUDA, std::string("cuFuncSetAttribute (dynamic shared memory) of ") + step.entry +
                                      " failed: " + error_text(d, result));
  return TENSOR_MAPS_SM90_SUCCESS;
}

// Returns `image` loaded into the context, loading its module on first use. Mutex held.
tensor_maps_sm90_status load_image(const Driver& d, ContextState& context, const KernelImage& image, const LoadedImage** loaded) {
  if (auto it = context.images.find(&image); it != context.images.end()) {
    *loaded = &it->second;
    return TENSOR_MAPS_SM90_SUCCESS;
  }
  CUmodule module = nullptr;
  const CUresult result = d.cuModuleLoadData(&module, image.cubin);
  if (result != CUDA_SUCCESS)
    return fail(TENSOR_MAPS_SM90_ERROR_CUDA, std::string("cuModuleLoadData of ") + image.kernel + " (sm_" +
                                      std::to_string(image.arch) + ") failed: " + error_text(d, result));
  LoadedImage functions;
  functions.setup.resize(image.setup_count);
  functions.run.resize(image.run_count);
  for (std::size_t i = 0; i < image.setup_count; ++i)
    if (const tensor_maps_sm90_status status = get_function(d, context, module, image, image.setup[i], &functions.setup[i]);
        status != TENSOR_MAPS_SM90_SUCCESS)
      return status;
  for (std::size_t i = 0; i < image.run_count; ++i)
    if (const tensor_maps_sm90_status status = get_function(d, context, module, image, image.run[i], &functions.run[i]);
        status != TENSOR_MAPS_SM90_SUCCESS)
      return status;
  // The module stays loaded for the context's life.
  *loaded = &context.images.emplace(&image, std::move(functions)).first->second;
  return TENSOR_MAPS_SM90_SUCCESS;
}

// The device pointers a plan's steps bind: the call's tensors, the caller's workspace, the op's persistent block.
struct Pointers {
  CUdeviceptr activation = 0, filter = 0, output = 0, workspace = 0, persistent = 0, bias = 0, residual = 0;
};

// Refuses a call without a bias or residual the problem's epilogue reads.
tensor_maps_sm90_status check_epilogue(const char* call, const tensor_maps_sm90_problem& p, unsigned long long bias,
                            unsigned long long residual) {
  const tensor_maps_sm90_epilogue e = normalized(p.epilogue);
  if (e.bias && bias == 0)
    return fail(TENSOR_MAPS_SM90_ERROR_INVALID_ARGUMENT,
                std::string(call) + ": problem " + key_of(p) + " adds a bias in its epilogue: the bias pointer is 0");
  if (e.beta != 0 && residual == 0)
    return fail(TENSOR_MAPS_SM90_ERROR_INVALID_ARGUMENT, std::string(call) + ": problem " + key_of(p) +
                                                  " adds a residual in its epilogue: the residual pointer is 0");
  return TENSOR_MAPS_SM90_SUCCESS;
}

// Refuses a tensor (of those `which` names: 1 the activation, 2 the filter, 4 the output) whose address is not a
// multiple of what the kernel's widest loads and stores need of it (KernelImage::alignment) or of its elements: a
// tensor inside a larger allocation, at an offset.
tensor_maps_sm90_status check_alignment(const char* call, const ProblemEntry& entry, const KernelImage& image, const Pointers& p,
                             unsigned which) {
  const char* names[3] = {"activation", "filter", "output"};
  const CUdeviceptr addresses[3] = {p.activation, p.filter, p.output};
  const std::size_t element = element_bytes(entry.problem.precision);
  for (int t = 0; t < 3; ++t) {
    if ((which & (1u << t)) == 0) continue;
    const std::size_t needed = image.alignment[t] > element ? image.alignment[t] : element;
    if (addresses[t] % needed == 0) continue;
    return fail(TENSOR_MAPS_SM90_ERROR_INVALID_ARGUMENT,
                std::string(call) + ": problem " + key_of(entry.problem) + ": the " + names[t] +
                    " address is not a multiple of " + std::to_string(needed) + " bytes" +
                    (needed > element ? std::string(": kernel ") + image.kernel + " accesses it " +
                                            std::to_string(needed) + " bytes at a time"
                                      : std::string(" (its element size)")));
  }
  return TENSOR_MAPS_SM90_SUCCESS;
}

CUdeviceptr buffer_pointer(const KernelImage& image, int buffer, const Pointers& p) {
  const tensor_maps_sm90_internal::PlanBuffer& b = image.buffers[buffer];
  return (b.persistent ? p.persistent : p.workspace) + b.offset;
}

// Launches a kernel or zero step's function with its grid, block and shared memory, early where the step says.
CUresult launch_step(const Driver& d, const Step& step, CUfunction function, void** args, CUstream stream) {
  if (!step.early_launch)
    return d.cuLaunchKernel(function, step.grid[0], step.grid[1], step.grid[2], step.block[0], step.block[1],
                            step.block[2], step.dynamic_smem_bytes, stream, args, nullptr);
  // It may start while the stream's previous kernel ends: the kernel waits for it.
  CUlaunchAttribute attribute{};
  attribute.id = CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION;
  attribute.value.programmaticStreamSerializationAllowed = 1;
  CUlaunchConfig config{};
  config.gridDimX = step.grid[0];
  config.gridDimY = step.grid[1];
  config.gridDimZ = step.grid[2];
  config.blockDimX = step.block[0];
  config.blockDimY = step.block[1];
  config.blockDimZ = step.block[2];
  config.sharedMemBytes = step.dynamic_smem_bytes;
  config.hStream = stream;
  config.attrs = &attribute;
  config.numAttrs = 1;
  return d.cuLaunchKernelEx(&config, function, args, nullptr);
}

// An op's tensor maps as last encoded: each with its map of the plan and the address it was encoded over, the most
// recently used first, so that a run with a tensor of one of its last calls encodes nothing (an encode costs host
// time on every call otherwise).
struct MapCache {
  struct Entry {
    const tensor_maps_sm90_internal::TensorMap* spec = nullptr;
    CUdeviceptr base = 0;
    CUtensorMap map{};
  };
  Entry entries[8];
  std::mutex mutex;
};

// The tensor map `m` over the call's tensor or the plan's buffer it names (cuTensorMapEncodeTiled, or Im2col), into
// `map`; with `cache` (an op's), the map it kept for that address where it has one.
tensor_maps_sm90_status encode_tensor_map(const Driver& d, const ProblemEntry& entry, const KernelImage& image,
                               const tensor_maps_sm90_internal::TensorMap& m, const Pointers& p, MapCache* cache,
                               CUtensorMap* map) {
  const bool filter = m.tensor == tensor_maps_sm90_internal::TensorMap::filter;
  const CUdeviceptr base = m.buffer >= 0 ? buffer_pointer(image, m.buffer, p) : filter ? p.filter : p.activation;
  std::unique_lock<std::mutex> lock;
  MapCache::Entry* slot = nullptr;
  if (cache != nullptr) {
    lock = std::unique_lock<std::mutex>(cache->mutex);
    MapCache::Entry* const first = cache->entries;
    MapCache::Entry* const last = first + sizeof cache->entries / sizeof cache->entries[0];
    MapCache::Entry* found =
        std::find_if(first, last, [&](const MapCache::Entry& e) { return e.spec == &m && e.base == base; });
    if (found != last) {
      std::rotate(first, found, found + 1);  // the most recently used first
      *map = first->map;
      return TENSOR_MAPS_SM90_SUCCESS;
    }
    slot = last - 1;  // the least recently used, encoded anew below
  }
  if (base % 16 != 0)
    return fail(TENSOR_MAPS_SM90_ERROR_INVALID_ARGUMENT, std::string("problem ") + key_of(entry.problem) +
                                                  ": its kernel reads the " + (filter ? "filter" : "activation") +
                                                  " by TMA, which needs a 16-byte-aligned address");
  cuuint64_t dims[5], strides[4];
  cuuint32_t box[5], element_strides[5];
  for (unsigned i = 0; i < m.rank; ++i) {
    dims[i] = m.dims[i];
    box[i] = m.box[i];
    element_strides[i] = m.element_strides[i];
    if (i > 0) strides[i - 1] = m.strides[i - 1];
  }
  const CUtensorMapDataType type = m.type == 0   ? CU_TENSOR_MAP_DATA_TYPE_FLOAT32
                                   : m.type == 2 ? CU_TENSOR_MAP_DATA_TYPE_BFLOAT16
                                                 : CU_TENSOR_MAP_DATA_TYPE_FLOAT16;
  const CUtensorMapSwizzle swizzle = m.swizzle_128b ? CU_TENSOR_MAP_SWIZZLE_128B : CU_TENSOR_MAP_SWIZZLE_NONE;
  const CUresult result =
      m.im2col ? d.cuTensorMapEncodeIm2col(map, type, m.rank, reinterpret_cast<void*>(base), dims, strides,
                                           m.lower_corner, m.upper_corner, m.channels, m.pixels, element_strides,
                                           CU_TENSOR_MAP_INTERLEAVE_NONE, swizzle, CU_TENSOR_MAP_L2_PROMOTION_L2_128B,
                                           CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE)
               : d.cuTensorMapEncodeTiled(map, type, m.rank, reinterpret_cast<void*>(base), dims, strides, box,
                                          element_strides, CU_TENSOR_MAP_INTERLEAVE_NONE, swizzle,
                                          CU_TENSOR_MAP_L2_PROMOTION_L2_128B, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
  if (result != CUDA_SUCCESS)
    return fail(TENSOR_MAPS_SM90_ERROR_CUDA, std::string(m.im2col ? "cuTensorMapEncodeIm2col" : "cuTensorMapEncodeTiled") +
                                      " (a tensor map of problem " + key_of(entry.problem) +
                                      ") failed: " + error_text(d, result));
  if (slot != nullptr) {
    *slot = MapCache::Entry{&m, base, *map};
    std::rotate(cache->entries, slot, slot + 1);
  }
  return TENSOR_MAPS_SM90_SUCCESS;
}

// Enqueues `count` steps of a plan on `stream`. No mutex needed: everything it reads is immutable, but for an op's
// tensor map cache (`cache`, nullptr for a one-shot call), which has its own.
tensor_maps_sm90_status run_steps(const Driver& d, const ProblemEntry& entry, const KernelImage& image, const Step* steps,
                       const CUfunction* functions, std::size_t count, const Pointers& p, CUstream stream,
                       MapCache* cache = nullptr) {
  for (std::size_t i = 0; i < count; ++i) {
    const Step& step = steps[i];
    CUresult result = CUDA_SUCCESS;
    if (step.kind == Step::zero) {
      CUdeviceptr target = step.zero_buffer < 0 ? p.output : buffer_pointer(image, step.zero_buffer, p);
      unsigned long long bytes = step.zero_buffer < 0 ? entry.output_bytes : image.buffers[step.zero_buffer].bytes;
      const char* how = "the zero pass";
      if (functions[i] != nullptr) {
        void* args[2] = {&target, &bytes};
        result = launch_step(d, step, functions[i], args, stream);
      } else {
        how = bytes % 4 == 0 ? "cuMemsetD32Async" : "cuMemsetD8Async";
        result = bytes % 4 == 0 ? d.cuMemsetD32Async(target, 0, bytes / 4, stream)
                                : d.cuMemsetD8Async(target, 0, bytes, stream);
      }
      if (result != CUDA_SUCCESS)
        return fail(TENSOR_MAPS_SM90_ERROR_CUDA, std::string(how) + " (zeroing " +
                                          (step.zero_buffer < 0 ? "the output" : image.buffers[step.zero_buffer].name) +
                                          ") failed: " + error_text(d, result));
      continue;
    }
    if (step.kind == Step::relu) {
      CUdeviceptr in = p.activation;
      CUdeviceptr out = buffer_pointer(image, step.zero_buffer, p);
      unsigned long long bytes = image.buffers[step.zero_buffer].bytes;
      void* args[3] = {&in, &out, &bytes};
      result = launch_step(d, step, functions[i], args, stream);
      if (result != CUDA_SUCCESS)
        return fail(TENSOR_MAPS_SM90_ERROR_CUDA, std::string("the relu pass (max(0, x) of the activation into ") +
                                          image.buffers[step.zero_buffer].name + ") failed: " + error_text(d, result));
      continue;
    }
    CUdeviceptr values[16];
    CUtensorMap maps[16];
    void* args[16];
    for (std::size_t a = 0; a < step.arg_count && a < 16; ++a) {
      const tensor_maps_sm90_internal::ArgBinding& binding = step.args[a];
      if (binding.arg == Arg::map) {
        maps[a] = CUtensorMap{};
        if (binding.map != nullptr) {
          const tensor_maps_sm90_status status = encode_tensor_map(d, entry, image, *binding.map, p, cache, &maps[a]);
          if (status != TENSOR_MAPS_SM90_SUCCESS) return status;
        }
        args[a] = &maps[a];
        continue;
      }
      switch (binding.arg) {
        case Arg::activation:
          values[a] = p.activation;
          break;
        case Arg::filter:
          values[a] = p.filter;
          break;
        case Arg::output:
          values[a] = p.output;
          break;
        case Arg::workspace:
          values[a] = p.workspace;
          break;
        case Arg::buffer:
          values[a] = buffer_pointer(image, binding.buffer, p);
          break;
        case Arg::bias:
          values[a] = p.bias;
          break;
        case Arg::residual:
          values[a] = p.residual;
          break;
        case Arg::map:
          break;
      }
      args[a] = &values[a];
    }
    result = launch_step(d, step, functions[i], args, stream);
    if (result != CUDA_SUCCESS)
      return fail(TENSOR_MAPS_SM90_ERROR_CUDA, std::string("cuLaunchKernel of ") + step.entry + " for problem " +
                                        key_of(entry.problem) + " failed: " + error_text(d, result));
  }
  return TENSOR_MAPS_SM90_SUCCESS;
}

// Finds the problem's kernel image for the current context and loads it: the shared first half of a one-shot call
// and of op creation.
tensor_maps_sm90_status prepare(const Driver& d, const ProblemEntry& entry, CUcontext* context, const KernelImage** image,
                     const LoadedImage** loaded) {
  std::lock_guard<std::mutex> lock(state().mutex);
  ContextState* context_state = nullptr;
  if (const tensor_maps_sm90_status status = current_context(d, context, &context_state); status != TENSOR_MAPS_SM90_SUCCESS) return status;
  *image = find_image(entry, context_state->arch);
  if (*image == nullptr)
    return fail(TENSOR_MAPS_SM90_ERROR_NO_KERNEL_FOR_ARCH,
                "problem " + key_of(entry.problem) + " (" + entry.name + "): " + no_arch_message(context_state->arch));
  return load_image(d, *context_state, **image, loaded);
}

tensor_maps_sm90_status unknown_problem(const tensor_maps_sm90_problem& problem) {
  return fail(TENSOR_MAPS_SM90_ERROR_UNKNOWN_PROBLEM, "problem " + key_of(problem) + " was not emitted into tensor_maps_sm90 (it serves " +
                                               std::to_string(tensor_maps_sm90_internal::problem_count) +
                                               " problems; see tensor_maps_sm90_problem_at)");
}

const char* layout_name(tensor_maps_sm90_layout layout) {
  switch (layout) {
    case TENSOR_MAPS_SM90_LAYOUT_NCW:
      return "ncw";
    case TENSOR_MAPS_SM90_LAYOUT_NWC:
      return "nwc";
    case TENSOR_MAPS_SM90_LAYOUT_NCHW:
      return "nchw";
    case TENSOR_MAPS_SM90_LAYOUT_NHWC:
      return "nhwc";
    case TENSOR_MAPS_SM90_LAYOUT_NCDHW:
      return "ncdhw";
    case TENSOR_MAPS_SM90_LAYOUT_NDHWC:
      return "ndhwc";
  }
  return "unknown_layout";
}

const char* precision_name(tensor_maps_sm90_precision precision) {
  switch (precision) {
    case TENSOR_MAPS_SM90_PRECISION_FP32:
      return "fp32";
    case TENSOR_MAPS_SM90_PRECISION_TF32:
      return "tf32";
    case TENSOR_MAPS_SM90_PRECISION_FP16:
      return "fp16";
    case TENSOR_MAPS_SM90_PRECISION_BF16:
      return "bf16";
  }
  return "unknown_precision";
}

}  // namespace

// An op: one problem's kernel image loaded in one context, with the persistent block its setup filled.
struct tensor_maps_sm90_op_s {
  const ProblemEntry* entry;
  const KernelImage* image;
  const LoadedImage* loaded;
  CUcontext context;
  CUdeviceptr filter;
  CUdeviceptr persistent;
  MapCache maps;  // the tensor maps its runs pass, as last encoded
};

extern "C" {

tensor_maps_sm90_status tensor_maps_sm90_conv_forward(const tensor_maps_sm90_problem* problem, unsigned long long activation, unsigned long long filter,
                                unsigned long long output, void* stream) {
  last_error.clear();
  if (problem == nullptr) return fail(TENSOR_MAPS_SM90_ERROR_INVALID_ARGUMENT, "tensor_maps_sm90_conv_forward: problem is NULL");
  const ProblemEntry* entry = find_problem(*problem);
  if (entry != nullptr) return tensor_maps_sm90_conv_forward_epilogue(problem, activation, filter, output, 0, 0, stream);
  tensor_maps_sm90_fallback_fn fallback = nullptr;
  void* user = nullptr;
  {
    std::lock_guard<std::mutex> lock(state().mutex);
    fallback = state().fallback;
    user = state().fallback_user;
  }
  if (fallback != nullptr) return fallback(problem, activation, filter, output, stream, user);
  return unknown_problem(*problem);
}

tensor_maps_sm90_status tensor_maps_sm90_conv_forward_epilogue(const tensor_maps_sm90_problem* problem, unsigned long long activation,
                                         unsigned long long filter, unsigned long long output, unsigned long long bias,
                                         unsigned long long residual, void* stream) {
  last_error.clear();
  if (problem == nullptr) return fail(TENSOR_MAPS_SM90_ERROR_INVALID_ARGUMENT, "tensor_maps_sm90_conv_forward: problem is NULL");
  const ProblemEntry* entry = find_problem(*problem);
  if (entry == nullptr) return unknown_problem(*problem);
  if (activation == 0 || filter == 0 || output == 0)
    return fail(TENSOR_MAPS_SM90_ERROR_INVALID_ARGUMENT, "tensor_maps_sm90_conv_forward: a device pointer is 0");
  if (filter_check_of(*entry) != 0)
    return fail(TENSOR_MAPS_SM90_ERROR_NEEDS_OP, "problem " + key_of(*problem) + " (" + entry->name +
                                          "): its kernels were made for the layer's own filter (pattern " +
                                          entry->weight_pattern +
                                          "); run it through tensor_maps_sm90_op_create, which checks the filter once, and "
                                          "tensor_maps_sm90_op_run");
  if (const tensor_maps_sm90_status status = check_epilogue("tensor_maps_sm90_conv_forward", entry->problem, bias, residual);
      status != TENSOR_MAPS_SM90_SUCCESS)
    return status;
  const Driver& d = driver();
  CUcontext context = nullptr;
  const KernelImage* image = nullptr;
  const LoadedImage* loaded = nullptr;
  if (const tensor_maps_sm90_status status = prepare(d, *entry, &context, &image, &loaded); status != TENSOR_MAPS_SM90_SUCCESS) return status;
  // Persistent buffers live in an op, even where no setup step fills them (the kernel binds them all the same).
  if (image->setup_count > 0 || image->workspace_bytes > 0 || image->persistent_bytes > 0)
    return fail(TENSOR_MAPS_SM90_ERROR_NEEDS_OP,
                "problem " + key_of(*problem) + " (" + entry->name + "): kernel " + image->kernel + " (sm_" +
                    std::to_string(image->arch) + ") " +
                    (image->setup_count > 0 ? std::string("has a one-time setup")
                     : image->workspace_bytes > 0
                         ? "needs " + std::to_string(image->workspace_bytes) + " bytes of workspace"
                         : "keeps " + std::to_string(image->persistent_bytes) + " bytes of persistent buffers") +
                    "; run it through tensor_maps_sm90_op_create and tensor_maps_sm90_op_run");
  Pointers pointers;
  pointers.activation = activation;
  pointers.filter = filter;
  pointers.output = output;
  pointers.bias = bias;
  pointers.residual = residual;
  if (const tensor_maps_sm90_status status = check_alignment("tensor_maps_sm90_conv_forward", *entry, *image, pointers, 7);
      status != TENSOR_MAPS_SM90_SUCCESS)
    return status;
  return run_steps(d, *entry, *image, image->run, loaded->run.data(), image->run_count, pointers,
                   static_cast<CUstream>(stream));
}

tensor_maps_sm90_status tensor_maps_sm90_op_create(const tensor_maps_sm90_problem* problem, unsigned long long filter, void* stream, tensor_maps_sm90_op* op) {
  last_error.clear();
  if (op == nullptr) return fail(TENSOR_MAPS_SM90_ERROR_INVALID_ARGUMENT, "tensor_maps_sm90_op_create: op is NULL");
  *op = nullptr;
  if (problem == nullptr) return fail(TENSOR_MAPS_SM90_ERROR_INVALID_ARGUMENT, "tensor_maps_sm90_op_create: problem is NULL");
  const std::vector<const ProblemEntry*> entries = find_problems(*problem);
  if (entries.empty()) return unknown_problem(*problem);
  if (filter == 0) return fail(TENSOR_MAPS_SM90_ERROR_INVALID_ARGUMENT, "tensor_maps_sm90_op_create: the filter pointer is 0");
  const Driver& d = driver();
  CUcontext context = nullptr;
  const ProblemEntry* entry = nullptr;
  const KernelImage* image = nullptr;
  const LoadedImage* loaded = nullptr;
  CUresult result = CUDA_SUCCESS;
  // The first entry whose kernel serves the filter; the filter is read to the host once, where a kernel checks it.
  std::vector<unsigned char> host_filter;
  std::string mismatches;
  for (const ProblemEntry* candidate : entries) {
    if (const tensor_maps_sm90_status status = prepare(d, *candidate, &context, &image, &loaded); status != TENSOR_MAPS_SM90_SUCCESS)
      return status;
    if (image->filter_check != 0) {
      if (host_filter.empty()) {
        host_filter.resize(candidate->filter_elements * element_bytes(problem->precision));
        if ((result = d.cuStreamSynchronize(static_cast<CUstream>(stream))) != CUDA_SUCCESS)
          return cuda_fail(d, "cuStreamSynchronize (before reading the filter to check it)", result);
        if ((result = d.cuMemcpyDtoH(host_filter.data(), filter, host_filter.size())) != CUDA_SUCCESS)
          return cuda_fail(d, "cuMemcpyDtoH (the filter, to check it)", result);
      }
      const std::string why = filter_mismatch(*candidate, image->filter_check, host_filter.data());
      if (!why.empty()) {
        mismatches += "\n  " + why;
        continue;
      }
    }
    entry = candidate;
    break;
  }
  if (entry == nullptr) return filter_refused("tensor_maps_sm90_op_create", *problem, mismatches);
  Pointers pointers;
  pointers.filter = filter;
  if (const tensor_maps_sm90_status status = check_alignment("tensor_maps_sm90_op_create", *entry, *image, pointers, 2);
      status != TENSOR_MAPS_SM90_SUCCESS)
    return status;
  if (image->persistent_bytes > 0 &&
      (result = d.cuMemAlloc(&pointers.persistent, image->persistent_bytes)) != CUDA_SUCCESS)
    return fail(TENSOR_MAPS_SM90_ERROR_CUDA, "cuMemAlloc of " + std::to_string(image->persistent_bytes) +
                                      " bytes (the op's persistent buffers) failed: " + error_text(d, result));
  if (image->setup_count > 0) {
    CUstream cu_stream = static_cast<CUstream>(stream);
    tensor_maps_sm90_status status =
        run_steps(d, *entry, *image, image->setup, loaded->setup.data(), image->setup_count, pointers, cu_stream);
    if (status == TENSOR_MAPS_SM90_SUCCESS && (result = d.cuStreamSynchronize(cu_stream)) != CUDA_SUCCESS)
      status = cuda_fail(d, "cuStreamSynchronize (after the op's setup)", result);
    if (status != TENSOR_MAPS_SM90_SUCCESS) {
      if (pointers.persistent != 0) d.cuMemFree(pointers.persistent);
      return status;
    }
  }
  *op = new tensor_maps_sm90_op_s{entry, image, loaded, context, filter, pointers.persistent, {}};
  return TENSOR_MAPS_SM90_SUCCESS;
}

size_t tensor_maps_sm90_op_workspace_size(tensor_maps_sm90_op op) {
  return op != nullptr ? static_cast<size_t>(op->image->workspace_bytes) : 0;
}

tensor_maps_sm90_status tensor_maps_sm90_op_run(tensor_maps_sm90_op op, unsigned long long activation, unsigned long long output,
                          unsigned long long workspace, void* stream) {
  return tensor_maps_sm90_op_run_epilogue(op, activation, output, 0, 0, workspace, stream);
}

tensor_maps_sm90_status tensor_maps_sm90_op_run_epilogue(tensor_maps_sm90_op op, unsigned long long activation, unsigned long long output,
                                   unsigned long long bias, unsigned long long residual, unsigned long long workspace,
                                   void* stream) {
  last_error.clear();
  if (op == nullptr) return fail(TENSOR_MAPS_SM90_ERROR_INVALID_ARGUMENT, "tensor_maps_sm90_op_run: op is NULL");
  if (activation == 0 || output == 0) return fail(TENSOR_MAPS_SM90_ERROR_INVALID_ARGUMENT, "tensor_maps_sm90_op_run: a device pointer is 0");
  if (const tensor_maps_sm90_status status = check_epilogue("tensor_maps_sm90_op_run", op->entry->problem, bias, residual);
      status != TENSOR_MAPS_SM90_SUCCESS)
    return status;
  if (workspace == 0 && op->image->workspace_bytes > 0)
    return fail(TENSOR_MAPS_SM90_ERROR_INVALID_ARGUMENT, "tensor_maps_sm90_op_run: the workspace pointer is 0; kernel " +
                                                  std::string(op->image->kernel) + " needs " +
                                                  std::to_string(op->image->workspace_bytes) + " bytes");
  const Driver& d = driver();
  CUcontext current = nullptr;
  if (const CUresult result = d.cuCtxGetCurrent(&current); result != CUDA_SUCCESS)
    return cuda_fail(d, "cuCtxGetCurrent", result);
  if (current == nullptr) {
    if (const CUresult result = d.cuCtxSetCurrent(op->context); result != CUDA_SUCCESS)
      return cuda_fail(d, "cuCtxSetCurrent", result);
  } else if (current != op->context) {
    return fail(TENSOR_MAPS_SM90_ERROR_INVALID_ARGUMENT,
                "tensor_maps_sm90_op_run: the calling thread's current CUDA context is not the one the op was created in");
  }
  Pointers pointers;
  pointers.activation = activation;
  pointers.filter = op->filter;
  pointers.output = output;
  pointers.workspace = workspace;
  pointers.persistent = op->persistent;
  pointers.bias = bias;
  pointers.residual = residual;
  if (const tensor_maps_sm90_status status = check_alignment("tensor_maps_sm90_op_run", *op->entry, *op->image, pointers, 5);
      status != TENSOR_MAPS_SM90_SUCCESS)
    return status;
  return run_steps(d, *op->entry, *op->image, op->image->run, op->loaded->run.data(), op->image->run_count, pointers,
                   static_cast<CUstream>(stream), &op->maps);
}

tensor_maps_sm90_status tensor_maps_sm90_op_destroy(tensor_maps_sm90_op op) {
  last_error.clear();
  if (op == nullptr) return TENSOR_MAPS_SM90_SUCCESS;
  tensor_maps_sm90_status status = TENSOR_MAPS_SM90_SUCCESS;
  if (op->persistent != 0) {
    const Driver& d = driver();
    CUresult result = d.cuCtxPushCurrent(op->context);
    if (result == CUDA_SUCCESS) {
      if ((result = d.cuMemFree(op->persistent)) != CUDA_SUCCESS)
        status = cuda_fail(d, "cuMemFree (the op's persistent buffers)", result);
      CUcontext popped = nullptr;
      d.cuCtxPopCurrent(&popped);
    } else {
      status = cuda_fail(d, "cuCtxPushCurrent (the op's context)", result);
    }
  }
  delete op;
  return status;
}

tensor_maps_sm90_status tensor_maps_sm90_check_device(void) {
  last_error.clear();
  const Driver& d = driver();
  std::lock_guard<std::mutex> lock(state().mutex);
  CUcontext context = nullptr;
  ContextState* context_state = nullptr;
  if (const tensor_maps_sm90_status status = current_context(d, &context, &context_state); status != TENSOR_MAPS_SM90_SUCCESS) return status;
  for (std::size_t i = 0; i < tensor_maps_sm90_internal::problem_count; ++i)
    if (find_image(tensor_maps_sm90_internal::problems[i], context_state->arch) != nullptr) return TENSOR_MAPS_SM90_SUCCESS;
  return fail(TENSOR_MAPS_SM90_ERROR_NO_KERNEL_FOR_ARCH, no_arch_message(context_state->arch));
}

const char* tensor_maps_sm90_status_string(tensor_maps_sm90_status status) {
  switch (status) {
    case TENSOR_MAPS_SM90_SUCCESS:
      return "TENSOR_MAPS_SM90_SUCCESS: no error";
    case TENSOR_MAPS_SM90_ERROR_NO_DRIVER:
      return "TENSOR_MAPS_SM90_ERROR_NO_DRIVER: the CUDA driver could not be loaded";
    case TENSOR_MAPS_SM90_ERROR_NO_DEVICE:
      return "TENSOR_MAPS_SM90_ERROR_NO_DEVICE: no CUDA device";
    case TENSOR_MAPS_SM90_ERROR_UNKNOWN_PROBLEM:
      return "TENSOR_MAPS_SM90_ERROR_UNKNOWN_PROBLEM: no kernel for this problem";
    case TENSOR_MAPS_SM90_ERROR_NO_KERNEL_FOR_ARCH:
      return "TENSOR_MAPS_SM90_ERROR_NO_KERNEL_FOR_ARCH: no cubin for this GPU's architecture";
    case TENSOR_MAPS_SM90_ERROR_CUDA:
      return "TENSOR_MAPS_SM90_ERROR_CUDA: a CUDA driver call failed";
    case TENSOR_MAPS_SM90_ERROR_INVALID_ARGUMENT:
      return "TENSOR_MAPS_SM90_ERROR_INVALID_ARGUMENT: a null problem or pointer, or an op used in another context";
    case TENSOR_MAPS_SM90_ERROR_NEEDS_OP:
      return "TENSOR_MAPS_SM90_ERROR_NEEDS_OP: the problem's plan needs an op (setup, workspace or a filter to check)";
    case TENSOR_MAPS_SM90_ERROR_FILTER_MISMATCH:
      return "TENSOR_MAPS_SM90_ERROR_FILTER_MISMATCH: the filter is not one the problem's kernels were made for";
  }
  return "unknown tensor_maps_sm90 status";
}

const char* tensor_maps_sm90_last_error_message(void) { return last_error.c_str(); }

void tensor_maps_sm90_set_fallback(tensor_maps_sm90_fallback_fn fallback, void* user) {
  std::lock_guard<std::mutex> lock(state().mutex);
  state().fallback = fallback;
  state().fallback_user = user;
}

size_t tensor_maps_sm90_problem_count(void) { return tensor_maps_sm90_internal::problem_count; }

const tensor_maps_sm90_problem* tensor_maps_sm90_problem_at(size_t i) {
  return i < tensor_maps_sm90_internal::problem_count ? &tensor_maps_sm90_internal::problems[i].problem : nullptr;
}

const char* tensor_maps_sm90_problem_name(size_t i) {
  return i < tensor_maps_sm90_internal::problem_count ? tensor_maps_sm90_internal::problems[i].name : nullptr;
}

const char* tensor_maps_sm90_problem_weight_pattern(size_t i) {
  return i < tensor_maps_sm90_internal::problem_count ? tensor_maps_sm90_internal::problems[i].weight_pattern : nullptr;
}

tensor_maps_sm90_status tensor_maps_sm90_check_filter(const tensor_maps_sm90_problem* problem, const void* host_filter) {
  last_error.clear();
  if (problem == nullptr || host_filter == nullptr)
    return fail(TENSOR_MAPS_SM90_ERROR_INVALID_ARGUMENT, "tensor_maps_sm90_check_filter: the problem or the filter is NULL");
  const std::vector<const ProblemEntry*> entries = find_problems(*problem);
  if (entries.empty()) return unknown_problem(*problem);
  std::string mismatches;
  for (const ProblemEntry* entry : entries) {
    const std::string why =
        filter_mismatch(*entry, filter_check_of(*entry), static_cast<const unsigned char*>(host_filter));
    if (why.empty()) return TENSOR_MAPS_SM90_SUCCESS;
    mismatches += "\n  " + why;
  }
  return filter_refused("tensor_maps_sm90_check_filter", *problem, mismatches);
}

const char* tensor_maps_sm90_kernel_name(const tensor_maps_sm90_problem* problem, int arch) {
  if (problem == nullptr) return nullptr;
  const ProblemEntry* entry = find_problem(*problem);
  if (entry == nullptr) return nullptr;
  const KernelImage* image = find_image(*entry, arch);
  return image != nullptr ? image->kernel : nullptr;
}

size_t tensor_maps_sm90_problem_key(const tensor_maps_sm90_problem* p, char* buffer, size_t size) {
  if (p == nullptr) return 0;
  char key[512];
  const int length = std::snprintf(
      key, sizeof key, "n%d_c%d_k%d_i%dx%dx%d_f%dx%dx%d_s%dx%dx%d_p%dx%dx%d_d%dx%dx%d_g%d_%s_%s", p->n, p->c, p->k,
      p->d, p->h, p->w, p->t, p->r, p->s, p->stride_d, p->stride_h, p->stride_w, p->pad_d, p->pad_h, p->pad_w,
      p->dilation_d, p->dilation_h, p->dilation_w, p->groups, layout_name(p->layout), precision_name(p->precision));
  std::string text(key, length > 0 ? static_cast<size_t>(length) : 0);
  if (p->relu_on_load != 0) text += "_relu";
  if (!is_identity(p->epilogue)) text += "_e" + epilogue_text(p->epilogue);
  const size_t full = text.size();
  if (buffer != nullptr && size > 0) {
    const size_t n = full < size - 1 ? full : size - 1;
    std::memcpy(buffer, text.data(), n);
    buffer[n] = '\0';
  }
  return full;
}

}  // extern "C"
