// emit_library: chooses and builds the kernels of a static library and renders the files of its CMake project.
#include "emit/emit_library.hpp"

#include <algorithm>
#include <cctype>
#include <fstream>

#include <fmt/format.h>

#include "conv/plan_passes.hpp"
#include "convgen/error.hpp"
#include "generator/embedded_templates.hpp"
#include "generator/family.hpp"

namespace convgen {

// The files of emit/skeleton/, embedded at build time (emit/CMakeLists.txt).
const std::vector<EmbeddedTemplate>& emit_skeleton_files();

namespace {

std::string upper(std::string_view text) {
  std::string out(text);
  for (char& ch : out) ch = static_cast<char>(std::toupper(static_cast<unsigned char>(ch)));
  return out;
}

std::string replace_all(std::string text, std::string_view from, std::string_view to) {
  for (std::size_t pos = text.find(from); pos != std::string::npos; pos = text.find(from, pos + to.size()))
    text.replace(pos, from.size(), to);
  return text;
}

// A file-name-safe form of a layer name: letters, digits, '-' and '_' kept, anything else '_'.
std::string file_stem(std::string_view name) {
  std::string out(name);
  for (char& ch : out)
    if (!std::isalnum(static_cast<unsigned char>(ch)) && ch != '-' && ch != '_') ch = '_';
  return out;
}

// A C string literal of `text` (layer names come from user files).
std::string c_string(std::string_view text) {
  std::string out = "\"";
  for (char ch : text) {
    if (ch == '"' || ch == '\\') out += '\\';
    if (static_cast<unsigned char>(ch) < 0x20) {
      out += fmt::format("\\{:03o}", static_cast<unsigned>(static_cast<unsigned char>(ch)));
      continue;
    }
    out += ch;
  }
  return out + "\"";
}

// Text for a // comment: no line breaks.
std::string one_line(std::string_view text) {
  std::string out(text);
  std::replace(out.begin(), out.end(), '\n', ' ');
  std::replace(out.begin(), out.end(), '\r', ' ');
  return out;
}

// A double as a C++ literal that reads back exactly ("0.5", "1e+20", "-1.0").
std::string double_literal(double v) {
  std::string text = fmt::format("{}", v);
  if (text.find_first_of(".en") == std::string::npos) text += ".0";
  return text;
}

std::string layout_enum(std::string_view upper_name, Layout layout) {
  return fmt::format("{}_LAYOUT_{}", upper_name, upper(to_string(layout)));
}

std::string precision_enum(std::string_view upper_name, Precision precision) {
  return fmt::format("{}_PRECISION_{}", upper_name, upper(to_string(precision)));
}

// The problem's cglib_epilogue: {0} for the identity, else every field (doubles exact: fmt writes the shortest
// form that reads back).
std::string epilogue_initializer(std::string_view upper_name, const Epilogue& e) {
  if (is_identity(e)) return "{0}";
  return fmt::format("{{1, {}, {}, {}, {}_ACTIVATION_{}, {}, {}}}", double_literal(e.alpha), double_literal(e.beta),
                     e.bias ? 1 : 0, upper_name, upper(to_string(e.act)), double_literal(e.clip_lo),
                     double_literal(e.clip_hi));
}

std::string arch_list(const std::vector<Gpu>& gpus) {
  std::string out;
  for (const Gpu& gpu : gpus) out += (out.empty() ? "" : ", ") + gpu.arch;
  return out;
}

std::string cubin_file(std::size_t index, const LibraryProblem& problem, const Gpu& gpu) {
  return fmt::format("src/cubins/{:02}_{}_{}.inc", index, file_stem(problem.name), gpu.arch);
}

std::string plan_passes_file(const Gpu& gpu) { return fmt::format("src/cubins/plan_passes_{}.inc", gpu.arch); }

// What kernel k depends on of its problem's own filter (none where the problem has none).
FilterDependence kernel_filter_check(const Problem& problem, const LibraryKernel& k) {
  if (problem.weights.pattern.empty()) return FilterDependence::none;
  return family(k.built.spec.family).filter_dependence(k.built.spec);
}

// What the library checks of a filter given for problem p (the most any of its kernels depends on; none for a problem
// without a filter of its own).
FilterDependence filter_check(const LibraryProblem& p) {
  FilterDependence most = FilterDependence::none;
  if (p.problem.weights.pattern.empty()) return most;
  for (const LibraryKernel& k : p.kernels) most = std::max(most, kernel_filter_check(p.problem, k));
  if (most != FilterDependence::none && !p.problem.weights.values)
    throw InputError(
        fmt::format("{}: its kernels were made for filter pattern {}, whose values the library needs to "
                    "check the filters it is given, and the problem carries only the pattern",
                    p.name, p.problem.weights.pattern));
  return most;
}

std::string filter_file(std::size_t index, const LibraryProblem& problem, std::string_view what) {
  return fmt::format("src/filters/{:02}_{}_{}.inc", index, file_stem(problem.name), what);
}

// The nonzero mask of a filter, a bit per element (element i: bit i % 8 of byte i / 8), as cubin_array_text writes
// bytes.
std::vector<char> nonzero_mask(const std::vector<float>& values) {
  std::vector<char> mask((values.size() + 7) / 8, 0);
  for (std::size_t i = 0; i < values.size(); ++i)
    if (values[i] != 0.0f) mask[i / 8] = static_cast<char>(mask[i / 8] | (1 << (i % 8)));
  return mask;
}

// The nonzero values of a filter in element order, as exact hexadecimal float literals, eight a line.
std::string nonzero_values_text(const std::vector<float>& values) {
  std::string out;
  std::size_t written = 0;
  for (const float v : values) {
    if (v == 0.0f) continue;
    out += fmt::format("{:a}f,", v);
    out += ++written % 8 == 0 ? "\n" : " ";
  }
  if (!out.empty() && out.back() == ' ') out.back() = '\n';
  return out;
}

// The plan passes' cubin for lib.gpus[g], or nullptr where the library has none (its zero steps then memset).
const std::vector<char>* plan_passes_of(const LibraryDescription& lib, std::size_t g) {
  return g < lib.plan_passes.size() && !lib.plan_passes[g].empty() ? &lib.plan_passes[g] : nullptr;
}

bool has_pass_step(const LaunchPlan& plan) {
  for (const auto* steps : {&plan.setup, &plan.run})
    for (const LaunchStep& step : *steps)
      if (step.kind == LaunchStep::Kind::zero || step.kind == LaunchStep::Kind::relu) return true;
  return false;
}

// The most arguments an entry may take: the emitted run time binds them into a fixed array.
constexpr std::size_t max_entry_arguments = 16;

// What a kernel argument binds to, as the emitted table spells it: {Arg::x, buffer index or -1}. The activation is
// the plan's activation_buffer where it names one (a ReLU prologue's).
std::string arg_binding(const LaunchPlan& plan, const std::string& arg, const std::string& where) {
  if (arg == "activation" && !plan.activation_buffer.empty()) return arg_binding(plan, plan.activation_buffer, where);

  for (const char* tensor : {"activation", "filter", "output", "workspace", "bias", "residual"})
    if (arg == tensor) return fmt::format("{{Arg::{}, -1}}", arg);
  for (std::size_t b = 0; b < plan.buffers.size(); ++b)
    if (plan.buffers[b].name == arg) return fmt::format("{{Arg::buffer, {}}}", b);
  throw Error(fmt::format("{}: argument g_{} names no tensor and no buffer of the plan", where, arg));
}

// The steps of one kernel's setup or run as a C++ array named `array` (with the argument arrays it points to).
// `output_bytes`: what zeroing the output clears; `passes`: whether the library has the plan passes for the kernel's
// architecture (a zero step then launches the zero pass, with its grid for the bytes it clears, else it is a memset;
// a relu step launches the relu pass, and needs them).
std::string render_steps(const LibraryKernel& k, const std::vector<LaunchStep>& steps, const std::string& array,
                         bool setup, std::int64_t output_bytes, bool passes) {
  const std::string where = fmt::format("{} ({})", k.built.source.entry, setup ? "setup" : "run");
  std::string maps_text;  // the tensor maps kernel steps take by value, before the bindings that point at them
  std::string args_text;
  std::string steps_text = fmt::format("const Step {}[] = {{\n", array);
  for (std::size_t s = 0; s < steps.size(); ++s) {
    const LaunchStep& step = steps[s];
    if (step.kind == LaunchStep::Kind::zero) {
      int buffer = -1;
      if (step.buffer != "output") {
        const auto it = std::find_if(k.plan.buffers.begin(), k.plan.buffers.end(),
                                     [&](const PlanBuffer& b) { return b.name == step.buffer; });
        if (it == k.plan.buffers.end())
          throw Error(fmt::format("{}: step {} zeroes '{}', which is neither the output nor a buffer of the plan",
                                  where, s, step.buffer));
        buffer = static_cast<int>(it - k.plan.buffers.begin());
      } else if (setup) {
        throw Error(fmt::format("{}: a setup step cannot zero the output (setup runs once, without one)", where));
      }
      if (!passes) {
        steps_text +=
            fmt::format("    {{Step::zero, nullptr, {{0, 0, 0}}, {{0, 0, 0}}, 0, nullptr, 0, {}, false}},\n", buffer);
        continue;
      }
      const std::int64_t bytes = buffer < 0 ? output_bytes : k.plan.buffers[static_cast<std::size_t>(buffer)].bytes;
      const LaunchConfig c = zero_pass_config(bytes, has_early_launch(k.built.cubin.arch));
      steps_text += fmt::format("    {{Step::zero, \"{}\", {{{}, {}, {}}}, {{{}, {}, {}}}, 0, nullptr, 0, {}, {}}},\n",
                                kZeroPassEntry, c.grid[0], c.grid[1], c.grid[2], c.block[0], c.block[1], c.block[2],
                                buffer, c.early);
      continue;
    }
    if (step.kind == LaunchStep::Kind::relu) {
      const auto it = std::find_if(k.plan.buffers.begin(), k.plan.buffers.end(),
                                   [&](const PlanBuffer& b) { return b.name == step.buffer; });
      if (setup || it == k.plan.buffers.end() || it->persistent)
        throw Error(
            fmt::format("{}: step {} writes max(0, x) of the activation into '{}': only a run step may, into a "
                        "per-call buffer of the plan",
                        where, s, step.buffer));
      if (!passes)
        throw Error(fmt::format("{}: its plan has a relu step and the library has no relu pass for {}", where,
                                k.built.cubin.arch));
      const LaunchConfig c = relu_pass_config(it->bytes, has_early_launch(k.built.cubin.arch));
      steps_text += fmt::format("    {{Step::relu, \"{}\", {{{}, {}, {}}}, {{{}, {}, {}}}, 0, nullptr, 0, {}, {}}},\n",
                                relu_pass_entry(k.built.problem.precision), c.grid[0], c.grid[1], c.grid[2], c.block[0],
                                c.block[1], c.block[2], it - k.plan.buffers.begin(), c.early);
      continue;
    }
    const std::string entry =
        step.entry_suffix.empty() ? k.built.source.entry : k.built.source.entry + "_" + step.entry_suffix;
    const auto found = k.entries.find(step.entry_suffix);
    if (found == k.entries.end()) throw Error(fmt::format("{}: entry {} has no argument list", where, entry));
    const std::vector<std::string>& args = found->second;
    if (args.size() > max_entry_arguments)
      throw Error(fmt::format("{}: entry {} takes {} arguments; emit-lib binds at most {}", where, entry, args.size(),
                              max_entry_arguments));
    const std::string args_array = fmt::format("{}_args{}", array, s);
    // A tensor map over the activation reads the buffer a ReLU prologue fills where the plan has one.
    const auto buffer_index = [&](const std::string& buffer) {
      for (std::size_t b = 0; !buffer.empty() && b < k.plan.buffers.size(); ++b)
        if (k.plan.buffers[b].name == buffer) return static_cast<int>(b);
      return -1;
    };
    const auto map_binding = [&](const PlanTensorMap& m) -> std::string {
      if (m.tensor.empty()) return "{Arg::map, -1, nullptr}";
      const std::string map_name = fmt::format("{}_{}", args_array, m.name);
      const TensorMapSpec& t = m.spec;
      maps_text += fmt::format(
          "const TensorMap {} = {{{}, {}, {}, {}, {{{}}}, {{{}}}, {{{}}}, {}, {{{}}}, {}, {{{}}}, {{{}}}, {}, {}}};\n",
          map_name, m.tensor == "filter" ? "TensorMap::filter" : "TensorMap::activation",
          buffer_index(m.tensor == "activation" ? k.plan.activation_buffer : ""), static_cast<int>(t.type), t.rank,
          fmt::join(t.dims, ", "), fmt::join(t.strides, ", "), fmt::join(t.box, ", "), t.swizzle_128b,
          fmt::join(t.element_strides, ", "), t.im2col, fmt::join(t.lower_corner, ", "),
          fmt::join(t.upper_corner, ", "), t.channels, t.pixels);
      return fmt::format("{{Arg::map, -1, &{}}}", map_name);
    };
    args_text += fmt::format("const ArgBinding {}[] = {{", args_array);
    for (std::size_t a = 0; a < args.size(); ++a) {
      if (setup && args[a] != "filter") {
        const PlanBuffer* b = k.plan.find(args[a]);
        if (b == nullptr || !b->persistent)
          throw Error(
              fmt::format("{}: setup entry {} takes g_{}; setup steps run once at op creation and may bind "
                          "only the filter and persistent buffers",
                          where, entry, args[a]));
      }
      args_text += (a == 0 ? "" : ", ") + (k.plan.find_map(args[a]) ? map_binding(*k.plan.find_map(args[a]))
                                                                    : arg_binding(k.plan, args[a], where));
    }
    args_text += "};\n";
    const LaunchGeometry& g = step.geometry;
    steps_text += fmt::format("    {{Step::kernel, \"{}\", {{{}, {}, {}}}, {{{}, {}, {}}}, {}, {}, {}, -1, {}}},\n",
                              entry, g.grid[0], g.grid[1], g.grid[2], g.block[0], g.block[1], g.block[2],
                              g.dynamic_smem_bytes, args_array, args.size(), launches_early(step, k.built.cubin.arch));
  }
  return maps_text + args_text + steps_text + "};\n";
}

// "the tuning database (median 41.50 us, measurement 17)" or "convgen's default choice (untuned)".
std::string origin_text(const LibraryKernel& k) {
  if (k.tuned)
    return fmt::format("the tuning database (median {:.2f} us, measurement {})", k.tuned->median_us,
                       k.tuned->measurement_id);
  return "convgen's default choice (untuned)";
}

// "zero output, kernel" / "setup: kernel pack; run: kernel; workspace 1024 B, persistent 4096 B".
std::string describe_plan(const LaunchPlan& plan) {
  const auto steps = [](const std::vector<LaunchStep>& list) {
    std::string out;
    for (const LaunchStep& s : list) {
      out += out.empty() ? "" : ", ";
      if (s.kind == LaunchStep::Kind::zero)
        out += "zero " + s.buffer;
      else if (s.kind == LaunchStep::Kind::relu)
        out += "relu activation into " + s.buffer;
      else
        out += s.entry_suffix.empty() ? "kernel" : "kernel " + s.entry_suffix;
    }
    return out;
  };
  std::string out = plan.setup.empty() ? steps(plan.run) : "setup: " + steps(plan.setup) + "; run: " + steps(plan.run);
  if (plan.workspace_bytes() > 0) out += fmt::format("; workspace {} B", plan.workspace_bytes());
  if (plan.persistent_bytes() > 0) out += fmt::format("; persistent {} B", plan.persistent_bytes());
  return out;
}

std::string render_kernels_cpp(const LibraryDescription& lib) {
  const std::string up = upper(lib.name);
  std::string out = fmt::format(
      "// {}_kernels.cpp: the problems of the {} suite and their kernels for {}. Written by convgen emit-lib {} "
      "(NVRTC {}); do not edit.\n",
      lib.name, one_line(lib.suite), arch_list(lib.gpus), CONVGEN_VERSION, nvrtc_version());
  out += fmt::format("#include \"{}_kernels.hpp\"\n\nnamespace {}_internal {{\nnamespace {{\n", lib.name, lib.name);
  for (std::size_t i = 0; i < lib.problems.size(); ++i) {
    const LibraryProblem& p = lib.problems[i];
    out += fmt::format("\n// {}: {}\n//   {}\n", one_line(p.name), problem_key(p.problem), describe(p.problem));
    for (std::size_t g = 0; g < lib.gpus.size(); ++g) {
      const LibraryKernel& k = p.kernels[g];
      const PtxasReport& r = k.built.cubin.report;
      const std::string id = fmt::format("{}_{}", i, lib.gpus[g].arch);
      out += fmt::format(
          "// {} ({}): {}, from {}; {} registers, {} bytes spilled, {} bytes static shared memory; plan: {}\n"
          "alignas(64) const unsigned char cubin_{}[] = {{\n#include \"cubins/{}\"\n}};\n",
          lib.gpus[g].arch, one_line(lib.gpus[g].name), k.built.source.entry, origin_text(k), r.registers,
          r.spill_store_bytes + r.spill_load_bytes, r.smem_bytes, describe_plan(k.plan), id,
          std::filesystem::path(cubin_file(i, p, lib.gpus[g])).filename().string());
      if (!k.plan.buffers.empty()) {
        out += fmt::format("const PlanBuffer buffers_{}[] = {{\n", id);
        for (const PlanBuffer& b : k.plan.buffers)
          out += fmt::format("    {{\"{}\", {}ULL, {}ULL, {}}},\n", b.name, b.bytes, k.plan.offset_of(b.name),
                             b.persistent);
        out += "};\n";
      }
      const std::int64_t output_bytes = output_elements(p.problem) * element_bytes(p.problem.precision);
      const bool passes = plan_passes_of(lib, g) != nullptr;
      if (!k.plan.setup.empty()) out += render_steps(k, k.plan.setup, "setup_" + id, true, output_bytes, passes);
      if (k.plan.run.empty()) throw Error(fmt::format("{}: the plan has no run step", k.built.source.entry));
      out += render_steps(k, k.plan.run, "run_" + id, false, output_bytes, passes);
    }
    out += fmt::format("const KernelImage kernels_{}[] = {{\n", i);
    for (std::size_t g = 0; g < lib.gpus.size(); ++g) {
      const LibraryKernel& k = p.kernels[g];
      const std::string id = fmt::format("{}_{}", i, lib.gpus[g].arch);
      const auto array = [&](bool present, const std::string& name, std::size_t count) {
        return present ? fmt::format("{}, {}", name, count) : std::string("nullptr, 0");
      };
      out += fmt::format(
          "    {{{}, cubin_{}, sizeof cubin_{}, \"{}\", {}, {}ULL, {}ULL, {}, {}, {}, {{{}, {}, {}}}}},\n",
          compute_capability(lib.gpus[g]), id, id, k.built.source.entry,
          array(!k.plan.buffers.empty(), "buffers_" + id, k.plan.buffers.size()), k.plan.workspace_bytes(),
          k.plan.persistent_bytes(), array(!k.plan.setup.empty(), "setup_" + id, k.plan.setup.size()),
          array(true, "run_" + id, k.plan.run.size()), static_cast<int>(kernel_filter_check(p.problem, k)),
          k.plan.tensor_alignment.activation, k.plan.tensor_alignment.filter, k.plan.tensor_alignment.output);
    }
    out += "};\n";
    const FilterDependence check = filter_check(p);
    if (check != FilterDependence::none) {
      const auto inc = [&](std::string_view what) {
        return std::filesystem::path(filter_file(i, p, what)).filename().string();
      };
      out += fmt::format(
          "// The filter's nonzeros (pattern {}): a filter given for the problem must have none elsewhere\n"
          "const unsigned char weight_mask_{}[] = {{\n#include \"filters/{}\"\n}};\n",
          p.problem.weights.pattern, i, inc("mask"));
      if (check == FilterDependence::values)
        out += fmt::format(
            "// Their values, which a kernel has in its code: a filter given for the problem must have them\n"
            "const float weight_values_{}[] = {{\n#include \"filters/{}\"\n}};\n",
            i, inc("values"));
    }
  }
  std::string pass_table;
  for (std::size_t g = 0; g < lib.gpus.size(); ++g) {
    const std::vector<char>* cubin = plan_passes_of(lib, g);
    if (cubin == nullptr) continue;
    const std::string& arch = lib.gpus[g].arch;
    out += fmt::format(
        "\n// The plan passes for {}: the kernels of the zero steps (clear a buffer the plan's kernels accumulate "
        "into)\n// and of the relu steps (write max(0, x) of the activation into a buffer the plan's kernels read)\n"
        "alignas(64) const unsigned char plan_passes_{}[] = {{\n#include \"cubins/{}\"\n}};\n",
        arch, arch, std::filesystem::path(plan_passes_file(lib.gpus[g])).filename().string());
    pass_table += fmt::format("    {{{}, plan_passes_{}, sizeof plan_passes_{}}},\n", compute_capability(lib.gpus[g]),
                              arch, arch);
  }
  if (!pass_table.empty()) out += "const PassImage pass_images[] = {\n" + pass_table + "};\n";
  out += "\n}  // namespace\n\nconst ProblemEntry problems[] = {\n";
  for (std::size_t i = 0; i < lib.problems.size(); ++i) {
    const Problem& q = lib.problems[i].problem;
    const FilterDependence check = filter_check(lib.problems[i]);
    out += fmt::format(
        "    {{{{{}, {}, {}, {}, {}, {}, {}, {}, {}, {}, {}, {}, {}, {}, {}, {}, {}, {}, {}, {}, {}, {}, {}}},\n"
        "     {}, {}ULL, kernels_{}, {}, \"{}\", {}, {}, {}ULL}},\n",
        q.n, q.c, q.k, q.input.d, q.input.h, q.input.w, q.filter.d, q.filter.h, q.filter.w, q.stride.d, q.stride.h,
        q.stride.w, q.padding.d, q.padding.h, q.padding.w, q.dilation.d, q.dilation.h, q.dilation.w, q.groups,
        layout_enum(up, q.layout), precision_enum(up, q.precision), epilogue_initializer(up, q.epilogue),
        static_cast<int>(q.relu_on_load), c_string(lib.problems[i].name),
        output_elements(q) * element_bytes(q.precision), i, lib.gpus.size(), q.weights.pattern,
        check != FilterDependence::none ? fmt::format("weight_mask_{}", i) : "nullptr",
        check == FilterDependence::values ? fmt::format("weight_values_{}", i) : "nullptr", filter_elements(q));
  }
  out += "};\nconst std::size_t problem_count = sizeof problems / sizeof problems[0];\n";
  out += pass_table.empty() ? "const PassImage* const plan_passes = nullptr;\nconst std::size_t plan_pass_count = 0;\n"
                            : "const PassImage* const plan_passes = pass_images;\n"
                              "const std::size_t plan_pass_count = sizeof pass_images / sizeof pass_images[0];\n";
  out += fmt::format("const char* const architectures = \"{}\";\n\n}}  // namespace {}_internal\n", arch_list(lib.gpus),
                     lib.name);
  return out;
}

std::string render_readme(const LibraryDescription& lib) {
  std::string out = skeleton_file("README.md", lib.name);
  std::string gpus;
  for (const Gpu& gpu : lib.gpus) gpus += fmt::format("{}{} ({})", gpus.empty() ? "" : ", ", gpu.name, gpu.arch);
  int tuned = 0;
  int total = 0;
  for (const LibraryProblem& p : lib.problems)
    for (const LibraryKernel& k : p.kernels) {
      tuned += k.tuned.has_value();
      ++total;
    }
  const std::string origin =
      tuned == total ? "every kernel is the tuning database's fastest verified one (its measured median per call)"
      : tuned == 0   ? "every kernel is convgen's default choice for the exact problem (untuned)"
                     : fmt::format(
                           "{} of {} kernels are the tuning database's fastest verified ones (with their "
                             "measured median per call), the others convgen's default choice (untuned)",
                           tuned, total);
  out += fmt::format(
      "\n## Problems\n\nThe {} suite, for {}; {}. The plan is what a call runs (a `zero` step "
      "clears a buffer the kernel accumulates into).\n\n",
      one_line(lib.suite), gpus, origin);
  out += "| layer | problem |";
  for (const Gpu& gpu : lib.gpus) out += fmt::format(" {} kernel | from | plan |", gpu.arch);
  out += "\n|---|---|";
  for (std::size_t g = 0; g < lib.gpus.size(); ++g) out += "---|---|---|";
  out += "\n";
  for (const LibraryProblem& p : lib.problems) {
    out += fmt::format("| {} | {} |", replace_all(one_line(p.name), "|", "\\|"), describe(p.problem));
    for (const LibraryKernel& k : p.kernels)
      out += fmt::format(" `{}` | {} | {} |", k.built.source.entry,
                         k.tuned ? fmt::format("database, {:.2f} us", k.tuned->median_us) : std::string("default"),
                         describe_plan(k.plan));
    out += "\n";
  }
  return out;
}

}  // namespace

void check_library_name(std::string_view name) {
  const bool valid = !name.empty() && std::isalpha(static_cast<unsigned char>(name[0])) &&
                     std::all_of(name.begin(), name.end(),
                                 [](char ch) { return std::isalnum(static_cast<unsigned char>(ch)) || ch == '_'; });
  if (!valid)
    throw InputError(fmt::format(
        "--name: '{}' must be a C identifier starting with a letter (letters, digits and '_'), e.g. cusnn_sm90", name));
}

std::vector<Layer> distinct_problems(const Suite& suite) {
  std::vector<Layer> out;
  for (const Layer& layer : suite.layers) {
    auto same = std::find_if(out.begin(), out.end(), [&](const Layer& l) { return l.problem == layer.problem; });
    if (same == out.end()) {
      out.push_back(layer);
    } else {
      same->name += ", " + layer.name;
      same->count += layer.count;
    }
  }
  return out;
}

LaunchPlan plan_of(const BuiltKernel& kernel) { return kernel.plan; }

std::vector<std::string> entry_arguments(const BuiltKernel& kernel, std::string_view entry_suffix) {
  if (const EntryDecl* entry = family(kernel.spec.family).interface().find_entry(entry_suffix)) {
    std::vector<std::string> names;
    for (const EntryArg& arg : entry->args) names.emplace_back(arg.name.substr(2));  // g_activation -> activation
    return names;
  }
  throw Error(fmt::format("{}: the template declares no entry '{}'", kernel.source.entry, entry_suffix));
}

LibraryKernel library_kernel(const BuiltKernel& kernel, std::optional<TunedKernel> tuned) {
  LibraryKernel out{.built = kernel, .plan = plan_of(kernel), .entries = {}, .tuned = std::move(tuned)};
  for (const auto* steps : {&out.plan.setup, &out.plan.run})
    for (const LaunchStep& step : *steps)
      if (step.kind == LaunchStep::Kind::kernel)
        out.entries[step.entry_suffix] = entry_arguments(kernel, step.entry_suffix);
  return out;
}

std::vector<std::vector<ChosenKernel>> choose_kernels(const std::vector<Layer>& layers, const std::vector<Gpu>& gpus,
                                                      const LibraryChoice& choice) {
  std::vector<std::vector<ChosenKernel>> chosen(gpus.size());
  std::vector<std::string> missing;
  for (std::size_t g = 0; g < gpus.size(); ++g) {
    for (const Layer& layer : layers) {
      std::optional<TunedKernel> tuned;
      if (choice.tuned) tuned = choice.tuned(gpus[g], layer.problem);
      if (tuned) {
        try {
          chosen[g].push_back({.spec = parse_kernel_name(tuned->kernel), .tuned = tuned});
        } catch (const InputError& e) {
          throw InputError(fmt::format("{}: the best kernel for {} on {} ({}) is not one this convgen knows: {}",
                                       choice.source, layer.name, gpus[g].name, gpus[g].arch, e.what()));
        }
        continue;
      }
      if (choice.tuned && !choice.fallback_default)
        missing.push_back(
            fmt::format("{} on {} ({}): {}", layer.name, gpus[g].name, gpus[g].arch, problem_key(layer.problem)));
      chosen[g].push_back({.spec = default_choice(layer.problem, gpus[g]), .tuned = std::nullopt});
    }
  }
  if (!missing.empty()) {
    std::string message = fmt::format("{}: no verified kernel for {} of {} problems x architectures:", choice.source,
                                      missing.size(), layers.size() * gpus.size());
    for (const std::string& m : missing) message += "\n  " + m;
    message += fmt::format(
        "\nfill it with `{}` on each GPU named, or pass --fallback default to take convgen's default choice for "
        "these",
        choice.tune_command);
    if (!choice.hint.empty()) message += "\n" + choice.hint;
    throw InputError(message);
  }
  return chosen;
}

LibraryDescription build_library(std::string_view name, const Suite& suite, const std::vector<Gpu>& gpus,
                                 JitCache& cache, ThreadPool& pool, const LibraryChoice& choice,
                                 const std::function<void(const std::string&)>& on_built) {
  check_library_name(name);
  if (gpus.empty()) throw InputError("--gpu: at least one GPU descriptor is needed");
  for (std::size_t i = 0; i < gpus.size(); ++i)
    for (std::size_t j = 0; j < i; ++j)
      if (compute_capability(gpus[j]) == compute_capability(gpus[i]))
        throw InputError(fmt::format("--gpu: {} and {} are both {}: the library holds one kernel per architecture",
                                     gpus[j].name, gpus[i].name, gpus[i].arch));
  const std::vector<Layer> layers = distinct_problems(suite);
  if (layers.empty()) throw InputError(fmt::format("{}: the suite has no layers", suite.name));
  const std::vector<std::vector<ChosenKernel>> chosen = choose_kernels(layers, gpus, choice);

  LibraryDescription lib{.name = std::string(name), .suite = suite.name, .gpus = gpus, .problems = {}};
  for (const Layer& layer : layers)
    lib.problems.push_back({.name = layer.name, .problem = layer.problem, .kernels = {}});
  std::vector<std::string> failures;
  for (std::size_t g = 0; g < gpus.size(); ++g) {
    const Gpu& gpu = gpus[g];
    std::vector<BuildRequest> requests;
    for (std::size_t i = 0; i < layers.size(); ++i) requests.push_back({layers[i].problem, chosen[g][i].spec});
    const std::vector<BuildOutcome> outcomes = build_kernels(requests, gpu, cache, pool, [&](std::size_t i) {
      if (on_built) on_built(fmt::format("{} {} {}", layers[i].name, gpu.arch, kernel_name(requests[i].spec)));
    });
    for (std::size_t i = 0; i < outcomes.size(); ++i) {
      if (const auto* error = std::get_if<std::exception_ptr>(&outcomes[i])) {
        try {
          std::rethrow_exception(*error);
        } catch (const std::exception& e) {
          failures.push_back(fmt::format("{} ({}) {}{}: {}", layers[i].name, gpu.arch, kernel_name(requests[i].spec),
                                         chosen[g][i].tuned ? " (from the tuning database)" : "", e.what()));
        }
        continue;
      }
      const BuiltKernel& kernel = std::get<BuiltKernel>(outcomes[i]);
      lib.problems[i].kernels.push_back(library_kernel(kernel, chosen[g][i].tuned));
    }
  }
  if (!failures.empty()) {
    std::string message =
        fmt::format("{} of {} kernels failed to build:", failures.size(), layers.size() * gpus.size());
    for (const std::string& f : failures) message += "\n  " + f;
    throw Error(message);
  }
  // The plan passes, for each architecture whose plans have a zero or relu step (compiled once per process and
  // architecture).
  lib.plan_passes.resize(gpus.size());
  for (std::size_t g = 0; g < gpus.size(); ++g)
    for (const LibraryProblem& p : lib.problems)
      if (has_pass_step(p.kernels[g].plan)) {
        lib.plan_passes[g] = plan_passes_cubin(gpus[g].arch).image;
        break;
      }
  return lib;
}

std::string cubin_array_text(const std::vector<char>& image) {
  std::string out;
  out.reserve(image.size() * 5 + image.size() / 16 + 1);
  for (std::size_t i = 0; i < image.size(); ++i) {
    out += fmt::format("0x{:02x},", static_cast<unsigned>(static_cast<unsigned char>(image[i])));
    if (i % 16 == 15 || i + 1 == image.size()) out += '\n';
  }
  return out;
}

std::string skeleton_file(std::string_view file, std::string_view library) {
  for (const EmbeddedTemplate& t : emit_skeleton_files())
    if (t.name == file) return replace_all(replace_all(std::string(t.text), "CGLIB", upper(library)), "cglib", library);
  throw InputError(fmt::format("unknown emit-lib skeleton file '{}'", file));
}

std::map<std::string, std::string> render_library(const LibraryDescription& lib) {
  check_library_name(lib.name);
  const std::string& n = lib.name;
  std::map<std::string, std::string> files;
  files["CMakeLists.txt"] = skeleton_file("CMakeLists.txt", n);
  files[fmt::format("cmake/{}Config.cmake.in", n)] = skeleton_file("cglibConfig.cmake.in", n);
  files[fmt::format("include/{}.h", n)] = skeleton_file("cglib.h", n);
  files[fmt::format("src/{}_runtime.cpp", n)] = skeleton_file("cglib_runtime.cpp", n);
  files[fmt::format("src/{}_kernels.hpp", n)] = skeleton_file("cglib_kernels.hpp", n);
  files[fmt::format("src/{}_kernels.cpp", n)] = render_kernels_cpp(lib);
  files[fmt::format("example/{}_example.cpp", n)] = skeleton_file("cglib_example.cpp", n);
  files["README.md"] = render_readme(lib);
  for (std::size_t i = 0; i < lib.problems.size(); ++i) {
    const LibraryProblem& p = lib.problems[i];
    if (p.kernels.size() != lib.gpus.size())
      throw InputError(fmt::format("{}: {} kernels for {} GPUs", p.name, p.kernels.size(), lib.gpus.size()));
    for (std::size_t g = 0; g < lib.gpus.size(); ++g) {
      const BuiltKernel& k = p.kernels[g].built;
      files[cubin_file(i, p, lib.gpus[g])] =
          fmt::format("// {}: {} for {} ({}), {} bytes\n", k.source.entry, lib.gpus[g].arch, problem_key(p.problem),
                      one_line(p.name), k.cubin.image.size()) +
          cubin_array_text(k.cubin.image);
    }
    const FilterDependence check = filter_check(p);
    if (check != FilterDependence::none) {
      const std::vector<float>& values = *p.problem.weights.values;
      files[filter_file(i, p, "mask")] =
          fmt::format("// the nonzeros of {}'s filter (pattern {}), a bit per element of {}\n", one_line(p.name),
                      p.problem.weights.pattern, values.size()) +
          cubin_array_text(nonzero_mask(values));
      if (check == FilterDependence::values)
        files[filter_file(i, p, "values")] =
            fmt::format("// the values of {}'s filter's nonzeros, in element order\n", one_line(p.name)) +
            nonzero_values_text(values);
    }
  }
  for (std::size_t g = 0; g < lib.gpus.size(); ++g)
    if (const std::vector<char>* cubin = plan_passes_of(lib, g))
      files[plan_passes_file(lib.gpus[g])] =
          fmt::format("// {}, {} and {}: the plan passes for {}, {} bytes\n", kZeroPassEntry, kReluPass32Entry,
                      kReluPass16Entry, lib.gpus[g].arch, cubin->size()) +
          cubin_array_text(*cubin);
  return files;
}

void write_library(const std::filesystem::path& out, const std::map<std::string, std::string>& files) {
  for (const auto& [relative, text] : files) {
    const std::filesystem::path path = out / relative;
    std::error_code ec;
    std::filesystem::create_directories(path.parent_path(), ec);
    std::ofstream file(path, std::ios::binary);
    file.write(text.data(), static_cast<std::streamsize>(text.size()));
    if (!file) throw InputError(fmt::format("{}: cannot write", path.string()));
  }
}

}  // namespace convgen
