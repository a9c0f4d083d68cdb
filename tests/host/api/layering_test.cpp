// layering_test: an application that links the API alone gets no cuDNN (cuDNN is linked by bench/ only).
#include <gtest/gtest.h>
#include <link.h>

#include <array>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "convgen/convgen.hpp"
#include "convgen/error.hpp"

namespace convgen {
namespace {

std::vector<std::string> loaded_objects() {
  std::vector<std::string> names;
  dl_iterate_phdr(
      [](dl_phdr_info* info, std::size_t, void* data) {
        static_cast<std::vector<std::string>*>(data)->push_back(info->dlpi_name ? info->dlpi_name : "");
        return 0;
      },
      &names);
  return names;
}

TEST(Layering, ThisBinaryLinkingOnlyTheApiLoadsNoCudnn) {
  // Constructing a context pulls the whole API (tuner, measure, runtime) into the binary; without a GPU it throws.
  try {
    ConvContext context;
  } catch (const Error&) {
  }
  for (const std::string& name : loaded_objects()) EXPECT_EQ(name.find("libcudnn"), std::string::npos) << name;
}

TEST(Layering, TheApiExampleNeedsNoCudnnByLdd) {
  const std::string example = std::string(CONVGEN_BINARY_DIR) + "/examples/api/convgen_api_example";
  std::unique_ptr<FILE, int (*)(FILE*)> pipe(popen(("ldd " + example + " 2>&1").c_str(), "r"), pclose);
  ASSERT_TRUE(pipe);
  std::string out;
  std::array<char, 512> buffer{};
  while (std::fgets(buffer.data(), buffer.size(), pipe.get())) out += buffer.data();
  ASSERT_NE(out.find("libc.so"), std::string::npos) << out;  // ldd did list the libraries
  EXPECT_EQ(out.find("libcudnn"), std::string::npos) << out;
}

}  // namespace
}  // namespace convgen
