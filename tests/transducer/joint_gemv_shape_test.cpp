// Which joint shapes the CUDA decoders evaluate with the fused joint kernel (transducer/model/joint_gemv_shape.hpp):
// host-side arithmetic, checked here without a GPU.
#include "transducer/model/joint_gemv_shape.hpp"

#include <gtest/gtest.h>

#include <cstdint>
#include <cstdlib>
#include <string>

namespace asrdec::detail {
namespace {

constexpr std::int64_t kHopperOptIn = 227 * 1024;  // what an H100/H200 block may opt in to
constexpr std::int64_t kTuringOptIn = 64 * 1024;

TEST(JointGemvShape, TheBenchModelsSmallBatchesTakeTheFusedKernel) {
  // Bench models: J = 640. Greedy batch 1 and 32 (one row per utterance), ALSD++ beam 4 at batch 1 and 8.
  for (std::int64_t rows : {1, 4, 8, 32}) {
    EXPECT_TRUE(joint_gemv_fits(rows, 640, kHopperOptIn)) << rows << " rows";
  }
  // Beam 4 at batch 32 (128 rows) and greedy batch 128 stay on cuBLAS.
  for (std::int64_t rows : {33, 128}) {
    EXPECT_FALSE(joint_gemv_fits(rows, 640, kHopperOptIn)) << rows << " rows";
  }
}

TEST(JointGemvShape, SharedMemoryBoundsTheRowsTimesHidden) {
  // 96 KiB of float32 hidden values: 24,576 cells.
  EXPECT_TRUE(joint_gemv_fits(24, 1024, kHopperOptIn));
  EXPECT_FALSE(joint_gemv_fits(25, 1024, kHopperOptIn));
  EXPECT_TRUE(joint_gemv_fits(1, 24576, kHopperOptIn));
  EXPECT_FALSE(joint_gemv_fits(1, 24577, kHopperOptIn));
  // A device that allows less (Turing: 64 KiB) gets less: 16,384 cells.
  EXPECT_TRUE(joint_gemv_fits(25, 640, kTuringOptIn));
  EXPECT_FALSE(joint_gemv_fits(26, 640, kTuringOptIn));
  EXPECT_EQ(joint_gemv_shared_bytes(25, 640), 64000);
}

TEST(JointGemvShape, EveryShapeAgreesWithTheStatedRule) {
  // The rule in words: 1..32 rows whose float32 hidden layer fits min(96 KiB, the device's limit).
  for (std::int64_t limit : {std::int64_t{0}, std::int64_t{48 * 1024}, kTuringOptIn, kHopperOptIn}) {
    for (std::int64_t rows = 0; rows <= 40; ++rows) {
      for (std::int64_t hidden : {0, 1, 64, 320, 512, 640, 1024, 2048, 4096, 1 << 20}) {
        const std::int64_t cap = limit < 96 * 1024 ? limit : 96 * 1024;
        const bool expected = rows >= 1 && rows <= 32 && hidden >= 1 && rows * hidden * 4 <= cap;
        EXPECT_EQ(joint_gemv_fits(rows, hidden, limit), expected)
            << rows << " rows, hidden " << hidden << ", limit " << limit;
      }
    }
  }
}

TEST(JointGemvShape, OneOutputColumnPerWarp) {
  EXPECT_EQ(joint_gemv_blocks(1), 1);
  EXPECT_EQ(joint_gemv_blocks(8), 1);
  EXPECT_EQ(joint_gemv_blocks(9), 2);
  EXPECT_EQ(joint_gemv_blocks(1025), 129);  // bench models: V + 1 = 1,025 columns, eight warps a block
  EXPECT_EQ(joint_gemv_blocks(1029), 129);  // TDT with five durations
  EXPECT_EQ(joint_gemv_blocks(std::int64_t{1} << 40), 65535);
}

// Off unless the environment says exactly 1 (they measured slower than the default path; joint_gemv_shape.hpp).
TEST(JointGemvShape, TheEnvironmentTurnsTheFusedKernelsOn) {
  const char* before = std::getenv("ASRDEC_FUSED_KERNELS");
  const std::string saved = before != nullptr ? before : "";
  ::unsetenv("ASRDEC_FUSED_KERNELS");
  EXPECT_FALSE(fused_kernels_enabled());
  ::setenv("ASRDEC_FUSED_KERNELS", "0", 1);
  EXPECT_FALSE(fused_kernels_enabled());
  ::setenv("ASRDEC_FUSED_KERNELS", "yes", 1);
  EXPECT_FALSE(fused_kernels_enabled());
  ::setenv("ASRDEC_FUSED_KERNELS", "1", 1);
  EXPECT_TRUE(fused_kernels_enabled());
  if (before != nullptr) {
    ::setenv("ASRDEC_FUSED_KERNELS", saved.c_str(), 1);
  } else {
    ::unsetenv("ASRDEC_FUSED_KERNELS");
  }
}

}  // namespace
}  // namespace asrdec::detail
