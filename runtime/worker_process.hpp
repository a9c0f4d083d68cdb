// worker_process: one child program that answers framed requests on its stdin with framed replies on its stdout.
#pragma once

#include <sys/types.h>

#include <filesystem>
#include <optional>
#include <string>
#include <string_view>

#include "convgen/error.hpp"

namespace convgen {

// The worker program could not be started (posix_spawn or socketpair failed: no such file, not executable ...).
class WorkerStartError : public Error {
 public:
  using Error::Error;
};

// The worker ended, or broke the stream, before it replied: what() says how it ended ("ended on signal 11
// (Segmentation fault)", "exited with status 3").
class WorkerLostError : public Error {
 public:
  using Error::Error;
};

// A child process started with posix_spawn (never a fork without an exec: the parent has threads), its stdin and
// stdout one end of a socket pair whose other end this object keeps. A socket rather than two pipes: sending with
// MSG_NOSIGNAL turns a dead worker into an error instead of a SIGPIPE that would end this process, without changing
// the process's signal dispositions, which belong to the application. Both ends are close-on-exec, so a worker
// started by another thread never holds this one's end open (its end of stream would never come).
// The destructor kills (SIGKILL) and reaps the child. Not thread-safe: one caller at a time.
//   WorkerProcess worker("/usr/bin/convgen-nvrtc-worker");
//   std::string reply = worker.exchange(request);
class WorkerProcess {
 public:
  // Starts `program` (no arguments, this process's environment; its stderr is this process's). Throws
  // WorkerStartError.
  explicit WorkerProcess(const std::filesystem::path& program);
  ~WorkerProcess();
  WorkerProcess(const WorkerProcess&) = delete;
  WorkerProcess& operator=(const WorkerProcess&) = delete;

  // Sends `request` as one frame and returns the reply frame. Throws WorkerLostError when the worker ends or breaks
  // the stream first (the child is then reaped; this object is done and only its destructor may follow).
  std::string exchange(std::string_view request);

  // Whether the child still runs (it may have been killed while idle); reaps it when it has ended.
  bool running();

  pid_t pid() const { return pid_; }

 private:
  // Reaps the child unless it was (killing it first when `kill_first`); returns how it ended, in words.
  std::string reap(bool kill_first);

  std::filesystem::path program_;
  pid_t pid_ = -1;
  int socket_ = -1;
  bool reaped_ = false;
  std::optional<int> wait_status_;  // once reaped
};

// Describes a wait status in words: "exited with status 3", "ended on signal 9 (Killed)".
std::string describe_wait_status(int status);

}  // namespace convgen
