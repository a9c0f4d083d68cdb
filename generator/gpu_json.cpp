// gpu_json: the JSON form of the Gpu descriptor, with every key required and checked.
#include "generator/gpu_json.hpp"

#include <algorithm>
#include <array>
#include <climits>
#include <variant>
#include <vector>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

#include "convgen/error.hpp"
#include "generator/csv.hpp"

namespace convgen {
namespace {

using Member = std::variant<std::string Gpu::*, int Gpu::*, std::int64_t Gpu::*, double Gpu::*>;

struct Field {
  std::string_view key;
  Member member;
};

// One row per Gpu field, in the struct's order: this table drives reading, writing and the key checks.
const std::array<Field, 19> kFields = {{
    {"name", &Gpu::name},
    {"arch", &Gpu::arch},
    {"sm_count", &Gpu::sm_count},
    {"max_threads_per_sm", &Gpu::max_threads_per_sm},
    {"max_threads_per_block", &Gpu::max_threads_per_block},
    {"max_blocks_per_sm", &Gpu::max_blocks_per_sm},
    {"regs_per_sm", &Gpu::regs_per_sm},
    {"regs_per_block", &Gpu::regs_per_block},
    {"max_regs_per_thread", &Gpu::max_regs_per_thread},
    {"smem_per_sm_bytes", &Gpu::smem_per_sm_bytes},
    {"smem_per_block_bytes", &Gpu::smem_per_block_bytes},
    {"smem_per_block_optin_bytes", &Gpu::smem_per_block_optin_bytes},
    {"l2_bytes", &Gpu::l2_bytes},
    {"dram_bandwidth_gbs", &Gpu::dram_bandwidth_gbs},
    {"clock_mhz", &Gpu::clock_mhz},
    {"peak_fp32_tflops", &Gpu::peak_fp32_tflops},
    {"peak_tf32_tflops", &Gpu::peak_tf32_tflops},
    {"peak_fp16_tflops", &Gpu::peak_fp16_tflops},
    {"peak_bf16_tflops", &Gpu::peak_bf16_tflops},
}};

std::string key_list() {
  std::string out;
  for (const Field& field : kFields) out += (out.empty() ? "" : ", ") + std::string(field.key);
  return out;
}

// "sm_NN" or "sm_NNa": the form NVRTC's --gpu-architecture takes for a real architecture.
bool is_arch(const std::string& arch) {
  if (arch.size() < 5 || arch.compare(0, 3, "sm_") != 0) return false;
  std::string_view digits = std::string_view(arch).substr(3);
  if (digits.back() == 'a') digits.remove_suffix(1);
  return digits.size() >= 2 &&
         std::all_of(digits.begin(), digits.end(), [](char ch) { return ch >= '0' && ch <= '9'; });
}

template <class... Args>
[[noreturn]] void fail(std::string_view file, fmt::format_string<Args...> format, Args&&... args) {
  throw InputError(fmt::format("{}: {}", file, fmt::format(format, std::forward<Args>(args)...)));
}

void read_field(const nlohmann::json& value, const Field& field, Gpu& gpu, std::string_view file) {
  std::visit(
      [&](auto member) {
        using T = std::remove_reference_t<decltype(gpu.*member)>;
        if constexpr (std::is_same_v<T, std::string>) {
          if (!value.is_string() || value.get<std::string>().empty())
            fail(file, "key '{}' must be a non-empty string, got {}", field.key, value.dump());
          gpu.*member = value.get<std::string>();
        } else if constexpr (std::is_integral_v<T>) {
          const bool fits = value.is_number_integer() && value.get<std::int64_t>() > 0 &&
                            (std::is_same_v<T, std::int64_t> || value.get<std::int64_t>() <= INT_MAX);
          if (!fits) fail(file, "key '{}' must be a positive integer, got {}", field.key, value.dump());
          gpu.*member = static_cast<T>(value.get<std::int64_t>());
        } else {
          if (!value.is_number() || !(value.get<double>() > 0))
            fail(file, "key '{}' must be a positive number, got {}", field.key, value.dump());
          gpu.*member = value.get<double>();
        }
      },
      field.member);
}

// Limits that must agree with each other; a descriptor that breaks one would mislead occupancy calculations.
void check_limits(const Gpu& gpu, std::string_view file) {
  if (!is_arch(gpu.arch)) fail(file, "key 'arch' must look like \"sm_90\" or \"sm_90a\", got \"{}\"", gpu.arch);
  const auto at_least = [&](std::string_view key, std::int64_t value, std::string_view other, std::int64_t bound) {
    if (value < bound) fail(file, "key '{}' must be at least {} ({}), got {}", key, other, bound, value);
  };
  at_least("smem_per_block_optin_bytes", gpu.smem_per_block_optin_bytes, "smem_per_block_bytes",
           gpu.smem_per_block_bytes);
  at_least("smem_per_sm_bytes", gpu.smem_per_sm_bytes, "smem_per_block_optin_bytes", gpu.smem_per_block_optin_bytes);
  at_least("max_threads_per_sm", gpu.max_threads_per_sm, "max_threads_per_block", gpu.max_threads_per_block);
  at_least("regs_per_sm", gpu.regs_per_sm, "regs_per_block", gpu.regs_per_block);
}

}  // namespace

Gpu parse_gpu_json(std::string_view text, std::string_view file_name) {
  nlohmann::json doc;
  try {
    doc = nlohmann::json::parse(text);
  } catch (const nlohmann::json::exception& e) {
    // what() is "[json.exception.parse_error.101] parse error at line L, column C: ..."; keep what follows the tag.
    // Not only parse errors: a number past a double's range is out_of_range.406 ("number overflow parsing '1e999'").
    std::string_view message = e.what();
    if (const auto tag_end = message.find("] "); tag_end != std::string_view::npos) message.remove_prefix(tag_end + 2);
    fail(file_name, "{}", message);
  }
  if (!doc.is_object()) fail(file_name, "expected a JSON object of GPU fields, got {}", doc.type_name());
  for (const auto& item : doc.items()) {
    // A named key, not a structured binding: clang 14 (the fuzz and asan presets) cannot capture one in a lambda.
    const std::string& key = item.key();
    if (std::none_of(kFields.begin(), kFields.end(), [&](const Field& f) { return f.key == key; }))
      fail(file_name, "unknown key '{}', expected one of {}", key, key_list());
  }
  Gpu gpu;
  for (const Field& field : kFields) {
    const auto at = doc.find(field.key);
    if (at == doc.end()) fail(file_name, "missing key '{}'", field.key);
    read_field(*at, field, gpu, file_name);
  }
  check_limits(gpu, file_name);
  return gpu;
}

Gpu load_gpu(const std::filesystem::path& path) {
  const auto text = read_text_file(path);
  if (!text) throw InputError(fmt::format("{}: cannot open GPU file", path.string()));
  return parse_gpu_json(*text, path.string());
}

std::string gpu_to_json(const Gpu& gpu) {
  nlohmann::ordered_json doc = nlohmann::ordered_json::object();
  for (const Field& field : kFields)
    std::visit([&](auto member) { doc[std::string(field.key)] = gpu.*member; }, field.member);
  return doc.dump(2) + "\n";
}

std::filesystem::path find_gpu_file(std::string_view name_or_path, const std::filesystem::path& gpus_dir) {
  const bool is_path = name_or_path.find('/') != std::string_view::npos || name_or_path.ends_with(".json");
  if (is_path) return std::filesystem::path(name_or_path);
  const auto path = gpus_dir / (std::string(name_or_path) + ".json");
  std::error_code error;
  if (std::filesystem::is_regular_file(path, error)) return path;
  std::vector<std::string> known;
  for (const auto& entry : std::filesystem::directory_iterator(gpus_dir, error))
    if (entry.path().extension() == ".json") known.push_back(entry.path().stem().string());
  std::sort(known.begin(), known.end());
  throw InputError(fmt::format("unknown GPU '{}', expected a path to a .json file or one of {} (in {})", name_or_path,
                               known.empty() ? std::string("nothing") : fmt::format("{}", fmt::join(known, ", ")),
                               gpus_dir.string()));
}

}  // namespace convgen
