// conv_kernel: renders and compiles a convolution kernel through the JIT cache, loads it and runs its launch plan.
#include "conv/conv_kernel.hpp"

#include <algorithm>
#include <array>
#include <atomic>
#include <charconv>
#include <cstdlib>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <span>
#include <sstream>
#include <string_view>

#include <fmt/format.h>

#include "conv/plan_passes.hpp"
#include "convgen/error.hpp"
#include "generator/render.hpp"
#include "runtime/driver.hpp"
#include "runtime/module.hpp"

namespace convgen {

Program to_program(const KernelSource& source) {
  Program program{.name = source.file_name, .source = source.text, .headers = {}};
  for (const std::string& header : source.headers) program.headers.emplace_back(header, template_text(header));
  return program;
}

namespace {

std::atomic<bool>& early_launch_switch() {
  static std::atomic<bool> enabled = [] {
    const char* value = std::getenv("CONVGEN_EARLY_LAUNCH");
    return value == nullptr || std::string_view(value) != "0";
  }();
  return enabled;
}

}  // namespace

bool early_launch_enabled() { return early_launch_switch().load(std::memory_order_relaxed); }

void set_early_launch(bool enabled) { early_launch_switch().store(enabled, std::memory_order_relaxed); }

std::optional<int> parse_smem_carveout(const char* value) {
  if (value == nullptr || *value == '\0') return std::nullopt;
  const std::string_view text(value);
  int percent = -1;
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), percent);
  if (error != std::errc() || end != text.data() + text.size() || percent < 0 || percent > 100)
    throw InputError(fmt::format("CONVGEN_SMEM_CARVEOUT: expected a percentage from 0 to 100, got '{}'", text));
  return percent;
}

std::optional<int> smem_carveout_from_environment() {
  static const std::optional<int> carveout = parse_smem_carveout(std::getenv("CONVGEN_SMEM_CARVEOUT"));
  return carveout;
}

std::string entry_symbol(const BuiltKernel& kernel, const std::string& suffix) {
  return suffix.empty() ? kernel.source.entry : kernel.source.entry + "_" + suffix;
}

namespace {

// The options CONVGEN_NVRTC_OPTIONS adds (split at spaces), read once: a way to try an NVRTC option on every kernel
// (`-lineinfo`, say) without a rebuild. They are part of the JIT cache's key like every option.
const std::vector<std::string>& extra_options_from_environment() {
  static const std::vector<std::string> options = [] {
    std::vector<std::string> list;
    const char* text = std::getenv("CONVGEN_NVRTC_OPTIONS");
    std::istringstream words(text != nullptr ? text : "");
    for (std::string word; words >> word;) list.push_back(word);
    return list;
  }();
  return options;
}

}  // namespace

CompileOptions kernel_compile_options(const std::string& arch) {
  CompileOptions options{.arch = arch, .extra = {"--minimal"}};
  const std::vector<std::string>& extra = extra_options_from_environment();
  options.extra.insert(options.extra.end(), extra.begin(), extra.end());
  return options;
}

namespace {

// The name build_kernel keeps a kernel under in its JIT cache (JitCache::remember): everything its source, plan and
// cubin depend on, exactly (the problem's key, and the numbers the key rounds or leaves out: the expected sparsity,
// which it holds as a bucket, and the epilogue's, which it drops where they are defaults or unused, -0 among them;
// the kernel's name; the compile options), or nothing when those do not decide them: a problem that carries its
// filter's values (weight_sparse bakes them into the code; the key holds their pattern only), or templates read
// from CONVGEN_TEMPLATE_DIR (files that may change while the process runs).
std::optional<std::string> remembered_kernel_id(const Problem& problem, const KernelSpec& spec,
                                                const CompileOptions& options) {
  if (problem.weights.values || templates_from_folder()) return std::nullopt;
  const Epilogue& e = problem.epilogue;
  return fmt::format("built_kernel|{}|{}|{} {} {} {}|{}|{}|{}", problem_key(problem), problem.act_sparsity, e.alpha,
                     e.beta, e.clip_lo, e.clip_hi, kernel_name(spec), options.arch, fmt::join(options.extra, " "));
}

}  // namespace

