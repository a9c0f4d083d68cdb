// problem: the convolution problem (shape, layout, precision) and the quantities derived from it.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "convgen/enum_names.hpp"

namespace convgen {

// Memory layout of activation and output; the filter follows it (KCRS for channels-first, KRSC for channels-last).
// The rank of the problem (1, 2 or 3 spatial dims) is the layout's.
enum class Layout { ncw, nwc, nchw, nhwc, ncdhw, ndhwc };

// Data precision; tf32, fp16 and bf16 accumulate in fp32.
enum class Precision { fp32, tf32, fp16, bf16 };

template <>
struct EnumNames<Layout> {
  static constexpr std::array table = {
      std::pair{Layout::ncw, std::string_view("ncw")},     std::pair{Layout::nwc, std::string_view("nwc")},
      std::pair{Layout::nchw, std::string_view("nchw")},   std::pair{Layout::nhwc, std::string_view("nhwc")},
      std::pair{Layout::ncdhw, std::string_view("ncdhw")}, std::pair{Layout::ndhwc, std::string_view("ndhwc")},
  };
};

template <>
struct EnumNames<Precision> {
  static constexpr std::array table = {
      std::pair{Precision::fp32, std::string_view("fp32")},
      std::pair{Precision::tf32, std::string_view("tf32")},
      std::pair{Precision::fp16, std::string_view("fp16")},
      std::pair{Precision::bf16, std::string_view("bf16")},
  };
};

// The activation of a fused epilogue (Epilogue::act). clip clamps to [clip_lo, clip_hi]; relu6 is clip to [0, 6].
enum class Activation { none, relu, relu6, clip };

template <>
struct EnumNames<Activation> {
  static constexpr std::array table = {
      std::pair{Activation::none, std::string_view("none")},
      std::pair{Activation::relu, std::string_view("relu")},
      std::pair{Activation::relu6, std::string_view("relu6")},
      std::pair{Activation::clip, std::string_view("clip")},
  };
};

// The operations fused into a convolution's store: output = act(alpha * conv + beta * residual + bias[k]), where
// residual is a tensor of the output's shape, layout and type, and bias holds K values of the output's type. The
// default is the identity (output = conv): no bias, no residual read (beta 0), no activation. Written as text
// (to_string / parse_epilogue) in the shapes file's `epilogue` column, `--epilogue` and the problem key:
// "none", or terms joined by '+', the activation last: "alpha:A", "bias", "add" (beta 1) or "add:B", then "relu",
// "relu6" or "clip:LO:HI" ("bias+add+relu", "alpha:0.5+add:2+clip:-1:1").
struct Epilogue {
  double alpha = 1;
  double beta = 0;  // 0: the residual is not read
  bool bias = false;
  Activation act = Activation::none;
  double clip_lo = 0;  // clip's bounds; both 0 unless act is clip
  double clip_hi = 0;
  bool operator==(const Epilogue&) const = default;
};

// Whether the epilogue is the identity (output = conv).
inline bool is_identity(const Epilogue& e) { return e == Epilogue{}; }
// Whether the epilogue reads a residual tensor (beta is not 0).
inline bool reads_residual(const Epilogue& e) { return e.beta != 0; }

// Returns the canonical text of an epilogue: "none", or its terms in the order alpha, bias, add, activation
// ("bias+add+relu", "alpha:0.5+add:2+clip:-1:1"); numbers in their shortest form that reads back exactly.
std::string to_string(const Epilogue& e);

// Parses epilogue text (any order of terms, each at most once, the activation last); throws InputError naming the
// bad term and listing the expected ones, e.g. "unknown term 'gelu' in 'bias+gelu', expected 'none' or terms joined
// by '+': alpha:A, bias, add, add:B, relu, relu6, clip:LO:HI (the activation last)".
Epilogue parse_epilogue(std::string_view text);

// Returns an empty string when the epilogue is well formed (finite numbers, clip bounds only for clip and in
// order), else the first reason it is not.
std::string validate(const Epilogue& e);

// Returns the number of spatial dims of a layout: 1, 2 or 3.
constexpr int rank(Layout layout) {
  switch (layout) {
    case Layout::ncw: case Layout::nwc: return 1;
    case Layout::nchw: case Layout::nhwc: return 2;
    default: return 3;
  }
}

// Returns true when channels are the innermost dimension (NWC, NHWC, NDHWC).
constexpr bool channels_last(Layout layout) {
  return layout == Layout::nwc || layout == Layout::nhwc || layout == Layout::ndhwc;
}

// Returns the bytes of one element of the data type (tf32 is stored as fp32).
constexpr int element_bytes(Precision precision) {
  return precision == Precision::fp16 || precision == Precision::bf16 ? 2 : 4;
}

// Three spatial extents, depth-height-width. Unused dims of 1-D and 2-D problems are 1 (0 for padding).
struct Dims3 {
  int d = 1;
  int h = 1;
  int w = 1;
  bool operator==(const Dims3&) const = default;
};

// A problem's own filter, where one was given (`--weights`, `--weight-sparsity`, `with_weights`): weight-sparse
// kernels bake its nonzero pattern into their code. Equal when the patterns are equal.
struct ProblemWeights {
  // 16 hex digits hashing the filter's shape and the positions of its nonzeros (weight_pattern_hash,
  // convgen/weights.hpp); "" when the problem has no filter of its own.
  std::string pattern;
  // fp32 values in the problem's filter layout (K C/g T R S, or K T R S C/g for channels-last); null when only
  // the pattern is known (a problem key parsed back).
  std::shared_ptr<const std::vector<float>> values;
  bool operator==(const ProblemWeights& other) const { return pattern == other.pattern; }
};

// One forward convolution. Every problem is held as 3-D: a 2-D problem has d = t = 1, stride.d = dilation.d = 1
// and padding.d = 0, a 1-D problem also has h = r = 1. Derived sizes are functions below, never fields.
struct Problem {
  int n = 1;                        // batch
  int c = 1;                        // input channels (all groups)
  int k = 1;                        // output channels (all groups)
  Dims3 input{};                    // D H W
  Dims3 filter{};                   // T R S
  Dims3 stride{1, 1, 1};
  Dims3 padding{0, 0, 0};
  Dims3 dilation{1, 1, 1};
  int groups = 1;
  Layout layout = Layout::nchw;
  Precision precision = Precision::fp32;
  // The expected fraction of zeros in the activation (a ReLU's output), in [0, 1]. Not part of the shape: it
  // decides which kernel is best (activation-sparse kernels skip zeros), so the tuner measures on inputs of this
  // sparsity and the problem key carries its bucket (act_sparsity_bucket).
  double act_sparsity = 0;
  // max(0, x) applied to every activation value as the kernel loads it: the problem is the convolution of the
  // activation's ReLU, for an input an unfused producer wrote before its ReLU (act_sparsity is then the expected
  // fraction of values at or below 0). A kernel that applies it as it loads (Family::applies_relu_on_load) spares the
  // separate ReLU pass; every other kernel runs behind one of its own plan (plan_for's ReLU prologue). Part of the
  // key ("_relu").
  bool relu_on_load = false;
  // The filter, where the problem carries one: part of the key (its pattern), since kernels may bake it.
  ProblemWeights weights;
  // What the kernel applies at its store (bias, residual, activation); the identity by default. Part of the key
  // ("_e<text>") when it is not the identity, and baked into the rendered source.
  Epilogue epilogue;
  bool operator==(const Problem&) const = default;
};

// The act_sparsity bucket, in percent: the zero fraction rounded to the nearest 5% (0.52 -> 50, 0.97 -> 95), so
// that problems whose best kernels hardly differ share tuning records.
int act_sparsity_bucket(const Problem& p);

// Returns the output extents O P Q (floor((in + 2 pad - dil (f - 1) - 1) / stride) + 1 per dim).
Dims3 output_dims(const Problem& p);

// Input and output channels per group.
inline int c_per_group(const Problem& p) { return p.c / p.groups; }
inline int k_per_group(const Problem& p) { return p.k / p.groups; }

// Element counts of the three tensors.
std::int64_t activation_elements(const Problem& p);
std::int64_t filter_elements(const Problem& p);
std::int64_t output_elements(const Problem& p);

// Floating-point operations of one forward pass: 2 per multiply-add.
std::int64_t flops(const Problem& p);

// The fewest bytes a forward pass moves through device memory: each tensor read or written once.
std::int64_t min_bytes(const Problem& p);

// Returns an empty string when the problem is well formed, else the first reason it is not.
std::string validate(const Problem& p);

// Returns the canonical problem key, e.g. "n1_c64_k64_i1x56x56_f1x3x3_s1x1x1_p0x1x1_d1x1x1_g1_nchw_fp32", with
// "_z<bucket>" appended when the act_sparsity bucket is not 0 ("..._nchw_fp32_z50"), "_relu" when it applies
// max(0, x) on load ("..._fp32_z50_relu"), "_w<pattern>" when the problem carries a filter and "_e<epilogue>" when its
// epilogue is not the identity ("..._fp32_ebias+add+relu"). It encodes every field (the sparsity as its bucket, the
// filter as its pattern) and parses back with parse_problem_key (act_sparsity = bucket / 100; weights with the pattern
// and no values).
std::string problem_key(const Problem& p);

// Parses a key written by problem_key; throws InputError naming what was wrong.
Problem parse_problem_key(std::string_view key);

// Returns a short human description, e.g. "64->64 3x3 s1 p1 at 56x56 -> 56x56, n1" (", 50% zeros" appended when
// act_sparsity is not 0, ", max(0, x) on load" with relu_on_load, ", epilogue bias+relu" when the epilogue is not the
// identity).
std::string describe(const Problem& p);

}  // namespace convgen
