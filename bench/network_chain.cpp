// network_chain: our kernels of a network's layers in one chain, timed with early launch and without.
#include "bench/network_chain.hpp"

#include <algorithm>
#include <memory>

#include "conv/conv_kernel.hpp"
#include "generator/kernel_spec.hpp"
#include "reference/inputs.hpp"
#include "runtime/module.hpp"

namespace convgen {
namespace {

// One layer of the chain: its kernel loaded, its tensors on the device (random inputs, the protocol's), prepared.
struct ChainLayer {
  std::unique_ptr<ConvLauncher> launcher;
  DeviceBuffer activation, filter, output, workspace, bias, residual;
  int count = 1;
};

DeviceBuffer upload(const HostTensor& tensor) {
  DeviceBuffer buffer(std::max<std::size_t>(tensor.size_bytes(), 4));
  if (tensor.size_bytes() > 0) buffer.upload_bytes(tensor.bytes().data(), tensor.size_bytes());
  return buffer;
}

// Sets the process's early-launch switch for one scope (the chains' launches read it as they are enqueued or
// captured), and puts the previous value back.
class EarlyLaunchScope {
 public:
  explicit EarlyLaunchScope(bool enabled) : previous_(early_launch_enabled()) { set_early_launch(enabled); }
  ~EarlyLaunchScope() { set_early_launch(previous_); }
  EarlyLaunchScope(const EarlyLaunchScope&) = delete;
  EarlyLaunchScope& operator=(const EarlyLaunchScope&) = delete;

 private:
  bool previous_;
};

}  // namespace

std::optional<NetworkChain> time_network_chain(const std::vector<BenchRow>& rows, const Gpu& gpu, JitCache& cache,
                                               ThreadPool& pool, TimingOptions options, std::uint64_t seed) {
  NetworkChain chain;
  std::vector<BuildRequest> requests;
  std::vector<const BenchRow*> used;
  for (const BenchRow& row : rows) {
    chain.batch = row.problem.n;
    const std::optional<double> us = median_us(row.ours.timing, HeadlineMode::graph);
    if (row.ours.status != RouteStatus::ok || !us) {
      chain.left_out.push_back(row.layer);
      continue;
    }
    requests.push_back({row.problem, parse_kernel_name(row.ours.kernel)});
    used.push_back(&row);
    chain.per_layer_sum_us += row.count * *us;
  }
  if (used.empty()) return std::nullopt;
  const std::vector<BuildOutcome> built = build_kernels(requests, gpu, cache, pool);
  std::vector<ChainLayer> layers;
  Stream stream;
  for (std::size_t i = 0; i < built.size(); ++i) {
    const auto* kernel = std::get_if<BuiltKernel>(&built[i]);
    if (kernel == nullptr) {
      chain.left_out.push_back(used[i]->layer + " (did not build again)");
      continue;
    }
    const InputTensors inputs = make_inputs(kernel->problem, {.seed = seed + i});
    ChainLayer layer{.launcher = std::make_unique<ConvLauncher>(*kernel),
                     .activation = upload(inputs.activation),
                     .filter = upload(inputs.filter),
                     .output = DeviceBuffer(static_cast<std::size_t>(
                         std::max<std::int64_t>(tensor_bytes(kernel->problem, TensorRole::output), 4))),
                     .workspace = DeviceBuffer(
                         static_cast<std::size_t>(std::max<std::int64_t>(kernel->workspace_bytes(), 4))),
                     .bias = upload(inputs.bias),
                     .residual = upload(inputs.residual),
                     .count = used[i]->count};
    layer.launcher->prepare(layer.filter.ptr(), stream.get());
    chain.calls += layer.count;
    layers.push_back(std::move(layer));
  }
  chain.layers = static_cast<int>(layers.size());
  if (layers.empty()) {
    chain.error = "no kernel of ours built again";
    return chain;
  }
  const int rounds = std::max_element(layers.begin(), layers.end(), [](const ChainLayer& a, const ChainLayer& b) {
                       return a.count < b.count;
                     })->count;
  const auto run_chain = [&layers, rounds](CUstream s) {
    for (int round = 0; round < rounds; ++round)
      for (const ChainLayer& l : layers)
        if (round < l.count)
          l.launcher->launch(l.activation.ptr(), l.filter.ptr(), l.output.ptr(), l.workspace.ptr(), s,
                             {.bias = l.bias.ptr(), .residual = l.residual.ptr()});
  };
  const std::vector<Candidate> candidates = {
      {"chain, early launch", [&](CUstream s, int) {
         const EarlyLaunchScope scope(true);
         run_chain(s);
       }},
      {"chain, plain launch", [&](CUstream s, int) {
         const EarlyLaunchScope scope(false);
         run_chain(s);
       }}};
  options.buffer_sets = 1;
  options.graph = true;
  const std::vector<TimingResult> times = time_interleaved(candidates, options, stream);
  chain.early = times[0].graph;
  chain.plain = times[1].graph;
  if (!chain.early || !chain.plain) chain.error = times[0].graph_error + times[1].graph_error;
  return chain;
}

}  // namespace convgen
