#include "decode_output.hpp"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>

#include "validators.hpp"

namespace asrdec::cli {

void add_common_decode_options(CLI::App& command, DecodeOptions& options) {
  command.add_option("--vocab", options.vocab, "Token table (tokens.txt: one token per line, line number = id)")
      ->check(CLI::ExistingFile);
  command.add_option("--refs", options.refs, "Reference transcripts, one line per utterance (needs --vocab)")
      ->check(CLI::ExistingFile);
  command.add_option("--device", options.device, "cpu, cuda, cuda:N or auto (cuda:0 when available)")
      ->capture_default_str();
  command.add_option("--graph-mode", options.graph_mode, "CUDA graph mode: auto, conditional, per_step or eager")
      ->capture_default_str();
  command.add_option("--batch-size", options.batch_size, "Utterances per decode call")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  CLI::Option* chunk =
      command
          .add_option(
              "--chunk", options.chunk,
              "Decode as a streaming server: N frames of each utterance in flight per call (0: whole utterances)")
          ->check(CLI::NonNegativeNumber)
          ->capture_default_str();
  command.add_option("--lanes", options.lanes, "With --chunk: at most L utterances in flight (0: --batch-size)")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  command.add_flag("--json", options.json, "One JSON object per utterance on stdout");
  command
      .add_option("--confidence-aggregation", options.confidence_aggregation,
                  "Word confidences in the JSON from their tokens' (decoders that give them): min, max, mean, prod")
      ->check(CLI::IsMember({"min", "max", "mean", "prod"}))
      ->capture_default_str();
  command.add_option("--show", options.show, "Print at most this many transcripts in text mode (-1: all)")
      ->capture_default_str();
  command
      .add_option("--frame-shift-ms", options.frame_shift_ms,
                  "Duration of one model output frame: word times in seconds in the JSON, and the RTFx")
      ->check(finite_positive())
      ->capture_default_str();
  command.add_option("--progress", options.progress, "Progress bar on stderr: auto, always or never")
      ->check(CLI::IsMember({"auto", "always", "never"}))
      ->capture_default_str();
  command
      .add_flag("--endpoint", options.endpoint,
                "With --chunk: report each utterance's first endpoint (JSON \"endpoint\"; docs/streaming.md)")
      ->needs(chunk);
  command
      .add_option("--endpoint-silence", options.endpoints.rule2.min_trailing_silence,
                  "Endpoint rule 2: seconds of decoded silence after speech")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  command
      .add_option("--endpoint-silence-no-speech", options.endpoints.rule1.min_trailing_silence,
                  "Endpoint rule 1: seconds of decoded silence with nothing said")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  command
      .add_option("--endpoint-max-length", options.endpoints.rule3.min_utterance_length,
                  "Endpoint rule 3: seconds after which an utterance ends whatever was said")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  command.add_option("--lm", options.lm, "Token-level n-gram LM for shallow fusion (.arpa, .arpa.gz or binary image)")
      ->check(CLI::ExistingFile);
  command.add_option("--lm-weight", options.lm_weight, "LM weight α (with --lm)")->capture_default_str();
  command.add_option("--boost", options.boost.phrases, "Phrases to boost, one per line (needs --bpe)")
      ->check(CLI::ExistingFile);
  command
      .add_option("--boost-per-utterance", options.boost.per_utterance,
                  "Each utterance's own phrases to boost: JSON lines, line u an array of strings (needs --bpe)")
      ->check(CLI::ExistingFile);
  command.add_option("--bpe", options.boost.bpe, "SentencePiece model that tokenises the --boost phrases")
      ->check(CLI::ExistingFile);
  command.add_option("--boost-weight", options.boost.weight, "Boosting weight β (with --boost)")->capture_default_str();
  command
      .add_option("--boost-context-score", options.boost.context_score,
                  "Score of a phrase's first token (later tokens: score × depth scaling + ln(i+1))")
      ->capture_default_str();
  command.add_option("--boost-depth-scaling", options.boost.depth_scaling, "Depth scaling of the later tokens (≥ 1)")
      ->capture_default_str();
}

void add_logprobs_option(CLI::App& command, std::string& path) {
  CLI::Option* logprobs =
      command
          .add_option("--logprobs", path, "CTC log-probabilities [N, T, V+1] (.npy, float32 or float16), blank last")
          ->check(CLI::ExistingFile);
  command.add_option("--logits", path, "Deprecated spelling of --logprobs (removed in the next release)")
      ->check(CLI::ExistingFile)
      ->excludes(logprobs)
      ->group("Deprecated")
      ->each([](const std::string&) {
        std::fprintf(stderr,
                     "warning: --logits is deprecated and will be removed; use --logprobs (the file holds "
                     "log-probabilities)\n");
      });
}

void require_logprobs(const std::string& path) {
  if (path.empty()) throw CLI::RequiredError("--logprobs");
}

std::shared_ptr<const NgramLm> load_fusion_lm(const DecodeOptions& options, std::int64_t vocab, Device device) {
  if (options.lm.empty()) return nullptr;
  NgramLmOptions lm_options;
  lm_options.vocabulary = LmVocabularyKind::token_level;
  lm_options.vocab_size = vocab;
  auto lm = std::make_shared<const NgramLm>(NgramLm::load(options.lm, lm_options, device));
  if (!options.json) std::fprintf(stderr, "LM: %s, weight %g\n", lm->describe().c_str(), options.lm_weight);
  return lm;
}

Device choose_device(const std::string& name) { return Device::parse(name); }

DecodeReport::DecodeReport(const DecodeOptions& options, std::int64_t utterances, std::int64_t model_tokens,
                           const std::string& source)
    : options_(options), aggregation_(parse_confidence_aggregation(options.confidence_aggregation)) {
  if (!options.vocab.empty()) {
    vocabulary_ = Vocabulary::load(options.vocab);
    vocabulary_->check_matches(model_tokens, source);
  }
  if (!options.refs.empty()) {
    ASRDEC_CHECK_ARG(vocabulary_.has_value(), "--refs needs --vocab to turn token ids into words");
    references_ = read_references(options.refs, utterances, source);
  }
}

DecodeReport::DecodeReport(const DecodeOptions& options, std::int64_t utterances, std::int64_t model_tokens,
                           const std::string& source, const std::vector<std::string>& special_tokens)
    : options_(options), aggregation_(parse_confidence_aggregation(options.confidence_aggregation)) {
  if (!options.vocab.empty()) {
    const Vocabulary text = Vocabulary::load(options.vocab);
    std::vector<std::string> tokens;
    for (std::size_t i = 0; i < text.size(); ++i) tokens.push_back(text.token(static_cast<std::int32_t>(i)));
    // The special tokens' names follow the text tokens; an id past both prints as <|id|>.
    for (std::size_t i = 0; static_cast<std::int64_t>(tokens.size()) < model_tokens; ++i) {
      tokens.push_back(i < special_tokens.size() ? special_tokens[i] : "<|" + std::to_string(tokens.size()) + "|>");
    }
    vocabulary_ = Vocabulary(std::move(tokens));
    vocabulary_->check_matches(model_tokens, source);
  }
  if (!options.refs.empty()) {
    ASRDEC_CHECK_ARG(vocabulary_.has_value(), "--refs needs --vocab to turn token ids into words");
    references_ = read_references(options.refs, utterances, source);
  }
}

std::vector<std::string> read_references(const std::string& path, std::int64_t utterances, const std::string& source) {
  TextFileReader in(path, "the references");
  std::vector<std::string> references;
  std::string line;
  while (in.next(line)) references.push_back(line);
  ASRDEC_CHECK_ARG(static_cast<std::int64_t>(references.size()) == utterances, path, " has ", references.size(),
                   " lines but ", source, " holds ", utterances, " utterances");
  return references;
}

void print_wer(const WerStats& wer) {
  std::fprintf(stderr,
               "WER %.2f%% (%lld errors: %lld substitutions, %lld deletions, %lld insertions; %lld reference words)\n",
               100.0 * wer.rate(), static_cast<long long>(wer.errors()), static_cast<long long>(wer.substitutions),
               static_cast<long long>(wer.deletions), static_cast<long long>(wer.insertions),
               static_cast<long long>(wer.reference_words));
}

nlohmann::json words_json(const std::vector<WordTiming>& words) {
  nlohmann::json out = nlohmann::json::array();
  for (const WordTiming& w : words) {
    out.push_back({{"word", w.word},
                   {"start_frame", w.start_frame},
                   {"end_frame", w.end_frame},
                   {"start", w.start_seconds},
                   {"end", w.end_seconds}});
    if (w.confidence >= 0.0f) out.back()["confidence"] = w.confidence;
  }
  return out;
}

namespace {

// Every hypothesis has the same keys, empty or not, whatever the decoder (docs/results.md): "text" is null and
// "words" empty without a token table.
nlohmann::json hypothesis_json(const Hypothesis& hypothesis, const std::optional<Vocabulary>& vocabulary,
                               double frame_shift_seconds, ConfidenceAggregation aggregation) {
  nlohmann::json out = {{"text", nullptr},
                        {"words", nlohmann::json::array()},
                        {"tokens", hypothesis.tokens},
                        {"timestamps", hypothesis.timestamps},
                        {"durations", hypothesis.durations},
                        {"token_scores", hypothesis.token_scores},
                        {"score", hypothesis.score},
                        {"ranking_score", hypothesis.ranking_score},
                        {"am_score", hypothesis.am_score},
                        {"lm_score", hypothesis.lm_score},
                        {"boost_score", hypothesis.boost_score}};
  if (vocabulary) {
    out["text"] = vocabulary->detokenize(hypothesis.tokens);
    out["words"] = words_json(word_timings(hypothesis, *vocabulary, frame_shift_seconds, aggregation));
  }
  return out;
}

}  // namespace

void DecodeReport::add(const Hypothesis& hypothesis, const std::vector<Hypothesis>* nbest,
                       const nlohmann::json* extra) {
  const std::int64_t index = next_++;
  std::string text;
  if (vocabulary_) {
    text = vocabulary_->detokenize(hypothesis.tokens);
  }
  if (!references_.empty()) {
    wer_ += word_errors(references_[static_cast<std::size_t>(index)], text);
  }
  if (options_.json) {
    nlohmann::json line = {{"utterance", index}};
    line.update(hypothesis_json(hypothesis, vocabulary_, options_.frame_shift_ms / 1000.0, aggregation_));
    if (nbest != nullptr) {
      line["nbest"] = nlohmann::json::array();
      for (const Hypothesis& h : *nbest) {
        line["nbest"].push_back(hypothesis_json(h, vocabulary_, options_.frame_shift_ms / 1000.0, aggregation_));
      }
    }
    if (extra != nullptr) line.update(*extra);
    std::cout << line.dump() << "\n";
  } else if (options_.show < 0 || index < options_.show) {
    if (vocabulary_) {
      std::cout << index << ": " << text << "\n";
      if (!references_.empty()) {
        std::cout << std::string(std::to_string(index).size(), ' ')
                  << "  ref: " << references_[static_cast<std::size_t>(index)] << "\n";
      }
    } else {
      std::cout << index << ":";
      for (std::int32_t token : hypothesis.tokens) std::cout << " " << token;
      std::cout << "\n";
    }
  }
}

void DecodeReport::add_beams(std::vector<std::vector<Hypothesis>>& beams, std::int32_t nbest) {
  for (auto& beam : beams) {
    const Hypothesis best = beam.empty() ? Hypothesis{} : beam.front();
    beam.resize(std::min<std::size_t>(beam.size(), static_cast<std::size_t>(nbest)));
    add(best, nbest > 0 ? &beam : nullptr);
  }
}

void DecodeReport::add_time(std::chrono::duration<double> elapsed, std::int64_t frames) {
  seconds_ += elapsed.count();
  frames_ += frames;
}

void DecodeReport::finish(const std::string& decoder, Device device, GraphMode mode) {
  std::cout.flush();
  const double audio_seconds = static_cast<double>(frames_) * options_.frame_shift_ms / 1000.0;
  std::fprintf(stderr, "%s on %s%s: %lld utterances, %.1f s of audio, decoded in %.3f ms, RTFx %.0f\n", decoder.c_str(),
               device.to_string().c_str(),
               device.is_cuda() ? (std::string(" (graph mode ") + to_string(mode) + ")").c_str() : "",
               static_cast<long long>(next_), audio_seconds, seconds_ * 1000.0,
               seconds_ > 0 ? audio_seconds / seconds_ : 0.0);
  if (!references_.empty()) print_wer(wer_);
}

}  // namespace asrdec::cli
