// verify_cases: the family GPU tests' common loop: build a list of (label, problem, kernel) cases in parallel, then
// verify them against the float64 reference one problem at a time (one measurement, so one set of inputs and one
// reference, per run of cases with the same problem), each failure an EXPECT with its message, each result tallied
// under the precision and layout (verify_tally.hpp).
#pragma once

#include <cstdint>
#include <exception>
#include <functional>
#include <string>
#include <variant>
#include <vector>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "conv/conv_kernel.hpp"
#include "measure/verify.hpp"
#include "runtime/jit_cache.hpp"
#include "runtime/thread_pool.hpp"
#include "support/verify_tally.hpp"

namespace convgen::testing_support {

// One (label, problem, spec) to verify.
struct Case {
  std::string label;
  Problem problem;
  KernelSpec spec;
};

// The inputs of one problem's measurement, made from the run's seed (dense random by default).
using InputsOf = std::function<ConvInputs(const Problem& problem, std::uint64_t seed)>;

inline ConvInputs dense_random_inputs(const Problem&, std::uint64_t seed) { return {.seed = seed}; }

// Verifies every case (see the header); consecutive cases share a measurement while their problems are equal and
// carry the same filter values. Returns the number verified (built and run). `seed` is the first measurement's seed,
// each next one's one more.
inline int verify_cases(const std::vector<Case>& cases, const Gpu& gpu, JitCache& cache, std::uint64_t seed,
                        const std::string& tally_table, const InputsOf& inputs_of = dense_random_inputs) {
  std::vector<BuildRequest> requests;
  for (const Case& c : cases) requests.push_back({c.problem, c.spec});
  ThreadPool pool;
  const std::vector<BuildOutcome> built = build_kernels(requests, gpu, cache, pool);
  Stream stream;
  int verified = 0;
  std::size_t i = 0;
  while (i < cases.size()) {
    std::size_t end = i;
    while (end < cases.size() && cases[end].problem == cases[i].problem &&
           cases[end].problem.weights.values == cases[i].problem.weights.values)
      ++end;
    ConvMeasurement measurement(cases[i].problem, inputs_of(cases[i].problem, seed++));
    for (; i < end; ++i) {
      const Case& c = cases[i];
      if (const auto* error = std::get_if<std::exception_ptr>(&built[i])) {
        try {
          std::rethrow_exception(*error);
        } catch (const std::exception& e) {
          ADD_FAILURE() << c.label << " " << kernel_name(c.spec) << " did not build: " << e.what();
        }
        continue;
      }
      const Verification v = measurement.verify(kernel_candidate(std::get<BuiltKernel>(built[i])), stream);
      ++verified;
      const std::string key = fmt::format("{} {}", c.problem.precision,
                                          channels_last(c.problem.layout) ? "channels-last" : "channels-first");
      tally_verification(tally_table, key, c.label + " " + kernel_name(c.spec), v);
      EXPECT_TRUE(v.passed) << c.label << " (" << describe(c.problem) << "): " << v.failure;
    }
  }
  return verified;
}

}  // namespace convgen::testing_support
