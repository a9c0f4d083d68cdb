// convgen: the public C++ API: a context that picks, builds and caches one tuned kernel per convolution problem.
#pragma once

// CUdeviceptr and CUstream come from the CUDA toolkit's cuda.h (types only: convgen loads the driver itself at run
// time, so nothing links against libcuda). cudaStream_t from the runtime API is the same type as CUstream.
#include <cuda.h>

#include <cstddef>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>

#include "convgen/affine_concat.hpp"
#include "convgen/enum_names.hpp"
#include "convgen/gpu.hpp"
#include "convgen/problem.hpp"

namespace convgen {

// How a ConvContext chooses the kernel for a problem it has not built yet.
enum class TuningPolicy {
  database_only,      // the tuning database's best for (GPU, problem); InputError when it has none
  cost_model_only,    // the default configuration the cost model ranks first that compiles and verifies; nothing timed
  tune_on_first_use,  // the database's best, else tune now (measure up to tune_budget candidates) and record it
};

template <>
struct EnumNames<TuningPolicy> {
  static constexpr std::array table = {
      std::pair{TuningPolicy::database_only, std::string_view("database_only")},
      std::pair{TuningPolicy::cost_model_only, std::string_view("cost_model_only")},
      std::pair{TuningPolicy::tune_on_first_use, std::string_view("tune_on_first_use")},
  };
};

struct ContextOptions {
  int device = 0;                                  // CUDA device ordinal
  std::optional<std::filesystem::path> cache_dir;  // JIT cache folder; default user_cache_dir() / "jit"
  std::optional<std::filesystem::path> database;   // tuning database file; default user_data_dir() / "tuning.sqlite"
  TuningPolicy policy = TuningPolicy::tune_on_first_use;
  int tune_budget = 10;  // candidates measured at most when tuning on first use
};

// The JIT cache folder and the tuning database (the CLI's) a ConvContext uses where ContextOptions names none:
// $CONVGEN_CACHE_DIR or ~/.cache/convgen, then jit/; $CONVGEN_DATA_DIR or ~/.local/share/convgen, then tuning.sqlite.
std::filesystem::path default_cache_dir();
std::filesystem::path default_database();

// Compiles the kernels this process builds from now on (every ConvContext's) in NVRTC worker processes
// (convgen-nvrtc-worker), as many at once as the process may use cores: NVRTC in many threads of one process does
// not scale, in processes it does (docs/architecture.md, Worker compiles). The worker: $CONVGEN_NVRTC_WORKER when set
// ('none': compile in this process), else `worker`, else the one beside the running program. Returns the worker it
// will use, or why there is none (then compiles stay in this process, as before). Lasts as long as the process;
// a second call changes nothing and returns the first's answer.
struct WorkerChoice {
  std::optional<std::filesystem::path> worker;
  std::string missing_reason;  // when no worker; empty for CONVGEN_NVRTC_WORKER=none
};
WorkerChoice compile_in_worker_processes(std::optional<std::filesystem::path> worker = std::nullopt);

// Returns the ordinal of the CUDA device whose memory `pointer` is (the driver's cuPointerGetAttribute), or nothing
// where there is no usable driver or the driver does not know the address (host memory, a stale pointer): how a tensor
// that names no device of its own (__cuda_array_interface__) is checked against a context's device.
std::optional<int> pointer_device(CUdeviceptr pointer);

// How a ConvOp's kernel was chosen.
enum class ChosenBy { database, tuned_now, cost_model };

template <>
struct EnumNames<ChosenBy> {
  static constexpr std::array table = {
      std::pair{ChosenBy::database, std::string_view("database")},
      std::pair{ChosenBy::tuned_now, std::string_view("tuned now")},
      std::pair{ChosenBy::cost_model, std::string_view("cost model")},
  };
};

// One convolution, its kernel chosen, compiled and loaded into the context's device. Immutable once built: run()
// may be called from any thread, on any stream of that device. Valid while its ConvContext lives.
class ConvOp {
 public:
  ~ConvOp();
  ConvOp(const ConvOp&) = delete;
  ConvOp& operator=(const ConvOp&) = delete;

  // Enqueues the convolution on `stream` (0 = the legacy default stream): `activation`, `filter` and `output` are
  // device pointers to tensors in the problem's layout and precision, allocated in the device's primary context
  // (the one the CUDA runtime API uses), which run() makes current on the calling thread. Throws ApiError when the
  // launch is refused, and InputError, before anything is enqueued, when a tensor's address is not a multiple of
  // what the chosen kernel's widest loads and stores need of it (up to 16 bytes; any allocation's start is, a view
  // at an offset into one may not be) or of its element size.
  //   op.run(d_activation, d_filter, d_output, stream);
  // A kernel with one-time work on the filter (needs_prepare()) does it on the first run with each `filter` pointer
  // and keeps one prepared copy per pointer (ops shared by layers of one problem run each layer's filter without
  // preparing again); after changing a filter's values in place, call prepare().
  // On compute capability 9.0 and later the kernels launch early (programmatic dependent launch): their blocks may
  // start while the stream's previous kernel ends, and wait for it before they touch any tensor, so stream order holds
  // as usual; CONVGEN_EARLY_LAUNCH=0 in the environment launches them plainly.
  void run(CUdeviceptr activation, CUdeviceptr filter, CUdeviceptr output, CUstream stream) const;

