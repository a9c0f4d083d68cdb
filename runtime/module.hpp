// module: one RAII type per stage after the compile: context, module, kernel, buffers, streams, events, launch, graphs.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <string_view>

#include "runtime/compiler.hpp"
#include "runtime/driver.hpp"

namespace convgen {

// The primary context of a device, retained and made current on the constructing thread. Everything below needs
// one current. Threads other than the constructor's call make_current() first.
//   Context context(0);
class Context {
 public:
  explicit Context(int ordinal = 0);
  ~Context();
  Context(Context&& other) noexcept;
  Context& operator=(Context&& other) noexcept;
  Context(const Context&) = delete;
  Context& operator=(const Context&) = delete;

  void make_current() const;
  void synchronize() const;
  int ordinal() const { return ordinal_; }
  CUcontext get() const { return context_; }

 private:
  int ordinal_ = -1;
  CUdevice device_ = 0;
  CUcontext context_ = nullptr;
};

// A kernel entry point of a loaded module, with its name for messages. Valid while its Module lives.
class Kernel {
 public:
  Kernel(CUfunction function, std::string name) : function_(function), name_(std::move(name)) {}

  // Allows up to `bytes` of dynamic shared memory (needed above 48 KiB; the opt-in maximum is per device).
  void set_max_dynamic_smem(int bytes) const;
  // Asks for this share of the SM's maximum shared memory as the L1/shared split while it runs (0 to 100; a hint the
  // driver rounds to a supported carveout).
  void set_preferred_smem_carveout(int percent) const;
  int registers() const;
  int max_threads_per_block() const;  // for this kernel, given its register use
  int static_smem_bytes() const;

  CUfunction get() const { return function_; }
  const std::string& name() const { return name_; }

 private:
  int attribute(CUfunction_attribute which) const;
  // Sets an attribute; on failure throws ApiError "kernel '<name>': cannot <what>: <driver's reason>".
  void set_attribute(CUfunction_attribute which, int value, std::string_view what) const;

  CUfunction function_ = nullptr;
  std::string name_;
};

// A cubin loaded into the current context.
//   Module module(cubin, "axpy.cu");
//   Kernel axpy = module.kernel("axpy");
class Module {
 public:
  // `name` names the module in messages (the program name). Throws ApiError naming it and the cubin's arch.
  Module(const Cubin& cubin, std::string name);
  ~Module();
  Module(Module&& other) noexcept;
  Module& operator=(Module&& other) noexcept;
  Module(const Module&) = delete;
  Module& operator=(const Module&) = delete;

  // Returns the entry point `entry` (an extern "C" or mangled name). Throws ApiError naming entry and module.
  Kernel kernel(const std::string& entry) const;
  CUmodule get() const { return module_; }
  const std::string& name() const { return name_; }

 private:
  CUmodule module_ = nullptr;
  std::string name_;
};

// A stream of its own (never the legacy default stream, which graphs cannot capture).
class Stream {
 public:
  Stream();
  ~Stream();
  Stream(Stream&& other) noexcept;
  Stream& operator=(Stream&& other) noexcept;
  Stream(const Stream&) = delete;
  Stream& operator=(const Stream&) = delete;

  void synchronize() const;
  CUstream get() const { return stream_; }

 private:
  CUstream stream_ = nullptr;
};

// A timing event.
//   start.record(stream); ...; stop.record(stream); stop.synchronize();
//   float ms = Event::elapsed_ms(start, stop);
class Event {
 public:
  Event();
  ~Event();
  Event(Event&& other) noexcept;
  Event& operator=(Event&& other) noexcept;
  Event(const Event&) = delete;
  Event& operator=(const Event&) = delete;

  void record(CUstream stream) const;
  void synchronize() const;
  // Returns the milliseconds between two recorded, completed events.
  static float elapsed_ms(const Event& start, const Event& stop);
  CUevent get() const { return event_; }

