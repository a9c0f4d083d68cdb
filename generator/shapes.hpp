// shapes: conv layer suites read from and written to shapes/*.csv (one CSV per network; format in shapes/README.md).
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

#include "convgen/enum_names.hpp"
#include "convgen/problem.hpp"

namespace convgen {

// One conv layer of a network: a name, its problem, and how many times the network runs it. `input_relu` says its
// input is a ReLU's output (known for imported models, `convgen import onnx`; activation-sparse kernels skip the
// zeros); what follows it and is fused into its store (bias, residual, activation) is its problem's epilogue.
struct Layer {
  std::string name;
  Problem problem;
  int count = 1;
  bool input_relu = false;
  bool operator==(const Layer&) const = default;
};

// A list of layers, e.g. every conv of ResNet-50; the name is the file stem ("resnet50").
struct Suite {
  std::string name;
  std::vector<Layer> layers;
  bool operator==(const Suite&) const = default;
};

// Parses shapes CSV text; `file_name` names the input in error messages and its stem names the suite.
// Throws InputError "file:line: what was expected" for the first bad line.
//   Suite s = parse_suite("name,n,c,k,h,w,r,s,pad\nconv,1,64,64,56,56,3,3,1\n", "shapes/x.csv");
Suite parse_suite(std::string_view text, std::string_view file_name);

// Reads and parses a shapes file; the suite is named after the file stem.
Suite load_suite(const std::filesystem::path& path);

// Writes a suite as shapes CSV with every column; parse_suite reads it back equal (given a file of the same stem).
std::string write_suite_csv(const Suite& suite);

// Returns the layers with identical ones (equal problem, epilogue included, and input_relu) merged into the first one's
// row, their counts added; the order of first occurrences is kept.
//   merge_identical_layers({{.name = "a", .problem = p}, {.name = "b", .problem = p}}) -> {{"a", p, count 2}}
std::vector<Layer> merge_identical_layers(const std::vector<Layer>& layers);

// Returns the suite with every layer's batch set to `n` (the --batch override); throws InputError unless n > 0.
Suite with_batch(const Suite& suite, int n);

// Returns the FLOPs of one pass through the suite: each layer's flops times its count.
std::int64_t suite_flops(const Suite& suite);

// Returns the number of convolutions one pass runs: the sum of the counts.
int suite_conv_count(const Suite& suite);

}  // namespace convgen
