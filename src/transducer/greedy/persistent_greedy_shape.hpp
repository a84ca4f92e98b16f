#pragma once
// Internal: which greedy decoders run label looping as one persistent CUDA kernel (greedy_kernels.hpp,
// PersistentGreedy), its grid and its shared memory. Host-only arithmetic, tested on the CPU; the CUDA executor calls
// it when it sizes its buffers.
//
// Why a persistent kernel: at a few rows a label-looping step is a chain of small dependent graph nodes (a blank
// frame four, a label about ten), each costing microseconds of launch latency on top of its work; one kernel whose
// blocks meet at grid barriers between the dependent phases pays a barrier (about a microsecond) instead.

#include <cstdint>
#include <string>

#include "core/environment_switch.hpp"
#include "transducer/model/joint_gemv_shape.hpp"

namespace asrdec::detail {

/** Whether a greedy decoder may run the persistent kernel: only where the environment sets
 *  ASRDEC_PERSISTENT_GREEDY=1, until a GPU measures it faster than the graph program. Read when a CUDA decoder
 *  sizes its buffers. */
inline bool persistent_greedy_enabled() { return environment_switch("ASRDEC_PERSISTENT_GREEDY", false); }

/** What decides whether one decoder's program can be the persistent kernel. */
struct PersistentGreedyShape {
  bool label_looping = false;    ///< label looping or WIND (its windowed form); frame looping keeps the graph program
  bool lstm_fused_step = false;  ///< the predictor is the built-in LSTM on CUDA and its fused step fits these rows
  bool same_dtype = false;       ///< the predictor's weights have the joint's dtype (the kernel is built for one)
  std::int64_t rows = 0;         ///< joint rows (max_batch, times the window for WIND)
  std::int64_t joint_hidden = 0;
  std::int64_t predictor_shared_floats = 0;  ///< LstmFusedStep::shared_floats
  std::int64_t device_shared_bytes = 0;      ///< what the kernel may opt in to on the device
};

/** The dynamic shared memory of the persistent kernel: the larger of the joint's hidden rows and the predictor's. */
constexpr std::int64_t persistent_greedy_shared_bytes(std::int64_t rows, std::int64_t joint_hidden,
                                                      std::int64_t predictor_shared_floats) {
  const std::int64_t joint = joint_gemv_shared_bytes(rows, joint_hidden);
  const std::int64_t predictor = predictor_shared_floats * 4;
  return joint > predictor ? joint : predictor;
}

/** Why `shape` cannot run the persistent kernel, or an empty string when it can. */
inline std::string persistent_greedy_refusal(const PersistentGreedyShape& shape) {
  if (!shape.label_looping) return "frame looping keeps its graph program";
  if (!shape.lstm_fused_step) return "the predictor is not the built-in LSTM, or its fused step does not fit the rows";
  if (!shape.same_dtype) return "the predictor's weights and the joint's differ in dtype";
  if (!joint_gemv_fits(shape.rows, shape.joint_hidden, shape.device_shared_bytes)) {
    return "the joint rows do not fit the fused joint step";
  }
  if (persistent_greedy_shared_bytes(shape.rows, shape.joint_hidden, shape.predictor_shared_floats) >
      shape.device_shared_bytes) {
    return "the predictor's rows do not fit a block's shared memory";
  }
  return {};
}

/** Hidden values per thread above which the persistent kernel computes the joint's hidden layer once across the
 *  grid (and every block loads it after a barrier) rather than in every block: each value costs a block two
 *  dependent loads and the activation, a load of the finished value one independent load, and a barrier about a
 *  microsecond. A first choice from that arithmetic (the bench models: batch 1 computes in every block, batch 32
 *  shares), to be tuned with the benchmark's /persistent cases on a GPU. */
constexpr std::int64_t kPersistentHiddenPerThread = 16;

/** Whether the persistent kernel shares the hidden layer of `rows` joint rows of size `joint_hidden` across its blocks
 *  (threads: a block's). */
constexpr bool persistent_greedy_shares_hidden(std::int64_t rows, std::int64_t joint_hidden, std::int64_t threads) {
  return rows * joint_hidden > kPersistentHiddenPerThread * threads;
}

/** Blocks of the persistent kernel: enough for a warp per output column of the widest step (joint outputs, LSTM
 *  units, projection columns), at most what the device runs at once (`resident`: blocks per multiprocessor times
 *  multiprocessors; a barrier waits for every block, so each must be running). 0 when the device runs none. */
constexpr int persistent_greedy_blocks(std::int64_t outputs, std::int64_t predictor_hidden, std::int64_t joint_hidden,
                                       std::int64_t resident) {
  std::int64_t wanted = joint_gemv_blocks(outputs);
  for (std::int64_t width : {predictor_hidden, joint_hidden}) {
    const std::int64_t blocks = joint_gemv_blocks(width);
    wanted = blocks > wanted ? blocks : wanted;
  }
  const std::int64_t blocks = wanted < resident ? wanted : resident;
  return static_cast<int>(blocks > 0 ? blocks : 0);
}

}  // namespace asrdec::detail
