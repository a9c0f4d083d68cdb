// cudnn_routes: builds cuDNN's legacy algorithms and graph-API execution plans for one problem, and launches them.
#include "bench/cudnn_routes.hpp"

#include <algorithm>
#include <array>
#include <cstdint>
#include <map>
#include <optional>
#include <utility>

#include <cudnn.h>
#include <fmt/format.h>
#include <fmt/ranges.h>

#include "bench/cudnn_check.hpp"
#include "conv/conv_kernel.hpp"
#include "convgen/error.hpp"
#include "runtime/driver.hpp"
#include "runtime/module.hpp"

namespace convgen {
namespace {

// Tensor uids in the graph API's variant pack.
constexpr std::int64_t kUidX = 1;
constexpr std::int64_t kUidW = 2;
constexpr std::int64_t kUidY = 3;

// Variant packs cached per route, keyed by the pointers: building one per launch would add host time to cuDNN's
// stream-launched measurements. The benchmark rotates a few buffer sets, so the cache stays small; it is dropped
// whole when it outgrows this.
constexpr std::size_t kMaxCachedPacks = 64;

// ---- RAII for cuDNN objects.

// A backend descriptor of one type, destroyed with the owner.
class BackendDescriptor {
 public:
  BackendDescriptor() = default;
  explicit BackendDescriptor(cudnnBackendDescriptorType_t type) {
    CONVGEN_CUDNN_CHECK(cudnnBackendCreateDescriptor(type, &descriptor_));
  }
  ~BackendDescriptor() {
    if (descriptor_ != nullptr) cudnnBackendDestroyDescriptor(descriptor_);
  }
  BackendDescriptor(BackendDescriptor&& other) noexcept : descriptor_(std::exchange(other.descriptor_, nullptr)) {}
  BackendDescriptor& operator=(BackendDescriptor&& other) noexcept {
    std::swap(descriptor_, other.descriptor_);
    return *this;
  }
  BackendDescriptor(const BackendDescriptor&) = delete;
  BackendDescriptor& operator=(const BackendDescriptor&) = delete;

  cudnnBackendDescriptor_t get() const { return descriptor_; }
  // Getting a descriptor-valued attribute copies into descriptors the caller created: this is where it goes.
  cudnnBackendDescriptor_t* address() { return &descriptor_; }
  explicit operator bool() const { return descriptor_ != nullptr; }

 private:
  cudnnBackendDescriptor_t descriptor_ = nullptr;
};

// A legacy descriptor (tensor, filter, convolution) or the handle: created by `Create`, destroyed by `Destroy`.
template <class T, cudnnStatus_t (*Create)(T*), cudnnStatus_t (*Destroy)(T)>
class Owned {
 public:
  Owned() { CONVGEN_CUDNN_CHECK(Create(&value_)); }
  ~Owned() {
    if (value_ != nullptr) Destroy(value_);
  }
  Owned(Owned&& other) noexcept : value_(std::exchange(other.value_, nullptr)) {}
  Owned& operator=(Owned&& other) noexcept {
    std::swap(value_, other.value_);
    return *this;
  }
  Owned(const Owned&) = delete;
  Owned& operator=(const Owned&) = delete;
  T get() const { return value_; }

