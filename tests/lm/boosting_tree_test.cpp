// BoostingTree: hand-computed scores for the documented rules, a brute-force oracle on random phrase lists (it
// works on the matched token strings themselves: no trie, no fail links, no tables), full-vocabulary queries
// against single-token ones, CUDA equal to the CPU bit for bit, and bad input.

#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <random>
#include <set>

#include "asrdec/asrdec.hpp"
#include "support/test_support.hpp"

namespace asrdec {
namespace {

using Tokens = std::vector<std::int32_t>;

// Sum of the tree's scores along `tokens` from `state`.
double walk(const BoostingTree& tree, std::int32_t state, const Tokens& tokens) {
  double total = 0.0;
  for (std::int32_t token : tokens) {
    const auto [score, next] = tree.score(state, token);
    total += score;
    state = next;
  }
  return total;
}

TEST(BoostingTree, HandComputedScores) {
  // One phrase "3 4 5": node scores 1, 1 + (2 + ln 2), 1 + (2 + ln 2) + (2 + ln 3) with the defaults.
  const BoostingTree tree = BoostingTree::build({{{3, 4, 5}}}, 10);
  const double full = 5.0 + std::log(6.0);
  EXPECT_NEAR(walk(tree, tree.root_state(0), {3}), 1.0, 1e-6);
  EXPECT_NEAR(walk(tree, tree.root_state(0), {3, 4}), 3.0 + std::log(2.0), 1e-6);
  EXPECT_NEAR(walk(tree, tree.root_state(0), {7, 3, 4, 5, 8}), full, 1e-5);  // the bonus is kept after the end
  EXPECT_NEAR(walk(tree, tree.root_state(0), {3, 4, 8}), 0.0, 1e-6);         // a broken match gives it back
  EXPECT_NEAR(walk(tree, tree.root_state(0), {3, 4, 5, 3, 4, 5}), 2 * full, 1e-5);
  EXPECT_NEAR(walk(tree, tree.root_state(0), {3, 3, 4}), 3.0 + std::log(2.0), 1e-6);  // restarts on the second 3
  EXPECT_EQ(tree.final_score(tree.root_state(0)), 0.0f);

  // Uniform weights: every token 1; the end keeps the fail penalty, its arc carries +node_score instead.
  BoostingTreeOptions uniform;
  uniform.uniform_weights = true;
  uniform.unk_score = -0.5f;
  const BoostingTree flat = BoostingTree::build({{{3, 4, 5}, {6}}}, 10, uniform);
  EXPECT_NEAR(walk(flat, flat.root_state(0), {3, 4, 5}), 6.0, 1e-6);     // 1 + 1 + (1 + 3)
  EXPECT_NEAR(walk(flat, flat.root_state(0), {3, 4, 5, 8}), 2.5, 1e-6);  // -3 backing off, -0.5 for 8
  EXPECT_NEAR(walk(flat, flat.root_state(0), {6, 8}), 0.5, 1e-6);        // a first-level end keeps its bonus
  EXPECT_NEAR(walk(flat, flat.root_state(0), {8, 8}), -1.0, 1e-6);       // unk_score on the root
}

TEST(BoostingTree, PerUtteranceListsAreSeparate) {
  const BoostingTree tree = BoostingTree::build({{{1, 2}}, {}, {{2, 1}, {1}}}, 4);
  EXPECT_EQ(tree.num_lists(), 3);
  EXPECT_EQ(tree.num_phrases(), 3);
  EXPECT_NEAR(walk(tree, tree.root_for(0, 3), {1, 2}), 3.0 + std::log(2.0), 1e-6);
  EXPECT_NEAR(walk(tree, tree.root_for(1, 3), {1, 2}), 0.0, 1e-6);  // an empty list boosts nothing
  EXPECT_NEAR(walk(tree, tree.root_for(2, 3), {1, 2}), 2.0, 1e-6);  // "1" ends a phrase, "2" starts "2 1"
  ASRDEC_EXPECT_THROW_MSG(tree.root_for(0, 2), InvalidArgument,
                          "the boosting tree has 3 phrase lists but the batch has 2 utterances");
  const BoostingTree shared = BoostingTree::build({{{1, 2}}}, 4);
  EXPECT_EQ(shared.root_for(5, 9), shared.root_state(0));
}

// The rules of boosting_tree.hpp, applied to token strings: a state is the matched string (the longest suffix of
// the history that is a prefix of some phrase); its potential follows from its length alone.
class NaiveBoosting {
 public:
  NaiveBoosting(const PhraseList& phrases, const BoostingTreeOptions& options) : options_(options) {
    for (const Tokens& phrase : phrases) {
      ends_.insert(phrase);
      for (std::size_t n = 1; n <= phrase.size(); ++n) prefixes_.insert(Tokens(phrase.begin(), phrase.begin() + n));
    }
  }

  double potential(const Tokens& s) const {
    double total = 0.0;
    for (std::size_t i = 0; i < s.size(); ++i) {
      total += i > 0 && !options_.uniform_weights
                   ? static_cast<double>(options_.context_score) * options_.depth_scaling + std::log(i + 1.0)
                   : static_cast<double>(options_.context_score);
    }
    return total;
  }

