#pragma once
// Deterministic synthetic CTC log-probabilities with the statistics of the shipped sample (about two thirds
// of the frames won by blank, peaky token frames, log-softmax normalised), for benchmarks of any size.

#include <cstdint>
#include <vector>

#include "asrdec/core/dtype.hpp"

namespace asrdec::bench {

struct SyntheticCtc {
  DType dtype = DType::f32;
  std::int64_t batch = 0, frames = 0, columns = 0;
  std::vector<std::byte> logprobs;    ///< [batch, frames, columns] in dtype
  std::vector<std::int32_t> lengths;  ///< [batch]; between 70 % and 100 % of frames
  std::int64_t total_frames() const;
};

SyntheticCtc make_synthetic_ctc(std::int64_t batch, std::int64_t frames, std::int64_t columns, DType dtype,
                                std::uint64_t seed);

}  // namespace asrdec::bench
