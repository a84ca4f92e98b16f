#pragma once
// Internal: the validated input of every decoder of CTC log-probabilities — greedy, beam search and WFST: [B, T, V+1]
// with the blank resolved and lengths checked against T — and the rules of valid values that the CPU loops and the
// CUDA kernels share. (Whether fused models fit the vocabulary is the fusing decoders' check: lm/fusion_checks.hpp.)

#include <cstdint>
#include <vector>

#include "asrdec/core/device.hpp"
#include "asrdec/core/tensor.hpp"
#include "asrdec/detail/hd.hpp"

namespace asrdec::detail {

/** Values a log-probability may not take: NaN and +inf (-inf, log 0, is valid). */
ASRDEC_HD_INLINE bool is_invalid_logprob(float x) {
  return static_cast<bool>(static_cast<int>(x != x) | static_cast<int>(x > 3.402823466e+38f));  // branch-free
}

/** An utterance length is usable when 0 <= length <= frames. */
ASRDEC_HD_INLINE bool length_in_range(std::int64_t length, std::int64_t frames) {
  return length >= 0 && length <= frames;
}

/** A decode request after validation: shapes agree, blank resolved, host lengths checked and copied. */
struct CtcInput {
  TensorView logprobs;
  TensorView lengths;
  std::int64_t batch = 0;
  std::int64_t frames = 0;
  std::int64_t columns = 0;
  std::int32_t blank = 0;
  bool lengths_on_host = true;
  std::vector<std::int32_t> host_lengths;  ///< filled when lengths_on_host
};

/** Validates logprobs [B, T, V+1] on `device` (f32, f16 or bf16) and lengths [B] (i32 or i64, host or `device`);
 *  blank_id -1 means the last column. */
CtcInput make_ctc_input(const TensorView& logprobs, const TensorView& lengths, Device device, std::int32_t blank_id);

/** The V+1 log-probabilities of utterance b at frame t as floats; InvalidArgument naming the element for NaN or
 *  +inf when `check_values`. */
void read_ctc_frame(const CtcInput& input, std::int64_t b, std::int32_t t, bool check_values, float* out);

}  // namespace asrdec::detail
