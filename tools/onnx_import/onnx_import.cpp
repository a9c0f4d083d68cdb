// onnx_import: the Conv nodes of an ONNX model's graph as convgen layers, with shapes, padding and what surrounds them.
#include "tools/onnx_import/onnx_import.hpp"

#include <algorithm>
#include <array>
#include <cctype>
#include <limits>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <unordered_map>

#include <cerrno>
#include <csignal>
#include <cstring>

#include <sys/wait.h>
#include <unistd.h>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <onnx/proto_utils.h>
#include <onnx/shape_inference/implementation.h>

#include "convgen/error.hpp"
#include "generator/csv.hpp"

namespace convgen {
namespace {

bool is_onnx_op(const onnx::NodeProto& node, std::string_view op_type) {
  return node.op_type() == op_type && (node.domain().empty() || node.domain() == "ai.onnx");
}

// The tensor types the graph states, by value name: graph inputs, initializers, value_info and outputs.
std::unordered_map<std::string, onnx::TypeProto> known_types(const onnx::GraphProto& graph) {
  std::unordered_map<std::string, onnx::TypeProto> types;
  for (const onnx::TensorProto& init : graph.initializer()) {
    onnx::TypeProto type;
    type.mutable_tensor_type()->set_elem_type(init.data_type());
    onnx::TensorShapeProto* shape = type.mutable_tensor_type()->mutable_shape();
    for (const auto dim : init.dims()) shape->add_dim()->set_dim_value(dim);
    types[init.name()] = type;
  }
  for (const auto* list : {&graph.input(), &graph.value_info(), &graph.output()})
    for (const onnx::ValueInfoProto& value : *list)
      if (value.has_type() && value.type().has_tensor_type() && value.type().tensor_type().has_shape())
        types[value.name()] = value.type();
  return types;
}

// One Conv node being read: where it is, for messages.
struct ConvNode {
  std::string_view file;
  const onnx::NodeProto& node;
  int index = 0;  // among all nodes of the graph

  std::string label() const {
    return node.name().empty() ? fmt::format("unnamed node #{}", index) : fmt::format("node '{}'", node.name());
  }

