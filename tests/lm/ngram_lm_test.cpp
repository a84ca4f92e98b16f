#include <cstring>
#include <fstream>

#include "lm/arpa_oracle.hpp"
#include "support/test_support.hpp"

namespace asrdec {
namespace {

std::string arpa(const std::string& name) { return testing::source_path("tests/data/arpa/" + name); }

NgramLmOptions tokens(std::int64_t vocab) {
  NgramLmOptions options;
  options.vocab_size = vocab;
  return options;
}

NgramLmOptions words() {
  NgramLmOptions options;
  options.vocabulary = LmVocabularyKind::arpa_words;
  return options;
}

struct Row {
  std::vector<float> scores;
  std::vector<std::int32_t> next;
};

Row row_of(const NgramLm& lm, std::int32_t state) {
  Row row{std::vector<float>(static_cast<std::size_t>(lm.vocab_size())),
          std::vector<std::int32_t>(static_cast<std::size_t>(lm.vocab_size()))};
  lm.advance(&state, 1, row.scores.data(), row.next.data());
  return row;
}

// Random walks through the model: at every step the whole row of scores must equal the oracle's per-token scores;
// then a token (listed or not) is taken; sentences end at random, checking p(</s> | context).
std::int64_t walk_against_oracle(const NgramLm& lm, const testing::ArpaOracle& oracle, std::int64_t steps,
                                 std::mt19937_64& rng, std::int64_t full_row_every = 1) {
  std::int32_t state = NgramLm::bos_state();
  std::vector<std::string> history = {"<s>"};
  std::int64_t compared = 0;
  for (std::int64_t step = 0; step < steps; ++step) {
    const Row row = row_of(lm, state);
    const auto sampled = static_cast<std::int32_t>(rng() % static_cast<std::uint64_t>(lm.vocab_size()));
    for (std::int32_t token = 0; token < lm.vocab_size(); ++token) {
      // On large vocabularies the whole row is compared every few steps; the token taken, always.
      if (step % full_row_every != 0 && token != sampled) continue;
      const double want = testing::ArpaOracle::ln(oracle.score_log10(history, lm.symbol_of(token)));
      const float got = row.scores[static_cast<std::size_t>(token)];
      if (std::fabs(got - want) > 1e-5 + 1e-5 * std::fabs(want)) {
        std::string context;
        for (const auto& w : history) context += w + " ";
        ADD_FAILURE() << "step " << step << ": p(" << lm.symbol_of(token) << " | " << context << ") = " << got
                      << ", the oracle says " << want;
        return compared;
      }
      const auto single = lm.score(state, token);
      EXPECT_EQ(single.first, got);
      EXPECT_EQ(single.second, row.next[static_cast<std::size_t>(token)]);
      ++compared;
    }
    if (std::uniform_real_distribution<double>(0, 1)(rng) < 0.06) {
      const double want = testing::ArpaOracle::ln(oracle.score_log10(history, "</s>"));
      EXPECT_NEAR(lm.final_score(state), want, 1e-5 + 1e-5 * std::fabs(want)) << "step " << step;
      const bool bos = std::uniform_real_distribution<double>(0, 1)(rng) < 0.7;
      state = lm.initial_state(bos);
      history = bos ? std::vector<std::string>{"<s>"} : std::vector<std::string>{};
      continue;
    }
    state = row.next[static_cast<std::size_t>(sampled)];
    history.push_back(oracle.canonical(lm.symbol_of(sampled)));
    if (static_cast<int>(history.size()) > oracle.order()) history.erase(history.begin());
  }
  return compared;
}

struct Fixture {
  const char* file;
  NgramLmOptions options;
};

TEST(NgramLm, ScoresEqualKenLmRulesOnRandomWalks) {
  const std::uint64_t seed = testing::test_seed();
  SCOPED_TRACE(testing::seed_message(seed));
  std::mt19937_64 rng(seed);
  const std::vector<Fixture> fixtures = {{"tokens_3gram.arpa", tokens(8)},
                                         {"tokens_3gram_no_unk.arpa", tokens(8)},
                                         {"tokens_4gram.arpa", tokens(8)},
                                         {"tokens_1gram.arpa", tokens(5)},
                                         {"words_3gram.arpa", words()}};
  for (const Fixture& fixture : fixtures) {
    SCOPED_TRACE(fixture.file);
    const NgramLm lm = NgramLm::load(arpa(fixture.file), fixture.options);
    const testing::ArpaOracle oracle(arpa(fixture.file));
    const std::int64_t compared = walk_against_oracle(lm, oracle, 10000, rng);
    EXPECT_GE(compared, 10000 * lm.vocab_size() * 9 / 10);
  }
}

// Real models built with IRSTLM from text (tools/sample_data/lm.py): a token-level 6-gram over V = 1024 and a
// word-level 3-gram, 10k-step walks each.
TEST(NgramLm, ScoresEqualKenLmRulesOnModelsBuiltFromText) {
  const std::uint64_t seed = testing::test_seed();
  SCOPED_TRACE(testing::seed_message(seed));
  std::mt19937_64 rng(seed);
  {
    const std::string path = arpa("kjv_tokens_6gram_v1024.arpa.gz");
    const NgramLm lm = NgramLm::load(path, tokens(1024));
    EXPECT_EQ(lm.order(), 6);
    EXPECT_GE(walk_against_oracle(lm, testing::ArpaOracle(path), 10000, rng, 16), 10000);
  }
  {
    const std::string path = arpa("kjv_words_3gram.arpa.gz");
    const NgramLm lm = NgramLm::load(path, words());
    EXPECT_GE(walk_against_oracle(lm, testing::ArpaOracle(path), 10000, rng, 16), 10000);
  }
}

TEST(NgramLm, StructureFollowsTheSuffixTreeLayout) {
  const NgramLm lm = NgramLm::load(arpa("tokens_3gram.arpa"), tokens(8));
  EXPECT_EQ(lm.order(), 3);
  EXPECT_EQ(lm.vocab_size(), 8);
  const NgramLmRef r = lm.ref();
  // START holds every label 0..V (V = <unk>) in order.
  ASSERT_EQ(r.arc_begin[1] - r.arc_begin[0], 9);
  for (std::int32_t a = 0; a < 9; ++a) EXPECT_EQ(r.arc_label[a], a);
  // Tokens j (6) and k (7) are not in the model.
  EXPECT_EQ(r.missing[6], 1);
  EXPECT_EQ(r.missing[0], 0);
  for (std::int32_t s = 1; s < r.states; ++s) EXPECT_LT(r.backoff_to[s], s);
  EXPECT_GT(lm.memory_bytes(), 0u);
  EXPECT_NE(lm.describe().find("3-gram token-level LM, V = 8"), std::string::npos) << lm.describe();
  EXPECT_EQ(lm.id_of("d"), 0);
  EXPECT_EQ(lm.id_of("k"), 7);
  EXPECT_FALSE(lm.id_of("l").has_value());  // token 8, outside V
  EXPECT_EQ(lm.symbol_of(3), "g");
  const NgramLm word_lm = NgramLm::load(arpa("words_3gram.arpa"), words());
  EXPECT_EQ(word_lm.vocab_size(), 5);  // the, cat, sat, on, mat
  EXPECT_EQ(word_lm.id_of("cat"), 1);
  EXPECT_FALSE(word_lm.id_of("dog").has_value());
}

// Every state's full row, compared between two loads of the same model.
void expect_identical(const NgramLm& a, const NgramLm& b) {
  ASSERT_EQ(a.num_states(), b.num_states());
  ASSERT_EQ(a.num_arcs(), b.num_arcs());
  for (std::int32_t s = 0; s < a.num_states(); ++s) {
    const Row x = row_of(a, s), y = row_of(b, s);
    ASSERT_EQ(std::memcmp(x.scores.data(), y.scores.data(), x.scores.size() * 4), 0) << "state " << s;
    ASSERT_EQ(x.next, y.next) << "state " << s;
    ASSERT_EQ(a.final_score(s), b.final_score(s)) << "state " << s;
  }
}

TEST(NgramLm, GzipCrlfAndBinaryCopiesScoreIdentically) {
  const NgramLm plain = NgramLm::load(arpa("tokens_3gram.arpa"), tokens(8));
  expect_identical(plain, NgramLm::load(arpa("tokens_3gram.arpa.gz"), tokens(8)));
  expect_identical(plain, NgramLm::load(arpa("tokens_3gram_crlf.arpa"), tokens(8)));
  const std::string image = testing::temp_path("tokens_3gram.lm");
  plain.save_binary(image);
  expect_identical(plain, NgramLm::load(image, tokens(8)));
  expect_identical(plain, NgramLm::load(image, tokens(0)));  // the image knows its V
  const NgramLm word_lm = NgramLm::load(arpa("words_3gram.arpa"), words());
  const std::string word_image = testing::temp_path("words_3gram.lm");
  word_lm.save_binary(word_image);
  const NgramLm word_copy = NgramLm::load(word_image, words());
  expect_identical(word_lm, word_copy);
  EXPECT_EQ(word_copy.id_of("mat"), word_lm.id_of("mat"));
}

TEST(NgramLm, NormalizeUnkSpreadsUnkOverMissingTokens) {
  NgramLmOptions options = tokens(8);
  const NgramLm kenlm = NgramLm::load(arpa("tokens_3gram.arpa"), options);
  options.normalize_unk = true;
  const NgramLm nemo = NgramLm::load(arpa("tokens_3gram.arpa"), options);
  for (std::int32_t s = 0; s < kenlm.num_states(); ++s) {
    const Row a = row_of(kenlm, s), b = row_of(nemo, s);
    for (std::int32_t token = 0; token < 8; ++token) {
      const float expected = token >= 6 ? a.scores[static_cast<std::size_t>(token)] - std::log(2.0f)
                                        : a.scores[static_cast<std::size_t>(token)];
      EXPECT_NEAR(b.scores[static_cast<std::size_t>(token)], expected, 1e-6) << s << " " << token;
    }
  }
}

TEST(NgramLm, MalformedFilesAreRejectedWithPreciseMessages) {
  struct Case {
    const char* file;
    const char* message;
  };
  const std::vector<Case> cases = {
      {"no_data_section", "no \\data\\ section: not an ARPA file"},
      {"empty", "no \\data\\ section"},
      {"bad_count_line", ":3: n-gram count 'eight' is not a non-negative integer"},
      {"order_gap", ":3: n-gram orders must be listed as 1, 2, 3, ...; found order 3 after 1"},
      {"count_too_high", "the \\2-grams: section has 8 entries, the header declares 9"},
      {"count_too_low", "expected '\\3-grams:', got '-0.55\th </s>'"},
      {"positive_probability", "positive log10 probability 0.4"},
      {"nan_probability", "probability nan is not finite"},
      {"inf_backoff", "backoff inf is not finite"},
      {"not_a_number", "probability '-0.4x' is not a number"},
      {"unknown_word", "word 'q' is not among the unigrams"},
      {"missing_bos", "the unigrams lack <s>, which every ARPA model needs"},
      {"missing_eos", "the unigrams lack </s>, which every ARPA model needs"},
      {"backoff_at_highest_order", "backoff -0.5 on an n-gram of the highest order 3"},
      {"too_many_fields", "expected a probability, 3 words and an optional backoff, got 6 fields"},
      {"too_few_words", "expected a probability, 3 words and an optional backoff, got 3 fields"},
      {"wrong_section_header", "expected '\\2-grams:', got '\\two-grams:'"},
      {"missing_end", "truncated: no \\end\\ line"},
      {"text_after_end", "unexpected text after \\end\\: 'garbage'"},
      {"duplicate_unigram", "duplicate unigram 'e'"},
      {"duplicate_bigram", "duplicate n-gram 'd e'"},
      {"missing_context", "n-gram 'f d e' has no context 'f d' (every context must be listed)"},
      {"multi_character_token", "'ii' is not a single character: a token-level LM writes token t as the character"},
      {"token_outside_vocabulary", "symbol U+190 is token 300, outside the vocabulary of V = 8 tokens"},
      {"truncated_in_section", "truncated: the \\2-grams: section has 2 entries, the header declares 8"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.file);
    const std::string path = arpa(std::string("malformed/") + c.file + ".arpa");
    ASRDEC_EXPECT_THROW_MSG(NgramLm::load(path, tokens(8)), ParseError, c.message);
  }
  ASRDEC_EXPECT_THROW_MSG(NgramLm::load(arpa("malformed/truncated.arpa.gz"), tokens(8)), ParseError, "");
  // Every malformed file names itself and, for text errors, the line.
  try {
    NgramLm::load(arpa("malformed/positive_probability.arpa"), tokens(8));
  } catch (const ParseError& error) {
    EXPECT_EQ(error.line(), 19);
    EXPECT_NE(error.file().find("positive_probability.arpa"), std::string::npos);
  }
  ASRDEC_EXPECT_THROW_MSG(NgramLm::load(arpa("tokens_3gram.arpa"), tokens(0)), InvalidArgument,
                          "a token-level LM needs the vocabulary size V");
  ASRDEC_EXPECT_THROW_MSG(NgramLm::load(testing::temp_path("absent.arpa"), tokens(8)), Error, "cannot open");
}

// ARPA files crafted in the test: sizes the header declares, values and lines that must be bounded.
TEST(NgramLm, HostileArpaFilesAreBounded) {
  const auto write = [](const std::string& name, const std::string& text) {
    const std::string path = testing::temp_path(name);
    std::ofstream(path, std::ios::binary) << text;
    return path;
  };
  const auto with = [](const std::string& count, const std::string& unigram_e) {
    return "\\data\\\nngram 1=" + count + "\n\n\\1-grams:\n-0.5\t<s>\n-0.6\t</s>\n" + unigram_e + "\n\n\\end\\\n";
  };
  const NgramLmOptions options = tokens(8);
  // Counts drive reservations: a lying header must be refused or cost nothing, never bad_alloc or an undefined
  // double-to-integer conversion.
  ASRDEC_EXPECT_THROW_MSG(NgramLm::load(write("count_1e12.arpa", with("1000000000000", "-0.7\te")), options),
                          ParseError, ":2: n-gram count 1000000000000 is more than the 1073741823 entries");
  ASRDEC_EXPECT_THROW_MSG(NgramLm::load(write("count_1e300.arpa", with("1e300", "-0.7\te")), options), ParseError,
                          ":2: n-gram count '1e300' is not a non-negative integer");
  ASRDEC_EXPECT_THROW_MSG(NgramLm::load(write("count_big.arpa", with("1000000", "-0.7\te")), options), ParseError,
                          "the \\1-grams: section has 3 entries, the header declares 1000000");
  // Finite as double but not as float (or beyond any real model): refused, not turned into ±inf.
  ASRDEC_EXPECT_THROW_MSG(NgramLm::load(write("backoff_1e39.arpa", with("3", "-0.7\te\t1e39")), options), ParseError,
                          ":7: backoff 1e39 is outside [-1e+06, 1e+06]");
  ASRDEC_EXPECT_THROW_MSG(NgramLm::load(write("prob_big.arpa", with("3", "-3e38\te")), options), ParseError,
                          ":7: probability -3e38 is outside");
  // A NUL byte used to end a line early and glue the rest onto the next line.
  ASRDEC_EXPECT_THROW_MSG(NgramLm::load(write("nul.arpa", with("3", std::string("-0.7\te\0-0.8\tf", 13))), options),
                          ParseError, ":7: NUL byte in a text line");
  ASRDEC_EXPECT_THROW_MSG(NgramLm::load("/dev/zero", options), ParseError, "/dev/zero:1: NUL byte");
  ASRDEC_EXPECT_THROW_MSG(NgramLm::load(write("long.arpa", with("3", "-0.7\t" + std::string(2 << 20, 'e'))), options),
                          ParseError, ":7: line longer than 1048576 bytes");
  std::string orders = "\\data\\\n";
  for (int n = 1; n <= 300; ++n) orders += "ngram " + std::to_string(n) + "=1\n";
  ASRDEC_EXPECT_THROW_MSG(NgramLm::load(write("orders.arpa", orders), options), ParseError,
                          ":257: n-gram order 256 is above the 255 orders asrdec reads");
  // The same file, well-formed, loads.
  EXPECT_EQ(NgramLm::load(write("fine.arpa", with("3", "-0.7\td")), options).order(), 1);
}

TEST(NgramLm, CorruptedBinaryImagesAreRejected) {
  const NgramLm lm = NgramLm::load(arpa("tokens_3gram.arpa"), tokens(8));
  const std::string image = testing::temp_path("image.lm");
  lm.save_binary(image);
  std::string bytes;
  {
    std::ifstream in(image, std::ios::binary);
    bytes.assign(std::istreambuf_iterator<char>(in), {});
  }
  const auto write = [&](const std::string& name, const std::string& content) {
    const std::string path = testing::temp_path(name);
    std::ofstream(path, std::ios::binary) << content;
    return path;
  };
  std::string flipped = bytes;
  flipped[bytes.size() - 100] ^= 0x10;
  ASRDEC_EXPECT_THROW_MSG(NgramLm::load(write("flipped.lm", flipped), tokens(8)), ParseError,
                          "checksum mismatch: the image is corrupted");
  ASRDEC_EXPECT_THROW_MSG(NgramLm::load(write("short.lm", bytes.substr(0, bytes.size() - 64)), tokens(8)), ParseError,
                          "truncated or corrupted");
  std::string version = bytes;
  version[8] = 9;
  ASRDEC_EXPECT_THROW_MSG(NgramLm::load(write("version.lm", version), tokens(8)), ParseError,
                          "LM image version 9 is not supported");
  ASRDEC_EXPECT_THROW_MSG(NgramLm::load(image, tokens(16)), InvalidArgument,
                          "vocabulary mismatch: " + image + " was built for V = 8 tokens, the decoder has 16");
}

// A KenLM binary (build_binary) is another format: refused with the way to an LM asrdec reads.
TEST(NgramLm, KenLmBinariesAreRefusedWithTheFix) {
  const std::string path = testing::temp_path("kenlm.binary");
  std::ofstream(path, std::ios::binary) << std::string("mmap lm http://kheafield.com/code format version 5\n\0", 52)
                                        << std::string(64, '\x01');
  ASRDEC_EXPECT_THROW_MSG(NgramLm::load(path, tokens(8)), Unsupported, path + " is a KenLM binary model");
  ASRDEC_EXPECT_THROW_MSG(NgramLm::load(path, tokens(8)), Unsupported, "asrdec lm convert --lm LM.arpa -o LM.bin");
}

TEST(NgramLmCUDA, EveryStateEqualsTheCpuBitForBit) {
  ASRDEC_SKIP_WITHOUT_CUDA();
  const Device device = Device::cuda(0);
  for (const Fixture& fixture : {Fixture{"tokens_3gram.arpa", tokens(8)}, Fixture{"tokens_4gram.arpa", tokens(8)},
                                 Fixture{"words_3gram.arpa", words()}, Fixture{"tokens_1gram.arpa", tokens(5)}}) {
    SCOPED_TRACE(fixture.file);
    const NgramLm cpu = NgramLm::load(arpa(fixture.file), fixture.options);
    const NgramLm cuda = NgramLm::load(arpa(fixture.file), fixture.options, device);
    const std::int64_t S = cpu.num_states(), V = cpu.vocab_size();
    // Every state, several times over, in one large batch (the kernel's many-rows path) and one at a time.
    std::vector<std::int32_t> states;
    for (int repeat = 0; repeat < 40; ++repeat) {
      for (std::int32_t s = 0; s < S; ++s) states.push_back(s);
    }
    const auto B = static_cast<std::int64_t>(states.size());
    std::vector<float> want(static_cast<std::size_t>(B * V));
    std::vector<std::int32_t> want_next(want.size());
    cpu.advance(states.data(), B, want.data(), want_next.data());
    Stream stream(device);
    for (std::int64_t batch : {B, std::int64_t{1}}) {
      DeviceBuffer<std::int32_t> d_states(static_cast<std::size_t>(batch), device);
      DeviceBuffer<float> d_scores(static_cast<std::size_t>(batch * V), device);
      DeviceBuffer<std::int32_t> d_next(static_cast<std::size_t>(batch * V), device);
      DeviceBuffer<float> d_final(static_cast<std::size_t>(batch), device);
      copy_from_async(d_states, states.data(), Device::cpu(), static_cast<std::size_t>(batch), stream.handle());
      cuda.advance(d_states.data(), batch, d_scores.data(), d_next.data(), stream.handle());
      cuda.final_scores(d_states.data(), batch, d_final.data(), stream.handle());
      std::vector<float> got(static_cast<std::size_t>(batch * V)), finals(static_cast<std::size_t>(batch));
      std::vector<std::int32_t> got_next(got.size());
      copy_to_async(got.data(), Device::cpu(), d_scores, got.size(), stream.handle());
      copy_to_async(got_next.data(), Device::cpu(), d_next, got.size(), stream.handle());
      copy_to_async(finals.data(), Device::cpu(), d_final, finals.size(), stream.handle());
      stream.synchronize();
      EXPECT_EQ(std::memcmp(got.data(), want.data(), got.size() * 4), 0) << "batch " << batch;
      EXPECT_TRUE(std::equal(got_next.begin(), got_next.end(), want_next.begin())) << "batch " << batch;
      for (std::int64_t b = 0; b < batch; ++b) EXPECT_EQ(finals[b], cpu.final_score(states[b]));
    }
  }
}

}  // namespace
}  // namespace asrdec
