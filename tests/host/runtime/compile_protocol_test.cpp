// compile_protocol_test: requests and replies survive the trip unchanged, frames cross pipes and sockets, and every
// broken message or stream is a ProtocolError, never a misread.
#include "runtime/compile_protocol.hpp"

#include <sys/socket.h>
#include <unistd.h>

#include <cstdint>
#include <cstring>
#include <thread>

#include <gtest/gtest.h>

namespace convgen {
namespace {

const Program kProgram{
    .name = "scale.cu",
    .source = "#include \"scale.cuh\"\nextern \"C\" __global__ void scale(float* x) { x[0] *= kFactor; }\n",
    .headers = {{"scale.cuh", "constexpr float kFactor = 2;\n"}, {"empty.cuh", ""}},
};
const CompileOptions kOptions{.arch = "sm_80", .extra = {"-DWIDTH=4", "--use_fast_math"}};

// A pipe's two ends, closed when the test ends.
struct Pipe {
  int read_end = -1, write_end = -1;
  Pipe() {
    int ends[2];
    EXPECT_EQ(pipe(ends), 0);
    read_end = ends[0];
    write_end = ends[1];
  }
  ~Pipe() {
    if (read_end >= 0) close(read_end);
    if (write_end >= 0) close(write_end);
  }
  void close_write() {
    close(write_end);
    write_end = -1;
  }
};

TEST(CompileProtocol, ARequestComesBackAsSent) {
  const auto [program, options] = decode_compile_request(encode_compile_request(kProgram, kOptions));
  EXPECT_EQ(program.name, kProgram.name);
  EXPECT_EQ(program.source, kProgram.source);
  EXPECT_EQ(program.headers, kProgram.headers);
  EXPECT_EQ(options, kOptions);
}

TEST(CompileProtocol, ACubinComesBackWithItsReportsParsedFromTheLog) {
  const Cubin sent{.arch = "sm_90",
                   .image = {'\x7f', 'E', 'L', 'F', '\0', '\xff'},
                   .log =
                       "ptxas info    : Compiling entry function 'k' for 'sm_90'\n"
                       "ptxas info    : Used 40 registers, 8 bytes spill stores, 4 bytes spill loads",
                   .compile_ms = 123.25};
  const Cubin got = decode_compile_reply(encode_compile_reply(sent));
  EXPECT_EQ(got.arch, sent.arch);
  EXPECT_EQ(got.image, sent.image);
  EXPECT_EQ(got.log, sent.log);
  EXPECT_EQ(got.compile_ms, sent.compile_ms);
  EXPECT_EQ(got.report, parse_ptxas_report(sent.log));
  EXPECT_EQ(got.report.registers, 40);
  EXPECT_EQ(got.entry_reports, parse_ptxas_reports(sent.log));
}

TEST(CompileProtocol, ACompileErrorIsThrownWithItsLogOptionsAndSavedSource) {
  const CompileError sent("nvrtc failed to compile broken.cu", "broken.cu(1): error", {"--a", "--b"}, "/tmp/x.cu");
  try {
    decode_compile_reply(encode_compile_reply(sent));
    FAIL() << "expected CompileError";
  } catch (const CompileError& e) {
    EXPECT_STREQ(e.what(), sent.what());
    EXPECT_EQ(e.log(), sent.log());
    EXPECT_EQ(e.options(), sent.options());
    EXPECT_EQ(e.saved_source(), sent.saved_source());
  }
}

TEST(CompileProtocol, AnotherFailureIsThrownAsAnErrorWithItsMessage) {
  try {
    decode_compile_reply(encode_compile_failure("nvrtcCreateProgram failed: out of memory"));
    FAIL() << "expected Error";
  } catch (const CompileError&) {
    FAIL() << "not a compile error";
  } catch (const Error& e) {
    EXPECT_STREQ(e.what(), "nvrtcCreateProgram failed: out of memory");
  }
}

TEST(CompileProtocol, EveryCutOfAMessageIsAProtocolError) {
  const std::string request = encode_compile_request(kProgram, kOptions);
  for (std::size_t length = 0; length < request.size(); ++length)
    EXPECT_THROW(decode_compile_request(std::string_view(request).substr(0, length)), ProtocolError) << length;
  const std::string reply = encode_compile_reply(Cubin{.arch = "sm_90", .image = {'a'}, .log = "log"});
  for (std::size_t length = 0; length < reply.size(); ++length)
    EXPECT_THROW(decode_compile_reply(std::string_view(reply).substr(0, length)), ProtocolError) << length;
}

TEST(CompileProtocol, AnotherMagicTrailingBytesOrAnUnknownKindAreProtocolErrors) {
  std::string request = encode_compile_request(kProgram, kOptions);
  EXPECT_THROW(decode_compile_request(request + "x"), ProtocolError);
  request[7] = '0';  // another protocol version
  EXPECT_THROW(decode_compile_request(request), ProtocolError);
  std::string reply = encode_compile_failure("x");
  reply[8] = 9;  // the kind follows the magic
  EXPECT_THROW(decode_compile_reply(reply), ProtocolError);
}

TEST(CompileProtocol, AHugeHeaderCountRunsOutOfMessageInsteadOfAllocating) {
  std::string request = encode_compile_request({.name = "a.cu", .source = ""}, {});
  // The header count follows magic (8), name (8 + 4) and source (8 + 0).
  const std::uint64_t huge = ~std::uint64_t{0};
  std::memcpy(request.data() + 28, &huge, sizeof huge);
  EXPECT_THROW(decode_compile_request(request), ProtocolError);
}

TEST(CompileProtocol, FramesCrossAPipeInOrderAndTheEndOfStreamIsNoFrame) {
  Pipe pipe;
  ASSERT_TRUE(write_frame(pipe.write_end, "first"));
  ASSERT_TRUE(write_frame(pipe.write_end, ""));
  ASSERT_TRUE(write_frame(pipe.write_end, std::string(3, '\0')));
  pipe.close_write();
  std::string payload;
  ASSERT_TRUE(read_frame(pipe.read_end, payload));
  EXPECT_EQ(payload, "first");
  ASSERT_TRUE(read_frame(pipe.read_end, payload));
  EXPECT_EQ(payload, "");
  ASSERT_TRUE(read_frame(pipe.read_end, payload));
  EXPECT_EQ(payload, std::string(3, '\0'));
  EXPECT_FALSE(read_frame(pipe.read_end, payload));
}

TEST(CompileProtocol, AFrameLargerThanAPipeBufferArrivesWhole) {
  Pipe pipe;
  const std::string big(3 << 20, 'c');
  std::thread writer([&] { EXPECT_TRUE(write_frame(pipe.write_end, big)); });
  std::string payload;
  EXPECT_TRUE(read_frame(pipe.read_end, payload));
  writer.join();
  EXPECT_EQ(payload, big);
}

TEST(CompileProtocol, AStreamEndingInsideAFrameIsAProtocolError) {
  {
    Pipe pipe;
    ASSERT_EQ(write(pipe.write_end, "abc", 3), 3);  // 3 of a length's 8 bytes
    pipe.close_write();
    std::string payload;
    EXPECT_THROW(read_frame(pipe.read_end, payload), ProtocolError);
  }
  {
    Pipe pipe;
    const std::uint64_t length = 10;
    ASSERT_EQ(write(pipe.write_end, &length, sizeof length), 8);
    ASSERT_EQ(write(pipe.write_end, "12345", 5), 5);
    pipe.close_write();
    std::string payload;
    EXPECT_THROW(read_frame(pipe.read_end, payload), ProtocolError);
  }
}

TEST(CompileProtocol, ALengthOverTheLimitIsRefusedBeforeAnythingIsAllocated) {
  Pipe pipe;
  const std::uint64_t length = kMaxFrameBytes + 1;
  ASSERT_EQ(write(pipe.write_end, &length, sizeof length), 8);
  std::string payload;
  EXPECT_THROW(read_frame(pipe.read_end, payload), ProtocolError);
}

TEST(CompileProtocol, WritingToASocketWhosePeerIsGoneFailsWithoutASignal) {
  int ends[2];
  ASSERT_EQ(socketpair(AF_UNIX, SOCK_STREAM, 0, ends), 0);
  close(ends[1]);
  EXPECT_FALSE(write_frame(ends[0], "nobody listens"));  // SIGPIPE would end the test binary
  close(ends[0]);
}

}  // namespace
}  // namespace convgen