  template <class... Args>
  [[noreturn]] void fail(fmt::format_string<Args...> format, Args&&... args) const {
    throw InputError(fmt::format("{}: {} (Conv): {}", file, label(), fmt::format(format, std::forward<Args>(args)...)));
  }
};

// A Conv operand's data type and fixed dims.
struct Operand {
  Precision precision = Precision::fp32;
  std::vector<int> dims;
};

Operand operand(const ConvNode& conv, const std::unordered_map<std::string, onnx::TypeProto>& types, int input,
                const std::string& inference_error) {
  const char* role = input == 0 ? "X" : "W";
  if (conv.node.input_size() <= input || conv.node.input(input).empty()) conv.fail("has no input {}", role);
  const std::string& name = conv.node.input(input);
  const auto found = types.find(name);
  if (found == types.end())
    conv.fail("input '{}' ({}) has no shape, and ONNX shape inference cannot give it{}", name, role,
              inference_error.empty() ? "" : fmt::format(" ({})", inference_error));
  const onnx::TypeProto_Tensor& tensor = found->second.tensor_type();
  Operand out;
  switch (tensor.elem_type()) {
    case onnx::TensorProto_DataType_FLOAT:
      out.precision = Precision::fp32;
      break;
    case onnx::TensorProto_DataType_FLOAT16:
      out.precision = Precision::fp16;
      break;
    case onnx::TensorProto_DataType_BFLOAT16:
      out.precision = Precision::bf16;
      break;
    default:
      conv.fail("input '{}' ({}) has data type {}, expected FLOAT, FLOAT16 or BFLOAT16", name, role,
                onnx::TensorProto_DataType_Name(static_cast<onnx::TensorProto_DataType>(tensor.elem_type())));
  }
  const int rank = tensor.shape().dim_size();
  for (int i = 0; i < rank; ++i) {
    const onnx::TensorShapeProto_Dimension& dim = tensor.shape().dim(i);
    if (dim.has_dim_value() && dim.dim_value() > 0 && dim.dim_value() <= std::numeric_limits<int>::max()) {
      out.dims.push_back(static_cast<int>(dim.dim_value()));
    } else if (input == 0 && i == 0 && !dim.has_dim_value()) {
      out.dims.push_back(1);  // a symbolic batch: shapes files hold batch 1
    } else {
      const std::string what = dim.has_dim_value()   ? std::to_string(dim.dim_value())
                               : dim.has_dim_param() ? fmt::format("symbolic '{}'", dim.dim_param())
                                                     : "unknown";
      conv.fail("input '{}' ({}) has dim {} {}, expected a fixed positive size", name, role, i, what);
    }
  }
  return out;
}

// The Conv's attributes, with ONNX's defaults for a rank of `r` spatial dims.
struct ConvAttributes {
  std::vector<std::int64_t> kernel_shape, strides, dilations, pads;
  std::int64_t group = 1;
  std::string auto_pad = "NOTSET";
};

ConvAttributes attributes(const ConvNode& conv, int r) {
  ConvAttributes a{.strides = std::vector<std::int64_t>(r, 1),
                   .dilations = std::vector<std::int64_t>(r, 1),
                   .pads = std::vector<std::int64_t>(2 * r, 0)};
  for (const onnx::AttributeProto& attr : conv.node.attribute()) {
    const auto ints = [&](std::vector<std::int64_t>& into, int size) {
      into = onnx::RetrieveValues<std::int64_t>(attr);
      if (static_cast<int>(into.size()) != size)
        conv.fail("attribute '{}' has {} values, expected {} for a {}-D conv", attr.name(), into.size(), size, r);
    };
    if (attr.name() == "kernel_shape")
      ints(a.kernel_shape, r);
    else if (attr.name() == "strides")
      ints(a.strides, r);
    else if (attr.name() == "dilations")
      ints(a.dilations, r);
    else if (attr.name() == "pads")
      ints(a.pads, 2 * r);
    else if (attr.name() == "group")
      a.group = attr.i();
    else if (attr.name() == "auto_pad")
      a.auto_pad = attr.s();
  }
  return a;
}

// Output size of one dim for padding `begin` and `end` (floor division; < 1 when nothing is left).
std::int64_t output_size(std::int64_t in, std::int64_t f, std::int64_t s, std::int64_t d, std::int64_t begin,
                         std::int64_t end) {
  const std::int64_t span = in + begin + end - d * (f - 1) - 1;
  return span < 0 ? 0 : span / s + 1;
}

Layer conv_layer(const ConvNode& conv, const std::unordered_map<std::string, onnx::TypeProto>& types,
                 const std::string& inference_error) {
  if (conv.node.output_size() < 1 || conv.node.output(0).empty()) conv.fail("has no output Y");
  const Operand x = operand(conv, types, 0, inference_error);
  const Operand w = operand(conv, types, 1, inference_error);
  const int r = static_cast<int>(x.dims.size()) - 2;
  if (r < 1 || r > 3)
    conv.fail("input '{}' (X) has rank {}, expected 3, 4 or 5 (a 1-D, 2-D or 3-D conv)", conv.node.input(0),
              x.dims.size());
  if (w.dims.size() != x.dims.size())
    conv.fail("input '{}' (W) has rank {}, expected {} as X", conv.node.input(1), w.dims.size(), x.dims.size());
  if (w.precision != x.precision)
    conv.fail("inputs X and W have different data types ({} and {})", x.precision, w.precision);
  const ConvAttributes a = attributes(conv, r);

  Problem p{.n = x.dims[0], .c = x.dims[1], .k = w.dims[0], .precision = x.precision};
  p.layout = r == 1 ? Layout::ncw : r == 2 ? Layout::nchw : Layout::ncdhw;
  if (a.group < 1 || a.group > p.c) conv.fail("attribute 'group' is {}, expected 1 to C = {}", a.group, p.c);
  p.groups = static_cast<int>(a.group);
  if (p.c % p.groups != 0 || w.dims[1] != p.c / p.groups)
    conv.fail("W has {} input channels per group, expected C / group = {} / {}", w.dims[1], p.c, p.groups);

  constexpr std::array<const char*, 3> kDimNames = {"D", "H", "W"};
  std::array<int*, 3> input = {&p.input.d, &p.input.h, &p.input.w};
  std::array<int*, 3> filter = {&p.filter.d, &p.filter.h, &p.filter.w};
  std::array<int*, 3> stride = {&p.stride.d, &p.stride.h, &p.stride.w};
  std::array<int*, 3> padding = {&p.padding.d, &p.padding.h, &p.padding.w};
  std::array<int*, 3> dilation = {&p.dilation.d, &p.dilation.h, &p.dilation.w};
  for (int i = 0; i < r; ++i) {
    const int at = 3 - r + i;  // a 2-D conv's dims are H and W
    const std::int64_t in = x.dims[2 + i], f = w.dims[2 + i], s = a.strides[i], d = a.dilations[i];
    if (!a.kernel_shape.empty() && a.kernel_shape[i] != f)
      conv.fail("attribute 'kernel_shape' says {} on {}, but W has {}", a.kernel_shape[i], kDimNames[at], f);
    if (s < 1 || d < 1 || s > std::numeric_limits<int>::max() || d > std::numeric_limits<int>::max())
      conv.fail("stride {} and dilation {} on {} must be positive integers", s, d, kDimNames[at]);
    std::int64_t begin = a.pads[i], end = a.pads[r + i];
    if (a.auto_pad == "VALID") {
      begin = end = 0;
    } else if (a.auto_pad == "SAME_UPPER" || a.auto_pad == "SAME_LOWER") {
      // ONNX: the output is ceil(in / stride), the total padding split with the odd one at the end (UPPER) or at
      // the beginning (LOWER).
      const std::int64_t total = std::max<std::int64_t>(0, ((in + s - 1) / s - 1) * s + d * (f - 1) + 1 - in);
      begin = a.auto_pad == "SAME_UPPER" ? total / 2 : total - total / 2;
      end = total - begin;
    } else if (a.auto_pad != "NOTSET") {
      conv.fail("attribute 'auto_pad' is '{}', expected NOTSET, SAME_UPPER, SAME_LOWER or VALID", a.auto_pad);
    }
    if (begin < 0 || end < 0) conv.fail("negative padding {} and {} on {}", begin, end, kDimNames[at]);
    const std::int64_t wanted = output_size(in, f, s, d, begin, end);
    if (begin != end && output_size(in, f, s, d, begin, begin) != wanted)
      conv.fail(
          "padding {} before and {} after on {} cannot be served: convgen pads both sides of a dim alike, and "
          "padding {} on both sides gives {} outputs instead of {}",
          begin, end, kDimNames[at], begin, output_size(in, f, s, d, begin, begin), wanted);
    *input[at] = static_cast<int>(in);
    *filter[at] = static_cast<int>(f);
    *stride[at] = static_cast<int>(s);
    *dilation[at] = static_cast<int>(d);
    *padding[at] = static_cast<int>(begin);
  }
  if (const std::string reason = validate(p); !reason.empty()) conv.fail("{}", reason);
  return {.problem = p};
}

// Writes all of `bytes` to `fd`; false when the pipe broke.
bool write_all(int fd, std::string_view bytes) {
  while (!bytes.empty()) {
    const ssize_t n = ::write(fd, bytes.data(), bytes.size());
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    bytes.remove_prefix(static_cast<std::size_t>(n));
  }
  return true;
}

// ONNX's shape inference on `model`, run in a child process: libonnx crashes on some malformed graphs (1.12 indexes
// an empty vector when a Conv's W has more dims than its X), and such a model must give an error, not end the
// importer. On success `model` holds the inferred shapes and the result is empty; otherwise it says what went wrong
// ("inference failed: <ONNX's message>", or the signal that ended the child) and `model` is unchanged.
std::string infer_shapes_apart(onnx::ModelProto& model) {
  int fds[2];
  if (::pipe(fds) != 0) return fmt::format("inference not run: pipe: {}", std::strerror(errno));
  const pid_t child = ::fork();
  if (child < 0) {
    const int error = errno;
    ::close(fds[0]);
    ::close(fds[1]);
    return fmt::format("inference not run: fork: {}", std::strerror(error));
  }
  if (child == 0) {
    // The child dies of a crash as the kernel would have it, not through a parent's (or a fuzzer's) handler.
    for (const int sig : {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT}) std::signal(sig, SIG_DFL);
    ::close(fds[0]);
    std::string reply;
    try {
      onnx::shape_inference::InferShapes(model);
      reply = "M" + model.SerializeAsString();
    } catch (const std::exception& e) {
      reply = fmt::format("Einference failed: {}", e.what());
    }
    ::_exit(write_all(fds[1], reply) ? 0 : 1);
  }
  ::close(fds[1]);
  std::string reply;
  char buffer[1 << 16];
  for (;;) {
    const ssize_t n = ::read(fds[0], buffer, sizeof buffer);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    reply.append(buffer, static_cast<std::size_t>(n));
  }
  ::close(fds[0]);
  int status = 0;
  while (::waitpid(child, &status, 0) < 0 && errno == EINTR) {
  }
  if (WIFSIGNALED(status))
    return fmt::format("ONNX's shape inference crashed on this model, ended by signal {} ({})", WTERMSIG(status),
                       strsignal(WTERMSIG(status)));
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0 || reply.empty())
    return "ONNX's shape inference ended without a result";
  if (reply[0] == 'E') return reply.substr(1);
  onnx::ModelProto inferred;
  if (!onnx::ParseProtoFromBytes(&inferred, reply.data() + 1, reply.size() - 1))
    return "ONNX's shape inference returned a model that does not parse";
  model = std::move(inferred);
  return "";
}

// Replaces what a shapes file's name column cannot hold, or a shell would trip on, by '_'; trims '_' at the ends.
std::string sanitized(std::string_view name) {
  std::string out;
  for (const char ch : name)
    out += std::isalnum(static_cast<unsigned char>(ch)) || ch == '_' || ch == '.' || ch == '-' ? ch : '_';
  const auto first = out.find_first_not_of('_');
  if (first == std::string::npos) return "";
  return out.substr(first, out.find_last_not_of('_') - first + 1);
}

}  // namespace

