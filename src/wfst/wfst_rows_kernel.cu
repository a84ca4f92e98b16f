// The CUDA kernel of whole-utterance WFST decoding: wfst_lane_decode.hpp in one thread block per lane. Compiled
// without FMA contraction (src/CMakeLists.txt), so the shared step's costs and histogram bins are the CPU's bits.

#include "asrdec/detail/float16.hpp"
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

  __device__ const float* frame(Exec& exec, std::int32_t t, float* scratch) const {
    const T* values = row + t * stride_t;
    exec.for_each(columns, [&](std::int64_t v) { scratch[v] = to_float(values[v * stride_v]); });
    exec.barrier();
    return scratch;
  }
};

template <class T>
__global__ void __launch_bounds__(kWfstLaneThreads) wfst_rows_kernel(const __grid_constant__ WfstRowsArgs a) {
  __shared__ Exec::Storage storage;
  __shared__ WfstLaneShared shared;
  __shared__ std::int32_t row_of_lane;
  __shared__ WfstLaneViews v;  // read through references by every phase: fast memory, not each thread's stack
  Exec exec(storage);
  exec.single([&] {
    shared.count = 0;  // the lane is empty (every byte 0xff) between rows
    v = wfst_lane_views(a.layout, a.lanes + static_cast<std::int64_t>(blockIdx.x) * a.layout.bytes, &shared.count);
  });
  for (;;) {
    exec.single([&] { row_of_lane = atomicAdd(a.next_row, 1); });
    exec.barrier();
    const std::int32_t row = row_of_lane;
    exec.barrier();
    if (row >= a.batch) break;
    const T* values = static_cast<const T*>(a.input.logprobs) + row * a.input.stride_b;
    DeviceFrames<T> frames{values, a.input.stride_t, a.input.stride_v, a.layout.columns};
    const std::int32_t b = a.boost_row[row];
    const float* boost = b >= 0 ? a.boosts + b * a.boost_width : nullptr;
    WfstRowOutcome& out = a.outcomes[row];
    wfst_lane_decode(exec, a.graph, a.config, a.final_weight, boost, v, shared, a.lengths[row], frames, out);
    // The path, reversed in the lane's scratch, into the output in order.
    const std::int32_t length = out.status == 0 ? out.path_length : 0;
    exec.barrier();  // every thread has read the status before it may change
    __shared__ long long offset;
    exec.single([&] {
      offset =
          length > 0 ? static_cast<long long>(atomicAdd(a.paths_used, static_cast<unsigned long long>(length))) : 0;
      if (offset + length > a.path_capacity) out.status |= kWfstLanePathFull;
      out.path_offset = offset;
    });
    exec.barrier();
    if (offset + length <= a.path_capacity) {
      exec.for_each(length, [&](std::int64_t i) {
        const std::int64_t from = length - 1 - i;
        a.paths[offset + i] = WfstPathStep{v.history.scratch[2 * from], v.history.scratch[2 * from + 1]};
      });
    }
    exec.barrier();
  }
}

}  // namespace

void launch_wfst_rows(DType dtype, const WfstRowsArgs& args, std::int32_t lanes, cudaStream_t stream) {
  switch (dtype) {
    case DType::f16:
      wfst_rows_kernel<half_t><<<lanes, kWfstLaneThreads, 0, stream>>>(args);
      break;
    case DType::bf16:
      wfst_rows_kernel<bfloat16_t><<<lanes, kWfstLaneThreads, 0, stream>>>(args);
      break;
    default:
      wfst_rows_kernel<float><<<lanes, kWfstLaneThreads, 0, stream>>>(args);
  }
  ASRDEC_CUDA_CHECK_LAUNCH(stream, "wfst_rows_kernel");
}

void preload_wfst_rows_kernel() {
  cudaFuncAttributes attributes{};
  ASRDEC_CUDA_CHECK(cudaFuncGetAttributes(&attributes, wfst_rows_kernel<float>));
  ASRDEC_CUDA_CHECK(cudaFuncGetAttributes(&attributes, wfst_rows_kernel<half_t>));
  ASRDEC_CUDA_CHECK(cudaFuncGetAttributes(&attributes, wfst_rows_kernel<bfloat16_t>));
}

}  // namespace asrdec::detail
