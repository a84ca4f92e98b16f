#pragma once
/**
 * @file
 * Batched greedy and beam search for attention encoder-decoder (AED) models (Canary- or Whisper-style Transformer
 * decoders) with NGPU-LM shallow fusion and phrase boosting. The caller supplies the decoder network as an
 * AedDecoderStep (asrdec/aed/aed_step.hpp; asrdec/aed/tiny_transformer.hpp is a built-in one) and the encoder
 * output; asrdec runs the search. docs/aed.md has the rules and the differences from NeMo.
 *
 * Every generated token v of a hypothesis scores
 *   step log-probability + lm_weight × ln p_LM(v | history) + boost_weight × boost(v | state),
 * where the LM and the boosting tree start at `<s>` / the phrase list's root (prompt tokens are not fed to them) and
 * move on every generated token. End of sentence (eos_id) is scored by each fused model's final weight of the
 * current state (the LM's ln p(</s> | state), resolved through backoffs at load), and the states stay.
 *
 * Greedy: each utterance takes the fused argmax (the lowest id on ties) until eos or its length limit.
 * Beam (beam_size K): the first step keeps the K best tokens; each later step ranks, for every utterance, the
 * finished hypotheses (as they are) and every one-token extension of the live ones by
 *   score / lp(length of the parent),  lp(n) = ((5 + n) / 6) ^ length_penalty  (GNMT; 1 when length_penalty = 0),
 * where a hypothesis' length is 1 + its prompt + its generated tokens without eos (NeMo's count), and keeps the K
 * best (ties: the lower slot, then the lower token). A hypothesis ending in eos, or reaching its length limit, is
 * finished. The search of an utterance ends when its K hypotheses are finished; they are ranked by
 * score / lp(length). Hypothesis::score is the raw sum (am_score + lm_score + boost_score) and
 * Hypothesis::ranking_score the normalised one. eos is never part of Hypothesis::tokens.
 *
 * Length limit of utterance b (generated tokens, eos included): the least of max_new_tokens (when > 0),
 * step.max_positions() − P_b, and encoder_lengths[b] + max_length_delta − P_b (when max_length_delta ≥ 0).
 *
 * Results: tokens; timestamps = the position each token was generated at, counted from 0 after the prompt;
 * token_scores = each token's step log-probability and token_confidences = exp(token_scores) (greedy); am_score,
 * lm_score, boost_score as above.
 *
 * Devices: the search and the fused models run on the CPU. The step may live on the CPU or a CUDA device; for a
 * CUDA step each call's row arrays are copied to the device, the step runs on the caller's stream, and its scores
 * [rows, V] come back to pinned host memory (one copy and one synchronisation per step). A search on the device,
 * captured in CUDA graphs with the step, is planned (docs/aed.md).
 * Thread safety: a decoder has one owner at a time.
 */

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "asrdec/aed/aed_step.hpp"
#include "asrdec/core/export.hpp"
#include "asrdec/core/stream.hpp"
#include "asrdec/core/tensor.hpp"
#include "asrdec/hyps/hypothesis.hpp"
#include "asrdec/lm/boosting_tree.hpp"
#include "asrdec/lm/ngram_lm.hpp"

namespace asrdec {

enum class AedSearch { greedy, beam };

struct ASRDEC_API AedDecoderConfig {
  AedSearch search = AedSearch::greedy;
  /** K, beam search only; 1 ≤ K ≤ kMaxBeam. */
  std::int32_t beam_size = 4;
  static constexpr std::int32_t kMaxBeam = 256;
  /** The GNMT length-penalty exponent of beam ranking (NeMo's length_penalty; 0 ranks by the raw score). */
  float length_penalty = 0.0f;
  /** The end-of-sentence token; required (≥ 0, below the step's V). */
  std::int32_t eos_id = -1;
  /** At most this many generated tokens per utterance (0: no limit of its own). */
  std::int32_t max_new_tokens = 0;
  /** ≥ 0: at most encoder_length + max_length_delta − prompt length tokens (NeMo's max_generation_delta, but from
   *  each utterance's own encoder length, not the batch's padded one); -1: off. */
  std::int32_t max_length_delta = -1;
  /** Shallow fusion of a token-level n-gram LM over the step's V tokens (special tokens the LM does not list score
   *  as <unk>), or none; a CPU LM (the search runs on the CPU). */
  std::shared_ptr<const NgramLm> lm;
  float lm_weight = 0.0f;
  /** Phrase boosting over the step's V tokens (utterance b uses phrase list b, or list 0 when there is one); a CPU
   *  tree. */
  std::shared_ptr<const BoostingTree> boost;
  float boost_weight = 1.0f;
  /** Reject NaN and +inf log-probabilities from the step (one comparison per score). */
  bool check_values = true;

  /** Throws InvalidArgument for a bad value (beam_size, eos_id < 0, negative max_new_tokens, max_length_delta
   *  below -1, a non-finite weight or length_penalty). */
  void validate() const;
  std::string to_string() const;
};

class ASRDEC_API AedDecoder {
 public:
  /** Throws InvalidArgument for a bad config, a null step, an eos_id outside the step's V, or fused models that are
   *  not CPU models or have another V; Unsupported for a CUDA step in a build without CUDA. */
  AedDecoder(std::shared_ptr<const AedDecoderStep> step, AedDecoderConfig config);
  ~AedDecoder();
  AedDecoder(AedDecoder&&) noexcept;
  AedDecoder& operator=(AedDecoder&&) noexcept;

  /** Decodes a batch: `encoder` [B, T, D] on the step's device (handed to the step; for a CUDA step, ordered on
   *  `stream`, which is synchronised), `encoder_lengths` [B] (int32 or int64, host) in [0, T], `prompts` one token list
   * per utterance or one list for all (each non-empty, tokens in [0, V), shorter than max_positions). Returns the best
   * hypothesis of each utterance. Throws InvalidArgument for bad shapes, lengths or prompts, NaN/+inf step scores
   * (check_values) or a boosting tree whose phrase lists do not fit the batch. */
  std::vector<Hypothesis> decode(const TensorView& encoder, const TensorView& encoder_lengths,
                                 const std::vector<std::vector<std::int32_t>>& prompts, StreamHandle stream = nullptr);
  /** As decode(), with every utterance's final hypotheses, best first (beam: K of them; greedy: one). */
  std::vector<std::vector<Hypothesis>> decode_nbest(const TensorView& encoder, const TensorView& encoder_lengths,
                                                    const std::vector<std::vector<std::int32_t>>& prompts,
                                                    StreamHandle stream = nullptr);

  const AedDecoderConfig& config() const;
  const AedDecoderStep& step() const;

  struct Impl;

 private:
  std::unique_ptr<Impl> impl_;
};

}  // namespace asrdec
