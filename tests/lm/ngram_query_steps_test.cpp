// The steps the CUDA query kernel (lm/ngram_advance.cuh) builds a full-vocabulary row from: the backoff chain, each
// level's searches run independently (a thread each on the device), <unk> from the levels' arcs. Run here in the
// kernel's order on random LMs and on the fixture ARPA files, and compared bit for bit with the definitions
// (score_label, and the CPU's row, advance_row).
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
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

constexpr int kChainCapacity = 32;  // the kernel's kNgramMaxChain

bool same_bits(float a, float b) { return std::memcmp(&a, &b, sizeof a) == 0; }

// The kernel's row of `state` for the tokens of [lo, lo + slice), its steps in its order (levels' searches first,
// then the scatters from the shortest context, then <unk>); false if the chain is longer than the kernel takes.
bool kernel_slice(const NgramLmRef& lm, std::int32_t state, std::int32_t lo, std::int32_t slice, float* scores,
                  std::int32_t* next) {
  std::int32_t chain[kChainCapacity];
  float backoff[kChainCapacity];
  std::int32_t first[kChainCapacity], last[kChainCapacity], unk_arc[kChainCapacity];
  const int length = detail::backoff_chain(lm, state, chain, backoff, kChainCapacity);
  if (length < 0) return false;
  const std::int32_t hi = std::min(lm.vocab_size, lo + slice);
  for (int level = length - 1; level >= 0; --level) {  // any order: the searches are independent
    const std::int32_t begin = lm.arc_begin[chain[level]];
    const std::int32_t end = lm.arc_begin[chain[level] + 1];
    first[level] = detail::lower_bound_arc(lm, begin, end, lo);
    last[level] = detail::lower_bound_arc(lm, begin, end, hi);
    unk_arc[level] = detail::find_arc(lm, begin, end, lm.vocab_size);
  }
  for (int level = length - 1; level >= 0; --level) {
    for (std::int32_t a = first[level]; a < last[level]; ++a) {
      scores[lm.arc_label[a]] = lm.arc_weight[a] + backoff[level];
      next[lm.arc_label[a]] = lm.arc_target[a];
    }
  }
  NgramStep unk = detail::score_from_levels(lm, backoff, unk_arc, chain, length);
  unk.score += lm.missing_offset;
  for (std::int32_t v = lo; v < hi; ++v) {
    if (lm.missing[v]) {
      scores[v] = unk.score;
      next[v] = unk.next;
    }
  }
  return true;
}

// Every state of `lm`: <unk> and every label from the levels equal score_label, and the kernel's row in random
// slices equals advance_row. Returns the rows compared.
std::int64_t check_every_state(const NgramLm& lm, std::mt19937_64& rng) {
  const NgramLmRef ref = lm.ref();
  const std::int32_t V = ref.vocab_size;
  std::vector<float> want_scores(static_cast<std::size_t>(V)), got_scores(static_cast<std::size_t>(V));
  std::vector<std::int32_t> want_next(static_cast<std::size_t>(V)), got_next(static_cast<std::size_t>(V));
  std::int64_t rows = 0;
  for (std::int32_t state = 0; state < ref.states; ++state) {
    SCOPED_TRACE("state " + std::to_string(state));
    std::int32_t chain[kChainCapacity];
    float backoff[kChainCapacity];
    std::int32_t arcs[kChainCapacity];
    const int length = detail::backoff_chain(ref, state, chain, backoff, kChainCapacity);
    if (length < 0) continue;
    EXPECT_EQ(chain[0], state);
    EXPECT_LT(ref.backoff_to[chain[length - 1]], 0) << "the chain ends at a root";
    for (std::int32_t label = 0; label <= V; ++label) {
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
    std::fill(got_next.begin(), got_next.end(), -7);
    const std::int32_t slice = std::uniform_int_distribution<std::int32_t>(1, V)(rng);
    for (std::int32_t lo = 0; lo < V; lo += slice) {
      EXPECT_TRUE(kernel_slice(ref, state, lo, slice, got_scores.data(), got_next.data()));
    }
    for (std::int32_t v = 0; v < V; ++v) {
      const auto i = static_cast<std::size_t>(v);
      if (!same_bits(got_scores[i], want_scores[i]) || got_next[i] != want_next[i]) {
        ADD_FAILURE() << "token " << v << " (slices of " << slice << "): " << got_scores[i] << " -> " << got_next[i]
                      << ", advance_row says " << want_scores[i] << " -> " << want_next[i];
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
    rows += check_every_state(*lm, rng);
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
    EXPECT_GT(check_every_state(lm, rng), 0);
  }
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
