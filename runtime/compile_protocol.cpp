// compile_protocol: frames over file descriptors and the compile request and reply layouts.
#include "runtime/compile_protocol.hpp"

#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstring>

#include <fmt/format.h>

namespace convgen {
namespace {

// Message layouts (integers little-endian as this host writes them; both ends are one build on one host):
//   request = magic[8] "cgnvrtc1" | str name | str source | u64 headers | (str name | str text)... |
//             str arch | u64 extras | str extra...
//   reply   = magic[8] | u8 kind | kind 0 (cubin): str arch | str image | str log | f64 compile_ms
//                                  kind 1 (CompileError): str message | str log | u64 options | str option... |
//                                                         str saved source
//                                  kind 2 (another failure): str message
//   str = u64 length | bytes
// The magic changes with the layout: a worker of another build refuses a request instead of misreading it.
constexpr std::string_view kMagic = "cgnvrtc1";
enum class ReplyKind : std::uint8_t { cubin = 0, compile_error = 1, failure = 2 };

template <class T>
void put(std::string& out, T value) {
  char bytes[sizeof(T)];
  std::memcpy(bytes, &value, sizeof(T));
  out.append(bytes, sizeof(T));
}

void put_string(std::string& out, std::string_view text) {
  put<std::uint64_t>(out, text.size());
  out.append(text);
}

// A bounds-checked cursor over a message: a read past its end throws ProtocolError naming the field.
class MessageReader {
 public:
  MessageReader(std::string_view data, std::string_view what) : data_(data), what_(what) {}

  template <class T>
  T get(std::string_view field) {
    T value;
    std::memcpy(&value, take(sizeof(T), field).data(), sizeof(T));
    return value;
  }

  std::string get_string(std::string_view field) {
    const auto length = get<std::uint64_t>(field);
    return std::string(take(length, field));
  }

  void expect_magic() {
    if (take(kMagic.size(), "magic") != kMagic)
      throw ProtocolError(
          fmt::format("{}: not a convgen NVRTC message of this build (expected magic '{}')", what_, kMagic));
  }

  void expect_end() const {
    if (offset_ != data_.size())
      throw ProtocolError(fmt::format("{}: {} bytes left over after the last field", what_, data_.size() - offset_));
  }

 private:
  std::string_view take(std::uint64_t count, std::string_view field) {
    if (data_.size() - offset_ < count)
      throw ProtocolError(
          fmt::format("{}: cut short in '{}' ({} bytes wanted, {} left)", what_, field, count, data_.size() - offset_));
    const std::string_view bytes = data_.substr(offset_, count);
    offset_ += count;
    return bytes;
  }

  std::string_view data_;
  std::string_view what_;
  std::size_t offset_ = 0;
};

std::string reply_header(ReplyKind kind) {
  std::string out(kMagic);
  put<std::uint8_t>(out, static_cast<std::uint8_t>(kind));
  return out;
}

// Writes all of `bytes`; a socket with MSG_NOSIGNAL, anything else (a pipe, a file) with write().
bool write_all(int fd, const char* bytes, std::size_t size) {
  while (size > 0) {
    ssize_t n = send(fd, bytes, size, MSG_NOSIGNAL);
    if (n < 0 && errno == ENOTSOCK) n = write(fd, bytes, size);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    bytes += n;
    size -= static_cast<std::size_t>(n);
  }
  return true;
}

// Reads exactly `size` bytes; returns how many it read before the end of the stream (size when all arrived).
std::size_t read_all(int fd, char* bytes, std::size_t size) {
  std::size_t done = 0;
  while (done < size) {
    const ssize_t n = read(fd, bytes + done, size - done);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) throw ProtocolError(fmt::format("reading a frame failed: {}", std::strerror(errno)));
    if (n == 0) break;
    done += static_cast<std::size_t>(n);
  }
  return done;
}

}  // namespace

bool write_frame(int fd, std::string_view payload) {
  std::string length;
  put<std::uint64_t>(length, payload.size());
  return write_all(fd, length.data(), length.size()) && write_all(fd, payload.data(), payload.size());
}

