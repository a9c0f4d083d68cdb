// host_tensor: a tensor in host memory that carries its element type (fp32, fp16 or bf16 storage; tf32 is stored
// as fp32), and the float <-> half / bfloat16 conversions, written with bit arithmetic, round-to-nearest-even.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "convgen/enum_names.hpp"
#include "convgen/problem.hpp"

namespace convgen {

// How one element is stored. tf32 data is fp32 in memory (the tensor cores round it), so it has no type here.
enum class DataType { fp32, fp16, bf16 };

template <>
struct EnumNames<DataType> {
  static constexpr std::array table = {
      std::pair{DataType::fp32, std::string_view("fp32")},
      std::pair{DataType::fp16, std::string_view("fp16")},
      std::pair{DataType::bf16, std::string_view("bf16")},
  };
};

// Returns the storage type of a precision: fp32 and tf32 -> fp32, fp16 -> fp16, bf16 -> bf16.
constexpr DataType storage_type(Precision precision) {
  switch (precision) {
    case Precision::fp16: return DataType::fp16;
    case Precision::bf16: return DataType::bf16;
    default: return DataType::fp32;
  }
}

// Returns the bytes of one element.
constexpr std::size_t element_size(DataType type) { return type == DataType::fp32 ? 4 : 2; }

// IEEE binary16 and bfloat16 from a float, rounded to nearest, ties to even; overflow gives infinity, NaN stays a
// (quiet) NaN, fp16 keeps subnormals. The reverse conversions are exact.
//   float_to_half(1.0f) == 0x3c00;  float_to_bfloat16(1.0f) == 0x3f80
std::uint16_t float_to_half(float value);
float half_to_float(std::uint16_t bits);
std::uint16_t float_to_bfloat16(float value);
float bfloat16_to_float(std::uint16_t bits);

// Returns `value` rounded to the nearest value of `type` (the identity for fp32).
float round_to(DataType type, float value);

// The three tensors of a convolution, and the two its epilogue may read: the bias (K values) and the residual (the
// output's shape and layout).
enum class TensorRole { activation, filter, output, bias, residual };

template <>
struct EnumNames<TensorRole> {
  static constexpr std::array table = {
      std::pair{TensorRole::activation, std::string_view("activation")},
      std::pair{TensorRole::filter, std::string_view("filter")},
      std::pair{TensorRole::output, std::string_view("output")},
      std::pair{TensorRole::bias, std::string_view("bias")},
      std::pair{TensorRole::residual, std::string_view("residual")},
  };
};

// Returns the element count of one tensor of `p`, and its bytes in the problem's storage type (the bias and the
// residual whether or not the problem's epilogue reads them).
std::int64_t tensor_elements(const Problem& p, TensorRole role);
std::int64_t tensor_bytes(const Problem& p, TensorRole role);

// A flat tensor in host memory: its element type, its element count, and the bytes. Its shape and layout are the
// problem's (activation N C D H W or N D H W C, and so on); the tensor does not repeat them.
//   HostTensor a = HostTensor::for_problem(problem, TensorRole::activation);  // zeros, in the problem's type
//   a.set(0, 0.1f);  // rounded to the type
class HostTensor {
 public:
  HostTensor() = default;
  // Zeros.
  HostTensor(DataType type, std::int64_t elements);
  static HostTensor for_problem(const Problem& p, TensorRole role);
  // Each value rounded to `type`.
  static HostTensor from_floats(DataType type, std::span<const float> values);

  DataType type() const { return type_; }
  std::int64_t size() const { return elements_; }
  std::size_t size_bytes() const { return data_.size(); }
  std::span<std::byte> bytes() { return data_; }
  std::span<const std::byte> bytes() const { return data_; }

  // Element i as a float (exact: every fp16 and bf16 value is a float).
  float get(std::int64_t i) const;
  // Stores `value` rounded to the type.
  void set(std::int64_t i, float value);

  // Returns a copy in `type`, each value rounded (a copy when the type is the same).
  HostTensor converted(DataType type) const;

  bool operator==(const HostTensor&) const = default;

 private:
  DataType type_ = DataType::fp32;
  std::int64_t elements_ = 0;
  std::vector<std::byte> data_;
};

}  // namespace convgen
