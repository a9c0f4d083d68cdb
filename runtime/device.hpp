// device: the live GPU's properties as a convgen::Gpu, and how they combine with a gpus/*.json descriptor.
#pragma once

#include <optional>
#include <string>

#include "convgen/gpu.hpp"

namespace convgen {

// Returns the number of CUDA devices; 0 when there is no driver or no device (it never throws NoDeviceError).
int device_count();

// Returns the driver's CUDA version as "major.minor" (13.0). Throws NoDeviceError without a device.
std::string driver_version();

// Returns the device's properties from cuDeviceGetAttribute, with estimated peaks (with_estimated_peaks).
// Throws NoDeviceError without a device, InputError for an ordinal out of range.
//   Gpu live = query_device(0);   // {.name = "NVIDIA H100 80GB HBM3", .arch = "sm_90", .sm_count = 132, ...}
Gpu query_device(int ordinal);

// Per-architecture throughput per SM and clock: FP32 lanes, and dense tensor-core rates relative to FP32 FMA.
struct ArchRates {
  int fp32_lanes_per_sm = 0;
  double tf32_over_fp32 = 0;  // 0: no tensor cores for this precision
  double fp16_over_fp32 = 0;
  double bf16_over_fp32 = 0;
  bool operator==(const ArchRates&) const = default;
};

// Returns the rates of a compute capability (90 for sm_90), std::nullopt for an architecture not in the table.
std::optional<ArchRates> arch_rates(int compute_capability);

// Returns `gpu` with every peak FLOP/s field computed as SMs x clock x rate (estimates; see device.cpp for the
// table's sources). Peaks stay as they were for an architecture not in the table.
Gpu with_estimated_peaks(Gpu gpu);

// Returns the live device's properties over a descriptor read from a file: the live value wins for every field
// the device reports (a zero or empty live field counts as not reported). The file keeps what the device does
// not report (max registers per thread), its peak FLOP/s where it gives them (datasheet or measured figures
// beat our estimates), and its arch when the compute capability matches (sm_90a in a file is a compile target
// the device does not report).
Gpu merge_live(const Gpu& from_file, const Gpu& live);

}  // namespace convgen
