// Which beam searches run their step loop as one persistent CUDA kernel, with how many predictor rows and how much
// shared memory (transducer/beam/persistent_beam_shape.hpp): host-side arithmetic, checked here without a GPU.
#include "transducer/beam/persistent_beam_shape.hpp"

#include <gtest/gtest.h>

#include <cstdint>
#include <string>

#include "support/test_support.hpp"

namespace asrdec::detail {
namespace {

constexpr std::int64_t kHopperLimit = 96 * 1024;  // what the fused kernels opt in to on an H100/H200
constexpr std::int64_t kSlotBytes = 76;           // kBeamSlotCacheBytesPerSlot (beam_slot_cache.cuh)

// The bench RNN-T model (J = 640, a one-layer LSTM of 640 units, fp32) under beam 4: ALSD++ at `batch`, or WIND
// beam search with a window of 8 (a pool of 48 slots an utterance).
PersistentBeamShape bench_shape(bool wind, std::int64_t batch) {
  const std::int64_t beam = 4;
  const std::int64_t pool = wind ? beam * (8 + beam) : beam;
  PersistentBeamShape shape;
  shape.step_loop = true;
  shape.lstm_fused_step = true;
  shape.same_dtype = true;
  shape.joint_rows = batch * (wind ? beam * 8 : beam);
  shape.step_rows = persistent_beam_step_rows(wind, batch, beam, pool);
  shape.joint_hidden = 640;
  shape.predictor_shared_floats = persistent_beam_step_rows(wind, batch, beam, pool) * 640;
  shape.slot_cache_bytes = (wind ? pool : batch * pool) * kSlotBytes;
  shape.device_shared_bytes = kHopperLimit;
  return shape;
}

TEST(PersistentBeamShape, StepRowsBoundTheTokensOfAStep) {
  // ALSD++: a token at most per kept hypothesis.
  EXPECT_EQ(persistent_beam_step_rows(false, 1, 4, 4), 4);
  EXPECT_EQ(persistent_beam_step_rows(false, 8, 4, 4), 32);
  // WIND: K proposals from each of at most K group members, within the pool.
  EXPECT_EQ(persistent_beam_step_rows(true, 1, 4, 48), 16);
  EXPECT_EQ(persistent_beam_step_rows(true, 3, 2, 6), 12);
  EXPECT_EQ(persistent_beam_step_rows(true, 1, 4, 10), 10);  // a pool smaller than K·K bounds it
  EXPECT_EQ(persistent_beam_step_rows(true, 1, 1, 2), 1);    // beam 1: one token a step
}

TEST(PersistentBeamShape, TheBenchModelRunsAsOneKernelAtBatchOne) {
  EXPECT_EQ(persistent_beam_refusal(bench_shape(true, 1)), "");  // 32 window rows
  EXPECT_NE(persistent_beam_refusal(bench_shape(true, 2)).find("joint rows"), std::string::npos);
  for (std::int64_t batch : {1, 4, 8}) EXPECT_EQ(persistent_beam_refusal(bench_shape(false, batch)), "") << batch;
  // ALSD++ at batch 9: 36 joint rows, and as many predictor rows, which are checked first.
  EXPECT_NE(persistent_beam_refusal(bench_shape(false, 9)).find("predictor rows"), std::string::npos);
}

TEST(PersistentBeamShape, EachUnsupportedFeatureIsNamed) {
  PersistentBeamShape shape = bench_shape(false, 1);
  shape.step_loop = false;
  EXPECT_NE(persistent_beam_refusal(shape).find("AES++"), std::string::npos);
  shape = bench_shape(false, 1);
  shape.lstm_fused_step = false;
  EXPECT_NE(persistent_beam_refusal(shape).find("LSTM"), std::string::npos);
  shape = bench_shape(false, 1);
  shape.same_dtype = false;
  EXPECT_NE(persistent_beam_refusal(shape).find("dtype"), std::string::npos);
  // WIND with a short window: few joint rows, but K·K step rows an utterance (beam 4, window 1, batch 3: 12 joint
  // rows, 48 step rows).
  shape = bench_shape(true, 1);
  shape.joint_rows = 12;
  shape.step_rows = persistent_beam_step_rows(true, 3, 4, 20);
  EXPECT_NE(persistent_beam_refusal(shape).find("predictor rows"), std::string::npos);
}

TEST(PersistentBeamShape, SharedMemoryIsTheLargestPhasesAndMustFit) {
  PersistentBeamShape shape = bench_shape(true, 1);
  EXPECT_EQ(persistent_beam_shared_bytes(shape), 32 * 640 * 4);  // the joint's 32 hidden rows: 80 KiB
  shape.predictor_shared_floats = 2 * 16 * 640;                  // two LSTM layers hold the layer below too
  EXPECT_EQ(persistent_beam_shared_bytes(shape), 32 * 640 * 4);
  shape = bench_shape(false, 1);
  EXPECT_EQ(persistent_beam_shared_bytes(shape), 4 * 640 * 4);
  shape.slot_cache_bytes = 40 * 1024;  // the cache's limit: larger than 4 rows
  EXPECT_EQ(persistent_beam_shared_bytes(shape), 40 * 1024);
  shape.predictor_shared_floats = 3 * 8 * 1024;  // 96 KiB + 0: still fits exactly
  EXPECT_EQ(persistent_beam_refusal(shape), "");
  shape.predictor_shared_floats += 1;
  EXPECT_NE(persistent_beam_refusal(shape).find("shared memory"), std::string::npos);
  // A device with less (48 KiB) refuses WIND's joint rows, which fit elsewhere.
  shape = bench_shape(true, 1);
  shape.device_shared_bytes = 48 * 1024;
  EXPECT_NE(persistent_beam_refusal(shape), "");
}

TEST(PersistentBeamShape, OffUnlessTheEnvironmentSaysOne) {
  {
    const testing::ScopedEnvironmentVariable unset("ASRDEC_PERSISTENT_BEAM", nullptr);
    EXPECT_FALSE(persistent_beam_enabled());
  }
  for (const char* value : {"0", "yes", "true", ""}) {
    const testing::ScopedEnvironmentVariable set("ASRDEC_PERSISTENT_BEAM", value);
    EXPECT_FALSE(persistent_beam_enabled()) << value;
  }
  const testing::ScopedEnvironmentVariable on("ASRDEC_PERSISTENT_BEAM", "1");
  EXPECT_TRUE(persistent_beam_enabled());
}

}  // namespace
}  // namespace asrdec::detail
