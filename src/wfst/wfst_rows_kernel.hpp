#pragma once
// Internal: the CUDA kernels of WFST decoding on lanes. One thread block is one lane (wfst_lane_layout.hpp: memory by
// tokens, not graph states); each lane takes rows from a queue, so a whole call is one launch and the host receives
// only outcomes and paths:
// - whole utterances (WfstDecoder::decode): each row from the start to its best path (wfst_lane_decode.hpp);
// - stream chunks (WfstDecoder::decode_chunks): each row one chunk of a stream whose channel (wfst_lane_chunk.hpp)
//   lives in device memory between calls, and the path of its result, partial or final. N-best lists
//   (WfstDecoder::decode_nbest) are whole utterances decoded as one-chunk streams, whose channels the host then reads.
// And the check of the frames' values that precedes decoding.

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

#include "asrdec/core/dtype.hpp"
#include "wfst/lane_step/wfst_lane_chunk.hpp"
#include "wfst/lane_step/wfst_lane_decode.hpp"

namespace asrdec::detail {

/** The frames of one call: the caller's tensor [B, T, C] (device memory) and its strides in elements. */
struct WfstInputArgs {
  const void* logprobs;
  std::int64_t stride_b;
  std::int64_t stride_t;
  std::int64_t stride_v;
};

/** Threads of a lane. */
constexpr int kWfstLaneThreads = 256;

struct WfstRowsArgs {
  WfstLaneGraph graph;
  const float* final_weight;  ///< null: use_final_probs is off
  WfstLaneConfig config;
  WfstInputArgs input;
  const std::int32_t* lengths;    ///< [batch]
  const std::int32_t* boost_row;  ///< [batch] row of `boosts`, -1: none
  const float* boosts;            ///< [rows × boost_width]
  std::int64_t boost_width;
  std::int32_t batch;
  WfstLaneLayout layout;
  unsigned char* lanes;      ///< [lanes × layout.bytes], every byte 0xff between calls
  std::int32_t* next_row;    ///< the row queue, 0 before the launch
  WfstRowOutcome* outcomes;  ///< [batch]
  WfstPathStep* paths;       ///< [path_capacity]
  std::int64_t path_capacity;
  unsigned long long* paths_used;  ///< 0 before the launch
  /** Set by the launch: the frame's values are converted into the block's shared memory, after its fast frame
   *  (wfst_frame_in_shared), not the lane's frame scratch, so that each way's log-probability is a shared-memory
   *  read. */
  std::int32_t shared_frame;
};

/** The chunks kernel's: `rows` as for whole utterances (`batch`: the call's rows; outcomes by row), and the streams. */
struct WfstChunksArgs {
  WfstRowsArgs rows;
  const std::int32_t* queue;  ///< [count] the rows decoded on the device, in the order lanes take them
  std::int32_t count;
  const std::int32_t* slot;   ///< [batch] the row's channel
  const std::int32_t* flags;  ///< [batch] kWfstChunkFresh | kWfstChunkLast
  unsigned char* channels;    ///< [slots × channel.bytes]
  WfstChannelLayout channel;
};

constexpr std::int32_t kWfstChunkFresh = 1;  ///< the row starts its stream (the channel's contents are stale)
constexpr std::int32_t kWfstChunkLast = 2;   ///< the row ends its stream (its result by the final rule)

/** Decodes every row on `lanes` blocks. */
void launch_wfst_rows(DType dtype, const WfstRowsArgs& args, std::int32_t lanes, cudaStream_t stream);

/** Decodes chunk rows queue[0, count) on `lanes` blocks. */
void launch_wfst_chunks(DType dtype, const WfstChunksArgs& args, std::int32_t lanes, cudaStream_t stream);

/** The first NaN or +inf among frames [0, lengths[b]) of every row b, packed as core/bad_value.hpp's pack_bad_value,
 *  into `bad` by atomicMin (kNoBadValue, all ones, before the launch: none). */
void launch_wfst_check_values(DType dtype, const WfstInputArgs& input, const std::int32_t* lengths, std::int32_t batch,
                              std::int32_t frames, std::int32_t columns, unsigned long long* bad, cudaStream_t stream);

/** Bytes of shared memory a lane block may take beyond the kernels' own, on the current device, without fewer lane
 *  blocks running at once on an SM (the lanes' registers bound them first): what a lane's fast frame
 *  (WfstLaneLayout::fast) and its frame's values may take. Loads the kernels, so that the first call does not. */
std::size_t wfst_lane_fast_budget();

/** Lane blocks of `layout` the current device runs at once (more lanes would only wait for the queue to empty). */
std::int32_t wfst_lanes_resident(const WfstLaneLayout& layout);

}  // namespace asrdec::detail
