// The CUDA session of the built-in Transformer decoder step: the weights uploaded once per step object, per-session
// caches on the device, the kernels of transformer_kernels.cu. start() may allocate (the cross-attention keys grow
// with the batch's frames); step() only enqueues work on the caller's stream.

#include "aed/transformer_step_cuda.hpp"

#include <cuda_runtime_api.h>

#include <algorithm>
#include <cstring>
#include <utility>

#include "aed/transformer_kernels.hpp"
#include "asrdec/core/buffer.hpp"
#include "asrdec/core/error.hpp"
#include "core/cuda/check.hpp"

namespace asrdec::detail {

struct TransformerDeviceWeights {
  Device device;
  DeviceBuffer<float> params;
  DeviceBuffer<TransformerLayerRef> layers;
  TransformerModelRef ref{};
};

namespace {

// Appends each array to one host vector and returns the offsets, so a single copy uploads them all.
class ParamPack {
 public:
  std::size_t add(const std::vector<float>& values) {
    const std::size_t at = data.size();
    data.insert(data.end(), values.begin(), values.end());
    return at;
  }
  std::vector<float> data;
};

}  // namespace

std::shared_ptr<const TransformerDeviceWeights> upload_transformer(const TransformerDecoderStep::Weights& w,
                                                                   Device device) {
  ASRDEC_EXPECTS(w.dim <= kTransformerCudaMaxDim, Unsupported, w.path, ": model width ", w.dim,
                 " exceeds the CUDA reference step's ", kTransformerCudaMaxDim);
  const DeviceGuard guard(device);
  ParamPack pack;
  struct LayerOffsets {
    std::size_t v[26];
  };
  const std::size_t tokens = pack.add(w.tokens), positions = pack.add(w.position);
  std::vector<LayerOffsets> offsets;
  for (const TransformerLayer& l : w.layers) {
    const std::vector<float>* arrays[26] = {
        &l.self_norm.weight,      &l.self_norm.bias,      &l.cross_norm.weight,       &l.cross_norm.bias,
        &l.ffn_norm.weight,       &l.ffn_norm.bias,       &l.self_attn.query.weight,  &l.self_attn.query.bias,
        &l.self_attn.key.weight,  &l.self_attn.key.bias,  &l.self_attn.value.weight,  &l.self_attn.value.bias,
        &l.self_attn.out.weight,  &l.self_attn.out.bias,  &l.cross_attn.query.weight, &l.cross_attn.query.bias,
        &l.cross_attn.key.weight, &l.cross_attn.key.bias, &l.cross_attn.value.weight, &l.cross_attn.value.bias,
        &l.cross_attn.out.weight, &l.cross_attn.out.bias, &l.ffn_in.weight,           &l.ffn_in.bias,
        &l.ffn_out.weight,        &l.ffn_out.bias};
    LayerOffsets o{};
    for (int i = 0; i < 26; ++i) o.v[i] = pack.add(*arrays[i]);
    offsets.push_back(o);
  }
  const std::size_t fw = pack.add(w.final_norm.weight), fb = pack.add(w.final_norm.bias);
  const std::size_t cw = pack.add(w.classifier.weight), cb = pack.add(w.classifier.bias);

  auto out = std::make_shared<TransformerDeviceWeights>();
  out->device = device;
  out->params = DeviceBuffer<float>(pack.data.size(), device);
  copy_bytes_async(out->params.data(), device, pack.data.data(), Device::cpu(), pack.data.size() * sizeof(float),
                   nullptr);
  const float* base = out->params.data();
  std::vector<TransformerLayerRef> layers;
  for (const LayerOffsets& o : offsets) {
    const float* p[26];
    for (int i = 0; i < 26; ++i) p[i] = base + o.v[i];
    layers.push_back(TransformerLayerRef{p[0],  p[1],  p[2],  p[3],  p[4],  p[5],  p[6],  p[7],  p[8],
                                         p[9],  p[10], p[11], p[12], p[13], p[14], p[15], p[16], p[17],
                                         p[18], p[19], p[20], p[21], p[22], p[23], p[24], p[25]});
  }
  out->layers = DeviceBuffer<TransformerLayerRef>(layers.size(), device);
  copy_bytes_async(out->layers.data(), device, layers.data(), Device::cpu(),
                   layers.size() * sizeof(TransformerLayerRef), nullptr);
  ASRDEC_CUDA_CHECK(cudaStreamSynchronize(nullptr));  // the host arrays go out of scope
  TransformerModelRef& m = out->ref;
  m.tokens = base + tokens;
  m.positions = base + positions;
  m.final_norm_w = base + fw;
  m.final_norm_b = base + fb;
  m.cls_w = base + cw;
  m.cls_b = base + cb;
  m.layers = out->layers.data();
  m.vocab = static_cast<std::int32_t>(w.vocab);
  m.dim = static_cast<std::int32_t>(w.dim);
  m.encoder_dim = static_cast<std::int32_t>(w.encoder_dim);
  m.ffn = static_cast<std::int32_t>(w.ffn);
  m.heads = static_cast<std::int32_t>(w.heads);
  m.max_positions = static_cast<std::int32_t>(w.positions);
  m.num_layers = static_cast<std::int32_t>(w.layers.size());
  return out;
}

namespace {

class TransformerCudaSession final : public AedStepSession {
 public:
  TransformerCudaSession(std::shared_ptr<const TransformerDeviceWeights> weights, std::int64_t max_rows)
      : w_(std::move(weights)), max_rows_(max_rows) {
    const DeviceGuard guard(w_->device);
    const TransformerModelRef& m = w_->ref;
    const auto row = static_cast<std::size_t>(2) * static_cast<std::size_t>(m.num_layers) *
                     static_cast<std::size_t>(m.max_positions) * static_cast<std::size_t>(m.dim);
    for (int i = 0; i < 2; ++i) {
      cache_[i] = DeviceBuffer<float>(row * static_cast<std::size_t>(max_rows), w_->device);
      utterance_[i] = DeviceBuffer<std::int32_t>(static_cast<std::size_t>(max_rows), w_->device);
    }
  }

