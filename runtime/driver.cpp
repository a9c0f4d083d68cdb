// driver: dlopen of libcuda.so.1, symbol resolution, cuInit and the one CUDA driver check macro's error text.
#include "runtime/driver.hpp"

#include <dlfcn.h>

#include <fmt/format.h>

namespace convgen {
namespace {

#define CONVGEN_STRINGIFY_(x) #x
#define CONVGEN_STRINGIFY(x) CONVGEN_STRINGIFY_(x)

// The load of the real driver, done once per process; never unloaded, so no destructor order can outlive it.
const detail::DriverLoad& loaded_driver() {
  static const detail::DriverLoad load = detail::load_driver("libcuda.so.1");
  return load;
}

}  // namespace

namespace detail {

DriverLoad load_driver(const std::string& library) {
  DriverLoad load;
  void* handle = dlopen(library.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (handle == nullptr) {
    const char* why = dlerror();
    load.no_device_reason = fmt::format("{} could not be loaded ({})", library, why ? why : "no reason given");
    return load;
  }
  // cuEventElapsedTime_v2 came with driver 12.8; older drivers have the unversioned symbol of the same signature.
  const auto resolve = [&](const char* symbol, const char* fallback) -> void* {
    void* address = dlsym(handle, symbol);
    return address != nullptr || fallback == nullptr ? address : dlsym(handle, fallback);
  };
  std::string missing;
#define CONVGEN_RESOLVE(name)                                                                                          \
  load.api.name = reinterpret_cast<decltype(load.api.name)>(                                                           \
      resolve(CONVGEN_STRINGIFY(name),                                                                                 \
              std::string_view(CONVGEN_STRINGIFY(name)) == "cuEventElapsedTime_v2" ? "cuEventElapsedTime" : nullptr)); \
  if (load.api.name == nullptr && missing.empty()) missing = CONVGEN_STRINGIFY(name);
  CONVGEN_DRIVER_FUNCTIONS(CONVGEN_RESOLVE)
#undef CONVGEN_RESOLVE
  if (!missing.empty()) {
    load.no_device_reason = fmt::format(
        "{} lacks the entry point {} (the driver is older than the CUDA {}.{} headers "
        "convgen was built with)",
        library, missing, CUDA_VERSION / 1000, CUDA_VERSION % 1000 / 10);
    load.api = {};
    dlclose(handle);
    return load;
  }
  if (const CUresult result = load.api.cuInit(0); result != CUDA_SUCCESS) {
    const char* name = nullptr;
    const char* text = nullptr;
    load.api.cuGetErrorName(result, &name);
    load.api.cuGetErrorString(result, &text);
    load.no_device_reason =
        fmt::format("cuInit failed: {} ({})", name ? name : "unknown error", text ? text : "no description");
    return load;
  }
  if (load.api.cuDeviceGetCount(&load.device_count) != CUDA_SUCCESS || load.device_count <= 0) {
    load.device_count = 0;
    load.no_device_reason = "the driver reports 0 devices";
  }
  return load;
}

void cu_check(CUresult result, const char* expr, const char* file, int line) {
  if (result != CUDA_SUCCESS)
    throw ApiError(fmt::format("{}:{}: {} failed: {}", file, line, expr, cu_error_text(result)));
}

}  // namespace detail

bool cuda_available() { return loaded_driver().no_device_reason.empty(); }

std::string no_device_reason() { return loaded_driver().no_device_reason; }

const DriverApi& driver() {
  const detail::DriverLoad& load = loaded_driver();
  if (!load.no_device_reason.empty()) throw NoDeviceError("no CUDA device: " + load.no_device_reason);
  return load.api;
}

std::string cu_error_text(CUresult result) {
  const DriverApi& api = loaded_driver().api;
  const char* name = nullptr;
  const char* text = nullptr;
  if (api.cuGetErrorName != nullptr) api.cuGetErrorName(result, &name);
  if (api.cuGetErrorString != nullptr) api.cuGetErrorString(result, &text);
  if (name == nullptr) return fmt::format("CUDA error {}", static_cast<int>(result));
  return fmt::format("{} ({})", name, text ? text : "no description");
}

}  // namespace convgen
