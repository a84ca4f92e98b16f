#pragma once
// Internal: what the executors of transducer beam search (CPU and CUDA) share when they stream (decode_chunks): the
// lanes of a call — each row's frames, and its slots loaded from and saved to its utterance's channel
// (hyps/beam_channel.hpp). AES++ is frame-synchronous: a lane is the row's chunk. ALSD++ and WIND beam search wait: an
// utterance's beam stops before a step that needs a frame the chunks have not brought yet (a hypothesis standing past
// them; a WIND window reaching past them), so a lane is the frames its live hypotheses have not passed yet (the
// channel's tail), then the chunk, and keeps the frames from its earliest live hypothesis on for the next call.

#include <cstdint>
#include <vector>

#include "asrdec/core/streaming.hpp"
#include "core/utterance_channels.hpp"
#include "hyps/beam_channel.hpp"
#include "transducer/transducer_input.hpp"

namespace asrdec::detail {

/** Where an executor keeps its slots' predictor states [slots, state_size] and outputs [slots, hidden] and their fused
 *  states, in host memory (the CPU executors' own arrays; the CUDA executor's staging copies). A channel keeps a
 *  slot's predictor entry as state then output, [K, width()]. */
struct BeamSlotArrays {
  float* state;
  float* dec;
  std::int64_t state_size;
  std::int64_t hidden;
  BeamFusedSlots fused;

  std::int64_t width() const { return state_size + hidden; }
  /** Slot s takes slot k of the channel's predictor entry, or gives its own to it (sized by BeamChannelSave). */
  void load(std::int64_t s, const BeamChannel& c, std::int32_t k) const;
  void save(std::int64_t s, BeamChannel& c, std::int32_t k) const;
};

class BeamLanes {
 public:
  /** The lanes of a call whose rows continue `channels` (ChunkPlan: which rows start; `boost_roots`: where a starting
   *  row's boosting starts; arguments referenced until save()). `waits`: the search may stop
   *  inside a lane (ALSD++, WIND beam); then the lanes are built as float32 [B, frames, hidden] (the joint reads
   *  every dtype as float), every frame of the chunks checked for NaN and infinities with `check_values`, reported
   *  in this call's coordinates (enc_proj[b, t, j]). */
  BeamLanes(const TransducerInput& problem, const ChunkPlan& plan, const std::vector<ChunkRow>& rows,
            const std::vector<std::int32_t>& boost_roots, std::vector<BeamChannel*>& channels, std::int64_t hidden,
            bool waits, bool check_values);

  const ChunkPlan& plan() const { return plan_; }
  /** The frames to search: `problem` itself, or the lanes built from tails and chunks. */
  const TransducerInput& input() const { return waits_ ? lanes_ : problem_; }

  /** Every row's slots in `h` (sized for the call; `slots` started with the rows' boosting roots) take their
   *  channel's state; a starting row's slots start over (beam_clear). */
  void load(const BeamHypsRef& h, const BeamSlotArrays& slots) const;

  /** After the search (the final view `h`), in two phases so that a call changes every channel or none (with
   *  several threads, every slice prepares before any saves). prepare_save() makes every check and allocation;
   *  save() then writes without allocating: every channel takes its row's slots and the tokens of their paths, and
   *  a waiting search's channel keeps the frames from its earliest live hypothesis on, unless its row is the
   *  utterance's last. */
  void prepare_save(const BeamHypsRef& h, const BeamSlotArrays& slots);
  void save(const BeamHypsRef& h, const BeamSlotArrays& slots);

 private:
  // The utterance's frame of lane b's frame 0.
  std::int64_t offset(std::int64_t b) const {
    return plan_.offset[static_cast<std::size_t>(b)] - tail_[static_cast<std::size_t>(b)];
  }

  const TransducerInput& problem_;
  const ChunkPlan& plan_;
  const std::vector<ChunkRow>& rows_;
  const std::vector<std::int32_t>& boost_roots_;
  std::vector<BeamChannel*>& channels_;
  std::int64_t hidden_;
  bool waits_;
  std::vector<std::int32_t> tail_;  // per row: frames of its lane that came from its channel
  std::vector<float> frames_;       // waiting: [B, frames, hidden]
  TransducerInput lanes_;
  BeamChannelSave saver_;
  std::vector<std::vector<float>> tails_;  // waiting: each row's next tail, swapped in by save()
};

}  // namespace asrdec::detail
