// choice_replay: how the choices made without tuning fare against tuning, replayed on measurements (no GPU). Per GPU
// and problem whose families' default configurations were all measured (a tune measures them in its first round):
// the first-run default (default_choice, what `convgen generate` and a first `convgen run` use), the cost-model-only
// policy's choice (the defaults ranked by the model with their ptxas reports, the first taken) and the model's first
// among every measured candidate, each against the fastest measured (`convgen db choices`).
#pragma once

#include <span>
#include <string>
#include <vector>

#include "convgen/gpu.hpp"
#include "convgen/problem.hpp"
#include "tuner/cost_model.hpp"
#include "tuner/tuning_db.hpp"

namespace convgen {

struct ChoicePick {
  std::string kernel;  // canonical name
  double measured_us = 0;
};

// One GPU and problem.
struct ProblemChoices {
  Gpu gpu;
  Problem problem;
  int defaults = 0;       // families serving the problem (each with its default configuration)
  int measured = 0;       // kernels measured ok for it (each at its fastest median)
  ChoicePick first_run;   // default_choice
  ChoicePick cost_model;  // the default the model predicts fastest
  ChoicePick model_all;   // the measured kernel the model predicts fastest
  ChoicePick fastest;     // the fastest measured
};

struct ChoiceReplay {
  std::vector<ProblemChoices> problems;  // every default measured; by GPU, then problem key
  int incomplete = 0;  // problems with ok measurements of which a family's default was not measured (or not read)
  // Geometric means over `problems` of each choice's time over the fastest measured.
  double first_run_ratio = 0;
  double cost_model_ratio = 0;
  double model_all_ratio = 0;
  int cost_model_is_first_run = 0;  // problems where the cost-model-only policy picks the first-run default
};

// Replays the choices on `measurements` (any status: only ok ones count; a kernel measured more than once counts at
// its fastest median; names of earlier convgens are read as theirs), predicting with `coefficients` (a fresh
// database's are the defaults: Coefficients{}).
ChoiceReplay replay_choices(std::span<const MeasurementRecord> measurements, const Coefficients& coefficients = {});

}  // namespace convgen
