// fold: FoldedCNNs' transformation of a suite.
#include "generator/fold.hpp"

#include <cmath>

#include <fmt/format.h>

#include "convgen/error.hpp"

namespace convgen {
namespace {

// The seed's widening of a hidden width: int(width * sqrt(f)), truncated.
int widen(int width, int factor) { return static_cast<int>(width * std::sqrt(static_cast<double>(factor))); }

}  // namespace

std::string_view to_string(FoldKind kind) { return kind == FoldKind::seed ? "seed" : "exact"; }

Suite fold_suite(const Suite& suite, int factor, FoldKind kind) {
  if (factor < 1) throw InputError(fmt::format("fold: the factor must be at least 1, got {}", factor));
  if (suite.layers.empty()) throw InputError(fmt::format("fold: suite '{}' has no layers", suite.name));
  Suite out{.name = fmt::format("{}_{}fold{}", suite.name, kind == FoldKind::seed ? "" : "x", factor), .layers = {}};
  const std::size_t last = suite.layers.size() - 1;
  for (std::size_t i = 0; i < suite.layers.size(); ++i) {
    Layer layer = suite.layers[i];
    Problem& p = layer.problem;
    if (p.n % factor != 0)
      throw InputError(fmt::format("fold: layer '{}': batch {} is not a multiple of the fold factor {} (set the "
                                   "batch with --batch)",
                                   layer.name, p.n, factor));
    if ((i == 0 || i == last) && layer.count != 1 && factor != 1)
      throw InputError(fmt::format("fold: layer '{}' is the network's {} layer and counts {} layers: the first and last "
                                   "rows must be one layer each",
                                   layer.name, i == 0 ? "first" : "last", layer.count));
    p.n /= factor;
    if (kind == FoldKind::exact) {
      p.c *= factor;
      p.k *= factor;
      p.groups *= factor;
    } else {
      if (p.groups != 1)
        throw InputError(fmt::format("fold: layer '{}' has {} groups: the seed's fold widens ungrouped layers only "
                                     "(--exact folds any layer)",
                                     layer.name, p.groups));
      p.c = i == 0 ? p.c * factor : widen(p.c, factor);
      p.k = i == last ? p.k * factor : widen(p.k, factor);
    }
    // A baked filter belongs to the unfolded layer: the folded one has other weights.
    p.weights = {};
    if (const std::string reason = validate(p); !reason.empty())
      throw InputError(fmt::format("fold: layer '{}' folded by {}: {}", layer.name, factor, reason));
    out.layers.push_back(std::move(layer));
  }
  return out;
}

}  // namespace convgen
