// verification: inputs, buffer sets, reference, the poisoned and compared run, the failure message, timing.
#include "measure/verification.hpp"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <optional>
#include <string_view>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "convgen/error.hpp"
#include "runtime/driver.hpp"

namespace convgen {

std::string verification_failure(std::string_view candidate, const Problem& p, const ErrorStats& stats) {
  if (passes(stats, p.precision)) return "";
  const std::string head = fmt::format("{} on {}: wrong result: ", candidate, problem_key(p));
  if (stats.compared == 0) return head + "no output compared";
  if (stats.nan_count > 0)
    return head +
           fmt::format("{} outputs are NaN or infinite (first at output {})", stats.nan_count, stats.first_nan_index);
  return head + fmt::format("relative L2 error {:.1e} > {:.0e} (max error {:.1e} at output {})", stats.rel_l2,
                            error_limit(p.precision), stats.max_abs, stats.max_abs_index);
}

ReferenceOutputs compute_reference(const Problem& p, const InputTensors& inputs, std::uint64_t seed) {
  ReferenceOutputs ref;
  if (flops(p) / 2 <= kFullReferenceMacs) {
    ref.values = reference_conv(p, inputs.activation, inputs.filter);
  } else {
    ref.indices = sample_output_indices(p, kSampledOutputs, seed);
    ref.values = reference_conv_at(p, inputs.activation, inputs.filter, ref.indices);
  }
  ref.scale_l2 = apply_epilogue(p, ref.values, ref.indices, inputs.bias, inputs.residual);
  return ref;
}

namespace {

std::int64_t epilogue_bytes(const Problem& p) {
  return (p.epilogue.bias ? tensor_bytes(p, TensorRole::bias) : 0) +
         (reads_residual(p.epilogue) ? tensor_bytes(p, TensorRole::residual) : 0);
}

}  // namespace

std::int64_t buffer_set_bytes(const Problem& p) {
  return tensor_bytes(p, TensorRole::activation) + tensor_bytes(p, TensorRole::filter) +
         tensor_bytes(p, TensorRole::output) + epilogue_bytes(p);
}

MemoryNeed memory_need(const Problem& p, int buffer_sets) {
  const std::int64_t tensors = buffer_set_bytes(p);
  return {.device_bytes = std::max(buffer_sets, 1) * tensors, .host_bytes = tensors};
}

namespace {

std::string gigabytes(std::int64_t bytes) { return fmt::format("{:.2f} GB", static_cast<double>(bytes) / 1e9); }

// Checks the problem first (a problem that cannot fit, or whose sizes overflow, never reaches the slow work).
const Problem& checked(const Problem& p, int buffer_sets) {
  if (buffer_sets < 1) throw InputError(fmt::format("buffer sets must be at least 1, got {}", buffer_sets));
  check_memory_fits_here(p, buffer_sets);
  return p;
}

}  // namespace

void check_memory_fits(const Problem& p, int buffer_sets, std::optional<std::int64_t> device_free,
                       std::optional<std::int64_t> host_available) {
  const MemoryNeed need = memory_need(p, buffer_sets);
  const std::string tensors =
      fmt::format("activation {}, filter {}, output {}", gigabytes(tensor_bytes(p, TensorRole::activation)),
                  gigabytes(tensor_bytes(p, TensorRole::filter)), gigabytes(tensor_bytes(p, TensorRole::output)));
  if (device_free && need.device_bytes > *device_free)
    throw InputError(fmt::format(
        "{}: needs {} of device memory ({}{}) and the device has {} free", describe(p), gigabytes(need.device_bytes),
        buffer_sets > 1 ? fmt::format("{} sets of ", buffer_sets) : "", tensors, gigabytes(*device_free)));
  if (host_available && need.host_bytes > *host_available)
    throw InputError(
        fmt::format("{}: needs {} of host memory for its inputs and output ({}) and the host has {} "
                    "available",
                    describe(p), gigabytes(need.host_bytes), tensors, gigabytes(*host_available)));
}

void check_memory_fits_here(const Problem& p, int buffer_sets) {
  const std::optional<DeviceMemoryInfo> device = device_memory_info();
  check_memory_fits(p, buffer_sets,
                    device ? std::optional<std::int64_t>(static_cast<std::int64_t>(device->free)) : std::nullopt,
                    host_available_bytes());
}

std::optional<std::int64_t> host_available_bytes() {
  std::ifstream meminfo("/proc/meminfo");
  std::string key;
  std::int64_t kib = 0;
  std::string unit;
  while (meminfo >> key >> kib >> unit)
    if (key == "MemAvailable:") return kib * 1024;
  return std::nullopt;
}

ConvMeasurement::ConvMeasurement(const Problem& p, const ConvInputs& inputs, int buffer_sets)
    : problem_(checked(p, buffer_sets)),
      inputs_(make_inputs(p, inputs)),
      identity_(convgen::data_identity(inputs)),
      scratch_(HostTensor::for_problem(p, TensorRole::output)) {
  reference_ = compute_reference(p, inputs_, inputs.seed);
  sets_.reserve(static_cast<std::size_t>(buffer_sets));
  const auto bytes = [&](TensorRole role) { return static_cast<std::size_t>(tensor_bytes(p, role)); };
  // The tensors of a set, in order: where each set's data comes from (null: the output, not uploaded).
  std::vector<std::pair<CUdeviceptr BufferSet::*, const HostTensor*>> tensors = {
      {&BufferSet::activation, &inputs_.activation},
      {&BufferSet::filter, &inputs_.filter},
      {&BufferSet::output, nullptr}};
  if (p.epilogue.bias) tensors.emplace_back(&BufferSet::bias, &inputs_.bias);
  if (reads_residual(p.epilogue)) tensors.emplace_back(&BufferSet::residual, &inputs_.residual);
  const auto size_of = [&](const std::pair<CUdeviceptr BufferSet::*, const HostTensor*>& t) {
    return t.second ? t.second->size_bytes() : bytes(TensorRole::output);
  };
  constexpr std::size_t kAlign = 256;
  const auto aligned = [](std::size_t n) { return (n + kAlign - 1) / kAlign * kAlign; };
  const bool one_allocation = buffer_sets_in_one_allocation();
  std::size_t set_bytes = 0;
  for (const auto& t : tensors) set_bytes += aligned(std::max<std::size_t>(size_of(t), 1));
  if (one_allocation) storage_.emplace_back(set_bytes * static_cast<std::size_t>(buffer_sets));
  for (int i = 0; i < buffer_sets; ++i) {
    BufferSet set;
    std::size_t offset = set_bytes * static_cast<std::size_t>(i);
    for (const auto& t : tensors) {
      const std::size_t n = size_of(t);
      CUdeviceptr address = 0;
      if (one_allocation) {
        address = storage_.front().ptr() + offset;
        offset += aligned(std::max<std::size_t>(n, 1));
      } else {
        address = storage_.emplace_back(n).ptr();
      }
      if (t.second && n > 0) CONVGEN_CU_CHECK(driver().cuMemcpyHtoD(address, t.second->bytes().data(), n));
      set.*t.first = address;
    }
    sets_.push_back(set);
  }
}

bool buffer_sets_in_one_allocation() {
  static const bool one = [] {
    const char* value = std::getenv("CONVGEN_BUFFER_ARENA");
    if (value == nullptr || *value == '\0' || std::string_view(value) == "1") return true;
    if (std::string_view(value) == "0") return false;
    throw InputError(fmt::format("CONVGEN_BUFFER_ARENA: expected 0 or 1, got '{}'", value));
  }();
  return one;
}

ConvPointers ConvMeasurement::pointers(int set) const {
  const BufferSet& b = sets_.at(static_cast<std::size_t>(set));
  return {.activation = b.activation, .filter = b.filter, .output = b.output, .bias = b.bias, .residual = b.residual};
}

Verification ConvMeasurement::verify(const ConvCandidate& candidate, Stream& stream) {
  const BufferSet& set = sets_.front();
  const std::size_t output_bytes = scratch_.size_bytes();
  // All-ones bytes are a NaN in fp32, fp16 and bf16 alike: an output the candidate never writes fails.
  CONVGEN_CU_CHECK(driver().cuMemsetD8Async(set.output, 0xff, output_bytes, stream.get()));
  Event start, stop;
  start.record(stream.get());
  candidate.launch(pointers(0), stream.get());
  stop.record(stream.get());
  stream.synchronize();
  CONVGEN_CU_CHECK(driver().cuMemcpyDtoH(scratch_.bytes().data(), set.output, output_bytes));

  Verification v;
  v.kernel_ms = Event::elapsed_ms(start, stop);
  if (reference_.indices.empty()) {
    v.stats = compare(scratch_, reference_.values, reference_.scale_l2);
  } else {
    v.sampled = true;
    v.stats = compare(scratch_, reference_.values, reference_.indices, reference_.scale_l2);
    // The sample checks values; every output is still checked for having been written (no NaN left).
    v.stats.nan_count = count_not_finite(scratch_);
    if (v.stats.nan_count > 0 && v.stats.first_nan_index < 0)
      for (std::int64_t i = 0; i < scratch_.size() && v.stats.first_nan_index < 0; ++i)
        if (!std::isfinite(scratch_.get(i))) v.stats.first_nan_index = i;
  }
  v.passed = passes(v.stats, problem_.precision);
  v.failure = verification_failure(candidate.name, problem_, v.stats);
  return v;
}

Candidate ConvMeasurement::timed(const ConvCandidate& candidate) const {
  return {candidate.name,
          [this, launch = candidate.launch](CUstream stream, int set) { launch(pointers(set), stream); }};
}

std::vector<TimingResult> ConvMeasurement::time(std::span<const ConvCandidate> candidates, TimingOptions options,
                                                Stream& stream) const {
  std::vector<Candidate> timed_candidates;
  timed_candidates.reserve(candidates.size());
  for (const ConvCandidate& c : candidates) timed_candidates.push_back(timed(c));
  options.buffer_sets = buffer_sets();
  return time_interleaved(timed_candidates, options, stream);
}

}  // namespace convgen
