#pragma once
// Internal: the validated input of every CTC decoder — greedy, beam search and WFST: log-probabilities [B, T, V+1]
// with the blank resolved, lengths checked against T, and the fusion models checked against the vocabulary.

#include <cstdint>
#include <vector>

#include "asrdec/core/device.hpp"
#include "asrdec/core/tensor.hpp"
#include "asrdec/lm/boosting_tree.hpp"
#include "asrdec/lm/ngram_lm.hpp"

namespace asrdec::detail {

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
 *  blank_id -1 means the last column. With an LM or a boosting tree, their vocabularies must be V and the blank last
 *  (whether the tree's phrase lists fit the batch is the caller's check: a streamed row names its list). */
CtcInput make_ctc_input(const TensorView& logprobs, const TensorView& lengths, Device device, std::int32_t blank_id,
                        const NgramLm* lm, const BoostingTree* boost);

/** The V+1 log-probabilities of utterance b at frame t as floats; InvalidArgument naming the element for NaN or
 *  +inf when `check_values`. */
void read_ctc_frame(const CtcInput& input, std::int64_t b, std::int32_t t, bool check_values, float* out);

}  // namespace asrdec::detail
