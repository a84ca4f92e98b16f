#pragma once
/**
 * @file
 * TransformerDecoderStep: a small built-in AED decoder network (an AedDecoderStep), so that the samples, tests and
 * benchmarks of AED decoding run without an engine. It is a reference, not a fast inference engine: real models
 * belong to the caller's engine.
 *
 * The network (pre-norm Transformer decoder, docs/model-format.md#aed):
 *   x = embedding.tokens[token] + embedding.positions[position]
 *   per layer i:  x += SelfAttention(LayerNorm(x))          causal, over the hypothesis' own prefix (a K/V cache)
 *                 x += CrossAttention(LayerNorm(x), encoder) over the utterance's valid frames
 *                 x += W_out · relu(W_in · LayerNorm(x) + b_in) + b_out
 *   scores = log_softmax(classifier · LayerNorm(x) + bias)
 * with `heads` attention heads of D / heads dimensions each, layer-norm epsilon 1e-5. On a CUDA device the encoder
 * output given to decode() must be in that device's memory (its values are not checked for NaN there). Weights are
 * read from a
 * safetensors file (F32, F16 or BF16, used as fp32), metadata "heads" (default 1) and optionally "bos_id",
 * "eos_id" and "prompt" (comma-separated token ids). The encoder output given to decode() must be fp32 [B, T, E] with E
 * the cross-attention key width.
 */

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "asrdec/aed/aed_step.hpp"
#include "asrdec/core/export.hpp"

namespace asrdec {

namespace detail {
struct TransformerDeviceWeights;
}

class ASRDEC_API TransformerDecoderStep final : public AedDecoderStep {
 public:
  /** Loads the weights onto `device` (the CPU, or a CUDA device: a reference kernel, a block per row, for models up
   *  to 2048 wide). Throws FileError / ParseError for an unreadable or malformed file, InvalidArgument naming the
   *  tensor for a missing tensor or a shape that does not fit, Unsupported for a CUDA device in a build without CUDA
   *  or a model too wide for the CUDA kernel. */
  static std::shared_ptr<TransformerDecoderStep> load(const std::string& path, Device device = Device::cpu());

  ~TransformerDecoderStep() override;
  Device device() const override;
  std::int64_t vocab_size() const override;
  std::int64_t max_positions() const override;
  std::unique_ptr<AedStepSession> start_session(std::int64_t max_rows) const override;

  std::int64_t model_dim() const;    ///< D
  std::int64_t encoder_dim() const;  ///< E
  std::int64_t layers() const;
  std::int64_t heads() const;
  /** The special tokens named in the file's metadata, if any. */
  std::optional<std::int32_t> bos_id() const;
  std::optional<std::int32_t> eos_id() const;
  /** The prompt the file suggests (metadata "prompt", comma-separated token ids), else {bos_id}, else empty. */
  std::vector<std::int32_t> default_prompt() const;
  std::string describe() const;

  struct Weights;

 private:
  TransformerDecoderStep(std::shared_ptr<const Weights> weights, Device device,
                         std::shared_ptr<const detail::TransformerDeviceWeights> on_device);
  std::shared_ptr<const Weights> weights_;
  Device device_;
  std::shared_ptr<const detail::TransformerDeviceWeights> on_device_;  // CUDA steps only
};

}  // namespace asrdec
