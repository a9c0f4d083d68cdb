// test_main: GoogleTest entry point shared by every test binary.
#include <gtest/gtest.h>
#ifdef CONVGEN_TEST_NVRTC_WORKER
#include <filesystem>
#include "runtime/compiler_processes.hpp"
#endif

int main(int argc, char** argv) {
  testing::InitGoogleTest(&argc, argv);
#ifdef CONVGEN_TEST_NVRTC_WORKER
  // The GPU tier compiles its kernels as the convgen tool does, in NVRTC worker processes (one per usable core): in
  // threads of one process NVRTC does not scale (docs/architecture.md, "Worker compiles"), and a test that verifies
  // every configuration compiles thousands. Where the worker cannot be started, compiles stay in this process.
  const convgen::WorkerCompiles worker_compiles(convgen::usable_cores(),
                                                std::filesystem::path(CONVGEN_TEST_NVRTC_WORKER));
#endif
  return RUN_ALL_TESTS();
}