BuiltKernel build_kernel(const Problem& problem, const KernelSpec& spec, const Gpu& gpu, JitCache& cache) {
  if (auto reason = check_support(problem, gpu, spec))
    throw InputError(fmt::format("{} does not serve {}: {}", kernel_name(spec), problem_key(problem), *reason));
  const CompileOptions options = kernel_compile_options(compile_arch(spec, gpu));
  const std::optional<std::string> id = remembered_kernel_id(problem, spec, options);
  if (id)
    if (const std::shared_ptr<const BuiltKernel> kept = cache.recall<BuiltKernel>(*id)) return *kept;
  const Family& f = family(spec.family);
  BuiltKernel kernel{.problem = problem,
                     .spec = spec,
                     .source = f.render(problem, spec),
                     .cubin = {},
                     .plan = plan_for(problem, spec)};
  kernel.cubin = cache.get_or_compile(to_program(kernel.source), options);
  // A module with several entries (a setup or reduce pass): the report that matters to the cost model and the spill
  // checks is the main entry's, wherever ptxas printed it.
  const std::map<std::string, PtxasReport>& reports = kernel.cubin.entry_reports;
  if (const auto main = reports.find(kernel.source.entry); main != reports.end()) kernel.cubin.report = main->second;
  if (id) {
    auto kept = std::make_shared<BuiltKernel>(kernel);
    kept->cubin.compile_ms = 0;  // as the cache's own copies: a kernel built again was not compiled
    cache.remember<BuiltKernel>(*id, std::move(kept));
  }
  return kernel;
}

std::vector<BuildOutcome> build_kernels(std::span<const BuildRequest> requests, const Gpu& gpu, JitCache& cache,
                                        ThreadPool& pool, const std::function<void(std::size_t)>& on_done) {
  // An architecture this NVRTC cannot compile for fails every kernel alike: said once, before any is built.
  std::set<std::string> archs;
  for (const BuildRequest& request : requests) archs.insert(compile_arch(request.spec, gpu));
  for (const std::string& arch : archs) check_nvrtc_arch(arch);
  std::vector<std::future<BuildOutcome>> futures;
  futures.reserve(requests.size());
  for (const BuildRequest& request : requests)
    futures.push_back(pool.submit([&gpu, &cache, request]() -> BuildOutcome {
      try {
        return build_kernel(request.problem, request.spec, gpu, cache);
      } catch (...) {
        return std::current_exception();
      }
    }));
  std::vector<BuildOutcome> outcomes;
  outcomes.reserve(requests.size());
  for (std::size_t i = 0; i < futures.size(); ++i) {
    outcomes.push_back(futures[i].get());
    if (on_done) on_done(i);
  }
  return outcomes;
}

void check_epilogue_pointers(const Problem& problem, const EpiloguePointers& epilogue) {
  if (problem.epilogue.bias && epilogue.bias == 0)
    throw InputError(
        fmt::format("{}: its epilogue adds a bias (K values): the bias pointer is null", problem_key(problem)));
  if (reads_residual(problem.epilogue) && epilogue.residual == 0)
    throw InputError(fmt::format("{}: its epilogue adds a residual (the output's shape): the residual pointer is null",
                                 problem_key(problem)));
}

// The plan's by-value tensor maps as last encoded, for each PlanTensorMap the kAddresses addresses it was last encoded
// over: a call with one of those tensors reuses its map (an encode costs host time on every call otherwise), as
// a network's activations do, which take turns in a few buffers, and a benchmark's rotated buffer sets.
class TensorMapCache {
 public:
  explicit TensorMapCache(std::size_t count) : maps_(count) {}
  // Map `index` of `plan` over the tensor at `base`.
  CUtensorMap get(const LaunchPlan& plan, std::size_t index, CUdeviceptr base, const std::string& where);

