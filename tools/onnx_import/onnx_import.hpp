// onnx_import: reads the Conv nodes of an ONNX model into convgen layers (`convgen import onnx`).
#pragma once

#include <filesystem>
#include <string_view>
#include <vector>

#include <onnx/onnx_pb.h>

#include "generator/shapes.hpp"

namespace convgen {

// Parses the bytes of an .onnx file; `file_name` names it in messages. Throws InputError
// "<file>: not an ONNX model: ..." when protobuf cannot parse the bytes (not ONNX, or truncated) or they hold no
// graph.
//   onnx::ModelProto model = parse_onnx_model(bytes, "resnet50.onnx");
onnx::ModelProto parse_onnx_model(std::string_view bytes, std::string_view file_name);

// Returns one layer per Conv node of the model's main graph, in graph order, with count 1:
// - the shapes of X and W from the graph's inputs, initializers and value_info, running ONNX shape inference when
//   some Conv's are missing (in a child process: libonnx crashes on some malformed graphs, and such a crash becomes
//   the error "... has no shape, and ONNX shape inference cannot give it (ONNX's shape inference crashed ...)");
//   a symbolic batch dim becomes 1 (shapes files hold batch 1; `--batch` sets it);
// - stride, dilation, group and padding, auto_pad (SAME_UPPER, SAME_LOWER, VALID) included; padding that differs
//   between the two sides of a dim is served as the begin padding when that gives the same output size (the extra
//   end padding is then never read), else refused;
// - 1-D, 2-D and 3-D convs (layouts ncw, nchw, ncdhw), fp32, fp16 and bf16 tensors;
// - input_relu when X is a Relu's output, and the problem's epilogue: bias (Conv's third input), then one Add (a
//   residual, beta 1) and a Relu that alone consume the output in a chain (ending after the Relu);
// - names from the node names, characters other than letters, digits, '_', '.' and '-' replaced by '_', unnamed
//   nodes "conv<i>" (i counts Conv nodes from 1), made unique with "_2", "_3" ...
// Throws InputError "<file>: node '<name>' (Conv): <what>" for a Conv it cannot read (missing shape, unsupported
// data type or rank, padding it cannot serve), and "<file>: no Conv node ..." for a model without one.
// With relu_on_load, a layer whose X is a Relu's output that no conv's epilogue applies and that only Convs read (as
// their X) takes relu_on_load: the deployment drops that Relu and the kernel applies max(0, x) as it loads X.
std::vector<Layer> onnx_conv_layers(onnx::ModelProto model, std::string_view file_name, bool relu_on_load = false);

// Reads an .onnx file into a suite named `suite_name`: onnx_conv_layers (with relu_on_load), identical layers merged
// (merge_identical_layers). Throws InputError as those do, and "<file>: cannot open ONNX model".
//   Suite suite = import_onnx_file("resnet50.onnx", "resnet50");
Suite import_onnx_file(const std::filesystem::path& path, std::string_view suite_name, bool relu_on_load = false);

}  // namespace convgen
