// cusnn_sm90_runtime.cpp: the library's run time: loads the CUDA driver, finds the problem's kernel, loads it, launches it.
#include <dlfcn.h>

#include <cuda.h>

#include <cstdio>
#include <cstring>
#include <map>
#include <mutex>
#include <string>
#include <utility>

#include "cusnn_sm90.h"
#include "cusnn_sm90_kernels.hpp"

namespace {

using cusnn_sm90_internal::KernelImage;
using cusnn_sm90_internal::ProblemEntry;

#define CUSNN_SM90_STRINGIFY_(x) #x
#define CUSNN_SM90_STRINGIFY(x) CUSNN_SM90_STRINGIFY_(x)

// The driver entry points the library calls. cuda.h maps each name to its current versioned symbol
// (cuCtxGetCurrent stays, cuMemAlloc becomes cuMemAlloc_v2 ...): each is resolved by the name it expands to.
// clang-format off
#define CUSNN_SM90_DRIVER_FUNCTIONS(X) \
  X(cuInit) X(cuDeviceGetCount) X(cuDeviceGet) X(cuDeviceGetAttribute) X(cuCtxGetCurrent) X(cuCtxSetCurrent) \
  X(cuCtxGetDevice) X(cuDevicePrimaryCtxRetain) X(cuModuleLoadData) X(cuModuleGetFunction) X(cuFuncSetAttribute) \
  X(cuLaunchKernel) X(cuMemsetD32Async) X(cuMemsetD8Async) X(cuGetErrorName) X(cuGetErrorString)
// clang-format on

struct Driver {
#define CUSNN_SM90_MEMBER(name) decltype(&::name) name = nullptr;
  CUSNN_SM90_DRIVER_FUNCTIONS(CUSNN_SM90_MEMBER)
#undef CUSNN_SM90_MEMBER
  cusnn_sm90_status status = CUSNN_SM90_SUCCESS;  // CUSNN_SM90_ERROR_NO_DRIVER or _NO_DEVICE when unusable
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
    d.status = CUSNN_SM90_ERROR_NO_DRIVER;
    d.reason = std::string("libcuda.so.1 could not be loaded (") + (why ? why : "no reason given") + ")";
    return d;
  }
#define CUSNN_SM90_RESOLVE(name)                                                                     \
  d.name = reinterpret_cast<decltype(d.name)>(dlsym(handle, CUSNN_SM90_STRINGIFY(name)));            \
  if (d.name == nullptr && d.reason.empty()) {                                                  \
    d.status = CUSNN_SM90_ERROR_NO_DRIVER;                                                           \
    d.reason = "libcuda.so.1 lacks the entry point " CUSNN_SM90_STRINGIFY(name) " (the driver is " \
               "older than the CUDA headers the library was built with)"; \
  }
  CUSNN_SM90_DRIVER_FUNCTIONS(CUSNN_SM90_RESOLVE)
#undef CUSNN_SM90_RESOLVE
  if (d.status != CUSNN_SM90_SUCCESS) return d;
  if (const CUresult result = d.cuInit(0); result != CUDA_SUCCESS) {
    d.status = result == CUDA_ERROR_NO_DEVICE ? CUSNN_SM90_ERROR_NO_DEVICE : CUSNN_SM90_ERROR_NO_DRIVER;
    d.reason = "cuInit failed: " + error_text(d, result);
    return d;
  }
  int count = 0;
  if (d.cuDeviceGetCount(&count) != CUDA_SUCCESS || count <= 0) {
    d.status = CUSNN_SM90_ERROR_NO_DEVICE;
    d.reason = "the driver reports 0 devices";
  }
  return d;
}

// Loaded once per process and never unloaded, so no destructor order can outlive it.
const Driver& driver() {
  static const Driver d = load_driver();
  return d;
}

// Per context: its device's compute capability and the kernels loaded into it so far.
struct ContextState {
  int arch = 0;
  std::map<const KernelImage*, CUfunction> functions;
};

struct State {
  std::mutex mutex;
  std::map<CUcontext, ContextState> contexts;
  cusnn_sm90_fallback_fn fallback = nullptr;
  void* fallback_user = nullptr;
};

State& state() {
  static State* s = new State;  // leaked on purpose: usable from other static destructors
  return *s;
}

thread_local std::string last_error;

cusnn_sm90_status fail(cusnn_sm90_status status, std::string message) {
  last_error = std::move(message);
  return status;
}

