// emit_library: chooses and builds the kernels of a static library and renders the files of its CMake project.
#include "emit/emit_library.hpp"

#include <algorithm>
#include <cctype>
#include <fstream>

#include <fmt/format.h>

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

std::string layout_enum(std::string_view upper_name, Layout layout) {
  return fmt::format("{}_LAYOUT_{}", upper_name, upper(to_string(layout)));
}

std::string precision_enum(std::string_view upper_name, Precision precision) {
  return fmt::format("{}_PRECISION_{}", upper_name, upper(to_string(precision)));
}

std::string arch_list(const std::vector<Gpu>& gpus) {
  std::string out;
  for (const Gpu& gpu : gpus) out += (out.empty() ? "" : ", ") + gpu.arch;
  return out;
}

std::string cubin_file(std::size_t index, const LibraryProblem& problem, const Gpu& gpu) {
  return fmt::format("src/cubins/{:02}_{}_{}.inc", index, file_stem(problem.name), gpu.arch);
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
      const BuiltKernel& k = p.kernels[g];
      const PtxasReport& r = k.cubin.report;
      out += fmt::format(
          "// {} ({}): {}, {} registers, {} bytes spilled, {} bytes static shared memory\n"
          "alignas(64) const unsigned char cubin_{}_{}[] = {{\n#include \"cubins/{}\"\n}};\n",
          lib.gpus[g].arch, one_line(lib.gpus[g].name), k.source.entry, r.registers,
          r.spill_store_bytes + r.spill_load_bytes, r.smem_bytes, i, lib.gpus[g].arch,
          std::filesystem::path(cubin_file(i, p, lib.gpus[g])).filename().string());
    }
    out += fmt::format("const KernelImage kernels_{}[] = {{\n", i);
    for (std::size_t g = 0; g < lib.gpus.size(); ++g) {
      const BuiltKernel& k = p.kernels[g];
      const LaunchGeometry& geo = k.plan.main_geometry();
      const bool zero_output_first = !k.plan.run.empty() && k.plan.run.front().kind == LaunchStep::Kind::zero;
      out +=
          fmt::format("    {{{}, cubin_{}_{}, sizeof cubin_{}_{}, \"{}\", {{{}, {}, {}}}, {{{}, {}, {}}}, {}, {}}},\n",
                      compute_capability(lib.gpus[g]), i, lib.gpus[g].arch, i, lib.gpus[g].arch, k.source.entry,
                      geo.grid[0], geo.grid[1], geo.grid[2], geo.block[0], geo.block[1], geo.block[2],
                      geo.dynamic_smem_bytes, zero_output_first);
    }
    out += "};\n";
  }
  out += "\n}  // namespace\n\nconst ProblemEntry problems[] = {\n";
  for (std::size_t i = 0; i < lib.problems.size(); ++i) {
    const Problem& q = lib.problems[i].problem;
    out += fmt::format(
        "    {{{{{}, {}, {}, {}, {}, {}, {}, {}, {}, {}, {}, {}, {}, {}, {}, {}, {}, {}, {}, {}, {}}},\n"
        "     {}, {}ULL, kernels_{}, {}}},\n",
        q.n, q.c, q.k, q.input.d, q.input.h, q.input.w, q.filter.d, q.filter.h, q.filter.w, q.stride.d, q.stride.h,
        q.stride.w, q.padding.d, q.padding.h, q.padding.w, q.dilation.d, q.dilation.h, q.dilation.w, q.groups,
        layout_enum(up, q.layout), precision_enum(up, q.precision), c_string(lib.problems[i].name),
        output_elements(q) * element_bytes(q.precision), i, lib.gpus.size());
  }
  out += "};\nconst std::size_t problem_count = sizeof problems / sizeof problems[0];\n";
  out += fmt::format("const char* const architectures = \"{}\";\n\n}}  // namespace {}_internal\n", arch_list(lib.gpus),
                     lib.name);
  return out;
}

std::string render_readme(const LibraryDescription& lib) {
  std::string out = skeleton_file("README.md", lib.name);
  std::string gpus;
  for (const Gpu& gpu : lib.gpus) gpus += fmt::format("{}{} ({})", gpus.empty() ? "" : ", ", gpu.name, gpu.arch);
  out +=
      fmt::format("\n## Problems\n\nThe {} suite, for {}; the kernel is convgen's choice for each exact problem.\n\n",
                  one_line(lib.suite), gpus);
  out += "| layer | problem |";
  for (const Gpu& gpu : lib.gpus) out += fmt::format(" {} kernel |", gpu.arch);
  out += "\n|---|---|";
  for (std::size_t g = 0; g < lib.gpus.size(); ++g) out += "---|";
  out += "\n";
  for (const LibraryProblem& p : lib.problems) {
    out += fmt::format("| {} | {} |", replace_all(one_line(p.name), "|", "\\|"), describe(p.problem));
    for (const BuiltKernel& k : p.kernels) out += fmt::format(" `{}` |", k.source.entry);
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

LibraryDescription build_library(std::string_view name, const Suite& suite, const std::vector<Gpu>& gpus,
                                 JitCache& cache, ThreadPool& pool,
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

  LibraryDescription lib{.name = std::string(name), .suite = suite.name, .gpus = gpus, .problems = {}};
  for (const Layer& layer : layers)
    lib.problems.push_back({.name = layer.name, .problem = layer.problem, .kernels = {}});
  std::vector<std::string> failures;
  for (const Gpu& gpu : gpus) {
    std::vector<BuildRequest> requests;
    for (const Layer& layer : layers) requests.push_back({layer.problem, default_choice(layer.problem, gpu)});
    const std::vector<BuildOutcome> outcomes = build_kernels(requests, gpu, cache, pool, [&](std::size_t i) {
      if (on_built) on_built(fmt::format("{} {} {}", layers[i].name, gpu.arch, kernel_name(requests[i].spec)));
    });
    for (std::size_t i = 0; i < outcomes.size(); ++i) {
      if (const auto* error = std::get_if<std::exception_ptr>(&outcomes[i])) {
        try {
          std::rethrow_exception(*error);
        } catch (const std::exception& e) {
          failures.push_back(
              fmt::format("{} ({}) {}: {}", layers[i].name, gpu.arch, kernel_name(requests[i].spec), e.what()));
        }
        continue;
      }
      const BuiltKernel& kernel = std::get<BuiltKernel>(outcomes[i]);
      // The library's API has no workspace argument: every kernel today needs none, and a new one must say so.
      if (kernel.workspace_bytes() != 0 || !kernel.plan.setup.empty() || kernel.plan.run.size() > 2)
        throw InputError(
            fmt::format("{}: kernel {} needs a workspace, a setup or several launches; emit-lib supports only "
                        "kernels of one launch",
                        layers[i].name, kernel.source.entry));
      lib.problems[i].kernels.push_back(kernel);
    }
  }
  if (!failures.empty()) {
    std::string message =
        fmt::format("{} of {} kernels failed to build:", failures.size(), layers.size() * gpus.size());
    for (const std::string& f : failures) message += "\n  " + f;
    throw Error(message);
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
      const BuiltKernel& k = p.kernels[g];
      files[cubin_file(i, p, lib.gpus[g])] =
          fmt::format("// {}: {} for {} ({}), {} bytes\n", k.source.entry, lib.gpus[g].arch, problem_key(p.problem),
                      one_line(p.name), k.cubin.image.size()) +
          cubin_array_text(k.cubin.image);
    }
  }
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
