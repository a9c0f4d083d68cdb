// build_ahead: the kernels a ConvContext compiles ahead of a model's first calls (ConvContext::prepare) under the
// policies that do not tune: each problem's recorded best (database_only), or the families' defaults that
// cost_model_only ranks (cost_model_only), all compiled at once on the pool where the first calls would compile one
// problem at a time.
#pragma once

#include <span>
#include <vector>

#include "conv/conv_kernel.hpp"
#include "convgen/convgen.hpp"
#include "tuner/tuner.hpp"
#include "tuner/tuning_db.hpp"

namespace convgen {

// The kernels to build for `problems` under `policy`: database_only, the database's best for each problem that has
// one that this convgen can read (the others are left to conv(), which reports them); cost_model_only, every default
// configuration the tuner's compile order keeps under a limit of 1 (what Tuner::rank_only(problem, 1) compiles).
// Nothing for tune_on_first_use, whose tunes compile their own candidates.
std::vector<BuildRequest> kernels_to_build_ahead(std::span<const Problem* const> problems, TuningPolicy policy,
                                                 const TuningDb& db, const Tuner& tuner);

}  // namespace convgen
