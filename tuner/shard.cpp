// shard: the cost-balanced split of tuning jobs, --shard parsing and the launchers' variables.
#include "tuner/shard.hpp"

#include <algorithm>
#include <charconv>
#include <cstdlib>
#include <map>
#include <numeric>

#include <fmt/format.h>

#include "convgen/error.hpp"

namespace convgen {
namespace {

// A whole decimal number filling `text`, or nothing.
std::optional<long long> parse_integer(std::string_view text) {
  long long value = 0;
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (error != std::errc() || end != text.data() + text.size() || text.empty()) return std::nullopt;
  return value;
}

// Reads an integer variable; nothing when unset, an InputError naming it when set to something else.
std::optional<long long> integer_variable(const EnvLookup& env, const char* name) {
  const std::optional<std::string> text = env(name);
  if (!text) return std::nullopt;
  const std::optional<long long> value = parse_integer(*text);
  if (!value) throw InputError(fmt::format("{}: expected an integer, got '{}'", name, *text));
  return value;
}

// A rank and a size from an MPI launcher's pair of variables; nothing unless the rank is set.
std::optional<ShardOrigin> rank_and_size(const EnvLookup& env, const char* rank_name, const char* size_name) {
  const std::optional<long long> rank = integer_variable(env, rank_name);
  if (!rank) return std::nullopt;
  const std::optional<long long> size = integer_variable(env, size_name);
  if (!size) throw InputError(fmt::format("{} is set but {} is not; pass --shard I/N", rank_name, size_name));
  if (*size < 1 || *rank < 0 || *rank >= *size)
    throw InputError(fmt::format("{}={} with {}={} is not a shard (expected 0 <= rank < size); pass --shard I/N",
                                 rank_name, *rank, size_name, *size));
  return ShardOrigin{.shard = {.index = static_cast<int>(*rank), .count = static_cast<int>(*size)},
                     .source = fmt::format("{}={} ({}={})", rank_name, *rank, size_name, *size)};
}

std::optional<ShardOrigin> slurm_array(const EnvLookup& env) {
  const std::optional<long long> id = integer_variable(env, "SLURM_ARRAY_TASK_ID");
  if (!id) return std::nullopt;
  const long long min = integer_variable(env, "SLURM_ARRAY_TASK_MIN").value_or(0);
  const long long step = integer_variable(env, "SLURM_ARRAY_TASK_STEP").value_or(1);
  const std::optional<long long> max = integer_variable(env, "SLURM_ARRAY_TASK_MAX");
  std::optional<long long> count = integer_variable(env, "SLURM_ARRAY_TASK_COUNT");
  if (step < 1)
    throw InputError(fmt::format("SLURM_ARRAY_TASK_STEP: expected a positive integer, got {}; pass --shard I/N", step));
  if (!count && max) count = (*max - min) / step + 1;
  if (!count)
    throw InputError(
        "SLURM_ARRAY_TASK_ID is set but neither SLURM_ARRAY_TASK_COUNT nor SLURM_ARRAY_TASK_MAX is; "
        "pass --shard I/N");
  std::string source = fmt::format("SLURM_ARRAY_TASK_ID={} (SLURM_ARRAY_TASK_MIN={}", *id, min);
  if (step != 1) source += fmt::format(", SLURM_ARRAY_TASK_STEP={}", step);
  source += fmt::format(", SLURM_ARRAY_TASK_COUNT={})", *count);
  const long long offset = *id - min;
  if (*count < 1 || offset < 0 || offset % step != 0 || offset / step >= *count)
    throw InputError(
        fmt::format("{} is not one of {} evenly stepped array tasks (an array given as a list, such as "
                    "--array=1,3,7?); pass --shard I/N",
                    source, *count));
  return ShardOrigin{.shard = {.index = static_cast<int>(offset / step), .count = static_cast<int>(*count)},
                     .source = std::move(source)};
}

}  // namespace

Shard parse_shard(std::string_view text, std::string_view option) {
  const std::size_t slash = text.find('/');
  const std::optional<long long> index = parse_integer(text.substr(0, slash));
  const std::optional<long long> count =
      parse_integer(slash == std::string_view::npos ? std::string_view() : text.substr(slash + 1));
  if (!index || !count)
    throw InputError(fmt::format("{}: expected I/N (shard I of N, I from 0 to N-1), got '{}'", option, text));
  if (*count < 1) throw InputError(fmt::format("{} {}: the count must be at least 1", option, text));
  if (*index < 0 || *index >= *count)
    throw InputError(
        fmt::format("{} {}: the index must be from 0 to {} (shards count from 0)", option, text, *count - 1));
  return {.index = static_cast<int>(*index), .count = static_cast<int>(*count)};
}

std::string shard_path(std::string_view path, const Shard& shard) {
  constexpr std::string_view kPlaceholder = "{shard}";
  std::string out;
  std::size_t start = 0;
  for (std::size_t at = path.find(kPlaceholder); at != std::string_view::npos; at = path.find(kPlaceholder, start)) {
    out += path.substr(start, at - start);
    out += std::to_string(shard.index);
    start = at + kPlaceholder.size();
  }
  out += path.substr(start);
  return out;
}

EnvLookup process_environment() {
  return [](const char* name) -> std::optional<std::string> {
    const char* value = std::getenv(name);
    if (value == nullptr) return std::nullopt;
    return std::string(value);
  };
}

std::optional<ShardOrigin> shard_from_environment(const EnvLookup& env) {
  if (auto origin = slurm_array(env)) return origin;
  if (auto origin = rank_and_size(env, "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE")) return origin;
  return rank_and_size(env, "PMI_RANK", "PMI_SIZE");
}

double tune_cost(const Problem& problem) {
  constexpr double kNominalFlopsPerSecond = 20e12;
  constexpr double kNominalBytesPerSecond = 2e12;
  return kTuneFixedSeconds + kTuneMeasuredCalls * (static_cast<double>(flops(problem)) / kNominalFlopsPerSecond +
                                                   static_cast<double>(min_bytes(problem)) / kNominalBytesPerSecond);
}

std::vector<int> split_jobs(std::span<const ShardJob> jobs, int count) {
  if (count < 1) throw InputError(fmt::format("split_jobs: the shard count must be at least 1, got {}", count));
  // One unit per distinct key, costed by its dearest job.
  std::map<std::string, double> units;
  for (const ShardJob& job : jobs) {
    auto [it, added] = units.emplace(job.key, job.cost);
    if (!added) it->second = std::max(it->second, job.cost);
  }
  std::vector<std::pair<std::string, double>> order(units.begin(), units.end());
  std::stable_sort(order.begin(), order.end(), [](const auto& a, const auto& b) { return a.second > b.second; });
  std::vector<double> load(static_cast<std::size_t>(count), 0.0);
  std::map<std::string, int> shard_of_key;
  for (const auto& [key, cost] : order) {
    const auto least = std::min_element(load.begin(), load.end());  // the first of equals: the lowest index
    *least += cost;
    shard_of_key[key] = static_cast<int>(least - load.begin());
  }
  std::vector<int> shard_of(jobs.size());
  for (std::size_t i = 0; i < jobs.size(); ++i) shard_of[i] = shard_of_key.at(jobs[i].key);
  return shard_of;
}

}  // namespace convgen
