// gpu_json: GPU descriptors read from and written to gpus/*.json (fields documented in gpus/README.md).
#pragma once

#include <filesystem>
#include <string>
#include <string_view>

#include "convgen/gpu.hpp"

namespace convgen {

// Parses a GPU descriptor: a JSON object whose keys are exactly the Gpu fields' names, every one required.
// `file_name` names the input in error messages. Throws InputError "file: key 'x' must be ..., got ..." for a
// missing, unknown or ill-typed key, an inconsistent limit, or JSON that does not parse.
//   Gpu h100 = parse_gpu_json(text, "gpus/h100_sxm.json");
Gpu parse_gpu_json(std::string_view text, std::string_view file_name);

// Reads and parses a GPU descriptor file.
Gpu load_gpu(const std::filesystem::path& path);

// Writes a descriptor as pretty JSON, keys in the Gpu struct's order; parse_gpu_json reads it back equal.
std::string gpu_to_json(const Gpu& gpu);

// Resolves a --gpu argument: a bare name ("h100_sxm") means gpus_dir/h100_sxm.json, anything with a '/' or a
// ".json" ending is a path. Throws InputError listing the known names when a bare name has no file.
std::filesystem::path find_gpu_file(std::string_view name_or_path, const std::filesystem::path& gpus_dir);

}  // namespace convgen
