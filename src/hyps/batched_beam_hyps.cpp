// Rebuilding transcripts from the back-pointer tree of BatchedBeamHyps, and ranking a beam.

#include "asrdec/hyps/batched_beam_hyps.hpp"

#include <algorithm>
#include <limits>

#include "asrdec/core/error.hpp"
#include "hyps/token_confidences.hpp"

namespace asrdec {

std::int32_t beam_history_start(std::int64_t frames, std::int32_t worst) {
  // A step per frame and about a token per frame, plus slack for short utterances.
  const std::int64_t start = 2 * std::max<std::int64_t>(frames, 0) + 16;
  return static_cast<std::int32_t>(std::min<std::int64_t>(start, std::max(worst, 1)));
}

std::int32_t beam_history_next(std::int32_t capacity, std::int32_t worst) {
  return static_cast<std::int32_t>(std::min<std::int64_t>(std::int64_t{capacity} * 2, worst));
}

Hypothesis beam_hypothesis(const BeamHypsRef& h, std::int64_t b, std::int32_t k) {
  ASRDEC_CHECK_ARG(b >= 0 && b < h.batch && k >= 0 && k < h.beam, "beam slot (", b, ", ", k, ") out of range [0, ",
                   h.batch, ") x [0, ", h.beam, ")");
  ASRDEC_EXPECTS(!h.overflow[b], Error, "beam hypotheses of utterance ", b, " ran out of entries (capacity ",
                 h.capacity, ")");
  const std::int32_t steps = h.steps[beam_slot(h, b, k)];
  // Entries from the last step back to the first, following the parent pointers.
  std::vector<std::int64_t> path(static_cast<std::size_t>(steps));
  std::int32_t slot = k;
  for (std::int32_t i = steps - 1; i >= 0; --i) {
    const std::int64_t at = beam_slot(h, b, slot) * h.capacity + i;
    path[static_cast<std::size_t>(i)] = at;
    slot = h.parents[at];
  }
  Hypothesis out;
  std::int32_t previous = -1;  // CTC: the last label other than -1, blank included
  for (const std::int64_t at : path) {
    const std::int32_t label = h.labels[at];
    if (label < 0) continue;
    const bool repeat = h.kind == BeamKind::ctc && label == previous;
    previous = label;
    if (label == h.blank || repeat) continue;
    out.tokens.push_back(label);
    out.timestamps.push_back(h.timestamps[at]);
    if (h.kind == BeamKind::tdt) out.durations.push_back(h.durations[at]);
    out.token_scores.push_back(h.logprobs[at]);
  }
  detail::confidences_from_scores(out);
  out.score = h.scores[beam_slot(h, b, k)];
  out.ranking_score = out.score;
  out.am_score = out.score;
  return out;
}

float beam_ranking_score(const BeamHypsRef& h, std::int64_t slot, bool length_normalized) {
  return length_normalized ? h.scores[slot] / static_cast<float>(h.tokens[slot] + 1) : h.scores[slot];
}

std::vector<std::int32_t> beam_ranking(const BeamHypsRef& h, std::int64_t b, bool length_normalized) {
  std::vector<std::int32_t> order;
  for (std::int32_t k = 0; k < h.beam; ++k) {
    if (h.scores[beam_slot(h, b, k)] != -std::numeric_limits<float>::infinity()) order.push_back(k);
  }
  const auto key = [&](std::int32_t k) { return beam_ranking_score(h, beam_slot(h, b, k), length_normalized); };
  std::stable_sort(order.begin(), order.end(), [&](std::int32_t x, std::int32_t y) { return key(x) > key(y); });
  return order;
}

std::vector<Hypothesis> beam_nbest(const BeamHypsRef& h, std::int64_t b, bool length_normalized) {
  const std::vector<std::int32_t> order = beam_ranking(h, b, length_normalized);
  std::vector<Hypothesis> out;
  out.reserve(order.size());
  for (const std::int32_t k : order) {
    out.push_back(beam_hypothesis(h, b, k));
    out.back().ranking_score = beam_ranking_score(h, beam_slot(h, b, k), length_normalized);
  }
  return out;
}

}  // namespace asrdec