 private:
  static constexpr std::size_t kAddresses = 8;
  struct Encoded {
    CUdeviceptr base = 0;
    CUtensorMap map{};
  };
  // Per map, the most recently used first.
  std::vector<std::array<Encoded, kAddresses>> maps_;
  std::mutex mutex_;
};

struct ConvLauncher::Loaded {
  Module module;
  std::map<std::string, Kernel> kernels;  // by entry suffix
  struct Prepared {
    DeviceBuffer buffer;
  };
  std::map<CUdeviceptr, Prepared> persistent;  // by the filter prepared into it
  // The plan passes (plan_passes.hpp), where the plan has a relu step or a zero step that launches the zero pass.
  std::optional<Module> passes;
  std::optional<Kernel> zero_kernel;  // where zero steps launch the zero pass (else they memset)
  std::optional<Kernel> relu_kernel;  // where the plan has a relu step
  std::unique_ptr<TensorMapCache> tensor_maps;
};

ConvLauncher::ConvLauncher(const BuiltKernel& kernel) : kernel_(kernel) {
  loaded_ =
      std::make_unique<Loaded>(Loaded{.module = Module(kernel.cubin, kernel.source.entry),
                                      .tensor_maps = std::make_unique<TensorMapCache>(kernel.plan.tensor_maps.size())});
  const auto has = [&](LaunchStep::Kind kind) {
    for (const auto* steps : {&kernel.plan.setup, &kernel.plan.run})
      for (const LaunchStep& s : *steps)
        if (s.kind == kind) return true;
    return false;
  };
  const bool zero_pass = has(LaunchStep::Kind::zero) && zero_step_by_kernel();
  const bool relu_pass = has(LaunchStep::Kind::relu);
  if (zero_pass || relu_pass) loaded_->passes.emplace(plan_passes_cubin(kernel.cubin.arch), "convgen_plan_passes.cu");
  if (zero_pass) loaded_->zero_kernel.emplace(loaded_->passes->kernel(kZeroPassEntry));
  if (relu_pass) loaded_->relu_kernel.emplace(loaded_->passes->kernel(relu_pass_entry(kernel.problem.precision)));
  const std::optional<int> carveout = smem_carveout_from_environment();
  for (const auto* steps : {&kernel.plan.setup, &kernel.plan.run})
    for (const LaunchStep& step : *steps) {
      if (step.kind != LaunchStep::Kind::kernel || loaded_->kernels.contains(step.entry_suffix)) continue;
      Kernel function = loaded_->module.kernel(entry_symbol(kernel, step.entry_suffix));
      if (step.geometry.dynamic_smem_bytes > 48 * 1024)
        function.set_max_dynamic_smem(static_cast<int>(step.geometry.dynamic_smem_bytes));
      if (carveout) function.set_preferred_smem_carveout(*carveout);
      loaded_->kernels.emplace(step.entry_suffix, std::move(function));
    }
}

ConvLauncher::~ConvLauncher() = default;

namespace {

// The device pointers a plan's steps bind by name. `activation` is the caller's: kernel steps read the plan's
// activation_buffer in its place where it names one (the relu step fills it from the caller's).
struct Bindings {
  const BuiltKernel& kernel;
  CUdeviceptr activation = 0, filter = 0, output = 0, workspace = 0, persistent = 0;
  EpiloguePointers epilogue;
  TensorMapCache* tensor_maps = nullptr;

  CUdeviceptr resolve(std::string_view name) const {
    if (name == "activation")
      return kernel.plan.activation_buffer.empty() ? activation : resolve(kernel.plan.activation_buffer);
    if (name == "bias") return epilogue.bias;
    if (name == "residual") return epilogue.residual;
    if (name == "filter") return filter;
    if (name == "output") return output;
    if (name == "workspace") return workspace;
    const std::string buffer(name);
    const PlanBuffer* b = kernel.plan.find(buffer);
    if (!b)
      throw Error(
          fmt::format("{}: no buffer '{}' in the launch plan for an entry parameter", kernel.source.entry, name));
    return (b->persistent ? persistent : workspace) + static_cast<CUdeviceptr>(kernel.plan.offset_of(buffer));
  }

