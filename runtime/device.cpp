// device: cuDeviceGetAttribute into a Gpu, the per-architecture throughput table and the file/live merge.
#include "runtime/device.hpp"

#include <array>
#include <type_traits>

#include <fmt/format.h>

#include "runtime/driver.hpp"

namespace convgen {
namespace {

int attribute(CUdevice device, CUdevice_attribute which) {
  int value = 0;
  CONVGEN_CU_CHECK(driver().cuDeviceGetAttribute(&value, which, device));
  return value;
}

}  // namespace

int device_count() {
  if (!cuda_available()) return 0;
  int count = 0;
  CONVGEN_CU_CHECK(driver().cuDeviceGetCount(&count));
  return count;
}

std::string driver_version() {
  int version = 0;
  CONVGEN_CU_CHECK(driver().cuDriverGetVersion(&version));
  return fmt::format("{}.{}", version / 1000, version % 1000 / 10);
}

Gpu query_device(int ordinal) {
  const DriverApi& api = driver();
  const int count = device_count();
  if (ordinal < 0 || ordinal >= count)
    throw InputError(fmt::format("device ordinal {}: expected 0 to {} (the driver reports {} device{})", ordinal,
                                 count - 1, count, count == 1 ? "" : "s"));
  CUdevice device = 0;
  CONVGEN_CU_CHECK(api.cuDeviceGet(&device, ordinal));
  std::array<char, 256> name{};
  CONVGEN_CU_CHECK(api.cuDeviceGetName(name.data(), static_cast<int>(name.size()), device));

  const int major = attribute(device, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR);
  const int minor = attribute(device, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR);
  // Memory clock in kHz, bus width in bits; DDR moves data on both edges, hence the 2.
  const double memory_khz = attribute(device, CU_DEVICE_ATTRIBUTE_MEMORY_CLOCK_RATE);
  const double bus_bits = attribute(device, CU_DEVICE_ATTRIBUTE_GLOBAL_MEMORY_BUS_WIDTH);
  Gpu gpu{
      .name = name.data(),
      .arch = fmt::format("sm_{}{}", major, minor),
      .sm_count = attribute(device, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT),
      .max_threads_per_sm = attribute(device, CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR),
      .max_threads_per_block = attribute(device, CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK),
      .max_blocks_per_sm = attribute(device, CU_DEVICE_ATTRIBUTE_MAX_BLOCKS_PER_MULTIPROCESSOR),
      .regs_per_sm = attribute(device, CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_MULTIPROCESSOR),
      .regs_per_block = attribute(device, CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_BLOCK),
      .smem_per_sm_bytes = attribute(device, CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_MULTIPROCESSOR),
      .smem_per_block_bytes = attribute(device, CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK),
      .smem_per_block_optin_bytes = attribute(device, CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN),
      .l2_bytes = attribute(device, CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE),
      .dram_bandwidth_gbs = 2.0 * memory_khz * 1e3 * bus_bits / 8.0 / 1e9,
      .clock_mhz = attribute(device, CU_DEVICE_ATTRIBUTE_CLOCK_RATE) / 1e3,
  };
  return with_estimated_peaks(std::move(gpu));
}

// Dense rates per SM per clock, ESTIMATES derived from NVIDIA's published peaks divided by SMs x boost clock:
// the Volta (V100), Turing (T4), Ampere GA100 (A100) and GA102 (A10/A40), Ada (L4/L40S) and Hopper (H100)
// architecture whitepapers and datasheets. FP32 lanes are the CUDA cores per SM. Tensor multipliers are the
// professional parts' dense (non-sparse) rates with FP32 accumulation; GeForce parts halve FP16/BF16 with FP32
// accumulation, and sustained clocks under load sit below the boost clock, so real peaks are lower.
std::optional<ArchRates> arch_rates(int compute_capability) {
  switch (compute_capability) {
    case 70:
      return ArchRates{.fp32_lanes_per_sm = 64, .tf32_over_fp32 = 0, .fp16_over_fp32 = 8, .bf16_over_fp32 = 0};
    case 75:
      return ArchRates{.fp32_lanes_per_sm = 64, .tf32_over_fp32 = 0, .fp16_over_fp32 = 8, .bf16_over_fp32 = 0};
    case 80:
      return ArchRates{.fp32_lanes_per_sm = 64, .tf32_over_fp32 = 8, .fp16_over_fp32 = 16, .bf16_over_fp32 = 16};
    case 86:
    case 89:
      return ArchRates{.fp32_lanes_per_sm = 128, .tf32_over_fp32 = 2, .fp16_over_fp32 = 4, .bf16_over_fp32 = 4};
    case 90:
      return ArchRates{.fp32_lanes_per_sm = 128, .tf32_over_fp32 = 8, .fp16_over_fp32 = 16, .bf16_over_fp32 = 16};
    default:
      return std::nullopt;
  }
}

Gpu with_estimated_peaks(Gpu gpu) {
  const std::optional<ArchRates> rates = arch_rates(compute_capability(gpu));
  if (!rates) return gpu;
  // An FMA counts as two FLOPs.
  const double fp32 = gpu.sm_count * gpu.clock_mhz * 1e6 * rates->fp32_lanes_per_sm * 2.0 / 1e12;
  gpu.peak_fp32_tflops = fp32;
  gpu.peak_tf32_tflops = fp32 * rates->tf32_over_fp32;
  gpu.peak_fp16_tflops = fp32 * rates->fp16_over_fp32;
  gpu.peak_bf16_tflops = fp32 * rates->bf16_over_fp32;
  return gpu;
}

Gpu merge_live(const Gpu& from_file, const Gpu& live) {
  // A zero (or empty name) in `live` means the device did not report it: the file's value stays.
  Gpu merged = from_file;
  const auto take = [](const auto& live_value, auto& merged_value) {
    if (live_value != std::remove_cvref_t<decltype(live_value)>{}) merged_value = live_value;
  };
  take(live.name, merged.name);
  if (compute_capability(from_file) != compute_capability(live)) take(live.arch, merged.arch);
  take(live.sm_count, merged.sm_count);
  take(live.max_threads_per_sm, merged.max_threads_per_sm);
  take(live.max_threads_per_block, merged.max_threads_per_block);
  take(live.max_blocks_per_sm, merged.max_blocks_per_sm);
  take(live.regs_per_sm, merged.regs_per_sm);
  take(live.regs_per_block, merged.regs_per_block);
  take(live.smem_per_sm_bytes, merged.smem_per_sm_bytes);
  take(live.smem_per_block_bytes, merged.smem_per_block_bytes);
  take(live.smem_per_block_optin_bytes, merged.smem_per_block_optin_bytes);
  take(live.l2_bytes, merged.l2_bytes);
  take(live.dram_bandwidth_gbs, merged.dram_bandwidth_gbs);
  take(live.clock_mhz, merged.clock_mhz);
  // Peaks: the file's measured or datasheet figures beat our estimates; the estimates fill the gaps.
  const auto fill = [](double live_value, double& merged_value) {
    if (merged_value <= 0) merged_value = live_value;
  };
  fill(live.peak_fp32_tflops, merged.peak_fp32_tflops);
  fill(live.peak_tf32_tflops, merged.peak_tf32_tflops);
  fill(live.peak_fp16_tflops, merged.peak_fp16_tflops);
  fill(live.peak_bf16_tflops, merged.peak_bf16_tflops);
  return merged;
}

}  // namespace convgen
