// Interim stand-in for the scanner's output for templates/direct.cu (replaced by the generated file).
#include "direct_params.hpp"
#include <fmt/format.h>
#include "convgen/error.hpp"
namespace convgen {
namespace {
constexpr ParamDecl kParams[] = {
    {"BLOCK_M", "block_m", "m", ParamType::integer, 4, {}, 1, 1024, "output channels per block", {"templates/direct.cu", 0, 0}},
    {"BLOCK_N", "block_n", "n", ParamType::integer, 128, {}, 1, 1024, "output pixels per block", {"templates/direct.cu", 0, 0}},
    {"BLOCK_K", "block_k", "k", ParamType::integer, 1, {}, 1, 1024, "input channels per stage", {"templates/direct.cu", 0, 0}},
    {"THREAD_M", "thread_m", "tm", ParamType::integer, 1, {}, 1, 64, "output channels per thread", {"templates/direct.cu", 0, 0}},
    {"THREAD_N", "thread_n", "tn", ParamType::integer, 2, {}, 1, 64, "output pixels per thread", {"templates/direct.cu", 0, 0}},
};
constexpr EntryArg kMainArgs[] = {{"g_activation", "const float *"}, {"g_filter", "const float *"},
                                  {"g_output", "float *"}, {"g_workspace", "float *"}};
constexpr EntryDecl kEntries[] = {{"", kMainArgs, {"templates/direct.cu", 0, 0}}};
constexpr TemplateInterface kInterface{"direct", "direct.cu", kParams, kEntries, {}};
}  // namespace
const TemplateInterface& direct_interface() { return kInterface; }
KernelSpec to_spec(const DirectParams& p) {
  return {.family = "direct", .values = {p.block_m, p.block_n, p.block_k, p.thread_m, p.thread_n}};
}
void from_spec(const KernelSpec& s, DirectParams& p) {
  if (s.family != "direct" || s.values.size() != 5)
    throw InputError(fmt::format("kernel spec of family '{}' with {} values is not a direct spec", s.family, s.values.size()));
  p = {s.values[0], s.values[1], s.values[2], s.values[3], s.values[4]};
}
}  // namespace convgen
