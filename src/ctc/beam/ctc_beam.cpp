// CtcBeamDecoder and its CPU executor: the batch's B·K hypothesis slots advance frame by frame through the shared
// scoring rule (ctc/beam/ctc_beam_step.hpp) and the BatchedBeamHyps step functions.

#include "asrdec/ctc/ctc_beam.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <limits>

#include "asrdec/core/error.hpp"
#include "asrdec/detail/float16.hpp"
#include "asrdec/hyps/batched_beam_hyps.hpp"
#include "core/bad_value.hpp"
#include "core/exclusive_use.hpp"
#include "core/thread_pool.hpp"
#include "core/utterance_channels.hpp"
#include "ctc/beam/ctc_beam_backend.hpp"
#include "ctc/beam/ctc_beam_step.hpp"
#include "hyps/beam_channel.hpp"
#include "hyps/beam_search_step.hpp"
#include "hyps/ranked_beams.hpp"
#include "lm/fusion_checks.hpp"
#include "lm/ngram_lm_impl.hpp"

namespace asrdec {

void CtcBeamConfig::validate() const {
  ASRDEC_CHECK_ARG(beam >= 1 && beam <= kMaxBeam, "CtcBeamConfig.beam must be in [1, ", kMaxBeam, "], got ", beam);
  ASRDEC_CHECK_ARG(beam_size_token >= 0, "CtcBeamConfig.beam_size_token must be >= 0 (0: every column), got ",
                   beam_size_token);
  ASRDEC_CHECK_ARG(blank_id >= -1, "CtcBeamConfig.blank_id must be -1 (last column) or a column, got ", blank_id);
  ASRDEC_CHECK_ARG(std::isfinite(beam_beta), "CtcBeamConfig.beam_beta must be finite, got ", beam_beta);
  ASRDEC_CHECK_ARG(beam_threshold > 0.0f, "CtcBeamConfig.beam_threshold must be positive (+inf: no threshold), got ",
                   beam_threshold);
  ASRDEC_CHECK_ARG(std::isfinite(lm_weight), "CtcBeamConfig.lm_weight must be finite, got ", lm_weight);
  ASRDEC_CHECK_ARG(std::isfinite(boost_weight), "CtcBeamConfig.boost_weight must be finite, got ", boost_weight);
  ASRDEC_CHECK_ARG(max_device_bytes >= 0, "CtcBeamConfig.max_device_bytes must be 0 (no cap) or positive, got ",
                   max_device_bytes);
  ASRDEC_CHECK_ARG(threads >= 0 && threads <= 1024, "CtcBeamConfig.threads must be in [0, 1024] (0: every core), got ",
                   threads);
}

std::string CtcBeamConfig::to_string() const {
  return detail::concat(
      "CtcBeamConfig{blank_id=", blank_id, ", beam=", beam, ", beam_beta=", beam_beta,
      ", beam_threshold=", beam_threshold, merge_before_prune ? ", merge_before_prune=true" : "",
      log_add ? ", log_add=true" : "", beam_size_token > 0 ? detail::concat(", beam_size_token=", beam_size_token) : "",
      ", unique_transcripts=", unique_transcripts ? "true" : "false",
      lm != nullptr ? detail::concat(", lm=", lm->order(), "-gram, lm_weight=", lm_weight) : "",
      boost != nullptr ? detail::concat(", boost=", boost->num_phrases(), " phrases, boost_weight=", boost_weight) : "",
      ", graph_mode=", asrdec::to_string(graph_mode), ", check_values=", check_values ? "true" : "false",
      max_device_bytes > 0 ? detail::concat(", max_device_bytes=", max_device_bytes) : "",
      threads > 0 ? detail::concat(", threads=", threads) : "", "}");
}

namespace {

constexpr float kNegInf = -std::numeric_limits<float>::infinity();

}  // namespace

namespace detail {

CtcInput make_ctc_beam_input(const TensorView& logprobs, const TensorView& lengths, const CtcBeamConfig& config,
                             Device device) {
  CtcInput input = make_ctc_input(logprobs, lengths, device, config.blank_id);
  check_ctc_fusion(config.lm.get(), config.boost.get(), input.columns);
  ASRDEC_CHECK_ARG(input.lengths_on_host, "lengths: CTC beam search needs them in host memory, got ",
                   lengths.device().to_string());
  return input;
}

}  // namespace detail

namespace {

void search_frames(CtcBeamDecoder::Impl& self, const detail::CtcInput& p, const BeamHypsRef& h,
                   const detail::CtcBeamStates& states);

/** A proposal of merge_before_prune: its score, id (k·C + v) and the identity of the hypothesis it makes. */
struct CtcProposal {
  float score;
  std::int32_t id;
  std::uint64_t hash;
  std::int32_t last;
  std::int32_t tokens;
};

CtcProposal ctc_proposal(const BeamHypsRef& h, std::int64_t slot, std::int32_t id, std::int32_t v, float score) {
  const bool emits = beam_emits(h, v, h.last_label[slot]);
  return CtcProposal{score, id, emits ? beam_hash_extend(h.hash[slot], v) : h.hash[slot], v,
                     h.tokens[slot] + (emits ? 1 : 0)};
}

/** merge_before_prune (flashlight-text's candidatesStore): proposals more than `threshold` below the best are
 *  dropped, equal hypotheses merge into their best proposal (the lower id on ties) with the maximum or, with
 *  `log_add`, the running log-add of the group's scores from the best down, and the K best merged proposals
 *  (beam_before order) go to `best`/`ids`. Returns how many. */
std::int32_t merge_then_keep(std::vector<CtcProposal>& proposals, float threshold, bool log_add, std::int32_t K,
                             float* best, std::int32_t* ids) {
  if (proposals.empty()) return 0;
  float top = proposals.front().score;
  for (const CtcProposal& x : proposals) top = std::max(top, x.score);
  const float floor = top - threshold;
  proposals.erase(
      std::remove_if(proposals.begin(), proposals.end(), [floor](const CtcProposal& x) { return !(x.score > floor); }),
      proposals.end());
  std::sort(proposals.begin(), proposals.end(), [](const CtcProposal& x, const CtcProposal& y) {
    if (x.hash != y.hash) return x.hash < y.hash;
    if (x.last != y.last) return x.last < y.last;
    if (x.tokens != y.tokens) return x.tokens < y.tokens;
    return detail::beam_before(x.score, x.id, y.score, y.id);
  });
  std::int32_t kept = 0;
  for (std::size_t i = 0; i < proposals.size();) {
    const CtcProposal& first = proposals[i];
    float merged = first.score;
    std::size_t j = i + 1;
    for (; j < proposals.size() && proposals[j].hash == first.hash && proposals[j].last == first.last &&
           proposals[j].tokens == first.tokens;
         ++j) {
      if (log_add) {
        const float high = std::max(merged, proposals[j].score), low = std::min(merged, proposals[j].score);
        merged = high + std::log1p(std::exp(low - high));
      }
    }
    detail::topk_insert(best, ids, K, kept, merged, first.id);
    i = j;
  }
  return kept;
}

/** One CPU thread's scratch for a frame. */
struct CtcBeamScratch {
  std::vector<float> frame, best;
  std::vector<std::int32_t> ids, columns;
  std::vector<CtcProposal> proposals;
};

}  // namespace

struct CtcBeamDecoder::Impl {
  Device device;
  CtcBeamConfig config;
  std::unique_ptr<detail::CtcBeamBackend> cuda;  // the CUDA executor; the CPU one is below
  BatchedBeamHyps<MemoryKind::host> hyps;
  HostBuffer<std::int32_t> lm_state, next_lm_state, boost_state, next_boost_state, emits;
  HostBuffer<float> lm_total, next_lm_total, boost_total, next_boost_total;
  HostBuffer<float> lm_scores, boost_scores;  // [slots, V] queries of each slot's states
  HostBuffer<std::int32_t> lm_next, boost_next;
  std::unique_ptr<detail::ThreadPool> pool;  // CPU: the threads utterances are spread over
  std::vector<CtcBeamScratch> scratch;       // per thread
  std::int64_t max_slots = 0;
  std::unique_ptr<detail::UtteranceChannels> open;  // streaming
  std::vector<detail::BeamChannel> channels;        // by slot of `open`, grown as slots are first used
  detail::OwnerSlot owner;

