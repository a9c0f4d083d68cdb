// chained_calls: the GPU tests' check of early launch (programmatic dependent launch): a kernel of a problem with as
// many output channels as input channels and the same extent out as in (C = K, stride 1, same padding) called twice
// back to back on one stream, the second reading the first's output and writing over the first's input:
// y = conv(x), then x = conv(y), with y poisoned with NaN before. Each call's output must match the float64 reference
// of the input it was given: a block that read its input, or wrote its output or workspace, before the stream's
// previous kernel had ended would read the poison or spoil the first call's input.
#pragma once

#include <algorithm>
#include <cstdint>
#include <string>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "conv/conv_kernel.hpp"
#include "reference/inputs.hpp"
#include "reference/reference.hpp"
#include "runtime/module.hpp"

namespace convgen::testing_support {

// Runs the chain for `kernel` (its problem's activation and output the same size) and EXPECTs both calls to pass,
// each failure labelled with the problem and the kernel. Returns whether both passed.
inline bool verify_chained_calls(const BuiltKernel& kernel, std::uint64_t seed) {
  const Problem& p = kernel.problem;
  const std::string label = fmt::format("{} {}", problem_key(p), kernel.source.entry);
  const InputTensors inputs = make_inputs(p, {.seed = seed});
  if (tensor_bytes(p, TensorRole::activation) != tensor_bytes(p, TensorRole::output)) {
    ADD_FAILURE() << label << ": a chain needs an output of the activation's size";
    return false;
  }
  ConvLauncher launcher(kernel);
  Stream stream;
  DeviceBuffer x(inputs.activation.size_bytes()), y(inputs.activation.size_bytes());
  DeviceBuffer filter(inputs.filter.size_bytes());
  DeviceBuffer workspace(static_cast<std::size_t>(std::max<std::int64_t>(kernel.plan.workspace_bytes(), 4)));
  x.upload_bytes(inputs.activation.bytes().data(), inputs.activation.size_bytes());
  filter.upload_bytes(inputs.filter.bytes().data(), inputs.filter.size_bytes());
  launcher.prepare(filter.ptr(), stream.get());
  y.fill_u8(0xff, stream.get());  // NaN in every type
  launcher.launch(x.ptr(), filter.ptr(), y.ptr(), workspace.ptr(), stream.get());
  launcher.launch(y.ptr(), filter.ptr(), x.ptr(), workspace.ptr(), stream.get());
  stream.synchronize();
  HostTensor first = HostTensor::for_problem(p, TensorRole::output);
  HostTensor second = HostTensor::for_problem(p, TensorRole::output);
  y.download_bytes(first.bytes().data(), first.size_bytes());
  x.download_bytes(second.bytes().data(), second.size_bytes());
  // The second call's input is the first's output as the kernel stored it (rounded to the type, as its reference).
  const ErrorStats first_error = compare(first, reference_conv(p, inputs.activation, inputs.filter));
  const ErrorStats second_error = compare(second, reference_conv(p, first, inputs.filter));
  const bool first_passed = passes(first_error, p.precision);
  const bool second_passed = passes(second_error, p.precision);
  EXPECT_TRUE(first_passed) << label << ": first call rel L2 " << first_error.rel_l2 << ", " << first_error.nan_count
                            << " NaN";
  EXPECT_TRUE(second_passed) << label << ": second call rel L2 " << second_error.rel_l2 << ", "
                             << second_error.nan_count << " NaN";
  return first_passed && second_passed;
}

}  // namespace convgen::testing_support
