#pragma once
// Random CTC log-probability batches for the tests: varied shapes, memory layouts (contiguous, time-major,
// padded, vocabulary-strided), dtypes, blank ids, ties, -inf values and length extremes. Memory that must not
// be read (padding, frames at or beyond an utterance's length) holds NaN, so a decoder that reads it fails.

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "asrdec/detail/float16.hpp"
#include "ctc/ctc_reference.hpp"

namespace asrdec::testing {

struct CtcBatch {
  int batch = 0, frames = 0, columns = 0;
  std::int32_t blank_config = -1;  ///< what the decoder is configured with
  std::int32_t blank = 0;          ///< the resolved blank column
  DType dtype = DType::f32;
  std::string layout;
  std::vector<std::byte> storage;
  std::int64_t strides[3] = {};
  std::vector<float> values;  ///< logical [B][T][C] values as stored (after rounding to dtype)
  DType lengths_dtype = DType::i32;
  std::vector<std::int32_t> lengths32;
  std::vector<std::int64_t> lengths64;

  TensorView logprobs(Device device = Device::cpu(), const void* data = nullptr) const {
    return TensorView(data != nullptr ? data : storage.data(), dtype, {batch, frames, columns},
                      {strides[0], strides[1], strides[2]}, device);
  }
  TensorView lengths(Device device = Device::cpu(), const void* data = nullptr) const {
    const void* host = lengths_dtype == DType::i32 ? static_cast<const void*>(lengths32.data())
                                                   : static_cast<const void*>(lengths64.data());
    return TensorView(data != nullptr ? data : host, lengths_dtype, {batch}, device);
  }
  const void* lengths_data() const { return lengths(Device::cpu()).data(); }
  std::size_t lengths_bytes() const { return static_cast<std::size_t>(batch) * dtype_size(lengths_dtype); }
  std::int64_t length(int b) const { return lengths_dtype == DType::i32 ? lengths32[b] : lengths64[b]; }
  float value(int b, int t, int v) const { return values[(static_cast<std::size_t>(b) * frames + t) * columns + v]; }

  /** The oracle's answer for utterance b. */
  CtcReference reference(int b) const {
    const auto first = values.begin() + static_cast<std::ptrdiff_t>(b) * frames * columns;
    std::vector<float> rows(first, first + static_cast<std::ptrdiff_t>(length(b)) * columns);
    return ctc_greedy_reference(rows, static_cast<int>(length(b)), columns, blank);
  }

  /** Overwrites one element (stored and logical), e.g. to plant a NaN. */
  void set(int b, int t, int v, float x) {
    values[(static_cast<std::size_t>(b) * frames + t) * columns + v] = x;
    store(offset(b, t, v), x);
  }

  std::int64_t offset(int b, int t, int v) const { return b * strides[0] + t * strides[1] + v * strides[2]; }