 private:
  CUevent event_ = nullptr;
};

// Free and total bytes of the current context's device (cuMemGetInfo); nullopt without a driver, a device or a
// current context.
struct DeviceMemoryInfo {
  std::size_t free = 0;
  std::size_t total = 0;
};
std::optional<DeviceMemoryInfo> device_memory_info();

// Device memory of a fixed size. The copies are synchronous unless named _async.
class DeviceBuffer {
 public:
  explicit DeviceBuffer(std::size_t bytes);
  ~DeviceBuffer();
  DeviceBuffer(DeviceBuffer&& other) noexcept;
  DeviceBuffer& operator=(DeviceBuffer&& other) noexcept;
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;

  // Copy host data to the start of the buffer, or the start of the buffer to the host. InputError when the
  // host side is larger than the buffer. An upload has landed when it returns (work on any stream sees it); a
  // download waits for the legacy stream only, so synchronize the stream that wrote the buffer first.
  void upload(std::span<const float> values);
  void download(std::span<float> values) const;
  void upload_bytes(const void* data, std::size_t bytes);
  void download_bytes(void* data, std::size_t bytes) const;
  // Sets every 32-bit word (the size must be a multiple of 4) or every byte, on `stream`.
  void fill_u32(std::uint32_t value, CUstream stream);
  void fill_u8(std::uint8_t value, CUstream stream);

  std::size_t size() const { return bytes_; }
  CUdeviceptr ptr() const { return ptr_; }
  // The kernel argument: launch takes pointers to arguments, and this is one to the device pointer.
  void* arg() { return &ptr_; }

 private:
  void check_fits(std::size_t bytes, const char* what) const;

  CUdeviceptr ptr_ = 0;
  std::size_t bytes_ = 0;
};

struct LaunchConfig {
  std::array<unsigned, 3> grid = {1, 1, 1};
  std::array<unsigned, 3> block = {1, 1, 1};
  unsigned dynamic_smem_bytes = 0;
  // Launched early (programmatic stream serialization, sm_90 and later): the kernel may start while the stream's
  // previous kernel still runs, once that kernel's blocks have all signalled griddepcontrol.launch_dependents (or
  // ended). Only for a kernel whose every block executes griddepcontrol.wait before it touches global memory that an
  // earlier kernel may write or read (launch_plan.hpp's LaunchStep::early_launch says which).
  bool early = false;
  bool operator==(const LaunchConfig&) const = default;
};

// Launches `kernel`; args[i] points at the i-th kernel argument. Throws ApiError naming the kernel, grid,
// block, dynamic shared memory and the CUDA error when the launch is refused.
//   float a = 2;  CUdeviceptr x = ..., y = ...;  void* args[] = {&a, &x, &y};
//   launch(axpy, {.grid = {n / 256, 1, 1}, .block = {256, 1, 1}}, args, stream.get());
void launch(const Kernel& kernel, const LaunchConfig& config, std::span<void*> args, CUstream stream);

// Whether `stream` is being captured into a CUDA graph (what it may not do then: synchronize, copy from the host,
// load a module).
bool stream_capturing(CUstream stream);

// An executable graph: the work a function issued on a stream, captured once and replayed at the GPU's pace.
//   Graph graph = Graph::capture(stream.get(), [&] { launch(axpy, config, args, stream.get()); });
//   graph.launch(stream.get());
class Graph {
 public:
  // Runs `body` while capturing `stream` (not the legacy default stream). If `body` throws, the capture ends
  // and the exception propagates.
  static Graph capture(CUstream stream, const std::function<void()>& body);
  ~Graph();
  Graph(Graph&& other) noexcept;
  Graph& operator=(Graph&& other) noexcept;
  Graph(const Graph&) = delete;
  Graph& operator=(const Graph&) = delete;

  void launch(CUstream stream) const;

 private:
  Graph(CUgraph graph, CUgraphExec exec) : graph_(graph), exec_(exec) {}
  CUgraph graph_ = nullptr;
  CUgraphExec exec_ = nullptr;
};

}  // namespace convgen