bool read_frame(int fd, std::string& payload) {
  char length_bytes[sizeof(std::uint64_t)];
  const std::size_t got = read_all(fd, length_bytes, sizeof length_bytes);
  if (got == 0) return false;
  if (got != sizeof length_bytes)
    throw ProtocolError(fmt::format("the stream ended inside a frame's length ({} of 8 bytes)", got));
  std::uint64_t length = 0;
  std::memcpy(&length, length_bytes, sizeof length);
  if (length > kMaxFrameBytes)
    throw ProtocolError(fmt::format("a frame of {} bytes: more than the {} allowed", length, kMaxFrameBytes));
  payload.resize(length);
  if (const std::size_t body = read_all(fd, payload.data(), length); body != length)
    throw ProtocolError(fmt::format("the stream ended inside a frame ({} of {} bytes)", body, length));
  return true;
}

std::string encode_compile_request(const Program& program, const CompileOptions& options) {
  std::string out(kMagic);
  put_string(out, program.name);
  put_string(out, program.source);
  put<std::uint64_t>(out, program.headers.size());
  for (const auto& [name, text] : program.headers) {
    put_string(out, name);
    put_string(out, text);
  }
  put_string(out, options.arch);
  put<std::uint64_t>(out, options.extra.size());
  for (const std::string& option : options.extra) put_string(out, option);
  return out;
}

std::pair<Program, CompileOptions> decode_compile_request(std::string_view message) {
  MessageReader in(message, "compile request");
  in.expect_magic();
  Program program;
  program.name = in.get_string("name");
  program.source = in.get_string("source");
  // Nothing is reserved by a count: a count larger than the message runs out of bytes, and throws, as it reads.
  const auto headers = in.get<std::uint64_t>("header count");
  for (std::uint64_t i = 0; i < headers; ++i) {
    std::string name = in.get_string("header name");
    program.headers.emplace_back(std::move(name), in.get_string("header text"));
  }
  CompileOptions options;
  options.arch = in.get_string("arch");
  const auto extras = in.get<std::uint64_t>("option count");
  for (std::uint64_t i = 0; i < extras; ++i) options.extra.push_back(in.get_string("option"));
  in.expect_end();
  return {std::move(program), std::move(options)};
}

std::string encode_compile_reply(const Cubin& cubin) {
  std::string out = reply_header(ReplyKind::cubin);
  put_string(out, cubin.arch);
  put_string(out, std::string_view(cubin.image.data(), cubin.image.size()));
  put_string(out, cubin.log);
  put<double>(out, cubin.compile_ms);
  return out;
}

std::string encode_compile_reply(const CompileError& error) {
  std::string out = reply_header(ReplyKind::compile_error);
  put_string(out, error.what());
  put_string(out, error.log());
  put<std::uint64_t>(out, error.options().size());
  for (const std::string& option : error.options()) put_string(out, option);
  put_string(out, error.saved_source());
  return out;
}

std::string encode_compile_failure(std::string_view message) {
  std::string out = reply_header(ReplyKind::failure);
  put_string(out, message);
  return out;
}

Cubin decode_compile_reply(std::string_view message) {
  MessageReader in(message, "compile reply");
  in.expect_magic();
  const auto kind = in.get<std::uint8_t>("kind");
  if (kind == static_cast<std::uint8_t>(ReplyKind::cubin)) {
    Cubin cubin;
    cubin.arch = in.get_string("arch");
    const std::string image = in.get_string("image");
    cubin.image.assign(image.begin(), image.end());
    cubin.log = in.get_string("log");
    cubin.compile_ms = in.get<double>("compile_ms");
    in.expect_end();
    // As compile() does: the same log gives the same reports.
    cubin.report = parse_ptxas_report(cubin.log);
    cubin.entry_reports = parse_ptxas_reports(cubin.log);
    return cubin;
  }
  if (kind == static_cast<std::uint8_t>(ReplyKind::compile_error)) {
    std::string what = in.get_string("message");
    std::string log = in.get_string("log");
    std::vector<std::string> options;
    const auto count = in.get<std::uint64_t>("option count");
    for (std::uint64_t i = 0; i < count; ++i) options.push_back(in.get_string("option"));
    std::string saved = in.get_string("saved source");
    in.expect_end();
    throw CompileError(std::move(what), std::move(log), std::move(options), std::move(saved));
  }
  if (kind == static_cast<std::uint8_t>(ReplyKind::failure)) {
    std::string what = in.get_string("message");
    in.expect_end();
    throw Error(std::move(what));
  }
  throw ProtocolError(fmt::format("compile reply: unknown kind {}", kind));
}

}  // namespace convgen
