// example: the public C++ API in one program: a convolution chosen, built and run on the GPU, checked on the CPU.
// README-BEGIN
#include <cstdio>
#include <vector>

#include "convgen/convgen.hpp"
#include "reference/reference.hpp"  // reference_conv, fill_random, compare, passes
#include "runtime/module.hpp"       // DeviceBuffer, Stream

int main() try {
  // 64 -> 64 channels, 3x3, padding 1, at 56x56; NCHW fp32, batch 1.
  const convgen::Problem problem{
      .n = 1, .c = 64, .k = 64, .input = {1, 56, 56}, .filter = {1, 3, 3}, .padding = {0, 1, 1}};

  convgen::ConvContext context;                       // device 0; tune on first use, remembered in the database
  const convgen::ConvOp& op = context.conv(problem);  // chosen and compiled once per problem

  std::vector<float> activation(convgen::activation_elements(problem));
  std::vector<float> filter(convgen::filter_elements(problem));
  std::vector<float> output(convgen::output_elements(problem));
  convgen::fill_random(activation, 1);
  convgen::fill_random(filter, 2);

  convgen::DeviceBuffer d_activation(activation.size() * sizeof(float));
  convgen::DeviceBuffer d_filter(filter.size() * sizeof(float));
  convgen::DeviceBuffer d_output(output.size() * sizeof(float));
  d_activation.upload(activation);
  d_filter.upload(filter);
  convgen::Stream stream;
  op.run(d_activation.ptr(), d_filter.ptr(), d_output.ptr(), stream.get());
  stream.synchronize();
  d_output.download(output);

  const convgen::ErrorStats error = convgen::compare(output, convgen::reference_conv(problem, activation, filter));
  std::printf("%s: %s (%s), rel L2 error %.2e\n", convgen::describe(problem).c_str(), op.kernel_name().c_str(),
              op.source().c_str(), error.rel_l2);
  return convgen::passes(error, problem.precision) ? 0 : 1;
} catch (const convgen::NoDeviceError& e) {
  std::printf("%s\n", e.what());  // "no CUDA device: ..."
  return 2;
} catch (const convgen::Error& e) {
  std::fprintf(stderr, "error: %s\n", e.what());
  return 1;
}
// README-END
