// compile_protocol: what a process and its NVRTC workers (convgen-nvrtc-worker) say to each other: length-prefixed
// frames on a stream, a compile request per frame one way and its reply (a cubin, or the compile's error) the other.
#pragma once

#include <string>
#include <string_view>
#include <utility>

#include "convgen/error.hpp"
#include "runtime/compiler.hpp"

namespace convgen {

// A frame or a message that breaks the protocol: cut short, too long, another protocol version, a field that is not
// there. The worker at the other end is of another build, or is not an NVRTC worker.
class ProtocolError : public Error {
 public:
  using Error::Error;
};

// Frames larger than this are refused (a length read from a broken stream would otherwise allocate it).
inline constexpr std::size_t kMaxFrameBytes = std::size_t{1} << 30;

// Writes one frame (u64 length, little-endian as the host writes it, then the payload) to `fd`, a pipe or a socket
// (a socket is written with MSG_NOSIGNAL: a peer that is gone gives EPIPE, not SIGPIPE). Returns false when the other
// end is gone or the write fails (errno says why).
bool write_frame(int fd, std::string_view payload);

// Reads one frame from `fd` into `payload`. Returns false at end of stream before the frame's first byte; throws
// ProtocolError for a stream that ends inside a frame, a read that fails, or a length over kMaxFrameBytes.
bool read_frame(int fd, std::string& payload);

// A compile request: the program (name, source, headers) and its options, with the protocol's magic and version
// first so that a worker of another build refuses it instead of misreading it.
std::string encode_compile_request(const Program& program, const CompileOptions& options);
std::pair<Program, CompileOptions> decode_compile_request(std::string_view message);

// The reply to a request: the cubin (image, log, compile time; the ptxas reports are parsed again from the log on
// the receiving side, as a disk cache entry's are), a CompileError (message, log, options, saved source), or any
// other failure's message.
std::string encode_compile_reply(const Cubin& cubin);
std::string encode_compile_reply(const CompileError& error);
std::string encode_compile_failure(std::string_view message);

// Returns the cubin of a reply; throws the CompileError it carries, Error with the message of another failure, or
// ProtocolError when it is not a reply.
Cubin decode_compile_reply(std::string_view message);

}  // namespace convgen
