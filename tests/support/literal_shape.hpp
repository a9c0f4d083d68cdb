// literal_shape: the geometry of a Problem as a literal type, for the host emulation tests that bake a problem into
// constexpr constants (a Problem carries a std::string and a shared_ptr — its filter — so it cannot be constexpr).
// A case declares a LiteralShape with Problem's designated initializers and hands it on as the Problem it
// converts to.
#pragma once

#include "convgen/problem.hpp"

namespace convgen::testing_support {

struct LiteralShape {
  int n = 1, c = 1, k = 1;
  Dims3 input{}, filter{}, stride{1, 1, 1}, padding{0, 0, 0}, dilation{1, 1, 1};
  int groups = 1;
  Layout layout = Layout::nchw;
  Precision precision = Precision::fp32;
  Epilogue epilogue{};
  operator Problem() const {  // NOLINT(google-explicit-constructor): the cases read as problems
    return {.n = n,
            .c = c,
            .k = k,
            .input = input,
            .filter = filter,
            .stride = stride,
            .padding = padding,
            .dilation = dilation,
            .groups = groups,
            .layout = layout,
            .precision = precision,
            .epilogue = epilogue};
  }
};

}  // namespace convgen::testing_support
