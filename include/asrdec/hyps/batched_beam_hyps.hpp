#pragma once
/**
 * @file
 * BatchedBeamHyps: the K hypotheses of each of B utterances during beam search, in device memory for the CUDA
 * executor and host memory for the CPU one (NeMo's BatchedBeamHyps layout).
 *
 * Hypotheses form a back-pointer tree: each step writes one entry per slot (a token, blank, or -1 for a
 * hypothesis that had already finished) with the slot of its parent, so reordering the beam copies nothing; the
 * transcripts are rebuilt once, at the end, by following the pointers.
 *
 * History is sized to what a decode needs, not to its worst case: decoders start a slot with
 * beam_history_start(frames) entries and widen it (host memory: widen_history, between steps; device memory: by
 * decoding the batch again with twice the entries, see docs/cuda-contract.md) when a step finds it full, up to the
 * worst case the algorithm allows. An entry takes 16 bytes (TDT: 20). Each slot also keeps its total score
 * (-inf: empty or dead), its token count, last label, a 64-bit hash of its tokens (NeMo's formula,
 * beam_hash_extend) and, for transducers, its frame and the labels emitted on it.
 *
 * Equal hypotheses — same hash, last label and token count, and for TDT the same frame — are recombined: the
 * first slot with the highest score keeps log-sum-exp of the group's scores (CTC: the maximum) and the others
 * die. Hash equality stands for transcript equality (no token-by-token comparison), as in NeMo.
 *
 * Transcripts: entries that are tokens (not blank, not -1); for CTC, repeats of the previous label are folded
 * first. Timestamps: the frame each token was emitted on (RNN-T and TDT, as greedy decoding; a TDT token's end
 * frame is its timestamp + duration), CTC the frame of the run's first label.
 */

#include <algorithm>
#include <cstdint>
#include <numeric>
#include <type_traits>
#include <vector>

#include "asrdec/core/buffer.hpp"
#include "asrdec/core/export.hpp"
#include "asrdec/hyps/beam_hyps_ref.hpp"
#include "asrdec/hyps/hypothesis.hpp"

namespace asrdec {

/** Entries a slot's history starts with for `frames` frames (at most `worst`, the algorithm's bound): room for a
 *  step per frame and about one token per frame. A decode that needs more widens it. */
ASRDEC_API std::int32_t beam_history_start(std::int64_t frames, std::int32_t worst);
/** The next history size after `capacity` ran out: twice as many entries, at most `worst`. */
ASRDEC_API std::int32_t beam_history_next(std::int32_t capacity, std::int32_t worst);

template <MemoryKind Kind>
class BatchedBeamHyps {
 public:
  BatchedBeamHyps() = default;

  /** Makes room for `batch` utterances of `beam` slots with `capacity` entries each (reallocating only when one
   *  grows) and sets the model kind and blank id. Every utterance must be cleared before use. A reservation that
   *  cannot be allocated throws and leaves the container as it was. */
  void reserve(std::int64_t batch, std::int32_t beam, std::int32_t capacity, BeamKind kind, std::int32_t blank,
               Device device) {
    const bool durations_fit = kind != BeamKind::tdt || durations_.size() == labels_.size();
    if (batch > batch_ || beam != beam_ || capacity > capacity_ || !durations_fit) {
      *this = allocated(std::max(batch, batch_), beam, std::max(capacity, capacity_), kind, device);
    }
    kind_ = kind;
    blank_ = blank;
  }

  /** Host memory: widens every slot's history to `capacity` entries (when larger), keeping the entries written so
   *  far. The CPU executors call it between steps when a slot's history is full. */
  template <MemoryKind K = Kind, class = std::enable_if_t<K != MemoryKind::device>>
  void widen_history(std::int32_t capacity) {
    if (capacity <= capacity_) return;
    const auto slots = static_cast<std::size_t>(batch_ * beam_);
    const auto old_width = static_cast<std::size_t>(capacity_);
    const auto width = static_cast<std::size_t>(capacity);
    // Each slot's entries move to the start of its wider row; every wider buffer is allocated before any replaces
    // its narrower one, so a widening that cannot be allocated throws and changes nothing.
    const auto widened = [&](const auto& buffer) {
      std::remove_const_t<std::remove_reference_t<decltype(buffer)>> wider(slots * width, Device::cpu());
      for (std::size_t s = 0; s < slots; ++s) {
        std::copy_n(buffer.data() + s * old_width, old_width, wider.data() + s * width);
      }
      return wider;
    };
    auto labels = widened(labels_);
    auto parents = widened(parents_);
    auto timestamps = widened(timestamps_);
    auto durations = kind_ == BeamKind::tdt ? widened(durations_) : std::move(durations_);
    auto logprobs = widened(logprobs_);
    labels_ = std::move(labels);
    parents_ = std::move(parents);
    timestamps_ = std::move(timestamps);
    durations_ = std::move(durations);
    logprobs_ = std::move(logprobs);
    capacity_ = capacity;
  }

  /** Host memory, before a step: widens the history (beam_history_next, at most `worst` entries) when a slot of the
   *  first `batch` utterances is full. Returns ref(), which widening changes. */
  template <MemoryKind K = Kind, class = std::enable_if_t<K != MemoryKind::device>>
  BeamHypsRef make_room_for_step(std::int64_t batch, std::int32_t worst) {
    if (capacity_ < worst && history_used(batch) >= capacity_) widen_history(beam_history_next(capacity_, worst));
    return ref();
  }

