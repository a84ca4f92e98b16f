#pragma once
// Shallow fusion of an n-gram LM and/or a phrase-boosting tree into greedy decoding, the rules shared by the CPU
// loops and the CUDA kernels. Fusion never scores blank and never decides blank versus non-blank: only once the
// acoustic model has chosen a non-blank token is the token re-chosen among the non-blank ones by acoustic score + the
// fusion bonus.
//
// Token ids: decoders speak in model columns (V + 1 of them, the blank at any column); the LM and the boosting tree
// speak in their own V token ids. The one mapping between them removes the blank's column: column c is fusion id c
// for c < blank and c - 1 after it. A blank-last model (NeMo's) maps every token to itself; a blank-first model
// (wav2vec2, icefall) maps column c to c - 1. Every function below that takes a `token` takes a model column.

#include <cstdint>

#include "asrdec/detail/hd.hpp"
#include "asrdec/detail/rounded.hpp"

namespace asrdec::detail {

/** weight * score, rounded once. On the device the product is kept out of fused multiply-adds so that
 *  `acoustic + weighted(...)` rounds exactly as on the CPU. */
ASRDEC_HD_INLINE float weighted(float weight, float score) { return rounded_mul(weight, score); }

/** One fused model's per-utterance side of a greedy decode (an n-gram LM or a boosting tree), struct-of-arrays
 *  over the batch. `scores`/`next` hold the full-vocabulary query of each utterance's current `state` (row
 *  stride V); `scores == nullptr` when the model is absent. */
/** The LM/tree id of model column `column`, which is not the blank. */
ASRDEC_HD_INLINE std::int32_t fusion_id(std::int32_t column, std::int32_t blank) {
  return column > blank ? column - 1 : column;
}

/** The model column of LM/tree id `id`: the inverse of fusion_id. */
ASRDEC_HD_INLINE std::int32_t fusion_column(std::int32_t id, std::int32_t blank) { return id >= blank ? id + 1 : id; }

struct FusionSource {
  const float* scores = nullptr;       ///< [B, V] score of each token from the current state
  const std::int32_t* next = nullptr;  ///< [B, V] the state each token leads to
  std::int32_t* state = nullptr;       ///< [B] current state
  float* total = nullptr;              ///< [B] sum of the weighted scores of the emitted tokens
  float weight = 0.0f;                 ///< α for the LM, β for boosting
};

/** What a decoder fuses: an n-gram LM, a boosting tree, both or neither, over the same V tokens. */
struct FusionRef {
  FusionSource lm;
  FusionSource boost;
  std::int32_t vocab = 0;  ///< V
  /** The model's blank column. The default (after every token) maps each column to itself, as blank = V does. */
  std::int32_t blank = 0x7fffffff;

  ASRDEC_HD_INLINE bool active() const { return lm.scores != nullptr || boost.scores != nullptr; }
};

ASRDEC_HD_INLINE float weighted_or_zero(const FusionSource& source, std::int64_t at) {
  return source.scores != nullptr ? weighted(source.weight, source.scores[at]) : 0.0f;
}

/** What fusion adds to token's acoustic score for utterance b: α·LM + β·boost, the two products summed first
 *  (an absent model adds 0, which leaves the other's product unchanged). */
ASRDEC_HD_INLINE float fusion_bonus(const FusionRef& f, std::int64_t b, std::int32_t token) {
  const std::int64_t at = b * f.vocab + fusion_id(token, f.blank);
  return weighted_or_zero(f.lm, at) + weighted_or_zero(f.boost, at);
}

ASRDEC_HD_INLINE void fusion_emit(const FusionSource& source, std::int64_t b, std::int64_t at) {
  if (source.scores == nullptr) return;
  source.total[b] += weighted(source.weight, source.scores[at]);
  source.state[b] = source.next[at];
}

/** A decode of utterance b starts: the fused models' totals go back to 0. */
ASRDEC_HD_INLINE void fusion_reset_totals(const FusionRef& f, std::int64_t b) {
  if (f.lm.total != nullptr) f.lm.total[b] = 0.0f;
  if (f.boost.total != nullptr) f.boost.total[b] = 0.0f;
}

/** The boosting state utterance b of a batch starts in: the root of list b, or of list 0 when there is one list
 *  (`roots`: BoostingTree::list_roots()). */
ASRDEC_HD_INLINE std::int32_t boost_start_state(const std::int32_t* roots, std::int64_t lists, std::int64_t b) {
  return roots[lists == 1 ? 0 : b];
}

/** Utterance b emitted `token`: each fused model adds its weighted score and moves its state on. */
ASRDEC_HD_INLINE void fusion_emit(const FusionRef& f, std::int64_t b, std::int32_t token) {
  const std::int64_t at = b * f.vocab + fusion_id(token, f.blank);
  fusion_emit(f.lm, b, at);
  fusion_emit(f.boost, b, at);
}

/** Beam search: the next state and total of hypothesis slot s are slot `from`'s, moved on by `token` when it is a
 *  token (token < 0: not moved), read from `from`'s full-vocabulary query in `source` (row stride f.vocab). */
ASRDEC_HD_INLINE void fusion_take(const FusionRef& f, const FusionSource& source, std::int32_t* next_state,
                                  float* next_total, std::int64_t s, std::int64_t from, std::int32_t token) {
  next_state[s] = source.state[from];
  next_total[s] = source.total[from];
  if (token < 0 || source.scores == nullptr) return;
  const std::int64_t at = from * f.vocab + fusion_id(token, f.blank);
  next_total[s] += weighted(source.weight, source.scores[at]);
  next_state[s] = source.next[at];
}

}  // namespace asrdec::detail
