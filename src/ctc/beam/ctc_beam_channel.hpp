#pragma once
// Internal: what one utterance carries from chunk to chunk in streaming CTC beam search (docs/streaming.md), shared
// by the CPU and CUDA executors: the state of its K slots — exactly what BatchedBeamHyps and the fused models hold
// between two frames — and the tokens of the slots' paths, kept as a forest of emitted tokens (each entry points at
// the token before it), so that a chunk appends only its own tokens and a transcript is rebuilt by walking back.
// CTC beam search is frame-synchronous, so a lane loaded from a channel makes exactly the choices the whole
// utterance's search makes on the same frames.

#include <cstdint>
#include <vector>

#include "asrdec/hyps/beam_hyps_ref.hpp"
#include "asrdec/hyps/hypothesis.hpp"

namespace asrdec::detail {

/** Per-slot fused states of a batch of beams, [slots] each; a model that is not fused has null pointers. */
struct CtcBeamFusedSlots {
  std::int32_t* lm_state;
  float* lm_total;
  std::int32_t* boost_state;
  float* boost_total;
};

struct CtcBeamChannel {
  // The K slots, as BeamHypsRef and the fused models keep them between frames.
  std::vector<float> score, lm_total, boost_total;
  std::vector<std::int32_t> tokens, last_label, lm_state, boost_state;
  std::vector<std::uint64_t> hash, prefix_hash;
  std::vector<std::int64_t> tip;  ///< the last token of each slot's path in the forest, -1 for none
  // The forest of the paths' tokens.
  std::vector<std::int32_t> token, frame;
  std::vector<std::int64_t> parent;
};

/** A starting utterance: slot 0 empty with score 0, the others dead; the LM at <s>, boosting at `boost_root`. */
void ctc_beam_start(CtcBeamChannel& c, std::int32_t beam, std::int32_t boost_root);

/** Lane b of `h` (host memory) takes the channel's slots (no entries yet); `fused` (per-slot arrays of the batch)
 *  its fused states. */
void ctc_beam_load(const CtcBeamChannel& c, const BeamHypsRef& h, std::int64_t b, const CtcBeamFusedSlots& fused);

/** After a chunk decoded in lane b of `h` (host memory, entries = the chunk's frames): the channel takes the lane's
 *  slots, and each slot's path through the chunk — its tokens at frames offset + step — continues the path of the
 *  slot it came from. */
void ctc_beam_save(CtcBeamChannel& c, const BeamHypsRef& h, std::int64_t b, std::int64_t offset,
                   const CtcBeamFusedSlots& fused);

/** The channel's live hypotheses, best first (by score; ties go to the lower slot), with their LM and boosting
 *  parts (`lm`, `boost`: whether those models are fused), as the whole-utterance search ranks them. */
std::vector<Hypothesis> ctc_beam_hypotheses(const CtcBeamChannel& c, bool lm, bool boost);

}  // namespace asrdec::detail
