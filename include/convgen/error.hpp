// error: the exception types convgen throws for broken invariants, bad input and failed system calls.
#pragma once

#include <stdexcept>
#include <string>

namespace convgen {

// Base of every convgen exception; what() is a complete, lower-case message.
class Error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// A file or argument did not hold what was expected ("file:line: column 'x' must be ...").
class InputError : public Error {
 public:
  using Error::Error;
};

// No CUDA driver or no device: every GPU entry point throws this on a GPU-less machine.
class NoDeviceError : public Error {
 public:
  using Error::Error;
};

// A CUDA driver, NVRTC, cuDNN or SQLite call failed; the message names the call, file and line.
class ApiError : public Error {
 public:
  using Error::Error;
};

}  // namespace convgen
