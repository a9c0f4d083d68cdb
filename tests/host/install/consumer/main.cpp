// consumer: uses the installed API: a problem's key and a context (exit 2 with "no CUDA device" where there is none).
#include <cstdio>

#include "convgen/convgen.hpp"
#include "convgen/error.hpp"

int main() try {
  const convgen::Problem problem{.n = 1, .c = 8, .k = 8, .input = {1, 12, 12}, .filter = {1, 3, 3},
                                 .padding = {0, 1, 1}};
  std::printf("%s\n", convgen::problem_key(problem).c_str());
  convgen::ConvContext context(convgen::ContextOptions{.policy = convgen::TuningPolicy::cost_model_only});
  std::printf("%s\n", context.conv(problem).kernel_name().c_str());
  return 0;
} catch (const convgen::NoDeviceError& e) {
  std::printf("%s\n", e.what());
  return 2;
}
