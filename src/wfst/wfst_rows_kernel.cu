// The CUDA kernels of WFST decoding on lanes (wfst_rows_kernel.hpp): wfst_lane_decode.hpp (whole utterances) and
// wfst_lane_chunk.hpp (stream chunks) in one thread block per lane, and the check of the frames' values. Compiled
// without FMA contraction (src/CMakeLists.txt), so the shared step's costs and histogram bins are the CPU's bits.

#include <algorithm>
#include <array>
#include <map>
#include <mutex>

#include "asrdec/core/error.hpp"
#include "asrdec/detail/float16.hpp"
#include "core/bad_value.hpp"
#include "core/ctc_input.hpp"
#include "core/cuda/check.hpp"
#include "wfst/lane_step/wfst_block_exec.cuh"
#include "wfst/wfst_rows_kernel.hpp"

namespace asrdec::detail {
namespace {

using Exec = WfstBlockExec<kWfstLaneThreads>;

// A row's frames in the caller's tensor, converted to floats in the lane's frame scratch.
template <class T>
struct DeviceFrames {
  const T* row;
  std::int64_t stride_t;
  std::int64_t stride_v;
  std::int32_t columns;

  // No barrier: called before the barrier that ends the last frame's store (wfst_lane_decode.hpp), so the loads
  // overlap the store's write phase.
  __device__ const float* frame(Exec& exec, std::int32_t t, float* scratch) const {
    const T* values = row + t * stride_t;
    exec.for_each(columns, [&](std::int64_t v) { scratch[v] = to_float(values[v * stride_v]); });
    return scratch;
  }
};

// The lane's views, in shared memory: read through references by every phase, fast memory and not each thread's
// stack.
struct LaneBlock {
  Exec::Storage storage;
  WfstLaneShared shared;
  WfstLaneViews v;
  std::int32_t item;
  long long offset;
};

// The launch's dynamic shared memory (lane_dynamic_bytes): the lane's fast frame (layout.fast.bytes), then the
// frame's values when they fit (WfstRowsArgs::shared_frame).
extern __shared__ __align__(16) unsigned char lane_dynamic[];

// Takes items [0, items) from the queue until none is left: `decode(item)` decodes one (every thread calls it) and
// returns its outcome, whose path (reversed in the lane's scratch) is then copied into the output in order.
template <class Decode>
__device__ void take_items(const WfstRowsArgs& a, std::int32_t items, LaneBlock& lane, Exec& exec, Decode&& decode) {
  // Shared memory starts undefined: the fast frame is made empty (every byte 0xff), as the lane's memory is.
  exec.for_each(a.layout.fast.bytes / 4,
                [&](std::int64_t i) { reinterpret_cast<std::int32_t*>(lane_dynamic)[i] = -1; });
  exec.single([&] {
    lane.shared.count = 0;  // the lane is empty (every byte 0xff) between rows
    lane.shared.step.fast_frames = lane.shared.step.fast_outgrown = 0;
    lane.shared.history.stores = lane.shared.history.fast_stores = 0;
    lane.v = wfst_lane_views(a.layout, a.lanes + static_cast<std::int64_t>(blockIdx.x) * a.layout.bytes,
                             &lane.shared.count, a.layout.fast.bytes > 0 ? lane_dynamic : nullptr);
    if (a.shared_frame != 0) lane.v.frame_logp = reinterpret_cast<float*>(lane_dynamic + a.layout.fast.bytes);
  });
  for (;;) {
    exec.single([&] { lane.item = atomicAdd(a.next_row, 1); });
    exec.barrier();
    const std::int32_t item = lane.item;
    exec.barrier();
    if (item >= items) break;
    WfstRowOutcome& out = decode(item);
    const std::int32_t length = out.status == 0 ? out.path_length : 0;
    exec.barrier();  // every thread has read the status before it may change
    exec.single([&] {
      lane.offset =
          length > 0 ? static_cast<long long>(atomicAdd(a.paths_used, static_cast<unsigned long long>(length))) : 0;
      if (lane.offset + length > a.path_capacity) out.status |= kWfstLanePathFull;
      out.path_offset = lane.offset;
    });
    exec.barrier();
    const long long offset = lane.offset;
    if (offset + length <= a.path_capacity) {
      const std::int32_t* scratch = lane.v.history.scratch;
      exec.for_each(length, [&](std::int64_t i) {
        const std::int64_t from = length - 1 - i;
        a.paths[offset + i] = WfstPathStep{scratch[2 * from], scratch[2 * from + 1]};
      });
    }
    exec.barrier();
  }
}

// The block's LaneBlock, in raw shared memory: its views' default member initializers would otherwise ask for a
// dynamic initialization that shared memory does not have (nvcc warns, and ignores it); take_items sets every field.
__device__ LaneBlock& lane_block() {
  __shared__ alignas(LaneBlock) unsigned char bytes[sizeof(LaneBlock)];
  return *reinterpret_cast<LaneBlock*>(bytes);
}

template <class T>
__device__ DeviceFrames<T> frames_of(const WfstRowsArgs& a, std::int32_t row) {
  return DeviceFrames<T>{static_cast<const T*>(a.input.logprobs) + row * a.input.stride_b, a.input.stride_t,
                         a.input.stride_v, a.layout.columns};
}

__device__ const float* boost_of(const WfstRowsArgs& a, std::int32_t row) {
  const std::int32_t b = a.boost_row[row];
  return b >= 0 ? a.boosts + b * a.boost_width : nullptr;
}

template <class T>
__global__ void __launch_bounds__(kWfstLaneThreads) wfst_rows_kernel(const __grid_constant__ WfstRowsArgs a) {
  LaneBlock& lane = lane_block();
  Exec exec(lane.storage);
  take_items(a, a.batch, lane, exec, [&](std::int32_t row) -> WfstRowOutcome& {
    DeviceFrames<T> frames = frames_of<T>(a, row);
    WfstRowOutcome& out = a.outcomes[row];
    wfst_lane_decode(exec, a.graph, a.config, a.final_weight, boost_of(a, row), lane.v, lane.shared, a.lengths[row],
                     frames, out);
    return out;
  });
}

template <class T>
__global__ void __launch_bounds__(kWfstLaneThreads) wfst_chunks_kernel(const __grid_constant__ WfstChunksArgs c) {
  LaneBlock& lane = lane_block();
  Exec exec(lane.storage);
  const WfstRowsArgs& a = c.rows;
  take_items(a, c.count, lane, exec, [&](std::int32_t item) -> WfstRowOutcome& {
    const std::int32_t row = c.queue[item];
    DeviceFrames<T> frames = frames_of<T>(a, row);
    WfstRowOutcome& out = a.outcomes[row];
    const std::int32_t flags = c.flags[row];
    const WfstChannelViews channel = wfst_channel_views(
        c.channel, lane.v.history, c.channels + static_cast<std::int64_t>(c.slot[row]) * c.channel.bytes);
    wfst_lane_chunk(exec, a.graph, a.config, a.final_weight, boost_of(a, row), lane.v, channel.history, channel.channel,
                    lane.shared, (flags & kWfstChunkFresh) != 0, (flags & kWfstChunkLast) != 0, a.lengths[row], frames,
                    out);
    return out;
  });
}

// A block per (row, frame) in [0, lengths[b]): the lowest packed position of a NaN or +inf.
template <class T>
__global__ void wfst_check_values_kernel(WfstInputArgs input, const std::int32_t* lengths, std::int32_t batch,
                                         std::int32_t frames, std::int32_t columns, unsigned long long* bad) {
  for (std::int64_t bt = blockIdx.x; bt < static_cast<std::int64_t>(batch) * frames; bt += gridDim.x) {
    const std::int64_t b = bt / frames;
    const std::int64_t t = bt - b * frames;
    if (t >= lengths[b]) continue;
    const T* row = static_cast<const T*>(input.logprobs) + b * input.stride_b + t * input.stride_t;
    for (std::int32_t v = threadIdx.x; v < columns; v += blockDim.x) {
      const float x = to_float(row[v * input.stride_v]);
      if (is_invalid_logprob(x)) atomicMin(bad, pack_bad_value(b, t, v, x != x));
    }
  }
}

// Every lane kernel: the rows' and the chunks', by the frames' dtype.
const std::array<const void*, 6>& lane_kernels() {
  static const std::array<const void*, 6> kernels = {reinterpret_cast<const void*>(wfst_rows_kernel<float>),
                                                     reinterpret_cast<const void*>(wfst_rows_kernel<half_t>),
                                                     reinterpret_cast<const void*>(wfst_rows_kernel<bfloat16_t>),
                                                     reinterpret_cast<const void*>(wfst_chunks_kernel<float>),
                                                     reinterpret_cast<const void*>(wfst_chunks_kernel<half_t>),
                                                     reinterpret_cast<const void*>(wfst_chunks_kernel<bfloat16_t>)};
  return kernels;
}

// The lane kernels' largest static shared memory, and the dynamic shared memory a lane block may take without fewer
// lane blocks running at once on an SM.
struct LaneSharedBytes {
  std::size_t static_bytes = 0;
  std::size_t budget = 0;
};

// The current device's, read once a device (every lane kernel may then take the budget on it; the library never
// resets a device, which would undo that).
LaneSharedBytes lane_shared_bytes() {
  static std::mutex mutex;
  static std::map<int, LaneSharedBytes> by_device;
  int current = 0;
  ASRDEC_CUDA_CHECK(cudaGetDevice(&current));
  const std::lock_guard<std::mutex> lock(mutex);
  const auto known = by_device.find(current);
  if (known != by_device.end()) return known->second;
  const LaneSharedBytes bytes = [current] {
    LaneSharedBytes b;
    // By registers and threads (the kernels' static shared memory never binds first); the budget keeps the kernel
    // that runs the most blocks at that many.
    int blocks = 1;
    for (const void* kernel : lane_kernels()) {
      cudaFuncAttributes attributes{};
      ASRDEC_CUDA_CHECK(cudaFuncGetAttributes(&attributes, kernel));
      b.static_bytes = std::max(b.static_bytes, attributes.sharedSizeBytes);
      int resident = 0;
      ASRDEC_CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&resident, kernel, kWfstLaneThreads, 0));
      blocks = std::max(blocks, resident);
    }
    int per_sm = 0, per_block = 0, reserved = 0;
    ASRDEC_CUDA_CHECK(cudaDeviceGetAttribute(&per_sm, cudaDevAttrMaxSharedMemoryPerMultiprocessor, current));
    ASRDEC_CUDA_CHECK(cudaDeviceGetAttribute(&per_block, cudaDevAttrMaxSharedMemoryPerBlockOptin, current));
    ASRDEC_CUDA_CHECK(cudaDeviceGetAttribute(&reserved, cudaDevAttrReservedSharedMemoryPerBlock, current));
    // A block's shared memory is allocated in units of 128 bytes: a share that is not a multiple could lose a block.
    constexpr std::size_t kAllocationUnit = 128;
    const std::size_t share =
        static_cast<std::size_t>(per_sm) / static_cast<std::size_t>(blocks) / kAllocationUnit * kAllocationUnit;
    const std::size_t block = std::min(static_cast<std::size_t>(per_block),
                                       share > static_cast<std::size_t>(reserved) ? share - reserved : 0);
    b.budget = block > b.static_bytes ? block - b.static_bytes : 0;
    for (const void* kernel : lane_kernels()) {
      ASRDEC_CUDA_CHECK(
          cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(b.budget)));
    }
    return b;
  }();
  by_device.emplace(current, bytes);
  return bytes;
}

