#pragma once
// Internal: when a transducer decoder evaluates its joint rows with the fused joint kernel (joint_gemv.cuh: the
// hidden layer and the output layer in one kernel, no cuBLAS) rather than the hidden kernel plus a cuBLAS GEMM; the
// predictor's fused kernels (predictor_kernels.hpp) follow the same rule.
// Host-only arithmetic, tested on the CPU; the CUDA executors call it once per allocation with the device's limit.
//
// Why by shape: a joint evaluation of a small batch is latency-bound (a step at batch 1 does ~0.7 MFLOP on ~2.6 MB
// of weights that stay in L2), and each dependent graph node costs microseconds, so one kernel beats two. Every
// block of the fused kernel recomputes all rows' hidden layer into shared memory, which stops paying off as rows
// grow and must fit the block's shared memory; there cuBLAS wins.

#include <cstddef>
#include <cstdint>

#include "core/environment_switch.hpp"

namespace asrdec::detail {

/** The most joint rows the fused kernel takes (beyond it, each block's share of the hidden layer outweighs the node
 *  it saves). A first choice from the arithmetic above, to be tuned with the greedy benchmark on a GPU. */
constexpr std::int64_t kJointGemvMaxRows = 32;
/** The most shared memory the fused kernel asks for: 96 KiB (every GPU from Volta on can opt in to it, except
 *  Turing's 64 KiB, which the device limit passed to joint_gemv_fits covers). */
constexpr std::int64_t kJointGemvMaxSharedBytes = 96 * 1024;
/** Threads per block of the fused kernel; a warp computes one output column at a time. */
constexpr int kJointGemvThreads = 256;

/** Shared memory the fused kernel needs for `rows` rows of hidden size `hidden`: the hidden layer in float32. */
constexpr std::int64_t joint_gemv_shared_bytes(std::int64_t rows, std::int64_t hidden) {
  return rows * hidden * static_cast<std::int64_t>(sizeof(float));
}

/** Whether `rows` joint rows of hidden size `hidden` go through the fused kernel on a device that lets a block opt in
 *  to `device_shared_bytes` of shared memory. */
constexpr bool joint_gemv_fits(std::int64_t rows, std::int64_t hidden, std::int64_t device_shared_bytes) {
  const std::int64_t limit =
      device_shared_bytes < kJointGemvMaxSharedBytes ? device_shared_bytes : kJointGemvMaxSharedBytes;
  return rows >= 1 && hidden >= 1 && rows <= kJointGemvMaxRows && hidden <= limit / 4 &&
         joint_gemv_shared_bytes(rows, hidden) <= limit;
}

/** Whether the fused kernels may run at all: only where the environment sets ASRDEC_FUSED_KERNELS=1. They are off by
 *  default because their first version measured slower than cuBLAS and the unfused kernels on an H200 (2026-11-28:
 *  greedy B=1 38.0 against 30.6 ms, B=32 467 against 118 ms; docs/transducer-greedy.md); the switch lets a GPU session
 *  measure a new version against the default in one process (the benchmarks' `/fused` cases) and the tests check it.
 *  Read when a CUDA decoder sizes its buffers and when a predictor session starts. */
inline bool fused_kernels_enabled() { return environment_switch("ASRDEC_FUSED_KERNELS", false); }

/** Blocks of the fused kernel for `outputs` output columns: one column per warp, capped at the grid's x limit. */
constexpr int joint_gemv_blocks(std::int64_t outputs) {
  const std::int64_t warps = kJointGemvThreads / 32;
  const std::int64_t blocks = (outputs + warps - 1) / warps;
  return static_cast<int>(blocks < 1 ? 1 : (blocks > 65535 ? 65535 : blocks));
}

}  // namespace asrdec::detail
