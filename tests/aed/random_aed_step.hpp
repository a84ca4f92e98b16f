#pragma once
// A random AED decoder for tests: the log-probabilities of the next token are a pure function of (seed, utterance,
// prompt, whole generated prefix), so the oracle can ask for any prefix directly while the decoder's session must
// follow its rows' parents to know theirs. eos grows likelier with length, so hypotheses end.

#include <cstdint>
#include <memory>
#include <vector>

#include "asrdec/aed/aed_step.hpp"

namespace asrdec::testing {

class RandomAedStep final : public AedDecoderStep {
 public:
  RandomAedStep(std::uint64_t seed, std::int64_t vocab, std::int32_t eos, std::int64_t max_positions,
                float sharpness = 2.0f)
      : seed_(seed), vocab_(vocab), eos_(eos), max_positions_(max_positions), sharpness_(sharpness) {}

  /** The scores of the token after prompt + generated for `utterance`. */
  std::vector<float> logprobs(std::int64_t utterance, const std::vector<std::int32_t>& prompt,
                              const std::vector<std::int32_t>& generated) const;

  Device device() const override { return Device::cpu(); }
  std::int64_t vocab_size() const override { return vocab_; }
  std::int64_t max_positions() const override { return max_positions_; }
  std::unique_ptr<AedStepSession> start_session(std::int64_t max_rows) const override;

  /** Rows of step() calls seen by sessions (for tests of skipping finished rows). */
  mutable std::int64_t active_rows_stepped = 0;
  /** When >= 0: the session writes NaN into this token's score at the first step. */
  std::int32_t poison_token = -1;

 private:
  std::uint64_t seed_;
  std::int64_t vocab_;
  std::int32_t eos_;
  std::int64_t max_positions_;
  float sharpness_;
};

/** The same decoder as a step on a CUDA device (for the CUDA path of AedDecoder): each call copies its device inputs
 *  to the host, runs `cpu`'s session there and copies the scores back, ordered on the call's stream. */
class DeviceAedStep final : public AedDecoderStep {
 public:
  DeviceAedStep(std::shared_ptr<const RandomAedStep> cpu, Device device) : cpu_(std::move(cpu)), device_(device) {}
  Device device() const override { return device_; }
  std::int64_t vocab_size() const override { return cpu_->vocab_size(); }
  std::int64_t max_positions() const override { return cpu_->max_positions(); }
  std::unique_ptr<AedStepSession> start_session(std::int64_t max_rows) const override;

 private:
  std::shared_ptr<const RandomAedStep> cpu_;
  Device device_;
};

}  // namespace asrdec::testing
