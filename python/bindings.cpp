// bindings: the convgen Python extension (convgen._convgen): problems, the context and its ops of
// include/convgen/convgen.hpp, and what a DLPack tensor says about itself. Tensors are checked against the problem in
// python/convgen/_tensors.py (one place for DLPack and __cuda_array_interface__ alike); ops run on device pointers.
#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/string_view.h>
#include <nanobind/stl/tuple.h>
#include <nanobind/stl/vector.h>

#include <cstdint>
#include <filesystem>
#include <string>
#include <tuple>
#include <vector>

#include "convgen/convgen.hpp"
#include "convgen/error.hpp"
#include "convgen/version.hpp"
#include "convgen/weights.hpp"

namespace nb = nanobind;
using namespace nb::literals;

namespace convgen {
namespace {

template <class E>
E parse_name(const std::string& text, const char* what) {
  if (const auto value = parse_enum<E>(text)) return *value;
  throw InputError(std::string(what) + ": unknown '" + text + "', expected one of " + enum_choices<E>());
}

// (d, h, w) from a tuple of 1, 2 or 3 ints (the innermost dims), the rest `fill`.
Dims3 dims_from(const std::vector<int>& v, int fill, const char* what) {
  if (v.empty() || v.size() > 3)
    throw InputError(std::string(what) + ": expected 1 to 3 extents (w; h, w; or d, h, w), got " +
                     std::to_string(v.size()));
  Dims3 d{fill, fill, fill};
  const std::size_t n = v.size();
  d.w = v[n - 1];
  if (n >= 2) d.h = v[n - 2];
  if (n == 3) d.d = v[0];
  return d;
}

std::vector<int> dims_to(const Dims3& d, int rank_) {
  if (rank_ == 1) return {d.w};
  if (rank_ == 2) return {d.h, d.w};
  return {d.d, d.h, d.w};
}

// The epilogue of Python's `epilogue` keyword or with_epilogue(): the text form, parse_epilogue's message prefixed
// with the keyword's name as the other keywords' messages are.
Epilogue parse_epilogue_keyword(const std::string& text) {
  try {
    return parse_epilogue(text);
  } catch (const InputError& e) {
    throw InputError(std::string("epilogue: ") + e.what());
  }
}

// Builds a problem from Python's keywords; the rank follows the layout (the extents' count must match it).
Problem make_problem(int n, int c, int k, const std::vector<int>& input, const std::vector<int>& filter,
                     const std::optional<std::vector<int>>& stride, const std::optional<std::vector<int>>& padding,
                     const std::optional<std::vector<int>>& dilation, int groups, const std::string& layout,
                     const std::string& precision, double act_sparsity, const std::string& epilogue,
                     bool relu_on_load) {
  Problem p;
  p.n = n;
  p.c = c;
  p.k = k;
  p.layout = parse_name<Layout>(layout, "layout");
  p.precision = parse_name<Precision>(precision, "precision");
  const int r = rank(p.layout);
  auto checked = [r](const std::vector<int>& v, const char* what) -> const std::vector<int>& {
    if (static_cast<int>(v.size()) != r)
      throw InputError(std::string(what) + ": " + std::to_string(v.size()) + " extents given, the " +
                       std::to_string(r) + "-D layout takes " + std::to_string(r));
    return v;
  };
  p.input = dims_from(checked(input, "input"), 1, "input");
  p.filter = dims_from(checked(filter, "filter"), 1, "filter");
  if (stride) p.stride = dims_from(checked(*stride, "stride"), 1, "stride");
  if (padding) p.padding = dims_from(checked(*padding, "padding"), 0, "padding");
  if (dilation) p.dilation = dims_from(checked(*dilation, "dilation"), 1, "dilation");
  p.groups = groups;
  p.act_sparsity = act_sparsity;
  p.epilogue = parse_epilogue_keyword(epilogue);
  p.relu_on_load = relu_on_load;
  if (const std::string why = validate(p); !why.empty()) throw InputError("invalid problem: " + why);
  return p;
}

// What a DLPack tensor (PyTorch, CuPy, JAX, NumPy) says about itself, without copying it: its data pointer, shape,
// strides in elements, dtype as (kind code, bits), device type and ordinal. The kind codes are DLPack's
// (0 int, 1 uint, 2 float, 4 bfloat); device type 2 is CUDA, 1 the CPU.
nb::tuple dlpack_info(nb::ndarray<nb::ro> array) {
  std::vector<std::int64_t> shape;
  std::vector<std::int64_t> strides;
  for (std::size_t i = 0; i < array.ndim(); ++i) {
    shape.push_back(array.shape(i));
    strides.push_back(array.stride(i));
  }
  const auto ptr = reinterpret_cast<std::uintptr_t>(array.data());
  return nb::make_tuple(ptr, shape, strides, nb::make_tuple(array.dtype().code, array.dtype().bits),
                        array.device_type(), array.device_id());
}

}  // namespace
}  // namespace convgen

