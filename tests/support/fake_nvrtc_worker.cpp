// fake_nvrtc_worker: speaks the NVRTC worker's protocol (runtime/compile_protocol) without NVRTC, doing what each
// request's program name says, so that the host tests can make a worker crash, exit, answer nonsense or meet others:
//   crash.cu          dies on SIGSEGV (no core file)
//   exit.cu           exits with status 3 without replying
//   nonsense.cu       replies with a frame that is no reply
//   compile_error.cu  replies with a CompileError
//   meet.cu           source "FOLDER\nCOUNT": leaves a file named by its pid in FOLDER, waits (10 s at most) until
//                     COUNT files are there, then replies as echo.cu does
//   anything else     replies with a cubin whose image is this process's id in decimal, and a ptxas report
#include <signal.h>
#include <sys/resource.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>

#include "runtime/compile_protocol.hpp"

namespace {

std::string pid_text() { return std::to_string(static_cast<long>(getpid())); }

std::string echo(const convgen::CompileOptions& options) {
  const std::string image = pid_text();
  return convgen::encode_compile_reply(convgen::Cubin{.arch = options.arch,
                                                      .image = std::vector<char>(image.begin(), image.end()),
                                                      .log = "ptxas info    : Compiling entry function 'fake' for '" +
                                                             options.arch +
                                                             "'\nptxas info    : Used 7 registers, 380 bytes cmem[0]",
                                                      .compile_ms = 1.5});
}

void meet(const std::string& source) {
  const std::filesystem::path folder = source.substr(0, source.find('\n'));
  const long count = std::stol(source.substr(source.find('\n') + 1));
  std::ofstream(folder / pid_text()) << "here\n";
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (std::chrono::steady_clock::now() < deadline) {
    long here = 0;
    for ([[maybe_unused]] const auto& entry : std::filesystem::directory_iterator(folder)) ++here;
    if (here >= count) return;
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
}

std::string answer(const std::string& request) {
  const auto [program, options] = convgen::decode_compile_request(request);
  if (program.name == "crash.cu") {
    const rlimit no_core{0, 0};
    setrlimit(RLIMIT_CORE, &no_core);
    signal(SIGSEGV, SIG_DFL);
    raise(SIGSEGV);
  }
  if (program.name == "exit.cu") _exit(3);
  if (program.name == "nonsense.cu") return "not a reply";
  if (program.name == "compile_error.cu")
    return convgen::encode_compile_reply(convgen::CompileError("fake failure of compile_error.cu", "fake log",
                                                               {"--fake-option"}, "saved/compile_error.cu"));
  if (program.name == "meet.cu") meet(program.source);
  return echo(options);
}

}  // namespace

int main() {
  std::string request;
  while (convgen::read_frame(STDIN_FILENO, request))
    if (!convgen::write_frame(STDOUT_FILENO, answer(request))) return 0;
  return 0;
}