// Dynamic shared bytes of a lane block of layout `l`: its fast frame, and its frame's values when `frame_in_shared`
// (wfst_frame_in_shared under the device's budget).
std::size_t lane_dynamic_bytes(const WfstLaneLayout& l, bool frame_in_shared) {
  return static_cast<std::size_t>(l.fast.bytes) + (frame_in_shared ? static_cast<std::size_t>(l.columns) * 4 : 0);
}

WfstRowsArgs& rows_of(WfstRowsArgs& a) { return a; }
WfstRowsArgs& rows_of(WfstChunksArgs& c) { return c.rows; }

// The f32, f16 or bf16 version of a lane kernel, by the frames' dtype, on `lanes` blocks.
template <class Args>
void launch_on_lanes(DType dtype, void (*f32)(Args), void (*f16)(Args), void (*bf16)(Args), const Args& args,
                     std::int32_t lanes, cudaStream_t stream, const char* name) {
  void (*kernel)(Args) = dtype == DType::f16 ? f16 : dtype == DType::bf16 ? bf16 : f32;
  Args launched = args;
  const WfstLaneLayout& layout = rows_of(launched).layout;
  const std::size_t budget = lane_shared_bytes().budget;
  ASRDEC_EXPECTS(static_cast<std::size_t>(layout.fast.bytes) <= budget, Error, "a WFST lane's fast frame of ",
                 layout.fast.bytes, " bytes is above the device's ", budget, " (sized by wfst_lane_fast_budget)");
  const bool frame_in_shared = wfst_frame_in_shared(budget, layout.fast.bytes, layout.columns);
  rows_of(launched).shared_frame = frame_in_shared ? 1 : 0;
  kernel<<<lanes, kWfstLaneThreads, lane_dynamic_bytes(layout, frame_in_shared), stream>>>(launched);
  ASRDEC_CUDA_CHECK_LAUNCH(stream, name);
}

}  // namespace