cusnn_sm90_status cuda_fail(const Driver& d, const char* call, CUresult result) {
  return fail(CUSNN_SM90_ERROR_CUDA, std::string(call) + " failed: " + error_text(d, result));
}

std::string key_of(const cusnn_sm90_problem& p) {
  std::string key(cusnn_sm90_problem_key(&p, nullptr, 0), '\0');
  cusnn_sm90_problem_key(&p, &key[0], key.size() + 1);
  return key;
}

bool same_problem(const cusnn_sm90_problem& a, const cusnn_sm90_problem& b) {
  return a.n == b.n && a.c == b.c && a.k == b.k && a.d == b.d && a.h == b.h && a.w == b.w && a.t == b.t && a.r == b.r &&
         a.s == b.s && a.stride_d == b.stride_d && a.stride_h == b.stride_h && a.stride_w == b.stride_w &&
         a.pad_d == b.pad_d && a.pad_h == b.pad_h && a.pad_w == b.pad_w && a.dilation_d == b.dilation_d &&
         a.dilation_h == b.dilation_h && a.dilation_w == b.dilation_w && a.groups == b.groups && a.layout == b.layout &&
         a.precision == b.precision;
}

const ProblemEntry* find_problem(const cusnn_sm90_problem& p) {
  for (std::size_t i = 0; i < cusnn_sm90_internal::problem_count; ++i)
    if (same_problem(cusnn_sm90_internal::problems[i].problem, p)) return &cusnn_sm90_internal::problems[i];
  return nullptr;
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
cusnn_sm90_status current_context(const Driver& d, CUcontext* context, ContextState** context_state) {
  if (d.status != CUSNN_SM90_SUCCESS) return fail(d.status, d.reason);
  CUresult result = d.cuCtxGetCurrent(context);
  if (result != CUDA_SUCCESS) return cuda_fail(d, "cuCtxGetCurrent", result);
  if (*context == nullptr) {
    CUdevice device = 0;
    if ((result = d.cuDeviceGet(&device, 0)) != CUDA_SUCCESS) return cuda_fail(d, "cuDeviceGet", result);
    if ((result = d.cuDevicePrimaryCtxRetain(context, device)) != CUDA_SUCCESS)
      return cuda_fail(d, "cuDevicePrimaryCtxRetain", result);
    if ((result = d.cuCtxSetCurrent(*context)) != CUDA_SUCCESS) return cuda_fail(d, "cuCtxSetCurrent", result);
  }
  auto [it, inserted] = state().contexts.try_emplace(*context);
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
  return CUSNN_SM90_SUCCESS;
}

std::string no_arch_message(int arch) {
  return "this GPU is sm_" + std::to_string(arch) + " and the library has cubins for " + cusnn_sm90_internal::architectures +
         " only";
}

// Returns the loaded kernel of `image` in the context, loading its module on first use. Mutex held.
cusnn_sm90_status load_function(const Driver& d, ContextState& context, const KernelImage& image, CUfunction* function) {
  if (auto it = context.functions.find(&image); it != context.functions.end()) {
    *function = it->second;
    return CUSNN_SM90_SUCCESS;
  }
  CUmodule module = nullptr;
  CUresult result = d.cuModuleLoadData(&module, image.cubin);
  if (result != CUDA_SUCCESS)
    return fail(CUSNN_SM90_ERROR_CUDA, std::string("cuModuleLoadData of ") + image.entry + " (sm_" +
                                      std::to_string(image.arch) + ") failed: " + error_text(d, result));
  if ((result = d.cuModuleGetFunction(function, module, image.entry)) != CUDA_SUCCESS)
    return fail(CUSNN_SM90_ERROR_CUDA,
                std::string("cuModuleGetFunction of ") + image.entry + " failed: " + error_text(d, result));
  if (image.dynamic_smem_bytes > 48 * 1024 &&
      (result = d.cuFuncSetAttribute(*function, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                                     static_cast<int>(image.dynamic_smem_bytes))) != CUDA_SUCCESS)
    return fail(CUSNN_SM90_ERROR_CUDA, std::string("cuFuncSetAttribute (dynamic shared memory) of ") + image.entry +
                                      " failed: " + error_text(d, result));
  context.functions.emplace(&image, *function);  // the module stays loaded for the context's life
  return CUSNN_SM90_SUCCESS;
}

const char* layout_name(cusnn_sm90_layout layout) {
  switch (layout) {
    case CUSNN_SM90_LAYOUT_NCW:
      return "ncw";
    case CUSNN_SM90_LAYOUT_NWC:
      return "nwc";
    case CUSNN_SM90_LAYOUT_NCHW:
      return "nchw";
    case CUSNN_SM90_LAYOUT_NHWC:
      return "nhwc";
    case CUSNN_SM90_LAYOUT_NCDHW:
      return "ncdhw";
    case CUSNN_SM90_LAYOUT_NDHWC:
      return "ndhwc";
  }
  return "unknown_layout";
}

const char* precision_name(cusnn_sm90_precision precision) {
  switch (precision) {
    case CUSNN_SM90_PRECISION_FP32:
      return "fp32";
    case CUSNN_SM90_PRECISION_TF32:
      return "tf32";
    case CUSNN_SM90_PRECISION_FP16:
      return "fp16";
    case CUSNN_SM90_PRECISION_BF16:
      return "bf16";
  }
  return "unknown_precision";
}

}  // namespace