  void reserve(std::int64_t slots, std::int64_t vocab) {
    const auto fits = [slots, vocab](const auto& buffer, bool used) {
      return static_cast<std::int64_t>(buffer.size()) >= (used ? slots * vocab : 0);
    };
    if (slots <= max_slots && fits(lm_scores, config.lm != nullptr) && fits(lm_next, config.lm != nullptr) &&
        fits(boost_scores, config.boost != nullptr) && fits(boost_next, config.boost != nullptr)) {
      return;
    }
    // Every buffer is allocated before any is replaced: a reservation that cannot be allocated throws and leaves
    // the sizes those of the buffers.
    const std::int64_t grown = std::max(max_slots, slots);
    const auto n = static_cast<std::size_t>(grown);
    std::array<HostBuffer<std::int32_t>, 5> states;
    for (auto& b : states) b = HostBuffer<std::int32_t>(n);
    std::array<HostBuffer<float>, 4> totals;
    for (auto& b : totals) b = HostBuffer<float>(n);
    const auto cells = n * static_cast<std::size_t>(vocab);
    HostBuffer<float> grown_lm_scores(config.lm ? cells : 0), grown_boost_scores(config.boost ? cells : 0);
    HostBuffer<std::int32_t> grown_lm_next(config.lm ? cells : 0), grown_boost_next(config.boost ? cells : 0);
    lm_state = std::move(states[0]);
    next_lm_state = std::move(states[1]);
    boost_state = std::move(states[2]);
    next_boost_state = std::move(states[3]);
    emits = std::move(states[4]);
    lm_total = std::move(totals[0]);
    next_lm_total = std::move(totals[1]);
    boost_total = std::move(totals[2]);
    next_boost_total = std::move(totals[3]);
    lm_scores = std::move(grown_lm_scores);
    lm_next = std::move(grown_lm_next);
    boost_scores = std::move(grown_boost_scores);
    boost_next = std::move(grown_boost_next);
    max_slots = grown;
  }

