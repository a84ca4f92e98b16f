#pragma once
// Per-element rules of greedy transducer decoding, shared by the CPU executor (a loop over the batch) and the
// CUDA executor (a thread per utterance). The heavy parts — joint evaluation and predictor steps — are separate
// primitives; these functions only move each utterance's state machine. Semantics: see
// docs/transducer-greedy.md (label looping and frame looping give identical outputs).

#include <cstdint>

#include "asrdec/detail/argmax.hpp"
#include "asrdec/detail/hd.hpp"
#include "asrdec/hyps/hyps_ref.hpp"

namespace asrdec::detail {

/** Limits of the transducer configs. Labels per frame size every hypothesis store (frames × max_symbols + 1 entries
 *  per utterance), and a window sizes the joint rows of every step (batch × window): bounded, a config cannot ask
 *  for unbounded memory or time. Models emit a few labels per frame; the WIND paper's windows are 1–16. */
constexpr std::int32_t kMaxSymbolsPerFrame = 100;
constexpr std::int32_t kMaxWindow = 64;

/** The outcome of one joint evaluation for one utterance (after WIND selection, if any). */
struct JointChoice {
  std::int32_t label;     ///< argmax over the V+1 token columns (blank included), first maximum
  std::int32_t duration;  ///< TDT: durations[argmax over the duration columns]; 0 for RNN-T
  std::int32_t offset;    ///< WIND: window position of the choice (frames skipped before it); 0 otherwise
  float token_logprob;    ///< log-softmax of the label over the V+1 token columns (blank included)
  float confidence;       ///< max-prob confidence: exp(token_logprob)
  /** What the choice adds to the path's log-probability: token_logprob (TDT: plus the log-softmax of the duration
   *  over the duration columns), and for WIND the blanks of the window positions before the choice. Window
   *  positions at or past the utterance's end add nothing: they are not frames of the utterance. */
  float step_logprob;
};

/** The label of an argmax over the token columns: a row where nothing compared (every logit NaN, possible only
 *  when invalid inputs are not rejected) counts as blank rather than yielding an out-of-range id. */
ASRDEC_HD_INLINE std::int32_t label_or_blank(ArgMax best, std::int32_t blank) {
  return best.index == argmax_identity().index ? blank : best.index;
}

/** The index of the duration argmax, 0 when nothing compared. */
ASRDEC_HD_INLINE std::int32_t duration_index_or_first(ArgMax best) {
  return best.index == argmax_identity().index ? 0 : best.index;
}

struct GreedyRules {
  std::int32_t blank;
  std::int32_t max_symbols;
  bool tdt;
  bool cut_stragglers = true;  ///< label looping: label_looping_cut_stragglers applies (off: a diagnostic baseline)
};

/** Frames to move after a joint evaluation: RNN-T moves one frame on blank and stays on a label; TDT moves by
 *  the predicted duration, where a blank of duration 0 counts as 1 (it would otherwise loop forever). */
ASRDEC_HD_INLINE std::int32_t time_advance(const GreedyRules& rules, std::int32_t label, std::int32_t duration) {
  if (!rules.tdt) {
    return label == rules.blank ? 1 : 0;
  }
  return (label == rules.blank && duration == 0) ? 1 : duration;
}

/** False for NaN and ±inf (x - x is 0 only for finite x): the check on every encoder value that is read. */
ASRDEC_HD_INLINE bool is_finite_value(float x) { return x - x == 0.0f; }

/** The frame a joint evaluation reads: the current one clamped to the utterance's last frame, and frame 0 for an
 *  empty utterance (never -1), whose evaluations are masked anyway. */
ASRDEC_HD_INLINE std::int32_t safe_frame(std::int32_t time, std::int32_t length) {
  const std::int32_t last = length > 0 ? length - 1 : 0;
  return time < last ? time : last;
}

/** WIND: among the choices for window positions 0..W-1 of one utterance, the first non-blank, else the last. */
ASRDEC_HD_INLINE std::int32_t wind_pick(const std::int32_t* labels, std::int32_t window, std::int32_t blank) {
  for (std::int32_t w = 0; w < window; ++w) {
    if (labels[w] != blank) {
      return w;
    }
  }
  return window - 1;
}

/** The state machine of one utterance, struct-of-arrays over the batch. */
struct GreedyStateRef {
  const std::int32_t* lengths;
  std::int32_t* time;
  std::int32_t* active;
  std::int32_t* active_at_start;  ///< label looping: active when the outer iteration began
  std::int32_t* advance;          ///< label looping: still looking past blanks; frame looping: on the frame
  std::int32_t* label;
  std::int32_t* label_time;
  std::int32_t* label_duration;
  float* label_score;
  float* label_confidence;
  std::int32_t* emit;              ///< a label is stored and the predictor steps on it in this iteration
  std::int32_t* symbols_on_frame;  ///< frame looping: labels emitted on the current frame
};

// ---- label looping (Algorithm 3 of the label-looping paper; TDT and WIND variants) -----------------------

/** Start of a decode: `start` is 0, or the TDT overshoot carried over from the previous chunk. */
ASRDEC_HD_INLINE void label_looping_begin(const GreedyStateRef& s, std::int64_t b, std::int32_t start) {
  s.time[b] = start;
  s.active[b] = start < s.lengths[b] ? 1 : 0;
  s.advance[b] = 0;
  s.emit[b] = 0;
  s.label[b] = -1;
}

/** First joint evaluation of an outer iteration, already made at safe_frame(time) for every utterance. */
ASRDEC_HD_INLINE void label_looping_first(const GreedyStateRef& s, const GreedyRules& rules, const HypsRef& hyps,
                                          std::int64_t b, const JointChoice& choice) {
  s.active_at_start[b] = s.active[b];
  if (!s.active[b]) {
    s.advance[b] = 0;
    return;
  }
  const std::int32_t time = s.time[b] + choice.offset;
  s.label[b] = choice.label;
  s.label_time[b] = time;
  s.label_duration[b] = choice.duration;
  s.label_score[b] = choice.token_logprob;
  s.label_confidence[b] = choice.confidence;
  hyps_add_step_logprob(hyps, b, choice.step_logprob);
  s.time[b] = time + time_advance(rules, choice.label, choice.duration);
  s.active[b] = s.time[b] < s.lengths[b] ? 1 : 0;
  s.advance[b] = (s.active[b] && choice.label == rules.blank) ? 1 : 0;
}

/** One step of the inner loop over blanks: only utterances still advancing take the new choice. */
ASRDEC_HD_INLINE void label_looping_inner(const GreedyStateRef& s, const GreedyRules& rules, const HypsRef& hyps,
                                          std::int64_t b, const JointChoice& choice) {
  if (!s.advance[b]) {
    return;
  }
  const std::int32_t time = s.time[b] + choice.offset;
  s.label[b] = choice.label;
  s.label_time[b] = time;
  s.label_duration[b] = choice.duration;
  s.label_score[b] = choice.token_logprob;
  s.label_confidence[b] = choice.confidence;
  hyps_add_step_logprob(hyps, b, choice.step_logprob);
  s.time[b] = time + time_advance(rules, choice.label, choice.duration);
  s.active[b] = s.time[b] < s.lengths[b] ? 1 : 0;
  s.advance[b] = (s.active[b] && choice.label == rules.blank) ? 1 : 0;
}

/** Whether the inner loop ends early for its stragglers: when no more than a quarter of the utterances active at the
 *  outer iteration's start still look past blanks (`advancing`, counted after first or an inner step), those pause
 *  (label_looping_pause) rather than hold every other utterance's predictor step for the slowest row's run of
 *  blanks; each goes on from the same frame, with the same predictor output, in the next outer iteration. Every
 *  utterance's joint evaluations, and so the results, are the same either way; only the passes differ (fewer inner
 *  passes, possibly more outer ones). With fewer than four utterances it never fires; rules.cut_stragglers = false
 *  (ASRDEC_CUT_STRAGGLERS=0) turns it off. */
ASRDEC_HD_INLINE bool label_looping_cut_stragglers(const GreedyRules& rules, std::int64_t advancing,
                                                   std::int64_t active_at_start) {
  return rules.cut_stragglers && advancing > 0 && 4 * advancing <= active_at_start;
}

/** A straggler's pause: it stops looking past blanks for this outer iteration; its last choice was a blank, so the
 *  store that follows emits nothing for it and its predictor does not step. */
ASRDEC_HD_INLINE void label_looping_pause(const GreedyStateRef& s, std::int64_t b) { s.advance[b] = 0; }

/** After the inner loop: store the label of every utterance that was active when the iteration began and
 *  found a non-blank (for TDT it may have jumped past the end meanwhile; the label still counts). */
ASRDEC_HD_INLINE void label_looping_store(const GreedyStateRef& s, const GreedyRules& rules, const HypsRef& hyps,
                                          std::int64_t b) {
  const bool emit = s.active_at_start[b] && s.label[b] != rules.blank;
  s.emit[b] = emit ? 1 : 0;
  if (emit) {
    hyps_append(hyps, b, s.label[b], s.label_time[b], s.label_duration[b], s.label_score[b], s.label_confidence[b]);
  }
}

/** After the predictor step: the max_symbols rule. An utterance that stored max_symbols consecutive labels on
 *  the frame it is still on moves to the next frame without a joint evaluation (a virtual blank). */
ASRDEC_HD_INLINE void label_looping_finish(const GreedyStateRef& s, const GreedyRules& rules, const HypsRef& hyps,
                                           std::int64_t b) {
  // A row out of capacity also moves on, so that a broken size invariant ends the decode (and is reported)
  // instead of looping forever.
  if (s.emit[b] && ((hyps.same_timestamp_count[b] >= rules.max_symbols && hyps.last_timestamp[b] == s.time[b]) ||
                    hyps.overflow[b])) {
    s.time[b] += 1;
  }
  s.active[b] = s.time[b] < s.lengths[b] ? 1 : 0;
}

// ---- frame looping (Algorithm 2): the batch walks the frames together ----------------------------------------

ASRDEC_HD_INLINE void frame_looping_begin(const GreedyStateRef& s, std::int64_t b, std::int32_t start) {
  label_looping_begin(s, b, start);
  s.symbols_on_frame[b] = 0;
}

/** Entering frame `frame`: utterances whose next frame it is take part in its symbol loop. */
ASRDEC_HD_INLINE void frame_looping_enter(const GreedyStateRef& s, std::int64_t b, std::int32_t frame) {
  s.advance[b] = (s.active[b] && s.time[b] == frame) ? 1 : 0;
  s.symbols_on_frame[b] = 0;
  s.emit[b] = 0;
}

/** One symbol step on the frame: a label is stored (and the predictor steps on it); the utterance leaves the
 *  frame on blank, on a TDT duration > 0, or after max_symbols labels. */
ASRDEC_HD_INLINE void frame_looping_step(const GreedyStateRef& s, const GreedyRules& rules, const HypsRef& hyps,
                                         std::int64_t b, const JointChoice& choice) {
  s.emit[b] = 0;
  if (!s.advance[b]) {
    return;
  }
  s.label[b] = choice.label;
  const std::int32_t time = s.time[b];
  std::int32_t step = time_advance(rules, choice.label, choice.duration);
  hyps_add_step_logprob(hyps, b, choice.step_logprob);
  if (choice.label != rules.blank) {
    s.emit[b] = 1;
    hyps_append(hyps, b, choice.label, time, choice.duration, choice.token_logprob, choice.confidence);
    s.symbols_on_frame[b] += 1;
    if (step == 0 && (s.symbols_on_frame[b] >= rules.max_symbols || hyps.overflow[b])) {
      step = 1;
    }
  }
  s.time[b] = time + step;
  s.active[b] = s.time[b] < s.lengths[b] ? 1 : 0;
  s.advance[b] = (step == 0) ? 1 : 0;
}

}  // namespace asrdec::detail
