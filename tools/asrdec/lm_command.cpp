// `asrdec lm score`: sentence scores comparable with KenLM's `query`; `asrdec lm convert`: ARPA to binary image;
// `asrdec lm info`: what a model holds.

#include <cmath>
#include <filesystem>
#include <iostream>
#include <nlohmann/json.hpp>
#include <optional>

#include "asrdec/asrdec.hpp"
#include "commands.hpp"

namespace asrdec::cli {
namespace {

constexpr double kLn10 = 2.302585092994045684;

struct LmOptions {
  std::string lm;
  std::string vocab;
  std::optional<std::int64_t> tokens;  // given: a token-level LM with this V (a non-positive V is an error)
  bool clamp_positive = false;
  bool no_bos = false;
  bool no_eos = false;
  bool json = false;
  std::string output;
};

NgramLmOptions lm_options(const LmOptions& o) {
  NgramLmOptions options;
  if (o.tokens.has_value()) {
    ASRDEC_CHECK_ARG(*o.tokens >= 1, "--tokens must be at least 1 (V, the model's tokens), got ", *o.tokens);
    ASRDEC_CHECK_ARG(o.vocab.empty(), "--tokens and --vocab exclude each other: a token-level LM has no word table");
    options.vocabulary = LmVocabularyKind::token_level;
    options.vocab_size = *o.tokens;
  } else if (!o.vocab.empty()) {
    options.vocabulary = LmVocabularyKind::symbol_table;
    options.symbol_table = o.vocab;
  } else {
    options.vocabulary = LmVocabularyKind::arpa_words;
  }
  options.clamp_positive_probabilities = o.clamp_positive;
  return options;
}

void score(const LmOptions& o) {
  const NgramLm lm = NgramLm::load(o.lm, lm_options(o));
  std::string line;
  double corpus = 0;
  std::int64_t oov_total = 0, words_total = 0;
  while (std::getline(std::cin, line)) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    const std::vector<std::string> words = split_fields(line);
    std::int32_t state = lm.initial_state(!o.no_bos);
    double total = 0;
    std::int64_t oov = 0;
    std::vector<double> scores;
    for (const std::string& word : words) {
      const auto id = lm.id_of(word);
      std::pair<float, std::int32_t> step;
      if (id) {
        step = lm.score(state, *id);
      } else {
        step = lm.score_unknown(state);
        ++oov;
      }
      scores.push_back(step.first / kLn10);
      total += step.first / kLn10;
      state = step.second;
    }
    if (!o.no_eos) {
      scores.push_back(lm.final_score(state) / kLn10);
      total += scores.back();
    }
    corpus += total;
    oov_total += oov;
    words_total += static_cast<std::int64_t>(words.size());
    if (o.json) {
      std::cout << nlohmann::json{{"total_log10", total}, {"oov", oov}, {"token_log10", scores}}.dump() << "\n";
    } else {
      for (std::size_t i = 0; i < words.size(); ++i) std::cout << words[i] << " " << scores[i] << "\t";
      if (!o.no_eos) std::cout << "</s> " << scores.back() << "\t";
      std::cout << "Total: " << total << " OOV: " << oov << "\n";
    }
  }
  if (!o.json) {
    const double tokens = static_cast<double>(words_total);
    std::cerr << "corpus log10 " << corpus << ", " << words_total << " words, " << oov_total << " OOV"
              << (tokens > 0 ? ", perplexity (with </s>) computed by the caller" : "") << "\n";
  }
}

// True when both paths name one file (the output may not exist yet).
bool same_file(const std::string& a, const std::string& b) {
  std::error_code error;
  if (std::filesystem::equivalent(a, b, error)) return true;
  return std::filesystem::weakly_canonical(a, error) == std::filesystem::weakly_canonical(b, error);
}

void convert(const LmOptions& o) {
  // The input may be an image mapped into memory while the output is written: writing over it would destroy it.
  ASRDEC_CHECK_ARG(!same_file(o.lm, o.output), "lm convert: --output ", o.output, " is the input ", o.lm,
                   "; write the image to another file");
  const NgramLm lm = NgramLm::load(o.lm, lm_options(o));
  lm.save_binary(o.output);
  std::cerr << "wrote " << o.output << ": " << lm.describe() << "\n";
}

void add_lm_options(CLI::App& command, LmOptions& o) {
  command.add_option("--lm", o.lm, "ARPA file (.arpa or .arpa.gz) or binary image")
      ->required()
      ->check(CLI::ExistingFile);
  command.add_option("--vocab", o.vocab, "Symbol table mapping words to ids (default: the ARPA's own words)")
      ->check(CLI::ExistingFile);
  command.add_option("--tokens", o.tokens, "Token-level LM in NeMo's convention with this many tokens V");
  command.add_flag("--clamp-positive", o.clamp_positive,
                   "Read positive log10 probabilities (toolkit rounding artefacts) as 0 instead of failing");
}

}  // namespace

void add_lm_commands(CLI::App& app) {
  CLI::App* lm = app.add_subcommand("lm", "n-gram language models: score sentences, convert to the binary image");
  lm->require_subcommand(1);
  auto options = std::make_shared<LmOptions>();
  CLI::App* score_command = lm->add_subcommand(
      "score", "Score sentences from stdin (one per line) like KenLM's query: log10 per word and </s>, total, OOVs");
  add_lm_options(*score_command, *options);
  score_command->add_flag("--no-bos", options->no_bos, "Do not start from the <s> context");
  score_command->add_flag("--no-eos", options->no_eos, "Do not score </s> at the end");
  score_command->add_flag("--json", options->json, "One JSON object per sentence");
  score_command->callback([options] { score(*options); });
  auto convert_options = std::make_shared<LmOptions>();
  CLI::App* convert_command = lm->add_subcommand("convert", "Write the binary image of an ARPA model (loads by mmap)");
  add_lm_options(*convert_command, *convert_options);
  convert_command->add_option("-o,--output", convert_options->output, "Output file")->required();
  convert_command->callback([convert_options] { convert(*convert_options); });
}

}  // namespace asrdec::cli
