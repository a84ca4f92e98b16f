// Phrase lists per request (BoostingTree::with_slots, set_list): a slotted tree scores exactly as a tree built from
// the same list; every utterance of a batch, and every stream, boosted by its own list in its slot decodes exactly
// as that utterance alone with a tree of its list, for CTC greedy and beam and transducer greedy and ALSD++, while
// lists are replaced between calls under open streams; misuse and overflow are refused.

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>

#include "asrdec/asrdec.hpp"
#include "lm/random_fusion.hpp"
#include "support/test_support.hpp"
#include "transducer/random_transducer.hpp"

namespace asrdec {
namespace {

// The largest trie one of random_phrases' lists can need (root + 4 phrases of up to 4 tokens).
constexpr std::int64_t kStatesPerList = 17;

// A slotted tree answers every query of slot k as a tree built from slot k's list answers it at its root.
TEST(PhraseSlots, ASlotScoresAsATreeBuiltFromItsList) {
  const std::uint64_t seed = testing::test_seed();
  SCOPED_TRACE(testing::seed_message(seed));
  std::mt19937_64 rng(seed);
  for (int round = 0; round < 20; ++round) {
    const std::int64_t V = 2 + static_cast<std::int64_t>(rng() % 12), slots = 1 + static_cast<std::int64_t>(rng() % 5);
    BoostingTreeOptions options;
    options.context_score = std::uniform_real_distribution<float>(0.5f, 2.0f)(rng);
    options.uniform_weights = rng() % 4 == 0;
    BoostingTree tree = BoostingTree::with_slots(V, BoostingSlots{slots, kStatesPerList, 8}, options);
    std::vector<Hypothesis> sources(3);
    for (auto& h : sources) {
      for (int i = 0; i < 6; ++i) h.tokens.push_back(static_cast<std::int32_t>(rng() % V));
    }
    for (int change = 0; change < 3 * slots; ++change) {  // lists replaced in turn, the others kept
      const auto k = static_cast<std::int64_t>(rng() % slots);
      const PhraseList list = testing::random_phrases(rng, V, sources, -1);
      tree.set_list(k, list);
      const BoostingTree alone = BoostingTree::build({list}, V, options);
      for (int walk = 0; walk < 5; ++walk) {  // random token walks from both roots
        std::int32_t a = tree.root_state(k), b = alone.root_state(0);
        for (int step = 0; step < 8; ++step) {
          for (std::int32_t token = 0; token < V; ++token) {
            ASSERT_EQ(tree.score(a, token).first, alone.score(b, token).first)
                << "round " << round << " slot " << k << " step " << step << " token " << token;
          }
          ASSERT_EQ(tree.final_score(a), alone.final_score(b));
          const auto token = static_cast<std::int32_t>(rng() % V);
          a = tree.score(a, token).second;
          b = alone.score(b, token).second;
          ASSERT_GE(a, tree.root_state(k));  // the walk stays in its slot
          ASSERT_LT(a, k + 1 < slots ? tree.root_state(k + 1) : tree.num_states());
        }
      }
    }
  }
}

// A stream that still holds a state of a list its slot no longer has (which the contract forbids: a list stays while
// its streams are open) continues from the new list's root: every query of such a state answers as the root's, and
// every next state is one of the slot's (was: no way on, next state -1, which the next query indexed with).
TEST(PhraseSlots, AStateOfAReplacedListContinuesFromTheRoot) {
  constexpr std::int64_t V = 6;
  BoostingTree tree = BoostingTree::with_slots(V, BoostingSlots{3, 8, 8});
  tree.set_list(1, {{1, 2, 3, 4, 5}});
  std::int32_t deep = tree.root_state(1);
  for (const std::int32_t token : {1, 2, 3, 4}) deep = tree.score(deep, token).second;
  ASSERT_EQ(deep, tree.root_state(1) + 4);  // the trie's fifth state
  tree.set_list(1, {{2}});                  // two states: the root and "2"; `deep` is past them
  const std::vector<std::int32_t> states = {deep, tree.root_state(1)};
  std::vector<float> scores(2 * V);
  std::vector<std::int32_t> next(2 * V);
  tree.advance(states.data(), 2, scores.data(), next.data());
  for (std::int64_t token = 0; token < V; ++token) {
    const auto stale = static_cast<std::size_t>(token), root = static_cast<std::size_t>(V + token);
    EXPECT_EQ(next[stale], next[root]) << "token " << token;
    EXPECT_EQ(scores[stale], scores[root]) << "token " << token;
    EXPECT_GE(next[stale], tree.root_state(1)) << "token " << token;
    EXPECT_LT(next[stale], tree.root_state(2)) << "token " << token;
    EXPECT_EQ(tree.score(deep, static_cast<std::int32_t>(token)),
              tree.score(tree.root_state(1), static_cast<std::int32_t>(token)));
  }
}

TEST(PhraseSlots, MisuseAndOverflowAreRefused) {
  BoostingTree fixed = BoostingTree::build({{{1, 2}}}, 8);
  ASRDEC_EXPECT_THROW_MSG(fixed.set_list(0, {{1}}), InvalidArgument, "needs a tree made by with_slots");
  EXPECT_EQ(fixed.slots().slots, 0);
  ASRDEC_EXPECT_THROW_MSG(BoostingTree::with_slots(8, BoostingSlots{0, 4, 8}), InvalidArgument,
                          "BoostingSlots.slots = 0 is outside [1, 2^20]");
  ASRDEC_EXPECT_THROW_MSG(BoostingTree::with_slots(8, BoostingSlots{2, 0, 8}), InvalidArgument,
                          "BoostingSlots.states_per_slot = 0");
  ASRDEC_EXPECT_THROW_MSG(BoostingTree::with_slots(1 << 20, BoostingSlots{1 << 12, 1, 8}), InvalidArgument,
                          "need more than 2^31 states or arcs");
  BoostingTree tree = BoostingTree::with_slots(8, BoostingSlots{3, 4, 2});
  EXPECT_EQ(tree.num_lists(), 3);
  ASRDEC_EXPECT_THROW_MSG(tree.set_list(3, {{1}}), InvalidArgument, "slot 3 is outside [0, 3)");
  ASRDEC_EXPECT_THROW_MSG(tree.set_list(1, {{1, 9}}), InvalidArgument, "has token 9 outside the vocabulary [0, 8)");
  ASRDEC_EXPECT_THROW_MSG(tree.set_list(1, {{1, 2, 3}}), InvalidArgument,
                          "phrase 0 of the phrase list for slot 1 has 3 tokens, more than the tree's "
                          "max_phrase_tokens = 2");
  tree.set_list(1, {{1, 2}, {3}});  // root + 3 states: fits 4
  ASRDEC_EXPECT_THROW_MSG(tree.set_list(1, {{1, 2}, {3, 4}}), OutOfMemory,
                          "the phrase list for slot 1 needs 5 boosting-tree states, more than the tree's "
                          "states_per_slot = 4");
  EXPECT_EQ(tree.score(tree.root_state(1), 3).first, 1.0f);  // the refused list left slot 1's list in place
  EXPECT_EQ(tree.num_phrases(), 2);
  ASRDEC_EXPECT_THROW_MSG(tree.check_batch(4), InvalidArgument, "the boosting tree has 3 slots but the batch has 4");
  EXPECT_NO_THROW(tree.check_batch(2));
}

class PhraseSlotsDecoding : public ::testing::TestWithParam<bool> {
 protected:
  void SetUp() override {
    if (GetParam()) {
      ASRDEC_SKIP_WITHOUT_CUDA();
      device_ = Device::cuda(0);
    }
  }
  TensorView place(const std::vector<float>& values, std::int64_t b, std::int64_t t, std::int64_t c,
                   DeviceBuffer<std::byte>& storage) const {
    return testing::f32_on(values, b, t, c, device_, storage);
  }
  // CPU results are exact; CUDA ones may round differently from a batch of one.
  testing::Agreement agreement() const {
    return GetParam() ? testing::cuda_agreement(DType::f32) : testing::Agreement{0.0, false};
  }
  std::int64_t stream_round(std::mt19937_64& rng) const;
  Device device_;
};

// CTC results: the same path, scores equal on the CPU and within `relative` on CUDA (token scores are the inputs).
void expect_same_ctc(const Hypothesis& got, const Hypothesis& want, double relative, const std::string& what) {
  EXPECT_EQ(got.tokens, want.tokens) << what;
  EXPECT_EQ(got.timestamps, want.timestamps) << what;
  EXPECT_EQ(got.token_scores, want.token_scores) << what;
  EXPECT_NEAR(got.score, want.score, relative * std::max(1.0f, std::fabs(want.score))) << what;
  EXPECT_NEAR(got.boost_score, want.boost_score, relative * std::max(1.0f, std::fabs(want.boost_score))) << what;
}

// Random CTC log-probabilities [B, T, V + 1], blank last and favoured.
std::vector<float> random_logprobs(std::mt19937_64& rng, std::int64_t B, std::int64_t T, std::int64_t C) {
  std::normal_distribution<float> normal(0.0f, 1.5f);
  std::vector<float> values(static_cast<std::size_t>(B * T * C));
  for (std::size_t i = 0; i < values.size(); ++i) {
    values[i] = normal(rng) + (static_cast<std::int64_t>(i) % C == C - 1 ? 1.0f : 0.0f);
  }
  return values;
}

// Every utterance of a batch with its own list in its slot decodes as it does alone with a tree of its list.
TEST_P(PhraseSlotsDecoding, EveryUtteranceOfABatchHasItsOwnList) {
  const std::uint64_t seed = testing::test_seed();
  SCOPED_TRACE(testing::seed_message(seed));
  std::mt19937_64 rng(seed);
  const std::int64_t V = 10, C = V + 1, slots = 6;
  auto tree =
      std::make_shared<BoostingTree>(BoostingTree::with_slots(V, BoostingSlots{slots, kStatesPerList, 8}, {}, device_));
  CtcGreedyConfig greedy;
  greedy.boost = tree;
  greedy.boost_weight = 2.0f;
  CtcGreedyDecoder decoder(device_, greedy, BatchLimits{slots, 30});  // one decoder (and graph) for every call
  CtcBeamConfig beam;
  beam.beam = 3;
  beam.boost = tree;
  beam.boost_weight = 2.0f;
  CtcBeamDecoder beam_decoder(device_, beam, BatchLimits{slots, 30});
  std::int64_t utterances = 0, boosted = 0;
  for (int call = 0; call < 30; ++call) {
    const std::int64_t B = 1 + static_cast<std::int64_t>(rng() % slots), T = static_cast<std::int64_t>(rng() % 30);
    const std::vector<float> values = random_logprobs(rng, B, T, C);
    std::vector<std::int32_t> lengths(static_cast<std::size_t>(B));
    for (auto& n : lengths) n = static_cast<std::int32_t>(rng() % (T + 1));
    DeviceBuffer<std::byte> storage;
    const TensorView x = place(values, B, T, C, storage);
    const TensorView lens(lengths.data(), DType::i32, {B});
    const std::vector<Hypothesis> plain = CtcGreedyDecoder(device_).decode(x, lens);
    std::vector<PhraseList> lists;
    for (std::int64_t b = 0; b < B; ++b) {
      lists.push_back(testing::random_phrases(rng, V, plain, b));
      tree->set_list(b, lists.back());  // between calls: no new decoder, no new graph
    }
    const std::vector<Hypothesis> got = decoder.decode(x, lens);
    const std::vector<Hypothesis> got_beam = beam_decoder.decode(x, lens);
    for (std::int64_t b = 0; b < B; ++b) {
      SCOPED_TRACE("call " + std::to_string(call) + ", utterance " + std::to_string(b));
      CtcGreedyConfig alone = greedy;
      alone.boost = std::make_shared<const BoostingTree>(BoostingTree::build({lists[b]}, V, {}, device_));
      DeviceBuffer<std::byte> one_storage;
      const std::vector<float> one(values.begin() + b * T * C, values.begin() + (b + 1) * T * C);
      const TensorView one_x = place(one, 1, T, C, one_storage);
      const TensorView one_len(&lengths[static_cast<std::size_t>(b)], DType::i32, {1});
      expect_same_ctc(got[b], CtcGreedyDecoder(device_, alone).decode(one_x, one_len).at(0), agreement().relative,
                      "ctc greedy");
      CtcBeamConfig beam_alone = beam;
      beam_alone.boost = alone.boost;
      expect_same_ctc(got_beam[b], CtcBeamDecoder(device_, beam_alone).decode(one_x, one_len).at(0),
                      agreement().relative, "ctc beam");
      if (::testing::Test::HasFailure()) return;
      boosted += got[b].boost_score != 0.0f ? 1 : 0;
      ++utterances;
    }
  }
  EXPECT_GT(boosted, utterances / 10) << "too few utterances were boosted to test anything";
}

// One model's streams (see below); returns how many were boosted.
std::int64_t PhraseSlotsDecoding::stream_round(std::mt19937_64& rng) const {
  testing::RandomTransducerSpec spec = testing::random_spec(rng);
  spec.quantised = false;
  spec.blank = -1;
  const testing::RandomTransducer random = testing::make_random_transducer(spec, rng);
  const TransducerModel model = random.build(device_);
  const std::int64_t slots = 3, utterances = 10;
  const testing::RandomEncoded e = [&] {
    testing::RandomEncoded out;
    do {
      out = testing::random_encoded(rng, spec, utterances, 20);
    } while (out.batch < utterances);
    return out;
  }();
  DeviceBuffer<std::byte> storage;
  const TensorView enc = place(e.values, e.batch, e.frames, e.hidden, storage);
  const std::vector<Hypothesis> plain = TransducerGreedyDecoder(model).decode(enc, e.lens());
  auto tree = std::make_shared<BoostingTree>(
      BoostingTree::with_slots(spec.vocab, BoostingSlots{slots, kStatesPerList, 8}, {}, device_));
  TransducerGreedyConfig config;
  config.boost = tree;
  config.boost_weight = 2.0f;
  TransducerGreedyDecoder decoder(model, config, BatchLimits{slots, e.frames + 1});
  // At most `slots` streams at once, each fed 1 to 5 frames a call; a stream takes a free slot when it starts.
  std::vector<PhraseList> lists(static_cast<std::size_t>(utterances));
  std::vector<Hypothesis> finals(static_cast<std::size_t>(utterances));
  std::vector<std::int64_t> free_slots = {0, 1, 2}, slot_of(static_cast<std::size_t>(utterances), -1),
                            offset(static_cast<std::size_t>(utterances), 0);
  std::vector<std::int64_t> open;
  std::int64_t next = 0;
  while (next < utterances || !open.empty()) {
    while (!free_slots.empty() && next < utterances) {
      const std::int64_t u = next++;
      slot_of[static_cast<std::size_t>(u)] = free_slots.back();
      free_slots.pop_back();
      lists[static_cast<std::size_t>(u)] = testing::random_phrases(rng, spec.vocab, plain, u);
      tree->set_list(slot_of[static_cast<std::size_t>(u)], lists[static_cast<std::size_t>(u)]);  // others stay open
      open.push_back(u);
    }
    const std::int64_t chunk = 1 + static_cast<std::int64_t>(rng() % 5);
    std::vector<ChunkRow> rows;
    std::vector<float> frames(open.size() * static_cast<std::size_t>(chunk * e.hidden), 0.0f);
    std::vector<std::int32_t> sizes;
    for (std::size_t r = 0; r < open.size(); ++r) {
      const std::int64_t u = open[r], at = offset[static_cast<std::size_t>(u)];
      const std::int64_t n = std::min<std::int64_t>(chunk, e.lengths[static_cast<std::size_t>(u)] - at);
      std::copy(e.values.begin() + (u * e.frames + at) * e.hidden,
                e.values.begin() + (u * e.frames + at + n) * e.hidden,
                frames.begin() + static_cast<std::ptrdiff_t>(r) * chunk * e.hidden);
      rows.push_back(ChunkRow{u, at == 0, at + n == e.lengths[static_cast<std::size_t>(u)],
                              static_cast<std::int32_t>(slot_of[static_cast<std::size_t>(u)])});
      sizes.push_back(static_cast<std::int32_t>(n));
      offset[static_cast<std::size_t>(u)] += n;
    }
    DeviceBuffer<std::byte> chunk_storage;
    const auto count = static_cast<std::int64_t>(rows.size());
    const std::vector<Hypothesis> got = decoder.decode_chunks(
        rows, place(frames, count, chunk, e.hidden, chunk_storage), TensorView(sizes.data(), DType::i32, {count}));
    std::vector<std::int64_t> still;
    for (std::size_t r = 0; r < rows.size(); ++r) {
      const std::int64_t u = open[r];
      if (rows[r].last) {
        finals[static_cast<std::size_t>(u)] = got[r];
        free_slots.push_back(slot_of[static_cast<std::size_t>(u)]);
      } else {
        still.push_back(u);
      }
    }
    open = still;
  }
  std::int64_t boosted = 0;
  for (std::int64_t u = 0; u < utterances; ++u) {
    SCOPED_TRACE("utterance " + std::to_string(u));
    TransducerGreedyConfig alone = config;
    alone.boost = std::make_shared<const BoostingTree>(
        BoostingTree::build({lists[static_cast<std::size_t>(u)]}, spec.vocab, {}, device_));
    DeviceBuffer<std::byte> one_storage;
    const std::vector<float> one(e.values.begin() + u * e.frames * e.hidden,
                                 e.values.begin() + (u + 1) * e.frames * e.hidden);
    const std::int32_t length = e.lengths[static_cast<std::size_t>(u)];
    const std::vector<Hypothesis> want =
        TransducerGreedyDecoder(model, alone)
            .decode(place(one, 1, e.frames, e.hidden, one_storage), TensorView(&length, DType::i32, {1}));
    testing::expect_same_hypotheses({finals[static_cast<std::size_t>(u)]}, want, agreement(), "rnnt greedy stream");
    boosted += want[0].boost_score != 0.0f ? 1 : 0;
  }
  return boosted;
}

// Streams, each with its own list: a stream's slot is filled when it starts and refilled for the next stream once it
// has ended, while the other streams go on; each final result equals the utterance decoded alone with its list.
TEST_P(PhraseSlotsDecoding, EveryStreamHasItsOwnListAndSlotsAreRefilledBetweenCalls) {
  const std::uint64_t seed = testing::test_seed();
  SCOPED_TRACE(testing::seed_message(seed));
  std::mt19937_64 rng(seed);
  std::int64_t boosted = 0;
  for (int round = 0; round < 4 && !::testing::Test::HasFailure(); ++round) boosted += stream_round(rng);
  EXPECT_GT(boosted, 0) << "no stream was boosted: nothing tested";
  std::printf("%lld of 40 streams boosted\n", static_cast<long long>(boosted));
}

INSTANTIATE_TEST_SUITE_P(Executors, PhraseSlotsDecoding, ::testing::Values(false, true),
                         [](const ::testing::TestParamInfo<bool>& info) { return info.param ? "CUDA" : "cpu"; });

}  // namespace
}  // namespace asrdec
