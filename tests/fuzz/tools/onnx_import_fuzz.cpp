// onnx_import_fuzz: the ONNX importer (tools/onnx_import) on any bytes: parse_onnx_model then onnx_conv_layers give
// layers or an InputError, never another exception or a crash, with and without relu_on_load (which marks a subset of
// the same layers and nothing else), and every imported suite survives the shapes CSV round trip. Seeds: corpus/onnx_import, written by tools/make_onnx_seeds.py.
#include "tools/onnx_import/onnx_import.hpp"

#include "convgen/error.hpp"
#include "fuzz_input.hpp"
#include "generator/shapes.hpp"

using namespace convgen;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  try {
    const onnx::ModelProto model = parse_onnx_model(fuzz::text_of(data, size), "fuzz.onnx");
    Suite suite{.name = "fuzz", .layers = onnx_conv_layers(model, "fuzz.onnx")};
    fuzz::require(parse_suite(write_suite_csv(suite), "fuzz.csv") == suite, "imported layers read back from CSV");
    Suite marked{.name = "fuzz", .layers = onnx_conv_layers(model, "fuzz.onnx", true)};
    fuzz::require(marked.layers.size() == suite.layers.size(), "relu_on_load keeps the layers");
    for (std::size_t i = 0; i < marked.layers.size(); ++i) {
      Layer unmarked = marked.layers[i];
      fuzz::require(!unmarked.problem.relu_on_load || unmarked.input_relu, "relu_on_load only after a Relu");
      unmarked.problem.relu_on_load = false;
      fuzz::require(unmarked == suite.layers[i], "relu_on_load changes nothing else");
    }
    fuzz::require(parse_suite(write_suite_csv(marked), "fuzz.csv") == marked, "marked layers read back from CSV");
  } catch (const InputError&) {
  }
  return 0;
}
