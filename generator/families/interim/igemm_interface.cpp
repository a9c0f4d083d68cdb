// Interim stand-in for the scanner's output for templates/igemm.cu (replaced by the generated file).
#include "igemm_params.hpp"
#include <fmt/format.h>
#include "convgen/error.hpp"
namespace convgen {
namespace {
constexpr int kPow2Tile[] = {16, 32, 64, 128, 256};
constexpr int kBlockK[] = {4, 8, 16, 32};
constexpr int kThread[] = {1, 2, 4, 8};
constexpr int kStages[] = {1, 2};
constexpr int kVector[] = {1, 4};
constexpr ParamDecl kParams[] = {
    {"BLOCK_M", "block_m", "m", ParamType::integer, 64, kPow2Tile, 16, 256, "output channels per block", {"templates/igemm.cu", 0, 0}},
    {"BLOCK_N", "block_n", "n", ParamType::integer, 64, kPow2Tile, 16, 256, "output pixels per block", {"templates/igemm.cu", 0, 0}},
    {"BLOCK_K", "block_k", "k", ParamType::integer, 8, kBlockK, 4, 32, "reduction elements per stage", {"templates/igemm.cu", 0, 0}},
    {"THREAD_M", "thread_m", "tm", ParamType::integer, 4, kThread, 1, 8, "output channels per thread", {"templates/igemm.cu", 0, 0}},
    {"THREAD_N", "thread_n", "tn", ParamType::integer, 4, kThread, 1, 8, "output pixels per thread", {"templates/igemm.cu", 0, 0}},
    {"STAGES", "stages", "st", ParamType::integer, 2, kStages, 1, 2, "shared-memory buffers", {"templates/igemm.cu", 0, 0}},
    {"SPLIT_K", "split_k", "sk", ParamType::integer, 1, {}, 1, 64, "blocks sharing one reduction", {"templates/igemm.cu", 0, 0}},
    {"VECTOR", "vector", "v", ParamType::integer, 1, kVector, 1, 4, "floats per global load", {"templates/igemm.cu", 0, 0}},
};
constexpr EntryArg kMainArgs[] = {{"g_activation", "const float *"}, {"g_filter", "const float *"},
                                  {"g_output", "float *"}, {"g_workspace", "float *"}};
constexpr EntryDecl kEntries[] = {{"", kMainArgs, {"templates/igemm.cu", 0, 0}}};
constexpr TemplateInterface kInterface{"igemm", "igemm.cu", kParams, kEntries, {}};
}  // namespace
const TemplateInterface& igemm_interface() { return kInterface; }
KernelSpec to_spec(const IgemmParams& p) {
  return {.family = "igemm", .values = {p.block_m, p.block_n, p.block_k, p.thread_m, p.thread_n, p.stages, p.split_k, p.vector}};
}
void from_spec(const KernelSpec& s, IgemmParams& p) {
  if (s.family != "igemm" || s.values.size() != 8)
    throw InputError(fmt::format("kernel spec of family '{}' with {} values is not an igemm spec", s.family, s.values.size()));
  p = {s.values[0], s.values[1], s.values[2], s.values[3], s.values[4], s.values[5], s.values[6], s.values[7]};
}
}  // namespace convgen
