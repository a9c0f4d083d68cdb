// host_tensor: typed host tensors and the bit-exact float <-> half / bfloat16 conversions.
#include "reference/host_tensor.hpp"

#include <bit>
#include <cstring>

#include <fmt/format.h>

#include "convgen/error.hpp"

namespace convgen {

std::uint16_t float_to_half(float value) {
  const auto x = std::bit_cast<std::uint32_t>(value);
  const auto sign = static_cast<std::uint16_t>((x >> 16) & 0x8000u);
  const std::uint32_t abs = x & 0x7fffffffu;
  if (abs > 0x7f800000u) return static_cast<std::uint16_t>(sign | 0x7e00u | ((abs >> 13) & 0x3ffu));  // NaN, quiet
  // 65520 (0x477ff000) lies halfway between the largest half, 65504 (odd mantissa), and 65536: ties to even round up.
  if (abs >= 0x477ff000u) return static_cast<std::uint16_t>(sign | 0x7c00u);
  if (abs < 0x38800000u) {  // below 2^-14, the smallest normal half: a subnormal m x 2^-24, or zero
    const std::uint32_t exponent = abs >> 23;
    if (exponent < 102) return sign;  // below 2^-25: rounds to zero (2^-25 itself ties to the even zero)
    const std::uint32_t mantissa = (abs & 0x7fffffu) | 0x800000u;
    const std::uint32_t shift = 126 - exponent;  // value / 2^-24 = mantissa x 2^(exponent - 126)
    std::uint32_t q = mantissa >> shift;
    const std::uint32_t rest = mantissa & ((1u << shift) - 1), half = 1u << (shift - 1);
    if (rest > half || (rest == half && (q & 1u))) ++q;
    return static_cast<std::uint16_t>(sign | q);
  }
  const std::uint32_t rebiased = abs - ((127u - 15u) << 23);
  std::uint32_t q = rebiased >> 13;
  const std::uint32_t rest = rebiased & 0x1fffu;
  if (rest > 0x1000u || (rest == 0x1000u && (q & 1u))) ++q;  // a carry into the exponent is the right result
  return static_cast<std::uint16_t>(sign | q);
}

float half_to_float(std::uint16_t bits) {
  const std::uint32_t sign = (std::uint32_t{bits} & 0x8000u) << 16;
  const std::uint32_t exponent = (bits >> 10) & 0x1fu, mantissa = bits & 0x3ffu;
  if (exponent == 0) {
    const float magnitude = static_cast<float>(mantissa) * 0x1p-24f;  // exact: at most 10 bits
    return sign ? -magnitude : magnitude;
  }
  if (exponent == 31) return std::bit_cast<float>(sign | 0x7f800000u | (mantissa << 13));
  return std::bit_cast<float>(sign | ((exponent + 112) << 23) | (mantissa << 13));
}

std::uint16_t float_to_bfloat16(float value) {
  const auto x = std::bit_cast<std::uint32_t>(value);
  if ((x & 0x7fffffffu) > 0x7f800000u) return static_cast<std::uint16_t>((x >> 16) | 0x40u);  // NaN, quiet
  const std::uint32_t lsb = (x >> 16) & 1u;
  return static_cast<std::uint16_t>((x + 0x7fffu + lsb) >> 16);  // ties to even; overflow carries into infinity
}

float bfloat16_to_float(std::uint16_t bits) { return std::bit_cast<float>(std::uint32_t{bits} << 16); }

float round_to(DataType type, float value) {
  switch (type) {
    case DataType::fp16: return half_to_float(float_to_half(value));
    case DataType::bf16: return bfloat16_to_float(float_to_bfloat16(value));
    default: return value;
  }
}

std::int64_t tensor_elements(const Problem& p, TensorRole role) {
  switch (role) {
    case TensorRole::activation: return activation_elements(p);
    case TensorRole::filter: return filter_elements(p);
    case TensorRole::bias:
      return p.k;
    default: return output_elements(p);
  }
}

std::int64_t tensor_bytes(const Problem& p, TensorRole role) {
  return tensor_elements(p, role) * static_cast<std::int64_t>(element_size(storage_type(p.precision)));
}

HostTensor::HostTensor(DataType type, std::int64_t elements) : type_(type), elements_(elements) {
  if (elements < 0) throw InputError(fmt::format("a tensor cannot have {} elements", elements));
  data_.resize(static_cast<std::size_t>(elements) * element_size(type));
}

HostTensor HostTensor::for_problem(const Problem& p, TensorRole role) {
  return HostTensor(storage_type(p.precision), tensor_elements(p, role));
}

HostTensor HostTensor::from_floats(DataType type, std::span<const float> values) {
  HostTensor tensor(type, static_cast<std::int64_t>(values.size()));
  for (std::size_t i = 0; i < values.size(); ++i) tensor.set(static_cast<std::int64_t>(i), values[i]);
  return tensor;
}

float HostTensor::get(std::int64_t i) const {
  const std::byte* at = data_.data() + static_cast<std::size_t>(i) * element_size(type_);
  if (type_ == DataType::fp32) {
    float value;
    std::memcpy(&value, at, 4);
    return value;
  }
  std::uint16_t bits;
  std::memcpy(&bits, at, 2);
  return type_ == DataType::fp16 ? half_to_float(bits) : bfloat16_to_float(bits);
}

void HostTensor::set(std::int64_t i, float value) {
  std::byte* at = data_.data() + static_cast<std::size_t>(i) * element_size(type_);
  if (type_ == DataType::fp32) {
    std::memcpy(at, &value, 4);
    return;
  }
  const std::uint16_t bits = type_ == DataType::fp16 ? float_to_half(value) : float_to_bfloat16(value);
  std::memcpy(at, &bits, 2);
}

HostTensor HostTensor::converted(DataType type) const {
  if (type == type_) return *this;
  HostTensor out(type, elements_);
  for (std::int64_t i = 0; i < elements_; ++i) out.set(i, get(i));
  return out;
}

}  // namespace convgen
