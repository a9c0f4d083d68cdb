#include "api/build_ahead.hpp"

#include "convgen/error.hpp"
#include "generator/kernel_spec.hpp"

namespace convgen {

std::vector<BuildRequest> kernels_to_build_ahead(std::span<const Problem* const> problems, TuningPolicy policy,
                                                 const TuningDb& db, const Tuner& tuner) {
  std::vector<BuildRequest> requests;
  for (const Problem* problem : problems) {
    switch (policy) {
      case TuningPolicy::database_only:
        if (const std::optional<BestChoice> best = db.best(tuner.gpu(), *problem)) {
          try {
            requests.push_back({*problem, parse_kernel_name(best->kernel)});
          } catch (const InputError&) {  // a name this convgen cannot read: conv() reports it
          }
        }
        break;
      case TuningPolicy::cost_model_only:
        for (KernelSpec& spec : tuner.worth_compiling(*problem, tuning_candidates(*problem, tuner.gpu()), 1))
          requests.push_back({*problem, std::move(spec)});
        break;
      case TuningPolicy::tune_on_first_use:
        break;
    }
  }
  return requests;
}

}  // namespace convgen
