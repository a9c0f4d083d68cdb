// cli_common: shapes and GPU loading, layer selection and the progress display shared by subcommands.
#include "tools/convgen/cli_common.hpp"

#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <sstream>

#include <fmt/format.h>

#include "convgen/error.hpp"
#include "bench/provenance.hpp"
#include "generator/gpu_json.hpp"
#include "generator/importers.hpp"
#include "runtime/device.hpp"
#include "runtime/driver.hpp"

namespace convgen::cli {

Suite load_shapes(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw InputError(fmt::format("{}: cannot open shapes file", path.string()));
  std::ostringstream buffer;
  buffer << in.rdbuf();
  const std::string text = buffer.str();
  const std::string first_line = text.substr(0, text.find('\n'));
  Suite suite;
  if (first_line.rfind("B,C,H,W,N", 0) == 0) {
    suite = import_bchwn_list(text, path.string());
  } else if (!first_line.empty() && first_line.find_first_not_of("0123456789 \r") == std::string::npos) {
    suite = import_seer_list(text, path.string());
  } else {
    suite = parse_suite(text, path.string());
  }
  suite.name = path.stem().string();
  return suite;
}

Suite select_layers(const Suite& suite, int batch, const std::string& layer_filter) {
  Suite selected = batch > 0 ? with_batch(suite, batch) : suite;
  if (!layer_filter.empty()) {
    std::erase_if(selected.layers, [&](const Layer& l) { return l.name != layer_filter; });
    if (selected.layers.empty())
      throw InputError(fmt::format("{}: no layer named '{}'", suite.name, layer_filter));
  }
  return selected;
}

std::filesystem::path data_root() {
  if (const char* root = std::getenv("CONVGEN_DATA_ROOT"); root && *root) return root;
  return CONVGEN_SOURCE_DIR;
}

Gpu load_gpu_descriptor(const std::string& name_or_path, bool prefer_live) {
  if (name_or_path.empty() || name_or_path == "live") return query_device(0);
  Gpu gpu = load_gpu(find_gpu_file(name_or_path, data_root() / "gpus"));
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
