#include "asrdec/transducer/beam_decoder.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

#include "asrdec/core/error.hpp"
#include "asrdec/detail/transducer_step.hpp"
#include "core/exclusive_use.hpp"
#include "core/thread_pool.hpp"
#include "core/utterance_channels.hpp"
#include "hyps/beam_channel.hpp"
#include "lm/fusion_checks.hpp"
#include "transducer/beam/aes_step.hpp"
#include "transducer/beam/beam_backend.hpp"

namespace asrdec {

const char* to_string(TransducerBeamAlgorithm algorithm) noexcept {
  switch (algorithm) {
    case TransducerBeamAlgorithm::alsd:
      return "alsd++";
    case TransducerBeamAlgorithm::aes:
      return "aes++";
    case TransducerBeamAlgorithm::wind:
      return "wind-beam";
  }
  return "unknown";
}

const char* to_string(FusionPruning pruning) noexcept { return pruning == FusionPruning::early ? "early" : "late"; }

const char* to_string(BlankLmScoring scoring) noexcept {
  return scoring == BlankLmScoring::none ? "none" : "lm-weighted-full";
}

TransducerBeamAlgorithm parse_beam_algorithm(std::string_view name) {
  if (name == "alsd++" || name == "alsd" || name == "malsd") return TransducerBeamAlgorithm::alsd;
  if (name == "aes++" || name == "aes" || name == "maes") return TransducerBeamAlgorithm::aes;
  if (name == "wind-beam" || name == "wind") return TransducerBeamAlgorithm::wind;
  throw InvalidArgument(
      detail::concat("unknown beam-search algorithm '", name, "': expected alsd++, aes++ or wind-beam"));
}

FusionPruning parse_fusion_pruning(std::string_view name) {
  if (name == "early") return FusionPruning::early;
  if (name == "late") return FusionPruning::late;
  throw InvalidArgument(detail::concat("unknown fusion pruning '", name, "': expected early or late"));
}

BlankLmScoring parse_blank_lm_scoring(std::string_view name) {
  if (name == "none") return BlankLmScoring::none;
  if (name == "full" || name == "lm-weighted-full" || name == "lm_weighted_full") {
    return BlankLmScoring::lm_weighted_full;
  }
  throw InvalidArgument(detail::concat("unknown blank LM scoring '", name, "': expected none or full"));
}

void TransducerBeamConfig::validate() const {
  ASRDEC_CHECK_ARG(beam >= 1 && beam <= detail::kMaxBeam, "TransducerBeamConfig.beam must be in [1, ", detail::kMaxBeam,
                   "], got ", beam);
  ASRDEC_CHECK_ARG(max_symbols_per_frame >= 1 && max_symbols_per_frame <= detail::kMaxSymbolsPerFrame,
                   "TransducerBeamConfig.max_symbols_per_frame must be in [1, ", detail::kMaxSymbolsPerFrame, "], got ",
                   max_symbols_per_frame);
  ASRDEC_CHECK_ARG(aes_num_steps >= 1 && aes_num_steps <= 64,
                   "TransducerBeamConfig.aes_num_steps must be in [1, 64], got ", aes_num_steps);
  ASRDEC_CHECK_ARG(aes_expansion_beta >= 0 && aes_expansion_beta <= detail::kMaxAesExpansionBeta,
                   "TransducerBeamConfig.aes_expansion_beta must be in [0, ", detail::kMaxAesExpansionBeta, "], got ",
                   aes_expansion_beta);
  ASRDEC_CHECK_ARG(aes_expansion_gamma > 0.0f, "TransducerBeamConfig.aes_expansion_gamma must be positive, got ",
                   aes_expansion_gamma);
  ASRDEC_CHECK_ARG(wind_window >= 1 && wind_window <= detail::kMaxWindow,
                   "TransducerBeamConfig.wind_window must be in [1, ", detail::kMaxWindow, "], got ", wind_window);
  ASRDEC_CHECK_ARG(std::isfinite(lm_weight), "TransducerBeamConfig.lm_weight must be finite, got ", lm_weight);
  ASRDEC_CHECK_ARG(std::isfinite(boost_weight), "TransducerBeamConfig.boost_weight must be finite, got ", boost_weight);
  ASRDEC_CHECK_ARG(max_device_bytes >= 0, "TransducerBeamConfig.max_device_bytes must be 0 (no cap) or positive, got ",
                   max_device_bytes);
  ASRDEC_CHECK_ARG(threads >= 0 && threads <= 1024,
                   "TransducerBeamConfig.threads must be in [0, 1024] (0: every core), got ", threads);
}

std::string TransducerBeamConfig::to_string() const {
  const bool fused = lm != nullptr || boost != nullptr;
  return detail::concat(
      "TransducerBeamConfig{algorithm=", asrdec::to_string(algorithm), ", beam=", beam,
      algorithm == TransducerBeamAlgorithm::aes
          ? detail::concat(", aes_num_steps=", aes_num_steps, ", aes_expansion_beta=", aes_expansion_beta,
                           ", aes_expansion_gamma=", aes_expansion_gamma)
          : detail::concat(", max_symbols_per_frame=", max_symbols_per_frame),
      algorithm == TransducerBeamAlgorithm::wind ? detail::concat(", wind_window=", wind_window) : "",
      ", length_normalized=", length_normalized ? "true" : "false",
      ", unique_transcripts=", unique_transcripts ? "true" : "false",
      lm != nullptr ? detail::concat(", lm=", lm->order(), "-gram, lm_weight=", lm_weight) : "",
      boost != nullptr ? detail::concat(", boost=", boost->num_phrases(), " phrases, boost_weight=", boost_weight) : "",
      fused ? detail::concat(", pruning=", asrdec::to_string(pruning),
                             ", blank_scoring=", asrdec::to_string(blank_scoring))
            : "",
      ", graph_mode=", asrdec::to_string(graph_mode), ", check_values=", check_values ? "true" : "false",
      max_device_bytes > 0 ? detail::concat(", max_device_bytes=", max_device_bytes) : "",
      threads > 0 ? detail::concat(", threads=", threads) : "", "}");
}

namespace detail {

BeamFusionRule beam_fusion_rule(const TransducerBeamConfig& config) {
  BeamFusionRule rule;
  rule.active = config.lm != nullptr || config.boost != nullptr;
  rule.late = config.pruning == FusionPruning::late;
  rule.blank_full = config.blank_scoring == BlankLmScoring::lm_weighted_full;
  rule.lambda =
      (config.lm != nullptr ? config.lm_weight : 0.0f) + (config.boost != nullptr ? config.boost_weight : 0.0f);
  // NeMo's values: ALSD++ clamps harder (chosen for bf16 log-probabilities).
  rule.blank_clamp = config.algorithm == TransducerBeamAlgorithm::aes ? 1e-6f : 1e-2f;
  return rule;
}

std::int32_t beam_worst_history(const TransducerBeamConfig& config, std::int64_t frames) {
  const bool aes = config.algorithm == TransducerBeamAlgorithm::aes;
  const std::int64_t per_frame = aes ? config.aes_num_steps : config.max_symbols_per_frame;
  const std::int64_t worst = std::max<std::int64_t>(1, frames * (per_frame + 1));
  ASRDEC_CHECK_ARG(worst <= std::numeric_limits<std::int32_t>::max(), "enc_proj has too many frames (", frames,
                   ") for ", to_string(config.algorithm), " beam search with ",
                   aes ? "aes_num_steps " : "max_symbols_per_frame ", per_frame);
  return static_cast<std::int32_t>(worst);
}

/** The checks decoders and the reference make on a beam config against the model. */
void check_beam_model(const TransducerModel& model, const TransducerBeamConfig& config) {
  ASRDEC_EXPECTS(config.algorithm == TransducerBeamAlgorithm::alsd || model.type() == TransducerType::rnnt, Unsupported,
                 to_string(config.algorithm), " beam search is for RNN-T models; use alsd++ for a ",
                 to_string(model.type()), " model");
  if (config.lm == nullptr && config.boost == nullptr) return;
  check_fusion_device(config.lm.get(), config.boost.get(), model.device(), "TransducerBeamConfig", "model");
  check_fusion_vocab(config.lm.get(), config.boost.get(), model.vocab_size(), concat("the model ", model.vocab_size()));
}

}  // namespace detail

struct TransducerBeamDecoder::Impl {
  Impl(const TransducerModel& m, const TransducerBeamConfig& c, const BatchLimits& limits)
      : model(m), config(c), open(limits.max_open_utterances, "TransducerBeamDecoder") {}

