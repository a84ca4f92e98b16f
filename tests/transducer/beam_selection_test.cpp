// The selection of ALSD++ and AES++ (an utterance keeps the K best of its slots' proposals) by rank — each candidate
// counts the candidates before it, as a CUDA block does with a thread per candidate — against the plain definition:
// one topk_insert over every proposal in slot order, then the new slots staged, committed and (ALSD++) recombined
// one after another. Scores come from small sets, so that totals tie often and the order's tie rule (the lower id
// k·W + j first) decides; dead parents, -inf and NaN proposals and short lists are drawn too. The phases run with
// their slots and candidates visited in a shuffled order, so a phase that read what another slot of the same phase
// writes (a race on the GPU) would show here.

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <limits>
#include <numeric>
#include <random>
#include <vector>

#include "asrdec/hyps/batched_beam_hyps.hpp"
#include "hyps/beam_search_step.hpp"
#include "support/test_support.hpp"
#include "transducer/beam/aes_step.hpp"
#include "transducer/beam/alsd_step.hpp"

namespace asrdec::detail {
namespace {

constexpr float kDead = -std::numeric_limits<float>::infinity();

float draw_score(std::mt19937_64& rng) {
  static const float kScores[] = {0.0f, -0.5f, -1.0f, -1.5f, -2.0f, kDead};
  const std::size_t pick = std::uniform_int_distribution<std::size_t>(0, 7)(rng);
  if (pick < 6) return kScores[pick];
  return std::uniform_real_distribution<float>(-3.0f, 0.0f)(rng);
}

// Ranks every candidate of utterance `b` into `chosen` (one entry per slot, -1 where no candidate lands) and
// compares them with the ids the plain definition keeps, in order.
template <class Proposals>
void expect_rank_equals_insertion(const BeamHypsRef& h, std::int64_t b, const std::vector<Proposals>& proposals,
                                  std::int32_t width) {
  const std::int32_t K = h.beam;
  float best[kMaxAesProposals * kMaxBeam];
  std::int32_t ids[kMaxAesProposals * kMaxBeam];
  std::int32_t kept = 0;
  for (std::int32_t k = 0; k < K; ++k) {
    const std::int64_t s = beam_slot(h, b, k);
    for (std::int32_t j = 0; j < proposals[s].count; ++j) {
      topk_insert(best, ids, K, kept, h.scores[s] + proposals[s].score[j], k * width + j);
    }
  }
  std::vector<std::int64_t> chosen(proposals.size(), 7777);
  for (std::int32_t k = 0; k < K; ++k) chosen[beam_slot(h, b, k)] = -1;
  // In reverse, so that no order of the candidates is assumed.
  for (std::int32_t c = K * width - 1; c >= 0; --c) beam_rank_proposal(h, b, proposals.data(), width, c, chosen.data());
  for (std::int32_t r = 0; r < K; ++r) {
    const std::int64_t expected = r < kept ? ids[r] : -1;
    ASSERT_EQ(chosen[beam_slot(h, b, r)], expected)
        << "rank " << r << " of " << kept << " kept, beam " << K << ", width " << width;
  }
}

template <class Proposals>
void fill(std::mt19937_64& rng, Proposals& p, std::int32_t width) {
  p.count = std::uniform_int_distribution<std::int32_t>(0, width)(rng);
  for (std::int32_t j = 0; j < p.count; ++j) {
    p.score[j] = draw_score(rng);
    p.label[j] = j;
  }
}

TEST(BeamSelection, RankEqualsOneInsertionOverEveryProposal) {
  const std::uint64_t seed = testing::test_seed();
  SCOPED_TRACE(testing::seed_message(seed));
  std::mt19937_64 rng(seed);
  std::int64_t ties = 0;
  for (int trial = 0; trial < 4000; ++trial) {
    const std::int32_t K = std::uniform_int_distribution<std::int32_t>(1, trial % 50 == 0 ? kMaxBeam : 8)(rng);
    const std::int32_t beta = std::uniform_int_distribution<std::int32_t>(0, 3)(rng);
    const std::int64_t batch = 2;
    std::vector<float> scores(static_cast<std::size_t>(batch * K));
    for (float& score : scores) score = draw_score(rng);
    BeamHypsRef h{};
    h.batch = batch;
    h.beam = K;
    h.scores = scores.data();
    const std::int64_t b = std::uniform_int_distribution<std::int64_t>(0, batch - 1)(rng);
    SCOPED_TRACE("trial " + std::to_string(trial));

    std::vector<AlsdProposals> alsd(scores.size());
    for (AlsdProposals& p : alsd) fill(rng, p, K);
    expect_rank_equals_insertion(h, b, alsd, K);

    std::vector<AesProposals> aes(scores.size());
    for (AesProposals& p : aes) fill(rng, p, K + beta);
    expect_rank_equals_insertion(h, b, aes, K + beta);
    if (::testing::Test::HasFatalFailure()) return;

    // How often equal proposal scores met in one slot's list (-inf pairs included): the tie rule had work to do.
    for (std::int32_t k = 0; k < K; ++k) {
      const AlsdProposals& p = alsd[static_cast<std::size_t>(beam_slot(h, b, k))];
      for (std::int32_t j = 1; j < p.count; ++j) ties += p.score[j] == p.score[j - 1] ? 1 : 0;
    }
  }
  EXPECT_GT(ties, 1000) << "too few ties to test the tie rule";
  std::printf("%lld tied neighbours\n", static_cast<long long>(ties));
}

// --- The whole selection: phases in a shuffled order against the sequential definition ---

constexpr std::int32_t kVocab =
    3;  // labels 0..2 and blank 3: few labels, so equal hypotheses (recombination) are common
constexpr std::int32_t kBlank = kVocab;

// Scores as the ranking sees them: a NaN counts as -inf (beam_rank_proposal), so the definition does the same.
float ranked(float x) { return std::isnan(x) ? kDead : x; }

// The K best of utterance b's proposals (ids k·W + j), one topk_insert after another.
template <class Proposals>
std::int32_t insertion_topk(const BeamHypsRef& h, std::int64_t b, const Proposals* proposals, std::int32_t width,
                            float* best, std::int32_t* ids) {
  std::int32_t kept = 0;
  for (std::int32_t k = 0; k < h.beam; ++k) {
    const std::int64_t s = beam_slot(h, b, k);
    for (std::int32_t j = 0; j < proposals[s].count; ++j) {
      topk_insert(best, ids, h.beam, kept, ranked(h.scores[s] + proposals[s].score[j]), k * width + j);
    }
  }
  return kept;
}

// ALSD++'s selection by its definition, one slot after another; returns how many chosen slots recombination merged.
std::int32_t definition_alsd_select(const BeamHypsRef& h, std::int64_t b, const AlsdProposals* proposals,
                                    std::int64_t* from, std::int32_t* label) {
  const std::int32_t K = h.beam;
  float best[kMaxBeam * kMaxBeam];
  std::int32_t ids[kMaxBeam * kMaxBeam];
  const std::int32_t kept = insertion_topk(h, b, proposals, K, best, ids);
  std::vector<std::int32_t> parents(static_cast<std::size_t>(K)), labels(static_cast<std::size_t>(K));
  for (std::int32_t i = 0; i < K; ++i) {
    const bool live = i < kept && best[i] != kDead;
    parents[i] = live ? ids[i] / K : 0;
    const AlsdProposals& p = proposals[beam_slot(h, b, parents[i])];
    const std::int32_t j = live ? ids[i] % K : 0;
    labels[i] = live ? p.label[j] : -1;
    beam_stage_result(h, b, i, parents[i], labels[i], live ? best[i] : kDead, live ? p.jump[j] : 0,
                      live ? p.logp[j] : 0.0f);
  }
  for (std::int32_t i = 0; i < K; ++i) beam_commit_result(h, b, i);
  std::int32_t merged = 0;
  for (std::int32_t i = 0; i < K; ++i) merged += h.scores[beam_slot(h, b, i)] != kDead ? 1 : 0;
  for (std::int32_t i = 0; i < K; ++i) beam_stage_recombination(h, b, i);
  for (std::int32_t i = 0; i < K; ++i) beam_commit_recombination(h, b, i);
  for (std::int32_t i = 0; i < K; ++i) {
    const std::int64_t s = beam_slot(h, b, i);
    from[s] = beam_slot(h, b, parents[i]);
    label[s] = h.scores[s] != kDead ? labels[i] : -1;
    merged -= h.scores[s] != kDead ? 1 : 0;
  }
  return merged;
}

// AES++'s expansion step by its definition (proposals given), one slot after another.
void definition_aes_expand(const BeamHypsRef& h, std::int64_t b, std::int32_t C, const AesFrame& frame,
                           const AesProposals* proposals, std::int32_t* expanding, std::int64_t* from,
                           std::int32_t* label) {
  const std::int32_t K = h.beam;
  float best[kMaxBeam * kMaxAesProposals];
  std::int32_t ids[kMaxBeam * kMaxAesProposals];
  const std::int32_t kept = insertion_topk(h, b, proposals, C, best, ids);
  std::vector<std::int32_t> parents(static_cast<std::size_t>(K)), labels(static_cast<std::size_t>(K));
  for (std::int32_t i = 0; i < K; ++i) {
    const bool live = i < kept && best[i] != kDead;
    parents[i] = live ? ids[i] / C : 0;
    const std::int64_t p = beam_slot(h, b, parents[i]);
    labels[i] = live ? proposals[p].label[ids[i] % C] : -1;
    const float logp = labels[i] >= 0 ? frame.logp[p * frame.tokens + labels[i]] : 0.0f;
    beam_stage_result(h, b, i, parents[i], labels[i], live ? best[i] : kDead, 0, logp);
  }
  for (std::int32_t i = 0; i < K; ++i) {
    beam_commit_result(h, b, i);
    const std::int64_t s = beam_slot(h, b, i);
    from[s] = beam_slot(h, b, parents[i]);
    label[s] = labels[i];
    expanding[s] = labels[i] >= 0 && labels[i] != frame.blank ? 1 : 0;
  }
}

// Visits the slots (or candidates) of the utterances in a shuffled order, a fresh one each phase.
struct ShuffledVisits {
  std::mt19937_64* rng;
  std::int64_t batch;
  std::int32_t per_utterance;

