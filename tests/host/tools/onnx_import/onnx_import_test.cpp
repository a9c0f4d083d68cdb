// onnx_import_test: models built with ONNX's own protobuf classes, read into layers, every error with its message,
// ResNet-50 against shapes/resnet50.csv, and `convgen import onnx` end to end.
#include "tools/onnx_import/onnx_import.hpp"

#include <algorithm>
#include <array>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "support/errors.hpp"
#include "support/run_convgen.hpp"
#include "support/scratch_dir.hpp"

#include "convgen/error.hpp"

namespace convgen {
namespace {

using testing_support::input_error;
using Dims = std::vector<std::int64_t>;
constexpr int kFloat = onnx::TensorProto_DataType_FLOAT;
using testing_support::process_scratch;

// A Conv's weight and attributes; empty attributes are left out of the node (ONNX's defaults).
struct ConvSpec {
  std::int64_t k = 1;
  std::int64_t c_per_group = 1;
  Dims kernel;
  Dims strides, pads, dilations;
  std::int64_t group = 0;
  std::string auto_pad;
  bool bias = true;
};

// A model under construction: opset 13; a node named N writes "N_output_0".
class ModelBuilder {
 public:
  ModelBuilder() {
    model_.set_ir_version(8);
    onnx::OperatorSetIdProto* opset = model_.add_opset_import();
    opset->set_domain("");
    opset->set_version(13);
    graph()->set_name("test");
  }

  onnx::GraphProto* graph() { return model_.mutable_graph(); }
  const onnx::ModelProto& model() const { return model_; }

  // Declares a graph input; a dim of -1 is symbolic ("N").
  void input(const std::string& name, const Dims& dims, int elem_type = kFloat) {
    typed(graph()->add_input(), name, dims, elem_type);
  }

  void value_info(const std::string& name, const Dims& dims, int elem_type = kFloat) {
    typed(graph()->add_value_info(), name, dims, elem_type);
  }

  // A weight: an initializer with dims and no data (the importer reads only its shape).
  void weight(const std::string& name, const Dims& dims, int elem_type = kFloat) {
    onnx::TensorProto* tensor = graph()->add_initializer();
    tensor->set_name(name);
    tensor->set_data_type(elem_type);
    for (const auto d : dims) tensor->add_dims(d);
  }

  onnx::NodeProto& node(const std::string& op, const std::string& name, const std::vector<std::string>& inputs) {
    onnx::NodeProto* node = graph()->add_node();
    node->set_op_type(op);
    node->set_name(name);
    for (const std::string& in : inputs) node->add_input(in);
    node->add_output(name + "_output_0");
    return *node;
  }

  void output(const std::string& name) { graph()->add_output()->set_name(name); }

  // Adds a Conv reading `x`: weight "<name>.weight" (K, C/group, kernel...), bias "<name>.bias"; returns its output.
  std::string conv(const std::string& name, const std::string& x, const ConvSpec& spec, int elem_type = kFloat) {
    Dims w = {spec.k, spec.c_per_group};
    w.insert(w.end(), spec.kernel.begin(), spec.kernel.end());
    weight(name + ".weight", w, elem_type);
    std::vector<std::string> inputs = {x, name + ".weight"};
    if (spec.bias) {
      weight(name + ".bias", {spec.k}, elem_type);
      inputs.push_back(name + ".bias");
    }
    onnx::NodeProto& n = node("Conv", name, inputs);
    ints(n, "kernel_shape", spec.kernel);
    ints(n, "strides", spec.strides);
    ints(n, "pads", spec.pads);
    ints(n, "dilations", spec.dilations);
    if (spec.group != 0) {
      onnx::AttributeProto* a = n.add_attribute();
      a->set_name("group");
      a->set_type(onnx::AttributeProto_AttributeType_INT);
      a->set_i(spec.group);
    }
    if (!spec.auto_pad.empty()) {
      onnx::AttributeProto* a = n.add_attribute();
      a->set_name("auto_pad");
      a->set_type(onnx::AttributeProto_AttributeType_STRING);
      a->set_s(spec.auto_pad);
    }
    return n.output(0);
  }

