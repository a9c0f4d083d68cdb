// processes: test helpers for tests that start processes or read the environment.
#pragma once

#include <sys/types.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <optional>
#include <string>

namespace convgen::testing_support {

// Waits (10 s at most) until the child `pid` has ended: a zombie not yet reaped, or gone.
inline void wait_until_ended(pid_t pid) {
  for (int i = 0; i < 10000; ++i) {
    std::string stat;
    std::getline(std::ifstream("/proc/" + std::to_string(pid) + "/stat"), stat);
    if (stat.empty() || stat.find(") Z ") != std::string::npos) return;
    usleep(1000);
  }
}

// Sets an environment variable (or unsets it: nullptr) for its scope, then restores it.
class ScopedEnvironment {
 public:
  ScopedEnvironment(std::string name, const char* value) : name_(std::move(name)) {
    if (const char* old = std::getenv(name_.c_str())) old_ = old;
    if (value)
      setenv(name_.c_str(), value, 1);
    else
      unsetenv(name_.c_str());
  }
  ~ScopedEnvironment() {
    if (old_)
      setenv(name_.c_str(), old_->c_str(), 1);
    else
      unsetenv(name_.c_str());
  }
  ScopedEnvironment(const ScopedEnvironment&) = delete;
  ScopedEnvironment& operator=(const ScopedEnvironment&) = delete;

 private:
  std::string name_;
  std::optional<std::string> old_;
};

}  // namespace convgen::testing_support