extern "C" {

cusnn_sm90_status cusnn_sm90_conv_forward(const cusnn_sm90_problem* problem, unsigned long long activation, unsigned long long filter,
                                unsigned long long output, void* stream) {
  last_error.clear();
  if (problem == nullptr) return fail(CUSNN_SM90_ERROR_INVALID_ARGUMENT, "cusnn_sm90_conv_forward: problem is NULL");
  const ProblemEntry* entry = find_problem(*problem);
  if (entry == nullptr) {
    cusnn_sm90_fallback_fn fallback = nullptr;
    void* user = nullptr;
    {
      std::lock_guard<std::mutex> lock(state().mutex);
      fallback = state().fallback;
      user = state().fallback_user;
    }
    if (fallback != nullptr) return fallback(problem, activation, filter, output, stream, user);
    return fail(CUSNN_SM90_ERROR_UNKNOWN_PROBLEM, "problem " + key_of(*problem) + " was not emitted into cusnn_sm90 (it serves " +
                                                 std::to_string(cusnn_sm90_internal::problem_count) +
                                                 " problems; see cusnn_sm90_problem_at)");
  }
  if (activation == 0 || filter == 0 || output == 0)
    return fail(CUSNN_SM90_ERROR_INVALID_ARGUMENT, "cusnn_sm90_conv_forward: a device pointer is 0");
  const Driver& d = driver();
  CUfunction function = nullptr;
  const KernelImage* image = nullptr;
  {
    std::lock_guard<std::mutex> lock(state().mutex);
    CUcontext context = nullptr;
    ContextState* context_state = nullptr;
    if (const cusnn_sm90_status status = current_context(d, &context, &context_state); status != CUSNN_SM90_SUCCESS)
      return status;
    image = find_image(*entry, context_state->arch);
    if (image == nullptr)
      return fail(CUSNN_SM90_ERROR_NO_KERNEL_FOR_ARCH,
                  "problem " + key_of(*problem) + " (" + entry->name + "): " + no_arch_message(context_state->arch));
    if (const cusnn_sm90_status status = load_function(d, *context_state, *image, &function); status != CUSNN_SM90_SUCCESS)
      return status;
  }
  CUstream cu_stream = static_cast<CUstream>(stream);
  CUresult result = CUDA_SUCCESS;
  if (image->zero_output_first) {
    const unsigned long long bytes = entry->output_bytes;
    result = bytes % 4 == 0 ? d.cuMemsetD32Async(output, 0, bytes / 4, cu_stream)
                            : d.cuMemsetD8Async(output, 0, bytes, cu_stream);
    if (result != CUDA_SUCCESS) return cuda_fail(d, "cuMemsetD32Async (zeroing the output)", result);
  }
  CUdeviceptr workspace = 0;  // emit-lib refuses kernels that need one
  void* args[] = {&activation, &filter, &output, &workspace};
  result = d.cuLaunchKernel(function, image->grid[0], image->grid[1], image->grid[2], image->block[0], image->block[1],
                            image->block[2], image->dynamic_smem_bytes, cu_stream, args, nullptr);
  if (result != CUDA_SUCCESS)
    return fail(CUSNN_SM90_ERROR_CUDA, std::string("cuLaunchKernel of ") + image->entry + " for problem " +
                                      key_of(*problem) + " failed: " + error_text(d, result));
  return CUSNN_SM90_SUCCESS;
}

cusnn_sm90_status cusnn_sm90_check_device(void) {
  last_error.clear();
  const Driver& d = driver();
  std::lock_guard<std::mutex> lock(state().mutex);
  CUcontext context = nullptr;
  ContextState* context_state = nullptr;
  if (const cusnn_sm90_status status = current_context(d, &context, &context_state); status != CUSNN_SM90_SUCCESS) return status;
  for (std::size_t i = 0; i < cusnn_sm90_internal::problem_count; ++i)
    if (find_image(cusnn_sm90_internal::problems[i], context_state->arch) != nullptr) return CUSNN_SM90_SUCCESS;
  return fail(CUSNN_SM90_ERROR_NO_KERNEL_FOR_ARCH, no_arch_message(context_state->arch));
}

const char* cusnn_sm90_status_string(cusnn_sm90_status status) {
  switch (status) {
    case CUSNN_SM90_SUCCESS:
      return "CUSNN_SM90_SUCCESS: no error";
    case CUSNN_SM90_ERROR_NO_DRIVER:
      return "CUSNN_SM90_ERROR_NO_DRIVER: the CUDA driver could not be loaded";
    case CUSNN_SM90_ERROR_NO_DEVICE:
      return "CUSNN_SM90_ERROR_NO_DEVICE: no CUDA device";
    case CUSNN_SM90_ERROR_UNKNOWN_PROBLEM:
      return "CUSNN_SM90_ERROR_UNKNOWN_PROBLEM: no kernel for this problem";
    case CUSNN_SM90_ERROR_NO_KERNEL_FOR_ARCH:
      return "CUSNN_SM90_ERROR_NO_KERNEL_FOR_ARCH: no cubin for this GPU's architecture";
    case CUSNN_SM90_ERROR_CUDA:
      return "CUSNN_SM90_ERROR_CUDA: a CUDA driver call failed";
    case CUSNN_SM90_ERROR_INVALID_ARGUMENT:
      return "CUSNN_SM90_ERROR_INVALID_ARGUMENT: a null problem or pointer";
  }
  return "unknown cusnn_sm90 status";
}

const char* cusnn_sm90_last_error_message(void) { return last_error.c_str(); }

void cusnn_sm90_set_fallback(cusnn_sm90_fallback_fn fallback, void* user) {
  std::lock_guard<std::mutex> lock(state().mutex);
  state().fallback = fallback;
  state().fallback_user = user;
}

size_t cusnn_sm90_problem_count(void) { return cusnn_sm90_internal::problem_count; }

const cusnn_sm90_problem* cusnn_sm90_problem_at(size_t i) {
  return i < cusnn_sm90_internal::problem_count ? &cusnn_sm90_internal::problems[i].problem : nullptr;
}

const char* cusnn_sm90_problem_name(size_t i) {
  return i < cusnn_sm90_internal::problem_count ? cusnn_sm90_internal::problems[i].name : nullptr;
}

const char* cusnn_sm90_kernel_name(const cusnn_sm90_problem* problem, int arch) {
  if (problem == nullptr) return nullptr;
  const ProblemEntry* entry = find_problem(*problem);
  if (entry == nullptr) return nullptr;
  const KernelImage* image = find_image(*entry, arch);
  return image != nullptr ? image->entry : nullptr;
}

size_t cusnn_sm90_problem_key(const cusnn_sm90_problem* p, char* buffer, size_t size) {
  if (p == nullptr) return 0;
  char key[512];
  const int length = std::snprintf(
      key, sizeof key, "n%d_c%d_k%d_i%dx%dx%d_f%dx%dx%d_s%dx%dx%d_p%dx%dx%d_d%dx%dx%d_g%d_%s_%s", p->n, p->c, p->k,
      p->d, p->h, p->w, p->t, p->r, p->s, p->stride_d, p->stride_h, p->stride_w, p->pad_d, p->pad_h, p->pad_w,
      p->dilation_d, p->dilation_h, p->dilation_w, p->groups, layout_name(p->layout), precision_name(p->precision));
  const size_t full = length > 0 ? static_cast<size_t>(length) : 0;
  if (buffer != nullptr && size > 0) {
    const size_t n = full < size - 1 ? full : size - 1;
    std::memcpy(buffer, key, n);
    buffer[n] = '\0';
  }
  return full;
}

}  // extern "C"
