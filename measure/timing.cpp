// timing: round-robin event timing of candidates, stream mode then graph mode, and the L2-defeating set count.
#include "measure/timing.hpp"

#include <algorithm>
#include <exception>

#include <fmt/format.h>

#include "convgen/error.hpp"

namespace convgen {
namespace {

// Microseconds per call from a pair of completed events around `calls` calls.
double us_per_call(const Event& start, const Event& stop, int calls) {
  return static_cast<double>(Event::elapsed_ms(start, stop)) * 1000.0 / calls;
}

}  // namespace

void check_timing_options(const TimingOptions& options) {
  const auto positive = [](int value, const char* name) {
    if (value <= 0) throw InputError(fmt::format("timing option {} must be a positive integer, got {}", name, value));
  };
  if (options.warmup_calls < 0)
    throw InputError(fmt::format("timing option warmup_calls must be 0 or more, got {}", options.warmup_calls));
  positive(options.samples, "samples");
  positive(options.calls_per_sample, "calls_per_sample");
  positive(options.buffer_sets, "buffer_sets");
}

int calls_per_sample(const TimingOptions& options) {
  check_timing_options(options);
  const int sets = options.buffer_sets;
  return (options.calls_per_sample + sets - 1) / sets * sets;
}

std::vector<TimingResult> time_interleaved(std::span<const Candidate> candidates, const TimingOptions& options,
                                           Stream& stream) {
  const int calls = calls_per_sample(options);
  const int sets = options.buffer_sets;
  const std::size_t n = candidates.size();
  std::vector<TimingResult> results(n);
  if (n == 0) return results;
  const CUstream s = stream.get();
  // One call per set in turn: a sample starts at set 0 and, as `calls` is a multiple of `sets`, ends on the last.
  const auto enqueue_sample = [&](const Candidate& candidate) {
    for (int call = 0; call < calls; ++call) candidate.enqueue(s, call % sets);
  };

  for (const Candidate& candidate : candidates)
    for (int call = 0; call < options.warmup_calls; ++call) candidate.enqueue(s, call % sets);
  stream.synchronize();

  std::vector<Event> starts(n), stops(n);
  // Takes `options.samples` samples of every candidate in `active`, round-robin, via `run(i)`, into `out(i)`.
  const auto take_samples = [&](const std::vector<std::size_t>& active, const auto& run, const auto& out) {
    for (int sample = 0; sample < options.samples; ++sample) {
      for (const std::size_t i : active) {
        starts[i].record(s);
        run(i);
        stops[i].record(s);
      }
      stream.synchronize();
      for (const std::size_t i : active) out(i).push_back(us_per_call(starts[i], stops[i], calls));
    }
  };

  std::vector<std::size_t> all(n);
  for (std::size_t i = 0; i < n; ++i) all[i] = i;
  take_samples(
      all, [&](std::size_t i) { enqueue_sample(candidates[i]); },
      [&](std::size_t i) -> std::vector<double>& { return results[i].stream_samples_us; });
  for (std::size_t i = 0; i < n; ++i) {
    results[i].calls_per_sample = calls;
    results[i].stream = summarize(results[i].stream_samples_us);
  }
  if (!options.graph) return results;

  std::vector<std::optional<Graph>> graphs(n);
  std::vector<std::size_t> capturable;
  for (std::size_t i = 0; i < n; ++i) {
    try {
      graphs[i].emplace(Graph::capture(s, [&] { enqueue_sample(candidates[i]); }));
      // The first launch uploads the graph to the device: keep it out of the samples.
      graphs[i]->launch(s);
      stream.synchronize();
      capturable.push_back(i);
    } catch (const std::exception& e) {
      graphs[i].reset();
      results[i].graph_error = e.what();
    }
  }
  take_samples(
      capturable, [&](std::size_t i) { graphs[i]->launch(s); },
      [&](std::size_t i) -> std::vector<double>& { return results[i].graph_samples_us; });
  for (const std::size_t i : capturable) results[i].graph = summarize(results[i].graph_samples_us);
  return results;
}

int buffer_sets_to_defeat_l2(std::int64_t bytes_per_set, std::int64_t l2_bytes, bool warm) {
  if (bytes_per_set <= 0) throw InputError(fmt::format("bytes per buffer set must be positive, got {}", bytes_per_set));
  if (l2_bytes <= 0) throw InputError(fmt::format("L2 size must be positive, got {} bytes", l2_bytes));
  if (warm) return 1;
  const std::int64_t sets = 2 * l2_bytes / bytes_per_set + 1;
  return static_cast<int>(std::min<std::int64_t>(sets, kMaxBufferSets));
}

}  // namespace convgen
