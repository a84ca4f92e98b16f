#include "core/utterance_channels.hpp"

#include <limits>
#include <unordered_set>

#include "asrdec/core/error.hpp"

namespace asrdec::detail {

UtteranceChannels::UtteranceChannels(std::int64_t capacity, std::string owner)
    : capacity_(capacity), owner_(std::move(owner)) {}

std::int32_t UtteranceChannels::nth_free(std::size_t n) const {
  if (n < freed_.size()) return freed_[freed_.size() - 1 - n];
  const std::int64_t slot = never_used_ + static_cast<std::int64_t>(n - freed_.size());
  return slot < capacity_ ? static_cast<std::int32_t>(slot) : -1;
}

std::int32_t UtteranceChannels::take_free() {
  if (!freed_.empty()) {
    const std::int32_t slot = freed_.back();
    freed_.pop_back();
    return slot;
  }
  return static_cast<std::int32_t>(never_used_++);
}

ChunkPlan UtteranceChannels::plan(const std::vector<ChunkRow>& rows, const std::vector<std::int32_t>& lengths) const {
  ChunkPlan plan;
  plan.slot.resize(rows.size());
  plan.fresh.resize(rows.size());
  plan.offset.resize(rows.size());
  std::unordered_set<std::int64_t> seen;
  std::size_t taken = 0;  // free slots given to new utterances so far
  for (std::size_t b = 0; b < rows.size(); ++b) {
    const ChunkRow& row = rows[b];
    ASRDEC_CHECK_ARG(seen.insert(row.utterance).second, owner_, "::decode_chunks: utterance ", row.utterance,
                     " appears in more than one row of the call (send its chunks in order, one per call)");
    const auto open = slot_of_.find(row.utterance);
    ASRDEC_CHECK_ARG(row.first || open != slot_of_.end(), owner_, "::decode_chunks: utterance ", row.utterance,
                     " is not open: its first chunk needs first = true (or it has ended or was cancelled)");
    if (open != slot_of_.end()) {
      plan.slot[b] = open->second.slot;
      plan.offset[b] = row.first ? 0 : open->second.frames;
    } else {
      const std::int32_t slot = nth_free(taken);
      ASRDEC_EXPECTS(slot >= 0, OutOfMemory, owner_, "::decode_chunks: utterance ", row.utterance,
                     " cannot start: ", slot_of_.size(), " utterances are open and ", taken,
                     " more start in this call, the decoder's limit (BatchLimits::max_open_utterances = ", capacity_,
                     "); end or cancel utterances first, or construct the decoder with a larger limit");
      plan.slot[b] = slot;
      ++taken;
      plan.offset[b] = 0;
    }
    plan.fresh[b] = row.first ? 1 : 0;
    const std::int64_t length = b < lengths.size() ? lengths[b] : 0;
    ASRDEC_CHECK_ARG(plan.offset[b] + length <= std::numeric_limits<std::int32_t>::max(), owner_,
                     "::decode_chunks: utterance ", row.utterance, " would pass 2^31 - 1 frames (", plan.offset[b],
                     " decoded, ", length, " more); end it and start a new one");
  }
  return plan;
}

void UtteranceChannels::commit(const std::vector<ChunkRow>& rows, const ChunkPlan& plan,
                               const std::vector<std::int32_t>& lengths) {
  for (std::size_t b = 0; b < rows.size(); ++b) {
    const auto open = slot_of_.find(rows[b].utterance);
    if (open == slot_of_.end()) {
      // plan() gave new utterances the free slots in the order take_free() hands them out.
      const std::int32_t slot = take_free();
      ASRDEC_EXPECTS(slot == plan.slot[b], Error, "internal error: channel plan out of date");
      slot_of_.emplace(rows[b].utterance, Open{slot, plan.offset[b] + lengths[b]});
    } else {
      open->second.frames = plan.offset[b] + lengths[b];
    }
  }
  for (const ChunkRow& row : rows) {
    if (row.last) cancel(row.utterance);
  }
}

std::int32_t UtteranceChannels::cancel(std::int64_t utterance) {
  const auto open = slot_of_.find(utterance);
  if (open == slot_of_.end()) return -1;
  const std::int32_t slot = open->second.slot;
  freed_.push_back(slot);
  slot_of_.erase(open);
  return slot;
}

std::vector<Hypothesis> PartialHypotheses::append(const std::vector<ChunkRow>& rows, const ChunkPlan& plan,
                                                  std::vector<Hypothesis>&& chunk) {
  std::vector<Hypothesis> out(rows.size());
  for (std::size_t b = 0; b < rows.size(); ++b) {
    Hypothesis& so_far = by_slot_[static_cast<std::size_t>(plan.slot[b])];
    Hypothesis& part = chunk[b];
    if (plan.fresh[b]) so_far = Hypothesis{};
    const auto append_all = [](auto& to, const auto& from) { to.insert(to.end(), from.begin(), from.end()); };
    append_all(so_far.tokens, part.tokens);
    append_all(so_far.timestamps, part.timestamps);
    append_all(so_far.durations, part.durations);
    append_all(so_far.token_scores, part.token_scores);
    append_all(so_far.token_confidences, part.token_confidences);
    so_far.score = part.score;
    so_far.ranking_score = part.ranking_score;
    so_far.am_score = part.am_score;
    so_far.lm_score = part.lm_score;
    so_far.boost_score = part.boost_score;
    so_far.is_final = rows[b].last;
    if (rows[b].last) {
      out[b] = std::move(so_far);
      so_far = Hypothesis{};
    } else {
      out[b] = so_far;
    }
  }
  return out;
}

void PartialHypotheses::clear(std::int32_t slot) { by_slot_[static_cast<std::size_t>(slot)] = Hypothesis{}; }

}  // namespace asrdec::detail
