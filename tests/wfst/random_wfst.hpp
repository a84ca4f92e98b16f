#pragma once
// Random WFSTs and CTC frames for the WFST decoder tests (CPU and CUDA), and the comparisons they share.

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <limits>
#include <random>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "asrdec/asrdec.hpp"
#include "asrdec/detail/float16.hpp"
#include "asrdec/wfst/graph_builder.hpp"
#include "src/wfst/graph_builder/graph_builder_openfst.hpp"
#include "src/wfst/graph_builder/wfst_graph_openfst.hpp"
#include "support/test_support.hpp"
#include "wfst/openfst_oracle.hpp"

namespace asrdec::wfst_testing {

inline constexpr float kInf = std::numeric_limits<float>::infinity();

struct RandomGraph {
  fst::StdVectorFst fst;
  std::int32_t columns = 0;
  std::int32_t words = 0;
};

// Random graphs: emitting arcs on labels 1 … columns (some parallel), ε-arcs forward (any sign) and backward
// (positive, so most ε-cycles cost > 0; graphs with cycles of cost ≤ 0 are rejected by the loader and redrawn).
inline RandomGraph random_graph(std::mt19937_64& rng) {
  RandomGraph r;
  r.columns = std::uniform_int_distribution<std::int32_t>(2, 6)(rng);
  r.words = std::uniform_int_distribution<std::int32_t>(1, 5)(rng);
  const auto states = std::uniform_int_distribution<std::int32_t>(2, 9)(rng);
  std::uniform_real_distribution<float> unit(0.0f, 1.0f);
  for (std::int32_t s = 0; s < states; ++s) r.fst.AddState();
  r.fst.SetStart(std::uniform_int_distribution<std::int32_t>(0, states - 1)(rng));
  const auto word = [&]() { return unit(rng) < 0.35f ? std::uniform_int_distribution<int>(1, r.words)(rng) : 0; };
  for (std::int32_t s = 0; s < states; ++s) {
    const int emitting = std::uniform_int_distribution<int>(s == 0 ? 1 : 0, 5)(rng);
    for (int i = 0; i < emitting; ++i) {
      const int label = std::uniform_int_distribution<int>(1, r.columns)(rng);
      const int next = std::uniform_int_distribution<int>(0, states - 1)(rng);
      r.fst.AddArc(s, fst::StdArc(label, word(), -0.5f + 2.5f * unit(rng), next));
      if (unit(rng) < 0.2f) r.fst.AddArc(s, fst::StdArc(label, word(), -0.5f + 2.5f * unit(rng), next));  // parallel
    }
    const int epsilons = std::uniform_int_distribution<int>(0, 2)(rng);
    for (int i = 0; i < epsilons; ++i) {
      const int next = std::uniform_int_distribution<int>(0, states - 1)(rng);
      // Now and then a backward arc of cost ≤ 0, so that some graphs must be rejected.
      const float w = next > s ? -0.3f + 1.8f * unit(rng) : (unit(rng) < 0.05f ? -unit(rng) : 0.2f + 1.8f * unit(rng));
      r.fst.AddArc(s, fst::StdArc(0, word(), w, next));
    }
    if (unit(rng) < 0.4f) r.fst.SetFinal(s, -0.5f + 2.5f * unit(rng));
  }
  return r;
}

// Frames of one utterance: log-softmax rows, with an occasional −∞.
inline std::vector<float> random_frames(std::mt19937_64& rng, std::int32_t frames, std::int32_t columns) {
  std::normal_distribution<float> normal(0.0f, 2.0f);
  std::vector<float> logp(static_cast<std::size_t>(frames) * columns);
  for (std::int32_t t = 0; t < frames; ++t) {
    float* row = logp.data() + static_cast<std::size_t>(t) * columns;
    float max = -kInf;
    for (std::int32_t c = 0; c < columns; ++c) max = std::max(max, row[c] = normal(rng));
    double sum = 0.0;
    for (std::int32_t c = 0; c < columns; ++c) sum += std::exp(static_cast<double>(row[c] - max));
    for (std::int32_t c = 0; c < columns; ++c) row[c] -= max + static_cast<float>(std::log(sum));
    if (rng() % 10 == 0) row[rng() % static_cast<std::uint64_t>(columns)] = -kInf;
  }
  return logp;
}

// A batch [B, T_max, C] padded with zeros, and its lengths.
struct Batch {
  std::vector<std::vector<float>> utterances;
  std::vector<float> values;
  std::vector<std::int32_t> lengths;
  std::int32_t frames = 0, columns = 0;

