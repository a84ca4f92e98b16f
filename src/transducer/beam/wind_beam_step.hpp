#pragma once
// One step of WIND beam search (windowed inference for non-blank detection, RNN-T), the rules shared by the CPU
// loop and the CUDA kernels: a hypothesis on frame t looks at the window t … t+n-1 with one predictor output and
// proposes its K best "first outputs" — a token v on frame t+j after blanks on t … t+j-1, or blank on the whole
// window — and each frame keeps at most K hypotheses.

#include <cstdint>

#include "asrdec/hyps/beam_hyps_ref.hpp"
#include "transducer/beam/aes_step.hpp"
#include "transducer/beam/alsd_step.hpp"

namespace asrdec::detail {

/** What one hypothesis sees in its window. */
struct WindowRow {
  const float* logp;    ///< [frames, V+1] log-softmax of the token logits on frames t … t+frames-1
  std::int32_t frames;  ///< n ≥ 1
  std::int32_t blank;
  std::int32_t tokens;      ///< V + 1
  bool may_emit_here;       ///< fewer than max_symbols tokens on frame t: a token on t itself is allowed
  const FusionRef* fusion;  ///< LM/boosting queries, indexed by `slot`
  std::int64_t slot;
};

/** The first outputs of a hypothesis (proposal label, jump = frames moved, added score) by the paper's P'(v, j):
 *  token v at position j scores Σ_{i<j} blank(t+i) + token(v, t+j), blank scores Σ_{i<n} blank(t+i) and moves n
 *  frames; blank and token scores are the fused ones (beam_blank_score, beam_token_score). Candidates are numbered
 *  j·(V+1) + v (blank: (n-1)·(V+1) + blank) for the total order. Late pruning (and no fusion) ranks the fused
 *  scores; early pruning ranks the acoustic scores (wind_proposals_from_topk re-scores the K best).
 *
 *  This ranks the share of one of `stride` threads (columns first, first + stride, …; thread 0 adds the blank) into
 *  its list `scores`/`ids` of `count` (topk_insert, capped at k). Every thread sums the blanks in the same order,
 *  so the lists' union ranks what one thread ranking every candidate would. */
ASRDEC_HD_INLINE void wind_rank_share(const BeamFusionRule& rule, const WindowRow& row, std::int32_t k,
                                      std::int32_t first, std::int32_t stride, float* scores, std::int32_t* ids,
                                      std::int32_t& count) {
  const bool early = rule.active && !rule.late;
  float blanks = 0.0f;           // fused blank scores of the positions before j
  float acoustic_blanks = 0.0f;  // their log-probabilities
  for (std::int32_t j = 0; j < row.frames; ++j) {
    const float* lp = row.logp + static_cast<std::int64_t>(j) * row.tokens;
    if (j > 0 || row.may_emit_here) {
      const float offset = beam_token_offset(rule, lp[row.blank]);
      for (std::int32_t v = first; v < row.tokens; v += stride) {
        if (v == row.blank) continue;
        const float score =
            early ? acoustic_blanks + lp[v]
                  : blanks + beam_token_score(rule, lp[v], offset,
                                              rule.active ? fusion_bonus(*row.fusion, row.slot, v) : 0.0f);
        topk_insert(scores, ids, k, count, score, j * row.tokens + v);
      }
    }
    blanks += beam_blank_score(rule, lp[row.blank]);
    acoustic_blanks += lp[row.blank];
  }
  if (first == 0) {
    topk_insert(scores, ids, k, count, early ? acoustic_blanks : blanks, (row.frames - 1) * row.tokens + row.blank);
  }
}

/** Entry i of wind_proposals_from_topk (below): the entries are independent, so a CUDA block fills them a thread
 *  each. */
ASRDEC_HD_INLINE void wind_proposal_from_topk(const BeamFusionRule& rule, const WindowRow& row, const float* scores,
                                              const std::int32_t* ids, std::int32_t i, AlsdProposals& out) {
  const std::int32_t j = ids[i] / row.tokens;
  const std::int32_t v = ids[i] % row.tokens;
  const std::int32_t jump = v == row.blank ? row.frames : j;
  out.label[i] = v;
  out.jump[i] = jump;
  out.score[i] = scores[i];
  out.logp[i] = row.logp[static_cast<std::int64_t>(j) * row.tokens + v];  // blank: on the window's last frame
  if (!rule.active || rule.late) return;
  // Early pruning: re-score the acoustic choice with fusion (blank sums recomputed up to its position).
  const std::int32_t upto = v == row.blank ? row.frames : jump;
  float fused = 0.0f;
  for (std::int32_t f = 0; f < upto; ++f)
    fused += beam_blank_score(rule, row.logp[static_cast<std::int64_t>(f) * row.tokens + row.blank]);
  if (v != row.blank) {
    const float* lp = row.logp + static_cast<std::int64_t>(upto) * row.tokens;
    fused +=
        beam_token_score(rule, lp[v], beam_token_offset(rule, lp[row.blank]), fusion_bonus(*row.fusion, row.slot, v));
  }
  out.score[i] = fused;
}

/** The proposals from the K best first outputs (`scores`/`ids`, `count` of them in beam_before order); early
 *  pruning re-scores them with fusion, keeping the acoustic order. */
ASRDEC_HD_INLINE void wind_proposals_from_topk(const BeamFusionRule& rule, const WindowRow& row, const float* scores,
                                               const std::int32_t* ids, std::int32_t count, AlsdProposals& out) {
  for (std::int32_t i = 0; i < count; ++i) wind_proposal_from_topk(rule, row, scores, ids, i, out);
  out.count = count;
}

/** The K best first outputs of a hypothesis, by one thread (the CUDA kernel ranks with a block: block_topk_merge). */
ASRDEC_HD_INLINE void wind_propose(const BeamFusionRule& rule, const WindowRow& row, std::int32_t k,
                                   AlsdProposals& out) {
  float scores[kMaxBeam];
  std::int32_t ids[kMaxBeam];
  std::int32_t count = 0;
  wind_rank_share(rule, row, k, 0, 1, scores, ids, count);
  wind_proposals_from_topk(rule, row, scores, ids, count, out);
}

/** The frame cap, phase 1: slot k of utterance b dies when `cap` live slots on its frame rank before it (higher
 *  score, then lower slot). Writes h.staged_score. */
ASRDEC_HD_INLINE void wind_stage_frame_cap(const BeamHypsRef& h, std::int64_t b, std::int32_t k, std::int32_t cap) {
  const std::int64_t s = beam_slot(h, b, k);
  const float score = h.scores[s];
  float kept = score;
  if (score != -__builtin_huge_valf()) {
    std::int32_t better = 0;
    for (std::int32_t j = 0; j < h.beam; ++j) {
      const std::int64_t o = beam_slot(h, b, j);
      if (j != k && h.scores[o] != -__builtin_huge_valf() && h.next_time[o] == h.next_time[s] &&
          beam_before(h.scores[o], j, score, k)) {
        ++better;
      }
    }
    if (better >= cap) kept = -__builtin_huge_valf();
  }
  h.staged_score[s] = kept;
}

/** The frame cap, phase 2. */
ASRDEC_HD_INLINE void wind_commit_frame_cap(const BeamHypsRef& h, std::int64_t b, std::int32_t k) {
  beam_commit_recombination(h, b, k);
}

/** Utterance b's earliest unfinished frame (`frame`; `length` when every hypothesis has finished) and the live slots
 *  on it, in slot order. Returns how many there are; only the first `cap` are written to `group` (the frame cap
 *  keeps the count at most cap, so a larger count is an internal error the caller reports). */
ASRDEC_HD_INLINE std::int32_t wind_group(const BeamHypsRef& h, std::int64_t b, std::int32_t length, std::int32_t cap,
                                         std::int32_t& frame, std::int32_t* group) {
  std::int32_t t = length;
  for (std::int32_t k = 0; k < h.beam; ++k) {
    const std::int64_t s = beam_slot(h, b, k);
    if (h.scores[s] != -__builtin_huge_valf() && h.next_time[s] < t) t = h.next_time[s];
  }
  frame = t;
  if (t >= length) return 0;
  std::int32_t count = 0;
  for (std::int32_t k = 0; k < h.beam; ++k) {
    const std::int64_t s = beam_slot(h, b, k);
    if (h.scores[s] == -__builtin_huge_valf() || h.next_time[s] != t) continue;
    if (count < cap) group[count] = k;
    ++count;
  }
  return count;
}

/** Streaming: whether a group on `frame` must wait for more frames — its window of W frames would reach past the
 *  `length` frames brought so far (a window is shorter only at the utterance's end; a row that ends its utterance
 *  never waits). */
ASRDEC_HD_INLINE bool wind_waits_for_frames(std::int32_t frame, std::int32_t window, std::int32_t length) {
  return frame + window > length;
}

/** The window log-probabilities of one utterance's group: member g's position j (frame t+j) at
 *  (g·window + j)·tokens. */
struct WindWindows {
  const float* logp;
  std::int32_t window;  ///< rows per member (the configured window; the first `frames` are filled)
  std::int32_t blank;
  std::int32_t tokens;      ///< V + 1
  const FusionRef* fusion;  ///< LM/boosting queries, indexed by pool slot