  std::string relu(const std::string& name, const std::string& x) { return node("Relu", name, {x}).output(0); }
  std::string add(const std::string& name, const std::string& a, const std::string& b) {
    return node("Add", name, {a, b}).output(0);
  }

  // Writes the model to a file under the temporary folder; returns its path.
  std::filesystem::path write(const std::string& file_name) const {
    const auto path = process_scratch() / file_name;
    std::ofstream(path, std::ios::binary) << model_.SerializeAsString();
    return path;
  }

  static void ints(onnx::NodeProto& node, const std::string& name, const Dims& values) {
    if (values.empty()) return;
    onnx::AttributeProto* a = node.add_attribute();
    a->set_name(name);
    a->set_type(onnx::AttributeProto_AttributeType_INTS);
    for (const auto v : values) a->add_ints(v);
  }

 private:
  static void typed(onnx::ValueInfoProto* value, const std::string& name, const Dims& dims, int elem_type) {
    value->set_name(name);
    onnx::TypeProto_Tensor* tensor = value->mutable_type()->mutable_tensor_type();
    tensor->set_elem_type(elem_type);
    onnx::TensorShapeProto* shape = tensor->mutable_shape();
    for (const auto d : dims) {
      if (d < 0)
        shape->add_dim()->set_dim_param("N");
      else
        shape->add_dim()->set_dim_value(d);
    }
  }

