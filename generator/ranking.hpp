// ranking: how a family narrows its search space to the candidates it offers the tuner.
#pragma once

#include <algorithm>
#include <cstddef>
#include <utility>
#include <vector>

namespace convgen {

// One configuration and its estimated time (µs).
template <class Params>
using Estimated = std::pair<double, Params>;

// Sorts each group by estimate (stable), then takes at most `most` configurations round by round (the best of
// every group before the second best of any, each round by estimate) and returns them ordered by estimate. Groups
// are shapes of one kind (a family's tiles): the tuner then sees different shapes rather than near-copies of one.
template <class Params>
std::vector<Params> best_of_every_group_first(std::vector<std::vector<Estimated<Params>>> groups, std::size_t most) {
  const auto by_estimate = [](const Estimated<Params>& a, const Estimated<Params>& b) { return a.first < b.first; };
  for (auto& group : groups) std::stable_sort(group.begin(), group.end(), by_estimate);
  std::vector<Estimated<Params>> chosen;
  for (std::size_t round = 0; chosen.size() < most; ++round) {
    std::vector<Estimated<Params>> this_round;
    for (const auto& group : groups)
      if (round < group.size()) this_round.push_back(group[round]);
    if (this_round.empty()) break;
    std::stable_sort(this_round.begin(), this_round.end(), by_estimate);
    for (const auto& c : this_round)
      if (chosen.size() < most) chosen.push_back(c);
  }
  std::stable_sort(chosen.begin(), chosen.end(), by_estimate);
  std::vector<Params> params;
  for (const auto& c : chosen) params.push_back(c.second);
  return params;
}

}  // namespace convgen
