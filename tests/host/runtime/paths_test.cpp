// paths_test: the cache and data folders follow CONVGEN_*, then XDG, then HOME.
#include "runtime/paths.hpp"

#include <cstdlib>
#include <map>
#include <optional>
#include <string>

#include <gtest/gtest.h>

#include "convgen/error.hpp"

namespace convgen {
namespace {

// Sets environment variables for one test and restores them afterwards.
class ScopedEnv {
 public:
  explicit ScopedEnv(const std::map<std::string, std::optional<std::string>>& values) {
    for (const auto& [name, value] : values) {
      const char* old = std::getenv(name.c_str());
      saved_[name] = old ? std::optional<std::string>(old) : std::nullopt;
      set(name, value);
    }
  }
  ~ScopedEnv() {
    for (const auto& [name, value] : saved_) set(name, value);
  }

 private:
  static void set(const std::string& name, const std::optional<std::string>& value) {
    if (value)
      setenv(name.c_str(), value->c_str(), 1);
    else
      unsetenv(name.c_str());
  }
  std::map<std::string, std::optional<std::string>> saved_;
};

TEST(Paths, ConvgenVariablesWinOverXdgAndHome) {
  ScopedEnv env({{"CONVGEN_CACHE_DIR", "/tmp/cg-cache"},
                 {"CONVGEN_DATA_DIR", "/tmp/cg-data"},
                 {"XDG_CACHE_HOME", "/xdg/cache"},
                 {"XDG_DATA_HOME", "/xdg/data"},
                 {"HOME", "/home/u"}});
  EXPECT_EQ(user_cache_dir(), "/tmp/cg-cache");
  EXPECT_EQ(user_data_dir(), "/tmp/cg-data");
}

TEST(Paths, XdgFoldersGetAConvgenSubfolder) {
  ScopedEnv env({{"CONVGEN_CACHE_DIR", std::nullopt},
                 {"CONVGEN_DATA_DIR", ""},
                 {"XDG_CACHE_HOME", "/xdg/cache"},
                 {"XDG_DATA_HOME", "/xdg/data"},
                 {"HOME", "/home/u"}});
  EXPECT_EQ(user_cache_dir(), "/xdg/cache/convgen");
  EXPECT_EQ(user_data_dir(), "/xdg/data/convgen");
}

TEST(Paths, HomeIsTheFallbackAndRelativeXdgValuesAreIgnored) {
  ScopedEnv env({{"CONVGEN_CACHE_DIR", std::nullopt},
                 {"CONVGEN_DATA_DIR", std::nullopt},
                 {"XDG_CACHE_HOME", "relative/cache"},
                 {"XDG_DATA_HOME", std::nullopt},
                 {"HOME", "/home/u"}});
  EXPECT_EQ(user_cache_dir(), "/home/u/.cache/convgen");
  EXPECT_EQ(user_data_dir(), "/home/u/.local/share/convgen");
}

TEST(Paths, NoVariableAtAllIsAnInputError) {
  ScopedEnv env({{"CONVGEN_CACHE_DIR", std::nullopt},
                 {"CONVGEN_DATA_DIR", std::nullopt},
                 {"XDG_CACHE_HOME", std::nullopt},
                 {"XDG_DATA_HOME", std::nullopt},
                 {"HOME", std::nullopt}});
  try {
    user_cache_dir();
    FAIL() << "expected InputError";
  } catch (const InputError& e) {
    EXPECT_STREQ(e.what(), "cannot place convgen's folder: set CONVGEN_CACHE_DIR, XDG_CACHE_HOME or HOME");
  }
  try {
    user_data_dir();
    FAIL() << "expected InputError";
  } catch (const InputError& e) {
    EXPECT_STREQ(e.what(), "cannot place convgen's folder: set CONVGEN_DATA_DIR, XDG_DATA_HOME or HOME");
  }
}

}  // namespace
}  // namespace convgen
