// The C API (include/asrdec/c_api.h) against the C++ API it wraps: the same hypotheses on random inputs, every
// C++ exception type mapped to its status with the same message, configs honoured and versioned, NULLs refused.
// The C++ decoders are tested against the oracles; a binding must give exactly their results.

#include "asrdec/c_api.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "asrdec/asrdec.hpp"
#include "ctc/ctc_batch_generator.hpp"
#include "support/test_support.hpp"

namespace asrdec {
namespace {

/** A DLTensor over a host TensorView (strides in elements, as DLPack has them). */
struct DlView {
  std::vector<std::int64_t> shape, strides;
  DLTensor tensor{};
  explicit DlView(const TensorView& view) {
    for (int d = 0; d < view.ndim(); ++d) {
      shape.push_back(view.size(d));
      strides.push_back(view.stride(d));
    }
    tensor.data = const_cast<void*>(view.data());
    tensor.device = DLDevice{kDLCPU, 0};
    tensor.ndim = view.ndim();
    switch (view.dtype()) {
      case DType::f32:
        tensor.dtype = DLDataType{kDLFloat, 32, 1};
        break;
      case DType::f16:
        tensor.dtype = DLDataType{kDLFloat, 16, 1};
        break;
      case DType::bf16:
        tensor.dtype = DLDataType{kDLBfloat, 16, 1};
        break;
      case DType::i32:
        tensor.dtype = DLDataType{kDLInt, 32, 1};
        break;
      case DType::i64:
        tensor.dtype = DLDataType{kDLInt, 64, 1};
        break;
    }
    tensor.shape = shape.data();
    tensor.strides = strides.data();
  }
};

std::vector<std::vector<Hypothesis>> read_results(asrdec_results* results) {
  std::vector<std::vector<Hypothesis>> all;
  for (int64_t u = 0; u < asrdec_results_utterances(results); ++u) {
    all.emplace_back();
    for (int64_t k = 0; k < asrdec_results_hypotheses(results, u); ++k) {
      asrdec_hypothesis h{};
      EXPECT_EQ(asrdec_results_get(results, u, k, &h), ASRDEC_OK) << asrdec_last_error();
      Hypothesis copy;
      copy.tokens.assign(h.tokens, h.tokens + h.num_tokens);
      copy.timestamps.assign(h.timestamps, h.timestamps + h.num_tokens);
      if (h.durations != nullptr) copy.durations.assign(h.durations, h.durations + h.num_tokens);
      if (h.token_scores != nullptr) copy.token_scores.assign(h.token_scores, h.token_scores + h.num_tokens);
      copy.score = h.score;
      copy.am_score = h.am_score;
      copy.lm_score = h.lm_score;
      copy.boost_score = h.boost_score;
      copy.is_final = h.is_final != 0;
      copy.ranking_score = h.ranking_score;
      all.back().push_back(std::move(copy));
    }
  }
  asrdec_results_free(results);
  return all;
}

void expect_identical(const std::vector<std::vector<Hypothesis>>& got,
                      const std::vector<std::vector<Hypothesis>>& want) {
  ASSERT_EQ(got.size(), want.size());
  for (std::size_t u = 0; u < got.size(); ++u) {
    ASSERT_EQ(got[u].size(), want[u].size()) << "utterance " << u;
    for (std::size_t k = 0; k < got[u].size(); ++k) {
      const Hypothesis& g = got[u][k];
      const Hypothesis& w = want[u][k];
      EXPECT_EQ(g.tokens, w.tokens) << u << "/" << k;
      EXPECT_EQ(g.timestamps, w.timestamps) << u << "/" << k;
      EXPECT_EQ(g.durations, w.durations) << u << "/" << k;
      EXPECT_EQ(g.token_scores, w.token_scores) << u << "/" << k;
      EXPECT_EQ(g.score, w.score) << u << "/" << k;
      EXPECT_EQ(g.am_score, w.am_score) << u << "/" << k;
      EXPECT_EQ(g.lm_score, w.lm_score) << u << "/" << k;
      EXPECT_EQ(g.is_final, w.is_final) << u << "/" << k;
      EXPECT_EQ(g.ranking_score, w.ranking_score) << u << "/" << k;
    }
  }
}

std::vector<std::vector<Hypothesis>> one_each(std::vector<Hypothesis> hypotheses) {
  std::vector<std::vector<Hypothesis>> all;
  for (Hypothesis& h : hypotheses) all.push_back({std::move(h)});
  return all;
}

TEST(CApi, VersionsAndStatusNames) {
  EXPECT_STREQ(asrdec_version(), version());
  EXPECT_EQ(asrdec_c_api_version(), ASRDEC_C_API_VERSION);
  EXPECT_STREQ(asrdec_status_name(ASRDEC_OK), "ASRDEC_OK");
  EXPECT_STREQ(asrdec_status_name(ASRDEC_CUDA_ERROR), "ASRDEC_CUDA_ERROR");
  EXPECT_STREQ(asrdec_status_name(99), "unknown asrdec_status");
}

TEST(CApi, CtcGreedyAndBeamEqualTheCppDecodersOnRandomBatches) {
  const std::uint64_t seed = testing::test_seed();
  SCOPED_TRACE(testing::seed_message(seed));
  std::mt19937_64 rng(seed);
  for (int round = 0; round < 20; ++round) {
    const testing::CtcBatch batch = testing::random_ctc_batch(rng, round % 3 == 0 ? DType::f16 : DType::f32);
    SCOPED_TRACE("round " + std::to_string(round) + ": " + batch.layout);
    DlView logprobs(batch.logprobs());
    DlView lengths(batch.lengths());

    asrdec_ctc_greedy_config greedy_config;
    asrdec_ctc_greedy_config_init(&greedy_config);
    greedy_config.blank_id = batch.blank_config;
    asrdec_ctc_greedy_decoder* greedy = nullptr;
    ASSERT_EQ(asrdec_ctc_greedy_create("cpu", &greedy_config, &greedy), ASRDEC_OK) << asrdec_last_error();
    asrdec_results* results = nullptr;
    ASSERT_EQ(asrdec_ctc_greedy_decode(greedy, &logprobs.tensor, &lengths.tensor, nullptr, &results), ASRDEC_OK)
        << asrdec_last_error();
    CtcGreedyConfig cpp_greedy;
    cpp_greedy.blank_id = batch.blank_config;
    CtcGreedyDecoder reference(Device::cpu(), cpp_greedy);
    expect_identical(read_results(results), one_each(reference.decode(batch.logprobs(), batch.lengths())));
    asrdec_ctc_greedy_free(greedy);

    asrdec_ctc_beam_config beam_config;
    asrdec_ctc_beam_config_init(&beam_config);
    beam_config.blank_id = batch.blank_config;
    beam_config.beam = 1 + round % 6;
    asrdec_ctc_beam_decoder* beam = nullptr;
    ASSERT_EQ(asrdec_ctc_beam_create("cpu", &beam_config, &beam), ASRDEC_OK) << asrdec_last_error();
    ASSERT_EQ(asrdec_ctc_beam_decode_nbest(beam, &logprobs.tensor, &lengths.tensor, nullptr, &results), ASRDEC_OK)
        << asrdec_last_error();
    CtcBeamConfig cpp_beam;
    cpp_beam.blank_id = batch.blank_config;
    cpp_beam.beam = beam_config.beam;
    CtcBeamDecoder beam_reference(Device::cpu(), cpp_beam);
    expect_identical(read_results(results), beam_reference.decode_nbest(batch.logprobs(), batch.lengths()));
    asrdec_ctc_beam_free(beam);
  }
}

TEST(CApi, TransducerGreedyBeamAndLmEqualTheCppDecoders) {
  const std::uint64_t seed = testing::test_seed();
  SCOPED_TRACE(testing::seed_message(seed));
  std::mt19937_64 rng(seed);
  const std::string data = std::string(ASRDEC_SOURCE_DIR) + "/examples/data/";
  asrdec_transducer_model* model = nullptr;
  ASSERT_EQ(asrdec_transducer_model_load((data + "rnnt/model.safetensors").c_str(), "cpu", &model), ASRDEC_OK)
      << asrdec_last_error();
  asrdec_ngram_lm* lm = nullptr;
  asrdec_ngram_lm_options lm_options;
  asrdec_ngram_lm_options_init(&lm_options);
  lm_options.vocab_size = asrdec_transducer_model_vocab_size(model);
  ASSERT_EQ(asrdec_ngram_lm_load((data + "lm/tokens_4gram.arpa.gz").c_str(), &lm_options, "cpu", &lm), ASRDEC_OK)
      << asrdec_last_error();
  const TransducerModel cpp_model = TransducerModel::load(data + "rnnt/model.safetensors", Device::cpu());
  NgramLmOptions cpp_lm_options;
  cpp_lm_options.vocab_size = cpp_model.vocab_size();
  const auto cpp_lm =
      std::make_shared<const NgramLm>(NgramLm::load(data + "lm/tokens_4gram.arpa.gz", cpp_lm_options, Device::cpu()));

  const std::int64_t batch = 3, frames = 24, hidden = asrdec_transducer_model_joint_hidden(model);
  ASSERT_EQ(hidden, cpp_model.joint_hidden());
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::vector<float> enc(static_cast<std::size_t>(batch * frames * hidden));
  for (float& v : enc) v = normal(rng);
  std::vector<std::int64_t> lens = {frames, 0, std::uniform_int_distribution<std::int64_t>(1, frames)(rng)};
  const TensorView enc_view(enc.data(), DType::f32, {batch, frames, hidden});
  const TensorView lens_view(lens.data(), DType::i64, {batch});
  DlView enc_dl(enc_view), lens_dl(lens_view);

  for (const char* algorithm : {"label_looping", "frame_looping", "wind"}) {
    SCOPED_TRACE(algorithm);
    asrdec_transducer_greedy_config config;
    asrdec_transducer_greedy_config_init(&config);
    config.algorithm = algorithm;
    config.lm = lm;
    config.lm_weight = 0.3f;
    asrdec_transducer_greedy_decoder* decoder = nullptr;
    ASSERT_EQ(asrdec_transducer_greedy_create(model, &config, &decoder), ASRDEC_OK) << asrdec_last_error();
    asrdec_results* results = nullptr;
    ASSERT_EQ(asrdec_transducer_greedy_decode(decoder, &enc_dl.tensor, &lens_dl.tensor, nullptr, &results), ASRDEC_OK)
        << asrdec_last_error();
    TransducerGreedyConfig cpp_config;
    cpp_config.algorithm = parse_greedy_algorithm(algorithm);
    cpp_config.lm = cpp_lm;
    cpp_config.lm_weight = 0.3f;
    TransducerGreedyDecoder reference(cpp_model, cpp_config);
    expect_identical(read_results(results), one_each(reference.decode(enc_view, lens_view)));
    asrdec_transducer_greedy_free(decoder);
  }
  asrdec_transducer_beam_config beam_config;
  asrdec_transducer_beam_config_init(&beam_config);
  beam_config.algorithm = "aes++";
  beam_config.beam = 3;
  beam_config.lm = lm;
  beam_config.lm_weight = 0.5f;
  beam_config.pruning = "early";
  asrdec_transducer_beam_decoder* beam = nullptr;
  ASSERT_EQ(asrdec_transducer_beam_create(model, &beam_config, &beam), ASRDEC_OK) << asrdec_last_error();
  // Freeing the model and LM handles first is allowed: the decoder keeps what it uses.
  asrdec_transducer_model_free(model);
  asrdec_ngram_lm_free(lm);
  asrdec_results* results = nullptr;
  ASSERT_EQ(asrdec_transducer_beam_decode_nbest(beam, &enc_dl.tensor, &lens_dl.tensor, nullptr, &results), ASRDEC_OK)
      << asrdec_last_error();
  TransducerBeamConfig cpp_beam;
  cpp_beam.algorithm = TransducerBeamAlgorithm::aes;
  cpp_beam.beam = 3;
  cpp_beam.lm = cpp_lm;
  cpp_beam.lm_weight = 0.5f;
  cpp_beam.pruning = FusionPruning::early;
  TransducerBeamDecoder reference(cpp_model, cpp_beam);
  expect_identical(read_results(results), reference.decode_nbest(enc_view, lens_view));
  asrdec_transducer_beam_free(beam);
}

TEST(CApi, ExceptionsBecomeStatusesWithTheSameMessage) {
  asrdec_ctc_greedy_decoder* decoder = nullptr;
  ASSERT_EQ(asrdec_ctc_greedy_create("cpu", nullptr, &decoder), ASRDEC_OK) << asrdec_last_error();
  EXPECT_STREQ(asrdec_last_error(), "");
  asrdec_results* results = reinterpret_cast<asrdec_results*>(0x1);
  std::vector<float> values(2 * 3 * 4, -1.0f);
  std::vector<std::int32_t> lengths = {3, 9};  // 9 > T
  DlView logprobs(TensorView(values.data(), DType::f32, {2, 3, 4}));
  DlView lens(TensorView(lengths.data(), DType::i32, {2}));
  // The same call through C++ throws InvalidArgument; the C status carries its message.
  std::string cpp_message;
  try {
    CtcGreedyDecoder(Device::cpu())
        .decode(TensorView(values.data(), DType::f32, {2, 3, 4}), TensorView(lengths.data(), DType::i32, {2}));
  } catch (const InvalidArgument& e) {
    cpp_message = e.what();
  }
  ASSERT_FALSE(cpp_message.empty());
  EXPECT_EQ(asrdec_ctc_greedy_decode(decoder, &logprobs.tensor, &lens.tensor, nullptr, &results),
            ASRDEC_INVALID_ARGUMENT);
  EXPECT_EQ(results, nullptr) << "out is cleared on failure";
  EXPECT_EQ(std::string(asrdec_last_error()), cpp_message);

  EXPECT_EQ(asrdec_ctc_greedy_decode(decoder, nullptr, &lens.tensor, nullptr, &results), ASRDEC_INVALID_ARGUMENT);
  EXPECT_NE(std::string(asrdec_last_error()).find("logprobs: NULL DLTensor"), std::string::npos) << asrdec_last_error();
  logprobs.tensor.dtype = DLDataType{kDLUInt, 8, 1};
  EXPECT_EQ(asrdec_ctc_greedy_decode(decoder, &logprobs.tensor, &lens.tensor, nullptr, &results),
            ASRDEC_INVALID_ARGUMENT);
  EXPECT_NE(std::string(asrdec_last_error()).find("logprobs: DLPack dtype code"), std::string::npos);
  logprobs.tensor.dtype = DLDataType{kDLFloat, 32, 1};
  logprobs.tensor.device = DLDevice{kDLOpenCL, 0};
  EXPECT_EQ(asrdec_ctc_greedy_decode(decoder, &logprobs.tensor, &lens.tensor, nullptr, &results),
            ASRDEC_INVALID_ARGUMENT);
  EXPECT_NE(std::string(asrdec_last_error()).find("logprobs: DLPack device type 4 "), std::string::npos);
  const int foreign_type = 1000;  // what a C caller may store in the enum field
  std::memcpy(&logprobs.tensor.device.device_type, &foreign_type, sizeof foreign_type);
  EXPECT_EQ(asrdec_ctc_greedy_decode(decoder, &logprobs.tensor, &lens.tensor, nullptr, &results),
            ASRDEC_INVALID_ARGUMENT);
  EXPECT_NE(std::string(asrdec_last_error()).find("logprobs: DLPack device type 1000 "), std::string::npos);
  EXPECT_EQ(asrdec_ctc_greedy_decode(nullptr, &logprobs.tensor, &lens.tensor, nullptr, &results),
            ASRDEC_INVALID_ARGUMENT);
  EXPECT_NE(std::string(asrdec_last_error()).find("decoder: NULL handle"), std::string::npos);
  asrdec_ctc_greedy_free(decoder);

  // A file that is not an LM: the C++ ParseError, with the file named.
  const std::string path = testing::write_temp_file("c_api_not_an_lm.arpa", "this is not an ARPA file\n");
  asrdec_ngram_lm* lm = reinterpret_cast<asrdec_ngram_lm*>(0x1);
  EXPECT_EQ(asrdec_ngram_lm_load(path.c_str(), nullptr, "cpu", &lm), ASRDEC_PARSE_ERROR);
  EXPECT_EQ(lm, nullptr);
  EXPECT_NE(std::string(asrdec_last_error()).find(path), std::string::npos) << asrdec_last_error();
  // CUDA asked for where there is none, or an unknown device name.
  asrdec_ctc_beam_decoder* beam = nullptr;
  if (!cuda_info().available) {
    EXPECT_EQ(asrdec_ctc_beam_create("cuda:0", nullptr, &beam), ASRDEC_UNSUPPORTED);
  }
  EXPECT_EQ(asrdec_ctc_beam_create("tpu", nullptr, &beam), ASRDEC_INVALID_ARGUMENT);
  // A file that cannot be opened: FileError, with the file and the system's reason.
  const std::string missing = path + ".missing";
  EXPECT_EQ(asrdec_ngram_lm_load(missing.c_str(), nullptr, "cpu", &lm), ASRDEC_FILE_ERROR);
  EXPECT_NE(std::string(asrdec_last_error()).find(missing), std::string::npos) << asrdec_last_error();
  EXPECT_NE(std::string(asrdec_last_error()).find("No such file"), std::string::npos) << asrdec_last_error();
  EXPECT_EQ(asrdec_status_name(ASRDEC_FILE_ERROR), std::string("ASRDEC_FILE_ERROR"));
  // NULL and "auto" choose cuda:0 when CUDA is usable, else the CPU.
  for (const char* device : {static_cast<const char*>(nullptr), "auto"}) {
    ASSERT_EQ(asrdec_ctc_beam_create(device, nullptr, &beam), ASRDEC_OK) << asrdec_last_error();
    asrdec_ctc_beam_free(beam);
  }
  EXPECT_EQ(asrdec_status_name(ASRDEC_OK), std::string("ASRDEC_OK"));
}

TEST(CApi, ConfigsAreValidatedAndVersionedBySize) {
  asrdec_ctc_beam_config config;
  asrdec_ctc_beam_config_init(&config);
  EXPECT_EQ(config.struct_size, sizeof(asrdec_ctc_beam_config));
  EXPECT_EQ(config.beam, CtcBeamConfig{}.beam);
  asrdec_ctc_beam_decoder* decoder = nullptr;

  config.beam = 0;  // the C++ validation speaks
  EXPECT_EQ(asrdec_ctc_beam_create("cpu", &config, &decoder), ASRDEC_INVALID_ARGUMENT);
  EXPECT_NE(std::string(asrdec_last_error()).find("beam"), std::string::npos) << asrdec_last_error();

  config.beam = 5;
  config.struct_size = sizeof(asrdec_ctc_beam_config) + 8;  // from a newer header
  EXPECT_EQ(asrdec_ctc_beam_create("cpu", &config, &decoder), ASRDEC_INVALID_ARGUMENT);
  EXPECT_NE(std::string(asrdec_last_error()).find("newer asrdec"), std::string::npos) << asrdec_last_error();
  config.struct_size = 0;  // never initialised
  EXPECT_EQ(asrdec_ctc_beam_create("cpu", &config, &decoder), ASRDEC_INVALID_ARGUMENT);
  EXPECT_NE(std::string(asrdec_last_error()).find("_init"), std::string::npos) << asrdec_last_error();

  // An older, shorter struct: the fields it has are read, the rest keep their defaults.
  config.struct_size = static_cast<std::uint32_t>(offsetof(asrdec_ctc_beam_config, beam_beta));
  config.beam_threshold = -123.0f;  // past the old size: ignored
  ASSERT_EQ(asrdec_ctc_beam_create("cpu", &config, &decoder), ASRDEC_OK) << asrdec_last_error();
  asrdec_ctc_beam_free(decoder);

  asrdec_wfst_decoder_config wfst;
  asrdec_wfst_decoder_config_init(&wfst);
  wfst.use_final_probs = 2;
  asrdec_wfst_graph* graph = nullptr;
  EXPECT_EQ(asrdec_wfst_graph_load(nullptr, &graph), ASRDEC_INVALID_ARGUMENT);
  asrdec_wfst_decoder* wfst_decoder = nullptr;
  EXPECT_EQ(asrdec_wfst_decoder_create(graph, &wfst, "cpu", &wfst_decoder), ASRDEC_INVALID_ARGUMENT);
  // Freeing NULL is a no-op for every handle.
  asrdec_results_free(nullptr);
  asrdec_wfst_results_free(nullptr);
  asrdec_ngram_lm_free(nullptr);
  asrdec_boosting_tree_free(nullptr);
  asrdec_ctc_greedy_free(nullptr);
  asrdec_ctc_beam_free(nullptr);
  asrdec_transducer_model_free(nullptr);
  asrdec_transducer_greedy_free(nullptr);
  asrdec_transducer_beam_free(nullptr);
  asrdec_wfst_graph_free(nullptr);
  asrdec_wfst_decoder_free(nullptr);
}

// Streaming through the C API: on random batches cut into two chunks per utterance at random frames, every call's
// results (partial, then final) equal the C++ decoder's decode_chunks on the same rows, for CTC greedy and beam.
TEST(CApi, StreamingEqualsTheCppDecodeChunks) {
  const std::uint64_t seed = testing::test_seed();
  SCOPED_TRACE(testing::seed_message(seed));
  std::mt19937_64 rng(seed);
  for (int round = 0; round < 12; ++round) {
    const std::int64_t B = 1 + static_cast<std::int64_t>(rng() % 5), T = 1 + static_cast<std::int64_t>(rng() % 30);
    const std::int64_t C = 2 + static_cast<std::int64_t>(rng() % 12);
    std::normal_distribution<float> normal(0.0f, 2.0f);
    std::vector<float> values(static_cast<std::size_t>(B * T * C));
    for (float& v : values) v = normal(rng);
    // Utterance b has lengths[b] frames, cut at cut[b]: chunk 1 is frames [0, cut), chunk 2 [cut, length).
    std::vector<std::int32_t> lengths(B), cut(B), first_lengths(B), second_lengths(B);
    std::vector<float> second(values.size());
    for (std::int64_t b = 0; b < B; ++b) {
      lengths[b] = static_cast<std::int32_t>(rng() % (T + 1));
      cut[b] = static_cast<std::int32_t>(rng() % (lengths[b] + 1));
      first_lengths[b] = cut[b];
      second_lengths[b] = lengths[b] - cut[b];
      std::copy(values.begin() + (b * T + cut[b]) * C, values.begin() + (b * T + lengths[b]) * C,
                second.begin() + b * T * C);
    }
    std::vector<asrdec_chunk_row> c_rows_1, c_rows_2;
    std::vector<ChunkRow> rows_1, rows_2;
    for (std::int64_t b = 0; b < B; ++b) {
      const std::int64_t id = 1000 + 7 * b;
      c_rows_1.push_back({id, 1, 0, 0});
      c_rows_2.push_back({id, 0, 1, 0});
      rows_1.push_back({id, true, false, 0});
      rows_2.push_back({id, false, true, 0});
    }
    const TensorView chunk_1(values.data(), DType::f32, {B, T, C}), chunk_2(second.data(), DType::f32, {B, T, C});
    const TensorView lens_1(first_lengths.data(), DType::i32, {B}), lens_2(second_lengths.data(), DType::i32, {B});
    DlView dl_chunk_1(chunk_1), dl_chunk_2(chunk_2), dl_lens_1(lens_1), dl_lens_2(lens_2);
    SCOPED_TRACE("round " + std::to_string(round));

    CtcGreedyDecoder greedy_reference(Device::cpu());
    asrdec_ctc_greedy_decoder* greedy = nullptr;
    ASSERT_EQ(asrdec_ctc_greedy_create("cpu", nullptr, &greedy), ASRDEC_OK) << asrdec_last_error();
    asrdec_results* results = nullptr;
    ASSERT_EQ(asrdec_ctc_greedy_decode_chunks(greedy, c_rows_1.data(), B, &dl_chunk_1.tensor, &dl_lens_1.tensor,
                                              nullptr, &results),
              ASRDEC_OK)
        << asrdec_last_error();
    expect_identical(read_results(results), one_each(greedy_reference.decode_chunks(rows_1, chunk_1, lens_1)));
    EXPECT_EQ(asrdec_ctc_greedy_open_utterances(greedy), B);
    ASSERT_EQ(asrdec_ctc_greedy_decode_chunks(greedy, c_rows_2.data(), B, &dl_chunk_2.tensor, &dl_lens_2.tensor,
                                              nullptr, &results),
              ASRDEC_OK)
        << asrdec_last_error();
    expect_identical(read_results(results), one_each(greedy_reference.decode_chunks(rows_2, chunk_2, lens_2)));
    EXPECT_EQ(asrdec_ctc_greedy_open_utterances(greedy), 0);
    asrdec_ctc_greedy_free(greedy);

    asrdec_ctc_beam_config beam_config;
    asrdec_ctc_beam_config_init(&beam_config);
    beam_config.beam = 1 + round % 4;
    beam_config.threads = 1 + round % 3;
    CtcBeamConfig cpp_beam;
    cpp_beam.beam = beam_config.beam;
    CtcBeamDecoder beam_reference(Device::cpu(), cpp_beam);
    asrdec_ctc_beam_decoder* beam = nullptr;
    ASSERT_EQ(asrdec_ctc_beam_create("cpu", &beam_config, &beam), ASRDEC_OK) << asrdec_last_error();
    ASSERT_EQ(asrdec_ctc_beam_decode_chunks(beam, c_rows_1.data(), B, &dl_chunk_1.tensor, &dl_lens_1.tensor, nullptr,
                                            &results),
              ASRDEC_OK)
        << asrdec_last_error();
    expect_identical(read_results(results), one_each(beam_reference.decode_chunks(rows_1, chunk_1, lens_1)));
    ASSERT_EQ(asrdec_ctc_beam_decode_chunks(beam, c_rows_2.data(), B, &dl_chunk_2.tensor, &dl_lens_2.tensor, nullptr,
                                            &results),
              ASRDEC_OK)
        << asrdec_last_error();
    expect_identical(read_results(results), one_each(beam_reference.decode_chunks(rows_2, chunk_2, lens_2)));
    asrdec_ctc_beam_free(beam);
  }
}

// Misuse of the streaming calls, the limits and the new config fields: a status and the C++ message, never a crash.
TEST(CApi, StreamingLimitsAndThreadsAreChecked) {
  std::vector<float> values(2 * 3 * 4, -1.0f);
  std::vector<std::int32_t> lengths = {3, 2};
  DlView logprobs(TensorView(values.data(), DType::f32, {2, 3, 4}));
  DlView lens(TensorView(lengths.data(), DType::i32, {2}));
  asrdec_ctc_greedy_config config;
  asrdec_ctc_greedy_config_init(&config);
  EXPECT_EQ(config.max_batch, BatchLimits{}.max_batch);
  EXPECT_EQ(config.max_open_utterances, BatchLimits{}.max_open_utterances);
  EXPECT_EQ(config.threads, 0);
  config.max_open_utterances = 1;
  asrdec_ctc_greedy_decoder* decoder = nullptr;
  ASSERT_EQ(asrdec_ctc_greedy_create("cpu", &config, &decoder), ASRDEC_OK) << asrdec_last_error();
  asrdec_results* results = reinterpret_cast<asrdec_results*>(0x1);
  const asrdec_chunk_row two_new[2] = {{5, 1, 0, 0}, {6, 1, 0, 0}};
  EXPECT_EQ(asrdec_ctc_greedy_decode_chunks(decoder, nullptr, 2, &logprobs.tensor, &lens.tensor, nullptr, &results),
            ASRDEC_INVALID_ARGUMENT);
  EXPECT_EQ(results, nullptr);
  EXPECT_NE(std::string(asrdec_last_error()).find("rows: NULL with num_rows = 2"), std::string::npos)
      << asrdec_last_error();
  const asrdec_chunk_row bad_flag[2] = {{5, 2, 0, 0}, {6, 1, 0, 0}};
  EXPECT_EQ(asrdec_ctc_greedy_decode_chunks(decoder, bad_flag, 2, &logprobs.tensor, &lens.tensor, nullptr, &results),
            ASRDEC_INVALID_ARGUMENT);
  EXPECT_NE(std::string(asrdec_last_error()).find("rows[0].first = 2: expected 0 or 1"), std::string::npos)
      << asrdec_last_error();
  EXPECT_EQ(asrdec_ctc_greedy_decode_chunks(decoder, two_new, 2, &logprobs.tensor, &lens.tensor, nullptr, &results),
            ASRDEC_OUT_OF_MEMORY);
  EXPECT_NE(std::string(asrdec_last_error()).find("max_open_utterances"), std::string::npos) << asrdec_last_error();
  const asrdec_chunk_row continuing[1] = {{42, 0, 0, 0}};
  DlView one(TensorView(values.data(), DType::f32, {1, 3, 4}));
  DlView one_length(TensorView(lengths.data(), DType::i32, {1}));
  EXPECT_EQ(asrdec_ctc_greedy_decode_chunks(decoder, continuing, 1, &one.tensor, &one_length.tensor, nullptr, &results),
            ASRDEC_INVALID_ARGUMENT);
  EXPECT_NE(std::string(asrdec_last_error()).find("42"), std::string::npos) << asrdec_last_error();
  EXPECT_EQ(asrdec_ctc_greedy_open_utterances(decoder), 0);  // a call that throws changes no utterance
  ASSERT_EQ(asrdec_ctc_greedy_decode_chunks(decoder, two_new, 1, &one.tensor, &one_length.tensor, nullptr, &results),
            ASRDEC_OK)
      << asrdec_last_error();
  const float* confidences = reinterpret_cast<const float*>(0x1);
  EXPECT_EQ(asrdec_results_token_confidences(results, 0, 0, &confidences), ASRDEC_OK);
  asrdec_hypothesis got{};
  ASSERT_EQ(asrdec_results_get(results, 0, 0, &got), ASRDEC_OK);
  if (got.num_tokens == 0) {
    EXPECT_EQ(confidences, nullptr);  // no tokens, no values
  } else {
    ASSERT_NE(confidences, nullptr);
    for (std::int64_t i = 0; i < got.num_tokens; ++i) EXPECT_FLOAT_EQ(confidences[i], std::exp(got.token_scores[i]));
  }
  EXPECT_EQ(asrdec_results_token_confidences(results, 0, 1, &confidences), ASRDEC_INVALID_ARGUMENT);
  EXPECT_NE(std::string(asrdec_last_error()).find("k = 1 is outside [0, 1)"), std::string::npos);
  asrdec_results_free(results);
  EXPECT_EQ(asrdec_ctc_greedy_open_utterances(decoder), 1);
  std::int32_t was_open = -1;
  EXPECT_EQ(asrdec_ctc_greedy_cancel(decoder, 6, &was_open), ASRDEC_OK);
  EXPECT_EQ(was_open, 0);
  EXPECT_EQ(asrdec_ctc_greedy_cancel(decoder, 5, &was_open), ASRDEC_OK);
  EXPECT_EQ(was_open, 1);
  EXPECT_EQ(asrdec_ctc_greedy_cancel(decoder, 5, nullptr), ASRDEC_OK);
  EXPECT_EQ(asrdec_ctc_greedy_open_utterances(decoder), 0);
  EXPECT_EQ(asrdec_ctc_greedy_cancel(nullptr, 5, &was_open), ASRDEC_INVALID_ARGUMENT);
  EXPECT_EQ(asrdec_ctc_greedy_open_utterances(nullptr), 0);
  asrdec_ctc_greedy_free(decoder);

  config.threads = 5000;
  EXPECT_EQ(asrdec_ctc_greedy_create("cpu", &config, &decoder), ASRDEC_INVALID_ARGUMENT);
  EXPECT_NE(std::string(asrdec_last_error()).find("threads"), std::string::npos) << asrdec_last_error();
  config.threads = 0;
  config.max_batch = 0;
  EXPECT_EQ(asrdec_ctc_greedy_create("cpu", &config, &decoder), ASRDEC_INVALID_ARGUMENT);
  EXPECT_NE(std::string(asrdec_last_error()).find("max_batch"), std::string::npos) << asrdec_last_error();
  // A version-1 struct: it ends where the limits begin (its size covers its tail padding, which must hold none of the
  // new fields), and the defaults apply. Garbage in that padding changes nothing.
  asrdec_ctc_greedy_config_init(&config);
  config.struct_size = static_cast<std::uint32_t>(offsetof(asrdec_ctc_greedy_config, max_batch));
  const std::size_t padding = offsetof(asrdec_ctc_greedy_config, boost_weight) + sizeof(float);
  std::memset(reinterpret_cast<char*>(&config) + padding, 0xff, config.struct_size - padding);
  ASSERT_EQ(asrdec_ctc_greedy_create("cpu", &config, &decoder), ASRDEC_OK) << asrdec_last_error();
  asrdec_ctc_greedy_free(decoder);
  static_assert(offsetof(asrdec_transducer_greedy_config, max_batch) % 8 == 0 &&
                    offsetof(asrdec_transducer_beam_config, max_batch) % 8 == 0,
                "the version-2 fields start on 8 bytes, after the version-1 struct's padding");

  EXPECT_EQ(asrdec_cpu_threads(), cpu_threads());
  EXPECT_EQ(asrdec_set_cpu_threads(asrdec_cpu_threads()), ASRDEC_OK);
  EXPECT_EQ(asrdec_set_cpu_threads(asrdec_cpu_threads() + 1), ASRDEC_INVALID_ARGUMENT);
  EXPECT_NE(std::string(asrdec_last_error()).find("already runs with"), std::string::npos) << asrdec_last_error();

  asrdec_wfst_decoder_config wfst;
  asrdec_wfst_decoder_config_init(&wfst);
  EXPECT_EQ(wfst.max_open_utterances, WfstDecoderConfig{}.max_open_utterances);
  EXPECT_EQ(asrdec_wfst_open_utterances(nullptr), 0);
  EXPECT_EQ(asrdec_wfst_cancel(nullptr, 1, nullptr), ASRDEC_INVALID_ARGUMENT);
}

TEST(CApi, BoostingTreeFromTokenArraysBoostsLikeTheCppTree) {
  const std::uint64_t seed = testing::test_seed();
  SCOPED_TRACE(testing::seed_message(seed));
  std::mt19937_64 rng(seed);
  const std::vector<std::int32_t> tokens = {1, 2, 3, 4, 4, 0};
  const std::vector<std::int64_t> phrase_lengths = {3, 1, 2};
  asrdec_boosting_tree* tree = nullptr;
  ASSERT_EQ(asrdec_boosting_tree_build(tokens.data(), phrase_lengths.data(), 3, 8, nullptr, "cpu", &tree), ASRDEC_OK)
      << asrdec_last_error();
  CtcGreedyConfig cpp_config;
  cpp_config.boost = std::make_shared<const BoostingTree>(BoostingTree::build({PhraseList{{1, 2, 3}, {4}, {4, 0}}}, 8));
  cpp_config.boost_weight = 2.0f;
  asrdec_ctc_greedy_config config;
  asrdec_ctc_greedy_config_init(&config);
  config.boost = tree;
  config.boost_weight = 2.0f;
  asrdec_ctc_greedy_decoder* decoder = nullptr;
  ASSERT_EQ(asrdec_ctc_greedy_create("cpu", &config, &decoder), ASRDEC_OK) << asrdec_last_error();
  asrdec_boosting_tree_free(tree);  // the decoder keeps it
  // Flat random frames over 8 tokens + blank, so that the boost decides many of them.
  std::vector<float> values(3 * 30 * 9);
  std::uniform_real_distribution<float> uniform(-3.0f, -1.0f);
  for (float& v : values) v = uniform(rng);
  std::vector<std::int32_t> lengths = {30, 17, 0};
  const TensorView logprobs(values.data(), DType::f32, {3, 30, 9});
  const TensorView lens(lengths.data(), DType::i32, {3});
  DlView logprobs_dl(logprobs), lens_dl(lens);
  asrdec_results* results = nullptr;
  ASSERT_EQ(asrdec_ctc_greedy_decode(decoder, &logprobs_dl.tensor, &lens_dl.tensor, nullptr, &results), ASRDEC_OK)
      << asrdec_last_error();
  const auto got = read_results(results);
  expect_identical(got, one_each(CtcGreedyDecoder(Device::cpu(), cpp_config).decode(logprobs, lens)));
  CtcGreedyConfig unboosted;
  const auto plain = one_each(CtcGreedyDecoder(Device::cpu(), unboosted).decode(logprobs, lens));
  EXPECT_NE(got[0][0].tokens, plain[0][0].tokens) << "the boost changed nothing: the test would not see a lost tree";
  asrdec_ctc_greedy_free(decoder);

  const std::int64_t bad_lengths[] = {-1};
  EXPECT_EQ(asrdec_boosting_tree_build(tokens.data(), bad_lengths, 1, 8, nullptr, "cpu", &tree),
            ASRDEC_INVALID_ARGUMENT);
  EXPECT_NE(std::string(asrdec_last_error()).find("phrase_lengths[0] = -1"), std::string::npos);
  const std::int32_t out_of_vocabulary[] = {9};
  const std::int64_t one[] = {1};
  EXPECT_EQ(asrdec_boosting_tree_build(out_of_vocabulary, one, 1, 8, nullptr, "cpu", &tree), ASRDEC_INVALID_ARGUMENT)
      << "token 9 of a vocabulary of 8";
}

}  // namespace
}  // namespace asrdec
