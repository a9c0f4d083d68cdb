// cglib_runtime.cpp: the library's run time: loads the CUDA driver, finds the problem's kernel, loads it, launches it.
#include <dlfcn.h>

#include <cuda.h>

#include <cstdio>
#include <cstring>
#include <map>
#include <mutex>
#include <string>
#include <utility>

#include "cglib.h"
#include "cglib_kernels.hpp"

namespace {

using cglib_internal::KernelImage;
using cglib_internal::ProblemEntry;

#define CGLIB_STRINGIFY_(x) #x
#define CGLIB_STRINGIFY(x) CGLIB_STRINGIFY_(x)

// The driver entry points the library calls. cuda.h maps each name to its current versioned symbol
// (cuCtxGetCurrent stays, cuMemAlloc becomes cuMemAlloc_v2 ...): each is resolved by the name it expands to.
// clang-format off
#define CGLIB_DRIVER_FUNCTIONS(X) \
  X(cuInit) X(cuDeviceGetCount) X(cuDeviceGet) X(cuDeviceGetAttribute) X(cuCtxGetCurrent) X(cuCtxSetCurrent) \
  X(cuCtxGetDevice) X(cuDevicePrimaryCtxRetain) X(cuModuleLoadData) X(cuModuleGetFunction) X(cuFuncSetAttribute) \
  X(cuLaunchKernel) X(cuMemsetD32Async) X(cuMemsetD8Async) X(cuGetErrorName) X(cuGetErrorString)
// clang-format on

struct Driver {
#define CGLIB_MEMBER(name) decltype(&::name) name = nullptr;
  CGLIB_DRIVER_FUNCTIONS(CGLIB_MEMBER)
#undef CGLIB_MEMBER
  cglib_status status = CGLIB_SUCCESS;  // CGLIB_ERROR_NO_DRIVER or _NO_DEVICE when unusable
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
    d.status = CGLIB_ERROR_NO_DRIVER;
    d.reason = std::string("libcuda.so.1 could not be loaded (") + (why ? why : "no reason given") + ")";
    return d;
  }
#define CGLIB_RESOLVE(name)                                                                     \
  d.name = reinterpret_cast<decltype(d.name)>(dlsym(handle, CGLIB_STRINGIFY(name)));            \
  if (d.name == nullptr && d.reason.empty()) {                                                  \
    d.status = CGLIB_ERROR_NO_DRIVER;                                                           \
    d.reason = "libcuda.so.1 lacks the entry point " CGLIB_STRINGIFY(name) " (the driver is " \
               "older than the CUDA headers the library was built with)"; \
  }
  CGLIB_DRIVER_FUNCTIONS(CGLIB_RESOLVE)
#undef CGLIB_RESOLVE
  if (d.status != CGLIB_SUCCESS) return d;
  if (const CUresult result = d.cuInit(0); result != CUDA_SUCCESS) {
    d.status = result == CUDA_ERROR_NO_DEVICE ? CGLIB_ERROR_NO_DEVICE : CGLIB_ERROR_NO_DRIVER;
    d.reason = "cuInit failed: " + error_text(d, result);
    return d;
  }
  int count = 0;
  if (d.cuDeviceGetCount(&count) != CUDA_SUCCESS || count <= 0) {
    d.status = CGLIB_ERROR_NO_DEVICE;
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
  cglib_fallback_fn fallback = nullptr;
  void* fallback_user = nullptr;
};

State& state() {
  static State* s = new State;  // leaked on purpose: usable from other static destructors
  return *s;
}

thread_local std::string last_error;

cglib_status fail(cglib_status status, std::string message) {
  last_error = std::move(message);
  return status;
}

cglib_status cuda_fail(const Driver& d, const char* call, CUresult result) {
  return fail(CGLIB_ERROR_CUDA, std::string(call) + " failed: " + error_text(d, result));
}

std::string key_of(const cglib_problem& p) {
  std::string key(cglib_problem_key(&p, nullptr, 0), '\0');
  cglib_problem_key(&p, &key[0], key.size() + 1);
  return key;
}

bool same_problem(const cglib_problem& a, const cglib_problem& b) {
  return a.n == b.n && a.c == b.c && a.k == b.k && a.d == b.d && a.h == b.h && a.w == b.w && a.t == b.t && a.r == b.r &&
         a.s == b.s && a.stride_d == b.stride_d && a.stride_h == b.stride_h && a.stride_w == b.stride_w &&
         a.pad_d == b.pad_d && a.pad_h == b.pad_h && a.pad_w == b.pad_w && a.dilation_d == b.dilation_d &&
         a.dilation_h == b.dilation_h && a.dilation_w == b.dilation_w && a.groups == b.groups && a.layout == b.layout &&
         a.precision == b.precision;
}

const ProblemEntry* find_problem(const cglib_problem& p) {
  for (std::size_t i = 0; i < cglib_internal::problem_count; ++i)
    if (same_problem(cglib_internal::problems[i].problem, p)) return &cglib_internal::problems[i];
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
cglib_status current_context(const Driver& d, CUcontext* context, ContextState** context_state) {
  if (d.status != CGLIB_SUCCESS) return fail(d.status, d.reason);
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
  return CGLIB_SUCCESS;
}

std::string no_arch_message(int arch) {
  return "this GPU is sm_" + std::to_string(arch) + " and the library has cubins for " + cglib_internal::architectures +
         " only";
}

// Returns the loaded kernel of `image` in the context, loading its module on first use. Mutex held.
cglib_status load_function(const Driver& d, ContextState& context, const KernelImage& image, CUfunction* function) {
  if (auto it = context.functions.find(&image); it != context.functions.end()) {
    *function = it->second;
    return CGLIB_SUCCESS;
  }
  CUmodule module = nullptr;
  CUresult result = d.cuModuleLoadData(&module, image.cubin);
  if (result != CUDA_SUCCESS)
    return fail(CGLIB_ERROR_CUDA, std::string("cuModuleLoadData of ") + image.entry + " (sm_" +
                                      std::to_string(image.arch) + ") failed: " + error_text(d, result));
  if ((result = d.cuModuleGetFunction(function, module, image.entry)) != CUDA_SUCCESS)
    return fail(CGLIB_ERROR_CUDA,
                std::string("cuModuleGetFunction of ") + image.entry + " failed: " + error_text(d, result));
  if (image.dynamic_smem_bytes > 48 * 1024 &&
      (result = d.cuFuncSetAttribute(*function, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                                     static_cast<int>(image.dynamic_smem_bytes))) != CUDA_SUCCESS)
    return fail(CGLIB_ERROR_CUDA, std::string("cuFuncSetAttribute (dynamic shared memory) of ") + image.entry +
                                      " failed: " + error_text(d, result));
  context.functions.emplace(&image, *function);  // the module stays loaded for the context's life
  return CGLIB_SUCCESS;
}

const char* layout_name(cglib_layout layout) {
  switch (layout) {
    case CGLIB_LAYOUT_NCW:
      return "ncw";
    case CGLIB_LAYOUT_NWC:
      return "nwc";
    case CGLIB_LAYOUT_NCHW:
      return "nchw";
    case CGLIB_LAYOUT_NHWC:
      return "nhwc";
    case CGLIB_LAYOUT_NCDHW:
      return "ncdhw";
    case CGLIB_LAYOUT_NDHWC:
      return "ndhwc";
  }
  return "unknown_layout";
}

const char* precision_name(cglib_precision precision) {
  switch (precision) {
    case CGLIB_PRECISION_FP32:
      return "fp32";
    case CGLIB_PRECISION_TF32:
      return "tf32";
    case CGLIB_PRECISION_FP16:
      return "fp16";
    case CGLIB_PRECISION_BF16:
      return "bf16";
  }
  return "unknown_precision";
}

}  // namespace

extern "C" {

cglib_status cglib_conv_forward(const cglib_problem* problem, unsigned long long activation, unsigned long long filter,
                                unsigned long long output, void* stream) {
  last_error.clear();
  if (problem == nullptr) return fail(CGLIB_ERROR_INVALID_ARGUMENT, "cglib_conv_forward: problem is NULL");
  const ProblemEntry* entry = find_problem(*problem);
  if (entry == nullptr) {
    cglib_fallback_fn fallback = nullptr;
    void* user = nullptr;
    {
      std::lock_guard<std::mutex> lock(state().mutex);
      fallback = state().fallback;
      user = state().fallback_user;
    }
    if (fallback != nullptr) return fallback(problem, activation, filter, output, stream, user);
    return fail(CGLIB_ERROR_UNKNOWN_PROBLEM, "problem " + key_of(*problem) + " was not emitted into cglib (it serves " +
                                                 std::to_string(cglib_internal::problem_count) +
                                                 " problems; see cglib_problem_at)");
  }
  if (activation == 0 || filter == 0 || output == 0)
    return fail(CGLIB_ERROR_INVALID_ARGUMENT, "cglib_conv_forward: a device pointer is 0");
  const Driver& d = driver();
  CUfunction function = nullptr;
  const KernelImage* image = nullptr;
  {
    std::lock_guard<std::mutex> lock(state().mutex);
    CUcontext context = nullptr;
    ContextState* context_state = nullptr;
    if (const cglib_status status = current_context(d, &context, &context_state); status != CGLIB_SUCCESS)
      return status;
    image = find_image(*entry, context_state->arch);
    if (image == nullptr)
      return fail(CGLIB_ERROR_NO_KERNEL_FOR_ARCH,
                  "problem " + key_of(*problem) + " (" + entry->name + "): " + no_arch_message(context_state->arch));
    if (const cglib_status status = load_function(d, *context_state, *image, &function); status != CGLIB_SUCCESS)
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
    return fail(CGLIB_ERROR_CUDA, std::string("cuLaunchKernel of ") + image->entry + " for problem " +
                                      key_of(*problem) + " failed: " + error_text(d, result));
  return CGLIB_SUCCESS;
}

cglib_status cglib_check_device(void) {
  last_error.clear();
  const Driver& d = driver();
  std::lock_guard<std::mutex> lock(state().mutex);
  CUcontext context = nullptr;
  ContextState* context_state = nullptr;
  if (const cglib_status status = current_context(d, &context, &context_state); status != CGLIB_SUCCESS) return status;
  for (std::size_t i = 0; i < cglib_internal::problem_count; ++i)
    if (find_image(cglib_internal::problems[i], context_state->arch) != nullptr) return CGLIB_SUCCESS;
  return fail(CGLIB_ERROR_NO_KERNEL_FOR_ARCH, no_arch_message(context_state->arch));
}

const char* cglib_status_string(cglib_status status) {
  switch (status) {
    case CGLIB_SUCCESS:
      return "CGLIB_SUCCESS: no error";
    case CGLIB_ERROR_NO_DRIVER:
      return "CGLIB_ERROR_NO_DRIVER: the CUDA driver could not be loaded";
    case CGLIB_ERROR_NO_DEVICE:
      return "CGLIB_ERROR_NO_DEVICE: no CUDA device";
    case CGLIB_ERROR_UNKNOWN_PROBLEM:
      return "CGLIB_ERROR_UNKNOWN_PROBLEM: no kernel for this problem";
    case CGLIB_ERROR_NO_KERNEL_FOR_ARCH:
      return "CGLIB_ERROR_NO_KERNEL_FOR_ARCH: no cubin for this GPU's architecture";
    case CGLIB_ERROR_CUDA:
      return "CGLIB_ERROR_CUDA: a CUDA driver call failed";
    case CGLIB_ERROR_INVALID_ARGUMENT:
      return "CGLIB_ERROR_INVALID_ARGUMENT: a null problem or pointer";
  }
  return "unknown cglib status";
}

const char* cglib_last_error_message(void) { return last_error.c_str(); }

void cglib_set_fallback(cglib_fallback_fn fallback, void* user) {
  std::lock_guard<std::mutex> lock(state().mutex);
  state().fallback = fallback;
  state().fallback_user = user;
}

size_t cglib_problem_count(void) { return cglib_internal::problem_count; }

const cglib_problem* cglib_problem_at(size_t i) {
  return i < cglib_internal::problem_count ? &cglib_internal::problems[i].problem : nullptr;
}

const char* cglib_problem_name(size_t i) {
  return i < cglib_internal::problem_count ? cglib_internal::problems[i].name : nullptr;
}

const char* cglib_kernel_name(const cglib_problem* problem, int arch) {
  if (problem == nullptr) return nullptr;
  const ProblemEntry* entry = find_problem(*problem);
  if (entry == nullptr) return nullptr;
  const KernelImage* image = find_image(*entry, arch);
  return image != nullptr ? image->entry : nullptr;
}

size_t cglib_problem_key(const cglib_problem* p, char* buffer, size_t size) {
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
