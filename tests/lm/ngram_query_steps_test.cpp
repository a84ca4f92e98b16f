// The steps the CUDA query kernel (lm/ngram_advance.cuh) builds a full-vocabulary row from: the backoff chain, each
// level's searches run independently (a thread each on the device), <unk> from the levels' arcs. Run here in the
// kernel's order on random LMs and on the fixture ARPA files, and compared bit for bit with the definitions
// (score_label, and the CPU's row, advance_row).
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include "lm/ngram_lm_impl.hpp"
#include "lm/ngram_step.hpp"
#include "lm/random_fusion.hpp"
#include "support/test_support.hpp"

namespace asrdec {
namespace {

using detail::NgramStep;

constexpr int kChainCapacity = detail::kNgramMaxChain;

bool same_bits(float a, float b) { return std::memcmp(&a, &b, sizeof a) == 0; }

// The kernel's row of `state` for the tokens of [lo, lo + slice): ngram_slice_query, the kernel's own steps, with
// `threads` simulated threads run one after another in a new random order at every step (a step whose threads
// depended on each other would show it).
void kernel_slice(const NgramLmRef& lm, std::int32_t state, std::int32_t lo, std::int32_t slice, int threads,
                  std::mt19937_64& rng, float* scores, std::int32_t* next) {
  detail::NgramSliceQuery query{};
  std::vector<int> order(static_cast<std::size_t>(threads));
  std::iota(order.begin(), order.end(), 0);
  const auto each_thread = [&](const auto& f) {
    std::shuffle(order.begin(), order.end(), rng);
    for (int t : order) f(t);
  };
  detail::ngram_slice_query(lm, state, lo, slice, scores, next, query, threads, each_thread, [] {});
}

// Every state of `lm`: <unk> and every label from the levels equal score_label, and the kernel's row in random
// slices equals advance_row. Returns the rows compared.
std::int64_t check_every_state(const NgramLmRef& ref, std::mt19937_64& rng) {
  const std::int32_t V = ref.vocab_size;
  // The kernel's row has guard cells after its V tokens: a write past the row (the next row's tokens on the device)
  // must show as a failure, not as memory corruption.
  constexpr std::size_t kGuard = 8;
  constexpr std::int32_t kGuardValue = -77;
  std::vector<float> want_scores(static_cast<std::size_t>(V)), got_scores(static_cast<std::size_t>(V) + kGuard);
  std::vector<std::int32_t> want_next(static_cast<std::size_t>(V)), got_next(static_cast<std::size_t>(V) + kGuard);
  std::int64_t rows = 0;
  for (std::int32_t state = 0; state < ref.states; ++state) {
    SCOPED_TRACE("state " + std::to_string(state));
    std::int32_t chain[kChainCapacity];
    float backoff[kChainCapacity];
    std::int32_t arcs[kChainCapacity];
    const int length = detail::backoff_chain(ref, state, chain, backoff, kChainCapacity);
    if (length > 0) {
      EXPECT_EQ(chain[0], state);
      EXPECT_LT(ref.backoff_to[chain[length - 1]], 0) << "the chain ends at a root";
    }
    for (std::int32_t label = 0; label <= V && length > 0; ++label) {
      for (int level = 0; level < length; ++level) {
        arcs[level] = detail::find_arc(ref, ref.arc_begin[chain[level]], ref.arc_begin[chain[level] + 1], label);
      }
      const NgramStep got = detail::score_from_levels(ref, backoff, arcs, chain, length);
      const NgramStep want = detail::score_label(ref, state, label);
      if (!same_bits(got.score, want.score) || got.next != want.next) {
        ADD_FAILURE() << "label " << label << ": " << got.score << " -> " << got.next << ", score_label says "
                      << want.score << " -> " << want.next;
        return rows;
      }
    }
    detail::advance_row(ref, state, want_scores.data(), want_next.data());
    std::fill(got_next.begin(), got_next.end(), kGuardValue);
    const std::int32_t slice = std::uniform_int_distribution<std::int32_t>(1, V)(rng);
    const int threads = std::uniform_int_distribution<int>(1, 300)(rng);
    for (std::int32_t lo = 0; lo < V; lo += slice) {
      kernel_slice(ref, state, lo, slice, threads, rng, got_scores.data(), got_next.data());
    }
    for (std::size_t i = static_cast<std::size_t>(V); i < got_next.size(); ++i) {
      if (got_next[i] != kGuardValue) {
        ADD_FAILURE() << "the query wrote past its row of " << V << " tokens (slices of " << slice << ")";
        return rows;
      }
    }
    for (std::int32_t v = 0; v < V; ++v) {
      const auto i = static_cast<std::size_t>(v);
      if (!same_bits(got_scores[i], want_scores[i]) || got_next[i] != want_next[i]) {
        ADD_FAILURE() << "token " << v << " (slices of " << slice << ", " << threads << " threads): " << got_scores[i]
                      << " -> " << got_next[i] << ", advance_row says " << want_scores[i] << " -> " << want_next[i];
        return rows;
      }
    }
    ++rows;
  }
  return rows;
}

TEST(NgramQuerySteps, LevelsSearchedApartGiveTheDefinitionsBitsOnRandomLms) {
  const std::uint64_t seed = testing::test_seed();
  SCOPED_TRACE(testing::seed_message(seed));
  std::mt19937_64 rng(seed);
  std::int64_t rows = 0;
  for (int i = 0; i < 40; ++i) {
    const std::int64_t vocab = std::uniform_int_distribution<std::int64_t>(1, 60)(rng);
    std::shared_ptr<const NgramLm> cpu;
    const std::shared_ptr<const NgramLm> lm = testing::random_lm(rng, vocab, Device::cpu(), cpu);
    SCOPED_TRACE("lm " + std::to_string(i) + ": " + lm->describe());
    rows += check_every_state(lm->ref(), rng);
    if (::testing::Test::HasFailure()) return;
  }
  EXPECT_GT(rows, 400);
  std::printf("%lld rows equal the definitions\n", static_cast<long long>(rows));
}

TEST(NgramQuerySteps, LevelsSearchedApartGiveTheDefinitionsBitsOnTheFixtures) {
  const std::uint64_t seed = testing::test_seed();
  SCOPED_TRACE(testing::seed_message(seed));
  std::mt19937_64 rng(seed);
  for (const char* file : {"tokens_3gram.arpa", "tokens_3gram_no_unk.arpa", "tokens_4gram.arpa", "tokens_1gram.arpa"}) {
    SCOPED_TRACE(file);
    NgramLmOptions options;
    options.vocab_size = std::string(file) == "tokens_1gram.arpa" ? 5 : 8;
    const NgramLm lm = NgramLm::load(testing::source_path(std::string("tests/data/arpa/") + file), options);
    EXPECT_GT(check_every_state(lm.ref(), rng), 0);
  }
}

TEST(NgramQuerySteps, BoostingTreesAndChainsBeyondTheKernelsDepthGiveTheDefinitionsBits) {
  const std::uint64_t seed = testing::test_seed();
  SCOPED_TRACE(testing::seed_message(seed));
  std::mt19937_64 rng(seed);
  std::int64_t rows = 0;
  for (int i = 0; i < 30; ++i) {
    const std::int64_t vocab = std::uniform_int_distribution<std::int64_t>(2, 40)(rng);
    std::vector<Hypothesis> plain(3);
    for (Hypothesis& h : plain) {
      for (int n = static_cast<int>(rng() % 12); n > 0; --n) {
        h.tokens.push_back(static_cast<std::int32_t>(rng() % static_cast<std::uint64_t>(vocab)));
      }
    }
    std::shared_ptr<const BoostingTree> cpu;
    const std::shared_ptr<const BoostingTree> tree = testing::random_boost(rng, vocab, plain, Device::cpu(), cpu);
    SCOPED_TRACE("tree " + std::to_string(i) + " over " + std::to_string(vocab) + " tokens");
    rows += check_every_state(tree->ref(), rng);
    if (::testing::Test::HasFailure()) return;
  }
  EXPECT_GT(rows, 100);
  // A phrase of 40 equal tokens: its deep states back off one token at a time, chains of up to 41 states, which the
  // kernel queries token by token.
  const BoostingTree deep = BoostingTree::build({PhraseList{std::vector<std::int32_t>(40, 2)}}, 5);
  std::int32_t chain[64];
  float backoff[64];
  int longest = 0;
  for (std::int32_t state = 0; state < deep.ref().states; ++state) {
    longest = std::max(longest, detail::backoff_chain(deep.ref(), state, chain, backoff, 64));
  }
  EXPECT_GT(longest, kChainCapacity) << "no chain deeper than the kernel's: the per-token path goes untested";
  EXPECT_GT(check_every_state(deep.ref(), rng), 0);
}

// A mutation the comparison must catch: <unk> from the shortest context that lists it instead of the longest.
TEST(NgramQuerySteps, TheComparisonCatchesAWrongLevelOrder) {
  const NgramLm lm = NgramLm::load(testing::source_path("tests/data/arpa/tokens_4gram.arpa"), [] {
    NgramLmOptions options;
    options.vocab_size = 8;
    return options;
  }());
  const NgramLmRef ref = lm.ref();
  std::int64_t differ = 0;
  for (std::int32_t state = 0; state < ref.states; ++state) {
    std::int32_t chain[kChainCapacity];
    float backoff[kChainCapacity];
    std::int32_t arcs[kChainCapacity], reversed[kChainCapacity];
    const int length = detail::backoff_chain(ref, state, chain, backoff, kChainCapacity);
    for (std::int32_t label = 0; label < ref.vocab_size; ++label) {
      for (int level = 0; level < length; ++level) {
        arcs[level] = detail::find_arc(ref, ref.arc_begin[chain[level]], ref.arc_begin[chain[level] + 1], label);
      }
      // The levels in reverse with their backoffs: the shortest listing context wins.
      std::int32_t reversed_chain[kChainCapacity];
      float reversed_backoff[kChainCapacity];
      for (int level = 0; level < length; ++level) {
        reversed[level] = arcs[length - 1 - level];
        reversed_chain[level] = chain[length - 1 - level];
        reversed_backoff[level] = backoff[length - 1 - level];
      }
      const NgramStep wrong = detail::score_from_levels(ref, reversed_backoff, reversed, reversed_chain, length);
      const NgramStep want = detail::score_label(ref, state, label);
      differ += !same_bits(wrong.score, want.score) || wrong.next != want.next ? 1 : 0;
    }
  }
  EXPECT_GT(differ, 0) << "no state of the 4-gram fixture tells the longest context from the shortest";
}

}  // namespace
}  // namespace asrdec
