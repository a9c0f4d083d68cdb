// scratch_dir: a fresh folder under the temporary directory for one test (a JIT cache, a tuning database), removed
// at its end.
#pragma once

#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <string>
#include <system_error>

#include <fmt/format.h>

namespace convgen::testing_support {

class ScratchDir {
 public:
  // The folder is <temp>/<prefix>-<pid>-<count>.
  explicit ScratchDir(const std::string& prefix = "convgen-test") {
    static std::atomic<int> counter{0};
    path_ = std::filesystem::temp_directory_path() / fmt::format("{}-{}-{}", prefix, getpid(), counter++);
    std::filesystem::remove_all(path_);
    std::filesystem::create_directories(path_);
  }
  ~ScratchDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  ScratchDir(const ScratchDir&) = delete;
  ScratchDir& operator=(const ScratchDir&) = delete;
  const std::filesystem::path& path() const { return path_; }
  std::filesystem::path operator/(const std::string& name) const { return path_ / name; }

 private:
  std::filesystem::path path_;
};

// This process's own folder under the temporary directory, made on first use and removed at exit: for the files a
// test writes under a fixed name, which two test runs sharing a machine would otherwise both write.
inline const std::filesystem::path& process_scratch() {
  static const ScratchDir dir("convgen-test-process");
  return dir.path();
}

}  // namespace convgen::testing_support
