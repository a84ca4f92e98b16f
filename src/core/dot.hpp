#pragma once
// Internal: the CPU executors' dot product, deterministic so that a row's result never depends on its batch.

#include <cstdint>

namespace asrdec::detail {

/** sum_i a[i] * b[i] in fp32 with a fixed order (eight interleaved partial sums, combined pairwise), so the
 *  result depends only on the inputs, never on the batch a row belongs to. */
float dot(const float* a, const float* b, std::int64_t n);

}  // namespace asrdec::detail
