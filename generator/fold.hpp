// fold: FoldedCNNs' transformation of a suite (the FoldedCNNs seed): f images folded into one input, so that a small
// CNN runs at batch N / f on wider layers, with higher arithmetic intensity.
#pragma once

#include <string>
#include <string_view>

#include "generator/shapes.hpp"

namespace convgen {

enum class FoldKind {
  // The seed's way (its models' code): the first layer's input channels × f, the last layer's outputs × f, every
  // other width × √f, truncated as the seed's int(width * sqrt(f)) does; a different network (retrained), with the
  // same FLOPs per image where √f is whole.
  seed,
  // The same function computed folded: every layer's channels × f in f groups (block-diagonal weights), so each
  // image keeps its own filter; grouped layers keep their groups within each image.
  exact,
};

std::string_view to_string(FoldKind kind);

// Returns `suite` folded by `factor` (≥ 1): every layer's batch ÷ factor and its widths as `kind` says; the suite's
// name gains "_fold<f>" (seed) or "_xfold<f>" (exact). The first and last rows are the network's first and last
// layers. Throws InputError naming the layer when a batch is not a multiple of the factor, when the seed's way meets
// a grouped layer, or when the first or last row counts more than one layer.
//   Suite folded = fold_suite(load_suite("shapes/noscope_coral.csv"), 4, FoldKind::seed);
Suite fold_suite(const Suite& suite, int factor, FoldKind kind);

}  // namespace convgen