  void start(const TensorView& encoder, const std::int64_t* encoder_lengths,
             const std::vector<std::vector<std::int32_t>>& prompts, float* scores, StreamHandle stream) override {
    const DeviceGuard guard(w_->device);
    const TransformerModelRef& m = w_->ref;
    const auto batch = static_cast<std::int64_t>(prompts.size());
    ASRDEC_CHECK_ARG(batch <= max_rows_, "transformer step: ", batch, " utterances exceed the session's ", max_rows_,
                     " rows");
    TensorCheck(encoder, "encoder")
        .ndim(3, "[B, T, E]")
        .dtype(DType::f32)
        .device(w_->device)
        .not_null()
        .non_negative_strides()
        .dim(0, batch, "one row per utterance")
        .dim(2, m.encoder_dim, "the cross-attention key width");
    const std::int64_t T = encoder.size(1);
    const cudaStream_t s = reinterpret_cast<cudaStream_t>(stream);
    // Sizes that depend on the batch: the cross-attention keys and values, the per-row scratch.
    const auto cross = static_cast<std::size_t>(batch * m.num_layers * 2 * T * m.dim);
    if (cross_.size() < cross) cross_ = DeviceBuffer<float>(cross, w_->device);
    scratch_floats_ = m.ffn + std::max<std::int64_t>(m.max_positions, T);
    const auto scratch = static_cast<std::size_t>(max_rows_ * scratch_floats_);
    if (scratch_.size() < scratch) scratch_ = DeviceBuffer<float>(scratch, w_->device);
    max_frames_ = static_cast<std::int32_t>(T);
    // The prompts as per-position rows: tokens, positions, active and emit for each prompt position, then the
    // frames and each row's utterance, all in one pinned block and one copy.
    std::size_t longest = 0;
    for (const auto& p : prompts) longest = std::max(longest, p.size());
    const auto B = static_cast<std::size_t>(batch);
    const std::size_t n = 4 * longest * B + 2 * B;
    if (staged_.size() < n || inputs_.size() < n) {  // both allocated before either is replaced
      PinnedBuffer<std::int32_t> staged(n, w_->device);
      DeviceBuffer<std::int32_t> inputs(n, w_->device);
      staged_ = std::move(staged);
      inputs_ = std::move(inputs);
    }
    std::int32_t* h = staged_.data();
    for (std::size_t p = 0; p < longest; ++p) {
      for (std::size_t b = 0; b < B; ++b) {
        const bool has = p < prompts[b].size();
        h[(4 * p + 0) * B + b] = has ? prompts[b][p] : 0;
        h[(4 * p + 1) * B + b] = static_cast<std::int32_t>(p);
        h[(4 * p + 2) * B + b] = has ? 1 : 0;
        h[(4 * p + 3) * B + b] = has && p + 1 == prompts[b].size() ? 1 : 0;
      }
    }
    for (std::size_t b = 0; b < B; ++b) {
      h[4 * longest * B + b] = static_cast<std::int32_t>(encoder_lengths[b]);
      h[4 * longest * B + B + b] = static_cast<std::int32_t>(b);
    }
    copy_bytes_async(inputs_.data(), w_->device, staged_.data(), Device::cpu(), n * sizeof(std::int32_t), stream);
    const std::int32_t* d = inputs_.data();
    ASRDEC_CUDA_CHECK(cudaMemcpyAsync(utterance_[0].data(), d + 4 * longest * B + B, B * sizeof(std::int32_t),
                                      cudaMemcpyDeviceToDevice, s));
    frames_ = d + 4 * longest * B;
    current_ = 0;
    launch_transformer_cross(m, ref(), encoder.data_as<float>(), encoder.stride(0), encoder.stride(1),
                             encoder.stride(2), static_cast<std::int32_t>(batch), s);
    for (std::size_t p = 0; p < longest; ++p) {
      launch_transformer_rows(m, ref(), 0, d + (4 * p) * B, d + (4 * p + 1) * B, d + (4 * p + 2) * B,
                              d + (4 * p + 3) * B, static_cast<std::int32_t>(batch), scores, s);
    }
  }

