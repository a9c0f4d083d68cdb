// cmd_gpu: `convgen gpu detect`: writes the live device's descriptor as JSON.
#include <fstream>

#include <fmt/format.h>

#include "convgen/error.hpp"
#include "generator/gpu_json.hpp"
#include "runtime/device.hpp"
#include "tools/convgen/cli_common.hpp"
#include "tools/convgen/commands.hpp"

namespace convgen::cli {

void add_gpu_command(CLI::App& app) {
  struct Options {
    int device = 0;
    std::string out;
  };
  auto opts = std::make_shared<Options>();
  CLI::App* gpu = app.add_subcommand("gpu", "GPU descriptors");
  gpu->require_subcommand(1);
  CLI::App* detect = gpu->add_subcommand("detect",
                                         "Write the descriptor of the present device (JSON, the format "
                                         "of gpus/*.json)");
  detect->add_option("--device", opts->device, "Device ordinal")->capture_default_str();
  detect->add_option("--out", opts->out, "Write to this file instead of standard output");
  detect->callback([opts] { print_or_write(opts->out, gpu_to_json(query_device(opts->device))); });
}

}  // namespace convgen::cli