onnx::ModelProto parse_onnx_model(std::string_view bytes, std::string_view file_name) {
  onnx::ModelProto model;
  if (!onnx::ParseProtoFromBytes(&model, bytes.data(), bytes.size()))
    throw InputError(fmt::format(
        "{}: not an ONNX model: protobuf cannot parse its {} bytes as a ModelProto (truncated, or another format)",
        file_name, bytes.size()));
  if (!model.has_graph())
    throw InputError(fmt::format("{}: not an ONNX model: it parses, but holds no graph", file_name));
  return model;
}

std::vector<Layer> onnx_conv_layers(onnx::ModelProto model, std::string_view file_name, bool relu_on_load) {
  const onnx::GraphProto* graph = &model.graph();
  std::vector<int> convs;
  for (int i = 0; i < graph->node_size(); ++i)
    if (is_onnx_op(graph->node(i), "Conv")) convs.push_back(i);
  if (convs.empty()) {
    std::set<std::string> ops;
    for (const onnx::NodeProto& node : graph->node()) ops.insert(node.op_type());
    if (ops.empty()) throw InputError(fmt::format("{}: no Conv node: the model's graph has no nodes", file_name));
    throw InputError(
        fmt::format("{}: no Conv node in the model's graph (its operators: {})", file_name, fmt::join(ops, ", ")));
  }

  // Shape inference only where a Conv's operands lack shapes: a model's own shapes are kept as they are.
  auto types = known_types(*graph);
  std::string inference_error;
  const bool complete = std::all_of(convs.begin(), convs.end(), [&](int i) {
    const onnx::NodeProto& node = graph->node(i);
    return node.input_size() >= 2 && types.contains(node.input(0)) && types.contains(node.input(1));
  });
  if (!complete) {
    inference_error = infer_shapes_apart(model);
    graph = &model.graph();
    types = known_types(*graph);
  }

  // Who produces and who consumes each value (the graph's outputs count as a consumer).
  std::unordered_map<std::string, int> producer;
  std::unordered_map<std::string, std::vector<int>> consumers;
  for (int i = 0; i < graph->node_size(); ++i) {
    for (const std::string& out : graph->node(i).output()) producer[out] = i;
    for (const std::string& in : graph->node(i).input()) consumers[in].push_back(i);
  }
  for (const onnx::ValueInfoProto& out : graph->output()) consumers[out.name()].push_back(-1);

  std::vector<Layer> layers;
  std::set<std::string> names;
  std::set<int> relus_in_epilogues;  // the Relu nodes some conv's epilogue applies
  std::vector<int> input_relus;      // per layer: the Relu node its X comes from, or -1
  for (std::size_t ordinal = 0; ordinal < convs.size(); ++ordinal) {
    const int index = convs[ordinal];
    const onnx::NodeProto& node = graph->node(index);
    Layer layer = conv_layer(ConvNode{.file = file_name, .node = node, .index = index}, types, inference_error);

    const auto from = producer.find(node.input(0));
    layer.input_relu = from != producer.end() && is_onnx_op(graph->node(from->second), "Relu");
    input_relus.push_back(layer.input_relu ? from->second : -1);
    // The epilogue fused into the conv's store: its own bias, then one Add (a residual) and a Relu that alone
    // consume the value, stopping after the Relu: act(conv + bias + residual).
    Epilogue& epilogue = layer.problem.epilogue;
    if (node.input_size() >= 3 && !node.input(2).empty()) epilogue.bias = true;
    for (std::string value = node.output(0);;) {
      const std::vector<int>& users = consumers[value];
      if (users.size() != 1 || users[0] < 0) break;
      const onnx::NodeProto& next = graph->node(users[0]);
      if (is_onnx_op(next, "Add") && !reads_residual(epilogue)) {
        epilogue.beta = 1;
      } else if (is_onnx_op(next, "Relu")) {
        epilogue.act = Activation::relu;
        relus_in_epilogues.insert(users[0]);
        break;
      } else {
        break;
      }
      if (next.output_size() < 1) break;  // a malformed Add: nothing further to fuse
      value = next.output(0);
    }

    std::string name = sanitized(node.name());
    if (name.empty()) name = fmt::format("conv{}", ordinal + 1);
    std::string unique = name;
    for (int n = 2; names.contains(unique); ++n) unique = fmt::format("{}_{}", name, n);
    names.insert(unique);
    layer.name = unique;
    layers.push_back(std::move(layer));
  }
  if (relu_on_load)
    for (std::size_t i = 0; i < layers.size(); ++i) {
      // The Relu can go, its consumers applying it on load: no conv's epilogue applies it, and every consumer of its
      // output is a Conv reading it as X alone (not a graph output, not another operator, not a filter or bias).
      const int relu = input_relus[i];
      if (relu < 0 || relus_in_epilogues.contains(relu) || graph->node(relu).output_size() < 1) continue;
      const std::string& value = graph->node(relu).output(0);
      const std::vector<int>& users = consumers[value];
      const bool only_conv_inputs = std::all_of(users.begin(), users.end(), [&](int user) {
        if (user < 0 || !is_onnx_op(graph->node(user), "Conv")) return false;
        const onnx::NodeProto& conv = graph->node(user);
        return conv.input(0) == value && std::count(conv.input().begin(), conv.input().end(), value) == 1;
      });
      layers[i].problem.relu_on_load = only_conv_inputs;
    }
  return layers;
}

Suite import_onnx_file(const std::filesystem::path& path, std::string_view suite_name, bool relu_on_load) {
  const std::optional<std::string> bytes = read_text_file(path);
  if (!bytes) throw InputError(fmt::format("{}: cannot open ONNX model", path.string()));
  const std::string file = path.string();
  return {.name = std::string(suite_name),
          .layers = merge_identical_layers(onnx_conv_layers(parse_onnx_model(*bytes, file), file, relu_on_load))};
}

}  // namespace convgen
