// Which greedy decoders run label looping as one persistent CUDA kernel, on how many blocks, with how much shared
// memory (transducer/greedy/persistent_greedy_shape.hpp): host-side arithmetic, checked here without a GPU.
#include "transducer/greedy/persistent_greedy_shape.hpp"

#include <gtest/gtest.h>

#include <cstdint>
#include <cstdlib>
#include <string>

#include "core/grid_barrier_status.hpp"
#include "support/test_support.hpp"

namespace asrdec::detail {
namespace {

constexpr std::int64_t kHopperLimit = 96 * 1024;  // what the fused kernels opt in to on an H100/H200

// The bench RNN-T model's decoder at `rows` rows: label looping, a one-layer LSTM of 640 units, J = 640, fp32.
PersistentGreedyShape bench_shape(std::int64_t rows) {
  PersistentGreedyShape shape;
  shape.label_looping = true;
  shape.lstm_fused_step = true;
  shape.same_dtype = true;
  shape.rows = rows;
  shape.joint_hidden = 640;
  shape.predictor_shared_floats = rows * 640;
  shape.device_shared_bytes = kHopperLimit;
  return shape;
}

TEST(PersistentGreedyShape, TheBenchModelRunsAsOneKernelUpTo32Rows) {
  for (std::int64_t rows : {1, 4, 8, 32}) {
    EXPECT_EQ(persistent_greedy_refusal(bench_shape(rows)), "") << rows << " rows";
  }
  EXPECT_NE(persistent_greedy_refusal(bench_shape(33)), "");
  EXPECT_NE(persistent_greedy_refusal(bench_shape(0)), "");
}

TEST(PersistentGreedyShape, EachUnsupportedFeatureIsNamed) {
  PersistentGreedyShape shape = bench_shape(4);
  shape.label_looping = false;
  EXPECT_NE(persistent_greedy_refusal(shape).find("frame looping"), std::string::npos);
  shape = bench_shape(4);
  shape.lstm_fused_step = false;
  EXPECT_NE(persistent_greedy_refusal(shape).find("LSTM"), std::string::npos);
  shape = bench_shape(4);
  shape.same_dtype = false;
  EXPECT_NE(persistent_greedy_refusal(shape).find("dtype"), std::string::npos);
}

TEST(PersistentGreedyShape, SharedMemoryIsTheLargerStepsAndMustFit) {
  // Joint rows: 8 x 640 floats; a two-layer LSTM holds its rows and the layer below's: 2 x 8 x 640.
  EXPECT_EQ(persistent_greedy_shared_bytes(8, 640, 8 * 640), 8 * 640 * 4);
  EXPECT_EQ(persistent_greedy_shared_bytes(8, 640, 2 * 8 * 640), 2 * 8 * 640 * 4);
  EXPECT_EQ(persistent_greedy_shared_bytes(8, 1024, 8 * 640), 8 * 1024 * 4);
  // 32 rows of a two-layer LSTM of 640 units need 160 KiB: more than the kernel may take.
  PersistentGreedyShape shape = bench_shape(32);
  shape.predictor_shared_floats = 2 * 32 * 640;
  EXPECT_NE(persistent_greedy_refusal(shape).find("shared memory"), std::string::npos);
  shape.rows = 16;
  shape.predictor_shared_floats = 2 * 16 * 640;  // 80 KiB
  EXPECT_EQ(persistent_greedy_refusal(shape), "");
  // A device with less (48 KiB) refuses what fits elsewhere.
  shape.device_shared_bytes = 48 * 1024;
  EXPECT_NE(persistent_greedy_refusal(shape), "");
}

TEST(PersistentGreedyShape, BlocksCoverTheWidestStepUpToWhatRunsAtOnce) {
  // Bench model: 1,025 joint columns (129 blocks of eight warps), 640 LSTM units and projection columns (80).
  EXPECT_EQ(persistent_greedy_blocks(1025, 640, 640, 1 << 30), 129);
  EXPECT_EQ(persistent_greedy_blocks(1025, 640, 640, 132), 129);    // an H200 at one block a multiprocessor
  EXPECT_EQ(persistent_greedy_blocks(1025, 640, 640, 114), 114);    // an H100 PCIe: the columns wrap around
  EXPECT_EQ(persistent_greedy_blocks(17, 2048, 64, 1 << 30), 256);  // a wide LSTM decides
  EXPECT_EQ(persistent_greedy_blocks(17, 64, 4096, 1 << 30), 512);  // a wide joint hidden (projection) decides
  EXPECT_EQ(persistent_greedy_blocks(1025, 640, 640, 0), 0);        // a device that runs none: no launch
}

TEST(PersistentGreedyShape, ManyRowsShareTheHiddenLayerAcrossBlocks) {
  // 256 threads a block, 16 values each: 4,096 hidden values. Bench models (J = 640): batch 1 to 6 compute the hidden
  // layer in every block, 7 and up share it (batch 32: 80 values a thread, 16 µs of dependent loads a pass).
  for (std::int64_t rows = 1; rows <= 32; ++rows) {
    EXPECT_EQ(persistent_greedy_shares_hidden(rows, 640, 256), rows >= 7) << rows << " rows";
  }
  EXPECT_FALSE(persistent_greedy_shares_hidden(16, 256, 256));  // exactly 4,096
  EXPECT_TRUE(persistent_greedy_shares_hidden(16, 257, 256));
}

TEST(PersistentGreedyShape, OffUnlessTheEnvironmentSaysOne) {
  {
    const testing::ScopedEnvironmentVariable unset("ASRDEC_PERSISTENT_GREEDY", nullptr);
    EXPECT_FALSE(persistent_greedy_enabled());
  }
  for (const char* value : {"0", "yes", "true", ""}) {
    const testing::ScopedEnvironmentVariable set("ASRDEC_PERSISTENT_GREEDY", value);
    EXPECT_FALSE(persistent_greedy_enabled()) << value;
  }
  const testing::ScopedEnvironmentVariable on("ASRDEC_PERSISTENT_GREEDY", "1");
  EXPECT_TRUE(persistent_greedy_enabled());
}

TEST(PersistentGreedyShape, BarrierTimeoutIsLongerThanAnyStepAndShorterThanAHang) {
  EXPECT_GE(kGridBarrierTimeoutNs, 1'000'000'000ull);
  EXPECT_LE(kGridBarrierTimeoutNs, 60'000'000'000ull);
  EXPECT_NE(kGridBarrierTimedOut, kGridBarrierOk);
  EXPECT_NE(kGridBarrierLoopCap, kGridBarrierOk);
  EXPECT_NE(kGridBarrierLoopCap, kGridBarrierTimedOut);
}

}  // namespace
}  // namespace asrdec::detail
