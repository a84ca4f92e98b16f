#pragma once
// Internal: the per-call view of enc_proj [B, T, J] that the transducer CUDA kernels read. It lives in device memory
// and is rewritten before each call, so graphs captured once replay with each call's pointer and strides.

#include <cstdint>

namespace asrdec::detail {

struct JointEncArgs {
  const void* enc;
  std::int64_t stride_b;
  std::int64_t stride_t;
  std::int64_t stride_j;
  std::int32_t batch;
};

}  // namespace asrdec::detail
