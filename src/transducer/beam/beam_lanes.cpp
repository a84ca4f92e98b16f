#include "transducer/beam/beam_lanes.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

#include "asrdec/detail/float16.hpp"
#include "transducer/model/bad_enc_value.hpp"

namespace asrdec::detail {
namespace {

constexpr float kDead = -std::numeric_limits<float>::infinity();

// Element (b, t, j) of enc_proj as float.
float read_enc(const EncodedView& enc, std::int64_t b, std::int64_t t, std::int64_t j) {
  const std::int64_t at = b * enc.stride_b + t * enc.stride_t + j * enc.stride_j;
  switch (enc.dtype) {
    case DType::f16:
      return to_float(static_cast<const half_t*>(enc.data)[at]);
    case DType::bf16:
      return to_float(static_cast<const bfloat16_t*>(enc.data)[at]);
    default:
      return static_cast<const float*>(enc.data)[at];
  }
}

}  // namespace

void BeamSlotArrays::load(std::int64_t s, const BeamChannel& c, std::int32_t k) const {
  const float* from = c.predictor.data() + k * width();
  std::copy_n(from, state_size, state + s * state_size);
  std::copy_n(from + state_size, hidden, dec + s * hidden);
}

void BeamSlotArrays::save(std::int64_t s, BeamChannel& c, std::int32_t k) const {
  float* to = c.predictor.data() + k * width();
  std::copy_n(state + s * state_size, state_size, to);
  std::copy_n(dec + s * hidden, hidden, to + state_size);
}

BeamLanes::BeamLanes(const TransducerInput& problem, const ChunkPlan& plan, const std::vector<ChunkRow>& rows,
                     const std::vector<std::int32_t>& boost_roots, std::vector<BeamChannel*>& channels,
                     std::int64_t hidden, bool waits, bool check_values)
    : problem_(problem),
      plan_(plan),
      rows_(rows),
      boost_roots_(boost_roots),
      channels_(channels),
      hidden_(hidden),
      waits_(waits),
      tail_(static_cast<std::size_t>(problem.batch), 0) {
  if (!waits_) return;
  const std::int64_t B = problem.batch;
  const std::int64_t J = hidden_;
  lanes_.batch = B;
  lanes_.lengths.resize(static_cast<std::size_t>(B));
  for (std::int64_t b = 0; b < B; ++b) {
    const auto row = static_cast<std::size_t>(b);
    if (!plan.fresh[row])
      tail_[row] = static_cast<std::int32_t>(channels[row]->tail.size() / static_cast<std::size_t>(J));
    lanes_.lengths[row] = tail_[row] + problem.lengths[row];
    lanes_.frames = std::max<std::int64_t>(lanes_.frames, lanes_.lengths[row]);
  }
  frames_.assign(static_cast<std::size_t>(B * lanes_.frames * J), 0.0f);
  for (std::int64_t b = 0; b < B; ++b) {
    const auto row = static_cast<std::size_t>(b);
    float* to = frames_.data() + b * lanes_.frames * J;
    if (tail_[row] > 0) std::copy(channels[row]->tail.begin(), channels[row]->tail.end(), to);
    to += std::int64_t{tail_[row]} * J;
    for (std::int32_t t = 0; t < problem.lengths[row]; ++t) {
      for (std::int64_t j = 0; j < J; ++j) {
        const float x = read_enc(problem.enc, b, t, j);
        if (check_values && !std::isfinite(x)) throw bad_enc_value_error(problem.enc.first_row + b, t, j, x != x);
        to[t * J + j] = x;
      }
    }
  }
  lanes_.enc = EncodedView{frames_.data(), DType::f32, lanes_.frames * J, J, 1};
  lanes_.enc.first_row = problem.enc.first_row;  // errors name the caller's rows (frames count from the lane's tail)
}

void BeamLanes::load(const BeamHypsRef& h, const BeamSlotArrays& slots) const {
  for (std::int64_t b = 0; b < problem_.batch; ++b) {
    const auto row = static_cast<std::size_t>(b);
    if (plan_.fresh[row]) {
      beam_clear(h, b);
      continue;
    }
    beam_channel_load(*channels_[row], h, b, offset(b), slots.fused);
    for (std::int32_t k = 0; k < h.beam; ++k) slots.load(beam_slot(h, b, k), *channels_[row], k);
  }
}

void BeamLanes::prepare_save(const BeamHypsRef& h, const BeamSlotArrays& slots) {
  saver_.prepare(h, problem_.batch, channels_, plan_.fresh, boost_roots_, slots.width());
  if (!waits_) return;
  const TransducerInput& in = input();
  tails_.resize(static_cast<std::size_t>(problem_.batch));
  for (std::int64_t b = 0; b < problem_.batch; ++b) {
    const auto row = static_cast<std::size_t>(b);
    // The frames a live hypothesis may still read: from the earliest one's frame to the lane's end.
    const std::int32_t length = in.lengths[row];
    std::int32_t keep_from = length;
    for (std::int32_t k = 0; k < h.beam && !rows_[row].last; ++k) {
      const std::int64_t s = beam_slot(h, b, k);
      if (h.scores[s] != kDead) keep_from = std::min(keep_from, h.next_time[s]);
    }
    const float* frames = frames_.data() + b * in.frames * hidden_;
    tails_[row].assign(frames + std::int64_t{keep_from} * hidden_, frames + std::int64_t{length} * hidden_);
  }
}

void BeamLanes::save(const BeamHypsRef& h, const BeamSlotArrays& slots) {
  for (std::int64_t b = 0; b < problem_.batch; ++b) {
    BeamChannel& channel = saver_.commit(h, b, offset(b), slots.fused);
    for (std::int32_t k = 0; k < h.beam; ++k) slots.save(beam_slot(h, b, k), channel, k);
    if (waits_) channel.tail.swap(tails_[static_cast<std::size_t>(b)]);
  }
}

}  // namespace asrdec::detail
