// worker_process: posix_spawn with a socket pair for stdin and stdout, framed exchanges, and reaping.
#include "runtime/worker_process.hpp"

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <thread>

#include <fmt/format.h>

#include "runtime/compile_protocol.hpp"

extern char** environ;

namespace convgen {
namespace {

// posix_spawn's attributes and file actions, destroyed however the start ends.
struct SpawnSetup {
  posix_spawn_file_actions_t actions;
  posix_spawnattr_t attributes;
  SpawnSetup() {
    posix_spawn_file_actions_init(&actions);
    posix_spawnattr_init(&attributes);
  }
  ~SpawnSetup() {
    posix_spawn_file_actions_destroy(&actions);
    posix_spawnattr_destroy(&attributes);
  }
  SpawnSetup(const SpawnSetup&) = delete;
  SpawnSetup& operator=(const SpawnSetup&) = delete;
};

std::string errno_text(int error) { return std::strerror(error); }

}  // namespace

std::string describe_wait_status(int status) {
  if (WIFEXITED(status)) return fmt::format("exited with status {}", WEXITSTATUS(status));
  if (WIFSIGNALED(status)) {
    const int signal = WTERMSIG(status);
    const char* name = strsignal(signal);
    return fmt::format("ended on signal {} ({})", signal, name ? name : "unknown");
  }
  return fmt::format("ended (wait status {})", status);
}

WorkerProcess::WorkerProcess(const std::filesystem::path& program) : program_(program) {
  int ends[2];
  if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, ends) != 0)
    throw WorkerStartError(fmt::format("cannot start {}: socketpair: {}", program_.string(), errno_text(errno)));
  socket_ = ends[0];
  int child_end = ends[1];
  // dup2 onto 0 and 1 gives the child copies without close-on-exec; an end that is itself 0 or 1 (this process's
  // stdin or stdout closed) would be dup2'd onto itself and stay close-on-exec, so it moves above 2 first.
  if (child_end <= STDERR_FILENO) {
    const int moved = fcntl(child_end, F_DUPFD_CLOEXEC, STDERR_FILENO + 1);
    close(child_end);
    child_end = moved;
  }
  int error = child_end < 0 ? errno : 0;
  if (error == 0) {
    SpawnSetup setup;
    posix_spawn_file_actions_adddup2(&setup.actions, child_end, STDIN_FILENO);
    posix_spawn_file_actions_adddup2(&setup.actions, child_end, STDOUT_FILENO);
#if defined(__GLIBC__) && (__GLIBC__ > 2 || __GLIBC_MINOR__ >= 34)
    // Nor does it hold any other descriptor of this process that is not close-on-exec (a file being written).
    posix_spawn_file_actions_addclosefrom_np(&setup.actions, STDERR_FILENO + 1);
#endif
    // The calling thread may block signals (a pool thread); the worker starts with none blocked.
    sigset_t none;
    sigemptyset(&none);
    posix_spawnattr_setsigmask(&setup.attributes, &none);
    posix_spawnattr_setflags(&setup.attributes, POSIX_SPAWN_SETSIGMASK);
    std::string path = program_.string();
    char* argv[] = {path.data(), nullptr};
    error = posix_spawn(&pid_, path.c_str(), &setup.actions, &setup.attributes, argv, environ);
    close(child_end);
  }
  if (error != 0) {
    close(socket_);
    throw WorkerStartError(fmt::format("cannot start {}: {}", program_.string(), errno_text(error)));
  }
}

WorkerProcess::~WorkerProcess() {
  close(socket_);
  if (!reaped_) reap(true);
}

std::string WorkerProcess::exchange(std::string_view request) {
  std::string reply;
  std::string broken;  // how the stream broke, when it broke inside a frame
  bool replied = false;
  if (write_frame(socket_, request)) {
    try {
      replied = read_frame(socket_, reply);
    } catch (const ProtocolError& e) {
      broken = e.what();
    }
  }
  if (replied) return reply;
  // The worker closed its end: it is ending, or ended. Give it a moment to be reaped with its own status (a crash's
  // signal, an exit's status) before killing it.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(1);
  while (running() && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  const bool killed = !reaped_;
  const std::string how = reap(true);
  throw WorkerLostError(fmt::format("{} (pid {}) {} before replying{}", program_.filename().string(), pid_,
                                    killed ? "stopped answering and was killed" : how,
                                    broken.empty() ? "" : fmt::format(" ({})", broken)));
}

bool WorkerProcess::running() {
  if (reaped_) return false;
  int status = 0;
  pid_t got = 0;
  do {
    got = waitpid(pid_, &status, WNOHANG);
  } while (got < 0 && errno == EINTR);
  if (got == 0) return true;
  reaped_ = true;  // ended, or (got < 0) not a child of this process any more: nothing left to reap
  if (got == pid_) wait_status_ = status;
  return false;
}

std::string WorkerProcess::reap(bool kill_first) {
  if (!reaped_) {
    if (kill_first) kill(pid_, SIGKILL);
    int status = 0;
    pid_t got = 0;
    do {
      got = waitpid(pid_, &status, 0);
    } while (got < 0 && errno == EINTR);
    reaped_ = true;
    if (got == pid_) wait_status_ = status;
  }
  return wait_status_ ? describe_wait_status(*wait_status_) : "ended (its status was not found)";
}

}  // namespace convgen
