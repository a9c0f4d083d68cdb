// verification: inputs, buffer sets, reference, the poisoned and compared run, the failure message, timing.
#include "measure/verification.hpp"

#include <algorithm>
#include <cmath>
#include <fstream>
#include <optional>

#include <fmt/format.h>

#include "convgen/error.hpp"

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
  const auto uploaded = [](const HostTensor& tensor) {
    DeviceBuffer buffer(tensor.size_bytes());
    buffer.upload_bytes(tensor.bytes().data(), tensor.size_bytes());
    return buffer;
  };
  for (int i = 0; i < buffer_sets; ++i) {
    sets_.push_back({uploaded(inputs_.activation), uploaded(inputs_.filter), DeviceBuffer(bytes(TensorRole::output)),
                     std::nullopt, std::nullopt});
    if (p.epilogue.bias) sets_.back().bias.emplace(uploaded(inputs_.bias));
    if (reads_residual(p.epilogue)) sets_.back().residual.emplace(uploaded(inputs_.residual));
  }
}

ConvPointers ConvMeasurement::pointers(int set) const {
  const BufferSet& b = sets_.at(static_cast<std::size_t>(set));
  return {.activation = b.activation.ptr(),
          .filter = b.filter.ptr(),
          .output = b.output.ptr(),
          .bias = b.bias ? b.bias->ptr() : 0,
          .residual = b.residual ? b.residual->ptr() : 0};
}

Verification ConvMeasurement::verify(const ConvCandidate& candidate, Stream& stream) {
  BufferSet& set = sets_.front();
  // All-ones bytes are a NaN in fp32, fp16 and bf16 alike: an output the candidate never writes fails.
  set.output.fill_u8(0xff, stream.get());
  Event start, stop;
  start.record(stream.get());
  candidate.launch(pointers(0), stream.get());
  stop.record(stream.get());
  stream.synchronize();
  set.output.download_bytes(scratch_.bytes().data(), scratch_.size_bytes());

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
