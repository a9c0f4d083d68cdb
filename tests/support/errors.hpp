// errors: test helpers that capture the message of an expected exception.
#pragma once

#include <string>

#include "convgen/error.hpp"

namespace convgen::testing_support {

// Returns the message of the InputError that `f` throws, or a marker when it throws none.
template <class F>
std::string input_error(F&& f) {
  try {
    f();
  } catch (const InputError& e) {
    return e.what();
  }
  return "<no InputError>";
}

}  // namespace convgen::testing_support
