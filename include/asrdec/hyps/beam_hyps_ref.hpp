#pragma once
/**
 * @file
 * BeamHypsRef: the trivially copyable view of a BatchedBeamHyps (hyps/batched_beam_hyps.hpp) and the per-slot rules
 * that update it, shared by asrdec's CPU loops and CUDA kernels. Header-only and public: a user's own CUDA kernel
 * or CPU loop can extend beams with these functions (examples/hyps_user_loop.cpp). Everything is inline and
 * `__host__ __device__` under nvcc; nothing here needs the compiled library.
 *
 * Updates that read other slots (adding a step's results gathers each new slot's parent; recombination compares
 * every pair of slots) run in two phases: every slot of an utterance is staged from the current values, then every
 * slot commits. On the CPU that is two loops over k; on the GPU, two barriers apart (a block per utterance, a
 * thread per slot).
 */

#include <cmath>
#include <cstdint>

#include "asrdec/detail/hd.hpp"
#include "asrdec/detail/portable_math.hpp"

namespace asrdec {

/** NeMo's transcript hash step (Knuth's MMIX LCG multiplier), in wrapping 64-bit unsigned arithmetic. The empty
 *  transcript hashes to 0. */
constexpr std::uint64_t kBeamHashMultiplier = 6364136223846793005ull;

ASRDEC_HD_INLINE std::uint64_t beam_hash_extend(std::uint64_t hash, std::int32_t label) {
  return hash * kBeamHashMultiplier + 1u + static_cast<std::uint64_t>(static_cast<std::int64_t>(label));
}

/** rnnt: blank moves one frame. tdt: every label moves by its duration. windowed (WIND beam search, RNN-T): a label
 *  moves by its jump within the window and a token is emitted on the frame it lands on. ctc: one label per frame. */
enum class BeamKind : std::int32_t { rnnt = 0, tdt = 1, ctc = 2, windowed = 3 };

/** The device view of a batch of beams, struct-of-arrays. `[B,K,L]` arrays are indexed ((b*K)+k)*L + i, `[B,K]`
 *  arrays (b*K)+k. Labels: a token, blank, or -1 ("no-op": the hypothesis had already finished). */
struct BeamHypsRef {
  std::int64_t batch;
  std::int32_t beam;      ///< K
  std::int32_t capacity;  ///< L, entries per slot
  BeamKind kind;
  std::int32_t blank;
  // The back-pointer tree: entry i of slot k was added at step i by the hypothesis now in slot k.
  std::int32_t* labels;      ///< [B,K,L]
  std::int32_t* parents;     ///< [B,K,L] the slot, at step i-1, of the entry's parent
  std::int32_t* timestamps;  ///< [B,K,L] frame of the entry (transducers: the frame it was emitted on; CTC: step)
  std::int32_t* durations;   ///< [B,K,L] TDT duration of the entry (TDT only)
  float* logprobs;           ///< [B,K,L] acoustic log-probability of the entry's label on its frame (token_scores)
  // Per-slot state.
  float* scores;               ///< [B,K] total log score; -inf marks an empty or dead slot
  std::int32_t* steps;         ///< [B,K] entries written (the same for every slot)
  std::int32_t* tokens;        ///< [B,K] emitted tokens
  std::int32_t* last_label;    ///< [B,K] transducers: last token (-1: none); CTC: last label, blank included
  std::uint64_t* hash;         ///< [B,K] hash of the emitted tokens
  std::uint64_t* prefix_hash;  ///< [B,K] hash before the last emitted token
  std::int32_t* next_time;     ///< [B,K] transducers: the frame the hypothesis is on
  std::int32_t* on_frame;      ///< [B,K] transducers: labels emitted on the current frame
  std::int32_t* overflow;      ///< [B] set when an utterance ran out of entries
  // Staging for the two-phase updates, [B,K] each.
  float* staged_score;
  std::int32_t *staged_tokens, *staged_last_label, *staged_next_time, *staged_on_frame;
  std::uint64_t *staged_hash, *staged_prefix_hash;
};

ASRDEC_HD_INLINE std::int64_t beam_slot(const BeamHypsRef& h, std::int64_t b, std::int32_t k) { return b * h.beam + k; }

/** Utterance b starts over: slot 0 empty with score 0, the other slots dead. */
ASRDEC_HD_INLINE void beam_clear(const BeamHypsRef& h, std::int64_t b) {
  for (std::int32_t k = 0; k < h.beam; ++k) {
    const std::int64_t s = beam_slot(h, b, k);
    h.scores[s] = k == 0 ? 0.0f : -__builtin_huge_valf();
    h.steps[s] = 0;
    h.tokens[s] = 0;
    h.last_label[s] = -1;
    h.hash[s] = 0;
    h.prefix_hash[s] = 0;
    h.next_time[s] = 0;
    h.on_frame[s] = 0;
  }
  h.overflow[b] = 0;
}

/** Whether `label` from a hypothesis whose last label is `parent_last` emits a token. */
ASRDEC_HD_INLINE bool beam_emits(const BeamHypsRef& h, std::int32_t label, std::int32_t parent_last) {
  return label >= 0 && label != h.blank && (h.kind != BeamKind::ctc || label != parent_last);
}

/** Phase 1 of adding a step's results: slot k of utterance b becomes `parent`'s hypothesis extended by `label`
 *  with total score `score` (TDT: and `duration`); `logprob` is the label's acoustic log-probability on the frame it
 *  was emitted on (the log-softmax of its column, without LM, boosting or blank-scoring terms), which the results
 *  report as the token's token_scores entry (pass 0 for blank and -1). Writes the new entry and stages the slot's
 *  state. Every slot of
 *  an utterance must take part in every step it takes (-1 for "no change"): entry i of a slot points at entry i-1
 *  of its parent's row, so rows that fell behind would overwrite entries other slots still point at. */
ASRDEC_HD_INLINE void beam_stage_result(const BeamHypsRef& h, std::int64_t b, std::int32_t k, std::int32_t parent,
                                        std::int32_t label, float score, std::int32_t duration, float logprob) {
  const std::int64_t s = beam_slot(h, b, k);
  const std::int64_t p = beam_slot(h, b, parent);
  const std::int32_t step = h.steps[p];
  const bool real = beam_emits(h, label, h.last_label[p]);
  std::int32_t time = h.next_time[p];
  std::int32_t on_frame = h.on_frame[p];
  if (h.kind == BeamKind::rnnt) {
    time += label == h.blank ? 1 : 0;
    on_frame = label == h.blank ? 0 : on_frame + (real ? 1 : 0);
  } else if (h.kind == BeamKind::tdt) {
    const std::int32_t jump = label < 0 ? 0 : duration;
    time += jump;
    on_frame = jump > 0 ? 0 : on_frame + (real ? 1 : 0);
  } else if (h.kind == BeamKind::windowed) {
    const std::int32_t jump = label < 0 ? 0 : duration;
    time += jump;
    on_frame = (jump > 0 ? 0 : on_frame) + (real ? 1 : 0);
  }
  h.staged_score[s] = score;
  h.staged_tokens[s] = h.tokens[p] + (real ? 1 : 0);
  h.staged_hash[s] = real ? beam_hash_extend(h.hash[p], label) : h.hash[p];
  h.staged_prefix_hash[s] = real ? h.hash[p] : h.prefix_hash[p];
  h.staged_last_label[s] =
      h.kind == BeamKind::ctc ? (label >= 0 ? label : h.last_label[p]) : (real ? label : h.last_label[p]);
  h.staged_next_time[s] = time;
  h.staged_on_frame[s] = on_frame;
  if (step >= h.capacity) {
    h.overflow[b] = 1;
    return;
  }
  const std::int64_t at = s * h.capacity + step;
  h.labels[at] = label;
  h.parents[at] = parent;
  h.logprobs[at] = logprob;
  // Timestamps: CTC the step (frame); TDT the frame the label was emitted on, before its duration (as greedy);
  // RNN-T and windowed the frame the hypothesis is on after the label (a token does not move an RNN-T hypothesis).
  h.timestamps[at] = h.kind == BeamKind::ctc ? step : (h.kind == BeamKind::tdt ? h.next_time[p] : time);
  if (h.kind == BeamKind::tdt) h.durations[at] = label >= 0 ? duration : 0;  // allocated for TDT only
}

/** Phase 2 of adding a step's results. */
ASRDEC_HD_INLINE void beam_commit_result(const BeamHypsRef& h, std::int64_t b, std::int32_t k) {
  const std::int64_t s = beam_slot(h, b, k);
  h.scores[s] = h.staged_score[s];
  h.tokens[s] = h.staged_tokens[s];
  h.hash[s] = h.staged_hash[s];
  h.prefix_hash[s] = h.staged_prefix_hash[s];
  h.last_label[s] = h.staged_last_label[s];
  h.next_time[s] = h.staged_next_time[s];
  h.on_frame[s] = h.staged_on_frame[s];
  if (h.steps[s] < h.capacity) h.steps[s] += 1;
}

/** Whether slots i and j hold the same hypothesis: equal hash, last label and token count (TDT and windowed: and
 *  frame). */
ASRDEC_HD_INLINE bool beam_same_hypothesis(const BeamHypsRef& h, std::int64_t i, std::int64_t j) {
  return h.hash[i] == h.hash[j] && h.last_label[i] == h.last_label[j] && h.tokens[i] == h.tokens[j] &&
         ((h.kind != BeamKind::tdt && h.kind != BeamKind::windowed) || h.next_time[i] == h.next_time[j]);
}

/** Phase 1 of recombination: the score slot k of utterance b keeps. Of each group of equal hypotheses the first
 *  slot with the highest score survives, with the log-sum-exp of the group's scores (CTC: their maximum, unless
 *  `ctc_log_add`); the others die (-inf). */
ASRDEC_HD_INLINE void beam_stage_recombination(const BeamHypsRef& h, std::int64_t b, std::int32_t k,
                                               bool ctc_log_add = false) {
  const std::int64_t s = beam_slot(h, b, k);
  const float mine = h.scores[s];
  float best = mine;
  bool survives = true;
  for (std::int32_t j = 0; j < h.beam; ++j) {
    const std::int64_t o = beam_slot(h, b, j);
    if (j == k || !beam_same_hypothesis(h, s, o)) continue;
    const float other = h.scores[o];
    if (other > mine || (other == mine && j < k)) survives = false;
    if (other > best) best = other;
  }
  if (!survives) {
    h.staged_score[s] = -__builtin_huge_valf();
    return;
  }
  if ((h.kind == BeamKind::ctc && !ctc_log_add) || best == -__builtin_huge_valf()) {
    h.staged_score[s] = best;
    return;
  }
  // In slot order, with exp and log that round alike on the host and the device, so that every executor keeps the
  // same bits (a merged score can meet a pruning threshold exactly).
  float sum = 0.0f;
  for (std::int32_t j = 0; j < h.beam; ++j) {
    const std::int64_t o = beam_slot(h, b, j);
    if (j != k && !beam_same_hypothesis(h, s, o)) continue;
    sum += detail::portable_exp(h.scores[o] - best);
  }
  h.staged_score[s] = best + detail::portable_log(sum);
}

/** Phase 2 of recombination. */
ASRDEC_HD_INLINE void beam_commit_recombination(const BeamHypsRef& h, std::int64_t b, std::int32_t k) {
  const std::int64_t s = beam_slot(h, b, k);
  h.scores[s] = h.staged_score[s];
}

}  // namespace asrdec
