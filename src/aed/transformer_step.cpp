// The built-in reference AED decoder network (asrdec/aed/transformer_step.hpp): weights from safetensors, and the
// CPU session with a per-row self-attention K/V cache reordered by the rows' parents each step.

#include "asrdec/aed/transformer_step.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

#include "aed/transformer_weights.hpp"
#include "asrdec/config.hpp"
#include "asrdec/core/error.hpp"
#include "asrdec/core/safetensors.hpp"
#include "core/dot.hpp"
#include "core/weights.hpp"
#if ASRDEC_WITH_CUDA
#include "aed/transformer_step_cuda.hpp"
#endif

namespace asrdec {

namespace {

using Weights = TransformerDecoderStep::Weights;

class Reader {
 public:
  explicit Reader(const std::string& path) : file_(path) {}

  TensorView tensor(const std::string& name) const {
    ASRDEC_CHECK_ARG(file_.contains(name), file_.path(), ": tensor '", name, "' is missing");
    return file_.tensor(name);
  }
  std::vector<float> floats(const std::string& name, std::initializer_list<std::int64_t> shape) const {
    const TensorView t = tensor(name);
    detail::expect_shape(t, file_.path() + ": " + name, shape);
    return detail::to_floats(t, DType::f32, file_.path() + ": " + name);
  }
  /** Dimension `dim` of a tensor that must have `ndim` dimensions. */
  std::int64_t size(const std::string& name, int ndim, int dim) const {
    const TensorView t = tensor(name);
    ASRDEC_CHECK_ARG(t.ndim() == ndim, file_.path(), ": ", name, ": expected ", ndim, " dimensions, got ",
                     t.shape_string());
    return t.size(dim);
  }
  detail::TransformerLinear linear(const std::string& name, std::int64_t out, std::int64_t in) const {
    detail::TransformerLinear l;
    l.out = out;
    l.in = in;
    l.weight = floats(name + ".weight", {out, in});
    l.bias = floats(name + ".bias", {out});
    return l;
  }
  detail::TransformerNorm norm(const std::string& name, std::int64_t dim) const {
    return detail::TransformerNorm{floats(name + ".weight", {dim}), floats(name + ".bias", {dim})};
  }
  std::optional<std::int64_t> metadata_int(const std::string& key, std::int64_t min, std::int64_t max) const {
    const auto& metadata = file_.metadata();
    const auto found = metadata.find(key);
    if (found == metadata.end()) return std::nullopt;
    std::int64_t value = 0;
    std::size_t used = 0;
    try {
      value = std::stoll(found->second, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (used == 0 || used != found->second.size() || value < min || value > max) {
      throw ParseError(
          file_.path(), 0,
          detail::concat("metadata '", key, "' = '", found->second, "' is not an integer in [", min, ", ", max, "]"));
    }
    return value;
  }
  /** Comma-separated token ids in [0, vocab), or empty when the key is absent. */
  std::vector<std::int32_t> metadata_ids(const std::string& key, std::int64_t vocab) const {
    std::vector<std::int32_t> ids;
    const auto found = file_.metadata().find(key);
    if (found == file_.metadata().end()) return ids;
    std::size_t at = 0;
    const std::string& text = found->second;
    while (at <= text.size()) {
      const std::size_t comma = std::min(text.find(',', at), text.size());
      const std::string field = text.substr(at, comma - at);
      std::int64_t value = -1;
      std::size_t used = 0;
      try {
        value = std::stoll(field, &used);
      } catch (const std::exception&) {
        used = 0;
      }
      if (used == 0 || used != field.size() || value < 0 || value >= vocab || ids.size() >= 4096) {
        throw ParseError(
            file_.path(), 0,
            detail::concat("metadata '", key, "' = '", text, "' is not a list of token ids in [0, ", vocab, ")"));
      }
      ids.push_back(static_cast<std::int32_t>(value));
      at = comma + 1;
    }
    return ids;
  }
  const std::string& path() const { return file_.path(); }

 private:
  SafetensorsFile file_;
};

std::shared_ptr<const Weights> read_weights(const std::string& path) {
  const Reader r(path);
  auto w = std::make_shared<Weights>();
  w->path = path;
  w->vocab = r.size("embedding.tokens", 2, 0);
  w->dim = r.size("embedding.tokens", 2, 1);
  w->positions = r.size("embedding.positions", 2, 0);
  ASRDEC_CHECK_ARG(w->vocab >= 1 && w->vocab <= (std::int64_t{1} << 24), path, ": vocabulary of ", w->vocab,
                   " tokens is outside [1, 2^24]");
  ASRDEC_CHECK_ARG(w->dim >= 1 && w->dim <= 65536, path, ": model width ", w->dim, " is outside [1, 65536]");
  ASRDEC_CHECK_ARG(w->positions >= 2 && w->positions <= 65536, path, ": ", w->positions,
                   " positions are outside [2, 65536]");
  w->heads = r.metadata_int("heads", 1, w->dim).value_or(1);
  ASRDEC_CHECK_ARG(w->dim % w->heads == 0, path, ": model width ", w->dim, " is not a multiple of ", w->heads,
                   " heads");
  if (auto bos = r.metadata_int("bos_id", 0, w->vocab - 1)) w->bos = static_cast<std::int32_t>(*bos);
  if (auto eos = r.metadata_int("eos_id", 0, w->vocab - 1)) w->eos = static_cast<std::int32_t>(*eos);
  w->prompt = r.metadata_ids("prompt", w->vocab);
  if (w->prompt.empty() && w->bos) w->prompt = {*w->bos};
  ASRDEC_CHECK_ARG(static_cast<std::int64_t>(w->prompt.size()) < w->positions, path, ": the prompt of ",
                   w->prompt.size(), " tokens leaves no position to generate");
  w->tokens = r.floats("embedding.tokens", {w->vocab, w->dim});
  w->position = r.floats("embedding.positions", {w->positions, w->dim});
  std::int64_t layers = 0;
  while (layers < 1024 && [&] {
    try {
      r.tensor("layers." + std::to_string(layers) + ".self_norm.weight");
      return true;
    } catch (const InvalidArgument&) {
      return false;
    }
  }()) {
    ++layers;
  }
  ASRDEC_CHECK_ARG(layers >= 1, path, ": no decoder layer (tensor 'layers.0.self_norm.weight' is missing)");
  w->encoder_dim = r.size("layers.0.cross_attn.key.weight", 2, 1);
  w->ffn = r.size("layers.0.ffn.in.weight", 2, 0);
  ASRDEC_CHECK_ARG(w->encoder_dim >= 1 && w->encoder_dim <= 65536 && w->ffn >= 1 && w->ffn <= 262144, path,
                   ": encoder width ", w->encoder_dim, " or feed-forward width ", w->ffn, " out of range");
  const std::int64_t D = w->dim;
  for (std::int64_t i = 0; i < layers; ++i) {
    const std::string p = "layers." + std::to_string(i) + ".";
    detail::TransformerLayer l;
    l.self_norm = r.norm(p + "self_norm", D);
    l.cross_norm = r.norm(p + "cross_norm", D);
    l.ffn_norm = r.norm(p + "ffn_norm", D);
    l.self_attn =
        detail::TransformerAttention{r.linear(p + "self_attn.query", D, D), r.linear(p + "self_attn.key", D, D),
                                     r.linear(p + "self_attn.value", D, D), r.linear(p + "self_attn.out", D, D)};
    l.cross_attn = detail::TransformerAttention{
        r.linear(p + "cross_attn.query", D, D), r.linear(p + "cross_attn.key", D, w->encoder_dim),
        r.linear(p + "cross_attn.value", D, w->encoder_dim), r.linear(p + "cross_attn.out", D, D)};
    l.ffn_in = r.linear(p + "ffn.in", w->ffn, D);
    l.ffn_out = r.linear(p + "ffn.out", D, w->ffn);
    w->layers.push_back(std::move(l));
  }
  w->final_norm = r.norm("final_norm", D);
  w->classifier = r.linear("classifier", w->vocab, D);
  return w;
}

/** Attention of one query over `n` keys/values (rows of `stride` floats), `heads` heads of `width` each. */
void attend(const float* query, const float* keys, const float* values, std::int64_t n, std::int64_t stride,
            std::int64_t heads, std::int64_t width, float* weights, float* out) {
  const float scale = 1.0f / std::sqrt(static_cast<float>(width));
  for (std::int64_t h = 0; h < heads; ++h) {
    const std::int64_t offset = h * width;
    float* o = out + offset;
    std::fill(o, o + width, 0.0f);
    if (n == 0) continue;  // no frames: nothing to attend to
    float top = -std::numeric_limits<float>::infinity();
    for (std::int64_t j = 0; j < n; ++j) {
      weights[j] = detail::dot(query + offset, keys + j * stride + offset, width) * scale;
      top = std::max(top, weights[j]);
    }
    float total = 0.0f;
    for (std::int64_t j = 0; j < n; ++j) {
      weights[j] = std::exp(weights[j] - top);
      total += weights[j];
    }
    for (std::int64_t j = 0; j < n; ++j) {
      const float a = weights[j] / total;
      const float* v = values + j * stride + offset;
      for (std::int64_t k = 0; k < width; ++k) o[k] += a * v[k];
    }
  }
}

/** The CPU session. The self-attention cache holds, per row and layer, the keys and values of every fed position;
 *  a step gathers it by parent into the other buffer, then appends. Cross-attention keys and values are computed
 *  once per utterance in start(). */
class TransformerCpuSession final : public AedStepSession {
 public:
  TransformerCpuSession(std::shared_ptr<const Weights> w, std::int64_t max_rows)
      : w_(std::move(w)), max_rows_(max_rows) {
    const std::int64_t D = w_->dim;
    // Bounded by the checks at load: at most 1024 layers x 65536 positions x 2 x 65536 floats.
    row_floats_ = static_cast<std::int64_t>(w_->layers.size()) * w_->positions * 2 * D;
    x_.resize(static_cast<std::size_t>(D));
    h_.resize(static_cast<std::size_t>(D));
    q_.resize(static_cast<std::size_t>(D));
    a_.resize(static_cast<std::size_t>(D));
    f_.resize(static_cast<std::size_t>(w_->ffn));
    logits_.resize(static_cast<std::size_t>(w_->vocab));
  }

  void start(const TensorView& encoder, const std::int64_t* encoder_lengths,
             const std::vector<std::vector<std::int32_t>>& prompts, float* scores, StreamHandle) override {
    const std::int64_t batch = static_cast<std::int64_t>(prompts.size());
    ASRDEC_CHECK_ARG(batch <= max_rows_, "transformer step: ", batch, " utterances exceed the session's ", max_rows_,
                     " rows");
    TensorCheck(encoder, "encoder")
        .ndim(3, "[B, T, E]")
        .dtype(DType::f32)
        .device(Device::cpu())
        .not_null()
        .non_negative_strides()
        .dim(0, batch, "one row per utterance")
        .dim(2, w_->encoder_dim, "the cross-attention key width");
    const std::int64_t D = w_->dim;
    const std::size_t layers = w_->layers.size();
    // Cross-attention keys and values of every valid frame, per utterance and layer.
    frames_.assign(static_cast<std::size_t>(batch), 0);
    cross_.assign(static_cast<std::size_t>(batch), {});
    const float* enc = encoder.data_as<float>();
    std::vector<float> frame(static_cast<std::size_t>(w_->encoder_dim));
    for (std::int64_t b = 0; b < batch; ++b) {
      const std::int64_t n = encoder_lengths[b];
      frames_[static_cast<std::size_t>(b)] = n;
      auto& kv = cross_[static_cast<std::size_t>(b)];
      kv.assign(layers * static_cast<std::size_t>(2 * n * D), 0.0f);
      for (std::int64_t t = 0; t < n; ++t) {
        for (std::int64_t e = 0; e < w_->encoder_dim; ++e) {
          const float value = enc[b * encoder.stride(0) + t * encoder.stride(1) + e * encoder.stride(2)];
          ASRDEC_CHECK_ARG(std::isfinite(value), "encoder[", b, ", ", t, ", ", e, "] is not finite (", value, ")");
          frame[static_cast<std::size_t>(e)] = value;
        }
        for (std::size_t l = 0; l < layers; ++l) {
          float* keys = kv.data() + l * static_cast<std::size_t>(2 * n * D);
          w_->layers[l].cross_attn.key.apply(frame.data(), keys + t * D);
          w_->layers[l].cross_attn.value.apply(frame.data(), keys + n * D + t * D);
        }
      }
    }
    cache_[0].assign(static_cast<std::size_t>(batch * row_floats_), 0.0f);
    utterance_[0].resize(static_cast<std::size_t>(batch));
    for (std::int64_t b = 0; b < batch; ++b) {
      utterance_[0][static_cast<std::size_t>(b)] = static_cast<std::int32_t>(b);
      const auto& prompt = prompts[static_cast<std::size_t>(b)];
      for (std::size_t p = 0; p < prompt.size(); ++p) {
        forward(b, 0, prompt[p], static_cast<std::int64_t>(p), scores + b * w_->vocab, p + 1 == prompt.size());
      }
    }
    current_ = 0;
  }

  void step(const std::int32_t* parents, const std::int32_t* tokens, const std::int32_t* positions,
            const std::int32_t* active, std::int64_t rows, float* scores, StreamHandle) override {
    ASRDEC_CHECK_ARG(rows <= max_rows_, "transformer step: ", rows, " rows exceed the session's ", max_rows_);
    const int from = current_, to = 1 - current_;
    const std::int64_t previous = static_cast<std::int64_t>(utterance_[from].size());
    cache_[to].resize(static_cast<std::size_t>(rows * row_floats_));
    utterance_[to].assign(static_cast<std::size_t>(rows), 0);
    for (std::int64_t r = 0; r < rows; ++r) {
      if (!active[r]) continue;
      const std::int32_t parent = parents[r];
      ASRDEC_CHECK_ARG(parent >= 0 && parent < previous, "transformer step: parent ", parent, " of row ", r,
                       " outside the previous call's ", previous, " rows");
      ASRDEC_CHECK_ARG(positions[r] >= 0 && positions[r] < w_->positions, "transformer step: position ", positions[r],
                       " of row ", r, " outside [0, ", w_->positions, ")");
      ASRDEC_CHECK_ARG(tokens[r] >= 0 && tokens[r] < w_->vocab, "transformer step: token ", tokens[r], " of row ", r,
                       " outside [0, ", w_->vocab, ")");
      utterance_[to][static_cast<std::size_t>(r)] = utterance_[from][static_cast<std::size_t>(parent)];
      // Only the positions before the new one are read, so only they are gathered.
      const std::int64_t used = positions[r] * w_->dim;
      for (std::size_t l = 0; l < w_->layers.size(); ++l) {
        for (int kv = 0; kv < 2; ++kv) {
          const float* src = cache_[from].data() + parent * row_floats_ + slot(l, kv);
          std::copy(src, src + used, cache_[to].data() + r * row_floats_ + slot(l, kv));
        }
      }
    }
    current_ = to;
    for (std::int64_t r = 0; r < rows; ++r) {
      if (active[r]) forward(r, to, tokens[r], positions[r], scores + r * w_->vocab, true);
    }
  }

 private:
  std::int64_t slot(std::size_t layer, int kv) const {
    return (static_cast<std::int64_t>(layer) * 2 + kv) * w_->positions * w_->dim;
  }

  /** Feeds `token` at `position` to row `row` of cache buffer `buffer`; writes log-probabilities when `output`. */
  void forward(std::int64_t row, int buffer, std::int32_t token, std::int64_t position, float* scores, bool output) {
    const std::int64_t D = w_->dim, width = D / w_->heads;
    const float* te = w_->tokens.data() + token * D;
    const float* pe = w_->position.data() + position * D;
    for (std::int64_t k = 0; k < D; ++k) x_[static_cast<std::size_t>(k)] = te[k] + pe[k];
    const std::size_t utterance = static_cast<std::size_t>(utterance_[buffer][static_cast<std::size_t>(row)]);
    const std::int64_t frames = frames_[utterance];
    weights_.resize(static_cast<std::size_t>(std::max(w_->positions, frames) + 1));
    for (std::size_t l = 0; l < w_->layers.size(); ++l) {
      const detail::TransformerLayer& layer = w_->layers[l];
      float* keys = cache_[buffer].data() + row * row_floats_ + slot(l, 0);
      float* values = cache_[buffer].data() + row * row_floats_ + slot(l, 1);
      layer.self_norm.apply(x_.data(), h_.data(), D);
      layer.self_attn.query.apply(h_.data(), q_.data());
      layer.self_attn.key.apply(h_.data(), keys + position * D);
      layer.self_attn.value.apply(h_.data(), values + position * D);
      attend(q_.data(), keys, values, position + 1, D, w_->heads, width, weights_.data(), a_.data());
      layer.self_attn.out.apply(a_.data(), h_.data());
      for (std::int64_t k = 0; k < D; ++k) x_[static_cast<std::size_t>(k)] += h_[static_cast<std::size_t>(k)];

      layer.cross_norm.apply(x_.data(), h_.data(), D);
      layer.cross_attn.query.apply(h_.data(), q_.data());
      const float* cross = cross_[utterance].data() + l * static_cast<std::size_t>(2 * frames * D);
      attend(q_.data(), cross, cross + frames * D, frames, D, w_->heads, width, weights_.data(), a_.data());
      layer.cross_attn.out.apply(a_.data(), h_.data());
      for (std::int64_t k = 0; k < D; ++k) x_[static_cast<std::size_t>(k)] += h_[static_cast<std::size_t>(k)];

      layer.ffn_norm.apply(x_.data(), h_.data(), D);
      layer.ffn_in.apply(h_.data(), f_.data());
      for (float& v : f_) v = std::max(v, 0.0f);
      layer.ffn_out.apply(f_.data(), h_.data());
      for (std::int64_t k = 0; k < D; ++k) x_[static_cast<std::size_t>(k)] += h_[static_cast<std::size_t>(k)];
    }
    if (!output) return;
    w_->final_norm.apply(x_.data(), h_.data(), D);
    w_->classifier.apply(h_.data(), logits_.data());
    float top = -std::numeric_limits<float>::infinity();
    for (float v : logits_) top = std::max(top, v);
    double total = 0.0;
    for (float v : logits_) total += std::exp(static_cast<double>(v - top));
    const float log_total = static_cast<float>(std::log(total));
    for (std::int64_t v = 0; v < w_->vocab; ++v) scores[v] = logits_[static_cast<std::size_t>(v)] - top - log_total;
  }

  std::shared_ptr<const Weights> w_;
  std::int64_t max_rows_;
  std::int64_t row_floats_ = 0;
  std::vector<std::int64_t> frames_;
  std::vector<std::vector<float>> cross_;
  std::vector<float> cache_[2];
  std::vector<std::int32_t> utterance_[2];
  int current_ = 0;
  std::vector<float> x_, h_, q_, a_, f_, logits_, weights_;
};

}  // namespace

std::shared_ptr<TransformerDecoderStep> TransformerDecoderStep::load(const std::string& path, Device device) {
  ASRDEC_EXPECTS(device.is_cpu() || ASRDEC_WITH_CUDA, Unsupported, "TransformerDecoderStep on ", device.to_string(),
                 " needs a build with CUDA");
  std::shared_ptr<const Weights> weights = read_weights(path);
  std::shared_ptr<const detail::TransformerDeviceWeights> on_device;
#if ASRDEC_WITH_CUDA
  if (device.is_cuda()) on_device = detail::upload_transformer(*weights, device);
#endif
  return std::shared_ptr<TransformerDecoderStep>(new TransformerDecoderStep(std::move(weights), device, on_device));
}

TransformerDecoderStep::TransformerDecoderStep(std::shared_ptr<const Weights> weights, Device device,
                                               std::shared_ptr<const detail::TransformerDeviceWeights> on_device)
    : weights_(std::move(weights)), device_(device), on_device_(std::move(on_device)) {}
TransformerDecoderStep::~TransformerDecoderStep() = default;
Device TransformerDecoderStep::device() const { return device_; }
std::int64_t TransformerDecoderStep::vocab_size() const { return weights_->vocab; }
std::int64_t TransformerDecoderStep::max_positions() const { return weights_->positions; }
std::int64_t TransformerDecoderStep::model_dim() const { return weights_->dim; }
std::int64_t TransformerDecoderStep::encoder_dim() const { return weights_->encoder_dim; }
std::int64_t TransformerDecoderStep::layers() const { return static_cast<std::int64_t>(weights_->layers.size()); }
std::int64_t TransformerDecoderStep::heads() const { return weights_->heads; }
std::optional<std::int32_t> TransformerDecoderStep::bos_id() const { return weights_->bos; }
std::optional<std::int32_t> TransformerDecoderStep::eos_id() const { return weights_->eos; }
std::vector<std::int32_t> TransformerDecoderStep::default_prompt() const { return weights_->prompt; }

std::unique_ptr<AedStepSession> TransformerDecoderStep::start_session(std::int64_t max_rows) const {
  ASRDEC_CHECK_ARG(max_rows >= 1, "transformer step: max_rows must be at least 1, got ", max_rows);
#if ASRDEC_WITH_CUDA
  if (on_device_) return detail::start_transformer_cuda_session(on_device_, max_rows);
#endif
  return std::make_unique<TransformerCpuSession>(weights_, max_rows);
}

std::string TransformerDecoderStep::describe() const {
  return detail::concat("Transformer decoder (", weights_->path, "): V=", weights_->vocab, " D=", weights_->dim,
                        " E=", weights_->encoder_dim, " layers=", weights_->layers.size(), " heads=", weights_->heads,
                        " ffn=", weights_->ffn, " positions=", weights_->positions);
}

}  // namespace asrdec
