// importers: reads the seed projects' layer lists (SEER config lists, the sparse-conv seed's B,C,H,W,N tables) as
// suites.
#pragma once

#include <string_view>

#include "generator/shapes.hpp"

namespace convgen {

// Parses a SEER config list: the first data line is the number of configs, then one line per config,
// `batch in_c in_w out_c out_w k stride pad` separated by blanks (square inputs, square k x k filters).
// Layers are named config_1, config_2, ... in file order, NCHW fp32, count 1. Lines starting with '#' are skipped.
// Throws InputError "file:line: ..." when a field is not a number, out_w does not follow from
// in_w, k, stride and pad, or the count disagrees with the lines.
//   Suite s = import_seer_list("1\n128 16 128 16 128 3 1 1\n", "Test-set-II.txt");
Suite import_seer_list(std::string_view text, std::string_view file_name);

// Parses the sparse-conv seed's per-layer table: a header starting B,C,H,W,N (B batch, C input channels, H, W,
// N output channels), optionally followed by timing columns t1..tn, which are ignored. Every row is a
// 3x3 stride 1 pad 1 layer in NHWC fp32 (what the seed ran), named layer_1, layer_2, ... in file order.
//   Suite s = import_bchwn_list("B,C,H,W,N,t1\n1,128,56,56,32,40.6\n", "densenet121.csv");
Suite import_bchwn_list(std::string_view text, std::string_view file_name);

}  // namespace convgen
