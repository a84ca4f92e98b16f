#pragma once
// Internal: what one utterance carries from chunk to chunk in a streaming beam search (CTC beam search, AES++,
// ALSD++, WIND beam; docs/streaming.md), shared by the CPU and CUDA executors: the state of its K slots — exactly what
// BatchedBeamHyps, the fused models and (transducers) the predictor hold between two steps — and the tokens of the
// slots' paths, kept as a forest of emitted tokens (each entry points at the token before it), so that a chunk
// appends only its own tokens and a transcript is rebuilt by walking back. A lane loaded from a channel makes
// exactly the choices the whole utterance's search makes: in a frame-synchronous search every live hypothesis
// stands on the chunk's end between two chunks; ALSD++ and WIND beam search stop the whole beam before the first step
// that would need a frame the chunk does not have, and keep the frames its hypotheses have not passed yet (the tail).

#include <cstdint>
#include <vector>

#include "asrdec/hyps/beam_hyps_ref.hpp"
#include "asrdec/hyps/hypothesis.hpp"

namespace asrdec::detail {

/** Per-slot fused states of a batch of beams, [slots] each; a model that is not fused has null pointers. */
struct BeamFusedSlots {
  std::int32_t* lm_state;
  float* lm_total;
  std::int32_t* boost_state;
  float* boost_total;
};

struct BeamChannel {
  // The K slots, as BeamHypsRef and the fused models keep them between frames.
  std::vector<float> score, lm_total, boost_total;
  std::vector<std::int32_t> tokens, last_label, lm_state, boost_state;
  std::vector<std::uint64_t> hash, prefix_hash;
  std::vector<std::int32_t> on_frame;
  std::vector<std::int64_t> next_time;  ///< transducers: the frame each slot stands on, from the utterance's start
  std::vector<std::int64_t> tip;        ///< the last token of each slot's path in the forest, -1 for none
  /** Transducers: each slot's predictor state and output, [K, width]; the executor fills and reads it. */
  std::vector<float> predictor;
  /** ALSD++ and WIND beam: the encoder frames from the earliest frame a live slot stands on to the end of the
   * utterance's frames so far, [frames, J] as float32; the executor fills and reads it. */
  std::vector<float> tail;
  // The forest of the paths' tokens (TDT: with their durations), with each token's log-probability where it was
  // emitted (its token score).
  std::vector<std::int32_t> token, frame, duration;
  std::vector<float> logprob;
  std::vector<std::int64_t> parent;
};

/** A starting utterance: slot 0 empty with score 0, the others dead; the LM at <s>, boosting at `boost_root`. */
void beam_channel_start(BeamChannel& c, std::int32_t beam, std::int32_t boost_root);

/** Lane b of `h` (host memory) takes the channel's slots with no entries yet, the lane's frame 0 being the
 *  utterance's frame `offset`; `fused` (per-slot arrays of the batch) their fused states. */
void beam_channel_load(const BeamChannel& c, const BeamHypsRef& h, std::int64_t b, std::int64_t offset,
                       const BeamFusedSlots& fused);

/** Saves the lanes of a call into their channels in two phases, so that a call changes every channel or none:
 *  prepare() makes every check and takes every allocation, leaving the channels' contents as they are; commit()
 *  only writes. After a chunk decoded in lane b of `h` (host memory), the channel takes the lane's slots, and each
 *  slot's path through the chunk — its tokens, at frames offset + their lane timestamps — continues the path of the
 *  slot it came from. */
class BeamChannelSave {
 public:
  /** Lanes [0, rows) of `h` go to *channels[b]; a starting lane (fresh[b]) replaces its channel by a started one
   *  (beam_channel_start, boosting at boost_roots[b]) with room for `predictor_width` floats a slot. Throws Error
   *  when a lane ran out of history entries, std::bad_alloc when memory does. */
  void prepare(const BeamHypsRef& h, std::int64_t rows, const std::vector<BeamChannel*>& channels,
               const std::vector<std::uint8_t>& fresh, const std::vector<std::int32_t>& boost_roots,
               std::int64_t predictor_width = 0);
  /** Saves lane b, whose frame 0 is the utterance's frame `offset`; `fused` holds the batch's per-slot fused
   *  states. Returns the channel (the executor then writes its predictor entries). Does not allocate. */
  BeamChannel& commit(const BeamHypsRef& h, std::int64_t b, std::int64_t offset, const BeamFusedSlots& fused);

 private:
  std::vector<BeamChannel*> channels_;
  std::vector<std::uint8_t> fresh_;
  std::vector<BeamChannel> started_;  // per lane: the started channel of a starting lane
  std::vector<std::int64_t> tip_, path_;
};

/** The channel's live hypotheses, ranked as the whole-utterance search ranks them (beam_ranking: by score, or
 *  score / (tokens + 1) with `length_normalized`; ties go to the lower slot), with their LM and boosting parts
 *  (`lm`, `boost`: whether those models are fused). */
std::vector<Hypothesis> beam_channel_hypotheses(const BeamChannel& c, bool length_normalized, bool lm, bool boost);

}  // namespace asrdec::detail
