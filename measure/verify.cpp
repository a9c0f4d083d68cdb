// verify: one kernel on the GPU against the float64 reference, on random inputs with a poisoned output.
#include "measure/verify.hpp"

#include <algorithm>
#include <cmath>
#include <vector>

#include "runtime/module.hpp"

namespace convgen {

Verification verify_on_gpu(const BuiltKernel& kernel, std::uint64_t seed) {
  const Problem& p = kernel.problem;
  std::vector<float> activation(static_cast<std::size_t>(activation_elements(p)));
  std::vector<float> filter(static_cast<std::size_t>(filter_elements(p)));
  std::vector<float> output(static_cast<std::size_t>(output_elements(p)));
  fill_random(activation, seed);
  fill_random(filter, seed ^ 0x9e3779b97f4a7c15ull);

  DeviceBuffer d_activation(activation.size() * sizeof(float));
  DeviceBuffer d_filter(filter.size() * sizeof(float));
  DeviceBuffer d_output(output.size() * sizeof(float));
  DeviceBuffer d_workspace(static_cast<std::size_t>(std::max<std::int64_t>(kernel.workspace_bytes, 4)));
  d_activation.upload(activation);
  d_filter.upload(filter);

  ConvLauncher launcher(kernel);
  Stream stream;
  d_output.fill_u32(0x7fc00000u, stream.get());  // quiet NaN: an output the kernel never writes fails
  Event start, stop;
  start.record(stream.get());
  launcher.launch(d_activation.ptr(), d_filter.ptr(), d_output.ptr(), d_workspace.ptr(), stream.get());
  stop.record(stream.get());
  stream.synchronize();
  d_output.download(output);

  Verification v;
  v.kernel_ms = Event::elapsed_ms(start, stop);
  const std::int64_t macs = flops(p) / 2;
  if (macs <= kFullReferenceMacs) {
    v.stats = compare(output, reference_conv(p, activation, filter));
  } else {
    v.sampled = true;
    const auto indices = sample_output_indices(p, 8192, seed);
    v.stats = compare(output, reference_conv_at(p, activation, filter, indices), indices);
    // The sample checks values; every output is still checked for having been written (no NaN left).
    v.stats.nan_count = std::count_if(output.begin(), output.end(), [](float x) { return !std::isfinite(x); });
  }
  v.passed = passes(v.stats, p.precision);
  return v;
}

}  // namespace convgen