  TensorView logprobs() const {
    return TensorView(values.data(), DType::f32, {static_cast<std::int64_t>(lengths.size()), frames, columns});
  }
  TensorView lens() const {
    return TensorView(lengths.data(), DType::i32, {static_cast<std::int64_t>(lengths.size())});
  }
};

inline Batch random_batch(std::mt19937_64& rng, std::int32_t columns, std::int32_t max_batch, std::int32_t max_frames) {
  Batch b;
  b.columns = columns;
  const auto batch = std::uniform_int_distribution<std::int32_t>(1, max_batch)(rng);
  for (std::int32_t i = 0; i < batch; ++i) {
    const std::int32_t length =
        i == 0 ? 0 : (i == 1 ? 1 : std::uniform_int_distribution<std::int32_t>(0, max_frames)(rng));
    b.lengths.push_back(length);
    b.frames = std::max(b.frames, length);
    b.utterances.push_back(random_frames(rng, length, columns));
  }
  std::shuffle(b.lengths.begin(), b.lengths.end(), rng);
  b.utterances.clear();
  for (const std::int32_t length : b.lengths) b.utterances.push_back(random_frames(rng, length, columns));
  b.values.assign(static_cast<std::size_t>(batch) * b.frames * columns, 0.0f);
  for (std::int32_t i = 0; i < batch; ++i) {
    std::copy(b.utterances[i].begin(), b.utterances[i].end(),
              b.values.begin() + static_cast<std::ptrdiff_t>(i) * b.frames * columns);
  }
  return b;
}

inline WfstDecoderConfig exact_config() {
  WfstDecoderConfig config;
  config.beam = 1e30f;
  config.max_active = std::int64_t{1} << 40;
  config.max_tokens_per_frame = std::int64_t{1} << 40;
  return config;
}

// A search config of one of four kinds: 0 exact, 1 pruned (beam, max_active), 2 queue pressure
// (max_tokens_per_frame 1-3), 3 min_active at a tight beam.
inline WfstDecoderConfig random_search_config(std::mt19937_64& rng, int kind) {
  WfstDecoderConfig config = kind == 0 ? exact_config() : WfstDecoderConfig{};
  if (kind == 1) {
    config.beam = 0.5f + static_cast<float>(rng() % 40) / 10.0f;
    config.max_active = 1 + static_cast<std::int64_t>(rng() % 4);
  } else if (kind == 3) {
    config.beam = 0.2f + static_cast<float>(rng() % 20) / 10.0f;
    config.min_active = 1 + static_cast<std::int64_t>(rng() % 8);
    config.max_active = config.min_active + static_cast<std::int64_t>(rng() % 4);
  } else if (kind == 2) {
    config.max_tokens_per_frame = 1 + static_cast<std::int64_t>(rng() % 3);
  }
  return config;
}

inline void expect_matches_oracle(const WfstResult& got, const testing::OracleBest& want, std::int32_t length,
                                  const std::string& what, bool words_may_tie = false) {
  SCOPED_TRACE(what);
  ASSERT_EQ(std::isfinite(got.cost), want.has_path) << "cost " << got.cost;
  EXPECT_EQ(got.frames, length);
  if (!want.has_path) return;
  EXPECT_NEAR(got.cost, want.cost, 1e-3f * std::max(1.0f, std::fabs(want.cost)));
  EXPECT_NEAR(got.graph_cost + got.acoustic_cost, got.cost, 1e-3f * std::max(1.0f, std::fabs(got.cost)));
  EXPECT_EQ(got.reached_final, want.reached_final);
  if (!want.tied && !words_may_tie) {
    EXPECT_EQ(got.words, want.words);
  }
  ASSERT_EQ(got.word_start_frames.size(), got.words.size());
  ASSERT_EQ(got.word_end_frames.size(), got.words.size());
  for (std::size_t i = 0; i < got.words.size(); ++i) {
    EXPECT_LE(got.word_start_frames[i], got.word_end_frames[i]);
    EXPECT_GE(got.word_start_frames[i], 0);
    EXPECT_LE(got.word_end_frames[i], std::max(length - 1, 0));
  }
}

inline void expect_same(const WfstResult& a, const WfstResult& b, const std::string& what) {
  SCOPED_TRACE(what);
  EXPECT_EQ(a.words, b.words);
  EXPECT_EQ(a.word_start_frames, b.word_start_frames);
  EXPECT_EQ(a.word_end_frames, b.word_end_frames);
  EXPECT_EQ(a.cost, b.cost);
  EXPECT_EQ(a.graph_cost, b.graph_cost);
  EXPECT_EQ(a.acoustic_cost, b.acoustic_cost);
  EXPECT_EQ(a.reached_final, b.reached_final);
  EXPECT_EQ(a.frames, b.frames);
}

// A graph the loader accepts (redrawn while it has an ε-cycle of cost ≤ 0); counts the rejections.
inline std::pair<RandomGraph, WfstGraph> accepted_graph(std::mt19937_64& rng, std::int64_t& rejected) {
  for (;;) {
    RandomGraph r = random_graph(rng);
    try {
      WfstGraph g = detail::wfst_graph_from_fst(r.fst, "random graph");
      return {std::move(r), std::move(g)};
    } catch (const InvalidArgument& e) {
      EXPECT_NE(std::string(e.what()).find("cycle of ε-arcs"), std::string::npos) << e.what();
      ++rejected;
    }
  }
}

// One random word boosted by 0.7 half of the time when `boost`, else none; none either when no arc carries the word or
// when the boost would make an ε-cycle free (the decoder rejects it; tested with the decoder).
inline WordBoosts maybe_boost(std::mt19937_64& rng, const RandomGraph& random, const WfstGraph& graph, bool boost) {
  WordBoosts boosts;
  if (boost && rng() % 2 == 0) boosts.emplace_back(1 + static_cast<std::int32_t>(rng() % random.words), 0.7f);
  if (!boosts.empty() && boosts[0].first > graph.max_output_label()) return {};
  std::vector<float> row(static_cast<std::size_t>(graph.max_output_label()) + 1, 0.0f);
  for (const auto& [word, score] : boosts) row[static_cast<std::size_t>(word)] += score;
  try {
    graph.check_word_boosts(row);
  } catch (const InvalidArgument&) {
    return {};
  }
  return boosts;
}

// Decodes every utterance of `batch` as a stream fed in random chunks (each call carries the next chunk of every
// stream left, lengths 0 included) on `device`; returns the final results and counts the calls.
inline std::vector<WfstResult> decode_in_random_chunks(WfstDecoder& decoder, const Batch& batch, std::mt19937_64& rng,
                                                       Device device, std::int64_t& chunks) {
  const auto n = batch.lengths.size();
  std::vector<std::int32_t> done(n, 0);
  std::vector<bool> started(n, false), ended(n, false);
  std::vector<WfstResult> streamed(n);
  while (std::find(ended.begin(), ended.end(), false) != ended.end()) {
    std::vector<ChunkRow> call;
    std::vector<std::int32_t> rows, lengths;
    std::int32_t width = 0;
    for (std::size_t b = 0; b < n; ++b) {
      if (ended[b]) continue;
      const std::int32_t left = batch.lengths[b] - done[b];
      const std::int32_t take = std::uniform_int_distribution<std::int32_t>(0, left)(rng);
      call.push_back(ChunkRow{static_cast<std::int64_t>(100 + b), !started[b], take == left});
      rows.push_back(static_cast<std::int32_t>(b));
      lengths.push_back(take);
      width = std::max(width, take);
    }
    std::vector<float> values(call.size() * static_cast<std::size_t>(std::max(width, 1)) * batch.columns, 0.0f);
    for (std::size_t r = 0; r < call.size(); ++r) {
      const auto b = static_cast<std::size_t>(rows[r]);
      std::copy_n(batch.utterances[b].begin() + static_cast<std::ptrdiff_t>(done[b]) * batch.columns,
                  static_cast<std::size_t>(lengths[r]) * batch.columns,
                  values.begin() + static_cast<std::ptrdiff_t>(r) * std::max(width, 1) * batch.columns);
    }
    const DeviceBuffer<std::byte> on_device =
        device.is_cpu() ? DeviceBuffer<std::byte>() : testing::to_device(values.data(), values.size() * 4, device);
    const TensorView view(device.is_cpu() ? static_cast<const void*>(values.data()) : on_device.data(), DType::f32,
                          {static_cast<std::int64_t>(call.size()), std::max(width, 1), batch.columns}, device);
    const TensorView lens(lengths.data(), DType::i32, {static_cast<std::int64_t>(call.size())});
    const std::vector<WfstResult> out = decoder.decode_chunks(call, view, lens);
    for (std::size_t r = 0; r < call.size(); ++r) {
      const auto b = static_cast<std::size_t>(rows[r]);
      started[b] = true;
      done[b] += lengths[r];
      EXPECT_EQ(out[r].frames, done[b]);
      if (call[r].last) {
        ended[b] = true;
        streamed[b] = out[r];
      }
    }
    ++chunks;
  }
  EXPECT_EQ(decoder.open_utterances(), 0);
  return streamed;
}

// The CTC sample's first utterances as float frames [length × columns] each.
struct SampleFrames {
  std::int64_t columns = 0;
  std::vector<std::vector<float>> utterances;
};

inline std::string sample_data_dir() { return std::string(ASRDEC_SOURCE_DIR) + "/examples/data"; }

inline SampleFrames sample_frames(int count) {
  const NpyArray logprobs = read_npy(sample_data_dir() + "/ctc/logprobs.npy");
  const NpyArray lengths = read_npy(sample_data_dir() + "/ctc/lengths.npy");
  const std::int64_t frames = logprobs.shape()[1];
  SampleFrames sample;
  sample.columns = logprobs.shape()[2];
  sample.utterances.resize(static_cast<std::size_t>(count));
  const auto* values = static_cast<const half_t*>(logprobs.data());
  for (int u = 0; u < count; ++u) {
    const std::int32_t length = static_cast<const std::int32_t*>(lengths.data())[u];
    for (std::int64_t e = 0; e < length * sample.columns; ++e) {
      sample.utterances[static_cast<std::size_t>(u)].push_back(
          detail::to_float(values[u * frames * sample.columns + e]));
    }
  }
  return sample;
}

// A small real TLG: the sample lexicon cut down to the words of the first six references and a few confusable
// ones, with the sample word 3-gram.
inline detail::CtcGraph sample_ctc_graph(const CtcGraphOptions& options) {
  const std::string data = sample_data_dir();
  std::set<std::string> vocabulary;
  {
    std::ifstream refs(data + "/ctc/refs.txt");
    std::string line;
    for (int i = 0; i < 6 && std::getline(refs, line); ++i) {
      for (const std::string& word : split_words(line)) vocabulary.insert(word);
    }
  }
  for (const char* word : {"the", "and", "of", "is", "was", "a", "saints", "saint", "patient", "city"}) {
    vocabulary.insert(word);
  }
  const Lexicon full = read_lexicon(data + "/wfst/lexicon.txt");
  Lexicon lexicon;
  for (const LexiconEntry& entry : full.entries) {
    if (vocabulary.count(entry.word) != 0) lexicon.entries.push_back(entry);
  }
  const detail::TokenLabels tokens = detail::read_token_labels(data + "/tokens.txt", -1);
  return detail::make_ctc_graph(tokens, lexicon, data + "/wfst/words_3gram.arpa.gz", options);
}

// (max_active, max_tokens_per_frame) pairs that put the sample TLG under growing pressure: the histogram cut,
// then beam tightening, then (the last ones) the overflow selection. A CPU test proves that the last ones
// overflow, so that the CUDA test that compares every pair covers the overflow path.
inline std::vector<std::pair<std::int64_t, std::int64_t>> sample_pressure_limits() {
  return {{10000, 1000000}, {50, 1000000}, {7, 1000000}, {50, 200}, {7, 30}, {10000, 2}, {10000, 1}};
}

}  // namespace asrdec::wfst_testing
