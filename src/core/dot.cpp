#include "core/dot.hpp"

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

namespace asrdec::detail {

float dot(const float* a, const float* b, std::int64_t n) {
  // Lane k accumulates the products of indices k, k+8, k+16, ...; the SSE and scalar paths keep that order.
  float lanes[8] = {};
  std::int64_t i = 0;
#if defined(__SSE2__)
  __m128 low = _mm_setzero_ps();
  __m128 high = _mm_setzero_ps();
  for (; i + 8 <= n; i += 8) {
    low = _mm_add_ps(low, _mm_mul_ps(_mm_loadu_ps(a + i), _mm_loadu_ps(b + i)));
    high = _mm_add_ps(high, _mm_mul_ps(_mm_loadu_ps(a + i + 4), _mm_loadu_ps(b + i + 4)));
  }
  _mm_storeu_ps(lanes, low);
  _mm_storeu_ps(lanes + 4, high);
#else
  for (; i + 8 <= n; i += 8) {
    for (int k = 0; k < 8; ++k) lanes[k] += a[i + k] * b[i + k];
  }
#endif
  for (int k = 0; i < n; ++i, ++k) {
    lanes[k] += a[i] * b[i];
  }
  return ((lanes[0] + lanes[4]) + (lanes[1] + lanes[5])) + ((lanes[2] + lanes[6]) + (lanes[3] + lanes[7]));
}

}  // namespace asrdec::detail