  onnx::ModelProto model_;
};

std::vector<Layer> layers_of(const ModelBuilder& b) { return onnx_conv_layers(b.model(), "m.onnx"); }

std::string import_error(const ModelBuilder& b) {
  return input_error([&] { layers_of(b); });
}

TEST(OnnxImport, AConvWithExplicitShapesGivesItsProblem) {
  ModelBuilder b;
  b.input("x", {1, 64, 56, 56});
  const std::string y = b.conv("conv", "x", {.k = 128, .c_per_group = 64, .kernel = {3, 3}, .pads = {1, 1, 1, 1}});
  b.value_info(y, {1, 128, 56, 56});
  b.output(y);
  const std::vector<Layer> layers = layers_of(b);
  ASSERT_EQ(layers.size(), 1u);
  EXPECT_EQ(layers[0], (Layer{.name = "conv",
                              .problem = {.n = 1,
                                          .c = 64,
                                          .k = 128,
                                          .input = {1, 56, 56},
                                          .filter = {1, 3, 3},
                                          .padding = {0, 1, 1},
                                          .epilogue = {.bias = true}},
                              .input_relu = false}));
}

TEST(OnnxImport, ASymbolicBatchBecomesOne) {
  ModelBuilder b;
  b.input("x", {-1, 8, 10, 10});
  b.output(b.conv("conv", "x", {.k = 8, .c_per_group = 8, .kernel = {3, 3}, .bias = false}));
  const std::vector<Layer> layers = layers_of(b);
  ASSERT_EQ(layers.size(), 1u);
  EXPECT_EQ(layers[0].problem.n, 1);
  EXPECT_TRUE(is_identity(layers[0].problem.epilogue));
}

TEST(OnnxImport, ShapesTheGraphLacksComeFromShapeInference) {
  ModelBuilder b;
  b.input("x", {2, 3, 32, 32});
  const std::string a =
      b.conv("a", "x", {.k = 16, .c_per_group = 3, .kernel = {3, 3}, .strides = {2, 2}, .pads = {1, 1, 1, 1}});
  onnx::NodeProto& pool = b.node("MaxPool", "pool", {b.relu("relu", a)});
  ModelBuilder::ints(pool, "kernel_shape", {2, 2});
  ModelBuilder::ints(pool, "strides", {2, 2});
  b.output(b.conv("b", pool.output(0), {.k = 32, .c_per_group = 16, .kernel = {1, 1}}));
  const std::vector<Layer> layers = layers_of(b);
  ASSERT_EQ(layers.size(), 2u);
  EXPECT_EQ(layers[0].problem, (Problem{.n = 2,
                                        .c = 3,
                                        .k = 16,
                                        .input = {1, 32, 32},
                                        .filter = {1, 3, 3},
                                        .stride = {1, 2, 2},
                                        .padding = {0, 1, 1},
                                        .epilogue = {.bias = true, .act = Activation::relu}}));
  EXPECT_EQ(layers[1].problem,
            (Problem{.n = 2, .c = 16, .k = 32, .input = {1, 8, 8}, .filter = {1, 1, 1}, .epilogue = {.bias = true}}));
  EXPECT_FALSE(layers[1].input_relu);  // its input is the MaxPool's
}

TEST(OnnxImport, AShapeInferenceCannotGiveIsAnErrorNamingTheNodeAndTheInput) {
  ModelBuilder b;
  b.input("x", {1, 8, 16, 16});
  onnx::NodeProto& mystery = b.node("Mystery", "mystery", {"x"});
  mystery.set_domain("com.example");
  b.output(b.conv("head/conv", mystery.output(0), {.k = 8, .c_per_group = 8, .kernel = {3, 3}}));
  EXPECT_EQ(import_error(b),
            "m.onnx: node 'head/conv' (Conv): input 'mystery_output_0' (X) has no shape, and ONNX shape inference "
            "cannot give it (inference failed: [TypeInferenceError] Cannot infer type and shape for node name mystery. "
            "No opset import for domaincom.example optype Mystery)");
}

// Found by the onnx_import fuzz target (tests/fuzz/crashes/onnx_import): libonnx 1.12's Conv shape inference reads
// past an empty vector when W has more dims than X, and used to take the importer down with it.
TEST(OnnxImport, AModelThatCrashesOnnxShapeInferenceIsAnErrorNotACrash) {
  ModelBuilder b;
  b.input("x", {1, 8});
  b.weight("w", {8, 8, 2, 2});
  onnx::NodeProto& conv = b.node("Conv", "conv", {b.relu("relu", "x"), "w"});  // no kernel_shape: W's dims
  ModelBuilder::ints(conv, "pads", {0, 0, 1, 1});
  b.output(conv.output(0));
  EXPECT_EQ(import_error(b),
            "m.onnx: node 'conv' (Conv): input 'relu_output_0' (X) has no shape, and ONNX shape inference cannot give "
            "it (ONNX's shape inference crashed on this model, ended by signal 11 (Segmentation fault))");
}

// Found by the onnx_import fuzz target: a Conv without outputs was read past its (empty) output list.
TEST(OnnxImport, AConvWithoutOutputIsRefusedNamingTheNode) {
  ModelBuilder b;
  b.input("x", {1, 8, 16, 16});
  b.conv("conv", "x", {.k = 8, .c_per_group = 8, .kernel = {3, 3}});
  b.graph()->mutable_node(0)->clear_output();
  EXPECT_EQ(import_error(b), "m.onnx: node 'conv' (Conv): has no output Y");
}

// The same for an Add after a Conv: the epilogue's chain stops there.
TEST(OnnxImport, AnAddWithoutOutputEndsTheEpilogueChain) {
  ModelBuilder b;
  b.input("x", {1, 8, 16, 16});
  b.input("r", {1, 8, 16, 16});
  const std::string y = b.conv("conv", "x", {.k = 8, .c_per_group = 8, .kernel = {3, 3}, .pads = {1, 1, 1, 1}});
  onnx::NodeProto& add = b.node("Add", "add", {y, "r"});
  add.clear_output();
  const std::vector<Layer> layers = layers_of(b);
  ASSERT_EQ(layers.size(), 1u);
  EXPECT_EQ(layers[0].problem.epilogue, (Epilogue{.beta = 1, .bias = true}));
}

TEST(OnnxImport, TheFuzzersCrashInputIsRefusedByConvgenImportOnnx) {
  const auto model = std::filesystem::path(CONVGEN_SOURCE_DIR) / "tests/fuzz/crashes/onnx_import" /
                     "segv_conv_pool_shape_inference.onnx";
  const auto run = testing_support::run_convgen("import onnx " + model.string());
  EXPECT_EQ(run.exit_code, 1) << run.output;
  EXPECT_NE(run.output.find("ONNX's shape inference crashed on this model, ended by signal 11"), std::string::npos)
      << run.output;
}

TEST(OnnxImport, AsymmetricPadsThatChangeTheOutputAreRefusedNamingTheNode) {
  ModelBuilder b;
  b.input("x", {1, 8, 8, 8});
  b.output(b.conv("stem/conv", "x", {.k = 8, .c_per_group = 8, .kernel = {3, 3}, .pads = {0, 0, 1, 1}}));
  EXPECT_EQ(import_error(b),
            "m.onnx: node 'stem/conv' (Conv): padding 0 before and 1 after on H cannot be served: convgen pads both "
            "sides of a dim alike, and padding 0 on both sides gives 6 outputs instead of 7");
}

TEST(OnnxImport, AsymmetricPadsWhoseExtraEndIsNeverReadAreServedAsTheBeginPadding) {
  ModelBuilder b;
  b.input("x", {1, 8, 8, 8});
  // Stride 2 over 8 + 1 + 0: 4 outputs, as with padding 1 on both sides (the last column of padding is never read).
  b.output(b.conv("conv", "x", {.k = 8, .c_per_group = 8, .kernel = {3, 3}, .strides = {2, 2}, .pads = {1, 1, 0, 0}}));
  EXPECT_EQ(layers_of(b).at(0).problem.padding, (Dims3{0, 1, 1}));
}

TEST(OnnxImport, AutoPadSameUpperSameLowerAndValidBecomeSymmetricPadding) {
  ModelBuilder b;
  b.input("x", {1, 3, 224, 224});
  b.conv("upper", "x", {.k = 8, .c_per_group = 3, .kernel = {3, 3}, .auto_pad = "SAME_UPPER"});
  // SAME_LOWER 7x7 at stride 2 pads 3 before and 2 after: 112 outputs, as with 3 on both sides.
  b.conv("lower", "x", {.k = 8, .c_per_group = 3, .kernel = {7, 7}, .strides = {2, 2}, .auto_pad = "SAME_LOWER"});
  b.conv("valid", "x", {.k = 8, .c_per_group = 3, .kernel = {5, 5}, .auto_pad = "VALID"});
  const std::vector<Layer> layers = layers_of(b);
  ASSERT_EQ(layers.size(), 3u);
  EXPECT_EQ(layers[0].problem.padding, (Dims3{0, 1, 1}));
  EXPECT_EQ(layers[1].problem.padding, (Dims3{0, 3, 3}));
  EXPECT_EQ(output_dims(layers[1].problem), (Dims3{1, 112, 112}));
  EXPECT_EQ(layers[2].problem.padding, (Dims3{0, 0, 0}));

  // SAME_UPPER puts the odd one after: 2 before, 3 after gives 112, but 2 on both sides only 111.
  ModelBuilder upper;
  upper.input("x", {1, 3, 224, 224});
  upper.conv("conv1", "x", {.k = 8, .c_per_group = 3, .kernel = {7, 7}, .strides = {2, 2}, .auto_pad = "SAME_UPPER"});
  EXPECT_EQ(import_error(upper),
            "m.onnx: node 'conv1' (Conv): padding 2 before and 3 after on H cannot be served: convgen pads both sides "
            "of a dim alike, and padding 2 on both sides gives 111 outputs instead of 112");
}

TEST(OnnxImport, GroupedAndDepthwiseConvsKeepTheirGroups) {
  ModelBuilder b;
  b.input("x", {1, 32, 14, 14});
  b.conv("grouped", "x", {.k = 64, .c_per_group = 8, .kernel = {3, 3}, .pads = {1, 1, 1, 1}, .group = 4});
  b.conv("depthwise", "x",
         {.k = 32, .c_per_group = 1, .kernel = {3, 3}, .pads = {2, 2, 2, 2}, .dilations = {2, 2}, .group = 32});
  const std::vector<Layer> layers = layers_of(b);
  ASSERT_EQ(layers.size(), 2u);
  EXPECT_EQ(layers[0].problem, (Problem{.c = 32,
                                        .k = 64,
                                        .input = {1, 14, 14},
                                        .filter = {1, 3, 3},
                                        .padding = {0, 1, 1},
                                        .groups = 4,
                                        .epilogue = {.bias = true}}));
  EXPECT_EQ(layers[1].problem, (Problem{.c = 32,
                                        .k = 32,
                                        .input = {1, 14, 14},
                                        .filter = {1, 3, 3},
                                        .padding = {0, 2, 2},
                                        .dilation = {1, 2, 2},
                                        .groups = 32,
                                        .epilogue = {.bias = true}}));

  ModelBuilder wrong;
  wrong.input("x", {1, 32, 14, 14});
  wrong.conv("conv", "x", {.k = 64, .c_per_group = 16, .kernel = {3, 3}, .group = 4});
  EXPECT_EQ(import_error(wrong),
            "m.onnx: node 'conv' (Conv): W has 16 input channels per group, expected C / group = "
            "32 / 4");
}

TEST(OnnxImport, OneDAndThreeDConvsTakeTheirLayouts) {
  ModelBuilder b;
  b.input("seq", {1, 8, 100}, onnx::TensorProto_DataType_FLOAT16);
  b.input("vol", {1, 4, 16, 16, 16});
  b.conv("conv1d", "seq", {.k = 16, .c_per_group = 8, .kernel = {5}, .strides = {2}},
         onnx::TensorProto_DataType_FLOAT16);
  b.conv("conv3d", "vol", {.k = 8, .c_per_group = 4, .kernel = {3, 3, 3}, .pads = {1, 1, 1, 1, 1, 1}});
  const std::vector<Layer> layers = layers_of(b);
  ASSERT_EQ(layers.size(), 2u);
  EXPECT_EQ(layers[0].problem, (Problem{.c = 8,
                                        .k = 16,
                                        .input = {1, 1, 100},
                                        .filter = {1, 1, 5},
                                        .stride = {1, 1, 2},
                                        .layout = Layout::ncw,
                                        .precision = Precision::fp16,
                                        .epilogue = {.bias = true}}));
  EXPECT_EQ(layers[1].problem, (Problem{.c = 4,
                                        .k = 8,
                                        .input = {16, 16, 16},
                                        .filter = {3, 3, 3},
                                        .padding = {1, 1, 1},
                                        .layout = Layout::ncdhw,
                                        .epilogue = {.bias = true}}));
}

TEST(OnnxImport, AnUnsupportedDataTypeIsRefused) {
  ModelBuilder b;
  b.input("x", {1, 8, 8, 8}, onnx::TensorProto_DataType_DOUBLE);
  b.conv("conv", "x", {.k = 8, .c_per_group = 8, .kernel = {3, 3}}, onnx::TensorProto_DataType_DOUBLE);
  EXPECT_EQ(import_error(b),
            "m.onnx: node 'conv' (Conv): input 'x' (X) has data type DOUBLE, expected FLOAT, FLOAT16 or BFLOAT16");
}

TEST(OnnxImport, ReluBeforeAndBiasAddReluAfterAreFlagged) {
  ModelBuilder b;
  b.input("x", {1, 16, 8, 8});
  const ConvSpec spec{.k = 16, .c_per_group = 16, .kernel = {3, 3}, .pads = {1, 1, 1, 1}};
  const std::string relu_x = b.relu("relu0", "x");
  const std::string a = b.conv("a", relu_x, spec);  // Relu -> Conv -> Add -> Relu
  const std::string sum = b.relu("relu1", b.add("add0", a, "x"));
  ConvSpec no_bias = spec;
  no_bias.bias = false;
  b.output(b.add("add1", b.conv("b", sum, no_bias), "x"));  // Conv -> Add (a graph output)
  const std::string c = b.conv("c", "x", spec);             // two consumers: nothing to fuse
  b.output(b.relu("relu2", c));
  b.output(c);
  const std::vector<Layer> layers = layers_of(b);
  ASSERT_EQ(layers.size(), 3u);
  EXPECT_TRUE(layers[0].input_relu);
  EXPECT_EQ(layers[0].problem.epilogue, (Epilogue{.beta = 1, .bias = true, .act = Activation::relu}));
  EXPECT_TRUE(layers[1].input_relu);
  EXPECT_EQ(layers[1].problem.epilogue, Epilogue{.beta = 1});
  EXPECT_FALSE(layers[2].input_relu);
  EXPECT_EQ(layers[2].problem.epilogue, Epilogue{.bias = true});
}

// --relu-on-load: a Relu that no conv's epilogue applies and that only Convs read (as X) is dropped into them.
TEST(OnnxImport, ReluOnLoadMarksTheConvsOfARelusThatOnlyConvsReadAndNoEpilogueApplies) {
  ModelBuilder b;
  b.input("x", {1, 16, 8, 8});
  const ConvSpec spec{.k = 16, .c_per_group = 16, .kernel = {3, 3}, .pads = {1, 1, 1, 1}};
  const std::string r0 = b.relu("relu0", "x");  // read by convs a and b only
  const std::string a = b.conv("a", r0, spec);  // a -> Relu (a's epilogue) -> conv c
  b.output(b.add("add0", b.conv("c", b.relu("relu1", a), spec), b.conv("b", r0, spec)));
  const std::string r2 = b.relu("relu2", b.add("add1", "x", "x"));  // read by conv d and a graph output
  b.output(b.conv("d", r2, spec));
  b.output(r2);
  const std::vector<Layer> marked = onnx_conv_layers(b.model(), "m.onnx", true);
  ASSERT_EQ(marked.size(), 4u);
  std::map<std::string, bool> relu_on_load;
  for (const Layer& layer : marked) relu_on_load[layer.name] = layer.problem.relu_on_load;
  EXPECT_EQ(relu_on_load, (std::map<std::string, bool>{{"a", true}, {"b", true}, {"c", false}, {"d", false}}));
  for (const Layer& layer : marked) EXPECT_TRUE(layer.input_relu) << layer.name;
  for (const Layer& layer : layers_of(b)) EXPECT_FALSE(layer.problem.relu_on_load) << layer.name;  // not asked
}

TEST(OnnxImport, NamesAreSanitisedAndMadeUnique) {
  ModelBuilder b;
  b.input("x", {1, 4, 8, 8});
  const ConvSpec spec{.k = 4, .c_per_group = 4, .kernel = {1, 1}};
  b.conv("/layer1/layer1.0/conv1/Conv", "x", spec);
  b.conv("a b", "x", spec);
  b.conv("a:b", "x", spec);
  b.conv("", "x", spec);
  std::vector<std::string> names;
  for (const Layer& layer : layers_of(b)) names.push_back(layer.name);
  EXPECT_EQ(names, (std::vector<std::string>{"layer1_layer1.0_conv1_Conv", "a_b", "a_b_2", "conv4"}));
}

TEST(OnnxImport, TwoIdenticalConvsMergeIntoOneRowAndTheFileLoadsBackEqual) {
  ModelBuilder b;
  b.input("x", {1, 16, 8, 8});
  const ConvSpec spec{.k = 16, .c_per_group = 16, .kernel = {3, 3}, .pads = {1, 1, 1, 1}};
  b.output(b.conv("second", b.conv("first", "x", spec), spec));
  const std::filesystem::path path = b.write("convgen_onnx_two.onnx");
  const Suite suite = import_onnx_file(path, "two");
  ASSERT_EQ(suite.layers.size(), 1u);
  EXPECT_EQ(suite.layers[0].name, "first");
  EXPECT_EQ(suite.layers[0].count, 2);
  EXPECT_EQ(parse_suite(write_suite_csv(suite), "two.csv"), suite);
  std::filesystem::remove(path);
}

TEST(OnnxImport, NotOnnxAndTruncatedFilesAreRefused) {
  const auto dir = process_scratch();
  std::ofstream(dir / "convgen_onnx_text.onnx") << "name,n,c,k,h,w,r,s\nconv,1,64,64,56,56,3,3\n";
  EXPECT_EQ(input_error([&] { import_onnx_file(dir / "convgen_onnx_text.onnx", "x"); }),
            (dir / "convgen_onnx_text.onnx").string() +
                ": not an ONNX model: protobuf cannot parse its 42 bytes as a ModelProto (truncated, or another "
                "format)");

  ModelBuilder b;
  b.input("x", {1, 16, 8, 8});
  b.conv("conv", "x", {.k = 16, .c_per_group = 16, .kernel = {3, 3}});
  const std::string bytes = b.model().SerializeAsString();
  std::ofstream(dir / "convgen_onnx_truncated.onnx", std::ios::binary) << bytes.substr(0, bytes.size() / 2);
  EXPECT_EQ(input_error([&] { import_onnx_file(dir / "convgen_onnx_truncated.onnx", "x"); }),
            fmt::format("{}: not an ONNX model: protobuf cannot parse its {} bytes as a ModelProto (truncated, or "
                        "another format)",
                        (dir / "convgen_onnx_truncated.onnx").string(), bytes.size() / 2));
  EXPECT_EQ(input_error([&] { import_onnx_file(dir / "convgen_onnx_missing.onnx", "x"); }),
            (dir / "convgen_onnx_missing.onnx").string() + ": cannot open ONNX model");
  std::filesystem::remove(dir / "convgen_onnx_text.onnx");
  std::filesystem::remove(dir / "convgen_onnx_truncated.onnx");
}

TEST(OnnxImport, AModelWithoutConvIsRefusedListingItsOperators) {
  ModelBuilder b;
  b.input("x", {1, 16, 8, 8});
  b.output(b.add("add", b.relu("relu", "x"), "x"));
  EXPECT_EQ(import_error(b), "m.onnx: no Conv node in the model's graph (its operators: Add, Relu)");
}

// ResNet-50 as torchvision v1.5 builds it (stride on the bottleneck's 3x3), batch norm folded into the convs' bias,
// no shapes but the image's: inference gives the rest.
ModelBuilder resnet50() {
  ModelBuilder b;
  b.input("image", {1, 3, 224, 224});
  std::string x = b.relu(
      "/relu/Relu", b.conv("/conv1/Conv", "image",
                           {.k = 64, .c_per_group = 3, .kernel = {7, 7}, .strides = {2, 2}, .pads = {3, 3, 3, 3}}));
  onnx::NodeProto& pool = b.node("MaxPool", "/maxpool/MaxPool", {x});
  ModelBuilder::ints(pool, "kernel_shape", {3, 3});
  ModelBuilder::ints(pool, "strides", {2, 2});
  ModelBuilder::ints(pool, "pads", {1, 1, 1, 1});
  x = pool.output(0);
  std::int64_t c = 64;
  const std::array<int, 4> blocks = {3, 4, 6, 3};
  for (int stage = 0; stage < 4; ++stage) {
    const std::int64_t width = 64 << stage;
    for (int block = 0; block < blocks[stage]; ++block) {
      const std::string at = fmt::format("/layer{0}/layer{0}.{1}", stage + 1, block);
      const std::int64_t s = stage > 0 && block == 0 ? 2 : 1;
      std::string t =
          b.relu(at + "/relu/Relu", b.conv(at + "/conv1/Conv", x, {.k = width, .c_per_group = c, .kernel = {1, 1}}));
      t = b.relu(at + "/relu_1/Relu",
                 b.conv(at + "/conv2/Conv", t,
                        {.k = width, .c_per_group = width, .kernel = {3, 3}, .strides = {s, s}, .pads = {1, 1, 1, 1}}));
      t = b.conv(at + "/conv3/Conv", t, {.k = 4 * width, .c_per_group = width, .kernel = {1, 1}});
      const std::string shortcut = block == 0
                                       ? b.conv(at + "/downsample/downsample.0/Conv", x,
                                                {.k = 4 * width, .c_per_group = c, .kernel = {1, 1}, .strides = {s, s}})
                                       : x;
      x = b.relu(at + "/relu_2/Relu", b.add(at + "/Add", t, shortcut));
      c = 4 * width;
    }
  }
  b.output(x);
  return b;
}

TEST(OnnxImport, ResNet50GivesTheLayersOfShapesResnet50) {
  const std::vector<Layer> layers = layers_of(resnet50());
  EXPECT_EQ(layers.size(), 53u);
  EXPECT_EQ(layers[1].name, "layer1_layer1.0_conv1_Conv");
  EXPECT_FALSE(layers[1].input_relu);  // the MaxPool's output
  EXPECT_EQ(layers[1].problem.epilogue, (Epilogue{.bias = true, .act = Activation::relu}));
  const std::vector<Layer> merged = merge_identical_layers(layers);

  // Shape-wise with counts: the checked-in file's act_sparsity, epilogues and names are its own.
  const auto key_and_count = [](const Layer& layer) {
    Problem p = layer.problem;
    p.act_sparsity = 0;
    p.epilogue = {};
    return std::pair{problem_key(p), layer.count};
  };
  std::vector<std::pair<std::string, int>> imported, expected;
  for (const Layer& layer : merged) imported.push_back(key_and_count(layer));
  for (const Layer& layer : load_suite(std::string(CONVGEN_SOURCE_DIR) + "/shapes/resnet50.csv").layers)
    expected.push_back(key_and_count(layer));
  std::sort(imported.begin(), imported.end());
  std::sort(expected.begin(), expected.end());
  EXPECT_EQ(imported, expected);
}

TEST(OnnxImport, ConvgenImportOnnxWritesAShapesFileConvgenLoads) {
  const std::filesystem::path model = resnet50().write("convgen_onnx_resnet50.onnx");
  const auto csv = process_scratch() / "convgen_onnx_resnet50.csv";
  testing_support::CommandResult r =
      testing_support::run_convgen("import onnx " + model.string() + " --out " + csv.string());
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(r.output, "wrote " + csv.string() + ": 53 Conv nodes in 24 rows\n");
  EXPECT_EQ(load_suite(csv).layers, merge_identical_layers(layers_of(resnet50())));
  r = testing_support::run_convgen("analyze --shapes " + csv.string() + " --gpu h100_sxm");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("layer1_layer1.0_conv2_Conv"), std::string::npos) << r.output;

  r = testing_support::run_convgen("import onnx " + csv.string());
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.output, "convgen import onnx: error: " + csv.string() +
                          ": not an ONNX model: protobuf cannot parse its " +
                          std::to_string(std::filesystem::file_size(csv)) +
                          " bytes as a ModelProto (truncated, or another format)\n");
  r = testing_support::run_convgen("import onnx --help");
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_NE(r.output.find("--relu-act-sparsity"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("--relu-on-load"), std::string::npos) << r.output;
  std::filesystem::remove(model);
  std::filesystem::remove(csv);
}

}  // namespace
}  // namespace convgen
