// cli_common: what several subcommands share: loading shapes and GPU descriptors, progress, output folders.
#pragma once

#include <cstdio>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "convgen/gpu.hpp"
#include "generator/shapes.hpp"

namespace convgen::cli {

// Loads a shapes file of any supported format: a convgen suite CSV, the SEER config list (first line a
// count), or the sparse seed's B,C,H,W,N list (by its header).
Suite load_shapes(const std::filesystem::path& path);

// Applies --batch (0 keeps the file's batch) and --layout/--layer filters.
Suite select_layers(const Suite& suite, int batch, const std::string& layer_filter);

// Returns the folder of the checked-in gpus/ and shapes/ (next to the binary's source tree, or
// $CONVGEN_DATA_ROOT when set) for resolving short names like "h100_sxm".
std::filesystem::path data_root();

// Resolves and loads a GPU descriptor: a path, or a name under gpus/ ("h100_sxm"). "live" (or an empty name)
// queries the present device. Where a device of the file's architecture is present and `prefer_live` is set,
// its properties win over the file's (DESIGN.md); a file for another architecture is kept as it is.
Gpu load_gpu_descriptor(const std::string& name_or_path, bool prefer_live);

// The command line convgen was started with, as a shell would take it back (for provenance records).
const std::string& invocation();
void set_invocation(int argc, char** argv);

// Writes `bytes` to `path` (binary); throws InputError "<path>: cannot write" when that fails.
void write_output_file(const std::filesystem::path& path, std::string_view bytes);

// Prints `text` and a newline to standard output when `out` is empty, else writes them to the file `out` and
// says so on standard error (the --out option of commands that print JSON).
void print_or_write(const std::string& out, const std::string& text);

// A one-line progress display on stderr: redrawn in place on a terminal, one line per step elsewhere.
class Progress {
 public:
  Progress(std::string label, std::size_t total);
  void step(const std::string& item);
  void done();

 private:
  std::string label_;
  std::size_t total_;
  std::size_t count_ = 0;
  bool tty_;
};

}  // namespace convgen::cli
