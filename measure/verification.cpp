// verification: the reference outputs and the poisoned, compared run shared by the benchmark and the tuner.
#include "measure/verification.hpp"

#include <algorithm>
#include <cmath>

#include "measure/verify.hpp"

namespace convgen {

std::vector<BufferSet> make_buffer_sets(const Problem& p, int count, std::span<const float> activation,
                                        std::span<const float> filter) {
  std::vector<BufferSet> sets;
  sets.reserve(static_cast<std::size_t>(count));
  const auto output_bytes = static_cast<std::size_t>(output_elements(p)) * 4;
  for (int i = 0; i < count; ++i) {
    sets.push_back({DeviceBuffer(activation.size() * 4), DeviceBuffer(filter.size() * 4), DeviceBuffer(output_bytes)});
    sets.back().activation.upload(activation);
    sets.back().filter.upload(filter);
  }
  return sets;
}

ReferenceOutputs compute_reference(const Problem& p, std::span<const float> activation, std::span<const float> filter,
                                   std::uint64_t seed) {
  ReferenceOutputs ref;
  if (flops(p) / 2 <= kFullReferenceMacs) {
    ref.values = reference_conv(p, activation, filter);
  } else {
    ref.indices = sample_output_indices(p, 8192, seed);
    ref.values = reference_conv_at(p, activation, filter, ref.indices);
  }
  return ref;
}

ErrorStats verify_launch(const std::function<void(CUstream)>& launch, DeviceBuffer& output,
                         const ReferenceOutputs& ref, std::vector<float>& scratch, Stream& stream) {
  output.fill_u32(0x7fc00000u, stream.get());
  launch(stream.get());
  stream.synchronize();
  output.download(scratch);
  if (ref.indices.empty()) return compare(scratch, ref.values);
  ErrorStats stats = compare(scratch, ref.values, ref.indices);
  stats.nan_count = std::count_if(scratch.begin(), scratch.end(), [](float x) { return !std::isfinite(x); });
  return stats;
}

}  // namespace convgen
