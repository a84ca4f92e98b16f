#pragma once
// Internal: the weights of the built-in Transformer decoder step (transformer_step.hpp) as fp32 host arrays, with
// the CPU's layer arithmetic; the CUDA session uploads the same arrays.

#include <cmath>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "asrdec/aed/transformer_step.hpp"
#include "core/dot.hpp"

namespace asrdec::detail {

constexpr float kTransformerLayerNormEpsilon = 1e-5f;

struct TransformerLinear {
  std::vector<float> weight;  // [out, in]
  std::vector<float> bias;    // [out]
  std::int64_t out = 0, in = 0;

  void apply(const float* x, float* y) const {
    for (std::int64_t o = 0; o < out; ++o) {
      y[o] = dot(weight.data() + o * in, x, in) + bias[static_cast<std::size_t>(o)];
    }
  }
};

struct TransformerNorm {
  std::vector<float> weight, bias;  // [D]

  void apply(const float* x, float* y, std::int64_t n) const {
    float mean = 0.0f;
    for (std::int64_t k = 0; k < n; ++k) mean += x[k];
    mean /= static_cast<float>(n);
    float variance = 0.0f;
    for (std::int64_t k = 0; k < n; ++k) variance += (x[k] - mean) * (x[k] - mean);
    variance /= static_cast<float>(n);
    const float scale = 1.0f / std::sqrt(variance + kTransformerLayerNormEpsilon);
    for (std::int64_t k = 0; k < n; ++k) {
      y[k] = (x[k] - mean) * scale * weight[static_cast<std::size_t>(k)] + bias[static_cast<std::size_t>(k)];
    }
  }
};

struct TransformerAttention {
  TransformerLinear query, key, value, out;
};

struct TransformerLayer {
  TransformerNorm self_norm, cross_norm, ffn_norm;
  TransformerAttention self_attn, cross_attn;
  TransformerLinear ffn_in, ffn_out;
};

}  // namespace asrdec::detail

namespace asrdec {

struct TransformerDecoderStep::Weights {
  std::string path;
  std::int64_t vocab = 0, dim = 0, encoder_dim = 0, positions = 0, heads = 1, ffn = 0;
  std::optional<std::int32_t> bos, eos;
  std::vector<std::int32_t> prompt;
  std::vector<float> tokens;    // [V, D]
  std::vector<float> position;  // [positions, D]
  std::vector<detail::TransformerLayer> layers;
  detail::TransformerNorm final_norm;
  detail::TransformerLinear classifier;  // [V, D]
};

}  // namespace asrdec
