// version() and build_info() describe the library the program runs against; here, where headers and library come
// from one build, they must agree with the configured macros.

#include "asrdec/core/version.hpp"

#include <gtest/gtest.h>

#include <string>

#include "asrdec/config.hpp"

namespace asrdec {
namespace {

TEST(Version, MatchesTheConfiguredVersion) {
  EXPECT_STREQ(version(), ASRDEC_VERSION_STRING);
  const BuildInfo info = build_info();
  EXPECT_EQ(info.version, ASRDEC_VERSION_STRING);
  EXPECT_EQ(std::to_string(info.version_major) + "." + std::to_string(info.version_minor) + "." +
                std::to_string(info.version_patch),
            info.version);
  EXPECT_EQ(info.build_type, ASRDEC_BUILD_TYPE);
  EXPECT_EQ(info.cxx_compiler, ASRDEC_CXX_COMPILER);
}

TEST(Version, ListsTheCompiledCudaArchitectures) {
  const BuildInfo info = build_info();
  EXPECT_EQ(info.cuda, ASRDEC_WITH_CUDA == 1);
  std::string joined;
  for (const std::string& a : info.cuda_architectures) {
    EXPECT_FALSE(a.empty());
    EXPECT_EQ(a.find(';'), std::string::npos) << a;
    joined += (joined.empty() ? "" : ";") + a;
  }
  if (info.cuda) {
    EXPECT_EQ(joined, ASRDEC_CUDA_ARCHITECTURES);
    EXPECT_NE(info.to_string().find("CUDA " + info.cuda_compiler + " for " + joined), std::string::npos)
        << info.to_string();
  } else {
    EXPECT_TRUE(info.cuda_architectures.empty());
    EXPECT_NE(info.to_string().find("CPU only"), std::string::npos) << info.to_string();
  }
  EXPECT_EQ(info.cuda_architectures_list(), info.cuda ? joined : std::string("none"));
  EXPECT_EQ(info.to_string().rfind("asrdec " + info.version + " (", 0), 0u) << info.to_string();
}

}  // namespace
}  // namespace asrdec