  /** The most entries any of the first `batch` utterances' slots holds. */
  template <MemoryKind K = Kind, class = std::enable_if_t<K != MemoryKind::device>>
  std::int32_t history_used(std::int64_t batch) const {
    const auto n = static_cast<std::size_t>(std::min(batch, batch_) * beam_);
    return n == 0 ? 0 : *std::max_element(steps_.data(), steps_.data() + n);
  }

  std::int64_t batch() const noexcept { return batch_; }
  std::int32_t beam() const noexcept { return beam_; }
  std::int32_t capacity() const noexcept { return capacity_; }

  BeamHypsRef ref() {
    BeamHypsRef r{};
    r.batch = batch_;
    r.beam = beam_;
    r.capacity = capacity_;
    r.kind = kind_;
    r.blank = blank_;
    r.labels = labels_.data();
    r.parents = parents_.data();
    r.timestamps = timestamps_.data();
    r.durations = durations_.data();
    r.logprobs = logprobs_.data();
    r.scores = scores_.data();
    r.steps = steps_.data();
    r.tokens = tokens_.data();
    r.last_label = last_label_.data();
    r.hash = hash_.data();
    r.prefix_hash = prefix_hash_.data();
    r.next_time = next_time_.data();
    r.on_frame = on_frame_.data();
    r.overflow = overflow_.data();
    r.staged_score = staged_score_.data();
    r.staged_tokens = staged_tokens_.data();
    r.staged_last_label = staged_last_label_.data();
    r.staged_next_time = staged_next_time_.data();
    r.staged_on_frame = staged_on_frame_.data();
    r.staged_hash = staged_hash_.data();
    r.staged_prefix_hash = staged_prefix_hash_.data();
    return r;
  }

 private:
  // A container of that size, every buffer allocated: the reservation is complete before it replaces anything.
  static BatchedBeamHyps allocated(std::int64_t batch, std::int32_t beam, std::int32_t capacity, BeamKind kind,
                                   Device device) {
    BatchedBeamHyps h;
    const auto slots = static_cast<std::size_t>(batch * beam);
    const auto cells = slots * static_cast<std::size_t>(capacity);
    for (auto* buffer : {&h.labels_, &h.parents_, &h.timestamps_}) *buffer = Buffer<std::int32_t, Kind>(cells, device);
    h.durations_ = Buffer<std::int32_t, Kind>(kind == BeamKind::tdt ? cells : 1, device);
    h.logprobs_ = Buffer<float, Kind>(cells, device);
    for (auto* buffer : {&h.steps_, &h.tokens_, &h.last_label_, &h.next_time_, &h.on_frame_, &h.staged_tokens_,
                         &h.staged_last_label_, &h.staged_next_time_, &h.staged_on_frame_}) {
      *buffer = Buffer<std::int32_t, Kind>(slots, device);
    }
    for (auto* buffer : {&h.hash_, &h.prefix_hash_, &h.staged_hash_, &h.staged_prefix_hash_}) {
      *buffer = Buffer<std::uint64_t, Kind>(slots, device);
    }
    h.scores_ = Buffer<float, Kind>(slots, device);
    h.staged_score_ = Buffer<float, Kind>(slots, device);
    h.overflow_ = Buffer<std::int32_t, Kind>(static_cast<std::size_t>(batch), device);
    h.batch_ = batch;
    h.beam_ = beam;
    h.capacity_ = capacity;
    return h;
  }

  std::int64_t batch_ = 0;
  std::int32_t beam_ = 0;
  std::int32_t capacity_ = 0;
  BeamKind kind_ = BeamKind::rnnt;
  std::int32_t blank_ = 0;
  Buffer<std::int32_t, Kind> labels_, parents_, timestamps_, durations_;
  Buffer<std::int32_t, Kind> steps_, tokens_, last_label_, next_time_, on_frame_, overflow_;
  Buffer<std::int32_t, Kind> staged_tokens_, staged_last_label_, staged_next_time_, staged_on_frame_;
  Buffer<std::uint64_t, Kind> hash_, prefix_hash_, staged_hash_, staged_prefix_hash_;
  Buffer<float, Kind> logprobs_, scores_, staged_score_;
};

/** The hypothesis in slot k of utterance b (host memory), rebuilt from the back-pointer tree: tokens, timestamps,
 *  TDT durations, token_scores (each token's acoustic log-probability where this path emitted it) and
 *  token_confidences = exp(token_scores), score = ranking_score = am_score = the slot's score. */
ASRDEC_API Hypothesis beam_hypothesis(const BeamHypsRef& hyps, std::int64_t b, std::int32_t k);

/** The value slot `slot` is ranked by: its score, or score / (tokens + 1) with `length_normalized`. */
ASRDEC_API float beam_ranking_score(const BeamHypsRef& hyps, std::int64_t slot, bool length_normalized);

/** The live slots of utterance b, best first: by score, or by score / (tokens + 1) with `length_normalized`;
 *  ties go to the lower slot; dead (-inf) slots are left out. */
ASRDEC_API std::vector<std::int32_t> beam_ranking(const BeamHypsRef& hyps, std::int64_t b, bool length_normalized);

/** The live hypotheses of utterance b (host memory), best first: by score, or by score / (tokens + 1) with
 *  `length_normalized` (NeMo's score_norm); ties go to the lower slot. Dead (-inf) slots are left out. Each
 *  hypothesis carries its slot's score and the ranking_score it was sorted by. */
ASRDEC_API std::vector<Hypothesis> beam_nbest(const BeamHypsRef& hyps, std::int64_t b, bool length_normalized);

}  // namespace asrdec