  // Sizes the buffers for `p` and points the fused states at them.
  detail::CtcBeamStates prepare(const detail::CtcInput& p) {
    using namespace detail;
    const std::int64_t V = p.columns - 1;
    reserve(std::max<std::int64_t>(p.batch, 1) * config.beam, V);
    hyps.reserve(p.batch, config.beam, static_cast<std::int32_t>(std::max<std::int64_t>(p.frames, 1)), BeamKind::ctc,
                 p.blank, Device::cpu());
    CtcBeamStates states{};
    FusionRef& fusion = states.fusion;
    fusion.vocab = static_cast<std::int32_t>(V);
    fusion.blank = p.blank;
    if (config.lm != nullptr) {
      fusion.lm = FusionSource{lm_scores.data(), lm_next.data(), lm_state.data(), lm_total.data(), config.lm_weight};
      states.next_lm_state = next_lm_state.data();
      states.next_lm_total = next_lm_total.data();
    }
    if (config.boost != nullptr) {
      fusion.boost = FusionSource{boost_scores.data(), boost_next.data(), boost_state.data(), boost_total.data(),
                                  config.boost_weight};
      states.next_boost_state = next_boost_state.data();
      states.next_boost_total = next_boost_total.data();
    }
    return states;
  }

  detail::BeamFusedSlots fused_slots() {
    return detail::BeamFusedSlots{config.lm != nullptr ? lm_state.data() : nullptr, lm_total.data(),
                                  config.boost != nullptr ? boost_state.data() : nullptr, boost_total.data()};
  }

  // Utterance b starts: slot 0 empty, the LM at <s>, boosting at `boost_root`.
  void start(const BeamHypsRef& h, std::int64_t b, std::int32_t boost_root) {
    beam_clear(h, b);
    for (std::int32_t k = 0; k < config.beam; ++k) {
      const std::int64_t s = beam_slot(h, b, k);
      lm_state[s] = NgramLm::bos_state();
      boost_state[s] = boost_root;
      lm_total[s] = boost_total[s] = 0.0f;
    }
  }

  // Frames [0, lengths[b]) of every row through its beam (started or loaded).
  void run_frames(const detail::CtcInput& p, const BeamHypsRef& h, const detail::CtcBeamStates& states) {
    search_frames(*this, p, h, states);
  }

  // The end of utterance b: each live hypothesis adds α·ln p_LM(</s> | its LM state); with log-add merging, equal
  // transcripts then merge.
  void end_of_sentence(const BeamHypsRef& h, std::int64_t b) {
    if (config.lm != nullptr) {
      for (std::int32_t k = 0; k < config.beam; ++k) {
        const std::int64_t s = beam_slot(h, b, k);
        if (h.scores[s] == kNegInf) continue;
        const float end = detail::weighted(config.lm_weight, config.lm->final_score(lm_state[s]));
        h.scores[s] += end;
        lm_total[s] += end;
      }
    }
    if (config.merge_before_prune) drop_below_threshold(h, b);
    if (config.log_add) detail::ctc_merge_equal_transcripts(h, b);
  }

