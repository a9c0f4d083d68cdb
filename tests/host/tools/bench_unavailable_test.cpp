// bench_unavailable_test: the `bench` that a build without cuDNN has (tools/convgen/cmd_bench_unavailable.cpp): listed,
// and refusing, whatever its arguments, with why and how to get the real one. (The configure test,
// build.configures_and_links_no_cudnn_where_there_is_none, checks that such a build is configured.)
#include <gtest/gtest.h>

#include "convgen/error.hpp"
#include "tools/convgen/commands.hpp"

namespace convgen {
namespace {

TEST(BenchUnavailable, IsListedAndRefusesWithWhyAndHowToGetIt) {
  CLI::App app{"convgen"};
  cli::add_bench_unavailable_command(app);
  ASSERT_NE(app.get_subcommand("bench"), nullptr);
  EXPECT_NE(app.get_subcommand("bench")->get_description().find("configured without cuDNN"), std::string::npos);
  const char* argv[] = {"convgen", "bench", "--shapes", "shapes/cusnn.csv", "--batch", "1"};
  try {
    app.parse(6, const_cast<char**>(argv));
    ADD_FAILURE() << "bench ran in a build without cuDNN";
  } catch (const InputError& e) {
    EXPECT_EQ(std::string(e.what()),
              "bench: this convgen was built without cuDNN (CMake did not find it), and bench measures every layer "
              "against cuDNN's routes; install cuDNN 9 (scripts/setup.sh does) or set CUDNN_ROOT, then configure "
              "and build again");
  }
}

}  // namespace
}  // namespace convgen