  // The same for a problem with an epilogue (Problem::epilogue): `bias` holds K values and `residual` a tensor of the
  // output's shape, layout and type; either may be 0 when the epilogue does not read it. Throws InputError, naming
  // the problem and the tensor, when the epilogue reads one whose pointer is 0 (the four-pointer run() passes 0 for
  // both).
  //   op.run(d_activation, d_filter, d_output, d_bias, d_residual, stream);  // output = act(a*conv + b*res + bias)
  void run(CUdeviceptr activation, CUdeviceptr filter, CUdeviceptr output, CUdeviceptr bias, CUdeviceptr residual,
           CUstream stream) const;

  // The same with typed device pointers: float* for fp32 and tf32 problems (a tf32 problem's output is fp32 too),
  // a 2-byte type (__half*, __nv_bfloat16*, or their bits as std::uint16_t*) for fp16 and bf16, whose output is in
  // the same type. Throws InputError when the element size is not the problem's. No CUDA header is needed here.
  //   op.run(d_x, d_w, d_y, stream);  // __half* d_x, d_w, d_y for an fp16 problem
  template <class T>
  void run(const T* activation, const T* filter, T* output, CUstream stream) const {
    check_element_size(sizeof(T));
    run(reinterpret_cast<CUdeviceptr>(activation), reinterpret_cast<CUdeviceptr>(filter),
        reinterpret_cast<CUdeviceptr>(output), stream);
  }
  template <class T>
  void run(const T* activation, const T* filter, T* output, const T* bias, const T* residual, CUstream stream) const {
    check_element_size(sizeof(T));
    run(reinterpret_cast<CUdeviceptr>(activation), reinterpret_cast<CUdeviceptr>(filter),
        reinterpret_cast<CUdeviceptr>(output), reinterpret_cast<CUdeviceptr>(bias),
        reinterpret_cast<CUdeviceptr>(residual), stream);
  }

  // Enqueues the kernel's one-time work on a filter (a transformed or packed copy kept with the op, one per filter
  // pointer, until the op goes) on `stream`: run() does it for a filter pointer it has not seen; call it after
  // changing the filter's values in place. Kernels without such work (needs_prepare() false) need none. Not to be
  // called while a run() of this op with that filter is in flight.
  //   if (op.needs_prepare()) op.prepare(d_filter, stream);
  void prepare(CUdeviceptr filter, CUstream stream) const;
  bool needs_prepare() const;

  const Problem& problem() const;
  // Returns the canonical kernel name, e.g. "igemm_m64_n64_k8_tm4_tn4_st2_sk1_v1".
  const std::string& kernel_name() const;
  // Returns how the kernel was chosen: "database", "tuned now" or "cost model".
  std::string source() const;
  ChosenBy chosen_by() const;

 private:
  friend class ConvContext;
  void check_element_size(std::size_t bytes) const;
  struct Impl;
  explicit ConvOp(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

// A device with its JIT cache, tuning database and policy, and the convolutions built on it so far. (Named
// ConvContext, not Context: runtime/module.hpp's Context, the CUDA primary context, shares the namespace.)
// Thread-safe: any thread may ask for any problem; many threads asking for one problem build it once (the others
// wait for that build), while different problems build in parallel. Tuning (which times kernels on the GPU) is
// done one problem at a time so that measurements do not disturb each other.
//   convgen::ConvContext context;                      // device 0, tune on first use
//   const convgen::ConvOp& op = context.conv(problem);  // chooses and compiles once
//   op.run(activation, filter, output, stream);
class ConvContext {
 public:
  // Retains the device's primary context and reads its properties. Throws NoDeviceError ("no CUDA device: ...")
  // without a driver or device, InputError for a device ordinal out of range or a bad database file.
  explicit ConvContext(ContextOptions options = {});
  ~ConvContext();
  ConvContext(const ConvContext&) = delete;
  ConvContext& operator=(const ConvContext&) = delete;

  // Returns the operation for `problem`, building it on first ask as the policy says. Throws InputError for an
  // invalid problem, or (database_only) for a problem the database has no record of; Error when no candidate
  // kernel works for the problem. A failed build is not cached: the next ask tries again.
  const ConvOp& conv(const Problem& problem);

  // Builds, ahead of their first conv(), the problems of `problems` not built yet (a model's convolutions, say), so
  // that a model's first calls do not build them one at a time. The kernels the choices need (each problem's
  // recorded best; under cost_model_only the families' defaults the model ranks) are compiled all at once on the
  // compile pool, then each problem's operation is built as conv() would build it. Under tune_on_first_use, the
  // problems without a record in the database are tuned one after another as conv() would, but in one pipeline:
  // while one is measured, the candidates of the next ones compile (as `convgen tune` does), so a model's first tune
  // is not the sum of its layers' compiles; each becomes its operation (chosen by "tuned now").
  // Repeated, invalid and already built problems are skipped (conv() reports an invalid one); one that cannot be
  // built now (no working kernel, no record) is left for conv() to try again and report. Returns how many problems
  // were built now.
  int prepare(const std::vector<Problem>& problems);

  // Enqueues the pre-activation pass `pass` on `stream` (convgen/affine_concat.hpp: DenseNet's concatenation →
  // BatchNorm → ReLU as one kernel), compiling its programs on the first pass of each element type (every vector
  // width then). Throws InputError for a pass that check_affine_concat refuses, ApiError for the first pass of a type
  // inside a CUDA graph capture (which cannot load a module).
  void affine_concat(const AffineConcat& pass, CUstream stream);

  // Returns the device's properties (query_device).
  const Gpu& gpu() const;
  const ContextOptions& options() const;

  struct Stats {
    int built = 0;          // operations built (each problem once)
    int database_hits = 0;  // of those, chosen from the database
    int tuned = 0;          // tuned now
    int model_only = 0;     // chosen by the cost model alone
    bool operator==(const Stats&) const = default;
  };
  Stats stats() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace convgen