  template <class F>
  void operator()(const F& f) const {
    std::vector<std::int64_t> order(static_cast<std::size_t>(batch * per_utterance));
    std::iota(order.begin(), order.end(), 0);
    std::shuffle(order.begin(), order.end(), *rng);
    for (const std::int64_t i : order) f(i / per_utterance, static_cast<std::int32_t>(i % per_utterance));
  }
};

BatchedBeamHyps<MemoryKind::host> make_beams(BeamKind kind, std::int32_t K, std::int64_t batch) {
  BatchedBeamHyps<MemoryKind::host> hyps;
  hyps.reserve(batch, K, 16, kind, kBlank, Device::cpu());
  for (std::int64_t b = 0; b < batch; ++b) beam_clear(hyps.ref(), b);
  return hyps;
}

template <class Proposals>
void draw_proposals(std::mt19937_64& rng, std::vector<Proposals>& proposals, std::int32_t width, bool tdt) {
  std::uniform_int_distribution<std::int32_t> label(0, kBlank);
  for (Proposals& p : proposals) {
    fill(rng, p, width);
    for (std::int32_t j = 0; j < p.count; ++j) {
      p.label[j] = label(rng);
      if (std::uniform_int_distribution<int>(0, 40)(rng) == 0) p.score[j] = std::nanf("");
      if constexpr (std::is_same_v<Proposals, AlsdProposals>) {
        p.jump[j] = tdt ? std::uniform_int_distribution<std::int32_t>(0, 2)(rng) : 0;
        p.logp[j] = std::uniform_real_distribution<float>(-4.0f, 0.0f)(rng);
      }
    }
  }
}

bool same_bits(float a, float b) { return std::memcmp(&a, &b, sizeof a) == 0; }

// Every slot's state and the entries of the step just written are the same in both beams.
void expect_same_beams(const BeamHypsRef& x, const BeamHypsRef& y) {
  for (std::int64_t s = 0; s < x.batch * x.beam; ++s) {
    ASSERT_TRUE(same_bits(x.scores[s], y.scores[s])) << "slot " << s << ": " << x.scores[s] << " vs " << y.scores[s];
    ASSERT_EQ(x.tokens[s], y.tokens[s]) << "slot " << s;
    ASSERT_EQ(x.hash[s], y.hash[s]) << "slot " << s;
    ASSERT_EQ(x.prefix_hash[s], y.prefix_hash[s]) << "slot " << s;
    ASSERT_EQ(x.last_label[s], y.last_label[s]) << "slot " << s;
    ASSERT_EQ(x.next_time[s], y.next_time[s]) << "slot " << s;
    ASSERT_EQ(x.on_frame[s], y.on_frame[s]) << "slot " << s;
    ASSERT_EQ(x.steps[s], y.steps[s]) << "slot " << s;
    for (std::int32_t i = 0; i < x.steps[s]; ++i) {
      const std::int64_t at = s * x.capacity + i;
      ASSERT_EQ(x.labels[at], y.labels[at]) << "slot " << s << " entry " << i;
      ASSERT_EQ(x.parents[at], y.parents[at]) << "slot " << s << " entry " << i;
      ASSERT_EQ(x.timestamps[at], y.timestamps[at]) << "slot " << s << " entry " << i;
      ASSERT_TRUE(same_bits(x.logprobs[at], y.logprobs[at])) << "slot " << s << " entry " << i;
      if (x.kind == BeamKind::tdt) {
        ASSERT_EQ(x.durations[at], y.durations[at]) << "slot " << s << " entry " << i;
      }
    }
  }
}

TEST(BeamSelection, AlsdSelectionPhasesInAnyOrderEqualTheDefinition) {
  const std::uint64_t seed = testing::test_seed();
  SCOPED_TRACE(testing::seed_message(seed));
  std::mt19937_64 rng(seed);
  std::int64_t recombined = 0;
  for (int trial = 0; trial < 300; ++trial) {
    const std::int32_t K = std::uniform_int_distribution<std::int32_t>(1, 6)(rng);
    const std::int64_t batch = std::uniform_int_distribution<std::int64_t>(1, 3)(rng);
    const bool tdt = trial % 2 == 1;
    SCOPED_TRACE("trial " + std::to_string(trial) + ", beam " + std::to_string(K) + (tdt ? ", TDT" : ", RNN-T"));
    auto definition = make_beams(tdt ? BeamKind::tdt : BeamKind::rnnt, K, batch);
    auto phases = make_beams(tdt ? BeamKind::tdt : BeamKind::rnnt, K, batch);
    const auto slots = static_cast<std::size_t>(batch * K);
    std::vector<AlsdProposals> proposals(slots);
    std::vector<std::int64_t> from_d(slots), from_p(slots);
    std::vector<std::int32_t> label_d(slots), label_p(slots);
    for (int step = 0; step < 10; ++step) {
      draw_proposals(rng, proposals, K, tdt);
      const BeamHypsRef d = definition.ref();
      const BeamHypsRef p = phases.ref();
      for (std::int64_t b = 0; b < batch; ++b) {
        recombined += definition_alsd_select(d, b, proposals.data(), from_d.data(), label_d.data());
      }
      alsd_select_phases(p, proposals.data(), from_p.data(), label_p.data(), ShuffledVisits{&rng, batch, K},
                         ShuffledVisits{&rng, batch, K * K}, [] {});
      ASSERT_EQ(from_p, from_d) << "step " << step;
      ASSERT_EQ(label_p, label_d) << "step " << step;
      expect_same_beams(d, p);
      if (::testing::Test::HasFatalFailure()) return;
    }
  }
  EXPECT_GT(recombined, 20) << "too few recombinations to test them";
  std::printf("%lld slots chosen and then merged by recombination\n", static_cast<long long>(recombined));
}

TEST(BeamSelection, AesExpansionPhasesInAnyOrderEqualTheDefinition) {
  const std::uint64_t seed = testing::test_seed();
  SCOPED_TRACE(testing::seed_message(seed));
  std::mt19937_64 rng(seed);
  const BeamFusionRule rule{};
  for (int trial = 0; trial < 300; ++trial) {
    const std::int32_t K = std::uniform_int_distribution<std::int32_t>(1, 6)(rng);
    const std::int32_t C = K + std::uniform_int_distribution<std::int32_t>(0, 3)(rng);
    const std::int64_t batch = std::uniform_int_distribution<std::int64_t>(1, 3)(rng);
    SCOPED_TRACE("trial " + std::to_string(trial) + ", beam " + std::to_string(K) + ", " + std::to_string(C) +
                 " proposals a hypothesis");
    auto definition = make_beams(BeamKind::rnnt, K, batch);
    auto phases = make_beams(BeamKind::rnnt, K, batch);
    const auto slots = static_cast<std::size_t>(batch * K);
    std::vector<float> logp(slots * (kVocab + 1));
    std::vector<AesProposals> proposals(slots);
    std::vector<std::int64_t> from_d(slots), from_p(slots);
    std::vector<std::int32_t> label_d(slots), label_p(slots), expanding_d(slots), expanding_p(slots);
    for (int step = 0; step < 10; ++step) {
      for (float& x : logp) x = std::uniform_real_distribution<float>(-4.0f, 0.0f)(rng);
      const AesFrame frame{logp.data(), kVocab + 1, kBlank, nullptr};
      draw_proposals(rng, proposals, C, false);
      const BeamHypsRef d = definition.ref();
      const BeamHypsRef p = phases.ref();
      for (std::int64_t b = 0; b < batch; ++b) {
        definition_aes_expand(d, b, C, frame, proposals.data(), expanding_d.data(), from_d.data(), label_d.data());
      }
      aes_expand_phases(rule, p, C, 0.0f, frame, proposals.data(), expanding_p.data(), from_p.data(), label_p.data(),
                        /*propose=*/false, ShuffledVisits{&rng, batch, K}, ShuffledVisits{&rng, batch, K * C}, [] {});
      ASSERT_EQ(from_p, from_d) << "step " << step;
      ASSERT_EQ(label_p, label_d) << "step " << step;
      ASSERT_EQ(expanding_p, expanding_d) << "step " << step;
      expect_same_beams(d, p);
      if (::testing::Test::HasFatalFailure()) return;
    }
  }
}

// --- The per-row top K: several threads' lists merged, as block_topk_merge merges them on a GPU ---

// block_topk_merge's rule on the host: k rounds, each taking the first head (beam_before) of the lists.
std::int32_t merge_heads(const std::vector<std::vector<float>>& scores,
                         const std::vector<std::vector<std::int32_t>>& ids, std::int32_t k, float* out_scores,
                         std::int32_t* out_ids) {
  std::vector<std::size_t> head(scores.size(), 0);
  std::int32_t kept = 0;
  for (; kept < k; ++kept) {
    std::size_t pick = scores.size();
    for (std::size_t t = 0; t < scores.size(); ++t) {
      if (head[t] == scores[t].size()) continue;
      if (pick == scores.size() ||
          beam_before(scores[t][head[t]], ids[t][head[t]], scores[pick][head[pick]], ids[pick][head[pick]])) {
        pick = t;
      }
    }
    if (pick == scores.size()) break;
    out_scores[kept] = scores[pick][head[pick]];
    out_ids[kept] = ids[pick][head[pick]];
    ++head[pick];
  }
  return kept;
}

// A NaN candidate score (inputs whose checks the caller turned off) must not break the lists' order: topk_insert
// takes it as -inf, so each thread's list stays sorted, their merge keeps what one list over every candidate keeps,
// and both equal the lists of the same candidates with -inf in its place. Mutation: without the NaN rule, the merged
// and the single lists differ within a few trials.
TEST(BeamSelection, TopkListsTakeNanAsMinusInfinityAndMergeAsOneList) {
  const std::uint64_t seed = testing::test_seed();
  SCOPED_TRACE(testing::seed_message(seed));
  std::mt19937_64 rng(seed);
  const float nan = std::numeric_limits<float>::quiet_NaN();
  std::int64_t nans_kept = 0;
  for (int trial = 0; trial < 3000; ++trial) {
    SCOPED_TRACE("trial " + std::to_string(trial));
    const std::int32_t k = std::uniform_int_distribution<std::int32_t>(1, trial % 40 == 0 ? kMaxBeam : 8)(rng);
    const std::int32_t n = std::uniform_int_distribution<std::int32_t>(0, 60)(rng);
    const std::int32_t threads = std::uniform_int_distribution<std::int32_t>(1, 9)(rng);
    std::vector<float> candidate(static_cast<std::size_t>(n));
    for (float& score : candidate) score = std::uniform_int_distribution<int>(0, 4)(rng) == 0 ? nan : draw_score(rng);

    float one[kMaxBeam], as_dead[kMaxBeam];
    std::int32_t one_ids[kMaxBeam], as_dead_ids[kMaxBeam];
    std::int32_t one_count = 0, as_dead_count = 0;
    std::vector<std::vector<float>> mine(static_cast<std::size_t>(threads));
    std::vector<std::vector<std::int32_t>> mine_ids(static_cast<std::size_t>(threads));
    for (std::int32_t t = 0; t < threads; ++t) {  // thread t's share: candidates t, t + threads, ...
      float scores[kMaxBeam];
      std::int32_t ids[kMaxBeam];
      std::int32_t count = 0;
      for (std::int32_t i = t; i < n; i += threads) topk_insert(scores, ids, k, count, candidate[i], i);
      for (std::int32_t j = 1; j < count; ++j) {
        ASSERT_TRUE(beam_before(scores[j - 1], ids[j - 1], scores[j], ids[j])) << "thread " << t << ", entry " << j;
      }
      mine[static_cast<std::size_t>(t)].assign(scores, scores + count);
      mine_ids[static_cast<std::size_t>(t)].assign(ids, ids + count);
    }
    for (std::int32_t i = 0; i < n; ++i) {
      topk_insert(one, one_ids, k, one_count, candidate[i], i);
      topk_insert(as_dead, as_dead_ids, k, as_dead_count, std::isnan(candidate[i]) ? kDead : candidate[i], i);
    }
    float merged[kMaxBeam];
    std::int32_t merged_ids[kMaxBeam];
    const std::int32_t merged_count = merge_heads(mine, mine_ids, k, merged, merged_ids);
    ASSERT_EQ(one_count, std::min(n, k));
    ASSERT_EQ(as_dead_count, one_count);
    ASSERT_EQ(merged_count, one_count);
    for (std::int32_t j = 0; j < one_count; ++j) {
      ASSERT_EQ(one_ids[j], as_dead_ids[j]) << "entry " << j;
      ASSERT_EQ(merged_ids[j], one_ids[j]) << "entry " << j;
      ASSERT_FALSE(std::isnan(one[j])) << "entry " << j;
      nans_kept += std::isnan(candidate[one_ids[j]]) ? 1 : 0;
    }
  }
  EXPECT_GT(nans_kept, 100) << "too few NaN candidates among the kept to test their rule";
}

}  // namespace
}  // namespace asrdec::detail
