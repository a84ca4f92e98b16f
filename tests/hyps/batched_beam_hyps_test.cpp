// BatchedBeamHyps: NeMo's hash test vectors, crafted recombination cases for each model kind, random step
// sequences against a naive store that copies whole transcripts (no pointers, no hashes), N-best ranking, and both
// containers' reservations (BatchedBeamHyps, BatchedHyps) when one cannot be allocated.

#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <random>

#include "asrdec/asrdec.hpp"
#include "support/test_support.hpp"

namespace asrdec {
namespace {

constexpr float kDead = -std::numeric_limits<float>::infinity();

struct Candidate {
  std::int32_t parent, label;
  float score;
  std::int32_t duration = 0;
  float logprob = 0.0f;  // the label's log-probability, reported as the token's score
};

// One step for utterance b: every slot staged from the current values, then committed; then recombination.
void step(BatchedBeamHyps<MemoryKind::host>& hyps, std::int64_t b, const std::vector<Candidate>& candidates,
          bool recombine = true) {
  const BeamHypsRef h = hyps.ref();
  for (std::int32_t k = 0; k < h.beam; ++k) {
    const Candidate& c = candidates[static_cast<std::size_t>(k)];
    beam_stage_result(h, b, k, c.parent, c.label, c.score, c.duration, c.logprob);
  }
  for (std::int32_t k = 0; k < h.beam; ++k) beam_commit_result(h, b, k);
  if (!recombine) return;
  for (std::int32_t k = 0; k < h.beam; ++k) beam_stage_recombination(h, b, k);
  for (std::int32_t k = 0; k < h.beam; ++k) beam_commit_recombination(h, b, k);
}

BatchedBeamHyps<MemoryKind::host> make(BeamKind kind, std::int32_t beam, std::int32_t blank, std::int64_t batch = 1,
                                       std::int32_t capacity = 16) {
  BatchedBeamHyps<MemoryKind::host> hyps;
  hyps.reserve(batch, beam, capacity, kind, blank, Device::cpu());
  for (std::int64_t b = 0; b < batch; ++b) beam_clear(hyps.ref(), b);
  return hyps;
}

std::uint64_t hash_of(const std::vector<std::int32_t>& tokens) {
  std::uint64_t h = 0;
  for (std::int32_t t : tokens) h = beam_hash_extend(h, t);
  return h;
}

TEST(BatchedBeamHyps, HashTestVectors) {
  EXPECT_EQ(static_cast<std::int64_t>(hash_of({})), 0);
  EXPECT_EQ(static_cast<std::int64_t>(hash_of({0})), 1);
  EXPECT_EQ(static_cast<std::int64_t>(hash_of({0, 0})), 6364136223846793006LL);
  EXPECT_EQ(static_cast<std::int64_t>(hash_of({5, 7})), 1291329195661654806LL);
  EXPECT_EQ(static_cast<std::int64_t>(hash_of({1, 2, 3})), -2759284027258054307LL);
}

TEST(BatchedBeamHyps, RnntRecombinesEqualTranscriptsByLogSumExp) {
  const std::int32_t blank = 4;
  auto hyps = make(BeamKind::rnnt, 3, blank);
  // Step 1: slot 0 emits 2, slot 1 takes blank (both from slot 0), slot 2 stays dead.
  step(hyps, 0, {{0, 2, -1.0f, 0, -0.9f}, {0, blank, -0.5f, 0, -0.5f}, {0, 1, kDead}});
  // Step 2: "2 ∅" (slot 0) and "∅ 2" (slot 1) are the same transcript on the same frame after one more step each.
  step(hyps, 0, {{0, blank, -2.0f, 0, -1.0f}, {1, 2, -1.5f, 0, -1.25f}, {1, 3, -3.0f, 0, -2.5f}});
  const BeamHypsRef h = hyps.ref();
  EXPECT_EQ(h.scores[0], kDead);  // the lower score dies
  EXPECT_NEAR(h.scores[1], std::log(std::exp(-2.0) + std::exp(-1.5)), 1e-6);
  EXPECT_EQ(h.scores[2], -3.0f);
  const Hypothesis best = beam_hypothesis(h, 0, 1);
  EXPECT_EQ(best.tokens, (std::vector<std::int32_t>{2}));
  EXPECT_EQ(best.timestamps, (std::vector<std::int32_t>{1}));  // emitted on frame 1, after the blank
  EXPECT_EQ(best.token_scores, (std::vector<float>{-1.25f}));  // the survivor's own alignment, not the merged one's
  EXPECT_EQ(best.token_confidences, (std::vector<float>{std::exp(-1.25f)}));
  EXPECT_EQ(beam_hypothesis(h, 0, 0).token_scores, (std::vector<float>{-0.9f}));
  EXPECT_EQ(beam_hypothesis(h, 0, 0).tokens, (std::vector<std::int32_t>{2}));  // still rebuildable
  EXPECT_EQ(beam_hypothesis(h, 0, 2).tokens, (std::vector<std::int32_t>{3}));
}

TEST(BatchedBeamHyps, TdtKeepsEqualTranscriptsOnDifferentFramesApart) {
  const std::int32_t blank = 4;
  auto hyps = make(BeamKind::tdt, 2, blank);
  step(hyps, 0, {{0, 2, -1.0f, 1}, {0, 2, -2.0f, 2}});
  const BeamHypsRef h = hyps.ref();
  EXPECT_EQ(h.scores[0], -1.0f);
  EXPECT_EQ(h.scores[1], -2.0f);
  EXPECT_EQ(h.next_time[0], 1);
  EXPECT_EQ(h.next_time[1], 2);
  step(hyps, 0, {{1, blank, -2.5f, 0}, {0, blank, -1.5f, 1}});  // both reach frame 2 with "2": merged
  EXPECT_EQ(h.scores[0], kDead);
  EXPECT_NEAR(h.scores[1], std::log(std::exp(-2.5) + std::exp(-1.5)), 1e-6);
  EXPECT_EQ(beam_hypothesis(h, 0, 1).durations, (std::vector<std::int32_t>{1}));
  EXPECT_EQ(beam_hypothesis(h, 0, 1).timestamps, (std::vector<std::int32_t>{0}));  // TDT: the emission frame
  EXPECT_EQ(token_end_frames(beam_hypothesis(h, 0, 1)), (std::vector<std::int32_t>{1}));
}

TEST(BatchedBeamHyps, CtcFoldsRepeatsAndMergesByMax) {
  const std::int32_t blank = 3;
  auto hyps = make(BeamKind::ctc, 4, blank);
  step(hyps, 0, {{0, 1, -0.1f}, {0, blank, -0.2f}, {0, 2, -3.0f}, {0, 0, kDead}});
  // "1 1" (one token, last 1), "∅ 1" (one token, last 1): merged by max; "1 ∅" differs by its last label.
  step(hyps, 0, {{0, 1, -0.3f}, {1, 1, -0.25f}, {0, blank, -0.5f}, {2, 2, -3.1f}});
  const BeamHypsRef h = hyps.ref();
  EXPECT_EQ(h.scores[0], kDead);
  EXPECT_EQ(h.scores[1], -0.25f);  // the maximum, not a log-add
  EXPECT_EQ(h.scores[2], -0.5f);
  EXPECT_EQ(h.tokens[2], 1);
  EXPECT_EQ(h.last_label[2], blank);
  // "1 ∅ 1" emits two tokens.
  step(hyps, 0, {{2, 1, -0.7f}, {1, 1, -0.6f}, {1, blank, -0.9f}, {3, 2, -9.0f}});
  EXPECT_EQ(beam_hypothesis(h, 0, 0).tokens, (std::vector<std::int32_t>{1, 1}));
  EXPECT_EQ(beam_hypothesis(h, 0, 0).timestamps, (std::vector<std::int32_t>{0, 2}));
  EXPECT_EQ(beam_hypothesis(h, 0, 1).tokens, (std::vector<std::int32_t>{1}));
  EXPECT_EQ(beam_hypothesis(h, 0, 3).tokens, (std::vector<std::int32_t>{2}));
}

TEST(BatchedBeamHyps, NbestRanksLiveSlotsWithTiesToTheLowerSlot) {
  auto hyps = make(BeamKind::rnnt, 4, 9);
  step(hyps, 0, {{0, 1, -2.0f}, {0, 2, -1.0f}, {0, 3, -2.0f}, {0, 4, kDead}});
  step(hyps, 0, {{0, 9, -2.0f}, {1, 5, -1.8f}, {2, 9, -2.0f}, {3, 9, kDead}});
  const auto ranked = beam_nbest(hyps.ref(), 0, false);
  ASSERT_EQ(ranked.size(), 3u);
  EXPECT_EQ(ranked[0].tokens, (std::vector<std::int32_t>{2, 5}));
  EXPECT_EQ(ranked[1].tokens, (std::vector<std::int32_t>{1}));  // tie at -2: slot 0 before slot 2
  EXPECT_EQ(ranked[2].tokens, (std::vector<std::int32_t>{3}));
  // Length normalisation: -1.8 / 3 = -0.6 beats -2 / 2 = -1; scores stay raw.
  const auto normalized = beam_nbest(hyps.ref(), 0, true);
  EXPECT_EQ(normalized[0].tokens, (std::vector<std::int32_t>{2, 5}));
  EXPECT_EQ(normalized[0].score, -1.8f);
}

// The naive store: every slot owns its whole history.
struct NaiveSlot {
  std::vector<std::int32_t> labels, tokens, timestamps, durations;
  std::vector<float> token_scores;
  std::int32_t last = -1, time = 0, on_frame = 0;
  double score = 0.0;
};

TEST(BatchedBeamHyps, RandomStepsEqualANaiveCopyingStore) {
  const std::uint64_t seed = testing::test_seed();
  SCOPED_TRACE(testing::seed_message(seed));
  std::mt19937_64 rng(seed);
  for (int trial = 0; trial < 300; ++trial) {
    const auto kind = static_cast<BeamKind>(trial % 3);
    const std::int32_t K = std::uniform_int_distribution<std::int32_t>(1, 6)(rng);
    const std::int32_t blank = 3;  // tokens 0..2: small, so equal transcripts are common
    const std::int32_t steps = std::uniform_int_distribution<std::int32_t>(1, 12)(rng);
    // Odd trials start with one entry a slot and widen the history before each step that needs it.
    auto hyps = make(kind, K, blank, 2, trial % 2 == 1 ? 1 : steps);
    const std::int64_t b = 1;
    std::vector<NaiveSlot> naive(static_cast<std::size_t>(K));
    for (std::int32_t k = 1; k < K; ++k) naive[static_cast<std::size_t>(k)].score = -INFINITY;
    SCOPED_TRACE("trial " + std::to_string(trial) + " K=" + std::to_string(K));
    for (std::int32_t s = 0; s < steps; ++s) {
      std::vector<Candidate> candidates;
      std::vector<NaiveSlot> next;
      for (std::int32_t k = 0; k < K; ++k) {
        Candidate c{static_cast<std::int32_t>(rng() % K), static_cast<std::int32_t>(rng() % 5) - 1,
                    -std::uniform_real_distribution<float>(0.0f, 10.0f)(rng), static_cast<std::int32_t>(rng() % 3),
                    -std::uniform_real_distribution<float>(0.0f, 5.0f)(rng)};
        if (rng() % 7 == 0) c.score = kDead;
        candidates.push_back(c);
        NaiveSlot n = naive[static_cast<std::size_t>(c.parent)];
        const std::int32_t emitted_on = n.time;
        const bool real = c.label >= 0 && c.label != blank && (kind != BeamKind::ctc || c.label != n.last);
        if (kind == BeamKind::rnnt) {
          n.time += c.label == blank ? 1 : 0;
          n.on_frame = c.label == blank ? 0 : n.on_frame + real;
        } else if (kind == BeamKind::tdt) {
          const std::int32_t jump = c.label < 0 ? 0 : c.duration;
          n.time += jump;
          n.on_frame = jump > 0 ? 0 : n.on_frame + real;
        }
        if (real) {
          n.tokens.push_back(c.label);
          n.timestamps.push_back(kind == BeamKind::ctc ? s : kind == BeamKind::tdt ? emitted_on : n.time);
          if (kind == BeamKind::tdt) n.durations.push_back(c.duration);
          n.token_scores.push_back(c.logprob);
        }
        if (kind == BeamKind::ctc ? c.label >= 0 : real) n.last = c.label;
        n.score = c.score;
        next.push_back(n);
      }
      // Naive recombination: equal token lists (and last label, and frame for TDT).
      const auto same = [&](const NaiveSlot& x, const NaiveSlot& y) {
        return x.tokens == y.tokens && x.last == y.last && (kind != BeamKind::tdt || x.time == y.time);
      };
      std::vector<double> merged(next.size());
      for (std::size_t k = 0; k < next.size(); ++k) {
        double best = next[k].score, sum = 0.0;
        bool survives = true;
        for (std::size_t j = 0; j < next.size(); ++j) {
          if (j == k || !same(next[k], next[j])) continue;
          if (next[j].score > next[k].score || (next[j].score == next[k].score && j < k)) survives = false;
          best = std::max(best, next[j].score);
        }
        for (std::size_t j = 0; j < next.size(); ++j) {
          if ((j == k || same(next[k], next[j])) && std::isfinite(next[j].score)) sum += std::exp(next[j].score - best);
        }
        merged[k] = !survives ? -INFINITY : kind == BeamKind::ctc || !std::isfinite(best) ? best : best + std::log(sum);
      }
      for (std::size_t k = 0; k < next.size(); ++k) next[k].score = merged[k];
      naive = next;
      hyps.make_room_for_step(2, steps);
      step(hyps, b, candidates);
      const BeamHypsRef h = hyps.ref();
      for (std::int32_t k = 0; k < K; ++k) {
        const NaiveSlot& n = naive[static_cast<std::size_t>(k)];
        const std::int64_t slot = beam_slot(h, b, k);
        ASSERT_EQ(h.tokens[slot], static_cast<std::int32_t>(n.tokens.size())) << "step " << s << " slot " << k;
        ASSERT_EQ(h.hash[slot], hash_of(n.tokens));
        ASSERT_EQ(h.last_label[slot], n.last);
        if (kind != BeamKind::ctc) {
          ASSERT_EQ(h.next_time[slot], n.time);
          ASSERT_EQ(h.on_frame[slot], n.on_frame);
        }
        if (std::isfinite(n.score)) {
          ASSERT_NEAR(h.scores[slot], n.score, 1e-5 * std::max(1.0, std::fabs(n.score)));
        } else {
          ASSERT_EQ(h.scores[slot], kDead);
        }
        const Hypothesis rebuilt = beam_hypothesis(h, b, k);
        ASSERT_EQ(rebuilt.tokens, n.tokens) << "step " << s << " slot " << k;
        ASSERT_EQ(rebuilt.timestamps, n.timestamps);
        ASSERT_EQ(rebuilt.durations, n.durations);
        ASSERT_EQ(rebuilt.token_scores, n.token_scores);
      }
    }
  }
}

TEST(BatchedBeamHyps, HistoryStartsSmallAndDoublesUpToTheWorstCase) {
  EXPECT_EQ(beam_history_start(100, 1100), 216);  // a step and a token per frame, and 16 more
  EXPECT_EQ(beam_history_start(100, 150), 150);   // never above the algorithm's bound
  EXPECT_EQ(beam_history_start(0, 1), 1);
  EXPECT_EQ(beam_history_next(216, 1100), 432);
  EXPECT_EQ(beam_history_next(864, 1100), 1100);
  // Widening keeps what was written, for every slot of every utterance.
  auto hyps = make(BeamKind::tdt, 2, 4, 2, 2);
  for (std::int64_t b = 0; b < 2; ++b) {
    step(hyps, b, {{0, 1, -1.0f, 0}, {0, 2, -2.0f, 1}}, false);
    step(hyps, b, {{1, 3, -3.0f, 2}, {0, 0, -4.0f, 0}}, false);
  }
  hyps.make_room_for_step(2, 2);  // full, but at the worst case: nothing to widen
  EXPECT_EQ(hyps.capacity(), 2);
  hyps.make_room_for_step(2, 100);
  EXPECT_EQ(hyps.capacity(), 4);
  hyps.make_room_for_step(2, 100);  // room left: unchanged
  EXPECT_EQ(hyps.capacity(), 4);
  for (std::int64_t b = 0; b < 2; ++b) step(hyps, b, {{0, 0, -5.0f, 3}, {1, 1, -6.0f, 0}}, false);
  const BeamHypsRef h = hyps.ref();
  for (std::int64_t b = 0; b < 2; ++b) {
    const Hypothesis first = beam_hypothesis(h, b, 0);
    EXPECT_EQ(first.tokens, (std::vector<std::int32_t>{2, 3, 0}));
    EXPECT_EQ(first.durations, (std::vector<std::int32_t>{1, 2, 3}));
    EXPECT_EQ(first.timestamps, (std::vector<std::int32_t>{0, 1, 3}));  // emission frames
    EXPECT_EQ(token_end_frames(first), (std::vector<std::int32_t>{1, 3, 6}));
    EXPECT_EQ(beam_hypothesis(h, b, 1).tokens, (std::vector<std::int32_t>{1, 0, 1}));
  }
}

TEST(BatchedBeamHyps, RunningOutOfEntriesIsReported) {
  auto hyps = make(BeamKind::rnnt, 1, 4, 1, 2);
  for (int s = 0; s < 3; ++s) step(hyps, 0, {{0, 1, -1.0f}});
  ASRDEC_EXPECT_THROW_MSG(beam_hypothesis(hyps.ref(), 0, 0), Error, "ran out of entries (capacity 2)");
  ASRDEC_EXPECT_THROW_MSG(beam_hypothesis(hyps.ref(), 0, 1), InvalidArgument, "beam slot (0, 1) out of range");
}

// A reservation that cannot be allocated throws and leaves the container as it was: its sizes stay those of its
// buffers, so the steps and tracebacks after it stay within them. (More cells than size_t counts: the buffer refuses
// them before asking for memory, so the failure is the same on every machine and under the sanitizers.)
TEST(BatchedBeamHyps, ReservationThatCannotBeAllocatedLeavesItAsItWas) {
  auto hyps = make(BeamKind::rnnt, 4, 7, 2, 8);
  step(hyps, 1, {{0, 1, -1.0f}, {0, 2, -2.0f}, {0, 3, -3.0f}, {0, 4, -4.0f}});
  const BeamHypsRef before = hyps.ref();
  const Hypothesis best = beam_hypothesis(before, 1, 0);
  EXPECT_THROW(hyps.reserve(std::int64_t{1} << 40, 4, 1 << 21, BeamKind::rnnt, 7, Device::cpu()), Error);
  EXPECT_EQ(hyps.batch(), 2);
  EXPECT_EQ(hyps.beam(), 4);
  EXPECT_EQ(hyps.capacity(), 8);
  EXPECT_EQ(hyps.ref().labels, before.labels);
  EXPECT_EQ(hyps.ref().scores, before.scores);
  EXPECT_EQ(beam_hypothesis(hyps.ref(), 1, 0).tokens, best.tokens);
  // A reservation that fits what it has changes nothing; the next steps write within the buffers.
  hyps.reserve(2, 4, 8, BeamKind::rnnt, 7, Device::cpu());
  EXPECT_EQ(hyps.ref().labels, before.labels);
  step(hyps, 1, {{0, 5, -1.5f}, {1, 5, -2.5f}, {2, 5, -3.5f}, {3, 5, -4.5f}});
  EXPECT_EQ(beam_hypothesis(hyps.ref(), 1, 0).tokens, (std::vector<std::int32_t>{1, 5}));
}

// The same for BatchedHyps, the greedy decoders' container.
TEST(BatchedHyps, ReservationThatCannotBeAllocatedLeavesItAsItWas) {
  BatchedHyps<MemoryKind::host> hyps;
  hyps.reserve(2, 16, Device::cpu());
  const HypsRef before = hyps.ref();
  EXPECT_THROW(hyps.reserve(std::int64_t{1} << 40, std::int64_t{1} << 22, Device::cpu()), Error);
  EXPECT_EQ(hyps.max_batch(), 2);
  EXPECT_EQ(hyps.capacity(), 16);
  EXPECT_EQ(hyps.ref().tokens, before.tokens);
  EXPECT_EQ(hyps.ref().capacity, 16);
  hyps.reserve(2, 16, Device::cpu());
  EXPECT_EQ(hyps.ref().tokens, before.tokens);
}

}  // namespace
}  // namespace asrdec