  void store(std::int64_t element, float x) {
    std::byte* p = storage.data() + element * static_cast<std::int64_t>(dtype_size(dtype));
    if (dtype == DType::f32) {
      std::memcpy(p, &x, 4);
    } else {
      const std::uint16_t bits = dtype == DType::f16 ? detail::float_to_half_bits(x) : detail::float_to_bf16_bits(x);
      std::memcpy(p, &bits, 2);
    }
  }
  float stored(std::int64_t element) const {
    const std::byte* p = storage.data() + element * static_cast<std::int64_t>(dtype_size(dtype));
    if (dtype == DType::f32) {
      float x;
      std::memcpy(&x, p, 4);
      return x;
    }
    std::uint16_t bits;
    std::memcpy(&bits, p, 2);
    return dtype == DType::f16 ? decode_half_reference(bits) : decode_bf16_reference(bits);
  }
};

struct CtcBatchShape {
  int max_batch = 8;
  int max_frames = 40;
  int max_columns = 40;
};

inline CtcBatch random_ctc_batch(std::mt19937_64& rng, DType dtype, CtcBatchShape shape = {}) {
  const auto uniform = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
  const auto chance = [&](double p) { return std::uniform_real_distribution<double>(0, 1)(rng) < p; };
  CtcBatch b;
  b.dtype = dtype;
  b.batch = uniform(1, shape.max_batch);
  b.frames = uniform(0, shape.max_frames);
  b.columns = uniform(1, shape.max_columns);
  b.blank_config = chance(0.5) ? -1 : uniform(0, b.columns - 1);
  b.blank = b.blank_config < 0 ? b.columns - 1 : b.blank_config;

  const int C = b.columns, T = b.frames, B = b.batch;
  std::int64_t elements = 0;
  switch (uniform(0, 3)) {
    case 0:
      b.layout = "contiguous";
      b.strides[0] = static_cast<std::int64_t>(T) * C, b.strides[1] = C, b.strides[2] = 1;
      elements = static_cast<std::int64_t>(B) * T * C;
      break;
    case 1:
      b.layout = "time-major";
      b.strides[0] = C, b.strides[1] = static_cast<std::int64_t>(B) * C, b.strides[2] = 1;
      elements = static_cast<std::int64_t>(B) * T * C;
      break;
    case 2: {
      b.layout = "padded";
      const int row = C + uniform(1, 5);
      const int frames = T + uniform(0, 3);
      b.strides[0] = static_cast<std::int64_t>(frames) * row, b.strides[1] = row, b.strides[2] = 1;
      elements = static_cast<std::int64_t>(B) * frames * row;
      break;
    }
    default:
      b.layout = "vocab-major";
      b.strides[0] = static_cast<std::int64_t>(C) * T, b.strides[1] = 1, b.strides[2] = T;
      elements = static_cast<std::int64_t>(B) * T * C;
      break;
  }
  b.storage.resize(static_cast<std::size_t>(std::max<std::int64_t>(elements, 1)) * dtype_size(dtype));
  for (std::int64_t e = 0; e < elements; ++e) {
    b.store(e, std::numeric_limits<float>::quiet_NaN());
  }

  b.lengths_dtype = chance(0.5) ? DType::i32 : DType::i64;
  std::vector<std::int64_t> lengths(static_cast<std::size_t>(B));
  for (auto& length : lengths) {
    const int pick = uniform(0, 9);
    length = pick == 0 ? 0 : pick == 1 ? std::min(1, T) : pick == 2 ? T : uniform(0, T);
  }
  b.lengths32.assign(lengths.begin(), lengths.end());
  b.lengths64 = lengths;

  // Value styles: smooth random, heavy ties (few distinct levels), blank-heavy, with -inf entries.
  const int style = uniform(0, 3);
  std::normal_distribution<float> normal(0.0f, 3.0f);
  b.values.assign(static_cast<std::size_t>(B) * T * C, std::numeric_limits<float>::quiet_NaN());
  for (int u = 0; u < B; ++u) {
    for (int t = 0; t < lengths[static_cast<std::size_t>(u)]; ++t) {
      const bool blank_frame = chance(style == 2 ? 0.8 : 0.3);
      const bool all_neg_inf = style == 3 && chance(0.05);
      for (int v = 0; v < C; ++v) {
        float x;
        if (style == 1) {
          x = -static_cast<float>(uniform(0, 2));
        } else {
          x = -std::fabs(normal(rng)) - 0.01f;
        }
        if (blank_frame && v == b.blank) x = style == 1 ? 0.0f : -0.001f;
        if (style == 3 && (all_neg_inf || chance(0.2))) x = -std::numeric_limits<float>::infinity();
        const std::int64_t e = b.offset(u, t, v);
        b.store(e, x);
        b.values[(static_cast<std::size_t>(u) * T + t) * C + v] = b.stored(e);
      }
    }
  }
  return b;
}

}  // namespace asrdec::testing
