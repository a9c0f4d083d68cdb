// nvml: dlopen of libnvidia-ml.so.1, device lookup by PCI bus id, the readings, and the energy loop.
#include "measure/nvml.hpp"

#include <dlfcn.h>

#include <array>
#include <chrono>
#include <ctime>
#include <map>
#include <memory>
#include <mutex>

#include <fmt/chrono.h>
#include <fmt/format.h>

#include "runtime/driver.hpp"
#include "runtime/module.hpp"

namespace convgen {
namespace detail {

NvmlLoad load_nvml(const std::string& library) {
  NvmlLoad load;
  void* handle = dlopen(library.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (handle == nullptr) {
    const char* why = dlerror();
    load.unavailable = fmt::format("{} could not be loaded ({})", library, why ? why : "no reason given");
    return load;
  }
  std::string missing;
  const auto resolve = [&](auto& function, const char* symbol) {
    function = reinterpret_cast<std::remove_reference_t<decltype(function)>>(dlsym(handle, symbol));
    if (function == nullptr && missing.empty()) missing = symbol;
  };
  NvmlApi& api = load.api;
  resolve(api.nvmlInit_v2, "nvmlInit_v2");
  resolve(api.nvmlShutdown, "nvmlShutdown");
  resolve(api.nvmlDeviceGetHandleByIndex_v2, "nvmlDeviceGetHandleByIndex_v2");
  resolve(api.nvmlDeviceGetHandleByPciBusId_v2, "nvmlDeviceGetHandleByPciBusId_v2");
  resolve(api.nvmlDeviceGetTotalEnergyConsumption, "nvmlDeviceGetTotalEnergyConsumption");
  resolve(api.nvmlDeviceGetClockInfo, "nvmlDeviceGetClockInfo");
  resolve(api.nvmlDeviceGetPowerUsage, "nvmlDeviceGetPowerUsage");
  resolve(api.nvmlSystemGetDriverVersion, "nvmlSystemGetDriverVersion");
  resolve(api.nvmlDeviceGetName, "nvmlDeviceGetName");
  resolve(api.nvmlErrorString, "nvmlErrorString");
  if (!missing.empty()) {
    load.unavailable = fmt::format("{} lacks the entry point {}", library, missing);
    load.api = {};
    dlclose(handle);
    return load;
  }
  if (const NvmlReturn result = api.nvmlInit_v2(); result != kNvmlSuccess) {
    load.unavailable = fmt::format("nvmlInit_v2 failed: {}", nvml_error_text(api, result));
    load.api = {};
  }
  // Never unloaded nor shut down: Nvml objects live until the process ends.
  return load;
}

std::string nvml_error_text(const NvmlApi& api, NvmlReturn result) {
  const char* text = api.nvmlErrorString != nullptr ? api.nvmlErrorString(result) : nullptr;
  if (text == nullptr) return fmt::format("NVML error {}", result);
  return fmt::format("{} (NVML error {})", text, result);
}

}  // namespace detail

namespace {

const detail::NvmlLoad& loaded_nvml() {
  static const detail::NvmlLoad load = detail::load_nvml("libnvidia-ml.so.1");
  return load;
}

// The NVML device of a CUDA ordinal, or why there is none.
struct Lookup {
  void* device = nullptr;
  std::string unavailable;
};

Lookup find_device(const detail::NvmlApi& api, int ordinal) {
  Lookup lookup;
  if (cuda_available()) {
    // CUDA numbers devices fastest first and after CUDA_VISIBLE_DEVICES; NVML in PCI order. The bus id ties them.
    const DriverApi& cu = driver();
    CUdevice device = 0;
    if (cu.cuDeviceGet(&device, ordinal) != CUDA_SUCCESS) {
      lookup.unavailable = fmt::format("CUDA device {} does not exist", ordinal);
      return lookup;
    }
    int domain = 0, bus = 0, slot = 0;
    CONVGEN_CU_CHECK(cu.cuDeviceGetAttribute(&domain, CU_DEVICE_ATTRIBUTE_PCI_DOMAIN_ID, device));
    CONVGEN_CU_CHECK(cu.cuDeviceGetAttribute(&bus, CU_DEVICE_ATTRIBUTE_PCI_BUS_ID, device));
    CONVGEN_CU_CHECK(cu.cuDeviceGetAttribute(&slot, CU_DEVICE_ATTRIBUTE_PCI_DEVICE_ID, device));
    const std::string bus_id = fmt::format("{:08x}:{:02x}:{:02x}.0", domain, bus, slot);
    if (const detail::NvmlReturn result = api.nvmlDeviceGetHandleByPciBusId_v2(bus_id.c_str(), &lookup.device);
        result != detail::kNvmlSuccess)
      lookup.unavailable = fmt::format("nvmlDeviceGetHandleByPciBusId_v2({}) failed for CUDA device {}: {}", bus_id,
                                       ordinal, detail::nvml_error_text(api, result));
    return lookup;
  }
  if (ordinal < 0) {
    lookup.unavailable = fmt::format("device {}: expected a non-negative index", ordinal);
    return lookup;
  }
  if (const detail::NvmlReturn result =
          api.nvmlDeviceGetHandleByIndex_v2(static_cast<unsigned>(ordinal), &lookup.device);
      result != detail::kNvmlSuccess)
    lookup.unavailable =
        fmt::format("nvmlDeviceGetHandleByIndex_v2({}) failed: {}", ordinal, detail::nvml_error_text(api, result));
  return lookup;
}

// Devices opened so far, by CUDA ordinal: the object, or why there is none.
struct OpenDevices {
  std::mutex mutex;
  std::map<int, std::unique_ptr<Nvml>> devices;
  std::map<int, std::string> unavailable;
};

OpenDevices& open_devices() {
  static OpenDevices* devices = new OpenDevices;  // never destroyed: handed-out pointers stay valid at exit
  return *devices;
}

}  // namespace

Nvml* Nvml::open(int device) {
  const detail::NvmlLoad& load = loaded_nvml();
  if (!load.unavailable.empty()) return nullptr;
  OpenDevices& open = open_devices();
  const std::lock_guard lock(open.mutex);
  if (const auto found = open.devices.find(device); found != open.devices.end()) return found->second.get();
  if (open.unavailable.contains(device)) return nullptr;
  const Lookup lookup = find_device(load.api, device);
  if (!lookup.unavailable.empty()) {
    open.unavailable[device] = lookup.unavailable;
    return nullptr;
  }
  auto nvml = std::unique_ptr<Nvml>(new Nvml(&load.api, lookup.device));
  return open.devices.emplace(device, std::move(nvml)).first->second.get();
}

std::string nvml_unavailable_reason(int device) {
  if (const std::string& why = loaded_nvml().unavailable; !why.empty()) return why;
  if (Nvml::open(device) != nullptr) return "";
  OpenDevices& open = open_devices();
  const std::lock_guard lock(open.mutex);
  return open.unavailable.at(device);
}

std::optional<std::uint64_t> Nvml::energy_mj() const {
  unsigned long long energy = 0;
  if (api_->nvmlDeviceGetTotalEnergyConsumption(device_, &energy) != detail::kNvmlSuccess) return std::nullopt;
  return energy;
}

std::string Nvml::energy_unavailable_reason() const {
  unsigned long long energy = 0;
  const detail::NvmlReturn result = api_->nvmlDeviceGetTotalEnergyConsumption(device_, &energy);
  if (result == detail::kNvmlSuccess) return "";
  return "nvmlDeviceGetTotalEnergyConsumption failed: " + detail::nvml_error_text(*api_, result);
}

std::optional<double> Nvml::sm_clock_mhz() const {
  unsigned mhz = 0;
  if (api_->nvmlDeviceGetClockInfo(device_, detail::kNvmlClockSm, &mhz) != detail::kNvmlSuccess) return std::nullopt;
  return mhz;
}

std::optional<double> Nvml::power_w() const {
  unsigned mw = 0;
  if (api_->nvmlDeviceGetPowerUsage(device_, &mw) != detail::kNvmlSuccess) return std::nullopt;
  return mw / 1000.0;
}

std::string Nvml::name() const {
  std::array<char, 256> buffer{};
  if (api_->nvmlDeviceGetName(device_, buffer.data(), buffer.size()) != detail::kNvmlSuccess) return "";
  return buffer.data();
}

std::string Nvml::driver_version() const {
  std::array<char, 256> buffer{};
  if (api_->nvmlSystemGetDriverVersion(buffer.data(), buffer.size()) != detail::kNvmlSuccess) return "";
  return buffer.data();
}

std::string utc_now_iso8601() {
  const std::time_t now = std::chrono::system_clock::to_time_t(std::chrono::system_clock::now());
  std::tm utc{};
  gmtime_r(&now, &utc);
  return fmt::format("{:%Y-%m-%dT%H:%M:%SZ}", utc);
}

DeviceState device_state(const Nvml* nvml) {
  DeviceState state{.time = utc_now_iso8601()};
  if (nvml != nullptr) {
    state.sm_clock_mhz = nvml->sm_clock_mhz();
    state.power_w = nvml->power_w();
  }
  return state;
}

EnergyMeasurement energy_per_call(const Nvml* nvml, const std::function<void()>& one_call, CUstream stream,
                                  double min_seconds, double max_wait_seconds) {
  using Clock = std::chrono::steady_clock;
  const auto seconds_since = [](Clock::time_point t) {
    return std::chrono::duration<double>(Clock::now() - t).count();
  };
  EnergyMeasurement result;
  if (nvml == nullptr) {
    result.unavailable = "NVML is not available";
    return result;
  }
  std::optional<std::uint64_t> previous = nvml->energy_mj();
  if (!previous) {
    result.unavailable = nvml->energy_unavailable_reason();
    return result;
  }

  // Two batches in flight: while the host waits for the older one and reads the counter, the newer keeps the
  // GPU busy, so the loop measures the calls and not idle gaps.
  constexpr double kBatchSeconds = 0.002;
  constexpr std::int64_t kMaxBatch = std::int64_t{1} << 20;
  std::array<Event, 2> done;
  std::array<std::int64_t, 2> in_flight{};
  std::int64_t batch = 1;
  int older = 0;
  const auto issue = [&](int slot) {
    for (std::int64_t i = 0; i < batch; ++i) one_call();
    done[slot].record(stream);
    in_flight[slot] = batch;
  };
  // Waits for the older batch, replaces it with a new one, and returns how many calls it held.
  const auto step = [&] {
    done[older].synchronize();
    const std::int64_t finished = in_flight[older];
    issue(older);
    older ^= 1;
    return finished;
  };
  const auto drain = [&] { CONVGEN_CU_CHECK(driver().cuStreamSynchronize(stream)); };
  // Runs batches until the counter differs from `from`; returns the new value, or nothing after max_wait_seconds.
  const auto until_counter_moves = [&](std::uint64_t from, bool calibrate, std::int64_t* calls) {
    const Clock::time_point start = Clock::now();
    while (seconds_since(start) < max_wait_seconds) {
      const Clock::time_point step_start = Clock::now();
      const std::int64_t finished = step();
      if (calls != nullptr) *calls += finished;
      if (calibrate && seconds_since(step_start) < kBatchSeconds && batch < kMaxBatch) batch *= 2;
      const std::optional<std::uint64_t> now = nvml->energy_mj();
      if (!now) return now;
      if (*now != from) return now;
    }
    return std::optional<std::uint64_t>();
  };

  issue(0);
  issue(1);
  // Start on a refresh of the counter, calibrating the batch size meanwhile.
  const std::optional<std::uint64_t> first = until_counter_moves(*previous, true, nullptr);
  // Why the counter gave no new value: a failed read has its own reason, else it did not move in time.
  const auto stalled = [&] {
    const std::string why = nvml->energy_unavailable_reason();
    return why.empty() ? fmt::format("the energy counter did not advance in {} s of calls", max_wait_seconds) : why;
  };
  if (!first) {
    drain();
    result.unavailable = stalled();
    return result;
  }
  const Clock::time_point start = Clock::now();
  std::int64_t calls = 0;
  while (seconds_since(start) < min_seconds) calls += step();
  // End on a refresh too: the counter may have moved during the loop, so wait for the next change from here.
  const std::optional<std::uint64_t> before_end = nvml->energy_mj();
  const std::optional<std::uint64_t> last =
      before_end ? until_counter_moves(*before_end, false, &calls) : std::optional<std::uint64_t>();
  result.seconds = seconds_since(start);
  drain();
  if (!last) {
    result.unavailable = stalled();
    return result;
  }
  if (*last < *first) {
    result.unavailable = fmt::format("the energy counter went backwards ({} mJ, then {} mJ)", *first, *last);
    return result;
  }
  result.calls = calls;
  result.total_mj = static_cast<double>(*last - *first);
  result.mj_per_call = result.total_mj / static_cast<double>(calls);
  return result;
}

}  // namespace convgen
