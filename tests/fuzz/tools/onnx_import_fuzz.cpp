// onnx_import_fuzz: the ONNX importer (tools/onnx_import) on any bytes: parse_onnx_model then onnx_conv_layers give
// layers or an InputError, never another exception or a crash, and every imported suite survives the shapes CSV
// round trip. Seeds: corpus/onnx_import, written by tools/make_onnx_seeds.py.
#include "tools/onnx_import/onnx_import.hpp"

#include "convgen/error.hpp"
#include "fuzz_input.hpp"
#include "generator/shapes.hpp"

using namespace convgen;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  try {
    Suite suite{.name = "fuzz", .layers = onnx_conv_layers(parse_onnx_model(fuzz::text_of(data, size), "fuzz.onnx"),
                                                           "fuzz.onnx")};
    fuzz::require(parse_suite(write_suite_csv(suite), "fuzz.csv") == suite, "imported layers read back from CSV");
  } catch (const InputError&) {
  }
  return 0;
}