  ASRDEC_HD_INLINE const float* member(std::int32_t g) const {
    return logp + static_cast<std::int64_t>(g) * window * tokens;
  }
};

/** What group member g (pool slot s) sees: its window of `frames` rows; a token on the frame itself only while
 *  fewer than max_symbols tokens were emitted there. */
ASRDEC_HD_INLINE WindowRow wind_member_row(const WindWindows& w, const BeamHypsRef& h, std::int64_t s, std::int32_t g,
                                           std::int32_t frames, std::int32_t max_symbols) {
  return WindowRow{w.member(g), frames, w.blank, w.tokens, h.on_frame[s] < max_symbols, w.fusion, s};
}

/** Prefix search's token score: the fused score of `label` on the frame for group member j (a pool slot). */
struct WindTokenScore {
  const BeamFusionRule& rule;
  const WindWindows& windows;
  const BeamHypsRef& h;
  std::int64_t b;
  const std::int32_t* group;
  std::int32_t count;

  ASRDEC_HD_INLINE float operator()(std::int32_t j, std::int32_t label) const {
    for (std::int32_t g = 0; g < count; ++g) {
      if (group[g] != j) continue;
      const float* logp = windows.member(g);
      const AlsdRow row{logp, nullptr, windows.blank, windows.tokens, nullptr, 0, windows.fusion, beam_slot(h, b, j)};
      return alsd_label_score(rule, row, label, beam_token_offset(rule, logp[windows.blank]));
    }
    return -__builtin_huge_valf();  // prefix search only asks about hypotheses on the frame, all in the group
  }
};

/** A hypothesis of the rebuilt pool: `parent` (a pool slot) as it is (label -1) or extended by `label` (`logp`: its
 *  acoustic log-probability where it is emitted). */
struct WindCandidate {
  std::int32_t parent;
  std::int32_t label;
  std::int32_t jump;
  float score;
  float logp;
};

/** The rebuilt pool of utterance b on frame t (wind_step): the hypotheses outside the group (unchanged, in slot
 *  order), then the group's proposals (in group order), then dead slots, into `candidates`. Returns false if a
 *  proposal found no room. */
ASRDEC_HD_INLINE bool wind_rebuild_pool(const BeamHypsRef& h, std::int64_t b, std::int32_t t, const std::int32_t* group,
                                        std::int32_t count, const AlsdProposals* proposals, WindCandidate* candidates) {
  const std::int32_t P = h.beam;
  std::int32_t kept = 0;
  bool fits = true;
  for (std::int32_t k = 0; k < P; ++k) {
    const std::int64_t s = beam_slot(h, b, k);
    if (h.scores[s] == -__builtin_huge_valf() || h.next_time[s] == t) continue;
    candidates[kept++] = WindCandidate{k, -1, 0, h.scores[s], 0.0f};
  }
  // The pool has room for every proposal: at most cap hypotheses on each of the window's frames after t, plus
  // cap proposals from each of the (at most cap) group members.
  for (std::int32_t g = 0; g < count; ++g) {
    const float base = h.scores[beam_slot(h, b, group[g])];
    for (std::int32_t r = 0; r < proposals[g].count; ++r) {
      const float score = base + proposals[g].score[r];
      if (score == -__builtin_huge_valf()) continue;
      if (kept == P) {
        fits = false;
        break;
      }
      candidates[kept++] =
          WindCandidate{group[g], proposals[g].label[r], proposals[g].jump[r], score, proposals[g].logp[r]};
    }
  }
  for (std::int32_t i = kept; i < P; ++i) candidates[i] = WindCandidate{0, -1, 0, -__builtin_huge_valf(), 0.0f};
  return fits;
}

/** One step of utterance b, whose group (`count` slots in `group`) is on frame t and proposed `proposals` (by
 *  group rank, wind_propose): prefix search among the group; the pool is rebuilt (wind_rebuild_pool); equal
 *  hypotheses merge and each frame keeps its `cap` best. For every pool slot s, from[s] is the slot its state comes
 *  from and label[s] what it took in (-1: nothing, or the slot is dead). `candidates` is scratch for the pool's
 *  slots. `fits` becomes false if a proposal found no room in the pool, which the pool's size rules out (an internal
 *  error for the caller).
 *
 *  The step runs as phases, each a function of one pool slot (or, for the pool's rebuild, of the utterance):
 *  `each(f)` calls f(k) for every slot k (in any order, on any threads), `sync()` separates the phases and
 *  `once(f)` calls f() once. wind_step runs them in order on one thread; the CUDA kernel runs a block per utterance,
 *  its threads over the slots, so the pairwise comparisons of prefix search, recombination and the frame cap cost
 *  O(P) a thread rather than O(P²). */
template <class EachSlot, class Sync, class Once>
ASRDEC_HD_INLINE void wind_step_phases(const BeamFusionRule& rule, const BeamHypsRef& h, std::int64_t b, std::int32_t t,
                                       const std::int32_t* group, std::int32_t count, const WindWindows& windows,
                                       const AlsdProposals* proposals, std::int32_t cap, WindCandidate* candidates,
                                       std::int64_t* from, std::int32_t* label, bool& fits, const EachSlot& each,
                                       const Sync& sync, const Once& once) {
  const WindTokenScore token_score{rule, windows, h, b, group, count};
  each([&](std::int32_t k) { beam_stage_prefix_search(h, b, k, t, token_score); });
  sync();
  each([&](std::int32_t k) { beam_commit_prefix_search(h, b, k); });
  sync();
  once([&] { fits = wind_rebuild_pool(h, b, t, group, count, proposals, candidates); });
  sync();
  each([&](std::int32_t i) {
    const WindCandidate c = candidates[i];
    beam_stage_result(h, b, i, c.parent, c.label, c.score, c.jump, c.logp);
  });
  sync();
  each([&](std::int32_t i) { beam_commit_result(h, b, i); });
  sync();
  each([&](std::int32_t i) { beam_stage_recombination(h, b, i); });
  sync();
  each([&](std::int32_t i) { beam_commit_recombination(h, b, i); });
  sync();
  each([&](std::int32_t i) { wind_stage_frame_cap(h, b, i, cap); });
  sync();
  each([&](std::int32_t i) { wind_commit_frame_cap(h, b, i); });
  sync();
  each([&](std::int32_t i) {
    const std::int64_t s = beam_slot(h, b, i);
    from[s] = beam_slot(h, b, candidates[i].parent);
    label[s] = h.scores[s] != -__builtin_huge_valf() ? candidates[i].label : -1;
  });
}

/** wind_step_phases on one thread (the CPU executor); returns `fits`. */
inline bool wind_step(const BeamFusionRule& rule, const BeamHypsRef& h, std::int64_t b, std::int32_t t,
                      const std::int32_t* group, std::int32_t count, const WindWindows& windows,
                      const AlsdProposals* proposals, std::int32_t cap, WindCandidate* candidates, std::int64_t* from,
                      std::int32_t* label) {
  bool fits = true;
  const auto each = [&h](const auto& f) {
    for (std::int32_t k = 0; k < h.beam; ++k) f(k);
  };
  wind_step_phases(
      rule, h, b, t, group, count, windows, proposals, cap, candidates, from, label, fits, each, [] {},
      [](const auto& f) { f(); });
  return fits;
}

}  // namespace asrdec::detail
