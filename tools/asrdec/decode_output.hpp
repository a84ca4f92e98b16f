#pragma once
// The output contract shared by every `asrdec decode` subcommand:
// - with --json, one JSON object per utterance on stdout, in input order, with at least "tokens" (ids),
//   "timestamps" (frames) and "score", plus "text" when --vocab is given, and "nbest" with --nbest;
// - without --json, one line per utterance ("<index>: <text or token ids>"), at most --show lines;
// - with --refs (which needs --vocab), a WER summary on stderr;
// - a summary line with the number of utterances, audio duration, decode time and RTFx on stderr.

#include <CLI/CLI.hpp>
#include <chrono>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "asrdec/asrdec.hpp"
#include "phrase_boosting.hpp"

namespace asrdec::cli {

struct DecodeOptions {
  std::string vocab;
  std::string refs;
  std::string device = "auto";
  std::string graph_mode = "auto";
  std::string progress = "auto";
  bool json = false;
  std::int64_t batch_size = 32;
  std::int64_t chunk = 0;  // --chunk: decode as a streaming server, N frames per call (0: whole utterances)
  std::int64_t lanes = 0;  // --lanes: with --chunk, utterances in flight (0: --batch-size)
  std::int64_t show = -1;
  double frame_shift_ms = 80.0;
  std::string confidence_aggregation = "min";  // --confidence-aggregation: words' confidences from their tokens'
  bool endpoint = false;     // --endpoint: with --chunk, report where each utterance's first endpoint fires
  EndpointConfig endpoints;  // its rules (seconds; the frame shift is --frame-shift-ms)
  std::string lm;            // token-level ARPA (.arpa, .arpa.gz) or binary image for shallow fusion
  double lm_weight = 0.5;    // α
  BoostOptions boost;        // --boost phrases
};

/** Registers the options every decode subcommand has. */
void add_common_decode_options(CLI::App& command, DecodeOptions& options);

/** --lanes, or --batch-size when it is 0. */
inline std::int64_t lanes_of(const DecodeOptions& options) {
  return options.lanes > 0 ? options.lanes : options.batch_size;
}

/** The --lm model on `device` for a decoder with `vocab` tokens, or nullptr without --lm. */
std::shared_ptr<const NgramLm> load_fusion_lm(const DecodeOptions& options, std::int64_t vocab, Device device);

/** Reference transcripts, one per line (a trailing CR dropped); throws unless there is one per utterance of
 *  `source`. */
std::vector<std::string> read_references(const std::string& path, std::int64_t utterances, const std::string& source);

/** Word timings as the JSON "words" array: {"word", "start_frame", "end_frame" (exclusive), "start", "end"
 *  (seconds)} per word, the same for every decoder. */
nlohmann::json words_json(const std::vector<WordTiming>& words);  // "confidence" too where the decoder gives one

/** --logprobs: CTC log-probabilities [N, T, V+1] (.npy). The old spelling --logits is accepted with a deprecation
 *  warning for one release (it always took log-probabilities, not logits). */
void add_logprobs_option(CLI::App& command, std::string& path);
/** Throws CLI::RequiredError when neither --logprobs nor --logits was given. */
void require_logprobs(const std::string& path);

/** The WER summary line on stderr. */
void print_wer(const WerStats& wer);

/** "auto" -> cuda:0 when a CUDA device is usable, else cpu; otherwise Device::parse. */
Device choose_device(const std::string& name);

class DecodeReport {
 public:
  /** Loads --vocab and --refs and checks them against the model size and the number of utterances. */
  DecodeReport(const DecodeOptions& options, std::int64_t utterances, std::int64_t model_tokens,
               const std::string& source);
  /** Models whose special tokens follow the text tokens (AED): --vocab lists the text tokens, and
   *  `special_tokens` names the ids after them, up to `model_tokens`. */
  DecodeReport(const DecodeOptions& options, std::int64_t utterances, std::int64_t model_tokens,
               const std::string& source, const std::vector<std::string>& special_tokens);
  /** Prints one utterance (they must arrive in input order). With `nbest` (beam search --nbest), the JSON object
   *  also carries "nbest": the hypotheses best first, each with tokens, timestamps, scores and text. `extra`'s keys
   *  are added to the JSON object. */
  void add(const Hypothesis& hypothesis, const std::vector<Hypothesis>* nbest = nullptr,
           const nlohmann::json* extra = nullptr);
  /** Prints the beams of a batch: each beam's best hypothesis, with the `nbest` best as "nbest" when nbest > 0. */
  void add_beams(std::vector<std::vector<Hypothesis>>& beams, std::int32_t nbest);
  /** Accounts decoder time for a batch covering `frames` frames in total. */
  void add_time(std::chrono::duration<double> elapsed, std::int64_t frames);
  /** Prints the summary on stderr. */
  void finish(const std::string& decoder, Device device, GraphMode mode);

 private:
  const DecodeOptions& options_;
  ConfidenceAggregation aggregation_;
  std::optional<Vocabulary> vocabulary_;
  std::vector<std::string> references_;
  std::int64_t next_ = 0;
  std::int64_t frames_ = 0;
  double seconds_ = 0.0;
  WerStats wer_;
};

}  // namespace asrdec::cli
