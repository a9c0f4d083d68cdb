// convgen-template-scan: reads kernel templates with Clang; generates their C++ interface, prints it, or lints them.
//
//   convgen-template-scan --source-root . -I templates --out-dir build/template_interfaces templates/igemm.cu
//   convgen-template-scan --registry --out-dir build/template_interfaces templates/direct.cu templates/igemm.cu
//   convgen-template-scan --json templates/igemm.cu
//   convgen-template-scan --lint -I templates templates/*.cu
#include <filesystem>
#include <iostream>
#include <string>
#include <vector>

#include "emit.hpp"
#include "scan.hpp"

namespace {

constexpr const char* kUsage =
    "usage: convgen-template-scan [--source-root DIR] [-I DIR]... [--out-dir DIR] [--json] [--lint] [--registry] "
    "FILE...\n"
    "  --out-dir DIR      write <family>_params.hpp and <family>_interface.cpp (with --registry: all_interfaces.cpp)\n"
    "  --source-root DIR  paths in messages and #line are relative to DIR (default: the current folder)\n"
    "  -I DIR             the templates folder (common.cuh, interface.cuh); its *.cuh are the allowed includes\n"
    "  --json             print the interface as JSON\n"
    "  --lint             report lint findings as warnings; exit 1 when there is any\n"
    "  --registry         write all_interfaces.cpp for the families of FILE... (no parsing)\n";

int usage_error(const std::string& message) {
  std::cerr << "convgen-template-scan: " << message << "\n" << kUsage;
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  namespace sc = convgen::scanner;
  sc::ScanOptions options{.source_root = std::filesystem::current_path().string()};
  std::string out_dir;
  bool json = false, registry = false;
  std::vector<std::string> files;
  const std::vector<std::string> args(argv + 1, argv + argc);
  for (std::size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    auto value = [&](std::string& into) {
      if (i + 1 >= args.size()) return false;
      into = args[++i];
      return true;
    };
    if (a == "--help" || a == "-h") {
      std::cout << kUsage;
      return 0;
    } else if (a == "--out-dir") {
      if (!value(out_dir)) return usage_error("--out-dir needs a folder");
    } else if (a == "--source-root") {
      if (!value(options.source_root)) return usage_error("--source-root needs a folder");
    } else if (a == "-I") {
      std::string dir;
      if (!value(dir)) return usage_error("-I needs a folder");
      options.include_dirs.push_back(dir);
    } else if (a.rfind("-I", 0) == 0) {
      options.include_dirs.push_back(a.substr(2));
    } else if (a == "--json") {
      json = true;
    } else if (a == "--lint") {
      options.lint = true;
    } else if (a == "--registry") {
      registry = true;
    } else if (!a.empty() && a[0] == '-') {
      return usage_error("unknown option '" + a + "'");
    } else {
      files.push_back(a);
    }
  }
  if (files.empty()) return usage_error("no template files given");

  try {
    if (registry) {
      if (out_dir.empty()) return usage_error("--registry needs --out-dir");
      std::vector<std::string> families;
      for (const std::string& f : files) families.push_back(std::filesystem::path(f).stem().string());
      std::filesystem::create_directories(out_dir);
      sc::write_if_changed(out_dir + "/all_interfaces.cpp", sc::registry_source(families));
      return 0;
    }

    bool failed = false;
    std::vector<std::string> json_texts;
    for (const std::string& file : files) {
      const sc::ScanResult result = sc::scan_template(file, options);
      for (const sc::Finding& finding : result.findings) std::cerr << sc::format_finding(finding) << "\n";
      if (!result.parsed || !result.findings.empty()) {
        failed = true;
        continue;
      }
      if (json) json_texts.push_back(sc::interface_json(result.interface));
      if (!out_dir.empty()) {
        std::filesystem::create_directories(out_dir);
        const std::string stem = out_dir + "/" + result.interface.family;
        sc::write_if_changed(stem + "_params.hpp", sc::params_header(result.interface));
        sc::write_if_changed(stem + "_interface.cpp", sc::interface_source(result.interface));
      }
    }
    if (json_texts.size() == 1) {
      std::cout << json_texts[0];
    } else if (!json_texts.empty()) {
      std::cout << "[\n";
      for (std::size_t i = 0; i < json_texts.size(); ++i)
        std::cout << json_texts[i] << (i + 1 < json_texts.size() ? ",\n" : "");
      std::cout << "]\n";
    }
    return failed ? 1 : 0;
  } catch (const std::exception& e) {
    std::cerr << "convgen-template-scan: " << e.what() << "\n";
    return 1;
  }
}
