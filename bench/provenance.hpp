// provenance: what every benchmark result file records about where, when, how and with what it was measured.
#pragma once

#include <span>
#include <string>

#include <nlohmann/json.hpp>

#include "measure/nvml.hpp"

namespace convgen {

// The protocol's provenance: GPU, versions of everything in the measured path, the command, the date, and the
// SM clock and power at the start and end of the run.
struct Provenance {
  std::string gpu;              // "NVIDIA H100 80GB HBM3"
  std::string arch;             // "sm_90"
  std::string driver;           // NVIDIA driver version from NVML ("570.86.15"); "" without NVML
  std::string cuda_driver;      // CUDA version the driver provides ("13.0")
  std::string cuda_toolkit;     // CUDA headers convgen was built with ("13.0")
  std::string nvrtc;            // "13.0"
  std::string cudnn;            // "9.14.0", passed in by the caller (this library does not call cuDNN for it)
  std::string convgen_version;  // "0.1.0"
  std::string convgen_commit;   // short hash of the commit built, "unknown" outside a git checkout
  std::string command_line;     // as a shell would take it back (shell_join)
  std::string date;             // UTC ISO 8601, when the run started
  std::string nvml;             // "" when NVML serves the device, else why not (then clocks, power, energy are null)
  DeviceState start;
  DeviceState end;
  bool operator==(const Provenance&) const = default;
};

// Returns the provenance of a run starting now on CUDA device `device`, with `start` read through `nvml` (may be
// null) and `end` left for the caller to fill when the run ends (end = device_state(nvml)). Throws NoDeviceError
// without a CUDA device.
//   Provenance p = collect_provenance(0, Nvml::open(0), cudnn_version(), shell_join(args));
Provenance collect_provenance(int device, const Nvml* nvml, std::string cudnn, std::string command_line);

// The convgen version and commit this library was built from.
std::string convgen_version();
std::string convgen_commit();

// Joins arguments into one line a POSIX shell splits back into the same arguments: arguments made only of
// safe characters stay bare, the others are single-quoted ('it'\''s').
//   shell_join({"convgen", "bench", "--shapes", "my shapes.csv"}) == "convgen bench --shapes 'my shapes.csv'"
std::string shell_join(std::span<const std::string> args);

// JSON of a device state (keys in the order written, as in every report JSON): {"sm_clock_mhz", "power_w", "time"},
// null for what was not read.
nlohmann::ordered_json to_json(const DeviceState& state);

// JSON of the provenance; every field is present, empty strings are written as they are, "nvml" is null when
// NVML served the device.
nlohmann::ordered_json to_json(const Provenance& provenance);

}  // namespace convgen
