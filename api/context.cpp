// context: the public API's ConvContext and ConvOp: choose a kernel per problem by policy, build it once, run it.
#include "convgen/convgen.hpp"

#include <algorithm>
#include <future>
#include <map>
#include <mutex>
#include <set>

#include <fmt/format.h>

#include "api/build_ahead.hpp"
#include "conv/affine_concat.hpp"
#include "conv/conv_kernel.hpp"
#include "generator/kernel_spec.hpp"
#include "generator/launch_plan.hpp"
#include "measure/verify.hpp"
#include "runtime/compiler_processes.hpp"
#include "runtime/device.hpp"
#include "runtime/driver.hpp"
#include "runtime/jit_cache.hpp"
#include "runtime/module.hpp"
#include "runtime/paths.hpp"
#include "runtime/thread_pool.hpp"
#include "tuner/tuner.hpp"
#include "tuner/tuning_db.hpp"

namespace convgen {

std::filesystem::path default_cache_dir() { return default_jit_cache_dir(); }
std::filesystem::path default_database() { return TuningDb::default_path(); }

std::optional<int> pointer_device(CUdeviceptr pointer) {
  if (!cuda_available()) return std::nullopt;
  int ordinal = -1;
  if (driver().cuPointerGetAttribute(&ordinal, CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL, pointer) != CUDA_SUCCESS)
    return std::nullopt;
  return ordinal;
}

WorkerChoice compile_in_worker_processes(std::optional<std::filesystem::path> worker) {
  static std::mutex mutex;
  static std::optional<WorkerChoice> chosen;
  std::lock_guard lock(mutex);
  if (chosen) return *chosen;
  const NvrtcWorkerLookup lookup = find_nvrtc_worker(worker);
  chosen = WorkerChoice{.worker = lookup.worker, .missing_reason = lookup.missing_reason};
  // Never destroyed: it must outlive every ConvContext, whose compiles may still run while statics are destroyed.
  if (lookup.worker) new WorkerCompiles(usable_cores(), lookup.worker);
  return *chosen;
}

struct ConvOp::Impl {
  const Context* runtime_context;  // the device's primary context, owned by the ConvContext
  ChosenBy chosen_by;
  std::string kernel_name;
  ConvLauncher launcher;
  std::optional<DeviceBuffer> workspace;  // only for a kernel whose plan needs one
  std::mutex prepare_mutex;               // guards the launcher's prepared copies (one per filter)
};

ConvOp::ConvOp(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
ConvOp::~ConvOp() = default;

void ConvOp::prepare(CUdeviceptr filter, CUstream stream) const {
  impl_->runtime_context->make_current();
  const std::lock_guard lock(impl_->prepare_mutex);
  impl_->launcher.prepare(filter, stream);
}

bool ConvOp::needs_prepare() const { return !impl_->launcher.kernel().plan.setup.empty(); }

void ConvOp::run(CUdeviceptr activation, CUdeviceptr filter, CUdeviceptr output, CUstream stream) const {
  run(activation, filter, output, 0, 0, stream);
}

void ConvOp::run(CUdeviceptr activation, CUdeviceptr filter, CUdeviceptr output, CUdeviceptr bias, CUdeviceptr residual,
                 CUstream stream) const {
  // Before anything is enqueued: a missing operand is the caller's error, not a launch failure.
  check_epilogue_pointers(problem(), {.bias = bias, .residual = residual});
  impl_->runtime_context->make_current();
  const CUdeviceptr workspace = impl_->workspace ? impl_->workspace->ptr() : 0;
  if (!needs_prepare()) {
    impl_->launcher.launch(activation, filter, output, workspace, stream, {.bias = bias, .residual = residual});
    return;
  }
  // A filter first seen is prepared into a copy of its own (on the same stream, so in order); later runs with it,
  // between runs with other filters (modules sharing this op), read that copy without preparing again. The lock
  // also covers the launch, which looks the copy up while another thread may be adding one.
  const std::lock_guard lock(impl_->prepare_mutex);
  if (!impl_->launcher.prepared(filter)) impl_->launcher.prepare(filter, stream);
  impl_->launcher.launch(activation, filter, output, workspace, stream, {.bias = bias, .residual = residual});
}

void ConvOp::check_element_size(std::size_t bytes) const {
  const Precision precision = problem().precision;
  if (bytes != static_cast<std::size_t>(element_bytes(precision)))
    throw InputError(
        fmt::format("ConvOp::run: pointers to {}-byte elements given, the problem's precision {} takes "
                    "{}-byte elements",
                    bytes, precision, element_bytes(precision)));
}

const Problem& ConvOp::problem() const { return impl_->launcher.kernel().problem; }
const std::string& ConvOp::kernel_name() const { return impl_->kernel_name; }
std::string ConvOp::source() const { return std::string(to_string(impl_->chosen_by)); }
ChosenBy ConvOp::chosen_by() const { return impl_->chosen_by; }

struct ConvContext::Impl {
  ContextOptions options;
  Context runtime_context;
  Gpu gpu;
  std::filesystem::path database;
  JitCache cache;
  ThreadPool pool;

  mutable std::mutex mutex;  // guards ops and stats
  // One entry per problem asked for: ready, or being built by the thread that asked first.
  std::map<std::string, std::shared_future<std::shared_ptr<const ConvOp>>> ops;
  Stats stats;
  // Tuning times kernels on the GPU: two problems tuned at once would disturb each other's measurements.
  std::mutex tune_mutex;
  // affine_concat's programs loaded in this context, by (precision, vector width): every width of a precision at once.
  struct AffineConcatKernel {
    Module module;
    Kernel kernel;
  };
  std::mutex affine_concat_mutex;
  std::map<std::pair<int, int>, std::unique_ptr<AffineConcatKernel>> affine_concat_kernels;

  explicit Impl(ContextOptions opts)
      : options(std::move(opts)),
        runtime_context(options.device),  // first: NoDeviceError before any folder or file is created
        gpu(query_device(options.device)),
        database(options.database ? *options.database : default_database()),
        cache(options.cache_dir ? *options.cache_dir : default_cache_dir()) {}

  std::shared_ptr<const ConvOp> build(const Problem& problem);
  std::shared_ptr<const ConvOp> load(const Problem& problem, const KernelSpec& spec, ChosenBy chosen_by);
  std::shared_ptr<const ConvOp> load(const BuiltKernel& kernel, ChosenBy chosen_by);
  std::shared_ptr<const ConvOp> from_cost_model(const Problem& problem, TuningDb& db);
  // prepare() under tune_on_first_use: tunes the problems without a record in one pipeline.
  int tune_ahead(std::vector<const Problem*> todo);
  // prepare() of problems chosen as `choice` says (database_only: their records; cost_model_only: the defaults the
  // model ranks): compiles those kernels at once, then builds each problem's op as conv() would.
  int build_ahead(const std::vector<const Problem*>& todo, TuningPolicy choice);
  // Makes `op` the problem's operation unless conv() built one first (then false); counts it in the stats.
  bool add_ready(const Problem& problem, std::shared_ptr<const ConvOp> op);
  // Counts a built operation in the stats (under mutex).
  void count(const ConvOp& op);
};

namespace {

std::string no_record_message(const Problem& problem, const Gpu& gpu, const std::filesystem::path& database) {
  return fmt::format(
      "no tuning record for problem '{}' on {} in '{}': tune it first (convgen tune --shapes FILE --db '{}' with a "
      "shapes file holding the problem) or use the tune_on_first_use policy",
      problem_key(problem), describe_gpu(gpu), database.string(), database.string());
}

}  // namespace

std::shared_ptr<const ConvOp> ConvContext::Impl::load(const Problem& problem, const KernelSpec& spec,
                                                      ChosenBy chosen_by) {
  return load(build_kernel(problem, spec, gpu, cache), chosen_by);
}

std::shared_ptr<const ConvOp> ConvContext::Impl::load(const BuiltKernel& kernel, ChosenBy chosen_by) {
  // ConvLauncher cannot move: the Impl is built in place.
  std::unique_ptr<ConvOp::Impl> impl(new ConvOp::Impl{.runtime_context = &runtime_context,
                                                      .chosen_by = chosen_by,
                                                      .kernel_name = kernel_name(kernel.spec),
                                                      .launcher = ConvLauncher(kernel),
                                                      .workspace = std::nullopt});
  // One workspace per operation, allocated once: runs of such an operation must then be ordered (one stream).
  if (kernel.workspace_bytes() > 0) impl->workspace.emplace(static_cast<std::size_t>(kernel.workspace_bytes()));
  return std::shared_ptr<const ConvOp>(new ConvOp(std::move(impl)));
}

std::shared_ptr<const ConvOp> ConvContext::Impl::from_cost_model(const Problem& problem, TuningDb& db) {
  Tuner tuner(gpu, cache, pool, &db, coefficients_for(&db, gpu), options.device);
  // The model's order puts the families' defaults first (the tuner's safety net), so the choice is the default it
  // predicts fastest that verifies: those are compiled first, alone (a compile limit of 1 keeps every default and
  // nothing else). Only where none of them works are the next candidates ranked, those a tune with the same budget
  // would compile. Compiling every candidate for its ptxas report made a converted fp16 DenseNet-121's first call
  // compile about 150 kernels a problem for the same choice.
  std::vector<std::string> failures;
  std::set<std::string> tried;
  for (const int limit : {1, compile_limit({.budget = options.tune_budget})}) {
    const TuneResult ranked = tuner.rank_only(problem, limit);
    // Nothing is timed, but one verification launch per candidate keeps a wrong kernel from being served.
    for (const CandidateOutcome& candidate : ranked.candidates) {
      if (!tried.insert(kernel_name(candidate.spec)).second) continue;
      if (candidate.status != MeasurementStatus::ok) continue;                       // did not compile
      const BuiltKernel kernel = build_kernel(problem, candidate.spec, gpu, cache);  // a JIT cache hit
      try {
        const Verification v = verify_on_gpu(kernel, expected_inputs(problem));
        if (v.passed) return load(kernel, ChosenBy::cost_model);
        failures.push_back(v.failure);
      } catch (const ApiError& e) {  // e.g. refused for resources the model did not foresee
        failures.push_back(fmt::format("{}: {}", kernel_name(candidate.spec), e.what()));
      }
    }
  }
  throw Error(fmt::format("no candidate kernel for problem '{}' on {} compiled and verified ({} tried{}{})",
                          problem_key(problem), describe_gpu(gpu), failures.size(), failures.empty() ? "" : ": ",
                          fmt::join(failures, "; ")));
}

std::shared_ptr<const ConvOp> ConvContext::Impl::build(const Problem& problem) {
  runtime_context.make_current();
  // Each build opens its own connection: a TuningDb is safe with several writers, each with its own connection.
  TuningDb db = TuningDb::open(database);
  if (options.policy == TuningPolicy::cost_model_only) return from_cost_model(problem, db);

  if (const std::optional<BestChoice> best = db.best(gpu, problem))
    return load(problem, parse_kernel_name(best->kernel), ChosenBy::database);
  if (options.policy == TuningPolicy::database_only) throw InputError(no_record_message(problem, gpu, database));

  std::lock_guard lock(tune_mutex);
  // Another ConvContext (or process) may have tuned it while this thread waited.
  if (const std::optional<BestChoice> best = db.best(gpu, problem))
    return load(problem, parse_kernel_name(best->kernel), ChosenBy::database);
  Tuner tuner(gpu, cache, pool, &db, coefficients_for(&db, gpu), options.device);
  const TuneResult result = tuner.tune(problem, {.budget = options.tune_budget, .record = true});
  if (result.from_db) return load(problem, parse_kernel_name(result.from_db->kernel), ChosenBy::database);
  if (!result.best)
    throw Error(fmt::format("tuning problem '{}' on {} found no working kernel ({} candidates, {} measured)",
                            problem_key(problem), describe_gpu(gpu), result.candidates.size(), result.measured));
  return load(problem, result.candidates[*result.best].spec, ChosenBy::tuned_now);
}

ConvContext::ConvContext(ContextOptions options) {
  if (options.tune_budget < 0)
    throw InputError(fmt::format("tune_budget must be 0 (every candidate) or more, got {}", options.tune_budget));
  impl_ = std::make_unique<Impl>(std::move(options));
}

ConvContext::~ConvContext() {
  // The operations' modules are unloaded next: from their own context, whatever this thread had current.
  try {
    if (impl_) impl_->runtime_context.make_current();
  } catch (const Error&) {  // nothing better to do in a destructor
  }
}

void ConvContext::affine_concat(const AffineConcat& pass, CUstream stream) {
  check_affine_concat(pass);
  impl_->runtime_context.make_current();
  const int vector = affine_concat_vector(pass);
  const Precision precision = pass.precision == Precision::tf32 ? Precision::fp32 : pass.precision;
  const Kernel* kernel = nullptr;
  {
    const std::lock_guard lock(impl_->affine_concat_mutex);
    auto found = impl_->affine_concat_kernels.find({static_cast<int>(precision), vector});
    if (found == impl_->affine_concat_kernels.end()) {
      // Every vector width of the type at once: a later call whose addresses allow another width (inside a CUDA
      // graph capture, say, which can load no module) finds it loaded.
      if (stream_capturing(stream))
        throw ApiError(fmt::format(
            "affine_concat: its {} programs are not loaded yet, which a CUDA graph capture cannot do: run a pass of "
            "this type once before capturing",
            precision));
      for (int width : {1, 2, 4, 8}) {
        if (width * element_bytes(precision) > 16) continue;
        const Program program = affine_concat_program(precision, width);
        Module module(affine_concat_cubin(impl_->gpu.arch, precision, width), program.name);
        Kernel entry = module.kernel(kAffineConcatEntry);
        impl_->affine_concat_kernels.emplace(
            std::pair{static_cast<int>(precision), width},
            std::make_unique<Impl::AffineConcatKernel>(Impl::AffineConcatKernel{std::move(module), entry}));
      }
      found = impl_->affine_concat_kernels.find({static_cast<int>(precision), vector});
    }
    kernel = &found->second->kernel;
  }
  const bool early = has_early_launch(impl_->gpu.arch) && early_launch_enabled();
  launch_affine_concat(*kernel, pass, plan_affine_concat(pass, vector, early), stream);
}

const ConvOp& ConvContext::conv(const Problem& problem) {
  if (const std::string why = validate(problem); !why.empty())
    throw InputError(fmt::format("problem '{}': {}", problem_key(problem), why));
  const std::string key = problem_key(problem);

  std::promise<std::shared_ptr<const ConvOp>> promise;
  std::shared_future<std::shared_ptr<const ConvOp>> future;
  bool builder = false;
  {
    std::lock_guard lock(impl_->mutex);
    auto it = impl_->ops.find(key);
    if (it == impl_->ops.end()) {
      future = promise.get_future().share();
      impl_->ops.emplace(key, future);
      builder = true;
    } else {
      future = it->second;
    }
  }
  if (builder) {
    try {
      std::shared_ptr<const ConvOp> op = impl_->build(problem);
      std::lock_guard lock(impl_->mutex);
      impl_->count(*op);
      promise.set_value(std::move(op));
    } catch (...) {
      // The waiting threads get this failure; later asks try again.
      {
        std::lock_guard lock(impl_->mutex);
        impl_->ops.erase(key);
      }
      promise.set_exception(std::current_exception());
    }
  }
  return *future.get();
}

void ConvContext::Impl::count(const ConvOp& op) {
  ++stats.built;
  switch (op.chosen_by()) {
    case ChosenBy::database:
      ++stats.database_hits;
      break;
    case ChosenBy::tuned_now:
      ++stats.tuned;
      break;
    case ChosenBy::cost_model:
      ++stats.model_only;
      break;
  }
}

int ConvContext::prepare(const std::vector<Problem>& problems) {
  impl_->runtime_context.make_current();
  std::vector<const Problem*> todo;
  {
    std::set<std::string> seen;
    std::lock_guard lock(impl_->mutex);
    for (const Problem& problem : problems) {
      if (!validate(problem).empty()) continue;
      const std::string key = problem_key(problem);
      if (!seen.insert(key).second || impl_->ops.contains(key)) continue;
      todo.push_back(&problem);
    }
  }
  if (todo.empty()) return 0;
  if (impl_->options.policy != TuningPolicy::tune_on_first_use) return impl_->build_ahead(todo, impl_->options.policy);
  // Those with a record load it (compiled at once), the others are tuned.
  std::vector<const Problem*> recorded;
  {
    const TuningDb db = TuningDb::open(impl_->database);
    for (const Problem* problem : todo)
      if (db.best(impl_->gpu, *problem)) recorded.push_back(problem);
  }
  std::erase_if(todo,
                [&](const Problem* p) { return std::find(recorded.begin(), recorded.end(), p) != recorded.end(); });
  const int loaded = recorded.empty() ? 0 : impl_->build_ahead(recorded, TuningPolicy::database_only);
  return loaded + (todo.empty() ? 0 : impl_->tune_ahead(todo));
}

bool ConvContext::Impl::add_ready(const Problem& problem, std::shared_ptr<const ConvOp> op) {
  std::promise<std::shared_ptr<const ConvOp>> ready;
  ready.set_value(op);
  std::lock_guard lock(mutex);
  if (!ops.emplace(problem_key(problem), ready.get_future().share()).second) return false;  // conv() built it first
  count(*op);
  return true;
}

int ConvContext::Impl::tune_ahead(std::vector<const Problem*> todo) {
  TuningDb db = TuningDb::open(database);
  std::lock_guard tuning(tune_mutex);
  // Another ConvContext (or process) may have tuned some while this thread waited: conv() loads those.
  std::erase_if(todo, [&](const Problem* problem) { return db.best(gpu, *problem).has_value(); });
  if (todo.empty()) return 0;

  Tuner tuner(gpu, cache, pool, &db, coefficients_for(&db, gpu), options.device);
  const TuneOptions tune_options{.budget = options.tune_budget, .record = true};
  // The CLI's pipeline depth: the candidates of up to this many problems compile while one is measured.
  constexpr std::size_t kAhead = 8;
  for (std::size_t j = 0; j < std::min(todo.size(), kAhead + 1); ++j) tuner.prefetch(*todo[j], tune_options);
  int tuned = 0;
  for (std::size_t j = 0; j < todo.size(); ++j) {
    const Problem& problem = *todo[j];
    const TuneResult result = tuner.tune(problem, tune_options);
    if (j + kAhead + 1 < todo.size()) tuner.prefetch(*todo[j + kAhead + 1], tune_options);
    if (!result.best || result.from_db) continue;  // conv() tries again (or loads the record another process made)
    tuned += add_ready(problem, load(problem, result.candidates[*result.best].spec, ChosenBy::tuned_now));
  }
  return tuned;
}

int ConvContext::Impl::build_ahead(const std::vector<const Problem*>& todo, TuningPolicy choice) {
  {
    // Every problem's kernels at once on the pool, into the JIT cache: the builds below then find them there. A
    // kernel that fails to compile fails again in build(), which reports it.
    TuningDb db = TuningDb::open(database);
    const Tuner tuner(gpu, cache, pool, &db, coefficients_for(&db, gpu), options.device);
    build_kernels(kernels_to_build_ahead(todo, choice, db, tuner), gpu, cache, pool);
  }
  int built = 0;
  for (const Problem* problem : todo) {
    std::shared_ptr<const ConvOp> op;
    try {
      op = build(*problem);
    } catch (const Error&) {  // no record, nothing verified: conv() tries again and reports it
      continue;
    }
    built += add_ready(*problem, std::move(op));
  }
  return built;
}

const Gpu& ConvContext::gpu() const { return impl_->gpu; }
const ContextOptions& ConvContext::options() const { return impl_->options; }

ConvContext::Stats ConvContext::stats() const {
  std::lock_guard lock(impl_->mutex);
  return impl_->stats;
}

}  // namespace convgen
