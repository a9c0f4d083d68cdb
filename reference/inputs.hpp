// inputs: the test inputs a caller chooses for a convolution: dense random (the default), sparse with a pattern and
// a zero fraction, or a given tensor (a pruned filter); deterministic per seed, each with a short identity.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <variant>

#include "convgen/enum_names.hpp"
#include "convgen/problem.hpp"
#include "reference/host_tensor.hpp"

namespace convgen {

// Where the zeros of a sparse tensor fall. A "channel" is one (n, c) plane of the activation (D x H x W) or one
// (k, c) slice of the filter (T x R x S).
//   uniform: independent positions, exactly round(fraction x size) of them;
//   channel: whole channels zero, exactly round(fraction x channels) of them (the fraction is a multiple of
//            1 / (N x C) for the activation);
//   blob:    zeros clustered as a ReLU leaves them in feature maps: a smoothed random field per channel plus a
//            per-channel bias (shared by the batch), zero where it is below the threshold that gives the fraction.
enum class SparsityPattern { uniform, channel, blob };

template <>
struct EnumNames<SparsityPattern> {
  static constexpr std::array table = {
      std::pair{SparsityPattern::uniform, std::string_view("uniform")},
      std::pair{SparsityPattern::channel, std::string_view("channel")},
      std::pair{SparsityPattern::blob, std::string_view("blob")},
  };
};

// fill_random's values: uniform in (-1, 1), never zero.
struct DenseRandom {
  bool operator==(const DenseRandom&) const = default;
};

// fill_random's values with a fraction of them zero, by a pattern. The nonzero values are the dense tensor's at the
// same positions (never zero), so zero_fraction 0 gives exactly DenseRandom's tensor and 1 gives all zeros.
struct SparseRandom {
  SparsityPattern pattern = SparsityPattern::uniform;
  double zero_fraction = 0;  // in [0, 1]
  bool operator==(const SparseRandom&) const = default;
};

// The caller's own data (a pruned filter, a recorded activation): used as it is, converted to the problem's type.
struct GivenTensor {
  std::shared_ptr<const HostTensor> tensor;
  bool operator==(const GivenTensor& other) const {
    return tensor == other.tensor || (tensor && other.tensor && *tensor == *other.tensor);
  }
};

using TensorSource = std::variant<DenseRandom, SparseRandom, GivenTensor>;

// The inputs of one convolution: a source per tensor and the seed the random ones are drawn from.
struct ConvInputs {
  TensorSource activation = DenseRandom{};
  TensorSource filter = DenseRandom{};
  std::uint64_t seed = 1;
  bool operator==(const ConvInputs&) const = default;
};

// The activation a problem expects: dense random when its act_sparsity is 0, else random with that fraction of
// zeros in `pattern` (blob by default: zeros clustered as ReLU leaves them).
TensorSource expected_activation(const Problem& p, SparsityPattern pattern = SparsityPattern::blob);

// The filter a problem expects: its own values (problem.weights, converted to the problem's type) when it carries
// them, else dense random. Throws InputError when it carries only a pattern (a key parsed back): the kernels that
// bake the pattern need the values it came from.
TensorSource expected_filter(const Problem& p);

// Both: the inputs a problem expects (expected_activation with `pattern`, expected_filter), drawn from `seed`.
ConvInputs expected_inputs(const Problem& p, SparsityPattern pattern = SparsityPattern::blob, std::uint64_t seed = 1);

// The seed of one tensor of a ConvInputs: the activation's is `seed`, the filter's `seed ^ 0x9e3779b97f4a7c15`, the
// bias's and the residual's two other fixed mixes (they are always dense random).
std::uint64_t tensor_seed(TensorRole role, std::uint64_t seed);

// Makes one input tensor of `p` (activation, filter, bias or residual) in the problem's storage type. Throws
// InputError for a zero fraction outside [0, 1], the output role, or a given tensor of the wrong size.
//   HostTensor a = make_tensor(p, TensorRole::activation, SparseRandom{SparsityPattern::blob, 0.7}, 1);
HostTensor make_tensor(const Problem& p, TensorRole role, const TensorSource& source, std::uint64_t seed);

struct InputTensors {
  HostTensor activation;
  HostTensor filter;
  // The epilogue's operands, dense random; empty when the problem's epilogue does not read them.
  HostTensor bias;
  HostTensor residual;
};

// Makes both inputs, each from its source and tensor_seed, and the bias and residual the problem's epilogue reads
// (dense random from their tensor_seed).
InputTensors make_inputs(const Problem& p, const ConvInputs& inputs);

// Returns the data's identity: 16 hex digits hashing the source and its parameters with the seed (for a given
// tensor: its type and bytes, not the seed). Equal identities mean equal data for the same problem. Put it into a
// key (data_key) wherever generated code or a measurement depends on the data.
std::string data_identity(const TensorSource& source, std::uint64_t seed);
// Both tensors' (each with its tensor_seed).
std::string data_identity(const ConvInputs& inputs);

// Returns "<problem key>_data<identity>".
std::string data_key(const Problem& p, std::string_view identity);

// Returns a short description: "dense random", "blob sparse, 70% zeros", "given bf16 tensor".
std::string describe(const TensorSource& source);

// Returns the fraction of elements that are exactly zero (0 for an empty tensor).
double zero_fraction(const HostTensor& tensor);

// The fraction of the activation a kernel of `p` sees as zero: zero_fraction, or with relu_on_load the fraction at
// or below 0 (NaN included), which max(0, x) makes zero.
double loaded_zero_fraction(const Problem& p, const HostTensor& activation);

}  // namespace convgen
