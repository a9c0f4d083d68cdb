// convgen-onnx-import: `convgen import onnx MODEL.onnx --out shapes.csv`, the ONNX importer as its own program: it
// links ONNX and protobuf, which convgen itself must not need (the GPU machine has neither).
#include <cstdio>
#include <exception>
#include <filesystem>
#include <fstream>
#include <optional>
#include <string>

#include <fmt/format.h>
#include <CLI/CLI.hpp>

#include "convgen/error.hpp"
#include "generator/shapes.hpp"
#include "tools/onnx_import/onnx_import.hpp"

int main(int argc, char** argv) {
  CLI::App app{
      "convgen import onnx: every Conv node of an ONNX model as a convgen shapes file (shapes/README.md); "
      "identical layers are one row with a count"};
  app.name("convgen import onnx");
  std::string model;
  std::string out;
  std::optional<double> relu_sparsity;
  bool relu_on_load = false;
  app.add_option("model", model, "The ONNX model (.onnx)")->required();
  app.add_option("--out,-o", out, "The shapes file to write (default: standard output); its stem names the suite");
  app.add_option("--relu-act-sparsity", relu_sparsity,
                 "Set act_sparsity to this zero fraction, in [0, 1], for every layer whose input is a Relu's output")
      ->check(CLI::Range(0.0, 1.0));
  app.add_flag("--relu-on-load", relu_on_load,
               "Mark relu_on_load on every layer whose input is a Relu that no conv's epilogue applies and that only "
               "Convs read: that Relu can be dropped, the kernels applying max(0, x) as they load their input");
  CLI11_PARSE(app, argc, argv);
  try {
    const std::filesystem::path model_path(model);
    const std::string suite_name = (out.empty() ? model_path : std::filesystem::path(out)).stem().string();
    convgen::Suite suite = convgen::import_onnx_file(model_path, suite_name, relu_on_load);
    if (relu_sparsity)
      for (convgen::Layer& layer : suite.layers)
        if (layer.input_relu) layer.problem.act_sparsity = *relu_sparsity;
    const std::string csv = fmt::format(
        "# {}: {} Conv nodes of {} in {} rows (convgen import onnx); batch as in the model (symbolic: "
        "1)\n{}",
        suite.name, convgen::suite_conv_count(suite), model_path.filename().string(), suite.layers.size(),
        convgen::write_suite_csv(suite));
    if (out.empty()) {
      fmt::print("{}", csv);
    } else {
      std::ofstream file(out, std::ios::binary);
      file << csv;
      if (!file.flush()) throw convgen::InputError(fmt::format("{}: cannot write", out));
      fmt::print(stderr, "wrote {}: {} Conv nodes in {} rows\n", out, convgen::suite_conv_count(suite),
                 suite.layers.size());
    }
  } catch (const std::exception& e) {
    fmt::print(stderr, "convgen import onnx: error: {}\n", e.what());
    return 1;
  }
  return 0;
}
