#include "common/synthetic_ctc.hpp"

#include <cmath>
#include <cstring>
#include <random>

#include "asrdec/detail/float16.hpp"

namespace asrdec::bench {

std::int64_t SyntheticCtc::total_frames() const {
  std::int64_t total = 0;
  for (std::int32_t length : lengths) total += length;
  return total;
}

SyntheticCtc make_synthetic_ctc(std::int64_t batch, std::int64_t frames, std::int64_t columns, DType dtype,
                                std::uint64_t seed) {
  SyntheticCtc out;
  out.dtype = dtype;
  out.batch = batch;
  out.frames = frames;
  out.columns = columns;
  out.logprobs.resize(static_cast<std::size_t>(batch * frames * columns) * dtype_size(dtype));
  out.lengths.resize(static_cast<std::size_t>(batch));
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<float> uniform(0.0f, 1.0f);
  std::normal_distribution<float> noise(0.0f, 1.0f);
  std::vector<float> row(static_cast<std::size_t>(columns));
  const std::int64_t blank = columns - 1;
  for (std::int64_t b = 0; b < batch; ++b) {
    out.lengths[static_cast<std::size_t>(b)] = static_cast<std::int32_t>(
        std::max<std::int64_t>(1, static_cast<std::int64_t>(frames * (0.7 + 0.3 * uniform(rng)))));
    for (std::int64_t t = 0; t < frames; ++t) {
      const std::int64_t winner =
          uniform(rng) < 0.67f ? blank : static_cast<std::int64_t>(rng() % (columns > 1 ? columns - 1 : 1));
      float max_logit = -INFINITY;
      for (std::int64_t v = 0; v < columns; ++v) {
        row[v] = noise(rng);
        if (v == winner) row[v] += 6.0f + 4.0f * uniform(rng);
        max_logit = std::max(max_logit, row[v]);
      }
      double sum = 0.0;
      for (float x : row) sum += std::exp(static_cast<double>(x - max_logit));
      const float log_norm = max_logit + static_cast<float>(std::log(sum));
      std::byte* dst = out.logprobs.data() + static_cast<std::size_t>((b * frames + t) * columns) * dtype_size(dtype);
      for (std::int64_t v = 0; v < columns; ++v) {
        const float value = row[v] - log_norm;
        if (dtype == DType::f32) {
          std::memcpy(dst + v * 4, &value, 4);
        } else {
          const std::uint16_t bits =
              dtype == DType::f16 ? detail::float_to_half_bits(value) : detail::float_to_bf16_bits(value);
          std::memcpy(dst + v * 2, &bits, 2);
        }
      }
    }
  }
  return out;
}

}  // namespace asrdec::bench
