// timing: the benchmark protocol's clock: candidates measured round-robin with CUDA events, on a stream and as graph
// replays, buffer sets rotated to keep L2 cold.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "measure/stats.hpp"
#include "runtime/module.hpp"

namespace convgen {

// One operation to time: `enqueue(stream, set)` issues ONE call of the op on `stream`, reading and writing buffer
// set `set` (0 <= set < TimingOptions::buffer_sets). It must only enqueue work on the given stream (no
// synchronization, no allocation) so that it can be captured into a graph; one that cannot be captured still gets
// stream times.
struct Candidate {
  std::string name;
  std::function<void(CUstream stream, int buffer_set)> enqueue;
};

// DESIGN.md's "Benchmark protocol" asks for at least 20 samples of at least 10 calls each; the defaults are those.
struct TimingOptions {
  int warmup_calls = 5;       // per candidate, before any sample, on the stream
  int samples = 20;           // per candidate and mode
  int calls_per_sample = 10;  // rounded up to a multiple of buffer_sets (see calls_per_sample below)
  int buffer_sets = 1;        // buffer sets the candidates rotate through (buffer_sets_to_defeat_l2)
  bool graph = true;          // also time graph replays
  bool operator==(const TimingOptions&) const = default;
};

// The protocol's minimum samples and calls per sample.
inline constexpr int kProtocolSamples = 20;
inline constexpr int kProtocolCallsPerSample = 10;

// Throws InputError naming the first option that is not positive (warmup_calls may be 0).
void check_timing_options(const TimingOptions& options);

// Returns the calls one sample makes: calls_per_sample rounded up to a multiple of buffer_sets, so that every
// sample (and every graph, which holds one sample's calls) visits each set equally often and consecutive samples
// continue the rotation where the last one stopped.
int calls_per_sample(const TimingOptions& options);

// The times of one candidate, in microseconds per call. Every sample is kept.
struct TimingResult {
  SampleStats stream;                     // back-to-back launches on the stream
  std::optional<SampleStats> graph;       // replays of one captured graph; empty when not timed or not capturable
  std::string graph_error;                // why there is no graph time ("" when there is one or graph mode was off)
  int calls_per_sample = 0;               // calls between the two events of each sample, in both modes
  std::vector<double> stream_samples_us;  // in the order they were taken
  std::vector<double> graph_samples_us;
  bool operator==(const TimingResult&) const = default;
};

// Times every candidate on `stream` (of the current context), interleaved so that clock and temperature drift
// affects all alike. First every candidate is warmed up. Stream mode: for each sample, for each candidate in turn,
// an event, calls_per_sample(options) calls rotating through the buffer sets, an event; the stream is synchronized
// once per sample. Graph mode (options.graph): each candidate's calls_per_sample(options) calls are captured once
// into a graph (rotating the sets the same way), replayed once to warm up, then timed round-robin like the stream
// mode, one replay per sample. A candidate whose capture throws gets its message in graph_error and no graph
// stats. Returns one result per candidate, in order. Errors of stream-mode calls propagate.
//   std::vector<TimingResult> r = time_interleaved(candidates, {.buffer_sets = 8}, stream);
std::vector<TimingResult> time_interleaved(std::span<const Candidate> candidates, const TimingOptions& options,
                                           Stream& stream);

// Most buffer sets time_interleaved rotates through. A set smaller than 2 x L2 / kMaxBufferSets cannot be made
// cold by rotation alone: such tiny layers are measured with (part of) their working set in L2. The cap bounds
// the calls per sample (each sample visits every set) and the graph size.
inline constexpr int kMaxBufferSets = 256;

// Returns how many buffer sets of `bytes_per_set` make the rotation's working set exceed twice the L2 size
// (floor(2 L2 / bytes) + 1, at least 1, at most kMaxBufferSets), or 1 when `warm` (L2 residency allowed).
// Throws InputError unless both sizes are positive.
//   buffer_sets_to_defeat_l2(10 << 20, 50 << 20) == 11
int buffer_sets_to_defeat_l2(std::int64_t bytes_per_set, std::int64_t l2_bytes, bool warm = false);

}  // namespace convgen