  std::int64_t bytes_of(std::string_view name) const {
    if (name == "output") return output_elements(kernel.problem) * element_bytes(kernel.problem.precision);
    const PlanBuffer* b = kernel.plan.find(std::string(name));
    if (!b)
      throw Error(
          fmt::format("{}: no buffer '{}' in the launch plan for a zero or relu step", kernel.source.entry, name));
    return b->bytes;
  }

  // The by-value tensor map the entry parameter g_<map.name> takes: `map` encoded over the call's tensor, or zeros
  // where the kernel never reads it.
  CUtensorMap tensor_map(const PlanTensorMap& map) const;
};

const EntryDecl& entry_decl(const BuiltKernel& kernel, const std::string& suffix) {
  if (const EntryDecl* e = family(kernel.spec.family).interface().find_entry(suffix)) return *e;
  throw Error(fmt::format("{}: the template declares no entry '{}'", kernel.source.entry, suffix));
}

// The CUtensorMap of `spec` over the tensor at `base` (cuTensorMapEncodeTiled). TMA needs a 16-byte-aligned base and
// strides that are multiples of 16 bytes: an unaligned base (a tensor inside a larger allocation) is refused here.
CUtensorMap encode_tensor_map(const TensorMapSpec& spec, CUdeviceptr base, std::string_view tensor,
                              const std::string& where) {
  if (base % 16 != 0)
    throw InputError(fmt::format("{}: its {} is read by TMA, which needs a 16-byte-aligned address; got 0x{:x}", where,
                                 tensor, base));
  const CUtensorMapDataType type = spec.type == TensorMapSpec::Type::float32    ? CU_TENSOR_MAP_DATA_TYPE_FLOAT32
                                   : spec.type == TensorMapSpec::Type::bfloat16 ? CU_TENSOR_MAP_DATA_TYPE_BFLOAT16
                                                                                : CU_TENSOR_MAP_DATA_TYPE_FLOAT16;
  cuuint64_t dims[5];
  cuuint64_t strides[4];
  cuuint32_t box[5];
  cuuint32_t element_strides[5];
  for (int d = 0; d < spec.rank; ++d) {
    dims[d] = static_cast<cuuint64_t>(spec.dims[static_cast<std::size_t>(d)]);
    box[d] = spec.box[static_cast<std::size_t>(d)];
    element_strides[d] = spec.element_strides[static_cast<std::size_t>(d)];
    if (d > 0) strides[d - 1] = static_cast<cuuint64_t>(spec.strides[static_cast<std::size_t>(d - 1)]);
  }
  CUtensorMap map;
  const CUtensorMapSwizzle swizzle = spec.swizzle_128b ? CU_TENSOR_MAP_SWIZZLE_128B : CU_TENSOR_MAP_SWIZZLE_NONE;
  const CUresult result = spec.im2col
                              ? driver().cuTensorMapEncodeIm2col(
                                    &map, type, static_cast<cuuint32_t>(spec.rank), reinterpret_cast<void*>(base), dims,
                                    strides, spec.lower_corner.data(), spec.upper_corner.data(), spec.channels,
                                    spec.pixels, element_strides, CU_TENSOR_MAP_INTERLEAVE_NONE, swizzle,
                                    CU_TENSOR_MAP_L2_PROMOTION_L2_128B, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE)
                              : driver().cuTensorMapEncodeTiled(
                                    &map, type, static_cast<cuuint32_t>(spec.rank), reinterpret_cast<void*>(base), dims,
                                    strides, box, element_strides, CU_TENSOR_MAP_INTERLEAVE_NONE, swizzle,
                                    CU_TENSOR_MAP_L2_PROMOTION_L2_128B, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
  if (result != CUDA_SUCCESS)
    throw ApiError(fmt::format("{}: cuTensorMapEncode{} of its tensor map ({}-D, dims {}, box {}) failed: {}", where,
                               spec.im2col ? "Im2col" : "Tiled", spec.rank,
                               fmt::join(std::span(spec.dims).first(static_cast<std::size_t>(spec.rank)), " x "),
                               fmt::join(std::span(spec.box).first(static_cast<std::size_t>(spec.rank)), " x "),
                               cu_error_text(result)));
  return map;
}

CUtensorMap Bindings::tensor_map(const PlanTensorMap& map) const {
  if (map.tensor.empty()) return CUtensorMap{};
  const CUdeviceptr base = resolve(map.tensor);
  if (base == 0 || tensor_maps == nullptr)
    throw Error(fmt::format("{}: g_{} is a tensor map of the {}, which only a call's kernel steps have",
                            kernel.source.entry, map.name, map.tensor));
  return tensor_maps->get(kernel.plan, static_cast<std::size_t>(&map - kernel.plan.tensor_maps.data()), base,
                          kernel.source.entry);
}

// `zero_kernel`: the zero pass that runs zero steps, where it is loaded; a memset where not. `relu_kernel`: the
// relu pass of the plan's relu steps.
void run_steps(const std::vector<LaunchStep>& steps, const std::map<std::string, Kernel>& kernels,
               const std::optional<Kernel>& zero_kernel, const std::optional<Kernel>& relu_kernel, const Bindings& bind,
               CUstream stream) {
  for (const LaunchStep& step : steps) {
    if (step.kind == LaunchStep::Kind::relu) {
      if (!relu_kernel || bind.activation == 0)
        throw Error(fmt::format("{}: a relu step runs on every call, with the caller's activation; not in a setup",
                                bind.kernel.source.entry));
      const std::int64_t bytes = bind.bytes_of(step.buffer);
      CUdeviceptr in = bind.activation;
      CUdeviceptr out = bind.resolve(step.buffer);
      auto count = static_cast<unsigned long long>(bytes);
      std::array<void*, 3> args = {&in, &out, &count};
      convgen::launch(*relu_kernel,
                      relu_pass_config(bytes, has_early_launch(bind.kernel.cubin.arch) && early_launch_enabled()), args,
                      stream);
      continue;
    }
    if (step.kind == LaunchStep::Kind::zero) {
      const std::int64_t bytes = bind.bytes_of(step.buffer);
      if (zero_kernel) {
        CUdeviceptr address = bind.resolve(step.buffer);
        auto count = static_cast<unsigned long long>(bytes);
        std::array<void*, 2> args = {&address, &count};
        convgen::launch(*zero_kernel,
                        zero_pass_config(bytes, has_early_launch(bind.kernel.cubin.arch) && early_launch_enabled()),
                        args, stream);
      } else {
        CONVGEN_CU_CHECK(
            driver().cuMemsetD8Async(bind.resolve(step.buffer), 0, static_cast<std::size_t>(bytes), stream));
      }
      continue;
    }
    // Each parameter a pointer (a tensor or a buffer), or a tensor map passed by value.
    const EntryDecl& entry = entry_decl(bind.kernel, step.entry_suffix);
    std::vector<CUdeviceptr> pointers(entry.args.size());
    std::vector<CUtensorMap> maps;
    maps.reserve(entry.args.size());  // never reallocated: args point into it
    std::vector<void*> args;
    for (std::size_t a = 0; a < entry.args.size(); ++a) {
      const std::string name(entry.args[a].name.substr(2));  // drop "g_"
      if (const PlanTensorMap* map = bind.kernel.plan.find_map(name)) {
        maps.push_back(bind.tensor_map(*map));
        args.push_back(&maps.back());
      } else {
        pointers[a] = bind.resolve(name);
        args.push_back(&pointers[a]);
      }
    }
    const LaunchGeometry& g = step.geometry;
    convgen::launch(kernels.at(step.entry_suffix),
                    {.grid = g.grid,
                     .block = g.block,
                     .dynamic_smem_bytes = g.dynamic_smem_bytes,
                     .early = launches_early(step, bind.kernel.cubin.arch) && early_launch_enabled()},
                    args, stream);
  }
}

}  // namespace

CUtensorMap TensorMapCache::get(const LaunchPlan& plan, std::size_t index, CUdeviceptr base, const std::string& where) {
  const PlanTensorMap& map = plan.tensor_maps.at(index);
  const std::lock_guard<std::mutex> lock(mutex_);
  std::array<Encoded, kAddresses>& recent = maps_.at(index);
  auto found = std::find_if(recent.begin(), recent.end(), [base](const Encoded& e) { return e.base == base; });
  if (found == recent.end()) {  // encoded over `base` in place of the least recently used
    found = recent.end() - 1;
    found->map = encode_tensor_map(map.spec, base, map.tensor, where);
    found->base = base;
  }
  std::rotate(recent.begin(), found, found + 1);  // the most recently used first
  return recent.front().map;
}

void ConvLauncher::prepare(CUdeviceptr filter, CUstream stream) {
  if (kernel_.plan.setup.empty() && kernel_.plan.persistent_bytes() == 0) return;  // nothing to keep with the op
  auto found = loaded_->persistent.find(filter);
  if (found == loaded_->persistent.end()) {
    if (stream_capturing(stream))
      throw ApiError(fmt::format(
          "{}: the first prepare with the filter at 0x{:x} allocates its prepared copy, which a CUDA graph capture "
          "cannot record: prepare with this filter once before capturing (later prepares, captured or not, keep its "
          "buffers)",
          kernel_.source.entry, filter));
    found = loaded_->persistent
                .emplace(filter, Loaded::Prepared{.buffer = DeviceBuffer(static_cast<std::size_t>(
                                                      std::max<std::int64_t>(kernel_.plan.persistent_bytes(), 4)))})
                .first;
  }
  Loaded::Prepared& prepared = found->second;
  const Bindings bind{.kernel = kernel_,
                      .filter = filter,
                      .persistent = prepared.buffer.ptr(),
                      .tensor_maps = loaded_->tensor_maps.get()};
  run_steps(kernel_.plan.setup, loaded_->kernels, loaded_->zero_kernel, loaded_->relu_kernel, bind, stream);
}

bool ConvLauncher::prepared(CUdeviceptr filter) const {
  return kernel_.plan.setup.empty() || loaded_->persistent.contains(filter);
}

std::size_t ConvLauncher::prepared_count() const { return loaded_->persistent.size(); }

void ConvLauncher::launch(CUdeviceptr activation, CUdeviceptr filter, CUdeviceptr output, CUdeviceptr workspace,
                          CUstream stream, const EpiloguePointers& epilogue, CUdeviceptr prepared_from) const {
  // Before anything is enqueued: a tensor inside a larger allocation (a view with an offset) may not have the
  // alignment the kernel's wide loads and stores need.
  if (const std::string misaligned =
          misaligned_tensor(kernel_.plan, element_bytes(kernel_.problem.precision), activation, filter, output);
      !misaligned.empty())
    throw InputError(fmt::format("{}: {}", kernel_.source.entry, misaligned));
  CUdeviceptr persistent = 0;
  if (!kernel_.plan.setup.empty()) {
    const auto found = loaded_->persistent.find(prepared_from != 0 ? prepared_from : filter);
    if (found == loaded_->persistent.end())
      throw Error(
          fmt::format("{}: its launch plan has a one-time setup; call prepare(filter) before launch with "
                      "that filter",
                      kernel_.source.entry));
    persistent = found->second.buffer.ptr();
  }
  check_epilogue_pointers(kernel_.problem, epilogue);
  // A pointer the epilogue does not read is not passed on: the kernel never reads it, and null says so.
  const EpiloguePointers used{.bias = kernel_.problem.epilogue.bias ? epilogue.bias : 0,
                              .residual = reads_residual(kernel_.problem.epilogue) ? epilogue.residual : 0};
  const Bindings bind{.kernel = kernel_,
                      .activation = activation,
                      .filter = filter,
                      .output = output,
                      .workspace = workspace,
                      .persistent = persistent,
                      .epilogue = used,
                      .tensor_maps = loaded_->tensor_maps.get()};
  run_steps(kernel_.plan.run, loaded_->kernels, loaded_->zero_kernel, loaded_->relu_kernel, bind, stream);
}

}  // namespace convgen
