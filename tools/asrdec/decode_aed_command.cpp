// `asrdec decode aed`: greedy or beam-search decoding of an attention encoder-decoder model, with the built-in
// Transformer decoder step (TransformerDecoderStep) and encoder outputs from .npy files.

#include <algorithm>
#include <sstream>

#include "batch_input.hpp"
#include "commands.hpp"
#include "decode_output.hpp"
#include "progress_bar.hpp"

namespace asrdec::cli {
namespace {

struct AedOptions {
  DecodeOptions common;
  std::string model;
  std::string encoder;
  std::string lengths;
  std::string prompt;  // comma-separated ids; default: the model's
  std::int32_t eos_id = -1;
  std::string algorithm = "greedy";
  std::int32_t beam = 4;
  std::int32_t nbest = 0;
  double length_penalty = 0.0;
  std::int32_t max_new_tokens = 0;
  std::int32_t max_length_delta = -1;
};

std::vector<std::int32_t> parse_prompt(const std::string& text) {
  std::vector<std::int32_t> ids;
  std::stringstream in(text);
  for (std::string field; std::getline(in, field, ',');) {
    std::size_t used = 0;
    long long value = -1;
    try {
      value = std::stoll(field, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    ASRDEC_CHECK_ARG(used != 0 && used == field.size() && value >= 0 && value < (1LL << 31), "--prompt: '", field,
                     "' is not a token id");
    ids.push_back(static_cast<std::int32_t>(value));
  }
  ASRDEC_CHECK_ARG(!ids.empty(), "--prompt is empty");
  return ids;
}

/** The model's special tokens' names (safetensors metadata "special_tokens", comma-separated), for the text. */
std::vector<std::string> special_token_names(const std::string& model) {
  const SafetensorsFile file(model);
  const auto found = file.metadata().find("special_tokens");
  std::vector<std::string> names;
  if (found == file.metadata().end()) return names;
  std::stringstream in(found->second);
  for (std::string name; std::getline(in, name, ',');) names.push_back(name);
  return names;
}

void run(const AedOptions& options) {
  ASRDEC_CHECK_ARG(options.common.chunk == 0,
                   "--chunk: the AED decoders decode whole utterances (attention reads the "
                   "whole encoder output), not chunks");
  const Device device = choose_device(options.common.device);
  auto step = TransformerDecoderStep::load(options.model, device);
  const std::int64_t vocab = step->vocab_size();
  BatchInput input(options.encoder, "encoder output [N, T, E]", device, options.common.batch_size);
  const std::int64_t utterances = input.utterances();
  const NpyArray lengths = load_lengths(options.lengths, utterances, input.frames());
  const std::int64_t batch_size =
      std::min<std::int64_t>(options.common.batch_size, std::max<std::int64_t>(utterances, 1));

  AedDecoderConfig config;
  config.search = options.algorithm == "beam" ? AedSearch::beam : AedSearch::greedy;
  config.beam_size = options.beam;
  config.length_penalty = static_cast<float>(options.length_penalty);
  config.max_new_tokens = options.max_new_tokens;
  config.max_length_delta = options.max_length_delta;
  ASRDEC_CHECK_ARG(options.eos_id >= 0 || step->eos_id().has_value(), options.model,
                   " names no eos_id in its metadata: give --eos-id");
  config.eos_id = options.eos_id >= 0 ? options.eos_id : *step->eos_id();
  const std::vector<std::int32_t> prompt =
      options.prompt.empty() ? step->default_prompt() : parse_prompt(options.prompt);
  ASRDEC_CHECK_ARG(!prompt.empty(), options.model, " suggests no prompt (metadata prompt or bos_id): give --prompt");
  const std::vector<std::string> specials = special_token_names(options.model);
  // Text tokens are the ids before the special ones (the --bpe pieces of --boost, the --vocab lines).
  const std::int64_t text_tokens = vocab - static_cast<std::int64_t>(specials.size());
  // The search and the fused models run on the CPU whatever the step's device (docs/aed.md).
  config.lm = load_fusion_lm(options.common, vocab, Device::cpu());
  config.lm_weight = static_cast<float>(options.common.lm_weight);
  config.boost = load_boosting(options.common.boost, vocab, Device::cpu(), options.common.json, text_tokens);
  config.boost_weight = static_cast<float>(options.common.boost.weight);
  AedDecoder decoder(step, config);
  DecodeReport report(options.common, utterances, vocab, options.encoder, specials);
  if (!options.common.json) std::fprintf(stderr, "%s\n", step->describe().c_str());

  // One untimed call first, as every decode command does.
  if (utterances > 0) {
    const std::int64_t count = std::min(batch_size, utterances);
    (void)decoder.decode(input.batch(0, count, nullptr), lengths_slice(lengths, 0, count), {prompt});
  }
  ProgressBar progress(options.common.progress, options.common.json, utterances, "utterances");
  for (std::int64_t first = 0; first < utterances; first += batch_size) {
    const std::int64_t count = std::min(batch_size, utterances - first);
    const TensorView batch = input.batch(first, count, nullptr);
    const auto start = std::chrono::steady_clock::now();
    std::vector<std::vector<Hypothesis>> beams =
        decoder.decode_nbest(batch, lengths_slice(lengths, first, count), {prompt});
    report.add_time(std::chrono::steady_clock::now() - start, total_frames(lengths, first, count));
    report.add_beams(beams, options.nbest);
    progress.update(first + count);
  }
  progress.finish();
  report.finish("aed " + options.algorithm, device, GraphMode::eager);
}

}  // namespace

void add_decode_aed_command(CLI::App& decode) {
  auto options = std::make_shared<AedOptions>();
  CLI::App* command = decode.add_subcommand(
      "aed", "Greedy or beam-search decoding of an attention encoder-decoder model (built-in Transformer decoder)");
  command->add_option("--model", options->model, "Decoder weights (.safetensors, docs/model-format.md#aed)")
      ->required()
      ->check(CLI::ExistingFile);
  command->add_option("--encoder", options->encoder, "Encoder output [N, T, E] (.npy, float32)")
      ->required()
      ->check(CLI::ExistingFile);
  command
      ->add_option("--lengths", options->lengths, "Encoder frames per utterance [N] (.npy, int32 or int64); default: T")
      ->check(CLI::ExistingFile);
  command->add_option("--prompt", options->prompt, "Prompt token ids, comma-separated (default: the model's)");
  command->add_option("--eos-id", options->eos_id, "End-of-sentence token (default: the model's)");
  command->add_option("--algo", options->algorithm, "greedy or beam")
      ->check(CLI::IsMember({"greedy", "beam"}))
      ->capture_default_str();
  command->add_option("--beam", options->beam, "Beam search: hypotheses kept per utterance")
      ->check(CLI::Range(1, static_cast<int>(AedDecoderConfig::kMaxBeam)))
      ->capture_default_str();
  command->add_option("--nbest", options->nbest, "With --json: add the N best hypotheses as \"nbest\"")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  command
      ->add_option("--length-penalty", options->length_penalty,
                   "Beam search: GNMT length-penalty exponent of the ranking (0: raw score)")
      ->capture_default_str();
  command->add_option("--max-new-tokens", options->max_new_tokens, "At most this many tokens per utterance (0: none)")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  command
      ->add_option("--max-length-delta", options->max_length_delta,
                   "At most encoder length + this - prompt tokens (-1: off)")
      ->check(CLI::Range(-1, 1 << 30))
      ->capture_default_str();
  add_common_decode_options(*command, options->common);
  command->callback([options] { run(*options); });
}

}  // namespace asrdec::cli
