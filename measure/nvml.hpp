// nvml: the NVIDIA management library, loaded at run time, for energy, SM clock, power and the driver version.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>

#include <cuda.h>

namespace convgen {

// Clock and power of the device at one moment; a field is empty where NVML is absent or does not report it.
struct DeviceState {
  std::optional<double> sm_clock_mhz;
  std::optional<double> power_w;
  std::string time;  // UTC, ISO 8601 ("2025-03-01T12:00:00Z")
  bool operator==(const DeviceState&) const = default;
};

namespace detail {
struct NvmlApi;
}

// One device as NVML sees it. NVML ships with the driver (libnvidia-ml.so.1), not with the toolkit, so it is
// opened with dlopen like libcuda: a machine without it loses the energy and clock figures, nothing else.
//   if (Nvml* nvml = Nvml::open(0)) fmt::print("{} W\n", nvml->power_w().value_or(0));
class Nvml {
 public:
  // Returns the device with CUDA ordinal `device`, or nullptr when NVML cannot serve it (nvml_unavailable_reason
  // says why). The handle is found by the PCI bus id the CUDA driver reports, since NVML numbers devices in PCI
  // order whatever CUDA_VISIBLE_DEVICES says; without a CUDA device it falls back to NVML's index. Opened once
  // per device and process, never closed.
  static Nvml* open(int device);

  // The board's energy counter: millijoules since the driver loaded. Empty when the device has none (before
  // Volta) or the read fails.
  std::optional<std::uint64_t> energy_mj() const;
  std::optional<double> sm_clock_mhz() const;
  std::optional<double> power_w() const;  // board power draw
  std::string name() const;               // "" when unreadable
  std::string driver_version() const;     // the NVIDIA driver's ("570.86.15"), "" when unreadable
  // Says why energy_mj() is empty ("" when it reads).
  std::string energy_unavailable_reason() const;

 private:
  Nvml(const detail::NvmlApi* api, void* device) : api_(api), device_(device) {}

  const detail::NvmlApi* api_;
  void* device_;  // nvmlDevice_t
};

// Returns why Nvml::open(device) gives nullptr, or "" when it gives a device.
std::string nvml_unavailable_reason(int device);

// Returns the current state read through `nvml` (may be null: only the time is filled).
DeviceState device_state(const Nvml* nvml);

// Returns the current UTC time as ISO 8601 with seconds ("2025-03-01T12:00:00Z").
std::string utc_now_iso8601();

// Energy per call, or why there is none. The counter is the whole board's (idle and static power included), so
// this is what a call costs the board, not the kernel alone.
struct EnergyMeasurement {
  std::optional<double> mj_per_call;
  std::string unavailable;  // why mj_per_call is empty: no NVML, no counter, the counter did not advance
  std::int64_t calls = 0;   // calls between the two counter reads
  double seconds = 0;       // wall time between the two counter reads
  double total_mj = 0;
  bool operator==(const EnergyMeasurement&) const = default;
};

// Measures the energy of `one_call` (which enqueues one call on `stream`) on the device of `nvml` (may be null).
// The counter has a resolution of 1 mJ but the driver refreshes it only every few tens of milliseconds, so a
// short loop reads noise: the loop runs for at least `min_seconds` (the protocol's 0.2 s), and both reads are
// aligned with a refresh: the calls run until the counter changes, that value starts the measurement, the calls
// go on for min_seconds and then until the counter changes again, which ends it. Calls are issued in batches of
// about a millisecond with a synchronization after each, so the GPU stays busy and the host knows how many
// calls ran. Gives up (a value with a reason) when the counter does not advance within `max_wait_seconds`.
//   EnergyMeasurement e = energy_per_call(Nvml::open(0), [&] { launcher.launch(...); }, stream.get());
EnergyMeasurement energy_per_call(const Nvml* nvml, const std::function<void()>& one_call, CUstream stream,
                                  double min_seconds = 0.2, double max_wait_seconds = 2.0);

namespace detail {

// The NVML entry points convgen calls, declared here because nvml.h is not part of the CUDA toolkit install.
// Signatures and values from the NVML API reference (docs.nvidia.com/deploy/nvml-api): every function returns
// nvmlReturn_t (an int, NVML_SUCCESS = 0); nvmlDevice_t is an opaque pointer; nvmlClockType_t NVML_CLOCK_SM = 1;
// energy is unsigned long long millijoules; power is unsigned int milliwatts; clocks unsigned int MHz.
using NvmlReturn = int;
inline constexpr NvmlReturn kNvmlSuccess = 0;
inline constexpr NvmlReturn kNvmlErrorNotSupported = 3;
inline constexpr int kNvmlClockSm = 1;

struct NvmlApi {
  NvmlReturn (*nvmlInit_v2)() = nullptr;
  NvmlReturn (*nvmlShutdown)() = nullptr;
  NvmlReturn (*nvmlDeviceGetHandleByIndex_v2)(unsigned index, void** device) = nullptr;
  NvmlReturn (*nvmlDeviceGetHandleByPciBusId_v2)(const char* pci_bus_id, void** device) = nullptr;
  NvmlReturn (*nvmlDeviceGetTotalEnergyConsumption)(void* device, unsigned long long* energy_mj) = nullptr;
  NvmlReturn (*nvmlDeviceGetClockInfo)(void* device, int clock_type, unsigned* clock_mhz) = nullptr;
  NvmlReturn (*nvmlDeviceGetPowerUsage)(void* device, unsigned* power_mw) = nullptr;
  NvmlReturn (*nvmlSystemGetDriverVersion)(char* version, unsigned length) = nullptr;
  NvmlReturn (*nvmlDeviceGetName)(void* device, char* name, unsigned length) = nullptr;
  const char* (*nvmlErrorString)(NvmlReturn result) = nullptr;
};

// What loading an NVML library gave: the entry points after nvmlInit_v2, or why there are none.
struct NvmlLoad {
  NvmlApi api;
  std::string unavailable;  // "" when loaded and initialized
};

// Loads `library` with dlopen, resolves every entry point and calls nvmlInit_v2. Not cached: Nvml::open caches
// the load of "libnvidia-ml.so.1"; tests call this with other names to see the failure messages anywhere.
NvmlLoad load_nvml(const std::string& library);

// Returns "NVML_NAME_OF_ERROR text" for a result: the library's own text when loaded, else "NVML error <n>".
std::string nvml_error_text(const NvmlApi& api, NvmlReturn result);

}  // namespace detail

}  // namespace convgen
