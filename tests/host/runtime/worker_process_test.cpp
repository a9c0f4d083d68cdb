// worker_process_test: a spawned child answers over its stdin and stdout, its end is reported in words, and the
// destructor leaves no process behind. `cat` is the echo worker: it returns every frame as sent.
#include "runtime/worker_process.hpp"

#include <signal.h>
#include <sys/wait.h>

#include <cerrno>
#include <memory>
#include <string>

#include <gtest/gtest.h>

#include "support/processes.hpp"

namespace convgen {
namespace {

bool process_exists(pid_t pid) { return kill(pid, 0) == 0 || errno != ESRCH; }

TEST(WorkerProcess, ExchangesFramesWithTheChild) {
  WorkerProcess cat("/bin/cat");
  EXPECT_EQ(cat.exchange("hello"), "hello");
  // cat answers while the request is still being written: a request larger than the socket's buffers would block
  // both (a worker reads the whole request first).
  EXPECT_EQ(cat.exchange(std::string(16 << 10, 'x')), std::string(16 << 10, 'x'));
  EXPECT_EQ(cat.exchange(""), "");
  EXPECT_TRUE(cat.running());
}

TEST(WorkerProcess, AChildThatEndsWithoutReplyingIsLostWithItsStatus) {
  WorkerProcess worker("/bin/true");
  try {
    worker.exchange("anyone?");
    FAIL() << "expected WorkerLostError";
  } catch (const WorkerLostError& e) {
    {
      const std::string message = e.what();
      EXPECT_NE(message.find("true (pid "), std::string::npos) << message;
      EXPECT_NE(message.find("exited with status 0 before replying"), std::string::npos) << message;
    }
  }
  EXPECT_FALSE(worker.running());
}

TEST(WorkerProcess, AChildKilledWhileIdleIsNotRunningAndItsExchangeNamesTheSignal) {
  WorkerProcess cat("/bin/cat");
  ASSERT_EQ(kill(cat.pid(), SIGKILL), 0);
  testing_support::wait_until_ended(cat.pid());
  EXPECT_FALSE(cat.running());
  try {
    cat.exchange("hello");
    FAIL() << "expected WorkerLostError";
  } catch (const WorkerLostError& e) {
    EXPECT_NE(std::string(e.what()).find("ended on signal 9 (Killed)"), std::string::npos) << e.what();
  }
}

TEST(WorkerProcess, AProgramThatIsNotThereCannotStartAndSaysWhich) {
  try {
    WorkerProcess worker("/nonexistent/convgen-nvrtc-worker");
    FAIL() << "expected WorkerStartError";
  } catch (const WorkerStartError& e) {
    EXPECT_NE(std::string(e.what()).find("/nonexistent/convgen-nvrtc-worker"), std::string::npos) << e.what();
  }
}

TEST(WorkerProcess, TheDestructorEndsAndReapsTheChild) {
  auto cat = std::make_unique<WorkerProcess>("/bin/cat");
  const pid_t pid = cat->pid();
  ASSERT_TRUE(process_exists(pid));
  cat.reset();
  EXPECT_FALSE(process_exists(pid));  // reaped: not even a zombie is left
}

TEST(WorkerProcess, DescribesWaitStatusesInWords) {
  EXPECT_EQ(describe_wait_status(3 << 8), "exited with status 3");
  EXPECT_EQ(describe_wait_status(SIGSEGV), "ended on signal 11 (Segmentation fault)");
}

}  // namespace
}  // namespace convgen
