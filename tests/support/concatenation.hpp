// concatenation: the element map of a channel concatenation (the pre-activation pass's, conv/affine_concat.hpp), for
// the tests that check a pass element by element against a plain loop.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace convgen::testing_support {

// Calls visit(input, in_index, out_index, channel) for every element of the concatenation of inputs of `channels`
// channels each (batch × channels[i] × pixels, or channels-last batch × pixels × channels[i]) along the channels:
// the input it comes from, its index there and in the output, and its output channel.
template <class Visit>
void for_each_concatenated(const std::vector<int>& channels, int batch, std::int64_t pixels, bool channels_last,
                           Visit visit) {
  std::int64_t out_channels = 0;
  for (int c : channels) out_channels += c;
  for (std::int64_t n = 0; n < batch; ++n)
    for (std::int64_t p = 0; p < pixels; ++p) {
      std::int64_t channel = 0;
      for (std::size_t i = 0; i < channels.size(); ++i)
        for (std::int64_t ci = 0; ci < channels[i]; ++ci, ++channel) {
          const std::int64_t in_index =
              channels_last ? (n * pixels + p) * channels[i] + ci : (n * channels[i] + ci) * pixels + p;
          const std::int64_t out_index =
              channels_last ? (n * pixels + p) * out_channels + channel : (n * out_channels + channel) * pixels + p;
          visit(i, static_cast<std::size_t>(in_index), static_cast<std::size_t>(out_index), static_cast<int>(channel));
        }
    }
}

}  // namespace convgen::testing_support
