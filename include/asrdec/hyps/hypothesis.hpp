#pragma once
/**
 * @file
 * The host-side result every decoder returns for one utterance. The fields mean the same for every decoder
 * (docs/results.md has the table): scores are natural-log probabilities, token_scores per-token log-probabilities,
 * timestamps the frame a token was emitted on. Fields a decoder does not produce stay empty (durations outside
 * TDT; token_scores and token_confidences in attention-decoder beam search). Beam search reports token scores
 * along the hypothesis' own path, the alignment that survived every merge.
 */

#include <cstdint>
#include <vector>

#include "asrdec/core/export.hpp"

namespace asrdec {

struct ASRDEC_API Hypothesis {
  std::vector<std::int32_t> tokens;      ///< token ids, blank never included
  std::vector<std::int32_t> timestamps;  ///< frame each token was emitted on (CTC: the first frame of its run)
  std::vector<std::int32_t> durations;   ///< TDT: predicted duration of each token (end frame = timestamp + it)
  std::vector<float> token_scores;       ///< acoustic log-probability of each token where it was emitted
  std::vector<float> token_confidences;  ///< exp(token_scores), or a NeMo measure (transducer greedy), in [0, 1]
  float score = 0.0f;                    ///< log-probability: am_score + lm_score + boost_score
  float ranking_score = 0.0f;            ///< what N-best lists are sorted by: score, or score / (tokens + 1)
  float am_score = 0.0f;                 ///< acoustic log-probability (beam search: with its blank-scoring terms)
  float lm_score = 0.0f;                 ///< language-model part of score (weighted)
  float boost_score = 0.0f;              ///< phrase/word boosting part of score (weighted)
  bool is_final = true;                  ///< false for a partial streaming result
};

/** Keeps the first (best-ranked) hypothesis of each transcript (token sequence) of an N-best list, in order. Beam
 *  search keeps hypotheses apart that differ only in alignment (TDT: the frame; CTC: whether the last label was
 *  blank), so an N-best list can repeat a transcript; the beam decoders call this unless their config's
 *  unique_transcripts is false. */
ASRDEC_API void drop_repeated_transcripts(std::vector<Hypothesis>& nbest);

/** The other timestamp convention, for tools that report it: the frame the search moved to after each token,
 *  timestamps[i] + durations[i] for TDT (NeMo's TDT beam search before its conversion to start frames, and asrdec 0.1's
 *  TDT beam search) and timestamps[i] + 1 otherwise. */
ASRDEC_API std::vector<std::int32_t> token_end_frames(const Hypothesis& hypothesis);

}  // namespace asrdec