  // merge_before_prune (flashlight-text's order) treats the end like a frame: hypotheses more than beam_threshold
  // below the best, end-of-sentence scores included, are dropped before equal transcripts merge.
  void drop_below_threshold(const BeamHypsRef& h, std::int64_t b) const {
    float best = kNegInf;
    for (std::int32_t k = 0; k < config.beam; ++k) best = std::max(best, h.scores[beam_slot(h, b, k)]);
    if (best == kNegInf) return;
    const float floor = best - config.beam_threshold;
    for (std::int32_t k = 0; k < config.beam; ++k) {
      float& score = h.scores[beam_slot(h, b, k)];
      if (!(score > floor)) score = kNegInf;
    }
  }

  std::vector<std::vector<Hypothesis>> decode(const detail::CtcInput& p) {
    const detail::CtcBeamStates states = prepare(p);
    const BeamHypsRef h = hyps.ref();
    for (std::int64_t b = 0; b < p.batch; ++b) {
      start(h, b, config.boost != nullptr ? config.boost->root_for(b, p.batch) : 0);
    }
    run_frames(p, h, states);
    for (std::int64_t b = 0; b < p.batch; ++b) end_of_sentence(h, b);
    return detail::ranked_beams_of(h, p.batch, /*length_normalized=*/false,
                                   config.lm != nullptr ? lm_total.data() : nullptr,
                                   config.boost != nullptr ? boost_total.data() : nullptr);
  }

