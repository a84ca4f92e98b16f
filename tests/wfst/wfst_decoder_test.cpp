// WFST beam search on the CPU against OpenFst (ShortestPath of frames ∘ graph) on random graphs with ε-chains,
// positive ε-cycles, parallel arcs and final weights; batch and chunking invariance; word boosting against the
// oracle on a re-weighted graph; pruned search never beats the oracle; bad graphs and inputs.

#include "asrdec/wfst/wfst_decoder.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <limits>
#include <random>
#include <set>

#include "asrdec/asrdec.hpp"
#include "asrdec/detail/float16.hpp"
#include "asrdec/wfst/graph_builder.hpp"
#include "src/wfst/graph_builder/graph_builder_openfst.hpp"
#include "src/wfst/graph_builder/wfst_graph_openfst.hpp"
#include "src/wfst/wfst_channel.hpp"
#include "support/test_support.hpp"
#include "wfst/openfst_oracle.hpp"
#include "wfst/random_wfst.hpp"

namespace asrdec {
namespace {

using namespace wfst_testing;  // the helpers shared with the CUDA tests

TEST(WfstDecoder, ExactSearchEqualsOpenFstOnRandomGraphs) {
  const std::uint64_t seed = testing::test_seed();
  SCOPED_TRACE(testing::seed_message(seed));
  std::mt19937_64 rng(seed);
  std::int64_t utterances = 0, with_path = 0, finals = 0, tied = 0, with_words = 0, rejected = 0;
  for (int i = 0; i < 300; ++i) {
    auto [random, graph] = accepted_graph(rng, rejected);
    WfstDecoderConfig config = exact_config();
    config.use_final_probs = i % 4 != 3;
    config.threads = 1 + i % 4;  // rows spread over 1-4 threads; "alone" below checks each row against a batch of one
    config.acoustic_scale = i % 3 == 0 ? 0.5f + static_cast<float>(rng() % 100) / 50.0f : 1.0f;
    const Batch batch = random_batch(rng, random.columns, 5, 9);
    SCOPED_TRACE("case " + std::to_string(i) + ", " + config.to_string());
    WfstDecoder decoder(graph, config);
    const std::vector<WfstResult> results = decoder.decode(batch.logprobs(), batch.lens());
    ASSERT_EQ(results.size(), batch.lengths.size());
    for (std::size_t b = 0; b < results.size(); ++b) {
      const testing::OracleBest want =
          testing::openfst_best_path(random.fst, batch.utterances[b], batch.lengths[b], random.columns,
                                     config.acoustic_scale, config.use_final_probs);
      expect_matches_oracle(results[b], want, batch.lengths[b], "utterance " + std::to_string(b));
      // Alone, the utterance decodes exactly as in the batch.
      const Batch alone{
          {batch.utterances[b]}, batch.utterances[b], {batch.lengths[b]}, batch.lengths[b], batch.columns};
      expect_same(decoder.decode(alone.logprobs(), alone.lens()).front(), results[b], "alone");
      if (::testing::Test::HasFailure()) return;
      ++utterances;
      with_path += want.has_path ? 1 : 0;
      finals += want.reached_final ? 1 : 0;
      tied += want.tied ? 1 : 0;
      with_words += !results[b].words.empty() ? 1 : 0;
    }
  }
  EXPECT_GE(utterances, 500);
  EXPECT_GT(with_path, utterances / 3);
  EXPECT_GT(finals, utterances / 5);
  EXPECT_GT(with_words, utterances / 5);
  EXPECT_GT(rejected, 0) << "no graph had an ε-cycle of cost ≤ 0";
  std::printf(
      "%lld utterances: %lld with a path, %lld ending final, %lld with words, %lld tied; %lld graphs "
      "rejected for ε-cycles of cost <= 0\n",
      static_cast<long long>(utterances), static_cast<long long>(with_path), static_cast<long long>(finals),
      static_cast<long long>(with_words), static_cast<long long>(tied), static_cast<long long>(rejected));
}

TEST(WfstDecoder, ChunkedStreamsEqualWholeUtterances) {
  const std::uint64_t seed = testing::test_seed();
  SCOPED_TRACE(testing::seed_message(seed));
  std::mt19937_64 rng(seed);
  std::int64_t rejected = 0, chunks = 0;
  for (int i = 0; i < 80; ++i) {
    auto [random, graph] = accepted_graph(rng, rejected);
    WfstDecoderConfig config = i % 2 == 0 ? exact_config() : WfstDecoderConfig{};
    if (i % 2 == 1) {
      config.beam = 0.5f + static_cast<float>(rng() % 40) / 10.0f;
      config.max_active = 1 + static_cast<std::int64_t>(rng() % 4);
    }
    const Batch batch = random_batch(rng, random.columns, 4, 12);
    SCOPED_TRACE("case " + std::to_string(i) + ", " + config.to_string());
    WfstDecoder decoder(graph, config);
    const std::vector<WfstResult> whole = decoder.decode(batch.logprobs(), batch.lens());
    const std::vector<WfstResult> streamed = decode_in_random_chunks(decoder, batch, rng, Device::cpu(), chunks);
    for (std::size_t b = 0; b < whole.size(); ++b) expect_same(streamed[b], whole[b], "stream " + std::to_string(b));
    if (::testing::Test::HasFailure()) return;
  }
  std::printf("%lld chunk calls\n", static_cast<long long>(chunks));
}

// Long utterances and streams outgrow the history size at which a channel drops the tokens no path reaches any more;
// their best paths still trace back as OpenFst's.
TEST(WfstDecoder, LongUtterancesCollectTheirHistory) {
  const std::uint64_t seed = testing::test_seed();
  SCOPED_TRACE(testing::seed_message(seed));
  std::mt19937_64 rng(seed);
  std::int64_t rejected = 0, compared = 0, collections = 0;
  for (int i = 0; i < 30 && collections < 4; ++i) {
    auto [random, graph] = accepted_graph(rng, rejected);
    const std::int32_t length = 12000 + static_cast<std::int32_t>(rng() % 4000);
    const std::vector<float> frames = random_frames(rng, length, random.columns);
    const testing::OracleBest want = testing::openfst_best_path(random.fst, frames, length, random.columns, 1.0f, true);
    SCOPED_TRACE("case " + std::to_string(i) + ", " + std::to_string(length) + " frames");
    WfstDecoder decoder(graph, exact_config());
    const std::vector<std::int32_t> lengths = {length};
    const WfstResult whole = decoder
                                 .decode(TensorView(frames.data(), DType::f32, {1, length, random.columns}),
                                         TensorView(lengths.data(), DType::i32, {1}))
                                 .front();
    // Over thousands of frames paths with other words cost the same within float rounding, beyond what the
    // oracle's 8 best paths show: the cost is compared here, the words against a channel that keeps everything.
    expect_matches_oracle(whole, want, length, "whole", /*words_may_tie=*/true);
    detail::WfstSearcher searcher(graph, exact_config());
    const std::int32_t blank = random.columns;  // the input label of the last column, the decoder's default blank
    detail::WfstChannel collected, kept;
    searcher.start(collected, {});
    searcher.start(kept, {});
    kept.collect_at = std::numeric_limits<std::int64_t>::max();
    for (std::int32_t t = 0; t < length; ++t) {
      const float* row = frames.data() + static_cast<std::ptrdiff_t>(t) * random.columns;
      searcher.advance(collected, row);
      searcher.advance(kept, row);
      if (t % 997 == 0) {
        expect_same(searcher.result(collected, false, blank), searcher.result(kept, false, blank), "partial");
      }
    }
    if (static_cast<std::int64_t>(kept.history.size()) > 2 * detail::kCollectHistoryAbove) {
      // (A search of one token per frame keeps all its history: every token is an ancestor of the last.)
      EXPECT_GT(collected.collections, 0) << "the history was never collected";
      ++collections;
    }
    expect_same(searcher.result(collected, true, blank), searcher.result(kept, true, blank), "collected history");
    expect_same(searcher.result(collected, true, blank), whole, "decoder");
    // The same as one stream in chunks of 1000 frames.
    WfstResult streamed;
    for (std::int32_t start = 0; start < length; start += 1000) {
      const std::int32_t take = std::min(1000, length - start);
      const std::vector<std::int32_t> chunk_length = {take};
      streamed = decoder
                     .decode_chunks({ChunkRow{1, start == 0, start + take == length}},
                                    TensorView(frames.data() + static_cast<std::ptrdiff_t>(start) * random.columns,
                                               DType::f32, {1, take, random.columns}),
                                    TensorView(chunk_length.data(), DType::i32, {1}))
                     .front();
    }
    expect_same(streamed, whole, "streamed");
    if (::testing::Test::HasFailure()) return;
    compared += want.has_path ? 1 : 0;
  }
  EXPECT_GT(compared, 0);
  EXPECT_GE(collections, 4) << "too few long searches outgrew the collection threshold";
}

TEST(WfstDecoder, PrunedSearchNeverBeatsTheOracle) {
  const std::uint64_t seed = testing::test_seed();
  SCOPED_TRACE(testing::seed_message(seed));
  std::mt19937_64 rng(seed);
  std::int64_t rejected = 0, worse = 0, utterances = 0;
  for (int i = 0; i < 150; ++i) {
    auto [random, graph] = accepted_graph(rng, rejected);
    WfstDecoderConfig config;
    config.beam = 0.2f + static_cast<float>(rng() % 30) / 10.0f;
    config.max_active = 1 + static_cast<std::int64_t>(rng() % 3);
    config.max_tokens_per_frame = 2 + static_cast<std::int64_t>(rng() % 6);
    const Batch batch = random_batch(rng, random.columns, 4, 10);
    SCOPED_TRACE("case " + std::to_string(i) + ", " + config.to_string());
    WfstDecoder decoder(graph, config);
    const std::vector<WfstResult> results = decoder.decode(batch.logprobs(), batch.lens());
    for (std::size_t b = 0; b < results.size(); ++b) {
      const testing::OracleBest want = testing::openfst_best_path(random.fst, batch.utterances[b], batch.lengths[b],
                                                                  random.columns, 1.0f, config.use_final_probs);
      if (!std::isfinite(results[b].cost)) continue;  // every path pruned away
      ASSERT_TRUE(want.has_path);
      // A pruned search that reached a final state competes with the oracle's final paths; one that did not may
      // still be cheaper than them (its final weight is not counted), but never cheaper than a no-final path.
      if (results[b].reached_final || !want.reached_final) {
        EXPECT_GE(results[b].cost, want.cost - 1e-3f * std::max(1.0f, std::fabs(want.cost))) << "utterance " << b;
      }
      worse += results[b].cost > want.cost + 1e-3f ? 1 : 0;
      ++utterances;
    }
    if (::testing::Test::HasFailure()) return;
  }
  EXPECT_GT(worse, 0) << "pruning never lost the best path: the test prunes too little";
  std::printf("%lld utterances, %lld worse than the oracle\n", static_cast<long long>(utterances),
              static_cast<long long>(worse));
}

// min_active (Kaldi's floor of tokens per frame): at tight beams it keeps paths the beam alone drops, so results
// get closer to the exact best path, never past it.
TEST(WfstDecoder, MinActiveRecoversPathsATightBeamLoses) {
  const std::uint64_t seed = testing::test_seed();
  SCOPED_TRACE(testing::seed_message(seed));
  std::mt19937_64 rng(seed);
  std::int64_t rejected = 0, better = 0, worse = 0, exact_plain = 0, exact_floor = 0, utterances = 0;
  for (int i = 0; i < 150; ++i) {
    auto [random, graph] = accepted_graph(rng, rejected);
    WfstDecoderConfig plain;
    plain.beam = 0.2f + static_cast<float>(rng() % 20) / 10.0f;
    WfstDecoderConfig floor = plain;
    floor.min_active = 1 + static_cast<std::int64_t>(rng() % 8);
    floor.threads = 1 + i % 3;
    const Batch batch = random_batch(rng, random.columns, 4, 10);
    SCOPED_TRACE("case " + std::to_string(i) + ", " + floor.to_string());
    const auto without = WfstDecoder(graph, plain).decode(batch.logprobs(), batch.lens());
    const auto with = WfstDecoder(graph, floor).decode(batch.logprobs(), batch.lens());
    for (std::size_t b = 0; b < with.size(); ++b) {
      const testing::OracleBest want = testing::openfst_best_path(random.fst, batch.utterances[b], batch.lengths[b],
                                                                  random.columns, 1.0f, floor.use_final_probs);
      if (!want.has_path || !want.reached_final) continue;
      const float tolerance = 1e-3f * std::max(1.0f, std::fabs(want.cost));
      const auto exact = [&](const WfstResult& r) {
        return r.reached_final && std::fabs(r.cost - want.cost) <= tolerance;
      };
      if (with[b].reached_final) {
        EXPECT_GE(with[b].cost, want.cost - tolerance) << "utterance " << b;
      }
      exact_plain += exact(without[b]) ? 1 : 0;
      exact_floor += exact(with[b]) ? 1 : 0;
      better += exact(with[b]) && !exact(without[b]) ? 1 : 0;
      worse += !exact(with[b]) && exact(without[b]) ? 1 : 0;
      ++utterances;
    }
    if (::testing::Test::HasFailure()) return;
  }
  EXPECT_GT(better, 10) << "min_active never recovered the best path";
  EXPECT_GT(better, 4 * worse);
  std::printf(
      "%lld utterances: the best path found by %lld without min_active, %lld with it (%lld recovered, %lld lost)\n",
      static_cast<long long>(utterances), static_cast<long long>(exact_plain), static_cast<long long>(exact_floor),
      static_cast<long long>(better), static_cast<long long>(worse));
}

// N-best: distinct word sequences, best first, the first equal to decode(), each a real path of the graph for
// those words (OpenFst's best path constrained to them is never dearer).
TEST(WfstDecoder, NbestListsDistinctRealPathsBestFirst) {
  const std::uint64_t seed = testing::test_seed();
  SCOPED_TRACE(testing::seed_message(seed));
  std::mt19937_64 rng(seed);
  std::int64_t rejected = 0, lists = 0, several = 0, entries = 0;
  for (int i = 0; i < 120; ++i) {
    auto [random, graph] = accepted_graph(rng, rejected);
    WfstDecoderConfig config = i % 2 == 0 ? exact_config() : WfstDecoderConfig{};
    config.use_final_probs = i % 4 != 3;
    const Batch batch = random_batch(rng, random.columns, 4, 9);
    SCOPED_TRACE("case " + std::to_string(i) + ", " + config.to_string());
    WfstDecoder decoder(graph, config);
    const std::vector<WfstResult> best = decoder.decode(batch.logprobs(), batch.lens());
    const std::int64_t n = 1 + static_cast<std::int64_t>(rng() % 6);
    const auto nbest = decoder.decode_nbest(batch.logprobs(), batch.lens(), n);
    if (i == 0) {
      ASRDEC_EXPECT_THROW_MSG(decoder.decode_nbest(batch.logprobs(), batch.lens(), 0), InvalidArgument,
                              "n must be at least 1, got 0");
    }
    ASSERT_EQ(nbest.size(), best.size());
    for (std::size_t b = 0; b < best.size(); ++b) {
      const std::string what = "utterance " + std::to_string(b);
      if (!std::isfinite(best[b].cost)) {
        ASSERT_EQ(nbest[b].size(), 1u) << what;
        EXPECT_FALSE(std::isfinite(nbest[b].front().cost)) << what;
        continue;
      }
      ASSERT_FALSE(nbest[b].empty()) << what;
      ASSERT_LE(static_cast<std::int64_t>(nbest[b].size()), n);
      expect_same(nbest[b].front(), best[b], what);
      std::set<std::vector<std::int32_t>> seen;
      for (std::size_t k = 0; k < nbest[b].size(); ++k) {
        const WfstResult& r = nbest[b][k];
        EXPECT_TRUE(seen.insert(r.words).second) << what << ": words repeated at " << k;
        if (k > 0) {
          EXPECT_GE(r.cost, nbest[b][k - 1].cost) << what;
        }
        EXPECT_EQ(r.reached_final, best[b].reached_final) << what;
        EXPECT_NEAR(r.graph_cost + r.acoustic_cost, r.cost, 1e-3f * std::max(1.0f, std::fabs(r.cost)));
        const float constrained =
            testing::openfst_best_cost_with_words(random.fst, batch.utterances[b], batch.lengths[b], random.columns,
                                                  config.acoustic_scale, r.reached_final, r.words);
        EXPECT_LE(constrained, r.cost + 1e-3f * std::max(1.0f, std::fabs(r.cost))) << what << ", entry " << k;
        ++entries;
      }
      ++lists;
      several += nbest[b].size() > 1 ? 1 : 0;
    }
    if (::testing::Test::HasFailure()) return;
  }
  EXPECT_GT(several, lists / 5) << "too few lists with several entries";
  std::printf("%lld lists, %lld with several word sequences, %lld entries\n", static_cast<long long>(lists),
              static_cast<long long>(several), static_cast<long long>(entries));
}

TEST(WfstDecoder, WordBoostsEqualTheOracleOnAReweightedGraph) {
  const std::uint64_t seed = testing::test_seed();
  SCOPED_TRACE(testing::seed_message(seed));
  std::mt19937_64 rng(seed);
  std::int64_t rejected = 0, changed = 0, rejected_boosts = 0;
  for (int i = 0; i < 120; ++i) {
    auto [random, graph] = accepted_graph(rng, rejected);
    if (graph.max_output_label() == 0) continue;
    const Batch batch = random_batch(rng, random.columns, 3, 8);
    std::vector<WordBoosts> boosts(batch.lengths.size());
    std::vector<fst::StdVectorFst> boosted(batch.lengths.size(), random.fst);
    for (std::size_t b = 0; b < boosts.size(); ++b) {
      const auto word = std::uniform_int_distribution<std::int32_t>(1, graph.max_output_label())(rng);
      const float score = std::uniform_real_distribution<float>(0.5f, 3.0f)(rng);
      boosts[b].push_back({word, score});
      // The oracle's graph: every arc that outputs the word costs `score` less.
      for (fst::StateIterator<fst::StdVectorFst> s(boosted[b]); !s.Done(); s.Next()) {
        for (fst::MutableArcIterator<fst::StdVectorFst> a(&boosted[b], s.Value()); !a.Done(); a.Next()) {
          fst::StdArc arc = a.Value();
          if (arc.olabel == word) {
            arc.weight = arc.weight.Value() - score;
            a.SetValue(arc);
          }
        }
      }
    }
    SCOPED_TRACE("case " + std::to_string(i));
    bool makes_cycle = false;
    for (const auto& g : boosted) {
      try {
        (void)detail::wfst_graph_from_fst(g, "boosted");
      } catch (const InvalidArgument&) {
        makes_cycle = true;  // a boost made an ε-cycle through the word cost ≤ 0
      }
    }
    if (makes_cycle) {
      WfstDecoder decoder(graph, exact_config());
      ASRDEC_EXPECT_THROW_MSG(decoder.decode(batch.logprobs(), batch.lens(), boosts), InvalidArgument,
                              "word boosting: with these boosts random graph has a cycle of ε-arcs");
      ++rejected_boosts;
      continue;
    }
    WfstDecoder decoder(graph, exact_config());
    const std::vector<WfstResult> plain = decoder.decode(batch.logprobs(), batch.lens());
    const std::vector<WfstResult> results = decoder.decode(batch.logprobs(), batch.lens(), boosts);
    for (std::size_t b = 0; b < results.size(); ++b) {
      const testing::OracleBest want =
          testing::openfst_best_path(boosted[b], batch.utterances[b], batch.lengths[b], random.columns, 1.0f, true);
      expect_matches_oracle(results[b], want, batch.lengths[b], "utterance " + std::to_string(b));
      changed += results[b].words != plain[b].words ? 1 : 0;
    }
    if (::testing::Test::HasFailure()) return;
  }
  EXPECT_GT(changed, 5) << "boosting changed too few transcripts to test anything";
  std::printf("%lld boost lists rejected for making an ε-cycle cost <= 0\n", static_cast<long long>(rejected_boosts));
}

// Small real TLGs: the sample lexicon cut down to the words of the first utterances, the sample word 3-gram, every
// topology; the sample's own frames (acoustic scale 2) are decoded exactly and checked against OpenFst.
TEST(WfstDecoder, SampleTlgsOfEveryTopologyEqualOpenFst) {
  const SampleFrames sample = sample_frames(6);
  const std::int64_t columns = sample.columns;
  const std::vector<std::vector<float>>& utterances = sample.utterances;
  constexpr int kUtterances = 6;
  for (const auto& [topology, self_loops] :
       {std::pair{CtcTopology::standard, true}, std::pair{CtcTopology::standard, false},
        std::pair{CtcTopology::compact, true}, std::pair{CtcTopology::minimal, true}}) {
    CtcGraphOptions options;
    options.topology = topology;
    options.self_loops = self_loops;
    SCOPED_TRACE(options.to_string());
    const detail::CtcGraph graph = sample_ctc_graph(options);
    WfstDecoderConfig config = exact_config();
    config.acoustic_scale = 2.0f;
    WfstDecoder exact(detail::wfst_graph_from_fst(graph.tlg, "sample TLG"), config);
    config = WfstDecoderConfig{};
    config.acoustic_scale = 2.0f;
    WfstDecoder pruned(detail::wfst_graph_from_fst(graph.tlg, "sample TLG"), config);
    std::int64_t equal = 0;
    for (int u = 0; u < kUtterances; ++u) {
      const std::int32_t length = static_cast<std::int32_t>(utterances[u].size() / static_cast<std::size_t>(columns));
      const TensorView view(utterances[u].data(), DType::f32, {1, length, columns});
      const std::vector<std::int32_t> one = {length};
      const TensorView lens(one.data(), DType::i32, {1});
      const testing::OracleBest want =
          testing::openfst_best_path(graph.tlg, utterances[u], length, static_cast<std::int32_t>(columns), 2.0f, true);
      ASSERT_TRUE(want.has_path);
      expect_matches_oracle(exact.decode(view, lens).front(), want, length, "utterance " + std::to_string(u));
      const WfstResult beam = pruned.decode(view, lens).front();
      EXPECT_GE(beam.cost, want.cost - 1e-3f * std::max(1.0f, std::fabs(want.cost)));
      equal += std::fabs(beam.cost - want.cost) <= 1e-3f * std::max(1.0f, std::fabs(want.cost)) ? 1 : 0;
      if (::testing::Test::HasFailure()) return;
    }
    // Beam 17 keeps the best path of most of these utterances (so the pruned check above is not vacuous).
    EXPECT_GE(equal, kUtterances / 2);
    std::printf("%s: beam 17 found the exact best path of %lld of %d utterances\n", options.to_string().c_str(),
                static_cast<long long>(equal), kUtterances);
  }
}

// The sample frames through the sample TLG under the tightest pressure limits must overflow, or the CUDA test
// that compares every limit with the CPU would never reach the overflow selection.
TEST(WfstDecoder, SampleTlgOverflowsUnderTheTightestLimits) {
  const NpyArray logprobs = read_npy(sample_data_dir() + "/ctc/logprobs.npy");
  const NpyArray lengths = read_npy(sample_data_dir() + "/ctc/lengths.npy");
  const TensorView view(logprobs.data(), logprobs.dtype(),
                        {logprobs.shape()[0], logprobs.shape()[1], logprobs.shape()[2]});
  const TensorView lens(lengths.data(), lengths.dtype(), {lengths.shape()[0]});
  const WfstGraph graph = detail::wfst_graph_from_fst(sample_ctc_graph(CtcGraphOptions{}).tlg, "sample TLG");
  const auto limits = sample_pressure_limits();
  for (std::size_t i = 0; i < limits.size(); ++i) {
    WfstDecoderConfig config;
    config.acoustic_scale = 2.0f;
    config.max_active = limits[i].first;
    config.max_tokens_per_frame = limits[i].second;
    std::int64_t overflowed = 0;
    for (const WfstResult& r : WfstDecoder(graph, config).decode(view, lens)) overflowed += r.overflow ? 1 : 0;
    std::printf("max_active %lld, max_tokens_per_frame %lld: %lld of %lld utterances overflowed\n",
                static_cast<long long>(limits[i].first), static_cast<long long>(limits[i].second),
                static_cast<long long>(overflowed), static_cast<long long>(lengths.shape()[0]));
    if (i + 1 == limits.size()) {
      EXPECT_GT(overflowed, 0) << config.to_string();
    }
  }
}

// A tiny TLG and frames that peak on a known alignment: the words, their frames and the split of the cost are
// known by hand. Tokens ▁the 0, ▁cat 1, s 2, ▁sat 3, blank 4; a bigram LM where "the cats" and "cats sat" back off.
TEST(WfstDecoder, WordFramesAndCostPartsOfAKnownAlignment) {
  const std::string arpa = testing::temp_path("frames.arpa");
  {
    std::ofstream out(arpa);
    out << "\\data\\\nngram 1=6\nngram 2=4\n\n\\1-grams:\n-1.0\t</s>\n-99\t<s>\t-0.5\n-0.7\tthe\t-0.3\n"
           "-1.2\tcat\t-0.2\n-1.5\tcats\t-0.1\n-1.1\tsat\t-0.4\n\n\\2-grams:\n-0.2\t<s> the\n-0.3\tthe cat\n"
           "-0.4\tcat sat\n-0.25\tsat </s>\n\n\\end\\\n";
  }
  Lexicon lexicon;
  for (const auto& [word, pieces] : std::vector<std::pair<std::string, std::vector<std::string>>>{
           {"the", {"▁the"}}, {"cat", {"▁cat"}}, {"cats", {"▁cat", "s"}}, {"sat", {"▁sat"}}}) {
    lexicon.entries.push_back(LexiconEntry{word, pieces, 0});
  }
  const detail::TokenLabels tokens = detail::make_token_labels({"▁the", "▁cat", "s", "▁sat"}, -1, "<tokens>");
  const detail::CtcGraph graph = detail::make_ctc_graph(tokens, lexicon, arpa, CtcGraphOptions{});
  // the the _ cat _ _ s sat sat _  (_: blank), each frame 0.99 on its column.
  const std::vector<std::int32_t> alignment = {0, 0, 4, 1, 4, 4, 2, 3, 3, 4};
  const auto length = static_cast<std::int32_t>(alignment.size());
  std::vector<float> frames(alignment.size() * 5, std::log(0.01f / 4.0f));
  for (std::size_t t = 0; t < alignment.size(); ++t)
    frames[t * 5 + static_cast<std::size_t>(alignment[t])] = std::log(0.99f);
  WfstDecoderConfig config;
  config.acoustic_scale = 2.0f;
  const std::vector<std::int32_t> lengths = {length};
  const TensorView view(frames.data(), DType::f32, {1, length, 5});
  const TensorView lens(lengths.data(), DType::i32, {1});
  // Determinising LG puts "cats" on the arc of s, where it parts from "cat": output arcs alone misplace the words.
  const WfstResult by_arcs =
      WfstDecoder(detail::wfst_graph_from_fst(graph.tlg, "tiny TLG"), config).decode(view, lens).front();
  EXPECT_EQ(by_arcs.word_start_frames, (std::vector<std::int32_t>{0, 6, 7}));
  EXPECT_EQ(by_arcs.word_end_frames, (std::vector<std::int32_t>{3, 6, 8}));
  config.word_start_columns = {0, 1, 3};  // ▁the, ▁cat, ▁sat
  const WfstResult r =
      WfstDecoder(detail::wfst_graph_from_fst(graph.tlg, "tiny TLG"), config).decode(view, lens).front();
  const auto id = [&](const char* word) { return graph.words.id_of.at(word); };
  EXPECT_EQ(r.words, (std::vector<std::int32_t>{id("the"), id("cats"), id("sat")}));
  EXPECT_EQ(r.word_start_frames, (std::vector<std::int32_t>{0, 3, 7}));
  EXPECT_EQ(r.word_end_frames, (std::vector<std::int32_t>{1, 6, 8}));
  EXPECT_TRUE(r.reached_final);
  // Acoustic: 10 frames at 0.99, scaled by 2. Graph: <s> the, back-off to cats, back-off to sat, sat </s>.
  EXPECT_NEAR(r.acoustic_cost, -2.0f * 10.0f * std::log(0.99f), 1e-4f);
  const double log10_lm = -0.2 + (-0.3 - 1.5) + (-0.1 - 1.1) + -0.25;
  EXPECT_NEAR(r.graph_cost, -std::log(10.0) * log10_lm, 1e-4);
  EXPECT_NEAR(r.cost, r.graph_cost + r.acoustic_cost, 1e-4f);
}

TEST(WfstDecoder, BadGraphsAndInputsAreRejected) {
  // A graph whose input labels need 4 columns.
  fst::StdVectorFst f;
  f.AddState();
  f.AddState();
  f.SetStart(0);
  f.AddArc(0, fst::StdArc(4, 7, 0.5f, 1));
  f.AddArc(1, fst::StdArc(1, 0, 0.0f, 1));
  f.SetFinal(1, 0.0f);
  const WfstGraph graph = detail::wfst_graph_from_fst(f, "four-column graph");
  EXPECT_EQ(graph.max_input_label(), 4);
  EXPECT_EQ(graph.max_output_label(), 7);
  WfstDecoder decoder(graph);
#if !ASRDEC_WITH_CUDA
  ASRDEC_EXPECT_THROW_MSG(WfstDecoder(graph, {}, Device::cuda(0)), Unsupported, "no CUDA device");
#endif
  std::vector<float> values(2 * 3 * 3, -1.0f);
  std::vector<std::int32_t> lengths = {3, 2};
  const TensorView three(values.data(), DType::f32, {2, 3, 3});
  const TensorView lens(lengths.data(), DType::i32, {2});
  ASRDEC_EXPECT_THROW_MSG(decoder.decode(three, lens), InvalidArgument,
                          "input label 4 scores model column 3, but logprobs have 3 columns");
  values.assign(2 * 3 * 4, -1.0f);
  const TensorView four(values.data(), DType::f32, {2, 3, 4});
  EXPECT_EQ(decoder.decode(four, lens).size(), 2u);
  values[1 * 12 + 2 * 4 + 3] = std::nanf("");  // utterance 1, frame 2: past its length, never read
  EXPECT_EQ(decoder.decode(four, lens).size(), 2u);
  values[1 * 12 + 1 * 4 + 0] = std::nanf("");
  ASRDEC_EXPECT_THROW_MSG(decoder.decode(four, lens), InvalidArgument, "logprobs[1, 1, 0] is NaN");
  values.assign(values.size(), -1.0f);
  lengths = {4, 1};
  ASRDEC_EXPECT_THROW_MSG(decoder.decode(four, lens), InvalidArgument, "lengths");
  lengths = {3, 1};
  ASRDEC_EXPECT_THROW_MSG(decoder.decode(four, lens, {WordBoosts{}}), InvalidArgument, "one list per utterance");
  ASRDEC_EXPECT_THROW_MSG(decoder.decode(four, lens, {WordBoosts{{8, 1.0f}}, WordBoosts{}}), InvalidArgument,
                          "word id 8 is not an output label of the graph (1 … 7)");
  ASRDEC_EXPECT_THROW_MSG(decoder.decode(four, lens, {WordBoosts{{7, kInf}}, WordBoosts{}}), InvalidArgument,
                          "the score of word 7 is inf");
  // Streams.
  ASRDEC_EXPECT_THROW_MSG(decoder.decode_chunks({ChunkRow{5, false, false}, ChunkRow{6, true, false}}, four, lens),
                          InvalidArgument, "utterance 5 is not open");
  ASRDEC_EXPECT_THROW_MSG(decoder.decode_chunks({ChunkRow{5, true, false}, ChunkRow{5, true, false}}, four, lens),
                          InvalidArgument, "utterance 5 appears in more than one row");
  ASRDEC_EXPECT_THROW_MSG(decoder.decode_chunks({ChunkRow{5, true, false}}, four, lens), InvalidArgument,
                          "1 rows for a batch of 2");
  // A call that fails changes no stream: stream 5 starts cleanly, then a NaN in another row rejects the next call,
  // and repeating it with good values gives what a clean run gives.
  {
    const std::vector<std::int32_t> two = {3, 3};
    const TensorView two_lens(two.data(), DType::i32, {2});
    const std::vector<ChunkRow> begin = {ChunkRow{5, true, false}, ChunkRow{6, true, false}};
    const std::vector<ChunkRow> end = {ChunkRow{5, false, true}, ChunkRow{6, false, true}};
    WfstDecoder clean(graph);
    clean.decode_chunks(begin, four, two_lens);
    const std::vector<WfstResult> want = clean.decode_chunks(end, four, two_lens);
    WfstDecoder streams(graph);
    streams.decode_chunks(begin, four, two_lens);
    std::vector<float> bad = values;
    bad[1 * 12 + 2 * 4 + 1] = std::nanf("");
    const TensorView bad_view(bad.data(), DType::f32, {2, 3, 4});
    ASRDEC_EXPECT_THROW_MSG(streams.decode_chunks(end, bad_view, two_lens), InvalidArgument, "logprobs[1, 2, 1]");
    ASRDEC_EXPECT_THROW_MSG(streams.decode_chunks({ChunkRow{5, false, true}, ChunkRow{6, true, true}}, four, two_lens,
                                                  {WordBoosts{}, WordBoosts{{9, 1.0f}}}),
                            InvalidArgument, "word id 9");
    EXPECT_EQ(streams.open_utterances(), 2);
    const std::vector<WfstResult> got = streams.decode_chunks(end, four, two_lens);
    ASSERT_EQ(got.size(), 2u);
    for (int b = 0; b < 2; ++b) expect_same(got[b], want[b], "stream after a failed call");
    EXPECT_EQ(streams.open_utterances(), 0);
  }
  // At most max_open_utterances are open; cancel() frees one without a last chunk.
  {
    WfstDecoderConfig small;
    small.max_open_utterances = 1;
    WfstDecoder one(graph, small);
    const std::vector<std::int32_t> three_frames = {3};
    const TensorView row(values.data(), DType::f32, {1, 3, 4});
    const TensorView row_length(three_frames.data(), DType::i32, {1});
    one.decode_chunks({ChunkRow{5, true, false}}, row, row_length);
    ASRDEC_EXPECT_THROW_MSG(one.decode_chunks({ChunkRow{6, true, false}}, row, row_length), OutOfMemory,
                            "WfstDecoder::decode_chunks: utterance 6 cannot start: 1 utterances are open");
    EXPECT_FALSE(one.cancel(6));
    EXPECT_TRUE(one.cancel(5));
    EXPECT_EQ(one.open_utterances(), 0);
    ASRDEC_EXPECT_THROW_MSG(one.decode_chunks({ChunkRow{5, false, true}}, row, row_length), InvalidArgument,
                            "utterance 5 is not open");
    EXPECT_TRUE(one.decode_chunks({ChunkRow{6, true, true}}, row, row_length)[0].reached_final);
    EXPECT_EQ(one.open_utterances(), 0);
  }
  // Configs.
  WfstDecoderConfig config;
  config.beam = 0.0f;
  ASRDEC_EXPECT_THROW_MSG(WfstDecoder(graph, config), InvalidArgument, "beam must be positive");
  config = WfstDecoderConfig{};
  config.max_active = 0;
  ASRDEC_EXPECT_THROW_MSG(WfstDecoder(graph, config), InvalidArgument, "max_active must be at least 1");
  config = WfstDecoderConfig{};
  config.max_active = 10;
  config.min_active = 11;
  ASRDEC_EXPECT_THROW_MSG(WfstDecoder(graph, config), InvalidArgument,
                          "min_active must be in [0, max_active = 10], got 11");
  config.min_active = -1;
  ASRDEC_EXPECT_THROW_MSG(WfstDecoder(graph, config), InvalidArgument,
                          "min_active must be in [0, max_active = 10], got -1");
  config = WfstDecoderConfig{};
  config.acoustic_scale = std::nanf("");
  ASRDEC_EXPECT_THROW_MSG(WfstDecoder(graph, config), InvalidArgument, "acoustic_scale");
  config = WfstDecoderConfig{};
  config.max_device_bytes = 0;
  ASRDEC_EXPECT_THROW_MSG(WfstDecoder(graph, config), InvalidArgument, "max_device_bytes must be at least 1, got 0");
  for (const std::int64_t fast : {-1, 1, 3, 384, 1024}) {
    config = WfstDecoderConfig{};
    config.device_fast_tokens = fast;
    ASRDEC_EXPECT_THROW_MSG(WfstDecoder(graph, config), InvalidArgument,
                            "device_fast_tokens must be 0 or a power of two in [2, 512], got " + std::to_string(fast));
  }
  for (const std::int64_t fast : {0, 2, 512}) {
    config = WfstDecoderConfig{};
    config.device_fast_tokens = fast;
    EXPECT_NO_THROW(WfstDecoder(graph, config)) << fast;
  }
  config = WfstDecoderConfig{};
  const WfstDecoder on_cpu(graph);
  EXPECT_EQ(on_cpu.lane_device_bytes(), 0);
  EXPECT_EQ(on_cpu.device_bytes(), 0);
  EXPECT_EQ(on_cpu.host_fallbacks(), 0);
  EXPECT_EQ(on_cpu.graph_mode(), GraphMode::eager);

  // A long ε-cycle (the component search must not recurse per state): accepted at a positive total cost,
  // refused at zero.
  const auto ring = [](std::int32_t states, float closing) {
    WfstGraphArrays a;
    a.num_states = states;
    a.start = 0;
    for (std::int32_t s = 0; s < states; ++s) {
      a.emitting_begin.push_back(s);
      a.epsilon_begin.push_back(s);
      a.ilabel.push_back(0);
      a.olabel.push_back(0);
      a.weight.push_back(s + 1 < states ? 1.0f : closing);
      a.next_state.push_back(s + 1 < states ? s + 1 : 0);
    }
    a.emitting_begin.push_back(states);
    a.epsilon_begin.push_back(states);
    a.final_weight.assign(static_cast<std::size_t>(states), 0.0f);
    return a;
  };
  constexpr std::int32_t kRing = 300000;
  EXPECT_NO_THROW(WfstGraph::from_arrays(ring(kRing, 1.0f), "long ring"));
  ASRDEC_EXPECT_THROW_MSG(WfstGraph::from_arrays(ring(kRing, -static_cast<float>(kRing - 1)), "long zero ring"),
                          InvalidArgument, "long zero ring: the graph has a cycle of ε-arcs (through state 0)");
  // A ring of positive cost whose arcs run against the state order: each Bellman–Ford round moves the distances one
  // arc on, so proving it needs states² relaxations; the check stops at its budget instead of taking minutes.
  constexpr std::int32_t kSlow = 10000;
  WfstGraphArrays slow;
  slow.num_states = kSlow;
  slow.start = 0;
  for (std::int32_t s = 0; s < kSlow; ++s) {
    slow.emitting_begin.push_back(s);
    slow.epsilon_begin.push_back(s);
    slow.ilabel.push_back(0);
    slow.olabel.push_back(0);
    slow.weight.push_back(s > 0 ? -1.0f : static_cast<float>(kSlow));
    slow.next_state.push_back(s > 0 ? s - 1 : kSlow - 1);
  }
  slow.emitting_begin.push_back(kSlow);
  slow.epsilon_begin.push_back(kSlow);
  slow.final_weight.assign(kSlow, 0.0f);
  ASRDEC_EXPECT_THROW_MSG(WfstGraph::from_arrays(slow, "slow ring"), Unsupported,
                          "slow ring: the graph has a strongly connected ε-subgraph of 10000 states whose cycles take "
                          "more than 67108864 arc relaxations to check");

  // Graphs: ε-cycles of cost ≤ 0 (zero included), files.
  fst::StdVectorFst cycle;
  for (int s = 0; s < 3; ++s) cycle.AddState();
  cycle.SetStart(0);
  cycle.AddArc(0, fst::StdArc(1, 0, 0.0f, 1));
  cycle.AddArc(1, fst::StdArc(0, 0, 0.5f, 2));
  cycle.AddArc(2, fst::StdArc(0, 3, -0.5f, 1));
  ASRDEC_EXPECT_THROW_MSG(detail::wfst_graph_from_fst(cycle, "zero cycle"), InvalidArgument,
                          "zero cycle: the graph has a cycle of ε-arcs");
  fst::MutableArcIterator<fst::StdVectorFst>(&cycle, 2).SetValue(fst::StdArc(0, 3, -0.4f, 1));
  EXPECT_NO_THROW(detail::wfst_graph_from_fst(cycle, "positive cycle"));
  fst::StdVectorFst self_loop = f;
  self_loop.AddArc(1, fst::StdArc(0, 0, -0.1f, 1));
  ASRDEC_EXPECT_THROW_MSG(detail::wfst_graph_from_fst(self_loop, "self loop"), InvalidArgument, "cycle of ε-arcs");
  fst::StdVectorFst no_start;
  no_start.AddState();
  ASRDEC_EXPECT_THROW_MSG(detail::wfst_graph_from_fst(no_start, "no start"), InvalidArgument,
                          "no start: the graph has no start state");

  ASRDEC_EXPECT_THROW_MSG(WfstGraph::load(testing::temp_path("missing.fst")), FileError, "cannot open for reading");
  const std::string text = testing::temp_path("not-an-fst.fst");
  {
    std::ofstream out(text);
    out << "0 1 1 1\n1\n";
  }
  ASRDEC_EXPECT_THROW_MSG(WfstGraph::load(text), ParseError, "not an OpenFst binary file");
  const std::string log_path = testing::temp_path("log.fst");
  fst::VectorFst<fst::LogArc> log_fst;
  log_fst.AddState();
  log_fst.SetStart(0);
  log_fst.Write(log_path);
  ASRDEC_EXPECT_THROW_MSG(WfstGraph::load(log_path), Unsupported, "arc type 'log' is not supported");
  const std::string good = testing::temp_path("good.fst");
  f.Write(good);
  const WfstGraph loaded = WfstGraph::load(good);
  EXPECT_EQ(loaded.num_states(), 2);
  EXPECT_EQ(loaded.num_arcs(), 2);
  EXPECT_EQ(loaded.source(), good);
  const std::string constant = testing::temp_path("const.fst");
  fst::StdConstFst(f).Write(constant);
  EXPECT_EQ(WfstGraph::load(constant).num_arcs(), 2);
}

}  // namespace
}  // namespace asrdec
