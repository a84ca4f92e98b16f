#pragma once
/**
 * @file
 * HypsRef: the trivially copyable view of a BatchedHyps (hyps/batched_hyps.hpp) — one growing row of labels per
 * utterance — and the functions that update a row. asrdec's greedy decoders write hypotheses only through these,
 * on the CPU (a loop over rows) and in CUDA kernels (a thread per row). Header-only and public: a user's own CUDA
 * kernel or CPU loop can extend hypotheses the same way (examples/hyps_user_loop.cpp, examples/hyps_user_kernel.cu)
 * and read them back with to_hypotheses(). Everything is inline and `__host__ __device__` under nvcc.
 */

#include <cstdint>

#include "asrdec/detail/hd.hpp"

namespace asrdec {

/** Per-utterance hypothesis storage, row b at offset b * capacity. Appending also keeps the bookkeeping of the
 *  max_symbols rule: how many consecutive labels share the last timestamp. */
struct HypsRef {
  std::int32_t* tokens;
  std::int32_t* timestamps;
  std::int32_t* durations;
  float* scores;  ///< per label: its token_logprob
  float* confidences;
  std::int32_t* lengths;
  float* total_scores;  ///< per utterance: the path's log-probability (hyps_add_step_logprob)
  std::int32_t* last_timestamp;
  std::int32_t* same_timestamp_count;
  std::int32_t* overflow;  ///< set to 1 for a row that ran out of capacity (never with the sizes decoders use)
  std::int64_t capacity;
};

/** Row b starts over: no labels, path log-probability 0. */
ASRDEC_HD_INLINE void hyps_clear(const HypsRef& h, std::int64_t b) {
  h.lengths[b] = 0;
  h.total_scores[b] = 0.0f;
  h.last_timestamp[b] = -1;
  h.same_timestamp_count[b] = 0;
  h.overflow[b] = 0;
}

/** Adds a used joint choice to the path's log-probability: every choice that moves the state machine (label or
 *  blank) counts; the forced move after max_symbols makes no joint evaluation and adds nothing. */
ASRDEC_HD_INLINE void hyps_add_step_logprob(const HypsRef& h, std::int64_t b, float step_logprob) {
  h.total_scores[b] += step_logprob;
}

/** Appends a label to row b: `token` emitted on frame `time` (TDT: with `duration`, else 0), its log-probability
 *  `score` and confidence. A full row sets overflow[b] and drops the label. Does not touch total_scores: add
 *  the step's log-probability with hyps_add_step_logprob(). */
ASRDEC_HD_INLINE void hyps_append(const HypsRef& h, std::int64_t b, std::int32_t token, std::int32_t time,
                                  std::int32_t duration, float score, float confidence) {
  const std::int32_t n = h.lengths[b];
  if (n >= h.capacity) {
    h.overflow[b] = 1;
    return;
  }
  const std::int64_t at = b * h.capacity + n;
  h.tokens[at] = token;
  h.timestamps[at] = time;
  h.durations[at] = duration;
  h.scores[at] = score;
  h.confidences[at] = confidence;
  h.lengths[b] = n + 1;
  if (h.last_timestamp[b] == time) {
    h.same_timestamp_count[b] += 1;
  } else {
    h.last_timestamp[b] = time;
    h.same_timestamp_count[b] = 1;
  }
}

}  // namespace asrdec
