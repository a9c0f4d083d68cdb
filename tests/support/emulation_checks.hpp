// emulation_checks: what the host emulation tests share around a run: a tensor's values as floats (the fp32
// templates' inputs), and for the typed templates (igemm, igemm_tc, sparse24_tc) the epilogue's operands, random where
// the problem's epilogue reads them, and the reference rounded to the output's data type, against which a 16-bit
// output differs by fp32 accumulation alone.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "convgen/problem.hpp"
#include "reference/host_tensor.hpp"
#include "reference/reference.hpp"

namespace convgen::testing_support {

// The tensor's values, widened to float (empty for an empty tensor: a kernel gets null).
inline std::vector<float> floats_of(const HostTensor& t) {
  std::vector<float> values(static_cast<std::size_t>(t.size()));
  for (std::int64_t i = 0; i < t.size(); ++i) values[static_cast<std::size_t>(i)] = t.get(i);
  return values;
}

// The bias (K values) and the residual (the output's shape) in the problem's type, seeded random where its epilogue
// reads them, empty (passed to a kernel as null) where it does not.
struct EpilogueOperands {
  HostTensor bias, residual;
};

inline EpilogueOperands random_epilogue_operands(const Problem& p) {
  EpilogueOperands operands;
  if (p.epilogue.bias) {
    operands.bias = HostTensor::for_problem(p, TensorRole::bias);
    fill_random(operands.bias, 3);
  }
  if (reads_residual(p.epilogue)) {
    operands.residual = HostTensor::for_problem(p, TensorRole::residual);
    fill_random(operands.residual, 4);
  }
  return operands;
}

// The reference values rounded to `type` (to nearest even), as float64.
inline std::vector<double> rounded_to(DataType type, std::span<const double> values) {
  const std::vector<float> floats(values.begin(), values.end());
  const HostTensor rounded = HostTensor::from_floats(type, floats);
  std::vector<double> out(static_cast<std::size_t>(rounded.size()));
  for (std::int64_t i = 0; i < rounded.size(); ++i) out[static_cast<std::size_t>(i)] = rounded.get(i);
  return out;
}

}  // namespace convgen::testing_support