  void step(const std::int32_t* parents, const std::int32_t* tokens, const std::int32_t* positions,
            const std::int32_t* active, std::int64_t rows, float* scores, StreamHandle stream) override {
    ASRDEC_CHECK_ARG(rows <= max_rows_, "transformer step: ", rows, " rows exceed the session's ", max_rows_);
    const DeviceGuard guard(w_->device);
    const cudaStream_t s = reinterpret_cast<cudaStream_t>(stream);
    const int to = 1 - current_;
    launch_transformer_gather(w_->ref, ref(), current_, to, parents, positions, active, static_cast<std::int32_t>(rows),
                              s);
    launch_transformer_rows(w_->ref, ref(), to, tokens, positions, active, nullptr, static_cast<std::int32_t>(rows),
                            scores, s);
    current_ = to;
  }

 private:
  TransformerSessionRef ref() {
    TransformerSessionRef r{};
    r.cache[0] = cache_[0].data();
    r.cache[1] = cache_[1].data();
    r.utterance[0] = utterance_[0].data();
    r.utterance[1] = utterance_[1].data();
    r.cross = cross_.data();
    r.frames = frames_;
    r.max_frames = max_frames_;
    r.scratch = scratch_.data();
    r.scratch_floats = scratch_floats_;
    return r;
  }

  std::shared_ptr<const TransformerDeviceWeights> w_;
  std::int64_t max_rows_;
  DeviceBuffer<float> cache_[2];
  DeviceBuffer<std::int32_t> utterance_[2];
  DeviceBuffer<float> cross_, scratch_;
  PinnedBuffer<std::int32_t> staged_;
  DeviceBuffer<std::int32_t> inputs_;
  const std::int32_t* frames_ = nullptr;
  std::int32_t max_frames_ = 0;
  std::int64_t scratch_floats_ = 0;
  int current_ = 0;
};

}  // namespace

std::unique_ptr<AedStepSession> start_transformer_cuda_session(std::shared_ptr<const TransformerDeviceWeights> weights,
                                                               std::int64_t max_rows) {
  return std::make_unique<TransformerCudaSession>(std::move(weights), max_rows);
}

}  // namespace asrdec::detail
