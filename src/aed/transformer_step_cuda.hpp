#pragma once
// Internal: the CUDA side of TransformerDecoderStep (transformer_step_cuda.cpp).

#include <cstdint>
#include <memory>

#include "aed/transformer_weights.hpp"

namespace asrdec::detail {

struct TransformerDeviceWeights;

/** The weights on `device`. Throws Unsupported for a model wider than kTransformerCudaMaxDim. */
std::shared_ptr<const TransformerDeviceWeights> upload_transformer(const TransformerDecoderStep::Weights& w,
                                                                   Device device);

std::unique_ptr<AedStepSession> start_transformer_cuda_session(std::shared_ptr<const TransformerDeviceWeights> weights,
                                                               std::int64_t max_rows);

}  // namespace asrdec::detail
