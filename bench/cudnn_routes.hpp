// cudnn_routes: every way cuDNN can compute a problem's forward convolution (the 8 legacy algorithms and the graph
// API's engine configurations), built once and ready to launch, for the benchmark's baseline.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <cuda.h>

#include "convgen/enum_names.hpp"
#include "convgen/problem.hpp"

namespace convgen {

// The math mode a baseline is held to; every row of a report says which. Derived from Problem::precision.
enum class CudnnMath {
  strict_fp32,  // fp32: FMA only (legacy CUDNN_FMA_MATH; graph engines with tensor-core notes excluded)
  tf32,         // fp32 data, tensor cores in TF32 allowed (legacy CUDNN_DEFAULT_MATH; every engine)
  tensor_op,    // fp16/bf16 data, fp32 accumulation, tensor cores (legacy CUDNN_TENSOR_OP_MATH; every engine)
};

template <>
struct EnumNames<CudnnMath> {
  static constexpr std::array table = {
      std::pair{CudnnMath::strict_fp32, std::string_view("strict_fp32")},
      std::pair{CudnnMath::tf32, std::string_view("tf32")},
      std::pair{CudnnMath::tensor_op, std::string_view("tensor_op")},
  };
};

// Returns the math mode a precision is measured in: fp32 strict, tf32, fp16/bf16 tensor-op.
CudnnMath cudnn_math(Precision precision);

// The legacy API's forward algorithms, in cudnnConvolutionFwdAlgo_t order (the enum value is cuDNN's).
enum class LegacyAlgo {
  implicit_gemm,
  implicit_precomp_gemm,
  gemm,
  direct,
  fft,
  fft_tiling,
  winograd,
  winograd_nonfused,
};

template <>
struct EnumNames<LegacyAlgo> {
  static constexpr std::array table = {
      std::pair{LegacyAlgo::implicit_gemm, std::string_view("IMPLICIT_GEMM")},
      std::pair{LegacyAlgo::implicit_precomp_gemm, std::string_view("IMPLICIT_PRECOMP_GEMM")},
      std::pair{LegacyAlgo::gemm, std::string_view("GEMM")},
      std::pair{LegacyAlgo::direct, std::string_view("DIRECT")},
      std::pair{LegacyAlgo::fft, std::string_view("FFT")},
      std::pair{LegacyAlgo::fft_tiling, std::string_view("FFT_TILING")},
      std::pair{LegacyAlgo::winograd, std::string_view("WINOGRAD")},
      std::pair{LegacyAlgo::winograd_nonfused, std::string_view("WINOGRAD_NONFUSED")},
  };
};

// Where a graph-API engine configuration came from.
enum class GraphSource { heur_a, heur_b, fallback, all };

template <>
struct EnumNames<GraphSource> {
  static constexpr std::array table = {
      std::pair{GraphSource::heur_a, std::string_view("heur_a")},
      std::pair{GraphSource::heur_b, std::string_view("heur_b")},
      std::pair{GraphSource::fallback, std::string_view("fallback")},
      std::pair{GraphSource::all, std::string_view("all")},
  };
};

// One way cuDNN can compute the forward convolution of a problem.
struct CudnnRoute {
  std::string route;            // "legacy" or "graph"
  std::string algo;             // "IMPLICIT_PRECOMP_GEMM", or "engine 3 [heur_a #0, all]": unique per problem
  std::string knobs;            // "" for default knobs, else "TILE_SIZE=3,EDGE=1" in cuDNN's knob-type order
  std::string status;           // "ok"; cuDNN's status name; or "excluded: ..." / "workspace ..." (not tried)
  std::string status_detail;    // cuDNN's message for a failure, when it gave one
  std::string numerical_notes;  // graph engines: "TENSOR_CORE,DOWN_CONVERT_INPUTS"; "" for none or legacy
  std::string behavior_notes;   // graph engines: "RUNTIME_COMPILATION,..."
  int index = -1;               // legacy: the cudnnConvolutionFwdAlgo_t value; graph: the engine's global index
  std::size_t workspace_bytes = 0;

