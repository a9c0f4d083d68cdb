// verification: the one verify-and-time pipeline of the tuner, the benchmark and `convgen run`: inputs from the
// caller's generator, buffer sets sized from the element type, the float64 reference, a poisoned run compared,
// one failure message, and the timing protocol over the verified candidates.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include <cuda.h>

#include "convgen/problem.hpp"
#include "measure/timing.hpp"
#include "reference/host_tensor.hpp"
#include "reference/inputs.hpp"
#include "reference/reference.hpp"
#include "runtime/module.hpp"

namespace convgen {

// Outputs compared in full up to this many reference multiply-adds; beyond it a sample of kSampledOutputs outputs.
inline constexpr std::int64_t kFullReferenceMacs = std::int64_t{1} << 28;
inline constexpr std::int64_t kSampledOutputs = 8192;

// The device pointers of one call's three tensors, and of the bias and residual its epilogue reads (0 when it
// reads none).
struct ConvPointers {
  CUdeviceptr activation = 0;
  CUdeviceptr filter = 0;
  CUdeviceptr output = 0;
  CUdeviceptr bias = 0;
  CUdeviceptr residual = 0;
};

// A candidate: anything launchable on the three tensors, our kernels and cuDNN's routes alike. `launch` must only
// enqueue work on `stream` (no synchronization, no allocation), so that it can be captured into a graph; it brings
// its own workspace.
struct ConvCandidate {
  std::string name;
  std::function<void(const ConvPointers& tensors, CUstream stream)> launch;
};

// The outcome of one verification.
struct Verification {
  ErrorStats stats;
  bool passed = false;
  bool sampled = false;  // only a sample of outputs was compared (large shapes); every output was checked for NaN
  double kernel_ms = 0;  // the verified launch, from events (a rough figure, not a benchmark)
  std::string failure;   // "" when passed, else verification_failure's message
};

// Returns the one message of a failed verification, or "" when `stats` pass for the problem's precision:
//   "<candidate> on <problem key>: wrong result: relative L2 error 3.1e-03 > 1e-05 (max error 5.0e-01 at output 1234)"
//   "<candidate> on <problem key>: wrong result: 12 outputs are NaN or infinite (first at output 17)"
//   "<candidate> on <problem key>: wrong result: no output compared"
std::string verification_failure(std::string_view candidate, const Problem& p, const ErrorStats& stats);

// The float64 reference of one layer: every output, or a sample of them for large layers.
struct ReferenceOutputs {
  std::vector<std::int64_t> indices;  // empty: every output
  std::vector<double> values;
  double scale_l2 = 0;  // the values' L2 norm before the epilogue's activation (compare's scale_l2)
};

// Computes the reference, the problem's epilogue applied: in full up to kFullReferenceMacs multiply-adds, else at
// kSampledOutputs output indices drawn from `seed`.
ReferenceOutputs compute_reference(const Problem& p, const InputTensors& inputs, std::uint64_t seed);

// Returns the bytes of one buffer set (activation, filter and output in the problem's element type, and the bias
// and residual where the epilogue reads them).
std::int64_t buffer_set_bytes(const Problem& p);

// One buffer set: the tensors of one call (bias and residual only where the epilogue reads them).
struct BufferSet {
  DeviceBuffer activation, filter, output;
  std::optional<DeviceBuffer> bias, residual;
};

// The pipeline for one problem on the current device:
//   ConvMeasurement m(problem, {.activation = SparseRandom{SparsityPattern::blob, 0.7}}, sets);
//   Verification v = m.verify(candidate, stream);          // poisoned output, compared with the reference
//   if (v.passed) results = m.time(verified, timing, stream);  // the protocol, rotating the buffer sets
// What measuring a problem needs: `buffer_sets` device copies of activation, filter and output, and host copies
// of the inputs and one output (the reference is sampled for large outputs).
struct MemoryNeed {
  std::int64_t device_bytes = 0;
  std::int64_t host_bytes = 0;
};
MemoryNeed memory_need(const Problem& p, int buffer_sets = 1);

// Throws InputError, naming the bytes asked and the bytes there are, when the need exceeds `device_free` or
// `host_available` (each unchecked when nullopt). Called before any slow work (inputs, reference, uploads).
void check_memory_fits(const Problem& p, int buffer_sets, std::optional<std::int64_t> device_free,
                       std::optional<std::int64_t> host_available);

// The host's MemAvailable (/proc/meminfo), nullopt where it cannot be read.
std::optional<std::int64_t> host_available_bytes();

// check_memory_fits against the current context's device (device_memory_info) and this host.
void check_memory_fits_here(const Problem& p, int buffer_sets);

class ConvMeasurement {
 public:
  // Makes the inputs from `inputs`, uploads them into `buffer_sets` sets (each with the same data) and computes
  // the float64 reference. Throws InputError for a bad input source, buffer_sets < 1, or a problem whose buffers
  // do not fit the current device's free memory or the host's (check_memory_fits, before any of that work).
  ConvMeasurement(const Problem& p, const ConvInputs& inputs, int buffer_sets = 1);
  ConvMeasurement(const ConvMeasurement&) = delete;  // timed() candidates point at it
  ConvMeasurement& operator=(const ConvMeasurement&) = delete;

  const Problem& problem() const { return problem_; }
  const InputTensors& inputs() const { return inputs_; }
  // The data's identity (data_identity of the inputs), for keys that depend on the data.
  const std::string& data_identity() const { return identity_; }
  int buffer_sets() const { return static_cast<int>(sets_.size()); }
  ConvPointers pointers(int set) const;

  // Runs `candidate` once on set 0, its output poisoned (NaN) first, and compares what it wrote with the
  // reference; the limit is the precision's (error_limit). An exception from the launch propagates.
  Verification verify(const ConvCandidate& candidate, Stream& stream);

  // The candidate as the timing protocol sees it: each call on the next buffer set.
  Candidate timed(const ConvCandidate& candidate) const;

  // Times (verified) candidates by the protocol, interleaved, rotating through this measurement's buffer sets
  // (options.buffer_sets is replaced by buffer_sets()).
  std::vector<TimingResult> time(std::span<const ConvCandidate> candidates, TimingOptions options,
                                 Stream& stream) const;

 private:
  Problem problem_;
  InputTensors inputs_;
  std::string identity_;
  ReferenceOutputs reference_;
  std::vector<BufferSet> sets_;
  HostTensor scratch_;  // the downloaded output
};

}  // namespace convgen
