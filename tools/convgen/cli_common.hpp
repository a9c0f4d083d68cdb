// cli_common: what several subcommands share: loading shapes and GPU descriptors, progress, output folders.
#pragma once

#include <cstdio>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include <cstdint>

#include <CLI/CLI.hpp>

#include "convgen/gpu.hpp"
#include "generator/embedded_templates.hpp"
#include "generator/shapes.hpp"
#include "reference/inputs.hpp"

namespace convgen {
// Return the checked-in gpus/*.json and shapes/*.csv as embedded at build time, by file name.
const std::vector<EmbeddedTemplate>& embedded_gpus();
const std::vector<EmbeddedTemplate>& embedded_shapes();
}  // namespace convgen

namespace convgen::cli {

// Loads a shapes file of any supported format: a convgen suite CSV, the SEER config list (first line a
// count), or the sparse seed's B,C,H,W,N list (by its header). A path that is no file but names a checked-in
// shapes file ("cusnn", "cusnn.csv", "shapes/cusnn.csv") reads $CONVGEN_DATA_ROOT/shapes/cusnn.csv when that
// exists, else the copy embedded in the binary.
Suite load_shapes(const std::filesystem::path& path);

// Applies --batch (0 keeps the file's batch), the --layer filter and --act-sparsity (when given, every layer's
// expected zero fraction; else each keeps its shapes file's act_sparsity column).
Suite select_layers(const Suite& suite, int batch, const std::string& layer_filter,
                    std::optional<double> act_sparsity = std::nullopt);

// Parses --sparsity-pattern (uniform, channel or blob); throws InputError listing the choices.
SparsityPattern parse_sparsity_pattern(const std::string& text);

// Adds --precision (fp32, tf32, fp16 or bf16) and --layout (nchw or nhwc, each layer at its own rank) for every
// layer; empty keeps the file's (with_precision_and_layout applies them).
void add_precision_layout_options(CLI::App* cmd, std::string& precision, std::string& layout);

// Adds --act-sparsity Z: the zero fraction every layer's activation is expected to have, in [0, 1].
void add_act_sparsity_option(CLI::App* cmd, std::optional<double>& act_sparsity);

// --early-launch on|off: whether our kernels that allow it launch early, overlapping the stream's previous kernel
// (conv_kernel.hpp's set_early_launch; off also sets CONVGEN_EARLY_LAUNCH=0 for the worker processes).
void add_early_launch_option(CLI::App* cmd);

// What a kernel fuses around every layer's convolution: --epilogue TEXT at its store, --relu-on-load max(0, x) as it
// loads the activation.
struct FusionOptions {
  std::string epilogue;       // "" keeps each layer's shapes file column
  bool relu_on_load = false;  // false keeps each layer's relu_on_load column
};

// Adds --epilogue TEXT and --relu-on-load (with_fusion applies them).
void add_fusion_options(CLI::App* cmd, FusionOptions& fusion);

// Applies the fusion options to every layer: --epilogue ("" keeps each layer's shapes file column, else the
// identity) is "none", or terms joined by '+' ("bias+add+relu", "alpha:0.5+add:2+clip:-1:1"; convgen::parse_epilogue);
// --relu-on-load sets Problem::relu_on_load. Throws InputError "--epilogue: <what was wrong>" listing the terms.
Suite with_fusion(Suite suite, const FusionOptions& fusion);

// The options again as command-line arguments (for a command that names another): {"--epilogue", T, "--relu-on-load"}.
std::vector<std::string> fusion_arguments(const FusionOptions& fusion);

// The layers' own filters: read from DIR/<layer>.npy (float32 in the layer's filter layout), or made: seeded
// random weights magnitude-pruned per output channel to a zero fraction ("0.9"), or to 2:4 ("2:4": two of every
// four consecutive values, what mma.sp takes). Neither: no layer carries a filter.
struct WeightOptions {
  std::string dir;
  std::string sparsity;  // "" (none), a zero fraction in [0, 1], or "2:4"
  std::uint64_t seed = 1;
};

// Adds --weights DIR and --weight-sparsity Z (exclusive), and --seed N when the command has no --seed of its own
// (a command with one passes its value to with_layer_weights).
void add_weight_options(CLI::App* cmd, WeightOptions& weights);

// The filter --weight-sparsity makes for a problem's shape: seeded random weights magnitude-pruned per output channel
// to the zero fraction, or to 2:4. Throws InputError for a value that is neither.
std::vector<float> weight_sparsity_filter(const Problem& p, const std::string& sparsity, std::uint64_t seed);

// Returns the suite with every layer carrying its filter as `weights` says (unchanged when it says nothing).
// Throws InputError naming the file and what was expected: a missing file, a wrong dtype or shape, NaN or Inf.
Suite with_layer_weights(const Suite& suite, const WeightOptions& weights);

// Applies --precision and --layout to every layer (an empty string keeps the shapes file's): the precision as named
// (fp32 tf32 fp16 bf16), the layout's channel order at each layer's own rank (`nhwc` makes a 1-D layer nwc and a 3-D
// one ndhwc). Throws InputError naming the option and the choices for an unknown name.
Suite with_precision_and_layout(Suite suite, const std::string& precision, const std::string& layout);

// Returns $CONVGEN_DATA_ROOT when set: a folder with gpus/ and shapes/ whose files win over the copies embedded
// in the binary (cmake: tools/convgen/CMakeLists.txt) when resolving short names like "h100_sxm". The binary knows
// no source tree.
std::optional<std::filesystem::path> data_root();

// Resolves and loads a GPU descriptor: a path (anything with a '/' or a ".json" ending), or a name of a checked-in
// descriptor ("h100_sxm": $CONVGEN_DATA_ROOT/gpus/h100_sxm.json, else the embedded copy). "live" (or an empty
// name) queries the present device. Where a device of the file's architecture is present and `prefer_live` is set,
// its properties win over the file's (DESIGN.md); a file for another architecture is kept as it is.
Gpu load_gpu_descriptor(const std::string& name_or_path, bool prefer_live);

// The program `name` built next to the running convgen (convgen-template-scan, convgen-onnx-import), or nullopt
// when it is not there; `folder` receives convgen's folder, for the caller's message.
std::optional<std::filesystem::path> program_beside_convgen(const std::string& name, std::filesystem::path& folder);

// Runs `program` (a path, or a name looked up in PATH) with `args` and returns its exit status; a program that
// cannot be started reports why on stderr and gives 127; one ended by a signal (a crash) says so on stderr and gives
// 128 + the signal, as a shell does. `quiet` sends its stdout and stderr to /dev/null and the signal's line (a probe).
int run_program(const std::filesystem::path& program, const std::vector<std::string>& args, bool quiet = false);

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
