#pragma once
// Internal: the CUDA kernels of WFST beam search (wfst_decoder.hpp). One thread block decodes one lane (a batch
// row) and keeps the whole frame step — emitting arcs, cutoff, ε-closure, beam tightening, tie-breaks, active
// tokens — inside one kernel launch, so a frame costs one launch for all lanes and needs no grid-wide barrier.
//
// Per lane the search state is dense over the graph's states (a key and a list slot per state), so recombination
// is one atomicMin per way and no hashing can fail; memory grows with states × lanes (see wfst_cuda.cpp). Keys and
// slots are all-ones (no way, no entry) between frames; the host clears them once after allocation. A frame's
// tokens go to a segment (one of two, so the host reads one while the device fills the other): the active tokens
// and their ε-ancestors, or every token on a row's last frame of the call.

#include <cuda_runtime.h>

#include <cstdint>

#include "asrdec/core/dtype.hpp"
#include "wfst/wfst_step.hpp"

namespace asrdec::detail {

/** Frame steps per program launch; a segment header has room for each. */
constexpr std::int32_t kWfstFramesPerProgram = 16;

/** The graph in device memory (WfstGraphArrays). */
struct WfstDeviceGraph {
  const std::int64_t* emitting_begin;  ///< [num_states + 1]
  const std::int64_t* epsilon_begin;   ///< [num_states + 1]
  const std::int32_t* ilabel;
  const std::int32_t* olabel;
  const std::int32_t* next_state;
  const float* weight;
  std::int32_t num_states;
};

/** The logits of one call (device memory, rewritten before each call). */
struct WfstInputArgs {
  const void* logprobs;
  std::int64_t stride_b;
  std::int64_t stride_t;
  std::int64_t stride_v;
};

/** One lane's progress through its row. */
struct WfstLaneControl {
  std::int32_t row;           ///< the batch row it decodes; -1: idle
  std::int32_t frame;         ///< the next frame of the row
  std::int32_t length;        ///< frames of the row
  std::int32_t active_count;  ///< tokens the next frame expands
  std::int32_t stalled;       ///< the segment had no room for the last frame: wait for the next program
  std::int32_t has_boost;     ///< the lane's row of the boost table applies
};

/** What one program stored in a segment for one lane. */
struct WfstSegmentHeader {
  std::int32_t frames;         ///< frames stored
  std::int32_t used;           ///< tokens stored
  std::int32_t progress;       ///< the lane's next frame after the program
  std::int32_t overflow_mask;  ///< bit f: stored frame f overflowed (or has a token without a way in)
  std::int32_t sizes[kWfstFramesPerProgram];
};

/** Per-lane work arrays; "[S]" arrays hold num_states entries per lane, lane after lane. */
struct WfstLanes {
  unsigned long long* key;       ///< [S] best way in so far: ordered cost << 32 | ε-depth; ~0: none
  std::int32_t* slot;            ///< [S] the state's entry in the frame list; -1: none
  std::int32_t* list_state;      ///< [S] the frame list: states in order of first arrival
  unsigned long long* emit_win;  ///< [S] per entry: best emitting way (arc << 32 | stored predecessor), then
                                 ///< the resolved way
  unsigned long long* eps_win;   ///< [S] per entry: best ε-way (loose << 63 | depth << 32 | arc)
  std::int32_t* mark;            ///< [S] per entry: WfstMark bits
  std::int32_t* stored;          ///< [S] per entry: index among the frame's stored tokens
  std::int32_t* frontier;        ///< [2 S] ε-closure frontiers (states), two rounds
  unsigned int* queued;          ///< [2 queued_words] whether a state is on each frontier
  std::int32_t* active_state;    ///< [S] the tokens the next frame expands
  float* active_cost;            ///< [S]
  std::int32_t* active_stored;   ///< [S] their index among the previous frame's stored tokens
  float* frame_logp;             ///< [columns] the columns of the current frame that input labels read
  const float* boost;            ///< [boost_width] per lane, or null
  WfstLaneControl* control;      ///< [1] per lane
  std::int64_t boost_width;
  std::int32_t queued_words;
  std::int32_t columns;
  std::int32_t lanes;
};

struct WfstSearchParams {
  float beam;
  float acoustic_scale;
  std::int64_t max_active;
  std::int64_t max_tokens_per_frame;
  std::int32_t segment_capacity;  ///< stored tokens per lane per segment
  std::int64_t min_active;        ///< 0: off
};

/** One of the two output segments. */
struct WfstSegment {
  WfstStoredToken* tokens;     ///< [segment_capacity] per lane
  WfstSegmentHeader* headers;  ///< [1] per lane
};

struct WfstKernelArgs {
  WfstDeviceGraph graph;
  WfstLanes lanes;
  WfstSearchParams params;
  WfstSegment segment;
  const WfstInputArgs* input;
};

/** Starts a program on `segment`: headers emptied, stalled lanes released. */
void launch_wfst_begin_segment(const WfstKernelArgs& args, cudaStream_t stream);
/** Converts each running lane's current frame to floats (lanes.frame_logp). */
void launch_wfst_gather_frame(DType dtype, const WfstKernelArgs& args, cudaStream_t stream);
/** One frame step of every running lane. */
void launch_wfst_frame(const WfstKernelArgs& args, cudaStream_t stream);

/** The first NaN or +inf among frames [0, lengths[b]) of rows [0, batch), as pack_bad_value into *bad (which
 *  must hold kNoBadValue before). */
void launch_wfst_check_values(DType dtype, const WfstInputArgs& input, const std::int32_t* lengths, std::int32_t batch,
                              std::int32_t frames, std::int32_t columns, unsigned long long* bad, cudaStream_t stream);

void preload_wfst_kernels();

}  // namespace asrdec::detail
