// provenance: gathering the versions and device state of a run, the command line, and their JSON.
#include "bench/provenance.hpp"

#include <cuda.h>

#include <algorithm>

#include <fmt/format.h>

#include "convgen/version.hpp"
#include "runtime/compiler.hpp"
#include "runtime/device.hpp"

namespace convgen {
namespace {

nlohmann::ordered_json optional_json(const std::optional<double>& value) {
  return value ? nlohmann::ordered_json(*value) : nlohmann::ordered_json(nullptr);
}

bool shell_safe(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
         std::string_view("@%+=:,./-_").find(c) != std::string_view::npos;
}

}  // namespace

std::string convgen_version() { return build_version(); }
std::string convgen_commit() { return build_commit(); }

Provenance collect_provenance(int device, const Nvml* nvml, std::string cudnn, std::string command_line) {
  const Gpu gpu = query_device(device);
  return Provenance{
      .gpu = gpu.name,
      .arch = gpu.arch,
      .driver = nvml != nullptr ? nvml->driver_version() : "",
      .cuda_driver = driver_version(),
      .cuda_toolkit = fmt::format("{}.{}", CUDA_VERSION / 1000, CUDA_VERSION % 1000 / 10),
      .nvrtc = nvrtc_version(),
      .cudnn = std::move(cudnn),
      .convgen_version = convgen_version(),
      .convgen_commit = convgen_commit(),
      .command_line = std::move(command_line),
      .date = utc_now_iso8601(),
      .nvml = nvml != nullptr ? "" : nvml_unavailable_reason(device),
      .start = device_state(nvml),
  };
}

std::string shell_join(std::span<const std::string> args) {
  std::string line;
  for (const std::string& arg : args) {
    if (!line.empty()) line += ' ';
    if (!arg.empty() && std::ranges::all_of(arg, shell_safe)) {
      line += arg;
      continue;
    }
    line += '\'';
    for (const char c : arg) line += c == '\'' ? std::string("'\\''") : std::string(1, c);
    line += '\'';
  }
  return line;
}

nlohmann::ordered_json to_json(const DeviceState& state) {
  return {{"sm_clock_mhz", optional_json(state.sm_clock_mhz)},
          {"power_w", optional_json(state.power_w)},
          {"time", state.time}};
}

nlohmann::ordered_json to_json(const Provenance& p) {
  nlohmann::ordered_json json = nlohmann::ordered_json::object();
  json["gpu"] = p.gpu;
  json["arch"] = p.arch;
  json["driver"] = p.driver;
  json["cuda_driver"] = p.cuda_driver;
  json["cuda_toolkit"] = p.cuda_toolkit;
  json["nvrtc"] = p.nvrtc;
  json["cudnn"] = p.cudnn;
  json["convgen_version"] = p.convgen_version;
  json["convgen_commit"] = p.convgen_commit;
  json["command_line"] = p.command_line;
  json["date"] = p.date;
  json["nvml"] = p.nvml.empty() ? nlohmann::ordered_json(nullptr) : nlohmann::ordered_json(p.nvml);
  json["start"] = to_json(p.start);
  json["end"] = to_json(p.end);
  return json;
}

}  // namespace convgen
