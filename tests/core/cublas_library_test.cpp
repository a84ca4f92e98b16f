// cuBLAS is opened on first use, not linked (src/core/cuda/cublas_library.hpp). Opening it needs no GPU, so this
// runs wherever the CUDA build runs; that CPU decoding never opens it is checked by scripts/check-install.

#include <gtest/gtest.h>

#include <string>

#include "asrdec/config.hpp"

#if ASRDEC_WITH_CUDA
#include "core/cuda/cublas_library.hpp"
#endif

namespace asrdec {
namespace {

TEST(CublasLibrary, OpensTheMajorVersionItWasCompiledAgainstWithEveryEntryPoint) {
#if ASRDEC_WITH_CUDA
  EXPECT_EQ(std::string(detail::cublas_library_name()), "libcublas.so." + std::to_string(CUBLAS_VER_MAJOR));
  const detail::CublasLibrary& cublas = detail::cublas_library();
  EXPECT_NE(cublas.create, nullptr);
  EXPECT_NE(cublas.destroy, nullptr);
  EXPECT_NE(cublas.set_stream, nullptr);
  EXPECT_NE(cublas.set_workspace, nullptr);
  EXPECT_NE(cublas.set_math_mode, nullptr);
  EXPECT_NE(cublas.gemm_ex, nullptr);
  // Calls that need no GPU prove the symbols are the functions they claim to be.
  EXPECT_STREQ(cublas.status_name(CUBLAS_STATUS_NOT_INITIALIZED), "CUBLAS_STATUS_NOT_INITIALIZED");
  EXPECT_STREQ(cublas.status_name(CUBLAS_STATUS_INVALID_VALUE), "CUBLAS_STATUS_INVALID_VALUE");
  EXPECT_FALSE(std::string(cublas.status_string(CUBLAS_STATUS_INVALID_VALUE)).empty());
  EXPECT_EQ(&detail::cublas_library(), &cublas) << "opened once per process";
#else
  GTEST_SKIP() << "CPU-only build: no cuBLAS";
#endif
}

}  // namespace
}  // namespace asrdec
