// convgen-nvrtc-worker: compiles programs with NVRTC for its parent (runtime/compiler_processes), one request at a
// time: a compile request per frame on stdin, its reply (the cubin, or the compile's error) as a frame on stdout
// (runtime/compile_protocol). It ends at the end of stdin. Not for people: it prints nothing of its own but errors.
#include <unistd.h>

#include <cstdio>
#include <exception>
#include <string>

#include <fmt/format.h>

#include "runtime/compile_protocol.hpp"
#include "runtime/compiler.hpp"

namespace {

// The reply to one request: compile() in this process, whatever it throws turned into a reply.
std::string answer(const std::string& request) {
  try {
    const auto [program, options] = convgen::decode_compile_request(request);
    return convgen::encode_compile_reply(convgen::compile(program, options));
  } catch (const convgen::CompileError& e) {
    return convgen::encode_compile_reply(e);
  } catch (const std::exception& e) {
    return convgen::encode_compile_failure(fmt::format("convgen-nvrtc-worker: {}", e.what()));
  }
}

}  // namespace

int main(int argc, char**) {
  if (argc > 1 || isatty(STDIN_FILENO)) {
    fmt::print(stderr,
               "convgen-nvrtc-worker: compiles for convgen (runtime/compiler_processes), which starts it with framed "
               "requests on stdin; it takes no arguments\n");
    return 2;
  }
  // The replies go to a descriptor of their own; stdout becomes stderr, so that nothing printed by a library can
  // break a frame.
  const int replies = dup(STDOUT_FILENO);
  if (replies < 0 || dup2(STDERR_FILENO, STDOUT_FILENO) < 0) {
    std::perror("convgen-nvrtc-worker: dup");
    return 1;
  }
  try {
    std::string request;
    while (convgen::read_frame(STDIN_FILENO, request))
      if (!convgen::write_frame(replies, answer(request))) return 0;  // the parent is gone
  } catch (const std::exception& e) {
    fmt::print(stderr, "convgen-nvrtc-worker: {}\n", e.what());
    return 1;
  }
  return 0;
}
