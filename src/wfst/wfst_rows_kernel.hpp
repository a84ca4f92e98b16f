#pragma once
// Internal: the CUDA kernel of whole-utterance WFST decoding (WfstDecoder::decode on CUDA). One thread block is one
// lane (wfst_lane_layout.hpp: memory by tokens, not graph states); each lane takes the batch's rows from a queue and
// decodes each from the start to its best path (wfst_lane_decode.hpp), so a whole call is one launch and the host
// receives only the paths.

#include <cuda_runtime.h>

#include <cstdint>

#include "asrdec/core/dtype.hpp"
#include "wfst/lane_step/wfst_lane_decode.hpp"
#include "wfst/wfst_kernels.hpp"

namespace asrdec::detail {

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
};

/** Decodes every row on `lanes` blocks. */
void launch_wfst_rows(DType dtype, const WfstRowsArgs& args, std::int32_t lanes, cudaStream_t stream);

void preload_wfst_rows_kernel();

}  // namespace asrdec::detail
