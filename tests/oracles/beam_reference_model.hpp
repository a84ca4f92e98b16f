#pragma once
// Internal: what the transducer beam-search oracles (ALSD++, AES++) share — a hypothesis holding its whole
// transcript, and the model primitives (joint log-probabilities, predictor step, one-token LM and boosting queries,
// the fused label score written out from the paper's equations). Nothing here is shared with the batched executors
// except joint evaluation, the predictor and log-softmax.

#include <cstdint>
#include <memory>
#include <utility>
#include <vector>

#include "asrdec/transducer/beam_decoder.hpp"
#include "transducer/greedy/greedy_backend.hpp"

namespace asrdec::detail {

struct RefHyp {
  std::vector<std::int32_t> tokens, timestamps, durations;
  float score = 0.0f;
  float lm_total = 0.0f, boost_total = 0.0f;
  std::int32_t frame = 0;     // the frame the hypothesis is on
  std::int32_t on_frame = 0;  // tokens emitted on that frame
  std::vector<float> state, dec;
  std::int32_t lm_state = 0, boost_state = 0;
};

class ReferenceBeamModel {
 public:
  /** `blank_clamp`: eps of lm_weighted_full blank scoring. */
  ReferenceBeamModel(const TransducerModel& model, const TransducerBeamConfig& config, float blank_clamp);

  std::int32_t blank() const { return model_.blank_id(); }
  /** The empty hypothesis of utterance b of `batch`, after the start symbol. */
  RefHyp start(std::int64_t b, std::int64_t batch);
  /** Log-softmax of the labels (V+1) and, for TDT, of the durations of hypothesis h on frame t of utterance b. */
  std::pair<std::vector<float>, std::vector<float>> log_probs(const TransducerInput& p, std::int64_t b, std::int32_t t,
                                                              const RefHyp& h);
  /** The fused score of label v after h (the beam-search paper's equations 2 and 3). */
  float label_score(const RefHyp& h, const std::vector<float>& logp, std::int32_t v) const;
  /** h emits token v: the LM and the tree add their weighted scores and move on, the predictor steps. */
  void emit(RefHyp& h, std::int32_t v);
  /** The acoustic log-probability of each token of a path of utterance b where it was emitted: the log-softmax of
   *  its column on frame timestamps[i] after tokens[0..i) (the token scores beam search reports). */
  std::vector<float> token_logprobs(const TransducerInput& p, std::int64_t b, const std::vector<std::int32_t>& tokens,
                                    const std::vector<std::int32_t>& timestamps);
  /** The beam of utterance b as results, ranked as the decoders rank it, with token scores replayed
   *  (token_logprobs). */
  std::vector<Hypothesis> ranked(std::vector<RefHyp> beam, const TransducerInput& p, std::int64_t b);

 private:
  bool fused() const { return config_.lm != nullptr || config_.boost != nullptr; }
  float lambda() const;

  const TransducerModel& model_;
  const TransducerBeamConfig& config_;
  float blank_clamp_;
  JointCpu joint_;
  std::unique_ptr<PredictorSession> session_;
};

/** ln(e^a + e^b), -inf when both are (prefix search in the oracles). */
float reference_log_add(float a, float b);

/** The WIND beam-search oracle for utterance b. */
std::vector<Hypothesis> wind_beam_reference(ReferenceBeamModel& scorer, const TransducerBeamConfig& config,
                                            const TransducerInput& p, std::int64_t b);

/** The AES++ oracle for utterance b. */
std::vector<Hypothesis> aes_reference(ReferenceBeamModel& scorer, const TransducerBeamConfig& config,
                                      const TransducerInput& p, std::int64_t b);

}  // namespace asrdec::detail