  TransducerModel model;
  TransducerBeamConfig config;
  // CUDA: one executor. CPU: one per thread of `pool`; a call's rows are cut into at most that many contiguous
  // slices, slice i decoded by executor i.
  std::vector<std::unique_ptr<detail::TransducerBeamBackend>> backends;
  std::unique_ptr<detail::ThreadPool> pool;
  std::int64_t last_slices = 0;               // executors that searched the last call (loop_counts)
  detail::UtteranceChannels open;             // streaming
  std::vector<detail::BeamChannel> channels;  // by slot of `open`, grown as slots are first used
  detail::OwnerSlot owner;
};

namespace {

using namespace detail;

std::unique_ptr<TransducerBeamBackend> make_cpu_backend(const TransducerModel& model,
                                                        const TransducerBeamConfig& config, BatchLimits limits) {
  switch (config.algorithm) {
    case TransducerBeamAlgorithm::aes:
      return make_aes_cpu(model, config, limits);
    case TransducerBeamAlgorithm::wind:
      return make_wind_beam_cpu(model, config, limits);
    case TransducerBeamAlgorithm::alsd:
      break;
  }
  return make_alsd_cpu(model, config, limits);
}

// The slices of a call of `batch` rows: [first(i), first(i + 1)) for i < count.
struct Slices {
  std::int64_t batch, count;
  std::int64_t first(std::int64_t i) const { return i * batch / count; }
  std::int64_t size(std::int64_t i) const { return first(i + 1) - first(i); }
};

Slices slices_of(const TransducerBeamDecoder::Impl& self, std::int64_t batch) {
  return Slices{
      batch, std::max<std::int64_t>(1, std::min<std::int64_t>(batch, static_cast<std::int64_t>(self.backends.size())))};
}

// Rows [first, first + count) of a validated CPU request, as a request of their own (errors name the caller's rows).
TransducerInput rows_of(const TransducerInput& p, std::int64_t first, std::int64_t count) {
  TransducerInput out;
  out.enc_proj = p.enc_proj;
  out.enc = p.enc.rows_from(first);
  out.batch = count;
  out.frames = p.frames;
  out.lengths.assign(p.lengths.begin() + first, p.lengths.begin() + first + count);
  return out;
}

template <class T>
std::vector<T> part(const std::vector<T>& whole, std::int64_t first, std::int64_t count) {
  return std::vector<T>(whole.begin() + first, whole.begin() + first + count);
}

// The counts of the slice, among the first `slices` executors, that made the most joint passes (then the most outer
// passes): one slice's counts, so that joint_passes stays outer (+ inner) as BeamLoopCounts defines it.
BeamLoopCounts slowest_slice(const std::vector<std::unique_ptr<TransducerBeamBackend>>& backends, std::int64_t slices) {
  BeamLoopCounts slowest;
  for (std::int64_t i = 0; i < slices; ++i) {
    const BeamLoopCounts c = backends[static_cast<std::size_t>(i)]->loop_counts();
    if (c.joint_passes > slowest.joint_passes || (c.joint_passes == slowest.joint_passes && c.outer > slowest.outer)) {
      slowest = c;
    }
  }
  return slowest;
}

// Whole utterances. CPU slices are decoded in parallel, each by its own executor; functions of this file rather than
// lambdas in the decoder's members, whose types the shared library would export.
std::vector<std::vector<Hypothesis>> decode_beams(TransducerBeamDecoder::Impl& self, const TransducerInput& p,
                                                  const std::vector<std::int32_t>& roots, StreamHandle stream) {
  const Slices slices = slices_of(self, p.batch);
  self.last_slices = slices.count;
  if (slices.count == 1) return self.backends[0]->decode(p, roots, stream);
  std::vector<std::vector<Hypothesis>> beams(static_cast<std::size_t>(p.batch));
  self.pool->parallel_for(slices.count, [&](std::int64_t i, int /*worker*/) {
    const std::int64_t first = slices.first(i), count = slices.size(i);
    std::vector<std::vector<Hypothesis>> part_beams =
        self.backends[static_cast<std::size_t>(i)]->decode(rows_of(p, first, count), part(roots, first, count), stream);
    std::move(part_beams.begin(), part_beams.end(), beams.begin() + first);
  });
  return beams;
}

// A streaming call: every slice is searched (in parallel) before any channel takes a new state, so a bad value in
// any row changes no utterance.
void decode_chunk_slices(TransducerBeamDecoder::Impl& self, const TransducerInput& p, const ChunkPlan& plan,
                         const std::vector<ChunkRow>& rows, const std::vector<std::int32_t>& roots,
                         std::vector<BeamChannel*>& lanes, StreamHandle stream) {
  const Slices slices = slices_of(self, p.batch);
  self.last_slices = slices.count;
  if (slices.count == 1) {
    self.backends[0]->search_chunks(p, plan, rows, roots, lanes, stream);
    self.backends[0]->save_chunks();
    return;
  }
  // The slices' arguments, alive until every slice has saved.
  struct Slice {
    TransducerInput input;
    ChunkPlan plan;
    std::vector<ChunkRow> rows;
    std::vector<std::int32_t> roots;
    std::vector<BeamChannel*> lanes;
  };
  std::vector<Slice> parts(static_cast<std::size_t>(slices.count));
  for (std::int64_t i = 0; i < slices.count; ++i) {
    const std::int64_t first = slices.first(i), count = slices.size(i);
    Slice& s = parts[static_cast<std::size_t>(i)];
    s.input = rows_of(p, first, count);
    s.plan = ChunkPlan{part(plan.slot, first, count), part(plan.fresh, first, count), part(plan.offset, first, count)};
    s.rows = part(rows, first, count);
    s.roots = part(roots, first, count);
    s.lanes = part(lanes, first, count);
  }
  self.pool->parallel_for(slices.count, [&](std::int64_t i, int /*worker*/) {
    Slice& s = parts[static_cast<std::size_t>(i)];
    self.backends[static_cast<std::size_t>(i)]->search_chunks(s.input, s.plan, s.rows, s.roots, s.lanes, stream);
  });
  self.pool->parallel_for(
      slices.count, [&](std::int64_t i, int /*worker*/) { self.backends[static_cast<std::size_t>(i)]->save_chunks(); });
}

}  // namespace

TransducerBeamDecoder::TransducerBeamDecoder(const TransducerModel& model, TransducerBeamConfig config,
                                             BatchLimits limits)
    : impl_(std::make_unique<Impl>(model, config, limits)) {
  config.validate();
  limits.validate();
  detail::check_beam_model(model, config);
#if ASRDEC_WITH_CUDA
  if (model.device().is_cuda()) {
    impl_->backends.push_back(detail::make_transducer_beam_cuda(model, config, limits));
    return;
  }
#endif
  const int threads = detail::resolve_threads(config.threads);
  impl_->pool = std::make_unique<detail::ThreadPool>(threads);
  // Each executor takes a slice of a call's rows: its buffers start at a share of max_batch and grow when needed.
  BatchLimits share = limits;
  share.max_batch = (limits.max_batch + threads - 1) / threads;
  for (int i = 0; i < threads; ++i) impl_->backends.push_back(make_cpu_backend(model, config, share));
}

TransducerBeamDecoder::~TransducerBeamDecoder() = default;
TransducerBeamDecoder::TransducerBeamDecoder(TransducerBeamDecoder&&) noexcept = default;
TransducerBeamDecoder& TransducerBeamDecoder::operator=(TransducerBeamDecoder&&) noexcept = default;

std::vector<std::vector<Hypothesis>> TransducerBeamDecoder::decode_nbest(const TensorView& enc_proj,
                                                                         const TensorView& lengths,
                                                                         StreamHandle stream) {
  Impl& self = detail::live(impl_, "TransducerBeamDecoder");
  const detail::ExclusiveCall call(self.owner, "TransducerBeamDecoder::decode_nbest");
  self.last_slices = 0;  // a call refused before the search counts nothing
  const detail::TransducerInput problem = detail::make_transducer_input(self.model, enc_proj, lengths, stream);
  if (self.config.boost != nullptr) self.config.boost->check_batch(problem.batch);
  std::vector<std::int32_t> roots(static_cast<std::size_t>(problem.batch), 0);
  if (self.config.boost != nullptr) {
    for (std::int64_t b = 0; b < problem.batch; ++b)
      roots[static_cast<std::size_t>(b)] = self.config.boost->root_for(b, problem.batch);
  }
  std::vector<std::vector<Hypothesis>> beams = decode_beams(self, problem, roots, stream);
  if (self.config.unique_transcripts) {
    for (auto& beam : beams) drop_repeated_transcripts(beam);
  }
  return beams;
}

std::vector<Hypothesis> TransducerBeamDecoder::decode(const TensorView& enc_proj, const TensorView& lengths,
                                                      StreamHandle stream) {
  std::vector<std::vector<Hypothesis>> beams = decode_nbest(enc_proj, lengths, stream);
  std::vector<Hypothesis> out;
  out.reserve(beams.size());
  for (auto& beam : beams) out.push_back(beam.empty() ? Hypothesis{} : std::move(beam.front()));
  return out;
}

std::vector<Hypothesis> TransducerBeamDecoder::decode_chunks(const std::vector<ChunkRow>& rows,
                                                             const TensorView& enc_proj, const TensorView& lengths,
                                                             StreamHandle stream) {
  Impl& self = detail::live(impl_, "TransducerBeamDecoder");
  const detail::ExclusiveCall call(self.owner, "TransducerBeamDecoder::decode_chunks");
  self.last_slices = 0;  // a call refused before the search counts nothing
  const detail::TransducerInput problem = detail::make_transducer_input(self.model, enc_proj, lengths, stream);
  ASRDEC_CHECK_ARG(static_cast<std::int64_t>(rows.size()) == problem.batch,
                   "TransducerBeamDecoder::decode_chunks: ", rows.size(), " rows for a batch of ", problem.batch);
  const detail::ChunkPlan plan = self.open.plan(rows, problem.lengths);
  const std::vector<std::int32_t> roots =
      detail::boost_roots_of(rows, self.config.boost.get(), "TransducerBeamDecoder");
  for (const std::int32_t slot : plan.slot) {
    if (static_cast<std::size_t>(slot) >= self.channels.size())
      self.channels.resize(static_cast<std::size_t>(slot) + 1);
  }
  std::vector<detail::BeamChannel*> lanes;  // into `channels`, which no longer grows in this call
  for (const std::int32_t slot : plan.slot) lanes.push_back(&self.channels[static_cast<std::size_t>(slot)]);
  decode_chunk_slices(self, problem, plan, rows, roots, lanes, stream);
  self.open.commit(rows, plan, problem.lengths);
  std::vector<Hypothesis> out(rows.size());
  for (std::size_t b = 0; b < rows.size(); ++b) {
    std::vector<Hypothesis> beam = detail::beam_channel_hypotheses(
        *lanes[b], self.config.length_normalized, self.config.lm != nullptr, self.config.boost != nullptr);
    if (!beam.empty()) out[b] = std::move(beam.front());
    out[b].is_final = rows[b].last;
    if (rows[b].last) *lanes[b] = detail::BeamChannel{};  // its memory goes back now, not on reuse
  }
  return out;
}

bool TransducerBeamDecoder::cancel(std::int64_t utterance) {
  Impl& self = detail::live(impl_, "TransducerBeamDecoder");
  const detail::ExclusiveCall call(self.owner, "TransducerBeamDecoder::cancel");
  const std::int32_t slot = self.open.cancel(utterance);
  if (slot >= 0) self.channels[static_cast<std::size_t>(slot)] = detail::BeamChannel{};
  return slot >= 0;
}

std::int64_t TransducerBeamDecoder::open_utterances() const {
  return detail::live(impl_, "TransducerBeamDecoder").open.open();
}

const TransducerModel& TransducerBeamDecoder::model() const {
  return detail::live(impl_, "TransducerBeamDecoder").model;
}
const TransducerBeamConfig& TransducerBeamDecoder::config() const {
  return detail::live(impl_, "TransducerBeamDecoder").config;
}
GraphMode TransducerBeamDecoder::graph_mode() const {
  return detail::live(impl_, "TransducerBeamDecoder").backends.front()->graph_mode();
}

std::int64_t TransducerBeamDecoder::device_bytes() const {
  return detail::live(impl_, "TransducerBeamDecoder").backends.front()->device_bytes();
}

BeamLoopCounts TransducerBeamDecoder::loop_counts() const {
  const Impl& self = detail::live(impl_, "TransducerBeamDecoder");
  return slowest_slice(self.backends, self.last_slices);
}

}  // namespace asrdec
