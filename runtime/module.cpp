// module: the RAII driver objects of the launch path, and launch errors that say what was launched.
#include "runtime/module.hpp"

#include <utility>

#include <fmt/format.h>
#include <fmt/ranges.h>

namespace convgen {

// ---- Context

Context::Context(int ordinal) : ordinal_(ordinal) {
  const DriverApi& api = driver();
  int count = 0;
  CONVGEN_CU_CHECK(api.cuDeviceGetCount(&count));
  if (ordinal < 0 || ordinal >= count)
    throw InputError(fmt::format("device ordinal {}: expected 0 to {} (the driver reports {} device{})", ordinal,
                                 count - 1, count, count == 1 ? "" : "s"));
  CONVGEN_CU_CHECK(api.cuDeviceGet(&device_, ordinal));
  CONVGEN_CU_CHECK(api.cuDevicePrimaryCtxRetain(&context_, device_));
  make_current();
}

Context::~Context() {
  if (context_ != nullptr) driver().cuDevicePrimaryCtxRelease(device_);
}

Context::Context(Context&& other) noexcept
    : ordinal_(other.ordinal_), device_(other.device_), context_(std::exchange(other.context_, nullptr)) {}

Context& Context::operator=(Context&& other) noexcept {
  std::swap(ordinal_, other.ordinal_);
  std::swap(device_, other.device_);
  std::swap(context_, other.context_);
  return *this;
}

void Context::make_current() const { CONVGEN_CU_CHECK(driver().cuCtxSetCurrent(context_)); }

void Context::synchronize() const {
  make_current();
  CONVGEN_CU_CHECK(driver().cuCtxSynchronize());
}

// ---- Kernel

int Kernel::attribute(CUfunction_attribute which) const {
  int value = 0;
  CONVGEN_CU_CHECK(driver().cuFuncGetAttribute(&value, which, function_));
  return value;
}

void Kernel::set_attribute(CUfunction_attribute which, int value, std::string_view what) const {
  const CUresult result = driver().cuFuncSetAttribute(function_, which, value);
  if (result != CUDA_SUCCESS)
    throw ApiError(fmt::format("kernel '{}': cannot {}: {}", name_, what, cu_error_text(result)));
}

void Kernel::set_max_dynamic_smem(int bytes) const {
  set_attribute(CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, bytes,
                fmt::format("allow {} bytes of dynamic shared memory", bytes));
}

void Kernel::set_preferred_smem_carveout(int percent) const {
  set_attribute(CU_FUNC_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT, percent,
                fmt::format("prefer a {}% shared-memory carveout", percent));
}

int Kernel::registers() const { return attribute(CU_FUNC_ATTRIBUTE_NUM_REGS); }

int Kernel::max_threads_per_block() const { return attribute(CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK); }

int Kernel::static_smem_bytes() const { return attribute(CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES); }

// ---- Module

Module::Module(const Cubin& cubin, std::string name) : name_(std::move(name)) {
  const CUresult result = driver().cuModuleLoadData(&module_, cubin.image.data());
  if (result != CUDA_SUCCESS)
    throw ApiError(fmt::format("cannot load module '{}' (cubin for {}, {} bytes): {}", name_, cubin.arch,
                               cubin.image.size(), cu_error_text(result)));
}

Module::~Module() {
  if (module_ != nullptr) driver().cuModuleUnload(module_);
}

Module::Module(Module&& other) noexcept
    : module_(std::exchange(other.module_, nullptr)), name_(std::move(other.name_)) {}

Module& Module::operator=(Module&& other) noexcept {
  std::swap(module_, other.module_);
  std::swap(name_, other.name_);
  return *this;
}

Kernel Module::kernel(const std::string& entry) const {
  CUfunction function = nullptr;
  const CUresult result = driver().cuModuleGetFunction(&function, module_, entry.c_str());
  if (result != CUDA_SUCCESS)
    throw ApiError(fmt::format("module '{}' has no kernel '{}': {}", name_, entry, cu_error_text(result)));
  return Kernel(function, entry);
}

// ---- Stream

Stream::Stream() { CONVGEN_CU_CHECK(driver().cuStreamCreate(&stream_, CU_STREAM_NON_BLOCKING)); }

Stream::~Stream() {
  if (stream_ != nullptr) driver().cuStreamDestroy(stream_);
}

Stream::Stream(Stream&& other) noexcept : stream_(std::exchange(other.stream_, nullptr)) {}

Stream& Stream::operator=(Stream&& other) noexcept {
  std::swap(stream_, other.stream_);
  return *this;
}

void Stream::synchronize() const { CONVGEN_CU_CHECK(driver().cuStreamSynchronize(stream_)); }

// ---- Event

Event::Event() { CONVGEN_CU_CHECK(driver().cuEventCreate(&event_, CU_EVENT_DEFAULT)); }

Event::~Event() {
  if (event_ != nullptr) driver().cuEventDestroy(event_);
}

Event::Event(Event&& other) noexcept : event_(std::exchange(other.event_, nullptr)) {}

Event& Event::operator=(Event&& other) noexcept {
  std::swap(event_, other.event_);
  return *this;
}

void Event::record(CUstream stream) const { CONVGEN_CU_CHECK(driver().cuEventRecord(event_, stream)); }

void Event::synchronize() const { CONVGEN_CU_CHECK(driver().cuEventSynchronize(event_)); }

float Event::elapsed_ms(const Event& start, const Event& stop) {
  float ms = 0;
  CONVGEN_CU_CHECK(driver().cuEventElapsedTime(&ms, start.event_, stop.event_));
  return ms;
}

// ---- DeviceBuffer

std::optional<DeviceMemoryInfo> device_memory_info() {
  DeviceMemoryInfo info;
  if (!cuda_available() || driver().cuMemGetInfo(&info.free, &info.total) != CUDA_SUCCESS) return std::nullopt;
  return info;
}

DeviceBuffer::DeviceBuffer(std::size_t bytes) : bytes_(bytes) {
  // cuMemAlloc refuses 0 bytes; an empty buffer is a null pointer.
  if (bytes == 0) return;
  const CUresult result = driver().cuMemAlloc(&ptr_, bytes);
  if (result != CUDA_SUCCESS)
    throw ApiError(fmt::format("cannot allocate {} bytes of device memory: {}", bytes, cu_error_text(result)));
}

DeviceBuffer::~DeviceBuffer() {
  if (ptr_ != 0) driver().cuMemFree(ptr_);
}

DeviceBuffer::DeviceBuffer(DeviceBuffer&& other) noexcept
    : ptr_(std::exchange(other.ptr_, 0)), bytes_(std::exchange(other.bytes_, 0)) {}

DeviceBuffer& DeviceBuffer::operator=(DeviceBuffer&& other) noexcept {
  std::swap(ptr_, other.ptr_);
  std::swap(bytes_, other.bytes_);
  return *this;
}

void DeviceBuffer::check_fits(std::size_t bytes, const char* what) const {
  if (bytes > bytes_)
    throw InputError(fmt::format("{} of {} bytes does not fit a device buffer of {} bytes", what, bytes, bytes_));
}

void DeviceBuffer::upload_bytes(const void* data, std::size_t bytes) {
  check_fits(bytes, "upload");
  if (bytes == 0) return;
  // cuMemcpyHtoD from pageable memory returns once the bytes are staged, before the DMA has landed, and orders only
  // against the legacy stream: a kernel then launched on a non-blocking stream (convgen's Stream) could read the
  // buffer half written. Copy on the legacy stream and wait for it, so the upload has landed when this returns (seen
  // on the H200 with several test processes sharing the GPU: the first of two chained calls read a partial input).
  CONVGEN_CU_CHECK(driver().cuMemcpyHtoDAsync(ptr_, data, bytes, CU_STREAM_LEGACY));
  CONVGEN_CU_CHECK(driver().cuStreamSynchronize(CU_STREAM_LEGACY));
}

void DeviceBuffer::download_bytes(void* data, std::size_t bytes) const {
  check_fits(bytes, "download");
  if (bytes > 0) CONVGEN_CU_CHECK(driver().cuMemcpyDtoH(data, ptr_, bytes));
}

void DeviceBuffer::upload(std::span<const float> values) { upload_bytes(values.data(), values.size_bytes()); }

void DeviceBuffer::download(std::span<float> values) const { download_bytes(values.data(), values.size_bytes()); }

void DeviceBuffer::fill_u32(std::uint32_t value, CUstream stream) {
  if (bytes_ % 4 != 0)
    throw InputError(fmt::format("fill_u32 of a device buffer of {} bytes: expected a multiple of 4", bytes_));
  if (bytes_ > 0) CONVGEN_CU_CHECK(driver().cuMemsetD32Async(ptr_, value, bytes_ / 4, stream));
}

void DeviceBuffer::fill_u8(std::uint8_t value, CUstream stream) {
  if (bytes_ > 0) CONVGEN_CU_CHECK(driver().cuMemsetD8Async(ptr_, value, bytes_, stream));
}

// ---- launch

void launch(const Kernel& kernel, const LaunchConfig& config, std::span<void*> args, CUstream stream) {
  const auto& [gx, gy, gz] = config.grid;
  const auto& [bx, by, bz] = config.block;
  CUresult result;
  if (config.early) {
    CUlaunchAttribute attribute{};
    attribute.id = CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION;
    attribute.value.programmaticStreamSerializationAllowed = 1;
    CUlaunchConfig launch_config{};
    launch_config.gridDimX = gx;
    launch_config.gridDimY = gy;
    launch_config.gridDimZ = gz;
    launch_config.blockDimX = bx;
    launch_config.blockDimY = by;
    launch_config.blockDimZ = bz;
    launch_config.sharedMemBytes = config.dynamic_smem_bytes;
    launch_config.hStream = stream;
    launch_config.attrs = &attribute;
    launch_config.numAttrs = 1;
    result = driver().cuLaunchKernelEx(&launch_config, kernel.get(), args.data(), nullptr);
  } else {
    result = driver().cuLaunchKernel(kernel.get(), gx, gy, gz, bx, by, bz, config.dynamic_smem_bytes, stream,
                                     args.data(), nullptr);
  }
  if (result != CUDA_SUCCESS)
    throw ApiError(
        fmt::format("cannot launch kernel '{}' with grid ({}), block ({}), {} bytes of dynamic shared "
                    "memory{}: {}",
                    kernel.name(), fmt::join(config.grid, ", "), fmt::join(config.block, ", "),
                    config.dynamic_smem_bytes, config.early ? ", early (programmatic stream serialization)" : "",
                    cu_error_text(result)));
}

// ---- Graph

Graph Graph::capture(CUstream stream, const std::function<void()>& body) {
  const DriverApi& api = driver();
  // Thread-local mode: other threads may keep allocating or synchronizing while this one captures.
  CONVGEN_CU_CHECK(api.cuStreamBeginCapture(stream, CU_STREAM_CAPTURE_MODE_THREAD_LOCAL));
  CUgraph graph = nullptr;
  try {
    body();
  } catch (...) {
    if (api.cuStreamEndCapture(stream, &graph) == CUDA_SUCCESS && graph != nullptr) api.cuGraphDestroy(graph);
    throw;
  }
  CONVGEN_CU_CHECK(api.cuStreamEndCapture(stream, &graph));
  CUgraphExec exec = nullptr;
  if (const CUresult result = api.cuGraphInstantiate(&exec, graph, 0); result != CUDA_SUCCESS) {
    api.cuGraphDestroy(graph);
    throw ApiError(fmt::format("cannot instantiate a captured graph: {}", cu_error_text(result)));
  }
  return Graph(graph, exec);
}

Graph::~Graph() {
  if (exec_ != nullptr) driver().cuGraphExecDestroy(exec_);
  if (graph_ != nullptr) driver().cuGraphDestroy(graph_);
}

Graph::Graph(Graph&& other) noexcept
    : graph_(std::exchange(other.graph_, nullptr)), exec_(std::exchange(other.exec_, nullptr)) {}

Graph& Graph::operator=(Graph&& other) noexcept {
  std::swap(graph_, other.graph_);
  std::swap(exec_, other.exec_);
  return *this;
}

void Graph::launch(CUstream stream) const { CONVGEN_CU_CHECK(driver().cuGraphLaunch(exec_, stream)); }

bool stream_capturing(CUstream stream) {
  CUstreamCaptureStatus status = CU_STREAM_CAPTURE_STATUS_NONE;
  CONVGEN_CU_CHECK(driver().cuStreamIsCapturing(stream, &status));
  return status != CU_STREAM_CAPTURE_STATUS_NONE;
}

}  // namespace convgen