void launch_wfst_rows(DType dtype, const WfstRowsArgs& args, std::int32_t lanes, cudaStream_t stream) {
  launch_on_lanes(dtype, wfst_rows_kernel<float>, wfst_rows_kernel<half_t>, wfst_rows_kernel<bfloat16_t>, args, lanes,
                  stream, "wfst_rows_kernel");
}

void launch_wfst_chunks(DType dtype, const WfstChunksArgs& args, std::int32_t lanes, cudaStream_t stream) {
  launch_on_lanes(dtype, wfst_chunks_kernel<float>, wfst_chunks_kernel<half_t>, wfst_chunks_kernel<bfloat16_t>, args,
                  lanes, stream, "wfst_chunks_kernel");
}

void launch_wfst_check_values(DType dtype, const WfstInputArgs& input, const std::int32_t* lengths, std::int32_t batch,
                              std::int32_t frames, std::int32_t columns, unsigned long long* bad, cudaStream_t stream) {
  const std::int64_t rows = static_cast<std::int64_t>(batch) * frames;
  if (rows == 0) return;
  const int blocks = static_cast<int>(rows < 65535 ? rows : 65535);
  void (*kernel)(WfstInputArgs, const std::int32_t*, std::int32_t, std::int32_t, std::int32_t, unsigned long long*) =
      dtype == DType::f16    ? wfst_check_values_kernel<half_t>
      : dtype == DType::bf16 ? wfst_check_values_kernel<bfloat16_t>
                             : wfst_check_values_kernel<float>;
  kernel<<<blocks, 256, 0, stream>>>(input, lengths, batch, frames, columns, bad);
  ASRDEC_CUDA_CHECK_LAUNCH(stream, "wfst_check_values_kernel");
}

