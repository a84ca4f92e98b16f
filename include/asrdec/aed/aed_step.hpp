#pragma once
/**
 * @file
 * The decoder network of an attention encoder-decoder (AED) model, as asrdec's AED search sees it: something that,
 * given the last token of each hypothesis and its position, returns the log-probabilities of the next token. The
 * engine (TensorRT, ONNX Runtime, libtorch) owns the network and its cache; asrdec owns the search (greedy or beam,
 * n-gram LM and phrase-boosting fusion, end of sentence, maximum length).
 *
 * Split in two, like the transducer predictor (asrdec/transducer/predictor.hpp): AedDecoderStep is the immutable
 * network, shareable across threads; AedStepSession holds one decoder's scratch memory and cache.
 *
 * Rows. A call of step() works on `rows` hypotheses. Row r continues row parents[r] of the previous call (of
 * start() for the first step, where rows are utterances), so the session reorders its cache by `parents` (a
 * gather, or an indirection in a paged cache) before it appends tokens[r] at position positions[r]. Rows with
 * active[r] == 0 are finished hypotheses kept for ranking: their scores are ignored and their cache is never read
 * again, so a session may skip them. The parent of an active row was active (or is an utterance of start()).
 */

#include <cstdint>
#include <memory>
#include <vector>

#include "asrdec/core/device.hpp"
#include "asrdec/core/export.hpp"
#include "asrdec/core/stream.hpp"
#include "asrdec/core/tensor.hpp"

namespace asrdec {

class ASRDEC_API AedStepSession {
 public:
  virtual ~AedStepSession() = default;

  /** Starts a batch: `encoder` is the decode call's encoder output ([batch, T, D], on the step's device, passed
   *  through unread by asrdec) with `encoder_lengths` ([batch], host int64, each in [0, T]); prompts[b] (host, at
   *  least one token, e.g. bos and task tokens) is fed at positions 0 .. P_b-1. Writes into `scores` ([batch, V]
   *  fp32 on the step's device) the log-probabilities of the first generated token of each utterance. */
  virtual void start(const TensorView& encoder, const std::int64_t* encoder_lengths,
                     const std::vector<std::vector<std::int32_t>>& prompts, float* scores, StreamHandle stream) = 0;

  /** One step of `rows` rows (see the file comment). All arrays ([rows]) and `scores` ([rows, V] fp32, the
   *  log-probabilities of each active row's next token) are on the step's device. For CUDA the step must only
   *  enqueue work on `stream`, never synchronise or allocate, so that a decoder can capture it into a CUDA graph.
   *  `rows` never exceeds the max_rows of start_session(). */
  virtual void step(const std::int32_t* parents, const std::int32_t* tokens, const std::int32_t* positions,
                    const std::int32_t* active, std::int64_t rows, float* scores, StreamHandle stream) = 0;
};

class ASRDEC_API AedDecoderStep {
 public:
  virtual ~AedDecoderStep() = default;
  virtual Device device() const = 0;
  /** V: the number of output tokens, special tokens (bos, eos, task tags) included. */
  virtual std::int64_t vocab_size() const = 0;
  /** Positions 0 .. max_positions()-1 can be fed (the prompt's included). */
  virtual std::int64_t max_positions() const = 0;
  /** A session for calls of up to `max_rows` rows (utterances × beam). Thread-safe. */
  virtual std::unique_ptr<AedStepSession> start_session(std::int64_t max_rows) const = 0;
};

}  // namespace asrdec
