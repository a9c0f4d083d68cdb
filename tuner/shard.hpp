// shard: splits tuning jobs over the tasks of a cluster job (Slurm array, MPI ranks) by predicted cost, the same
// way in every task, and reads which task this process is from --shard or the launcher's variables.
#pragma once

#include <functional>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "convgen/problem.hpp"

namespace convgen {

// Shard `index` of `count`. Indices count from 0, as Slurm array offsets and MPI ranks do: 0 <= index < count.
struct Shard {
  int index = 0;
  int count = 1;
  bool operator==(const Shard&) const = default;
};

// Parses "I/N" (shard I of N, I from 0 to N-1). `option` names the input in messages. Throws InputError:
//   parse_shard("2/4")  -> {2, 4}
//   parse_shard("4/4")  -> "--shard 4/4: the index must be from 0 to 3 (shards count from 0)"
Shard parse_shard(std::string_view text, std::string_view option = "--shard");

// Replaces every "{shard}" in `path` by the shard's index: one --db argument serves every task of an array.
//   shard_path("tune-{shard}.sqlite", {2, 4}) -> "tune-2.sqlite"
std::string shard_path(std::string_view path, const Shard& shard);

// A shard and where it came from, for the log line ("SLURM_ARRAY_TASK_ID=5 (SLURM_ARRAY_TASK_MIN=1 ...)").
struct ShardOrigin {
  Shard shard;
  std::string source;
  bool operator==(const ShardOrigin&) const = default;
};

// Reads an environment variable: nothing when it is unset. Tests pass a map instead of the process environment.
using EnvLookup = std::function<std::optional<std::string>(const char* name)>;

// Returns the process environment as an EnvLookup (std::getenv).
EnvLookup process_environment();

// Returns the shard the launcher gives this process, or nothing when no launcher variable is set. Looked for in
// this order:
//   Slurm job array: SLURM_ARRAY_TASK_ID and SLURM_ARRAY_TASK_COUNT; the index is (ID - SLURM_ARRAY_TASK_MIN) /
//     SLURM_ARRAY_TASK_STEP (MIN 0 and STEP 1 when unset), since `--array=1-8` numbers tasks from 1; without COUNT,
//     (SLURM_ARRAY_TASK_MAX - MIN) / STEP + 1;
//   Open MPI: OMPI_COMM_WORLD_RANK and OMPI_COMM_WORLD_SIZE;
//   MPICH, Intel MPI and `srun --mpi=pmi2`: PMI_RANK and PMI_SIZE.
// Throws InputError naming the variables when they are set but do not make a shard (a value that is no integer,
// an ID outside the array, an array given as a list rather than a range), saying to pass --shard instead.
std::optional<ShardOrigin> shard_from_environment(const EnvLookup& env);

// What one job costs to tune, in seconds, predicted without a GPU so that every task computes the same split. Only
// proportions matter. A fixed part (compiling the candidates, verifying them, the CPU reference, the database)
// and the measured calls at nominal rates (20 TFLOP/s, 2 TB/s: no device is asked, so every task agrees):
//   tune_cost(p) = kTuneFixedSeconds + kTuneMeasuredCalls * (flops(p) / 20e12 + min_bytes(p) / 2e12)
// The fixed part dominates at today's budgets: on an H200 a guided tune took 1.4-1.9 s per layer with a cold JIT
// cache, 1.1-1.5 s of it compiling, at batch 1 and 8 alike (bench/results/h200/tuning-study.md).
inline constexpr double kTuneFixedSeconds = 1.5;
inline constexpr double kTuneMeasuredCalls = 1500;  // about 10 candidates x (10 samples x 10 calls + warm-up)
double tune_cost(const Problem& problem);

// One job to split: a key naming it (the problem key: jobs with one key are one problem, tuned once) and its cost.
struct ShardJob {
  std::string key;
  double cost = 0;
};

// Splits `jobs` over `count` shards and returns the shard of every job, in the jobs' order. Jobs with equal keys
// stay together and count once (after the first, the others are database hits). Longest processing time first:
// the distinct jobs sorted by cost (descending), then key, each given to the shard with the least cost so far
// (the lowest index among equals). The result depends only on the jobs, so every task computes the same split;
// the costs of any two shards differ by at most the largest job's. Throws InputError for a count below 1.
//   std::vector<int> shard_of = split_jobs(jobs, 4);  // jobs[i] is tuned by the task with index shard_of[i]
std::vector<int> split_jobs(std::span<const ShardJob> jobs, int count);

}  // namespace convgen
