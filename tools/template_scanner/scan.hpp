// scan: reads one kernel template with Clang (as CUDA device code) into its declared interface, and lints it.
#pragma once

#include <string>
#include <vector>

namespace convgen::scanner {

// A place in a template, as shown in messages: the path relative to the source root, 1-based line and column.
struct Location {
  std::string file;
  unsigned line = 0;
  unsigned column = 0;
};

// `CONVGEN_PARAM(token, values, doc) constexpr <int|bool> NAME = default;` in namespace cfg.
struct Param {
  std::string name;    // BLOCK_M
  std::string token;   // m
  std::string values;  // the values text as written: "16,32,64", "1..64" or "bool"
  std::string doc;
  bool is_bool = false;
  int default_value = 0;
  std::vector<int> allowed;  // empty for a range or bool: any value in [min, max]
  int min = 0, max = 0;
  Location where;
};

struct EntryArg {
  std::string name;  // g_activation
  std::string type;  // const float *__restrict
};

// An `extern "C" __global__` definition: convgen_<family>_default (suffix "") or convgen_<family>_default_<suffix>.
struct Entry {
  std::string symbol;
  std::string suffix;
  std::vector<EntryArg> args;
  Location where;
};

struct Constraint {
  std::string condition;  // source text, whitespace collapsed
  std::string message;
  std::vector<std::string> params;  // tunable parameters the condition names, in order of first mention
  Location where;
};

struct Interface {
  std::string family;         // the file stem: igemm
  std::string template_file;  // igemm.cu
  std::string source_path;    // templates/igemm.cu (relative to the source root)
  std::vector<Param> params;
  std::vector<Entry> entries;
  std::vector<Constraint> constraints;
};

// A problem found in a template: an error breaks the interface; a warning is a lint finding ([check]).
struct Finding {
  Location where;
  bool error = true;
  std::string message;
  std::string check;  // lint check name, empty for errors
};

struct ScanOptions {
  std::string source_root;                // paths in messages and #line are relative to it
  std::vector<std::string> include_dirs;  // -I: the templates folder (common.cuh, interface.cuh)
  bool lint = false;                      // also run the lint checks
};

struct ScanResult {
  bool parsed = false;  // clang parsed the file (its own errors are printed by clang)
  Interface interface;
  std::vector<Finding> findings;  // in source order
};

// Parses `file` and extracts its interface; validation errors (and, with options.lint, lint warnings) are findings.
ScanResult scan_template(const std::string& file, const ScanOptions& options);

// "file:line:col: error: message" / "...: warning: message [check]", clang's format.
std::string format_finding(const Finding& finding);

}  // namespace convgen::scanner
