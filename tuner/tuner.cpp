// tuner: builds and ranks every candidate, verifies and measures the promising ones in rounds, records outcomes.
#include "tuner/tuner.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <future>
#include <limits>
#include <memory>
#include <numeric>

#include <fmt/format.h>

#include "measure/nvml.hpp"
#include "measure/verification.hpp"
#include "measure/verify.hpp"
#include "conv/conv_kernel.hpp"
#include "convgen/error.hpp"
#include "convgen/version.hpp"
#include "generator/family.hpp"
#include "runtime/compiler.hpp"
#include "runtime/device.hpp"

namespace convgen {
namespace {

using Clock = std::chrono::steady_clock;

double ms_since(Clock::time_point start) {
  return std::chrono::duration<double, std::milli>(Clock::now() - start).count();
}

std::string error_text(const std::exception_ptr& error) {
  try {
    std::rethrow_exception(error);
  } catch (const std::exception& e) {
    return e.what();
  } catch (...) {
    return "unknown error";
  }
}

// The samples and statistics of the headline mode.
const SampleStats& headline_stats(const TimingResult& t) { return t.graph ? *t.graph : t.stream; }
const std::vector<double>& headline_samples(const TimingResult& t) {
  return t.graph ? t.graph_samples_us : t.stream_samples_us;
}

}  // namespace

double headline_us(const TimingResult& timing) { return headline_stats(timing).median; }

std::optional<double> best_time_us(const TuneResult& result) {
  if (result.from_db) return result.from_db->median_us;
  if (!result.best) return std::nullopt;
  const CandidateOutcome& c = result.candidates[*result.best];
  if (!c.timing) return std::nullopt;
  return headline_us(*c.timing);
}

double model_scale(std::span<const PlanEntry> entries) {
  std::vector<double> ratios;
  for (const PlanEntry& e : entries)
    if (e.state == PlanState::measured && std::isfinite(e.predicted_us) && e.predicted_us > 0)
      ratios.push_back(e.measured_us / e.predicted_us);
  if (ratios.empty()) return 1.0;
  std::sort(ratios.begin(), ratios.end());
  const std::size_t n = ratios.size();
  return n % 2 == 1 ? ratios[n / 2] : (ratios[n / 2 - 1] + ratios[n / 2]) / 2;
}

RoundPlan plan_round(std::span<const PlanEntry> entries, int budget, double stop_ratio) {
  const bool exhaustive = budget <= 0;
  int measured = 0;
  std::optional<std::size_t> best;
  for (std::size_t i = 0; i < entries.size(); ++i) {
    if (entries[i].state != PlanState::measured) continue;
    ++measured;
    if (!best || entries[i].measured_us < entries[*best].measured_us) best = i;
  }
  int size = exhaustive ? 8 : (measured == 0 ? 4 : 3);
  if (!exhaustive) size = std::min(size, budget - measured);
  RoundPlan plan;
  if (size <= 0) return plan;
  const double scale = model_scale(entries);
  for (std::size_t i = 0; i < entries.size() && static_cast<int>(plan.fresh.size()) < size; ++i) {
    if (entries[i].state != PlanState::pending) continue;
    // Rank order: once one candidate is predicted too slow, so are the rest. (An infinite prediction stops too.)
    if (!exhaustive && best && !(entries[i].predicted_us * scale <= stop_ratio * entries[*best].measured_us)) break;
    plan.fresh.push_back(i);
  }
  if (!plan.fresh.empty()) plan.carried_best = best;
  return plan;
}

std::vector<std::size_t> candidate_order(std::span<const std::optional<Prediction>> predictions) {
  std::vector<std::size_t> predicted, unpredicted;
  std::vector<Prediction> values;
  for (std::size_t i = 0; i < predictions.size(); ++i) {
    if (predictions[i]) {
      predicted.push_back(i);
      values.push_back(*predictions[i]);
    } else {
      unpredicted.push_back(i);
    }
  }
  std::vector<std::size_t> order;
  for (std::size_t r : rank(values)) order.push_back(predicted[r]);
  order.insert(order.end(), unpredicted.begin(), unpredicted.end());
  return order;
}

MeasurementStatus classify_launch_failure(std::string_view message, const std::optional<Prediction>& prediction) {
  if (message.find("CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES") != std::string_view::npos) return MeasurementStatus::resources;
  // Too many threads or too much shared memory per block come back as an invalid value; trust that reading only
  // where the occupancy rules agree the block cannot fit.
  if (message.find("CUDA_ERROR_INVALID_VALUE") != std::string_view::npos && prediction &&
      prediction->resident_blocks_per_sm == 0)
    return MeasurementStatus::resources;
  return MeasurementStatus::launch_error;
}

std::vector<KernelSpec> tuning_candidates(const Problem& problem, const Gpu& gpu,
                                          const std::vector<std::string>& families) {
  for (const std::string& name : families) family(name);  // throws, naming the known families, for an unknown one
  const auto wanted = [&](const Family* f) {
    return families.empty() || std::find(families.begin(), families.end(), f->name()) != families.end();
  };
  std::vector<KernelSpec> specs;
  for (const Family* f : all_families())
    if (wanted(f))
      for (const KernelSpec& s : f->enumerate(problem, gpu))
        if (std::find(specs.begin(), specs.end(), s) == specs.end()) specs.push_back(s);
  return specs;
}

int compile_limit(const TuneOptions& options) {
  if (options.compile_limit) return std::max(0, *options.compile_limit);
  return options.budget <= 0 ? 0 : std::max(16, 4 * options.budget);
}

Coefficients coefficients_for(const TuningDb* db, const Gpu& gpu) {
  if (db == nullptr) return {};
  if (auto calibration = load_calibration(*db, gpu)) return calibration->coefficients;
  return {};
}

// A problem's candidates built and ranked: the outcomes (rank order) and the kernels that compiled, alongside.
struct Tuner::Prepared {
  TuneResult result;
  std::vector<std::optional<BuiltKernel>> kernels;
};

// A preparation running in the background, and what it prepares. It runs on a thread of its own, not as a task of
// the pool: it waits for the compiles it submits to the pool, which a pool task must never do (with every pool
// thread waiting so, no compile would run).
struct Tuner::Prefetch {
  Problem problem;
  std::vector<std::string> families;
  int compile_limit = 0;
  std::future<Prepared> prepared;
};

Tuner::Tuner(const Gpu& gpu, JitCache& cache, ThreadPool& pool, TuningDb* db, Coefficients coefficients, int device)
    : gpu_(gpu), cache_(cache), pool_(pool), db_(db), coefficients_(coefficients), device_(device) {}

Tuner::~Tuner() = default;  // a future of std::async waits for its thread

std::optional<BestChoice> Tuner::known_best(const Problem& problem, const TuneOptions& options) const {
  if (db_ == nullptr || !options.reuse_best) return std::nullopt;
  return db_->best(gpu_, problem);
}

void Tuner::prefetch(const Problem& problem, const TuneOptions& options) {
  if (known_best(problem, options)) return;
  const int limit = compile_limit(options);
  for (const std::unique_ptr<Prefetch>& p : prefetches_)
    if (p->problem == problem && p->families == options.families && p->compile_limit == limit) return;
  auto prepared = std::async(std::launch::async, [this, problem, families = options.families, limit] {
    return prepare(problem, families, limit);
  });
  prefetches_.push_back(std::make_unique<Prefetch>(Prefetch{problem, options.families, limit, std::move(prepared)}));
  // The oldest not taken ends (its compiles are cached): a tune that returned the database's best left it.
  while (prefetches_.size() > kMaxPrefetches) prefetches_.pop_front();
}

std::optional<Tuner::Prepared> Tuner::take_prefetched(const Problem& problem,
                                                      const std::vector<std::string>& families, int compile_limit) {
  const auto found = std::find_if(prefetches_.begin(), prefetches_.end(), [&](const std::unique_ptr<Prefetch>& p) {
    return p->problem == problem && p->families == families && p->compile_limit == compile_limit;
  });
  if (found == prefetches_.end()) return std::nullopt;
  const std::unique_ptr<Prefetch> taken = std::move(*found);
  prefetches_.erase(found);
  return taken->prepared.get();  // rethrows what the preparation threw, as prepare() here would have
}

namespace {

// The families' default configurations among `candidates`, once each, in family order.
std::vector<KernelSpec> defaults_among(const Problem& problem, const Gpu& gpu,
                                       const std::vector<KernelSpec>& candidates) {
  std::vector<KernelSpec> defaults;
  for (const Family* f : all_families())
    if (auto spec = f->default_spec(problem, gpu))
      if (std::find(candidates.begin(), candidates.end(), *spec) != candidates.end() &&
          std::find(defaults.begin(), defaults.end(), *spec) == defaults.end())
        defaults.push_back(*spec);
  return defaults;
}

}  // namespace

std::vector<KernelSpec> Tuner::worth_compiling(const Problem& problem, std::vector<KernelSpec> candidates,
                                               int limit) const {
  if (limit <= 0 || candidates.size() <= static_cast<std::size_t>(limit)) return candidates;
  std::vector<KernelSpec> kept = compile_order(problem, candidates);
  // The defaults come first and stay, even past the limit.
  const std::size_t defaults = defaults_among(problem, gpu_, candidates).size();
  kept.resize(std::min(kept.size(), std::max(defaults, static_cast<std::size_t>(limit))));
  return kept;
}

std::vector<KernelSpec> Tuner::compile_order(const Problem& problem, const std::vector<KernelSpec>& candidates) const {
  // Ranked by the model before any compile: the ptxas report (registers, spills) is not known yet, so occupancy is
  // bounded by threads and shared memory only; the report-aware ranking of prepare() then orders those kept.
  std::vector<std::optional<Prediction>> predictions;
  for (const KernelSpec& s : candidates) {
    try {
      predictions.push_back(predict(s.family, cost_features_for(problem, s), PtxasReport{}, gpu_, coefficients_));
    } catch (const std::exception&) {
      predictions.push_back(std::nullopt);  // kept only if a default (below); it would fail its build anyway
    }
  }
  std::vector<KernelSpec> order = defaults_among(problem, gpu_, candidates);
  for (std::size_t i : candidate_order(predictions))
    if (predictions[i] && std::find(order.begin(), order.end(), candidates[i]) == order.end())
      order.push_back(candidates[i]);
  return order;
}

Tuner::Prepared Tuner::prepare(const Problem& problem, const std::vector<std::string>& families, int compile_limit) {
  const auto start = Clock::now();
  std::vector<BuildRequest> requests;
  for (const KernelSpec& s : worth_compiling(problem, tuning_candidates(problem, gpu_, families), compile_limit))
    requests.push_back({problem, s});
  std::vector<BuildOutcome> built = build_kernels(requests, gpu_, cache_, pool_);

  std::vector<CandidateOutcome> outcomes(requests.size());
  std::vector<std::optional<Prediction>> predictions(requests.size());
  for (std::size_t i = 0; i < requests.size(); ++i) {
    CandidateOutcome& c = outcomes[i];
    c.spec = requests[i].spec;
    if (const auto* error = std::get_if<std::exception_ptr>(&built[i])) {
      c.status = MeasurementStatus::compile_error;
      c.error = error_text(*error);
      continue;
    }
    const BuiltKernel& k = std::get<BuiltKernel>(built[i]);
    c.report = k.cubin.report;
    c.compile_ms = k.cubin.compile_ms;
    c.prediction = predict(c.spec.family, cost_features_for(problem, c.spec), k.cubin.report, gpu_, coefficients_);
    predictions[i] = c.prediction;
  }

  // The model ranks; the families' own default configurations (their heuristics) go first, so the first round
  // always measures them: a safety net where the model misjudges a problem unlike those it was calibrated on
  // (replaying the H200 calibration measurements, dropping it lowered the worst layer from 0.87 to 0.71 of the
  // exhaustive best).
  std::vector<std::size_t> order = candidate_order(predictions);
  std::vector<KernelSpec> defaults;
  for (const Family* f : all_families())
    if (auto spec = f->default_spec(problem, gpu_)) defaults.push_back(*spec);
  std::stable_partition(order.begin(), order.end(), [&](std::size_t i) {
    return predictions[i] && std::find(defaults.begin(), defaults.end(), outcomes[i].spec) != defaults.end();
  });

  Prepared prepared;
  prepared.result.problem = problem;
  for (std::size_t i : order) {
    prepared.result.candidates.push_back(std::move(outcomes[i]));
    if (auto* k = std::get_if<BuiltKernel>(&built[i]))
      prepared.kernels.emplace_back(std::move(*k));
    else
      prepared.kernels.emplace_back();
  }
  prepared.result.compile_wall_ms = ms_since(start);
  return prepared;
}

TuneResult Tuner::rank_only(const Problem& problem, int compile_limit) {
  const auto start = Clock::now();
  TuneResult result = prepare(problem, {}, compile_limit).result;
  result.wall_ms = ms_since(start);
  return result;
}

TuneResult Tuner::tune(const Problem& problem, const TuneOptions& options) {
  const auto start = Clock::now();
  if (std::optional<BestChoice> known = known_best(problem, options)) {
    TuneResult result{.problem = problem};
    result.candidates.push_back({.spec = parse_kernel_name(known->kernel)});
    result.best = 0;
    result.from_db = std::move(known);
    result.wall_ms = ms_since(start);
    return result;
  }
  check_timing_options(options.timing);
  if (options.stop_ratio <= 0)
    throw InputError(fmt::format("stop ratio: expected a positive number, got {}", options.stop_ratio));

  const int limit = compile_limit(options);
  std::optional<Prepared> prefetched = take_prefetched(problem, options.families, limit);
  Prepared prepared = prefetched ? std::move(*prefetched) : prepare(problem, options.families, limit);
  TuneResult& result = prepared.result;
  result.prefetched = prefetched.has_value();
  std::vector<CandidateOutcome>& cands = result.candidates;
  const std::size_t n = cands.size();

  std::vector<PlanEntry> entries(n);
  bool any_built = false;
  for (std::size_t i = 0; i < n; ++i) {
    entries[i].predicted_us = cands[i].prediction ? cands[i].prediction->time_us
                                                  : std::numeric_limits<double>::infinity();
    entries[i].state = prepared.kernels[i] ? PlanState::pending : PlanState::failed;
    any_built = any_built || prepared.kernels[i].has_value();
  }

  // Per-candidate clocks of the round that last measured it, for the records.
  std::vector<double> clock_start(n, 0), clock_end(n, 0);
  if (any_built) {
    const Problem& p = problem;
    TimingOptions timing = options.timing;
    timing.buffer_sets = buffer_sets_to_defeat_l2(buffer_set_bytes(p), gpu_.l2_bytes, options.warm);
    const TensorSource activation = options.activation ? *options.activation : expected_activation(p, options.pattern);
    const TensorSource filter = options.filter ? *options.filter : expected_filter(p);
    ConvMeasurement measurement(p, {.activation = activation, .filter = filter, .seed = options.seed},
                                timing.buffer_sets);
    Stream stream;
    const Nvml* nvml = Nvml::open(device_);
    std::vector<std::optional<ConvCandidate>> verified(n);

    // Loads and verifies candidate i; a failure is classified into its outcome.
    const auto verify = [&](std::size_t i) {
      CandidateOutcome& c = cands[i];
      try {
        ConvCandidate candidate = kernel_candidate(*prepared.kernels[i]);
        const Verification v = measurement.verify(candidate, stream);
        c.verification = v.stats;
        if (!v.passed) {
          c.status = MeasurementStatus::wrong_result;
          c.error = v.failure;
          return false;
        }
        verified[i] = std::move(candidate);
        return true;
      } catch (const NoDeviceError&) {
        throw;
      } catch (const std::exception& e) {
        c.status = classify_launch_failure(e.what(), c.prediction);
        c.error = e.what();
        try {
          stream.synchronize();
        } catch (const std::exception&) {
          // A sticky error: the next candidates will fail too, and say so.
        }
        return false;
      }
    };
    const auto candidate = [&](std::size_t i) { return measurement.timed(*verified[i]); };
    const auto sm_clock = [&] { return nvml ? nvml->sm_clock_mhz().value_or(0.0) : 0.0; };

    for (;;) {
      const RoundPlan plan = plan_round(entries, options.budget, options.stop_ratio);
      if (plan.fresh.empty()) break;
      std::vector<std::size_t> round;
      for (std::size_t i : plan.fresh) {
        if (verify(i))
          round.push_back(i);
        else
          entries[i].state = PlanState::failed;
      }
      if (round.empty()) continue;  // every newcomer failed: plan again from the next ones
      if (plan.carried_best) round.push_back(*plan.carried_best);
      std::vector<Candidate> timed;
      for (std::size_t i : round) timed.push_back(candidate(i));
      const double clock0 = sm_clock();
      std::vector<std::optional<TimingResult>> results(round.size());
      try {
        const std::vector<TimingResult> all = time_interleaved(timed, timing, stream);
        for (std::size_t r = 0; r < round.size(); ++r) results[r] = all[r];
      } catch (const NoDeviceError&) {
        throw;
      } catch (const std::exception&) {
        // A verified kernel failed while timed: time each alone to find the one at fault.
        for (std::size_t r = 0; r < round.size(); ++r) {
          try {
            results[r] = time_interleaved(std::span(&timed[r], 1), timing, stream).front();
          } catch (const std::exception& e) {
            cands[round[r]].status = classify_launch_failure(e.what(), cands[round[r]].prediction);
            cands[round[r]].error = e.what();
            entries[round[r]].state = PlanState::failed;
            try {
              stream.synchronize();
            } catch (const std::exception&) {
            }
          }
        }
      }
      const double clock1 = sm_clock();
      ++result.rounds;
      for (std::size_t r = 0; r < round.size(); ++r) {
        if (!results[r]) continue;
        const std::size_t i = round[r];
        cands[i].timing = results[r];
        entries[i].state = PlanState::measured;
        entries[i].measured_us = headline_us(*results[r]);
        clock_start[i] = clock0;
        clock_end[i] = clock1;
      }
    }
  }

  for (std::size_t i = 0; i < n; ++i) {
    if (entries[i].state != PlanState::measured) continue;
    ++result.measured;
    if (!result.best || entries[i].measured_us < entries[*result.best].measured_us) result.best = i;
  }

  if (db_ != nullptr && options.record) {
    const std::string driver = driver_version(), nvrtc = nvrtc_version();
    const std::string convgen = fmt::format("{} ({})", build_version(), build_commit());
    for (std::size_t i = 0; i < n; ++i) {
      const CandidateOutcome& c = cands[i];
      if (c.status == MeasurementStatus::ok && !c.timing) continue;  // never reached
      MeasurementRecord m{.gpu = gpu_, .problem = problem, .kernel = kernel_name(c.spec), .status = c.status,
                          .error_text = c.error};
      if (c.timing) {
        const SampleStats& s = headline_stats(*c.timing);
        m.median_us = s.median;
        m.p10_us = s.p10;
        m.p90_us = s.p90;
        m.samples_us = headline_samples(*c.timing);
      }
      if (c.verification) m.rel_l2_error = c.verification->rel_l2;
      m.registers = c.report.registers;
      m.spill_bytes = c.report.spill_store_bytes;
      m.smem_bytes = c.report.smem_bytes;
      if (c.prediction && std::isfinite(c.prediction->time_us)) m.predicted_us = c.prediction->time_us;
      m.sm_clock_start_mhz = clock_start[i];
      m.sm_clock_end_mhz = clock_end[i];
      m.driver = driver;
      m.nvrtc = nvrtc;
      m.convgen = convgen;
      db_->record(m);
    }
  }
  result.wall_ms = ms_since(start);
  return result;
}

}  // namespace convgen
