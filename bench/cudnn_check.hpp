// cudnn_check: the one cuDNN check macro, and the exception it throws carrying cuDNN's status.
#pragma once

#include <array>
#include <string>

#include <cudnn.h>
#include <fmt/format.h>

#include "convgen/error.hpp"

namespace convgen {

// A cuDNN call failed. The status is kept so callers can tell "not supported" from a broken call.
class CudnnError : public ApiError {
 public:
  CudnnError(cudnnStatus_t status, const std::string& message) : ApiError(message), status_(status) {}
  cudnnStatus_t status() const { return status_; }

 private:
  cudnnStatus_t status_;
};

// Returns cuDNN's name for a status, e.g. "CUDNN_STATUS_NOT_SUPPORTED".
inline std::string cudnn_status_name(cudnnStatus_t status) { return cudnnGetErrorString(status); }

// Returns and clears the detail cuDNN recorded for the last failed call on this thread ("" when none).
inline std::string cudnn_last_error() {
  std::array<char, 2048> text{};
  cudnnGetLastErrorString(text.data(), text.size());
  return text.data();
}

namespace detail {

// Throws CudnnError "<file>:<line>: <expr> failed: <STATUS_NAME> (<cuDNN's detail>)" unless status is success;
// the parenthesis is left out when cuDNN recorded no detail.
inline void cudnn_check(cudnnStatus_t status, const char* expr, const char* file, int line) {
  if (status == CUDNN_STATUS_SUCCESS) return;
  const std::string detail = cudnn_last_error();
  throw CudnnError(status, fmt::format("{}:{}: {} failed: {}{}", file, line, expr, cudnn_status_name(status),
                                       detail.empty() ? "" : " (" + detail + ")"));
}

}  // namespace detail

}  // namespace convgen

// Calls a cuDNN function and throws CudnnError naming the expression, the status, file and line on failure.
//   CONVGEN_CUDNN_CHECK(cudnnSetStream(handle, stream));
#define CONVGEN_CUDNN_CHECK(expr) ::convgen::detail::cudnn_check((expr), #expr, __FILE__, __LINE__)
