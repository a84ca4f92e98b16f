// Algorithm 1 of the label-looping paper, one utterance at a time: the oracle. It shares only the primitives
// (joint evaluation, predictor step) with the decoders, not their control flow or step functions.

#include "asrdec/core/error.hpp"
#include "transducer/greedy_backend.hpp"

namespace asrdec {

std::vector<Hypothesis> transducer_greedy_reference(const TransducerModel& model, const TensorView& enc_proj,
                                                    const TensorView& lengths, std::int32_t max_symbols) {
  ASRDEC_CHECK_ARG(model.device().is_cpu(), "the reference decoder needs a CPU model, got one on ",
                   model.device().to_string());
  ASRDEC_CHECK_ARG(max_symbols >= 1, "max_symbols_per_frame must be at least 1, got ", max_symbols);
  const detail::GreedyProblem p = detail::make_greedy_problem(model, enc_proj, lengths, nullptr);
  const bool tdt = model.type() == TransducerType::tdt;
  const std::int32_t blank = model.blank_id();
  detail::JointCpu joint(model.joint().impl(), model.vocab_size() + 1, model.durations(), model.blank_id());
  std::unique_ptr<PredictorSession> session = model.predictor().start_session(1);
  std::vector<float> state(static_cast<std::size_t>(model.predictor().state_size()));
  std::vector<float> dec(static_cast<std::size_t>(model.joint_hidden()));
  const std::int32_t one = 1;

  std::vector<Hypothesis> out(static_cast<std::size_t>(p.batch));
  for (std::int64_t b = 0; b < p.batch; ++b) {
    Hypothesis& hyp = out[static_cast<std::size_t>(b)];
    // Start symbol: the blank, from the initial state.
    session->initial_state(state.data(), 1, nullptr);
    session->step(&blank, &one, state.data(), dec.data(), 1, nullptr);
    const std::int32_t length = p.lengths[static_cast<std::size_t>(b)];
    std::int32_t t = 0;
    std::int32_t on_frame = 0;  // labels emitted on frame t so far
    while (t < length) {
      const detail::JointChoice c = joint.evaluate(p.enc, b, t, dec.data(), true);
      std::int32_t step;
      if (c.label == blank) {
        step = tdt ? std::max(c.duration, 1) : 1;
      } else {
        hyp.tokens.push_back(c.label);
        hyp.timestamps.push_back(t);
        if (tdt) hyp.durations.push_back(c.duration);
        hyp.token_scores.push_back(c.score);
        hyp.token_confidences.push_back(c.confidence);
        hyp.score += c.score;
        session->step(&c.label, &one, state.data(), dec.data(), 1, nullptr);
        step = tdt ? c.duration : 0;
        if (step == 0 && ++on_frame >= max_symbols) {
          step = 1;  // max_symbols labels on this frame: move on without another joint evaluation
        }
      }
      if (step > 0) {
        on_frame = 0;
      }
      t += step;
    }
    hyp.am_score = hyp.score;
  }
  return out;
}

}  // namespace asrdec
