// network_chain: a network as our kernels would run it, timed as one call: the fastest kernel of ours of each bench
// row, launched `count` times in network order (the rows interleaved, as a network's blocks repeat its layers: every
// row once, then every row with a second run, ...), back to back on one stream, each layer on its own buffers (warm:
// one set each). Timed with early launch and without, interleaved, so that the per-layer figures (each layer's calls
// in a chain of its own) can be checked against a chain of different kernels, as a network runs them.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "bench/report.hpp"
#include "convgen/gpu.hpp"
#include "measure/timing.hpp"
#include "runtime/jit_cache.hpp"
#include "runtime/thread_pool.hpp"

namespace convgen {

// Returns the chain of `rows` (one batch's; rows whose kernel of ours did not verify are left out, and named in
// `left_out`), timed by `options` (graph replay required; one buffer set): early is the median with our kernels
// launched early where they allow it, plain never; nullopt when no row has a kernel of ours.
std::optional<NetworkChain> time_network_chain(const std::vector<BenchRow>& rows, const Gpu& gpu, JitCache& cache,
                                               ThreadPool& pool, TimingOptions options, std::uint64_t seed);

}  // namespace convgen