  // Streaming: row b continues channels[plan.slot[b]] (or starts it); the channels change after every frame read.
  void decode_chunks(const detail::CtcInput& p, const detail::ChunkPlan& plan, const std::vector<ChunkRow>& rows,
                     const std::vector<std::int32_t>& boost_roots, std::vector<detail::BeamChannel*>& lanes) {
    const detail::CtcBeamStates states = prepare(p);
    const BeamHypsRef h = hyps.ref();
    for (std::int64_t b = 0; b < p.batch; ++b) {
      const auto row = static_cast<std::size_t>(b);
      if (plan.fresh[row]) {
        start(h, b, boost_roots[row]);
      } else {
        detail::beam_channel_load(*lanes[row], h, b, plan.offset[row], fused_slots());
      }
    }
    run_frames(p, h, states);  // throws for a bad value before any channel changes
    for (std::int64_t b = 0; b < p.batch; ++b) {
      if (rows[static_cast<std::size_t>(b)].last) end_of_sentence(h, b);
    }
    detail::BeamChannelSave save;
    save.prepare(h, p.batch, lanes, plan.fresh, boost_roots);  // may throw; changes no channel
    for (std::int64_t b = 0; b < p.batch; ++b)
      save.commit(h, b, plan.offset[static_cast<std::size_t>(b)], fused_slots());
  }
};

namespace {

// Frames [0, lengths[b]) of every row of `self`'s batch through its beam. A function of this file, not a member: the
// closure it hands the thread pool must not be a type of the exported decoder's (the shared library would export
// its type information).
void search_frames(CtcBeamDecoder::Impl& self, const detail::CtcInput& p, const BeamHypsRef& h,
                   const detail::CtcBeamStates& states) {
  using namespace detail;
  const CtcBeamConfig& config = self.config;
  const std::int32_t K = config.beam;
  const auto C = static_cast<std::int32_t>(p.columns);
  const std::int64_t V = p.columns - 1;
  const FusionRef& fusion = states.fusion;
  const CtcBeamRule rule{p.blank, config.beam_beta, config.log_add};
  const std::int32_t proposed_columns =
      config.beam_size_token > 0 && config.beam_size_token < C ? config.beam_size_token : C;
  // Utterances in parallel, each on one thread with that thread's scratch (a slot's state and queries are its own);
  // a bad value throws what a plain loop over the utterances would have thrown first.
  self.pool->parallel_for(p.batch, [&](std::int64_t b, int worker) {
    CtcBeamScratch& w = self.scratch[static_cast<std::size_t>(worker)];
    w.frame.resize(static_cast<std::size_t>(C));
    w.best.resize(static_cast<std::size_t>(K));
    w.ids.resize(static_cast<std::size_t>(K));
    w.columns.resize(static_cast<std::size_t>(C));
    const std::int32_t length = p.host_lengths[static_cast<std::size_t>(b)];
    for (std::int32_t t = 0; t < length; ++t) {
      read_ctc_frame(p, b, t, config.check_values, w.frame.data());
      for (std::int32_t v = 0; v < C; ++v) w.columns[static_cast<std::size_t>(v)] = v;
      if (proposed_columns < C) {
        const float* f = w.frame.data();
        std::partial_sort(w.columns.begin(), w.columns.begin() + proposed_columns, w.columns.end(),
                          [f](std::int32_t x, std::int32_t y) { return f[x] > f[y] || (f[x] == f[y] && x < y); });
      }
      std::int32_t kept = 0;
      w.proposals.clear();
      for (std::int32_t k = 0; k < K; ++k) {
        const std::int64_t s = beam_slot(h, b, k);
        if (h.scores[s] == kNegInf) continue;
        if (config.lm != nullptr)
          advance_row(config.lm->ref(), self.lm_state[s], self.lm_scores.data() + s * V, self.lm_next.data() + s * V);
        if (config.boost != nullptr) {
          advance_row(config.boost->ref(), self.boost_state[s], self.boost_scores.data() + s * V,
                      self.boost_next.data() + s * V);
        }
        for (std::int32_t c = 0; c < proposed_columns; ++c) {
          const std::int32_t v = w.columns[static_cast<std::size_t>(c)];
          const float score = h.scores[s] + ctc_beam_extension(rule, fusion, s, h.last_label[s], v,
                                                               w.frame[static_cast<std::size_t>(v)]);
          if (!config.merge_before_prune) {
            topk_insert(w.best.data(), w.ids.data(), K, kept, score, k * C + v);
          } else if (score != kNegInf) {
            w.proposals.push_back(ctc_proposal(h, s, k * C + v, v, score));
          }
        }
      }
      float threshold = config.beam_threshold;
      if (config.merge_before_prune) {
        kept = merge_then_keep(w.proposals, config.beam_threshold, config.log_add, K, w.best.data(), w.ids.data());
        threshold = std::numeric_limits<float>::infinity();  // applied before merging
      }
      const auto frame_logp = [&w](std::int32_t v) { return w.frame[static_cast<std::size_t>(v)]; };
      ctc_beam_keep(h, b, w.best.data(), w.ids.data(), kept, C, threshold, states, config.log_add, frame_logp);
    }
  });
}

}  // namespace

CtcBeamDecoder::CtcBeamDecoder(Device device, CtcBeamConfig config, BatchLimits limits)
    : impl_(std::make_unique<Impl>()) {
  config.validate();
  limits.validate();
  ASRDEC_EXPECTS(device.is_cpu() || ASRDEC_WITH_CUDA, Unsupported, "CTC beam search on ", device.to_string(),
                 " needs a build with CUDA");
  if (config.lm != nullptr || config.boost != nullptr) {
    ASRDEC_CHECK_ARG((config.lm == nullptr || config.lm->device() == device) &&
                         (config.boost == nullptr || config.boost->device() == device),
                     "CtcBeamConfig: the LM and the boosting tree must be on the decoder's device (",
                     device.to_string(), ")");
  }
  impl_->device = device;
  impl_->config = std::move(config);
  impl_->open = std::make_unique<detail::UtteranceChannels>(limits.max_open_utterances, "CtcBeamDecoder");
#if ASRDEC_WITH_CUDA
  if (device.is_cuda()) {
    impl_->cuda = detail::make_ctc_beam_cuda(device, impl_->config, limits);
    return;
  }
#endif
  const int threads = detail::resolve_threads(impl_->config.threads);
  impl_->pool = std::make_unique<detail::ThreadPool>(threads);
  impl_->scratch.resize(static_cast<std::size_t>(threads));
  impl_->reserve(limits.max_batch * impl_->config.beam, 0);
}

CtcBeamDecoder::~CtcBeamDecoder() = default;
CtcBeamDecoder::CtcBeamDecoder(CtcBeamDecoder&&) noexcept = default;
CtcBeamDecoder& CtcBeamDecoder::operator=(CtcBeamDecoder&&) noexcept = default;

std::vector<std::vector<Hypothesis>> CtcBeamDecoder::decode_nbest(const TensorView& logprobs, const TensorView& lengths,
                                                                  StreamHandle stream) {
  Impl& self = detail::live(impl_, "CtcBeamDecoder");
  const detail::ExclusiveCall call(self.owner, "CtcBeamDecoder::decode_nbest");
  const detail::CtcInput problem = detail::make_ctc_beam_input(logprobs, lengths, self.config, self.device);
  if (self.config.boost != nullptr) self.config.boost->check_batch(problem.batch);
  std::vector<std::vector<Hypothesis>> beams = self.cuda ? self.cuda->decode(problem, stream) : self.decode(problem);
  if (self.config.unique_transcripts) {
    for (auto& beam : beams) drop_repeated_transcripts(beam);
  }
  return beams;
}

std::vector<Hypothesis> CtcBeamDecoder::decode(const TensorView& logprobs, const TensorView& lengths,
                                               StreamHandle stream) {
  std::vector<std::vector<Hypothesis>> beams = decode_nbest(logprobs, lengths, stream);
  std::vector<Hypothesis> out;
  for (auto& beam : beams) out.push_back(beam.empty() ? Hypothesis{} : std::move(beam.front()));
  return out;
}

std::vector<Hypothesis> CtcBeamDecoder::decode_chunks(const std::vector<ChunkRow>& rows, const TensorView& logprobs,
                                                      const TensorView& lengths, StreamHandle stream) {
  Impl& self = detail::live(impl_, "CtcBeamDecoder");
  const detail::ExclusiveCall call(self.owner, "CtcBeamDecoder::decode_chunks");
  const detail::CtcInput problem = detail::make_ctc_beam_input(logprobs, lengths, self.config, self.device);
  ASRDEC_CHECK_ARG(static_cast<std::int64_t>(rows.size()) == problem.batch,
                   "CtcBeamDecoder::decode_chunks: ", rows.size(), " rows for a batch of ", problem.batch);
  const detail::ChunkPlan plan = self.open->plan(rows, problem.host_lengths);
  const std::vector<std::int32_t> roots = detail::boost_roots_of(rows, self.config.boost.get(), "CtcBeamDecoder");
  for (const std::int32_t slot : plan.slot) {
    if (static_cast<std::size_t>(slot) >= self.channels.size())
      self.channels.resize(static_cast<std::size_t>(slot) + 1);
  }
  std::vector<detail::BeamChannel*> lanes;  // into `channels`, which no longer grows in this call
  for (const std::int32_t slot : plan.slot) lanes.push_back(&self.channels[static_cast<std::size_t>(slot)]);
  if (self.cuda) {
    self.cuda->decode_chunks(problem, plan, rows, roots, lanes, stream);
  } else {
    self.decode_chunks(problem, plan, rows, roots, lanes);
  }
  self.open->commit(rows, plan, problem.host_lengths);
  std::vector<Hypothesis> out(rows.size());
  for (std::size_t b = 0; b < rows.size(); ++b) {
    std::vector<Hypothesis> beam = detail::beam_channel_hypotheses(
        *lanes[b], /*length_normalized=*/false, self.config.lm != nullptr, self.config.boost != nullptr);
    if (!beam.empty()) out[b] = std::move(beam.front());
    out[b].is_final = rows[b].last;
    if (rows[b].last) *lanes[b] = detail::BeamChannel{};  // its memory goes back now, not on reuse
  }
  return out;
}

bool CtcBeamDecoder::cancel(std::int64_t utterance) {
  Impl& self = detail::live(impl_, "CtcBeamDecoder");
  const detail::ExclusiveCall call(self.owner, "CtcBeamDecoder::cancel");
  const std::int32_t slot = self.open->cancel(utterance);
  if (slot >= 0) self.channels[static_cast<std::size_t>(slot)] = detail::BeamChannel{};
  return slot >= 0;
}

std::int64_t CtcBeamDecoder::open_utterances() const { return detail::live(impl_, "CtcBeamDecoder").open->open(); }

const CtcBeamConfig& CtcBeamDecoder::config() const { return detail::live(impl_, "CtcBeamDecoder").config; }
Device CtcBeamDecoder::device() const { return detail::live(impl_, "CtcBeamDecoder").device; }
GraphMode CtcBeamDecoder::graph_mode() const {
  const Impl& self = detail::live(impl_, "CtcBeamDecoder");
  return self.cuda ? self.cuda->graph_mode() : GraphMode::eager;
}
std::int64_t CtcBeamDecoder::device_bytes() const {
  const Impl& self = detail::live(impl_, "CtcBeamDecoder");
  return self.cuda ? self.cuda->device_bytes() : 0;
}

}  // namespace asrdec