 private:
  T value_ = nullptr;
};

using Handle = Owned<cudnnHandle_t, cudnnCreate, cudnnDestroy>;
using TensorDesc = Owned<cudnnTensorDescriptor_t, cudnnCreateTensorDescriptor, cudnnDestroyTensorDescriptor>;
using FilterDesc = Owned<cudnnFilterDescriptor_t, cudnnCreateFilterDescriptor, cudnnDestroyFilterDescriptor>;
using ConvDesc =
    Owned<cudnnConvolutionDescriptor_t, cudnnCreateConvolutionDescriptor, cudnnDestroyConvolutionDescriptor>;
using ActivationDesc =
    Owned<cudnnActivationDescriptor_t, cudnnCreateActivationDescriptor, cudnnDestroyActivationDescriptor>;

// Sets an attribute; the expression in a failure's message names the attribute.
#define CONVGEN_SET_ATTR(desc, name, type, count, values) \
  CONVGEN_CUDNN_CHECK(cudnnBackendSetAttribute((desc).get(), name, type, count, values))

// The outcome of a call whose failure is an expected answer ("this engine does not support the problem").
struct Outcome {
  cudnnStatus_t status = CUDNN_STATUS_SUCCESS;
  std::string detail;
  bool ok() const { return status == CUDNN_STATUS_SUCCESS; }
};

Outcome attempt(cudnnStatus_t status) {
  return {.status = status, .detail = status == CUDNN_STATUS_SUCCESS ? "" : cudnn_last_error()};
}

// ---- Problem to cuDNN.

cudnnDataType_t data_type(Precision precision) {
  switch (precision) {
    case Precision::fp16:
      return CUDNN_DATA_HALF;
    case Precision::bf16:
      return CUDNN_DATA_BFLOAT16;
    default:
      return CUDNN_DATA_FLOAT;
  }
}

cudnnMathType_t legacy_math(CudnnMath math) {
  switch (math) {
    case CudnnMath::strict_fp32:
      return CUDNN_FMA_MATH;
    // Default math lets cuDNN use TF32 on fp32 data (measured: an "fp32" layer ran above the fp32 peak).
    case CudnnMath::tf32:
      return CUDNN_DEFAULT_MATH;
    default:
      return CUDNN_TENSOR_OP_MATH;
  }
}

// Strides of a fully packed tensor whose dims are given N C S... (or K C S...): row-major for channels-first,
// channels innermost for channels-last.
std::vector<std::int64_t> packed_strides(const std::vector<std::int64_t>& dims, bool channels_last) {
  std::vector<std::int64_t> strides(dims.size());
  if (!channels_last) {
    std::int64_t stride = 1;
    for (std::size_t i = dims.size(); i-- > 0;) {
      strides[i] = stride;
      stride *= dims[i];
    }
    return strides;
  }
  std::int64_t stride = dims[1];
  strides[1] = 1;
  for (std::size_t i = dims.size(); i-- > 2;) {
    strides[i] = stride;
    stride *= dims[i];
  }
  strides[0] = stride;
  return strides;
}

std::vector<int> to_int(const std::vector<std::int64_t>& values) { return {values.begin(), values.end()}; }

// The legacy descriptors of a problem, with the fused call's bias (1 K 1 1, or 1 K 1 1 1) and activation.
struct LegacyDescriptors {
  TensorDesc x;
  FilterDesc w;
  TensorDesc y;
  ConvDesc conv;
  TensorDesc bias;
  ActivationDesc activation;
};

LegacyDescriptors make_legacy_descriptors(const Problem& problem, const CudnnConvShape& shape) {
  LegacyDescriptors d;
  const cudnnDataType_t type = data_type(problem.precision);
  const int nb = static_cast<int>(shape.activation.dims.size());
  const int spatial = nb - 2;
  const std::vector<int> x_dims = to_int(shape.activation.dims), x_strides = to_int(shape.activation.strides);
  const std::vector<int> y_dims = to_int(shape.output.dims), y_strides = to_int(shape.output.strides);
  const std::vector<int> w_dims = to_int(shape.filter.dims);
  const std::vector<int> padding = to_int(shape.padding), stride = to_int(shape.stride),
                         dilation = to_int(shape.dilation);
  CONVGEN_CUDNN_CHECK(cudnnSetTensorNdDescriptor(d.x.get(), type, nb, x_dims.data(), x_strides.data()));
  CONVGEN_CUDNN_CHECK(cudnnSetTensorNdDescriptor(d.y.get(), type, nb, y_dims.data(), y_strides.data()));
  // The filter's dims are always K C/g (T) R S; the format says how they lie in memory (NHWC: K (T) R S C/g).
  const cudnnTensorFormat_t format = channels_last(problem.layout) ? CUDNN_TENSOR_NHWC : CUDNN_TENSOR_NCHW;
  CONVGEN_CUDNN_CHECK(cudnnSetFilterNdDescriptor(d.w.get(), type, format, nb, w_dims.data()));
  CONVGEN_CUDNN_CHECK(cudnnSetConvolutionNdDescriptor(d.conv.get(), spatial, padding.data(), stride.data(),
                                                      dilation.data(), CUDNN_CROSS_CORRELATION, CUDNN_DATA_FLOAT));
  CONVGEN_CUDNN_CHECK(cudnnSetConvolutionGroupCount(d.conv.get(), problem.groups));
  CONVGEN_CUDNN_CHECK(cudnnSetConvolutionMathType(d.conv.get(), legacy_math(cudnn_math(problem.precision))));
  // The fused call's bias is in the data type, broadcast over every dim but the channel.
  std::vector<int> bias_dims(static_cast<std::size_t>(nb), 1), bias_strides(static_cast<std::size_t>(nb), 1);
  bias_dims[1] = problem.k;
  CONVGEN_CUDNN_CHECK(cudnnSetTensorNdDescriptor(d.bias.get(), type, nb, bias_dims.data(), bias_strides.data()));
  const cudnnActivationMode_t mode =
      problem.epilogue.act == Activation::relu ? CUDNN_ACTIVATION_RELU : CUDNN_ACTIVATION_IDENTITY;
  CONVGEN_CUDNN_CHECK(cudnnSetActivationDescriptor(d.activation.get(), mode, CUDNN_PROPAGATE_NAN, 0.0));
  return d;
}

std::vector<int> legacy_output_dims(const LegacyDescriptors& d, int nb) {
  std::vector<int> dims(static_cast<std::size_t>(nb));
  CONVGEN_CUDNN_CHECK(cudnnGetConvolutionNdForwardOutputDim(d.conv.get(), d.x.get(), d.w.get(), nb, dims.data()));
  return dims;
}

// The graph API's descriptors of a problem's forward convolution, up to the operation.
struct GraphOperation {
  BackendDescriptor x, w, y, conv, op;
};

BackendDescriptor make_tensor(std::int64_t uid, const CudnnTensorShape& shape, cudnnDataType_t type) {
  BackendDescriptor t(CUDNN_BACKEND_TENSOR_DESCRIPTOR);
  const auto count = static_cast<std::int64_t>(shape.dims.size());
  const std::int64_t alignment = 16;
  CONVGEN_SET_ATTR(t, CUDNN_ATTR_TENSOR_DATA_TYPE, CUDNN_TYPE_DATA_TYPE, 1, &type);
  CONVGEN_SET_ATTR(t, CUDNN_ATTR_TENSOR_DIMENSIONS, CUDNN_TYPE_INT64, count, shape.dims.data());
  CONVGEN_SET_ATTR(t, CUDNN_ATTR_TENSOR_STRIDES, CUDNN_TYPE_INT64, count, shape.strides.data());
  CONVGEN_SET_ATTR(t, CUDNN_ATTR_TENSOR_UNIQUE_ID, CUDNN_TYPE_INT64, 1, &uid);
  CONVGEN_SET_ATTR(t, CUDNN_ATTR_TENSOR_BYTE_ALIGNMENT, CUDNN_TYPE_INT64, 1, &alignment);
  CONVGEN_CUDNN_CHECK(cudnnBackendFinalize(t.get()));
  return t;
}

GraphOperation make_graph_operation(const Problem& problem, const CudnnConvShape& shape) {
  GraphOperation g;
  const cudnnDataType_t type = data_type(problem.precision);
  g.x = make_tensor(kUidX, shape.activation, type);
  // Groups are implied: W is K x C/g while X has C channels.
  g.w = make_tensor(kUidW, shape.filter, type);
  g.y = make_tensor(kUidY, shape.output, type);

  g.conv = BackendDescriptor(CUDNN_BACKEND_CONVOLUTION_DESCRIPTOR);
  const cudnnDataType_t compute = CUDNN_DATA_FLOAT;
  const cudnnConvolutionMode_t mode = CUDNN_CROSS_CORRELATION;
  const auto spatial = static_cast<std::int64_t>(shape.padding.size());
  CONVGEN_SET_ATTR(g.conv, CUDNN_ATTR_CONVOLUTION_COMP_TYPE, CUDNN_TYPE_DATA_TYPE, 1, &compute);
  CONVGEN_SET_ATTR(g.conv, CUDNN_ATTR_CONVOLUTION_CONV_MODE, CUDNN_TYPE_CONVOLUTION_MODE, 1, &mode);
  CONVGEN_SET_ATTR(g.conv, CUDNN_ATTR_CONVOLUTION_SPATIAL_DIMS, CUDNN_TYPE_INT64, 1, &spatial);
  CONVGEN_SET_ATTR(g.conv, CUDNN_ATTR_CONVOLUTION_PRE_PADDINGS, CUDNN_TYPE_INT64, spatial, shape.padding.data());
  CONVGEN_SET_ATTR(g.conv, CUDNN_ATTR_CONVOLUTION_POST_PADDINGS, CUDNN_TYPE_INT64, spatial, shape.padding.data());
  CONVGEN_SET_ATTR(g.conv, CUDNN_ATTR_CONVOLUTION_FILTER_STRIDES, CUDNN_TYPE_INT64, spatial, shape.stride.data());
  CONVGEN_SET_ATTR(g.conv, CUDNN_ATTR_CONVOLUTION_DILATIONS, CUDNN_TYPE_INT64, spatial, shape.dilation.data());
  CONVGEN_CUDNN_CHECK(cudnnBackendFinalize(g.conv.get()));

  g.op = BackendDescriptor(CUDNN_BACKEND_OPERATION_CONVOLUTION_FORWARD_DESCRIPTOR);
  const float alpha = 1, beta = 0;  // float scalars for every data type but double
  CONVGEN_SET_ATTR(g.op, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_X, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, g.x.address());
  CONVGEN_SET_ATTR(g.op, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_W, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, g.w.address());
  CONVGEN_SET_ATTR(g.op, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_Y, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, g.y.address());
  CONVGEN_SET_ATTR(g.op, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_CONV_DESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1,
                   g.conv.address());
  CONVGEN_SET_ATTR(g.op, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_ALPHA, CUDNN_TYPE_FLOAT, 1, &alpha);
  CONVGEN_SET_ATTR(g.op, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_BETA, CUDNN_TYPE_FLOAT, 1, &beta);
  CONVGEN_CUDNN_CHECK(cudnnBackendFinalize(g.op.get()));
  return g;
}

// ---- Reading engines and configurations.

struct EngineInfo {
  int index = -1;
  std::vector<int> numerical_notes;
  std::vector<int> behavior_notes;
};

EngineInfo read_engine(const BackendDescriptor& engine) {
  EngineInfo info;
  std::int64_t count = 0, index = -1;
  CONVGEN_CUDNN_CHECK(
      cudnnBackendGetAttribute(engine.get(), CUDNN_ATTR_ENGINE_GLOBAL_INDEX, CUDNN_TYPE_INT64, 1, &count, &index));
  info.index = static_cast<int>(index);
  // Room for more notes than this header knows: the library may be newer.
  std::array<cudnnBackendNumericalNote_t, 64> numerical{};
  CONVGEN_CUDNN_CHECK(cudnnBackendGetAttribute(engine.get(), CUDNN_ATTR_ENGINE_NUMERICAL_NOTE,
                                               CUDNN_TYPE_NUMERICAL_NOTE, numerical.size(), &count, numerical.data()));
  for (std::int64_t i = 0; i < count; ++i) info.numerical_notes.push_back(numerical[static_cast<std::size_t>(i)]);
  std::array<cudnnBackendBehaviorNote_t, 64> behavior{};
  CONVGEN_CUDNN_CHECK(cudnnBackendGetAttribute(engine.get(), CUDNN_ATTR_ENGINE_BEHAVIOR_NOTE, CUDNN_TYPE_BEHAVIOR_NOTE,
                                               behavior.size(), &count, behavior.data()));
  for (std::int64_t i = 0; i < count; ++i) info.behavior_notes.push_back(behavior[static_cast<std::size_t>(i)]);
  return info;
}

EngineInfo read_config_engine(const BackendDescriptor& config) {
  BackendDescriptor engine(CUDNN_BACKEND_ENGINE_DESCRIPTOR);
  std::int64_t count = 0;
  CONVGEN_CUDNN_CHECK(cudnnBackendGetAttribute(config.get(), CUDNN_ATTR_ENGINECFG_ENGINE, CUDNN_TYPE_BACKEND_DESCRIPTOR,
                                               1, &count, engine.address()));
  return read_engine(engine);
}

std::string read_knobs(const BackendDescriptor& config) {
  constexpr std::size_t kCapacity = 64;
  std::vector<BackendDescriptor> choices;
  std::vector<cudnnBackendDescriptor_t> raw;
  for (std::size_t i = 0; i < kCapacity; ++i) {
    choices.emplace_back(CUDNN_BACKEND_KNOB_CHOICE_DESCRIPTOR);
    raw.push_back(choices.back().get());
  }
  std::int64_t count = 0;
  CONVGEN_CUDNN_CHECK(cudnnBackendGetAttribute(config.get(), CUDNN_ATTR_ENGINECFG_KNOB_CHOICES,
                                               CUDNN_TYPE_BACKEND_DESCRIPTOR, kCapacity, &count, raw.data()));
  std::vector<std::pair<int, std::int64_t>> knobs;
  for (std::int64_t i = 0; i < count; ++i) {
    const BackendDescriptor& choice = choices[static_cast<std::size_t>(i)];
    cudnnBackendKnobType_t type{};
    std::int64_t value = 0, n = 0;
    CONVGEN_CUDNN_CHECK(
        cudnnBackendGetAttribute(choice.get(), CUDNN_ATTR_KNOB_CHOICE_KNOB_TYPE, CUDNN_TYPE_KNOB_TYPE, 1, &n, &type));
    CONVGEN_CUDNN_CHECK(
        cudnnBackendGetAttribute(choice.get(), CUDNN_ATTR_KNOB_CHOICE_KNOB_VALUE, CUDNN_TYPE_INT64, 1, &n, &value));
    knobs.emplace_back(static_cast<int>(type), value);
  }
  return format_knobs(std::move(knobs));
}

std::string join_names(const std::vector<int>& values, std::string (*name)(int)) {
  std::string out;
  for (int v : values) {
    if (!out.empty()) out += ',';
    out += name(v);
  }
  return out;
}

// The engine configurations a heuristics mode offers, best first.
std::vector<BackendDescriptor> heuristic_configs(const BackendDescriptor& graph, cudnnBackendHeurMode_t mode) {
  BackendDescriptor heur(CUDNN_BACKEND_ENGINEHEUR_DESCRIPTOR);
  cudnnBackendDescriptor_t graph_ptr = graph.get();
  CONVGEN_SET_ATTR(heur, CUDNN_ATTR_ENGINEHEUR_OPERATION_GRAPH, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &graph_ptr);
  CONVGEN_SET_ATTR(heur, CUDNN_ATTR_ENGINEHEUR_MODE, CUDNN_TYPE_HEUR_MODE, 1, &mode);
  CONVGEN_CUDNN_CHECK(cudnnBackendFinalize(heur.get()));
  std::int64_t count = 0;
  CONVGEN_CUDNN_CHECK(cudnnBackendGetAttribute(heur.get(), CUDNN_ATTR_ENGINEHEUR_RESULTS, CUDNN_TYPE_BACKEND_DESCRIPTOR,
                                               0, &count, nullptr));
  std::vector<BackendDescriptor> configs;
  std::vector<cudnnBackendDescriptor_t> raw;
  for (std::int64_t i = 0; i < count; ++i) {
    configs.emplace_back(CUDNN_BACKEND_ENGINECFG_DESCRIPTOR);
    raw.push_back(configs.back().get());
  }
  if (count == 0) return configs;
  CONVGEN_CUDNN_CHECK(cudnnBackendGetAttribute(heur.get(), CUDNN_ATTR_ENGINEHEUR_RESULTS, CUDNN_TYPE_BACKEND_DESCRIPTOR,
                                               count, &count, raw.data()));
  configs.resize(static_cast<std::size_t>(count));
  return configs;
}

// A plan's serialization: equal for the same engine and knobs however they were chosen; "" when not available.
std::string plan_json(const BackendDescriptor& plan) {
  std::int64_t size = 0;
  if (cudnnBackendGetAttribute(plan.get(), CUDNN_ATTR_EXECUTION_PLAN_JSON_REPRESENTATION, CUDNN_TYPE_CHAR, 0, &size,
                               nullptr) != CUDNN_STATUS_SUCCESS ||
      size <= 0) {
    cudnn_last_error();
    return "";
  }
  std::string json(static_cast<std::size_t>(size), '\0');
  if (cudnnBackendGetAttribute(plan.get(), CUDNN_ATTR_EXECUTION_PLAN_JSON_REPRESENTATION, CUDNN_TYPE_CHAR, size, &size,
                               json.data()) != CUDNN_STATUS_SUCCESS) {
    cudnn_last_error();
    return "";
  }
  json.resize(std::min(json.size(), static_cast<std::size_t>(size)));
  while (!json.empty() && json.back() == '\0') json.pop_back();
  return json;
}

std::string over_limit(std::size_t workspace, std::size_t limit) {
  return fmt::format("workspace {} bytes over the limit of {} bytes", workspace, limit);
}

void* device_pointer(CUdeviceptr ptr) { return reinterpret_cast<void*>(static_cast<std::uintptr_t>(ptr)); }

}  // namespace

// ---- Public helpers.

CudnnMath cudnn_math(Precision precision) {
  switch (precision) {
    case Precision::fp32:
      return CudnnMath::strict_fp32;
    case Precision::tf32:
      return CudnnMath::tf32;
    default:
      return CudnnMath::tensor_op;
  }
}

std::string cudnn_version() {
  const std::size_t v = cudnnGetVersion();
  return fmt::format("{}.{}.{}", v / 10000, v % 10000 / 100, v % 100);
}

CudnnConvShape cudnn_conv_shape(const Problem& problem) {
  if (const std::string reason = validate(problem); !reason.empty())
    throw InputError(fmt::format("invalid problem {}: {}", problem_key(problem), reason));
  const Dims3 out = output_dims(problem);
  // 1-D is given to cuDNN as 2-D with H = R = 1 (the Problem already holds it so); cuDNN wants at least 2-D.
  const bool three_d = rank(problem.layout) == 3;
  const auto spatial = [three_d](const Dims3& d) {
    return three_d ? std::vector<std::int64_t>{d.d, d.h, d.w} : std::vector<std::int64_t>{d.h, d.w};
  };
  const auto with = [](std::int64_t a, std::int64_t b, std::vector<std::int64_t> rest) {
    rest.insert(rest.begin(), {a, b});
    return rest;
  };
  const bool last = channels_last(problem.layout);
  CudnnConvShape shape;
  shape.activation.dims = with(problem.n, problem.c, spatial(problem.input));
  shape.filter.dims = with(problem.k, c_per_group(problem), spatial(problem.filter));
  shape.output.dims = with(problem.n, problem.k, spatial(out));
  shape.activation.strides = packed_strides(shape.activation.dims, last);
  shape.filter.strides = packed_strides(shape.filter.dims, last);
  shape.output.strides = packed_strides(shape.output.dims, last);
  shape.padding = spatial(problem.padding);
  shape.stride = spatial(problem.stride);
  shape.dilation = spatial(problem.dilation);
  return shape;
}

std::vector<int> cudnn_legacy_output_dims(const Problem& problem) {
  const CudnnConvShape shape = cudnn_conv_shape(problem);
  const LegacyDescriptors d = make_legacy_descriptors(problem, shape);
  return legacy_output_dims(d, static_cast<int>(shape.activation.dims.size()));
}

void cudnn_check_graph_operation(const Problem& problem) { make_graph_operation(problem, cudnn_conv_shape(problem)); }

namespace {

// Returns names[value], or the prefix and the number for a value this build does not know.
template <std::size_t N>
std::string name_or_number(const std::array<std::string_view, N>& names, int value, std::string_view prefix) {
  if (value >= 0 && static_cast<std::size_t>(value) < N) return std::string(names[static_cast<std::size_t>(value)]);
  return fmt::format("{}{}", prefix, value);
}

}  // namespace

// clang-format off
std::string numerical_note_name(int note) {
  // cudnnBackendNumericalNote_t in value order.
  static constexpr std::array<std::string_view, 10> names = {
      "TENSOR_CORE", "DOWN_CONVERT_INPUTS", "REDUCED_PRECISION_REDUCTION", "FFT", "NONDETERMINISTIC", "WINOGRAD",
      "WINOGRAD_TILE_4x4", "WINOGRAD_TILE_6x6", "WINOGRAD_TILE_13x13", "STRICT_NAN_PROP"};
  return name_or_number(names, note, "NOTE_");
}

std::string behavior_note_name(int note) {
  // cudnnBackendBehaviorNote_t in value order.
  static constexpr std::array<std::string_view, 5> names = {
      "RUNTIME_COMPILATION", "REQUIRES_FILTER_INT8x32_REORDER", "REQUIRES_BIAS_INT8x32_REORDER",
      "SUPPORTS_CUDA_GRAPH_NATIVE_API", "CUBLASLT_DEPENDENCY"};
  return name_or_number(names, note, "NOTE_");
}

std::string knob_name(int knob_type) {
  // cudnnBackendKnobType_t in value order (cuDNN 9.19); deprecated ones keep their place.
  static constexpr std::array<std::string_view, 44> names = {
      "SPLIT_K", "SWIZZLE", "TILE_SIZE", "USE_TEX", "EDGE", "KBLOCK", "LDGA", "LDGB", "CHUNK_K", "SPLIT_H",
      "WINO_TILE", "MULTIPLY", "SPLIT_K_BUF", "TILEK", "STAGES", "REDUCTION_MODE", "CTA_SPLIT_K_MODE", "SPLIT_K_SLC",
      "IDX_MODE", "SLICED", "SPLIT_RS", "SINGLEBUFFER", "LDGC", "SPECFILT", "KERNEL_CFG", "WORKSPACE", "TILE_CGA",
      "TILE_CGA_M", "TILE_CGA_N", "BLOCK_SIZE", "OCCUPANCY", "ARRAY_SIZE_PER_THREAD", "NUM_C_PER_BLOCK", "SPLIT_COLS",
      "TILE_ROWS", "TILE_COLS", "LOAD_SIZE", "CTA_COUNT", "STREAM_K", "SPLIT_P_SLC", "TILE_M", "TILE_N",
      "WARP_SPEC_CFG", "SWAP_AB"};
  return name_or_number(names, knob_type, "KNOB_");
}
// clang-format on

std::string format_knobs(std::vector<std::pair<int, std::int64_t>> choices) {
  std::stable_sort(choices.begin(), choices.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  std::string out;
  for (const auto& [type, value] : choices)
    out += fmt::format("{}{}={}", out.empty() ? "" : ",", knob_name(type), value);
  return out;
}

std::string graph_exclusion(CudnnMath math, const std::vector<int>& numerical_notes) {
  if (math != CudnnMath::strict_fp32) return "";
  const auto has = [&](int note) {
    return std::find(numerical_notes.begin(), numerical_notes.end(), note) != numerical_notes.end();
  };
  if (has(CUDNN_NUMERICAL_NOTE_TENSOR_CORE)) return "excluded: tensor cores in strict fp32";
  if (has(CUDNN_NUMERICAL_NOTE_DOWN_CONVERT_INPUTS)) return "excluded: down-converts inputs in strict fp32";
  return "";
}

std::string legacy_fused_exclusion(const Epilogue& epilogue) {
  if (epilogue.act == Activation::relu6 || epilogue.act == Activation::clip)
    return fmt::format("excluded: cudnnConvolutionBiasActivationForward serves relu and identity only, not {}",
                       epilogue.act);
  return "";
}

std::string graph_algo_name(int engine, const std::vector<std::string>& sources) {
  return fmt::format("engine {} [{}]", engine, fmt::join(sources, ", "));
}

// ---- CudnnBaseline.

struct CudnnBaseline::Impl {
  // Members are destroyed in reverse order: plans and descriptors before the handle.
  Problem problem;
  CudnnOptions options;
  CudnnMath math = CudnnMath::strict_fp32;
  CudnnConvShape shape;
  Handle handle;
  LegacyDescriptors legacy;
  GraphOperation operation;
  BackendDescriptor graph;

  struct Entry {
    CudnnRoute route;
    std::vector<std::string> sources;  // graph only
    std::string key;                   // graph only: "engine|knobs"
    std::string json;                  // graph only: the plan's serialization, when it has one
    BackendDescriptor plan;            // graph only, when supported
    mutable std::map<std::array<CUdeviceptr, 4>, BackendDescriptor> packs;
  };
  std::vector<Entry> entries;
  std::vector<CudnnRoute> routes;
  std::vector<std::string> warnings;
  bool fused = false;                     // the problem has an epilogue: the fused legacy call, no graph routes
  std::optional<DeviceBuffer> zero_bias;  // the fused call's bias when the epilogue has none
  // relu_on_load: every route first writes max(0, x) here (cudnnActivationForward) and convolves that.
  std::optional<DeviceBuffer> relu_input;
  ActivationDesc relu_pass;

  Impl(const Problem& p, const CudnnOptions& o)
      : problem(p),
        options(o),
        math(cudnn_math(p.precision)),
        shape(cudnn_conv_shape(p)),
        handle(),
        legacy(make_legacy_descriptors(p, shape)),
        operation(make_graph_operation(p, shape)),
        fused(!is_identity(p.epilogue)) {
    check_output_dims();
    if (p.relu_on_load) {
      relu_input.emplace(static_cast<std::size_t>(activation_elements(p)) *
                         static_cast<std::size_t>(element_bytes(p.precision)));
      CONVGEN_CUDNN_CHECK(
          cudnnSetActivationDescriptor(relu_pass.get(), CUDNN_ACTIVATION_RELU, CUDNN_PROPAGATE_NAN, 0.0));
      warnings.push_back(
          "relu_on_load: cuDNN's convolutions do not apply max(0, x) as they load; every route runs "
          "cudnnActivationForward (ReLU) into a scratch tensor first, as a caller without that fusion would, and its "
          "time includes that pass");
    }
    add_legacy_routes();
    if (fused) {
      if (!p.epilogue.bias) {
        const std::size_t bytes = static_cast<std::size_t>(p.k) * static_cast<std::size_t>(element_bytes(p.precision));
        zero_bias.emplace(bytes);
        std::vector<unsigned char> zeros(bytes, 0);
        zero_bias->upload_bytes(zeros.data(), bytes);
      }
      warnings.push_back(fmt::format(
          "graph API: the fused conv -> bias -> add -> activation engines are not built (epilogue {}): only the "
          "legacy fused call serves this problem",
          to_string(p.epilogue)));
      for (Entry& e : entries) routes.push_back(e.route);
      return;
    }
    build_graph();
    add_heuristic_routes(CUDNN_HEUR_MODE_A, GraphSource::heur_a);
    add_heuristic_routes(CUDNN_HEUR_MODE_B, GraphSource::heur_b);
    add_heuristic_routes(CUDNN_HEUR_MODE_FALLBACK, GraphSource::fallback);
    if (options.enumerate_engines) add_enumerated_routes();
    for (Entry& e : entries) {
      if (e.route.route == "graph") e.route.algo = graph_algo_name(e.route.index, e.sources);
      routes.push_back(e.route);
    }
  }

  void check_output_dims() const {
    const std::vector<int> dims = legacy_output_dims(legacy, static_cast<int>(shape.output.dims.size()));
    if (std::vector<std::int64_t>(dims.begin(), dims.end()) != shape.output.dims)
      throw ApiError(fmt::format("cuDNN derives output dims [{}] for problem {}, convgen [{}]", fmt::join(dims, ", "),
                                 problem_key(problem), fmt::join(shape.output.dims, ", ")));
  }

  void add_legacy_routes() {
    for (const auto& [algo, name] : EnumNames<LegacyAlgo>::table) {
      Entry e;
      e.route = {
          .route = fused ? "legacy_fused" : "legacy", .algo = std::string(name), .index = static_cast<int>(algo)};
      std::size_t workspace = 0;
      const Outcome outcome = attempt(cudnnGetConvolutionForwardWorkspaceSize(
          handle.get(), legacy.x.get(), legacy.w.get(), legacy.conv.get(), legacy.y.get(),
          static_cast<cudnnConvolutionFwdAlgo_t>(algo), &workspace));
      e.route.workspace_bytes = workspace;
      const std::string excluded = fused ? legacy_fused_exclusion(problem.epilogue) : "";
      if (!excluded.empty()) {
        e.route.status = excluded;
      } else if (!outcome.ok()) {
        e.route.status = cudnn_status_name(outcome.status);
        e.route.status_detail = outcome.detail;
      } else if (workspace > options.workspace_limit) {
        e.route.status = over_limit(workspace, options.workspace_limit);
      } else {
        e.route.status = "ok";
      }
      entries.push_back(std::move(e));
    }
  }

  void build_graph() {
    graph = BackendDescriptor(CUDNN_BACKEND_OPERATIONGRAPH_DESCRIPTOR);
    cudnnBackendDescriptor_t op = operation.op.get();
    cudnnHandle_t h = handle.get();
    CONVGEN_SET_ATTR(graph, CUDNN_ATTR_OPERATIONGRAPH_OPS, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &op);
    // Deprecated since the handle is given at execution, but older cuDNN 9 releases still require it.
    CONVGEN_SET_ATTR(graph, CUDNN_ATTR_OPERATIONGRAPH_HANDLE, CUDNN_TYPE_HANDLE, 1, &h);
    CONVGEN_CUDNN_CHECK(cudnnBackendFinalize(graph.get()));
  }

  Entry* find(const std::string& key, const std::string& json) {
    for (Entry& e : entries) {
      if (e.route.route != "graph") continue;
      if (e.key == key || (!json.empty() && e.json == json)) return &e;
    }
    return nullptr;
  }

  // Adds a graph configuration, or names its source on the entry that already has it. `config` is a finalized
  // engine configuration, or empty with `failure` saying why there is none.
  void add_graph_config(const EngineInfo& engine, const std::string& knobs, const std::string& source,
                        const BackendDescriptor* config, const Outcome& failure) {
    const std::string key = fmt::format("{}|{}", engine.index, knobs);
    if (Entry* existing = find(key, "")) {
      existing->sources.push_back(source);
      return;
    }
    Entry e;
    e.key = key;
    e.sources = {source};
    e.route = {.route = "graph",
               .knobs = knobs,
               .numerical_notes = join_names(engine.numerical_notes, numerical_note_name),
               .behavior_notes = join_names(engine.behavior_notes, behavior_note_name),
               .index = engine.index};
    // Exclusion first: an engine the math mode rules out is listed as such whether or not it would build.
    if (std::string excluded = graph_exclusion(math, engine.numerical_notes); !excluded.empty()) {
      e.route.status = std::move(excluded);
    } else if (config == nullptr) {
      e.route.status = cudnn_status_name(failure.status);
      e.route.status_detail = failure.detail;
    } else {
      build_plan(e, *config);
      if (!e.json.empty()) {
        if (Entry* same = find("", e.json)) {
          same->sources.push_back(source);
          if (same->route.knobs.empty()) same->route.knobs = knobs;
          return;
        }
      }
    }
    entries.push_back(std::move(e));
  }

  void build_plan(Entry& e, const BackendDescriptor& config) {
    BackendDescriptor plan(CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR);
    cudnnHandle_t h = handle.get();
    cudnnBackendDescriptor_t cfg = config.get();
    CONVGEN_SET_ATTR(plan, CUDNN_ATTR_EXECUTION_PLAN_HANDLE, CUDNN_TYPE_HANDLE, 1, &h);
    CONVGEN_SET_ATTR(plan, CUDNN_ATTR_EXECUTION_PLAN_ENGINE_CONFIG, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &cfg);
    const Outcome outcome = attempt(cudnnBackendFinalize(plan.get()));
    if (!outcome.ok()) {
      e.route.status = cudnn_status_name(outcome.status);
      e.route.status_detail = outcome.detail;
      return;
    }
    std::int64_t workspace = 0, count = 0;
    CONVGEN_CUDNN_CHECK(cudnnBackendGetAttribute(plan.get(), CUDNN_ATTR_EXECUTION_PLAN_WORKSPACE_SIZE, CUDNN_TYPE_INT64,
                                                 1, &count, &workspace));
    e.route.workspace_bytes = static_cast<std::size_t>(workspace);
    e.json = plan_json(plan);
    if (e.route.workspace_bytes > options.workspace_limit) {
      e.route.status = over_limit(e.route.workspace_bytes, options.workspace_limit);
      return;
    }
    e.route.status = "ok";
    e.plan = std::move(plan);
  }

  void add_heuristic_routes(cudnnBackendHeurMode_t mode, GraphSource source) {
    std::vector<BackendDescriptor> configs;
    try {
      configs = heuristic_configs(graph, mode);
    } catch (const CudnnError& error) {
      warnings.push_back(fmt::format("heuristics {}: {}", source, error.what()));
      return;
    }
    for (std::size_t i = 0; i < configs.size(); ++i) {
      const std::string name = fmt::format("{} #{}", source, i);
      try {
        add_graph_config(read_config_engine(configs[i]), read_knobs(configs[i]), name, &configs[i], {});
      } catch (const CudnnError& error) {
        warnings.push_back(fmt::format("heuristics {}: {}", name, error.what()));
      }
    }
  }

  void add_enumerated_routes() {
    std::int64_t count = 0, n = 0;
    CONVGEN_CUDNN_CHECK(cudnnBackendGetAttribute(graph.get(), CUDNN_ATTR_OPERATIONGRAPH_ENGINE_GLOBAL_COUNT,
                                                 CUDNN_TYPE_INT64, 1, &n, &count));
    const std::string source(to_string(GraphSource::all));
    for (std::int64_t index = 0; index < count; ++index) {
      BackendDescriptor engine(CUDNN_BACKEND_ENGINE_DESCRIPTOR);
      cudnnBackendDescriptor_t graph_ptr = graph.get();
      CONVGEN_SET_ATTR(engine, CUDNN_ATTR_ENGINE_OPERATION_GRAPH, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &graph_ptr);
      CONVGEN_SET_ATTR(engine, CUDNN_ATTR_ENGINE_GLOBAL_INDEX, CUDNN_TYPE_INT64, 1, &index);
      if (const Outcome outcome = attempt(cudnnBackendFinalize(engine.get())); !outcome.ok()) {
        add_graph_config({.index = static_cast<int>(index)}, "", source, nullptr, outcome);
        continue;
      }
      const EngineInfo info = read_engine(engine);
      BackendDescriptor config(CUDNN_BACKEND_ENGINECFG_DESCRIPTOR);
      CONVGEN_SET_ATTR(config, CUDNN_ATTR_ENGINECFG_ENGINE, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, engine.address());
      if (const Outcome outcome = attempt(cudnnBackendFinalize(config.get())); !outcome.ok()) {
        add_graph_config(info, "", source, nullptr, outcome);
        continue;
      }
      add_graph_config(info, read_knobs(config), source, &config, {});
    }
  }

  const BackendDescriptor& variant_pack(const Entry& e, CUdeviceptr x, CUdeviceptr w, CUdeviceptr y,
                                        CUdeviceptr workspace) const {
    const std::array<CUdeviceptr, 4> key = {x, w, y, workspace};
    if (auto it = e.packs.find(key); it != e.packs.end()) return it->second;
    if (e.packs.size() >= kMaxCachedPacks) e.packs.clear();
    BackendDescriptor pack(CUDNN_BACKEND_VARIANT_PACK_DESCRIPTOR);
    std::array<void*, 3> pointers = {device_pointer(x), device_pointer(w), device_pointer(y)};
    const std::array<std::int64_t, 3> uids = {kUidX, kUidW, kUidY};
    void* workspace_ptr = device_pointer(workspace);
    CONVGEN_SET_ATTR(pack, CUDNN_ATTR_VARIANT_PACK_DATA_POINTERS, CUDNN_TYPE_VOID_PTR, 3, pointers.data());
    CONVGEN_SET_ATTR(pack, CUDNN_ATTR_VARIANT_PACK_UNIQUE_IDS, CUDNN_TYPE_INT64, 3, uids.data());
    CONVGEN_SET_ATTR(pack, CUDNN_ATTR_VARIANT_PACK_WORKSPACE, CUDNN_TYPE_VOID_PTR, 1, &workspace_ptr);
    CONVGEN_CUDNN_CHECK(cudnnBackendFinalize(pack.get()));
    return e.packs.emplace(key, std::move(pack)).first->second;
  }
};

CudnnBaseline::CudnnBaseline(const Problem& problem, const CudnnOptions& options) {
  cudnn_conv_shape(problem);  // an invalid problem is an InputError, device or not
  if (!cuda_available()) throw NoDeviceError("no CUDA device: " + no_device_reason());
  impl_ = std::make_unique<Impl>(problem, options);
}
CudnnBaseline::~CudnnBaseline() = default;
CudnnBaseline::CudnnBaseline(CudnnBaseline&& other) noexcept = default;
CudnnBaseline& CudnnBaseline::operator=(CudnnBaseline&& other) noexcept = default;

const Problem& CudnnBaseline::problem() const { return impl_->problem; }
CudnnMath CudnnBaseline::math() const { return impl_->math; }
const std::vector<CudnnRoute>& CudnnBaseline::routes() const { return impl_->routes; }
const std::vector<std::string>& CudnnBaseline::warnings() const { return impl_->warnings; }

std::size_t CudnnBaseline::max_workspace_bytes() const {
  std::size_t most = 0;
  for (const CudnnRoute& r : impl_->routes)
    if (r.supported()) most = std::max(most, r.workspace_bytes);
  return most;
}

void CudnnBaseline::launch(std::size_t route_index, CUdeviceptr x, CUdeviceptr w, CUdeviceptr y, CUdeviceptr workspace,
                           CUstream stream) const {
  launch(route_index, x, w, y, 0, 0, workspace, stream);
}

void CudnnBaseline::launch(std::size_t route_index, CUdeviceptr x, CUdeviceptr w, CUdeviceptr y, CUdeviceptr bias,
                           CUdeviceptr residual, CUdeviceptr workspace, CUstream stream) const {
  const Impl& impl = *impl_;
  const Epilogue& epilogue = impl.problem.epilogue;
  check_epilogue_pointers(impl.problem, {.bias = bias, .residual = residual});
  if (route_index >= impl.entries.size())
    throw InputError(
        fmt::format("cudnn route index {} out of range: the problem has {} routes", route_index, impl.entries.size()));
  const Impl::Entry& e = impl.entries[route_index];
  const CudnnRoute& route = impl.routes[route_index];
  if (!route.supported())
    throw InputError(fmt::format("cudnn route {} {} is not supported: {}", route.route, route.algo, route.status));
  if (route.workspace_bytes > 0 && workspace == 0)
    throw InputError(fmt::format("cudnn route {} {} needs a workspace of {} bytes, got none", route.route, route.algo,
                                 route.workspace_bytes));
  // CUstream and cudaStream_t are the same type.
  CONVGEN_CUDNN_CHECK(cudnnSetStream(impl.handle.get(), stream));
  if (impl.relu_input) {
    const float one = 1, zero = 0;
    CONVGEN_CUDNN_CHECK(cudnnActivationForward(impl.handle.get(), impl.relu_pass.get(), &one, impl.legacy.x.get(),
                                               device_pointer(x), &zero, impl.legacy.x.get(),
                                               device_pointer(impl.relu_input->ptr())));
    x = impl.relu_input->ptr();
  }
  if (route.route == "legacy_fused") {
    // y = act(alpha1 * conv + alpha2 * z + bias): z is the residual, or y itself with alpha2 = 0 (z may alias y).
    const float alpha1 = static_cast<float>(epilogue.alpha);
    const float alpha2 = reads_residual(epilogue) ? static_cast<float>(epilogue.beta) : 0.0f;
    const CUdeviceptr z = reads_residual(epilogue) ? residual : y;
    const CUdeviceptr b = epilogue.bias ? bias : impl.zero_bias->ptr();
    CONVGEN_CUDNN_CHECK(cudnnConvolutionBiasActivationForward(
        impl.handle.get(), &alpha1, impl.legacy.x.get(), device_pointer(x), impl.legacy.w.get(), device_pointer(w),
        impl.legacy.conv.get(), static_cast<cudnnConvolutionFwdAlgo_t>(route.index), device_pointer(workspace),
        route.workspace_bytes, &alpha2, impl.legacy.y.get(), device_pointer(z), impl.legacy.bias.get(),
        device_pointer(b), impl.legacy.activation.get(), impl.legacy.y.get(), device_pointer(y)));
    return;
  }
  if (route.route == "legacy") {
    const float alpha = 1, beta = 0;
    CONVGEN_CUDNN_CHECK(cudnnConvolutionForward(
        impl.handle.get(), &alpha, impl.legacy.x.get(), device_pointer(x), impl.legacy.w.get(), device_pointer(w),
        impl.legacy.conv.get(), static_cast<cudnnConvolutionFwdAlgo_t>(route.index), device_pointer(workspace),
        route.workspace_bytes, &beta, impl.legacy.y.get(), device_pointer(y)));
    return;
  }
  const BackendDescriptor& pack = impl.variant_pack(e, x, w, y, workspace);
  CONVGEN_CUDNN_CHECK(cudnnBackendExecute(impl.handle.get(), e.plan.get(), pack.get()));
}

}  // namespace convgen