NB_MODULE(_convgen, m) {
  using namespace convgen;
  m.doc() = "convgen's C++ API: problems, a context that chooses, builds and caches one kernel per problem, its ops";

  nb::exception<Error>(m, "Error", PyExc_RuntimeError);
  nb::exception<InputError>(m, "InputError", PyExc_ValueError);
  nb::exception<NoDeviceError>(m, "NoDeviceError", PyExc_RuntimeError);
  nb::exception<ApiError>(m, "ApiError", PyExc_RuntimeError);

  m.def(
      "version", [] { return std::string(build_version()); }, "convgen's version");
  m.def(
      "commit", [] { return std::string(build_commit()); }, "the commit the extension was built from");
  m.def(
      "default_cache_dir", [] { return default_cache_dir().string(); },
      "the JIT cache folder a context uses by default");
  m.def(
      "default_database", [] { return default_database().string(); },
      "the tuning database a context uses by default (the CLI's)");

  nb::class_<Problem>(m, "Problem", "One forward convolution: shape, layout, precision, expected activation sparsity")
      .def(nb::new_(&make_problem), "n"_a, "c"_a, "k"_a, "input"_a, "filter"_a, "stride"_a = nb::none(),
           "padding"_a = nb::none(), "dilation"_a = nb::none(), "groups"_a = 1, "layout"_a = "nchw",
           "precision"_a = "fp32", "act_sparsity"_a = 0.0, "epilogue"_a = "none", "relu_on_load"_a = false,
           "Problem(n, c, k, input, filter, stride=None, padding=None, dilation=None, groups=1, layout='nchw', "
           "precision='fp32', act_sparsity=0.0, epilogue='none', relu_on_load=False): extents as tuples of the "
           "layout's rank, (h, w) for nchw/nhwc; epilogue as text ('bias+add+relu': output = act(alpha*conv + "
           "beta*residual + bias)); relu_on_load: the kernel applies max(0, x) to the activation as it loads it "
           "(act_sparse kernels only); ValueError names what is wrong")
      .def_static(
          "from_key", [](const std::string& key) { return parse_problem_key(key); }, "key"_a,
          "parses a problem key (Problem.key())")
      .def_ro("n", &Problem::n)
      .def_ro("c", &Problem::c)
      .def_ro("k", &Problem::k)
      .def_ro("groups", &Problem::groups)
      .def_ro("act_sparsity", &Problem::act_sparsity)
      .def_ro("relu_on_load", &Problem::relu_on_load)
      .def_prop_ro("rank", [](const Problem& p) { return rank(p.layout); })
      .def_prop_ro("input", [](const Problem& p) { return dims_to(p.input, rank(p.layout)); })
      .def_prop_ro("filter", [](const Problem& p) { return dims_to(p.filter, rank(p.layout)); })
      .def_prop_ro("stride", [](const Problem& p) { return dims_to(p.stride, rank(p.layout)); })
      .def_prop_ro("padding", [](const Problem& p) { return dims_to(p.padding, rank(p.layout)); })
      .def_prop_ro("dilation", [](const Problem& p) { return dims_to(p.dilation, rank(p.layout)); })
      .def_prop_ro("output", [](const Problem& p) { return dims_to(output_dims(p), rank(p.layout)); })
      .def_prop_ro("layout", [](const Problem& p) { return std::string(to_string(p.layout)); })
      .def_prop_ro("precision", [](const Problem& p) { return std::string(to_string(p.precision)); })
      .def_prop_ro(
          "weight_pattern", [](const Problem& p) { return p.weights.pattern; },
          "16 hex digits of the filter's nonzero pattern, '' when the problem carries no filter")
      .def_prop_ro("weight_zero_fraction", &weight_zero_fraction)
      .def_prop_ro(
          "epilogue", [](const Problem& p) { return to_string(p.epilogue); },
          "the fused epilogue in its canonical text ('none', 'bias+relu', 'bias+add+relu', ...)")
      .def(
          "with_epilogue",
          [](const Problem& p, const std::string& text) {
            Problem q = p;
            q.epilogue = parse_epilogue_keyword(text);
            return q;
          },
          "epilogue"_a,
          "the same problem with another epilogue, as text: terms joined by '+', the activation last (alpha:A, bias, "
          "add, add:B, relu, relu6, clip:LO:HI), or 'none'")
      .def("key", &problem_key, "the canonical problem key, as in the tuning database")
      .def("describe", [](const Problem& p) { return describe(p); })
      .def("flops", &flops)
      .def("min_bytes", &min_bytes)
      .def("activation_elements", &activation_elements)
      .def("filter_elements", &filter_elements)
      .def("output_elements", &output_elements)
      .def(
          "with_weights",
          [](const Problem& p, nb::ndarray<const float, nb::c_contig, nb::device::cpu> values) {
            if (static_cast<std::int64_t>(values.size()) != filter_elements(p))
              throw InputError("with_weights: " + std::to_string(values.size()) + " values given, the filter (" +
                               describe(filter_shape(p)) + ") has " + std::to_string(filter_elements(p)));
            return with_weights(p, std::vector<float>(values.data(), values.data() + values.size()), "Python array");
          },
          "values"_a,
          "the problem carrying its filter (float32, C-contiguous, on the CPU, in the problem's filter layout): "
          "weight-sparse kernels bake its nonzero pattern")
      .def("__eq__", [](const Problem& a, const Problem& b) { return a == b; })
      .def("__hash__", [](const Problem& p) { return std::hash<std::string>()(problem_key(p)); })
      .def("__repr__", [](const Problem& p) { return "convgen.Problem('" + problem_key(p) + "')"; });

  nb::class_<ConvOp>(m, "ConvOp", nb::dynamic_attr(),
                     "One convolution with its kernel chosen, compiled and loaded; valid while its context lives")
      .def_prop_ro("problem", &ConvOp::problem, nb::rv_policy::reference_internal)
      .def_prop_ro("kernel_name", &ConvOp::kernel_name)
      .def_prop_ro("chosen_by", &ConvOp::source, "'database', 'tuned now' or 'cost model'")
      .def_prop_ro("needs_prepare", &ConvOp::needs_prepare)
      // Both only enqueue work (microseconds), so they keep the GIL as PyTorch's own launches do: releasing it would
      // let another Python thread take it, and taking it back can then wait for that thread's switch interval.
      .def(
          "run_pointers",
          [](const ConvOp& op, std::uintptr_t activation, std::uintptr_t filter, std::uintptr_t output,
             std::uintptr_t stream, std::uintptr_t bias, std::uintptr_t residual) {
            op.run(static_cast<CUdeviceptr>(activation), static_cast<CUdeviceptr>(filter),
                   static_cast<CUdeviceptr>(output), static_cast<CUdeviceptr>(bias), static_cast<CUdeviceptr>(residual),
                   reinterpret_cast<CUstream>(stream));
          },
          "activation"_a, "filter"_a, "output"_a, "stream"_a = 0, "bias"_a = 0, "residual"_a = 0,
          "enqueues the convolution on device pointers (already checked: convgen.ConvOp.run checks tensors); bias "
          "(K values) and residual (the output's shape) where the problem's epilogue reads them, else 0")
      .def(
          "prepare_pointer",
          [](const ConvOp& op, std::uintptr_t filter, std::uintptr_t stream) {
            op.prepare(static_cast<CUdeviceptr>(filter), reinterpret_cast<CUstream>(stream));
          },
          "filter"_a, "stream"_a = 0);

  nb::class_<ConvContext>(m, "ConvContext", "A device with its JIT cache, tuning database and policy, and its ops")
      .def(
          "__init__",
          [](ConvContext* self, int device, std::optional<std::string> cache_dir, std::optional<std::string> database,
             const std::string& policy, int tune_budget) {
            ContextOptions options;
            options.device = device;
            if (cache_dir) options.cache_dir = std::filesystem::path(*cache_dir);
            if (database) options.database = std::filesystem::path(*database);
            options.policy = parse_name<TuningPolicy>(policy, "policy");
            if (tune_budget < 0) throw InputError("tune_budget: " + std::to_string(tune_budget) + " is negative");
            options.tune_budget = tune_budget;
            new (self) ConvContext(options);
          },
          "device"_a = 0, "cache_dir"_a = nb::none(), "database"_a = nb::none(), "policy"_a = "tune_on_first_use",
          "tune_budget"_a = 10,
          "ConvContext(device=0, cache_dir=None, database=None, policy='tune_on_first_use', tune_budget=10); "
          "policy: 'database_only', 'cost_model_only' or 'tune_on_first_use'")
      .def(
          "conv",
          [](ConvContext& context, const Problem& problem) -> const ConvOp& {
            nb::gil_scoped_release release;  // building compiles and may tune: other Python threads go on
            return context.conv(problem);
          },
          "problem"_a, nb::rv_policy::reference_internal, "the op for a problem, built on first ask by the policy")
      .def(
          "prepare",
          [](ConvContext& context, const std::vector<Problem>& problems) {
            nb::gil_scoped_release release;  // compiles and tunes: other Python threads go on
            return context.prepare(problems);
          },
          "problems"_a,
          "builds the problems ahead of their first conv(): the kernels the policy's choices need compile at once "
          "(recorded bests; under cost_model_only the families' defaults), and under tune_on_first_use those "
          "without a record are tuned in one pipeline; returns how many were built now")
      .def(
          "affine_concat_pointers",
          [](ConvContext& context, const std::vector<std::uintptr_t>& inputs, const std::vector<int>& channels,
             std::uintptr_t output, std::uintptr_t scale, std::uintptr_t shift, int batch, std::int64_t pixels,
             const std::string& precision, bool channels_last, const std::string& act, float clip_lo, float clip_hi,
             std::uintptr_t stream) {
            AffineConcat pass{.channels = channels,
                              .output = output,
                              .scale = scale,
                              .shift = shift,
                              .batch = batch,
                              .pixels = pixels,
                              .precision = parse_name<Precision>(precision, "precision"),
                              .channels_last = channels_last,
                              .act = parse_name<Activation>(act, "act"),
                              .clip_lo = clip_lo,
                              .clip_hi = clip_hi};
            pass.inputs.assign(inputs.begin(), inputs.end());
            context.affine_concat(pass, reinterpret_cast<CUstream>(stream));
          },
          "inputs"_a, "channels"_a, "output"_a, "scale"_a, "shift"_a, "batch"_a, "pixels"_a, "precision"_a,
          "channels_last"_a, "act"_a, "clip_lo"_a = 0.0f, "clip_hi"_a = 0.0f, "stream"_a = 0,
          "enqueues output[:, c] = act(scale[c] * concat(inputs)[:, c] + shift[c]) (convgen/affine_concat.hpp) on "
          "device pointers: inputs contiguous, of channels[i] channels each, in the layout channels_last says; scale "
          "and shift fp32; act 'none', 'relu', 'relu6' or 'clip'")
      .def_prop_ro("device", [](const ConvContext& c) { return c.options().device; })
      .def_prop_ro("gpu_name", [](const ConvContext& c) { return c.gpu().name; })
      .def_prop_ro("policy", [](const ConvContext& c) { return std::string(to_string(c.options().policy)); })
      .def_prop_ro("database",
                   [](const ConvContext& c) {
                     return c.options().database ? c.options().database->string() : default_database().string();
                   })
      .def("stats", [](const ConvContext& c) {
        const ConvContext::Stats s = c.stats();
        nb::dict d;
        d["built"] = s.built;
        d["database_hits"] = s.database_hits;
        d["tuned"] = s.tuned;
        d["model_only"] = s.model_only;
        return d;
      });

  m.def(
      "compile_in_worker_processes",
      [](std::optional<std::string> worker) {
        std::optional<std::filesystem::path> path;
        if (worker) path = std::filesystem::path(*worker);
        const WorkerChoice choice = compile_in_worker_processes(path);
        return std::make_tuple(choice.worker ? std::optional<std::string>(choice.worker->string()) : std::nullopt,
                               choice.missing_reason);
      },
      "worker"_a = nb::none(),
      "compile this process's kernels in NVRTC worker processes from now on; returns (the worker used or None, why "
      "there is none)");
  m.def(
      "pointer_device", [](std::uintptr_t pointer) { return pointer_device(static_cast<CUdeviceptr>(pointer)); },
      "pointer"_a, "the CUDA device ordinal of a device pointer, or None (no driver, or an address it does not know)");
  m.def("dlpack_info", &dlpack_info, "tensor"_a,
        "(pointer, shape, strides in elements, (dtype code, bits), device type, device id) of a DLPack tensor");
}
