// paths: resolution of the user's cache and data folders from the environment.
#include "runtime/paths.hpp"

#include <cstdlib>
#include <string>

#include <fmt/format.h>

#include "convgen/error.hpp"

namespace convgen {
namespace {

// Returns the variable's value, or "" when unset; the XDG spec treats an empty value as unset.
std::string env(const char* name) {
  const char* value = std::getenv(name);
  return value ? value : "";
}

std::filesystem::path resolve(const char* own_variable, const char* xdg_variable, const char* home_suffix) {
  if (const std::string own = env(own_variable); !own.empty()) return own;
  // The XDG spec says relative values are invalid and must be ignored.
  if (const std::string xdg = env(xdg_variable); !xdg.empty() && std::filesystem::path(xdg).is_absolute())
    return std::filesystem::path(xdg) / "convgen";
  if (const std::string home = env("HOME"); !home.empty()) return std::filesystem::path(home) / home_suffix / "convgen";
  throw InputError(fmt::format("cannot place convgen's folder: set {}, {} or HOME", own_variable, xdg_variable));
}

}  // namespace

std::filesystem::path user_cache_dir() { return resolve("CONVGEN_CACHE_DIR", "XDG_CACHE_HOME", ".cache"); }

std::filesystem::path user_data_dir() { return resolve("CONVGEN_DATA_DIR", "XDG_DATA_HOME", ".local/share"); }

}  // namespace convgen
