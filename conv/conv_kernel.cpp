// conv_kernel: renders and compiles a convolution kernel through the JIT cache, loads it and launches it.
#include "conv/conv_kernel.hpp"

#include <fmt/format.h>

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

BuiltKernel build_kernel(const Problem& problem, const KernelSpec& spec, const Gpu& gpu, JitCache& cache) {
  if (auto reason = check_support(problem, gpu, spec))
    throw InputError(fmt::format("{} does not serve {}: {}", kernel_name(spec), problem_key(problem), *reason));
  const Family& f = family(spec.family);
  BuiltKernel kernel{.problem = problem, .spec = spec, .source = f.render(problem, spec), .cubin = {},
                     .geometry = f.launch_geometry(problem, spec), .workspace_bytes = f.workspace_bytes(problem, spec)};
  kernel.cubin = cache.get_or_compile(to_program(kernel.source), {.arch = gpu.arch});
  return kernel;
}

std::vector<BuildOutcome> build_kernels(std::span<const BuildRequest> requests, const Gpu& gpu, JitCache& cache,
                                        ThreadPool& pool, const std::function<void(std::size_t)>& on_done) {
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

}  // namespace convgen

namespace convgen {

struct ConvLauncher::Loaded {
  Module module;
  Kernel kernel;
};

ConvLauncher::ConvLauncher(const BuiltKernel& kernel) : kernel_(kernel) {
  Module module(kernel.cubin, kernel.source.entry);
  Kernel function = module.kernel(kernel.source.entry);
  if (kernel.geometry.dynamic_smem_bytes > 48 * 1024)
    function.set_max_dynamic_smem(static_cast<int>(kernel.geometry.dynamic_smem_bytes));
  loaded_ = std::make_unique<Loaded>(Loaded{std::move(module), std::move(function)});
}

ConvLauncher::~ConvLauncher() = default;

void ConvLauncher::launch(CUdeviceptr activation, CUdeviceptr filter, CUdeviceptr output, CUdeviceptr workspace,
                          CUstream stream) const {
  const LaunchGeometry& g = kernel_.geometry;
  if (g.zero_output_first)
    CONVGEN_CU_CHECK(driver().cuMemsetD32Async(output, 0, static_cast<std::size_t>(output_elements(kernel_.problem)),
                                               stream));
  void* args[] = {&activation, &filter, &output, &workspace};
  convgen::launch(loaded_->kernel, {.grid = g.grid, .block = g.block, .dynamic_smem_bytes = g.dynamic_smem_bytes},
                  args, stream);
}

}  // namespace convgen
