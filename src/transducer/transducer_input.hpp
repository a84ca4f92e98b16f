#pragma once
// Internal: the validated input of every transducer decoder — greedy and beam search: encoder projections
// [B, T, J] checked against the model, lengths checked against T and read to the host.

#include <cstdint>
#include <vector>

#include "asrdec/core/stream.hpp"
#include "asrdec/core/tensor.hpp"
#include "asrdec/transducer/transducer_model.hpp"
#include "transducer/model/joint_cpu.hpp"

namespace asrdec::detail {

struct TransducerInput {
  TensorView enc_proj;
  EncodedView enc;
  std::int64_t batch = 0;
  std::int64_t frames = 0;
  std::vector<std::int32_t> lengths;  // validated, host
};

/** Validates enc_proj [B, T, J] and lengths [B] against the model; copies device lengths to the host. */
TransducerInput make_transducer_input(const TransducerModel& model, const TensorView& enc_proj,
                                      const TensorView& lengths, StreamHandle stream);

}  // namespace asrdec::detail