  Tokens fail(const Tokens& s) const {
    for (std::size_t drop = 1; drop < s.size(); ++drop) {
      Tokens suffix(s.begin() + static_cast<std::ptrdiff_t>(drop), s.end());
      if (prefixes_.count(suffix)) return suffix;
    }
    return {};
  }

  // Score of `token` from matched string `s`; `s` becomes the new matched string.
  double step(Tokens& s, std::int32_t token) const {
    double backoff = 0.0;
    for (;;) {
      Tokens longer = s;
      longer.push_back(token);
      if (prefixes_.count(longer)) {
        double arc = potential(longer) - potential(s);
        if (options_.uniform_weights && ends_.count(longer) && longer.size() > 1) arc += potential(longer);
        s = longer;
        return backoff + arc;
      }
      if (s.empty()) return backoff + options_.unk_score;
      const bool keep = ends_.count(s) && (!options_.uniform_weights || s.size() == 1);
      const Tokens f = fail(s);
      backoff += keep ? 0.0 : potential(f) - potential(s);
      s = f;
    }
  }

 private:
  BoostingTreeOptions options_;
  std::set<Tokens> prefixes_, ends_;
};

PhraseList random_phrases(std::mt19937_64& rng, std::int32_t vocab) {
  PhraseList phrases(std::uniform_int_distribution<int>(0, 8)(rng));
  // A small alphabet makes shared prefixes, nested phrases and long fail chains common.
  const std::int32_t alphabet = std::min<std::int32_t>(vocab, std::uniform_int_distribution<std::int32_t>(2, 5)(rng));
  for (Tokens& phrase : phrases) {
    phrase.resize(std::uniform_int_distribution<std::size_t>(1, 6)(rng));
    for (auto& token : phrase) token = std::uniform_int_distribution<std::int32_t>(0, alphabet - 1)(rng);
  }
  return phrases;
}

BoostingTreeOptions random_options(std::mt19937_64& rng) {
  BoostingTreeOptions options;
  options.context_score = std::uniform_real_distribution<float>(0.1f, 3.0f)(rng);
  options.depth_scaling = std::uniform_real_distribution<float>(1.0f, 3.0f)(rng);
  options.unk_score = rng() % 2 ? 0.0f : -0.25f;
  options.uniform_weights = rng() % 3 == 0;
  return options;
}

TEST(BoostingTree, RandomWalksEqualTheNaiveRules) {
  const std::uint64_t seed = testing::test_seed();
  SCOPED_TRACE(testing::seed_message(seed));
  std::mt19937_64 rng(seed);
  std::int64_t steps = 0;
  for (int i = 0; i < 60; ++i) {
    const std::int32_t vocab = std::uniform_int_distribution<std::int32_t>(2, 12)(rng);
    const BoostingTreeOptions options = random_options(rng);
    std::vector<PhraseList> lists(std::uniform_int_distribution<int>(1, 3)(rng));
    for (auto& list : lists) list = random_phrases(rng, vocab);
    const BoostingTree tree = BoostingTree::build(lists, vocab, options);
    SCOPED_TRACE("case " + std::to_string(i) + ": " + tree.describe());
    for (std::size_t u = 0; u < lists.size(); ++u) {
      const NaiveBoosting naive(lists[u], options);
      Tokens matched;
      std::int32_t state = tree.root_state(static_cast<std::int64_t>(u));
      for (int k = 0; k < 400; ++k, ++steps) {
        // Mostly tokens of the phrases' small alphabet, so that matches happen.
        const std::int32_t high = rng() % 4 ? std::min<std::int32_t>(vocab - 1, 4) : vocab - 1;
        const std::int32_t token = std::uniform_int_distribution<std::int32_t>(0, high)(rng);
        const double want = naive.step(matched, token);
        const auto [got, next] = tree.score(state, token);
        ASSERT_NEAR(got, want, 1e-5 * std::max(1.0, std::fabs(want))) << "list " << u << " step " << k;
        state = next;
      }
    }
  }
  EXPECT_GE(steps, 10000);
}

// The full-vocabulary query of every state equals the single-token query of every token.
TEST(BoostingTree, FullVocabularyQueriesEqualSingleTokenOnes) {
  const std::uint64_t seed = testing::test_seed();
  SCOPED_TRACE(testing::seed_message(seed));
  std::mt19937_64 rng(seed);
  for (int i = 0; i < 20; ++i) {
    const std::int32_t vocab = std::uniform_int_distribution<std::int32_t>(2, 40)(rng);
    const BoostingTree tree =
        BoostingTree::build({random_phrases(rng, vocab), random_phrases(rng, vocab)}, vocab, random_options(rng));
    std::vector<std::int32_t> states(static_cast<std::size_t>(tree.num_states()));
    for (std::size_t s = 0; s < states.size(); ++s) states[s] = static_cast<std::int32_t>(s);
    std::vector<float> scores(states.size() * static_cast<std::size_t>(vocab));
    std::vector<std::int32_t> next(scores.size());
    tree.advance(states.data(), static_cast<std::int64_t>(states.size()), scores.data(), next.data());
    for (std::size_t s = 0; s < states.size(); ++s) {
      for (std::int32_t v = 0; v < vocab; ++v) {
        const auto [score, to] = tree.score(states[s], v);
        ASSERT_EQ(scores[s * vocab + v], score) << "state " << s << " token " << v;
        ASSERT_EQ(next[s * vocab + v], to) << "state " << s << " token " << v;
      }
    }
  }
}

TEST(BoostingTree, CudaEqualsCpuBitForBit) {
  ASRDEC_SKIP_WITHOUT_CUDA();
  const std::uint64_t seed = testing::test_seed();
  SCOPED_TRACE(testing::seed_message(seed));
  std::mt19937_64 rng(seed);
  for (int i = 0; i < 10; ++i) {
    const std::int32_t vocab = std::uniform_int_distribution<std::int32_t>(2, 1100)(rng);
    std::vector<PhraseList> lists(3);
    for (auto& list : lists) list = random_phrases(rng, vocab);
    lists[1].push_back(Tokens(40, 1));  // a fail chain longer than the kernel's chain buffer
    const BoostingTreeOptions options = random_options(rng);
    const BoostingTree cpu = BoostingTree::build(lists, vocab, options);
    const BoostingTree cuda = BoostingTree::build(lists, vocab, options, Device::cuda(0));
    const auto S = static_cast<std::size_t>(cpu.num_states());
    std::vector<std::int32_t> states(S);
    for (std::size_t s = 0; s < S; ++s) states[s] = static_cast<std::int32_t>(s);
    std::vector<float> want(S * vocab), got(S * vocab);
    std::vector<std::int32_t> want_next(S * vocab), got_next(S * vocab);
    cpu.advance(states.data(), static_cast<std::int64_t>(S), want.data(), want_next.data());
    DeviceBuffer<std::int32_t> d_states(S, Device::cuda(0));
    DeviceBuffer<float> d_scores(S * vocab, Device::cuda(0));
    DeviceBuffer<std::int32_t> d_next(S * vocab, Device::cuda(0));
    Stream stream(Device::cuda(0));
    copy_bytes_async(d_states.data(), Device::cuda(0), states.data(), Device::cpu(), S * 4, stream.handle());
    cuda.advance(d_states.data(), static_cast<std::int64_t>(S), d_scores.data(), d_next.data(), stream.handle());
    copy_bytes_async(got.data(), Device::cpu(), d_scores.data(), Device::cuda(0), got.size() * 4, stream.handle());
    copy_bytes_async(got_next.data(), Device::cpu(), d_next.data(), Device::cuda(0), got.size() * 4, stream.handle());
    stream.synchronize();
    ASSERT_EQ(got, want) << "case " << i;
    ASSERT_EQ(got_next, want_next) << "case " << i;
  }
}

TEST(BoostingTree, BadInputIsRejected) {
  ASRDEC_EXPECT_THROW_MSG(BoostingTree::build({}, 4), InvalidArgument, "at least one phrase list");
  ASRDEC_EXPECT_THROW_MSG(BoostingTree::build({{{1}}, {{2}, {}}}, 4), InvalidArgument,
                          "phrase 1 of phrase list 1 is empty");
  ASRDEC_EXPECT_THROW_MSG(BoostingTree::build({{{1, 4}}}, 4), InvalidArgument,
                          "phrase 0 of phrase list 0 has token 4 outside the vocabulary [0, 4)");
  ASRDEC_EXPECT_THROW_MSG(BoostingTree::build({{{-1}}}, 4), InvalidArgument, "has token -1 outside the vocabulary");
  ASRDEC_EXPECT_THROW_MSG(BoostingTree::build({{{1}}}, 0), InvalidArgument, "vocabulary size 0 out of range");
  BoostingTreeOptions options;
  options.context_score = 0.0f;
  ASRDEC_EXPECT_THROW_MSG(BoostingTree::build({{{1}}}, 4, options), InvalidArgument,
                          "context_score must be positive and finite, got 0");
  options = {};
  options.depth_scaling = 0.5f;
  ASRDEC_EXPECT_THROW_MSG(BoostingTree::build({{{1}}}, 4, options), InvalidArgument,
                          "depth_scaling must be at least 1, got 0.5");
  options = {};
  options.unk_score = std::nanf("");
  ASRDEC_EXPECT_THROW_MSG(BoostingTree::build({{{1}}}, 4, options), InvalidArgument, "unk_score must be finite");
  const BoostingTree tree = BoostingTree::build({{{1}}}, 4);
  ASRDEC_EXPECT_THROW_MSG(tree.score(99, 0), InvalidArgument, "state 99 out of range");
  ASRDEC_EXPECT_THROW_MSG(tree.score(0, 4), InvalidArgument, "token 4 outside");
  ASRDEC_EXPECT_THROW_MSG(tree.root_state(1), InvalidArgument, "phrase list 1 out of range [0, 1)");
}

}  // namespace
}  // namespace asrdec
