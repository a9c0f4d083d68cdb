// render: prelude of baked-in constants, followed by the template text, for NVRTC.
#include "generator/render.hpp"

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <fmt/format.h>

#include "convgen/error.hpp"
#include "generator/embedded_templates.hpp"

namespace convgen {

namespace {

// The CONVGEN_TEMPLATE_DIR folder, or nullptr when it is unset or empty.
const char* template_dir() {
  const char* dir = std::getenv("CONVGEN_TEMPLATE_DIR");
  return dir && *dir ? dir : nullptr;
}

}  // namespace

bool templates_from_folder() { return template_dir() != nullptr; }

std::string template_text(std::string_view name) {
  if (const char* dir = template_dir()) {
    const std::filesystem::path path = std::filesystem::path(dir) / name;
    std::ifstream in(path, std::ios::binary);
    if (!in) throw InputError(fmt::format("{}: cannot open template (CONVGEN_TEMPLATE_DIR is set)", path.string()));
    std::ostringstream text;
    text << in.rdbuf();
    return text.str();
  }
  for (const EmbeddedTemplate& t : embedded_templates())
    if (t.name == name) return std::string(t.text);
  throw InputError(fmt::format("unknown kernel template '{}'", name));
}

std::vector<std::string> template_header_names() {
  std::vector<std::string> names;
  for (const EmbeddedTemplate& t : embedded_templates())
    if (t.name.ends_with(".cuh")) names.emplace_back(t.name);
  return names;
}

std::string render_epilogue(const Epilogue& e) {
  // Floats as exponent literals ("5.000000000e-01f"): every float reads back exactly, and none looks like an int.
  const auto literal = [](double v) { return fmt::format("{:.9e}f", static_cast<float>(v)); };
  return fmt::format(
      "struct Epilogue {{  // output = act(alpha * conv + beta * residual + bias[k]): {}\n"
      "  static constexpr bool BIAS = {}, RESIDUAL = {};\n"
      "  static constexpr int ACT = {};  // {}\n"
      "  static constexpr float ALPHA = {}, BETA = {}, CLIP_LO = {}, CLIP_HI = {};\n"
      "}};\n",
      to_string(e), e.bias, reads_residual(e), static_cast<int>(e.act), e.act, literal(e.alpha), literal(e.beta),
      literal(e.clip_lo), literal(e.clip_hi));
}

PreludeConstant precision_constant(const Problem& problem) {
  return {.name = "PRECISION",
          .value = static_cast<int>(problem.precision),
          .comment = fmt::format("{}: 0 fp32, 1 tf32, 2 fp16, 3 bf16", problem.precision)};
}

std::string render_prelude(const Problem& p, const KernelSpec& spec, const TemplateInterface& iface,
                           std::span<const PreludeConstant> extra) {
  const Dims3 out = output_dims(p);
  std::string text;
  // The code does not depend on the expected sparsity: the key without it, so that a dense and a sparse problem of
  // one shape share the source (and its JIT cache entry).
  Problem shape = p;
  shape.act_sparsity = 0;
  text += fmt::format("// Rendered by convgen: {} for {}\n", kernel_name(spec), problem_key(shape));
  text += "#define CONVGEN_PRELUDE 1\n";
  text += fmt::format("#define CONVGEN_ENTRY {}\n", kernel_name(spec));
  text += "namespace cfg {\n";
  text += fmt::format("constexpr int N = {}, C = {}, K = {}, GROUPS = {};\n", p.n, p.c, p.k, p.groups);
  text += fmt::format("constexpr int D = {}, H = {}, W = {};\n", p.input.d, p.input.h, p.input.w);
  text += fmt::format("constexpr int T = {}, R = {}, S = {};\n", p.filter.d, p.filter.h, p.filter.w);
  text += fmt::format("constexpr int O = {}, P = {}, Q = {};\n", out.d, out.h, out.w);
  text += fmt::format("constexpr int STRIDE_D = {}, STRIDE_H = {}, STRIDE_W = {};\n", p.stride.d, p.stride.h,
                      p.stride.w);
  text += fmt::format("constexpr int PAD_D = {}, PAD_H = {}, PAD_W = {};\n", p.padding.d, p.padding.h, p.padding.w);
  text += fmt::format("constexpr int DIL_D = {}, DIL_H = {}, DIL_W = {};\n", p.dilation.d, p.dilation.h,
                      p.dilation.w);
  text += fmt::format("constexpr bool CHANNELS_LAST = {};\n", channels_last(p.layout));
  if (spec.values.size() != iface.params.size())
    throw InputError(fmt::format("a {} kernel has {} parameters, got {}", iface.family, iface.params.size(),
                                 spec.values.size()));
  for (std::size_t i = 0; i < iface.params.size(); ++i) {
    const ParamDecl& param = iface.params[i];
    if (param.type == ParamType::boolean)
      text += fmt::format("constexpr bool {} = {};\n", param.name, spec.values[i] != 0);
    else
      text += fmt::format("constexpr int {} = {};\n", param.name, spec.values[i]);
  }
  text += render_epilogue(p.epilogue);
  for (const PreludeConstant& c : extra)
    text += fmt::format("constexpr int {} = {};{}\n", c.name, c.value, c.comment.empty() ? "" : "  // " + c.comment);
  text += "}  // namespace cfg\n";
  return text;
}

KernelSource render_kernel(const Problem& problem, const KernelSpec& spec, const TemplateInterface& iface,
                           std::span<const PreludeConstant> extra) {
  const std::string_view template_name = iface.template_file;
  KernelSource source;
  source.entry = kernel_name(spec);
  source.file_name = source.entry + ".cu";
  source.text = render_prelude(problem, spec, iface, extra);
  source.text += fmt::format("#line 1 \"{}\"\n", template_name);
  source.text += template_text(template_name);
  source.headers = template_header_names();
  return source;
}

}  // namespace convgen
