// The results table (docs/results.md) holds for every decoder, on the CPU and on CUDA: the same fields mean the same
// thing whichever decoder filled them. Checked on the shipped samples (with the sample LM where a decoder fuses one),
// plus the cross-decoder identities the table promises: ALSD++ with beam 1 finds greedy decoding's path, token scores
// and score, and TDT beam search stamps tokens on the frame greedy decoding does.

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "asrdec/asrdec.hpp"
#include "support/test_support.hpp"

namespace asrdec {
namespace {

struct Sample {
  NpyArray input;    // CTC log-probabilities or transducer enc_proj
  NpyArray lengths;  // int32 [B]
  DeviceBuffer<std::byte> on_device;
  TensorView view;
  std::int32_t length(std::size_t b) const { return static_cast<const std::int32_t*>(lengths.data())[b]; }
};

Sample load_sample(const std::string& name, const std::string& file, Device device) {
  const std::string dir = testing::source_path("examples/data/" + name + "/");
  Sample s{read_npy(dir + file), read_npy(dir + "lengths.npy"), {}, {}};
  const auto& shape = s.input.shape();
  s.view = s.input.view();
  if (device.is_cuda()) {
    s.on_device = testing::to_device(s.input.data(), s.input.bytes(), device);
    s.view = TensorView(s.on_device.data(), s.input.dtype(), {shape[0], shape[1], shape[2]}, device);
  }
  return s;
}

std::shared_ptr<const NgramLm> sample_lm(Device device) {
  NgramLmOptions options;
  options.vocabulary = LmVocabularyKind::token_level;
  options.vocab_size = 256;
  return std::make_shared<const NgramLm>(
      NgramLm::load(testing::source_path("examples/data/lm/tokens_4gram.arpa.gz"), options, device));
}

enum class Kind { ctc_greedy, ctc_beam, rnnt_greedy, tdt_greedy, rnnt_beam, tdt_beam };

// One row of the table, for one hypothesis of an utterance of `length` frames.
void expect_row_holds(const Hypothesis& h, std::int32_t length, Kind kind, bool length_normalized,
                      const std::string& what) {
  SCOPED_TRACE(what);
  const bool beam = kind == Kind::ctc_beam || kind == Kind::rnnt_beam || kind == Kind::tdt_beam;
  const bool tdt = kind == Kind::tdt_greedy || kind == Kind::tdt_beam;
  ASSERT_EQ(h.timestamps.size(), h.tokens.size());
  EXPECT_EQ(h.durations.size(), tdt ? h.tokens.size() : 0u);
  for (std::size_t i = 0; i < h.timestamps.size(); ++i) {
    EXPECT_GE(h.timestamps[i], 0);
    EXPECT_LT(h.timestamps[i], length) << "a timestamp is a frame of the utterance";
    if (i > 0) {
      EXPECT_LE(h.timestamps[i - 1], h.timestamps[i]);
    }
  }
  // token_scores: per-token log-probabilities (beam search: along the hypothesis' own path); token_confidences:
  // their probabilities (the default measure).
  ASSERT_EQ(h.token_scores.size(), h.tokens.size());
  for (const float s : h.token_scores) EXPECT_LE(s, 1e-6f) << "a log-probability";
  ASSERT_EQ(h.token_confidences.size(), h.tokens.size());
  for (std::size_t i = 0; i < h.tokens.size(); ++i) {
    EXPECT_NEAR(h.token_confidences[i], std::exp(h.token_scores[i]), 1e-5);
  }
  // score: a log-probability, split into its parts; the acoustic part is at most 0 (no insertion bonus is used).
  EXPECT_TRUE(std::isfinite(h.score));
  EXPECT_NEAR(h.score, h.am_score + h.lm_score + h.boost_score, 1e-3 * (1.0 + std::fabs(h.score)));
  EXPECT_LE(h.am_score, 1e-4f);
  EXPECT_LE(h.lm_score, 1e-4f);
  if (!beam) {
    double sum = 0.0;
    for (const float s : h.token_scores) sum += s;
    EXPECT_LE(h.am_score, sum + 1e-3 * (1.0 + std::fabs(sum))) << "the path includes every token's log-probability";
  }
  const float ranking = length_normalized ? h.score / static_cast<float>(h.tokens.size() + 1) : h.score;
  EXPECT_NEAR(h.ranking_score, ranking, 1e-5 * (1.0 + std::fabs(ranking)));
  EXPECT_TRUE(h.is_final);
}

void expect_list_holds(const std::vector<Hypothesis>& nbest, std::int32_t length, Kind kind, bool length_normalized,
                       const std::string& what) {
  std::set<std::vector<std::int32_t>> transcripts;
  for (std::size_t i = 0; i < nbest.size(); ++i) {
    expect_row_holds(nbest[i], length, kind, length_normalized, what + ", hypothesis " + std::to_string(i));
    EXPECT_TRUE(transcripts.insert(nbest[i].tokens).second) << what << ": transcripts are unique";
    if (i > 0) {
      EXPECT_GE(nbest[i - 1].ranking_score, nbest[i].ranking_score) << what << ": sorted by ranking_score";
    }
  }
}

class ResultsTable : public ::testing::TestWithParam<bool> {
 protected:
  void SetUp() override {
    if (GetParam()) ASRDEC_SKIP_WITHOUT_CUDA();
  }
  Device device() const { return GetParam() ? Device::cuda(0) : Device::cpu(); }
  void check_ctc_sample(const std::string& name);
};

TEST_P(ResultsTable, CtcDecodersFillEveryFieldAsTheTableSays) {
  for (const std::string name : {"ctc", "real"}) {
    SCOPED_TRACE(name);
    check_ctc_sample(name);
  }
}

void ResultsTable::check_ctc_sample(const std::string& name) {
  const Sample s = load_sample(name, "logprobs.npy", device());
  const auto lm = sample_lm(device());
  CtcGreedyConfig greedy_config;
  greedy_config.lm = lm;
  greedy_config.lm_weight = 0.3f;
  for (const bool fused : {false, true}) {
    CtcGreedyDecoder greedy(device(), fused ? greedy_config : CtcGreedyConfig{});
    const auto hyps = greedy.decode(s.view, s.lengths.view());
    for (std::size_t b = 0; b < hyps.size(); ++b) {
      expect_row_holds(hyps[b], s.length(b), Kind::ctc_greedy, false, "ctc greedy " + std::to_string(b));
    }
  }
  CtcBeamConfig beam_config;
  beam_config.beam = 8;
  beam_config.lm = lm;
  beam_config.lm_weight = 0.5f;
  CtcBeamDecoder beam(device(), beam_config);
  const auto lists = beam.decode_nbest(s.view, s.lengths.view());
  for (std::size_t b = 0; b < lists.size(); ++b) {
    ASSERT_FALSE(lists[b].empty());
    expect_list_holds(lists[b], s.length(b), Kind::ctc_beam, false, "ctc beam " + std::to_string(b));
  }
}

TEST_P(ResultsTable, TransducerDecodersFillEveryFieldAsTheTableSays) {
  const auto lm = sample_lm(device());
  for (const std::string name : {"rnnt", "tdt", "real"}) {
    const bool tdt = name == "tdt";
    const Sample s = load_sample(name, "enc_proj.npy", device());
    const TransducerModel model =
        TransducerModel::load(testing::source_path("examples/data/" + name + "/model.safetensors"), device());
    std::vector<TransducerGreedyAlgorithm> greedy_algorithms = {TransducerGreedyAlgorithm::frame_looping,
                                                                TransducerGreedyAlgorithm::label_looping};
    if (!tdt) greedy_algorithms.push_back(TransducerGreedyAlgorithm::wind);
    for (const auto algorithm : greedy_algorithms) {
      TransducerGreedyConfig config;
      config.algorithm = algorithm;
      config.lm = lm;
      config.lm_weight = 0.3f;
      TransducerGreedyDecoder decoder(model, config);
      const auto hyps = decoder.decode(s.view, s.lengths.view());
      for (std::size_t b = 0; b < hyps.size(); ++b) {
        expect_row_holds(hyps[b], s.length(b), tdt ? Kind::tdt_greedy : Kind::rnnt_greedy, false,
                         name + " " + to_string(algorithm) + " " + std::to_string(b));
      }
    }
    std::vector<TransducerBeamAlgorithm> beam_algorithms = {TransducerBeamAlgorithm::alsd};
    if (!tdt) {
      beam_algorithms.push_back(TransducerBeamAlgorithm::aes);
      beam_algorithms.push_back(TransducerBeamAlgorithm::wind);
    }
    for (const auto algorithm : beam_algorithms) {
      for (const bool length_normalized : {true, false}) {
        TransducerBeamConfig config;
        config.algorithm = algorithm;
        config.beam = 4;
        config.length_normalized = length_normalized;
        config.lm = lm;
        config.lm_weight = 0.3f;
        TransducerBeamDecoder decoder(model, config);
        const auto lists = decoder.decode_nbest(s.view, s.lengths.view());
        for (std::size_t b = 0; b < lists.size(); ++b) {
          ASSERT_FALSE(lists[b].empty());
          expect_list_holds(lists[b], s.length(b), tdt ? Kind::tdt_beam : Kind::rnnt_beam, length_normalized,
                            name + " " + config.to_string() + " " + std::to_string(b));
        }
      }
    }
  }
}

// Beam 1 (ALSD++) is greedy decoding: same tokens, timestamps, durations, token scores and the same path
// log-probability. Beam 4 on the simulated samples, whose planted paths leave no rival alignment: wherever its best
// transcript equals greedy's, so do its timestamps (one convention for both). A trained model's beam may prefer
// another alignment of the same transcript (the real sample), so that part is not checked there.
TEST_P(ResultsTable, BeamSearchUsesGreedysTimestampsAndScores) {
  for (const std::string name : {"rnnt", "tdt", "real"}) {
    SCOPED_TRACE(name);
    const Sample s = load_sample(name, "enc_proj.npy", device());
    const TransducerModel model =
        TransducerModel::load(testing::source_path("examples/data/" + name + "/model.safetensors"), device());
    TransducerGreedyDecoder greedy(model);
    const auto want = greedy.decode(s.view, s.lengths.view());
    TransducerBeamConfig config;
    config.beam = 1;
    config.length_normalized = false;
    TransducerBeamDecoder beam1(model, config);
    const auto got = beam1.decode(s.view, s.lengths.view());
    ASSERT_EQ(got.size(), want.size());
    for (std::size_t b = 0; b < want.size(); ++b) {
      SCOPED_TRACE("utterance " + std::to_string(b));
      EXPECT_EQ(got[b].tokens, want[b].tokens);
      EXPECT_EQ(got[b].timestamps, want[b].timestamps);
      EXPECT_EQ(got[b].durations, want[b].durations);
      // The blank forced after max_symbols tokens on a frame adds nothing to greedy decoding's score and its
      // log-probability to beam search's (docs/results.md); elsewhere the scores agree.
      std::map<std::int32_t, int> per_frame;
      for (const std::int32_t t : want[b].timestamps) ++per_frame[t];
      const bool forced = std::any_of(per_frame.begin(), per_frame.end(), [](const auto& f) {
        return f.second >= TransducerBeamConfig{}.max_symbols_per_frame;
      });
      if (forced) {
        EXPECT_LE(got[b].score, want[b].score + 1e-4 * (1.0 + std::fabs(want[b].score)));
      } else {
        EXPECT_NEAR(got[b].score, want[b].score, 1e-4 * (1.0 + std::fabs(want[b].score)));
      }
      ASSERT_EQ(got[b].token_scores.size(), want[b].token_scores.size());
      for (std::size_t i = 0; i < want[b].token_scores.size(); ++i) {
        EXPECT_NEAR(got[b].token_scores[i], want[b].token_scores[i], 1e-4 * (1.0 + std::fabs(want[b].token_scores[i])));
      }
    }
    if (name == "real") continue;
    config.beam = 4;
    TransducerBeamDecoder beam4(model, config);
    const auto wider = beam4.decode(s.view, s.lengths.view());
    int same_tokens = 0;
    for (std::size_t b = 0; b < want.size(); ++b) {
      if (wider[b].tokens != want[b].tokens) continue;
      ++same_tokens;
      EXPECT_EQ(wider[b].timestamps, want[b].timestamps) << "utterance " << b;
    }
    EXPECT_GT(same_tokens, 10);
    std::printf("%s: beam 4 keeps greedy's transcript on %d of %zu utterances\n", name.c_str(), same_tokens,
                want.size());
  }
}

// Without unique_transcripts the TDT search's lists repeat transcripts (hypotheses on different frames); with it
// (the default) each transcript appears once, at its best rank.
TEST(NbestLists, TdtListsHoldUniqueTranscriptsByDefault) {
  const Sample s = load_sample("tdt", "enc_proj.npy", Device::cpu());
  const TransducerModel model =
      TransducerModel::load(testing::source_path("examples/data/tdt/model.safetensors"), Device::cpu());
  TransducerBeamConfig config;
  config.beam = 8;
  config.lm = sample_lm(Device::cpu());
  config.lm_weight = 0.3f;
  config.unique_transcripts = false;
  const auto raw = TransducerBeamDecoder(model, config).decode_nbest(s.view, s.lengths.view());
  config.unique_transcripts = true;
  const auto unique = TransducerBeamDecoder(model, config).decode_nbest(s.view, s.lengths.view());
  int repeating = 0;
  for (std::size_t b = 0; b < raw.size(); ++b) {
    std::vector<Hypothesis> expected;
    for (const Hypothesis& h : raw[b]) {
      bool seen = false;
      for (const Hypothesis& e : expected) seen = seen || e.tokens == h.tokens;
      if (!seen) expected.push_back(h);
    }
    repeating += expected.size() < raw[b].size() ? 1 : 0;
    ASSERT_EQ(unique[b].size(), expected.size()) << b;
    for (std::size_t i = 0; i < expected.size(); ++i) {
      EXPECT_EQ(unique[b][i].tokens, expected[i].tokens);
      EXPECT_EQ(unique[b][i].score, expected[i].score);
    }
  }
  EXPECT_GT(repeating, 0) << "the sample should show repeated transcripts without the option";
  std::printf("%d of %zu utterances' raw lists repeat a transcript\n", repeating, raw.size());
}

TEST(TokenEndFrames, AddTdtDurations) {
  Hypothesis h;
  h.tokens = {5, 6, 7};
  h.timestamps = {0, 0, 4};
  EXPECT_EQ(token_end_frames(h), (std::vector<std::int32_t>{1, 1, 5}));
  h.durations = {0, 3, 2};
  EXPECT_EQ(token_end_frames(h), (std::vector<std::int32_t>{0, 3, 6}));
}

INSTANTIATE_TEST_SUITE_P(Devices, ResultsTable, ::testing::Values(false, true),
                         [](const ::testing::TestParamInfo<bool>& info) { return info.param ? "CUDA" : "cpu"; });

}  // namespace
}  // namespace asrdec
