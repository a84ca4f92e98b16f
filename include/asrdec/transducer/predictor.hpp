#pragma once
/**
 * @file
 * The prediction network of a transducer, as the decoders see it: a state per utterance (a fixed number of
 * floats) and one step that consumes a label and yields the predictor output already projected into the joint
 * space (`dec_proj`, J floats). The built-in LSTM and stateless predictors implement this interface; an engine
 * can implement it to plug in its own network (e.g. a TensorRT engine).
 *
 * Split in two so that a model can be shared across threads: TransducerPredictor is the immutable network;
 * PredictorSession holds the scratch memory of one decoder and runs the steps. A CPU decoder with several threads
 * (TransducerGreedyConfig::threads) starts a session per thread and steps them at the same time, so sessions of one
 * predictor must not share mutable state.
 */

#include <cstdint>
#include <memory>

#include "asrdec/core/device.hpp"
#include "asrdec/core/export.hpp"
#include "asrdec/core/stream.hpp"

namespace asrdec {

class ASRDEC_API PredictorSession {
 public:
  virtual ~PredictorSession() = default;

  /** Writes the state an utterance starts from (before the start symbol) into rows [0, batch) of `state`
   *  ([batch, state_size] floats on the predictor's device). Enqueued on `stream` for CUDA. */
  virtual void initial_state(float* state, std::int64_t batch, StreamHandle stream) = 0;

  /** One step for rows b < batch whose mask[b] != 0: state[b] <- next state after labels[b], output[b] <- the
   *  projected predictor output ([batch, output_size] floats). Rows with mask[b] == 0 must be left unchanged.
   *  All pointers are on the predictor's device. For CUDA the step must only enqueue work on `stream`, never
   *  synchronise or allocate, and use no other pointers than these and its own session's: decoders capture it
   *  into CUDA graphs and replay it. `batch` never exceeds the session's max_batch. */
  virtual void step(const std::int32_t* labels, const std::int32_t* mask, float* state, float* output,
                    std::int64_t batch, StreamHandle stream) = 0;
};

class ASRDEC_API TransducerPredictor {
 public:
  virtual ~TransducerPredictor() = default;
  virtual Device device() const = 0;
  /** Floats of state per utterance. */
  virtual std::int64_t state_size() const = 0;
  /** J, the joint's hidden size. */
  virtual std::int64_t output_size() const = 0;
  /** A session with scratch memory for batches of up to `max_batch` utterances. Thread-safe. */
  virtual std::unique_ptr<PredictorSession> start_session(std::int64_t max_batch) const = 0;
};

}  // namespace asrdec