  bool supported() const { return status == "ok"; }
  bool operator==(const CudnnRoute&) const = default;
};

// Limits on the routes a baseline builds.
struct CudnnOptions {
  // Routes needing more workspace are listed with status "workspace ..." and not built (FFT can ask for GiBs).
  std::size_t workspace_limit = std::size_t{4} << 30;
  // Also build every engine index of the operation graph with default knobs (heuristics miss winning engines).
  bool enumerate_engines = true;
  bool operator==(const CudnnOptions&) const = default;
};

// Why cuDNN's fused call cannot serve an epilogue ("" when it can): cudnnConvolutionBiasActivationForward computes
// act(alpha1 * conv + alpha2 * z + bias) with act relu or identity only.
std::string legacy_fused_exclusion(const Epilogue& epilogue);

// The cuDNN routes of one problem: owns the handle, the legacy descriptors and the finalized graph plans.
// A problem with an epilogue (not the identity) is served by the fused legacy call,
// cudnnConvolutionBiasActivationForward, for each of the 8 algorithms (route "legacy_fused"; relu6 and clip listed
// unsupported, see legacy_fused_exclusion); the graph API's fused conv -> bias -> add -> activation engines are not
// built yet (a warning says so) and no graph route is listed for such a problem.
// Routes are listed in a fixed order: the 8 legacy algorithms (always, with their status), then graph
// configurations in order of first appearance in heuristics A, B, the fallback list and the enumeration; a
// configuration offered by several sources appears once, with every source named in `algo`.
// A problem that applies max(0, x) on load (relu_on_load), which no cuDNN convolution does, is served as a caller
// without that fusion would: each launch runs cudnnActivationForward into a scratch tensor, then the route on it.
//   Context context(0);
//   CudnnBaseline cudnn(problem);
//   for (std::size_t i = 0; i < cudnn.routes().size(); ++i)
//     if (cudnn.routes()[i].supported()) cudnn.launch(i, x, w, y, workspace, stream);
class CudnnBaseline {
 public:
  // Builds every route. A CUDA context must be current on this thread (runtime/module.hpp Context). Throws
  // NoDeviceError without a CUDA device, InputError for an invalid problem, CudnnError when cuDNN fails a call
  // that does not depend on the route (handle, descriptors, operation graph).
  explicit CudnnBaseline(const Problem& problem, const CudnnOptions& options = {});
  ~CudnnBaseline();
  CudnnBaseline(CudnnBaseline&& other) noexcept;
  CudnnBaseline& operator=(CudnnBaseline&& other) noexcept;
  CudnnBaseline(const CudnnBaseline&) = delete;
  CudnnBaseline& operator=(const CudnnBaseline&) = delete;

  const Problem& problem() const;
  CudnnMath math() const;
  const std::vector<CudnnRoute>& routes() const;
  // What went wrong on the way without invalidating the rest, e.g. "heuristics heur_b: CUDNN_STATUS_..." .
  const std::vector<std::string>& warnings() const;

  // Enqueues route `route_index` on `stream`: y = conv(x, w), with the route's own workspace size (`workspace` must
  // hold workspace_bytes, and may be 0 when that is 0). Pointers are in the problem's layout and must be 16-byte
  // aligned. Throws InputError for a bad index or an unsupported route, CudnnError when cuDNN refuses the launch
  // (some algorithms pass every query and fail only here: the caller marks the route unsupported).
  void launch(std::size_t route_index, CUdeviceptr x, CUdeviceptr w, CUdeviceptr y, CUdeviceptr workspace,
              CUstream stream) const;
  // The same with the bias (K values) and residual z (the output's shape) the problem's epilogue reads (0 for one it
  // does not read: the fused call then gets K zeros for the bias, and y as z with alpha2 = 0). Throws InputError
  // when the epilogue reads one whose pointer is 0.
  void launch(std::size_t route_index, CUdeviceptr x, CUdeviceptr w, CUdeviceptr y, CUdeviceptr bias,
              CUdeviceptr residual, CUdeviceptr workspace, CUstream stream) const;

  // The largest workspace of any supported route (0 when none needs one).
  std::size_t max_workspace_bytes() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// Returns the version of the cuDNN library loaded, e.g. "9.14.0" (no GPU needed).
std::string cudnn_version();

// ---- Pieces of the above, exposed for tests; none needs a GPU.

// A tensor as cuDNN takes it: dims always in N C (D) H W order (filter: K C/g (T) R S); the strides give the layout.
struct CudnnTensorShape {
  std::vector<std::int64_t> dims;
  std::vector<std::int64_t> strides;
  bool operator==(const CudnnTensorShape&) const = default;
};

// A problem in cuDNN's terms: 1-D problems become 2-D with H = R = 1, 2-D stay 2-D, 3-D stay 3-D.
struct CudnnConvShape {
  CudnnTensorShape activation;
  CudnnTensorShape filter;
  CudnnTensorShape output;
  std::vector<std::int64_t> padding;  // per spatial dim, (D) H W; the same before and after
  std::vector<std::int64_t> stride;
  std::vector<std::int64_t> dilation;
  bool operator==(const CudnnConvShape&) const = default;
};

// Returns the problem in cuDNN's terms. Throws InputError for an invalid problem.
CudnnConvShape cudnn_conv_shape(const Problem& problem);

// Builds the legacy tensor, filter and convolution descriptors and returns the output dims cuDNN derives from
// them (N K (O) P Q), to check the descriptors agree with convgen's output_dims.
std::vector<int> cudnn_legacy_output_dims(const Problem& problem);

// Builds and finalizes the graph API's X, W, Y tensors, convolution and forward operation; throws CudnnError
// when cuDNN rejects them.
void cudnn_check_graph_operation(const Problem& problem);

// Names of cuDNN backend enum values without their prefix ("TENSOR_CORE", "RUNTIME_COMPILATION", "TILE_SIZE");
// a value this build does not know is written as its number ("NOTE_12", "KNOB_50").
std::string numerical_note_name(int note);
std::string behavior_note_name(int note);
std::string knob_name(int knob_type);

// Writes knob choices as "TILE_SIZE=3,EDGE=1", ordered by knob type; "" for none.
std::string format_knobs(std::vector<std::pair<int, std::int64_t>> choices);

// Returns why a graph engine with these numerical notes must not be used in `math` ("" when it may): strict fp32
// excludes tensor-core and down-converting engines.
std::string graph_exclusion(CudnnMath math, const std::vector<int>& numerical_notes);

// Names a graph route by its engine and every source that offered it: "engine 3 [heur_a #0, heur_b #2, all]".
std::string graph_algo_name(int engine, const std::vector<std::string>& sources);

}  // namespace convgen