std::size_t wfst_lane_fast_budget() { return lane_shared_bytes().budget; }

std::int32_t wfst_lanes_resident(const WfstLaneLayout& layout) {
  int device = 0, sms = 0;
  ASRDEC_CUDA_CHECK(cudaGetDevice(&device));
  ASRDEC_CUDA_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device));
  const std::size_t dynamic_bytes =
      lane_dynamic_bytes(layout, wfst_frame_in_shared(lane_shared_bytes().budget, layout.fast.bytes, layout.columns));
  int fewest = 1 << 30;
  for (const void* kernel : lane_kernels()) {
    int blocks = 0;
    ASRDEC_CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&blocks, kernel, kWfstLaneThreads, dynamic_bytes));
    fewest = std::min(fewest, blocks);
  }
  cudaFuncAttributes attributes{};
  ASRDEC_CUDA_CHECK(cudaFuncGetAttributes(&attributes, wfst_check_values_kernel<float>));
  ASRDEC_CUDA_CHECK(cudaFuncGetAttributes(&attributes, wfst_check_values_kernel<half_t>));
  ASRDEC_CUDA_CHECK(cudaFuncGetAttributes(&attributes, wfst_check_values_kernel<bfloat16_t>));
  return std::max(1, fewest) * std::max(1, sms);
}

}  // namespace asrdec::detail
