// cli_common: shapes and GPU loading, layer selection and the progress display shared by subcommands.
#include "tools/convgen/cli_common.hpp"

#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <optional>
#include <sstream>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "bench/provenance.hpp"
#include "conv/conv_kernel.hpp"
#include "convgen/error.hpp"
#include "convgen/weights.hpp"
#include "generator/embedded_templates.hpp"
#include "generator/gpu_json.hpp"
#include "generator/importers.hpp"
#include "reference/npy.hpp"
#include "reference/pruning.hpp"
#include "runtime/device.hpp"
#include "runtime/driver.hpp"

namespace convgen::cli {

namespace {

std::optional<std::string> read_file(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return std::nullopt;
  std::ostringstream buffer;
  buffer << in.rdbuf();
  return buffer.str();
}

// The names of embedded files without their extension, for messages: "a100_sxm4, h100_sxm, ...".
std::string embedded_names(const std::vector<EmbeddedTemplate>& files) {
  std::vector<std::string> names;
  for (const EmbeddedTemplate& f : files) names.push_back(std::filesystem::path(f.name).stem().string());
  std::sort(names.begin(), names.end());
  return fmt::format("{}", fmt::join(names, ", "));
}

// The text of data file `file` ("cusnn.csv") of `folder` ("shapes"): $CONVGEN_DATA_ROOT/folder/file when that
// exists, else the embedded copy. `label` is set to the name to use in messages.
std::optional<std::string> data_file(const std::string& folder, const std::string& file,
                                     const std::vector<EmbeddedTemplate>& embedded, std::string& label) {
  if (const std::optional<std::filesystem::path> root = data_root()) {
    const std::filesystem::path path = *root / folder / file;
    if (std::optional<std::string> text = read_file(path)) {
      label = path.string();
      return text;
    }
  }
  for (const EmbeddedTemplate& f : embedded)
    if (f.name == file) {
      label = folder + "/" + file;
      return std::string(f.text);
    }
  return std::nullopt;
}

}  // namespace

Suite load_shapes(const std::filesystem::path& path) {
  std::string label = path.string();
  std::optional<std::string> read = read_file(path);
  // Not a file here: "cusnn", "cusnn.csv" or "shapes/cusnn.csv" name a checked-in shapes file.
  const std::filesystem::path parent = path.parent_path();
  if (!read && (parent.empty() || parent == "shapes") && (path.extension().empty() || path.extension() == ".csv"))
    read = data_file("shapes", path.stem().string() + ".csv", embedded_shapes(), label);
  if (!read)
    throw InputError(fmt::format("{}: cannot open shapes file (built-in shapes: {})", path.string(),
                                 embedded_names(embedded_shapes())));
  const std::string& text = *read;
  const std::string first_line = text.substr(0, text.find('\n'));
  Suite suite;
  if (first_line.rfind("B,C,H,W,N", 0) == 0) {
    suite = import_bchwn_list(text, label);
  } else if (!first_line.empty() && first_line.find_first_not_of("0123456789 \r") == std::string::npos) {
    suite = import_seer_list(text, label);
  } else {
    suite = parse_suite(text, label);
  }
  suite.name = path.stem().string();
  return suite;
}

Suite select_layers(const Suite& suite, int batch, const std::string& layer_filter,
                    std::optional<double> act_sparsity) {
  Suite selected = batch > 0 ? with_batch(suite, batch) : suite;
  if (act_sparsity) {
    if (!(*act_sparsity >= 0 && *act_sparsity <= 1))
      throw InputError(fmt::format("--act-sparsity: {} is not a zero fraction in [0, 1]", *act_sparsity));
    for (Layer& layer : selected.layers) layer.problem.act_sparsity = *act_sparsity;
  }
  if (!layer_filter.empty()) {
    std::erase_if(selected.layers, [&](const Layer& l) { return l.name != layer_filter; });
    if (selected.layers.empty()) throw InputError(fmt::format("{}: no layer named '{}'", suite.name, layer_filter));
  }
  return selected;
}

SparsityPattern parse_sparsity_pattern(const std::string& text) {
  const auto pattern = parse_enum<SparsityPattern>(text);
  if (!pattern)
    throw InputError(
        fmt::format("--sparsity-pattern: unknown '{}', expected one of {}", text, enum_choices<SparsityPattern>()));
  return *pattern;
}

void add_precision_layout_options(CLI::App* cmd, std::string& precision, std::string& layout) {
  cmd->add_option("--precision", precision, "Every layer in fp32, tf32, fp16 or bf16 (default: the file's)");
  cmd->add_option("--layout", layout,
                  "Every layer channels-first (nchw) or channels-last (nhwc), at its own rank (default: the file's)");
}

void add_act_sparsity_option(CLI::App* cmd, std::optional<double>& act_sparsity) {
  cmd->add_option("--act-sparsity", act_sparsity,
                  "Expected zero fraction of every layer's activation, in [0, 1] (default: the shapes file's "
                  "act_sparsity column, else 0): sparse kernels are chosen and tuned for it");
}

void add_early_launch_option(CLI::App* cmd) {
  cmd->add_option_function<std::string>(
         "--early-launch",
         [](const std::string& value) {
           set_early_launch(value == "on");
           setenv("CONVGEN_EARLY_LAUNCH", value == "on" ? "1" : "0", 1);
         },
         "on (default) or off: our kernels that allow it start their blocks while the stream's previous kernel "
         "ends (programmatic dependent launch, sm_90 and later), as consecutive layers of a network would")
      ->check(CLI::IsMember({"on", "off"}));
}

void add_fusion_options(CLI::App* cmd, FusionOptions& fusion) {
  cmd->add_option("--epilogue", fusion.epilogue,
                  "Fuse into every layer's store: output = act(alpha*conv + beta*residual + bias), written 'none' or "
                  "terms joined by '+': alpha:A, bias, add (beta 1) or add:B, then relu, relu6 or clip:LO:HI, e.g. "
                  "bias+add+relu (default: the shapes file's epilogue column, else none)");
  cmd->add_flag("--relu-on-load", fusion.relu_on_load,
                "Every layer's activation is a producer's output before its ReLU: the kernel applies max(0, x) as it "
                "loads it (act_sparse's relu1 kernels; the others run behind a ReLU pass; default: the shapes file's "
                "relu_on_load column, else off)");
}

Suite with_fusion(Suite suite, const FusionOptions& fusion) {
  if (fusion.relu_on_load)
    for (Layer& layer : suite.layers) layer.problem.relu_on_load = true;
  if (fusion.epilogue.empty()) return suite;
  Epilogue e;
  try {
    e = parse_epilogue(fusion.epilogue);
  } catch (const InputError& error) {
    throw InputError(fmt::format("--epilogue: {}", error.what()));
  }
  for (Layer& layer : suite.layers) layer.problem.epilogue = e;
  return suite;
}

std::vector<std::string> fusion_arguments(const FusionOptions& fusion) {
  std::vector<std::string> args;
  if (!fusion.epilogue.empty()) args.insert(args.end(), {"--epilogue", fusion.epilogue});
  if (fusion.relu_on_load) args.push_back("--relu-on-load");
  return args;
}

void add_weight_options(CLI::App* cmd, WeightOptions& weights) {
  CLI::Option* dir = cmd->add_option("--weights", weights.dir,
                                     "Folder with each layer's filter as <layer>.npy (float32, in the layer's filter "
                                     "layout: K C R S, or K R S C for channels-last): kernels may bake its pattern");
  CLI::Option* sparsity = cmd->add_option(
      "--weight-sparsity", weights.sparsity,
      "Give every layer seeded random weights, magnitude-pruned per output channel to this zero fraction in [0, 1], "
      "or to 2:4 (\"2:4\": in every 4 consecutive values of a channel's filter row, the 2 largest kept)");
  dir->excludes(sparsity);
  if (cmd->get_option_no_throw("--seed") == nullptr)
    cmd->add_option("--seed", weights.seed, "Seed of the weights --weight-sparsity makes")->capture_default_str();
}

std::vector<float> weight_sparsity_filter(const Problem& p, const std::string& sparsity, std::uint64_t seed) {
  if (sparsity == "2:4") return two_four_pruned_random_filter(p, seed);
  std::size_t used = 0;
  double zero_fraction = -1;
  try {
    zero_fraction = std::stod(sparsity, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (used != sparsity.size() || !(zero_fraction >= 0 && zero_fraction <= 1))
    throw InputError(fmt::format("--weight-sparsity: '{}' is neither a zero fraction in [0, 1] nor 2:4", sparsity));
  return pruned_random_filter(p, zero_fraction, seed);
}

Suite with_layer_weights(const Suite& suite, const WeightOptions& weights) {
  if (weights.dir.empty() && weights.sparsity.empty()) return suite;
  Suite out = suite;
  for (Layer& layer : out.layers) {
    Problem& p = layer.problem;
    if (!weights.sparsity.empty()) {
      p = with_weights(p, weight_sparsity_filter(p, weights.sparsity, weights.seed));
      continue;
    }
    const std::filesystem::path file = std::filesystem::path(weights.dir) / (layer.name + ".npy");
    const FilterShape shape = filter_shape(p);
    const std::string context =
        fmt::format("the filter of layer '{}' ({}), shape {}", layer.name, describe(p), describe(shape));
    NpyArray array;
    try {
      array = read_npy(file);
    } catch (const InputError& e) {
      throw InputError(fmt::format("{}; expected {}", e.what(), context));
    }
    if (array.shape != shape.dims)
      throw InputError(
          fmt::format("{}: shape ({}), expected {}", file.string(), fmt::join(array.shape, ", "), context));
    p = with_weights(p, std::move(array.values), file.string());
  }
  return out;
}

Suite with_precision_and_layout(Suite suite, const std::string& precision, const std::string& layout) {
  std::optional<Precision> to_precision;
  if (!precision.empty()) {
    to_precision = parse_enum<Precision>(precision);
    if (!to_precision)
      throw InputError(
          fmt::format("--precision: unknown '{}', expected one of {}", precision, enum_choices<Precision>()));
  }
  std::optional<Layout> to_layout;
  if (!layout.empty()) {
    to_layout = parse_enum<Layout>(layout);
    if (!to_layout)
      throw InputError(fmt::format("--layout: unknown '{}', expected one of {}", layout, enum_choices<Layout>()));
  }
  for (Layer& l : suite.layers) {
    if (to_precision) l.problem.precision = *to_precision;
    if (to_layout) {
      const bool last = channels_last(*to_layout);
      if (!l.problem.weights.pattern.empty() && last != channels_last(l.problem.layout))
        throw InputError(
            fmt::format("--layout {}: layer '{}' carries its filter, whose layout follows the problem's; "
                        "give the filter in the new layout instead",
                        layout, l.name));
      switch (rank(l.problem.layout)) {
        case 1:
          l.problem.layout = last ? Layout::nwc : Layout::ncw;
          break;
        case 2:
          l.problem.layout = last ? Layout::nhwc : Layout::nchw;
          break;
        default:
          l.problem.layout = last ? Layout::ndhwc : Layout::ncdhw;
          break;
      }
    }
  }
  return suite;
}

std::optional<std::filesystem::path> data_root() {
  if (const char* root = std::getenv("CONVGEN_DATA_ROOT"); root && *root) return std::filesystem::path(root);
  return std::nullopt;
}

std::optional<std::filesystem::path> program_beside_convgen(const std::string& name, std::filesystem::path& folder) {
  folder = std::filesystem::read_symlink("/proc/self/exe").parent_path();
  std::filesystem::path program = folder / name;
  if (!std::filesystem::exists(program)) return std::nullopt;
  return program;
}

int run_program(const std::filesystem::path& program, const std::vector<std::string>& args, bool quiet) {
  std::vector<char*> argv;
  argv.push_back(const_cast<char*>(program.c_str()));
  for (const std::string& a : args) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  const pid_t child = fork();
  if (child < 0) throw Error(fmt::format("cannot start {}: fork failed", program.string()));
  if (child == 0) {
    if (quiet) {
      const int null = open("/dev/null", O_WRONLY);
      if (null >= 0) {
        dup2(null, STDOUT_FILENO);
        dup2(null, STDERR_FILENO);
      }
    }
    execvp(program.c_str(), argv.data());
    fmt::print(stderr, "convgen: error: cannot run {}: {}\n", program.string(), std::strerror(errno));
    _exit(127);
  }
  int status = 0;
  if (waitpid(child, &status, 0) < 0) throw Error(fmt::format("waiting for {} failed", program.string()));
  if (WIFSIGNALED(status)) {
    // A crash would otherwise end `convgen import onnx` (or plot, lint-template) with no word at all.
    const int signal = WTERMSIG(status);
    if (!quiet)
      fmt::print(stderr, "convgen: error: {} ended on signal {} ({})\n", program.string(), signal, strsignal(signal));
    return 128 + signal;
  }
  return WIFEXITED(status) ? WEXITSTATUS(status) : 1;
}

Gpu load_gpu_descriptor(const std::string& name_or_path, bool prefer_live) {
  if (name_or_path.empty() || name_or_path == "live") return query_device(0);
  const bool is_path = name_or_path.find('/') != std::string::npos || name_or_path.ends_with(".json");
  Gpu gpu;
  if (is_path) {
    gpu = load_gpu(name_or_path);
  } else {
    std::string label;
    const std::optional<std::string> text = data_file("gpus", name_or_path + ".json", embedded_gpus(), label);
    if (!text)
      throw InputError(fmt::format("unknown GPU '{}', expected a path to a .json file or one of {} (built in{})",
                                   name_or_path, embedded_names(embedded_gpus()),
                                   data_root() ? ", or under " + (*data_root() / "gpus").string() : ""));
    gpu = parse_gpu_json(*text, label);
  }
  if (prefer_live && cuda_available()) {
    // A descriptor for another architecture describes a GPU that is not here (generating for it): keep it.
    const Gpu live = query_device(0);
    if (compute_capability(live) == compute_capability(gpu)) gpu = merge_live(gpu, live);
  }
  return gpu;
}

void write_output_file(const std::filesystem::path& path, std::string_view bytes) {
  std::ofstream out(path, std::ios::binary);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  if (!out) throw InputError(fmt::format("{}: cannot write", path.string()));
}

void print_or_write(const std::string& out, const std::string& text) {
  if (out.empty()) {
    fmt::print("{}\n", text);
    return;
  }
  write_output_file(out, text + "\n");
  fmt::print(stderr, "wrote {}\n", out);
}

namespace {
std::string& invocation_storage() {
  static std::string text;
  return text;
}
}  // namespace

const std::string& invocation() { return invocation_storage(); }

void set_invocation(int argc, char** argv) {
  const std::vector<std::string> args(argv, argv + argc);
  invocation_storage() = shell_join(args);
}

Progress::Progress(std::string label, std::size_t total)
    : label_(std::move(label)), total_(total), tty_(isatty(STDERR_FILENO) != 0) {}

void Progress::step(const std::string& item) {
  ++count_;
  if (tty_) {
    fmt::print(stderr, "\r\033[K{} [{}/{}] {}", label_, count_, total_, item);
  } else {
    fmt::print(stderr, "{} [{}/{}] {}\n", label_, count_, total_, item);
  }
  std::fflush(stderr);
}

void Progress::done() {
  if (tty_) fmt::print(stderr, "\r\033[K{}: {} done\n", label_, count_);
}

}  // namespace convgen::cli
