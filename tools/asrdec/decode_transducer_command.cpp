// `asrdec decode rnnt` and `asrdec decode tdt`: greedy decoding (whole utterances or as a streaming server) or beam
// search of transducer encoder projections from .npy files with a model in asrdec's safetensors format.

#include <algorithm>

#include "batch_input.hpp"
#include "commands.hpp"
#include "decode_output.hpp"
#include "progress_bar.hpp"
#include "server_loop.hpp"

namespace asrdec::cli {
namespace {

struct TransducerOptions {
  DecodeOptions common;
  TransducerType type = TransducerType::rnnt;
  std::string model;
  std::string enc;
  std::string lengths;
  std::string algorithm = "label-looping";
  std::int32_t window = 8;
  std::int32_t max_symbols = 10;
  std::int32_t threads = 0;
  std::int32_t beam = 4;
  std::string pruning = "late";
  std::string blank_scoring = "full";
  std::int32_t nbest = 0;
  bool no_length_norm = false;
  std::int32_t aes_steps = 2;
  std::int32_t aes_beta = 2;
  double aes_gamma = 2.3;
  std::string confidence = "probability";  // greedy: token confidences (asrdec/hyps/confidence.hpp)
  std::string entropy_norm = "exp";
  double confidence_alpha = 0.33;
};

bool is_beam_algorithm(const std::string& name) { return name == "alsd++" || name == "aes++" || name == "wind-beam"; }

void run_beam(const TransducerOptions& options) {
  ASRDEC_CHECK_ARG(options.confidence == "probability", "--confidence ", options.confidence,
                   ": beam search gives the probability only (an entropy measure is greedy decoding's)");
  const Device device = choose_device(options.common.device);
  const TransducerModel model = TransducerModel::load(options.model, device);
  ASRDEC_CHECK_ARG(model.type() == options.type, options.model, " holds a ", to_string(model.type()),
                   " model; decode it with `asrdec decode ", to_string(model.type()), "`");
  ASRDEC_CHECK_ARG(options.nbest >= 0 && options.nbest <= options.beam,
                   "--nbest must be in [0, --beam = ", options.beam, "], got ", options.nbest);
  const std::int64_t chunk = options.common.chunk;
  ASRDEC_EXPECTS(chunk == 0 || options.nbest == 0, Unsupported,
                 "--nbest with --chunk: streaming returns each utterance's best hypothesis; drop one of them");
  const std::int64_t lanes = lanes_of(options.common);
  BatchInput input(options.enc, "encoder projections [N, T, J]", device, std::max(options.common.batch_size, lanes));
  const std::int64_t utterances = input.utterances();
  const NpyArray lengths = load_lengths(options.lengths, utterances, input.frames());
  const std::int64_t batch_size =
      std::min<std::int64_t>(options.common.batch_size, std::max<std::int64_t>(utterances, 1));

  TransducerBeamConfig config;
  config.algorithm = parse_beam_algorithm(options.algorithm);
  config.beam = options.beam;
  config.max_symbols_per_frame = options.max_symbols;
  config.aes_num_steps = options.aes_steps;
  config.aes_expansion_beta = options.aes_beta;
  config.aes_expansion_gamma = static_cast<float>(options.aes_gamma);
  config.wind_window = options.window;
  config.length_normalized = !options.no_length_norm;
  config.pruning = parse_fusion_pruning(options.pruning);
  config.blank_scoring = parse_blank_lm_scoring(options.blank_scoring);
  config.graph_mode = parse_graph_mode(options.common.graph_mode);
  config.threads = options.threads;
  config.lm = load_fusion_lm(options.common, model.vocab_size(), model.device());
  config.lm_weight = static_cast<float>(options.common.lm_weight);
  const Boosting boosting = load_boosting(options.common.boost, model.vocab_size(), model.device(), options.common.json,
                                          utterances, std::max(batch_size, lanes));
  config.boost = boosting.tree;
  config.boost_weight = static_cast<float>(options.common.boost.weight);
  BatchLimits limits{std::max(batch_size, lanes),
                     std::max<std::int64_t>(chunk > 0 ? std::min(chunk, input.frames()) : input.frames(), 1)};
  limits.max_open_utterances = lanes;
  TransducerBeamDecoder decoder(model, config, limits);
  DecodeReport report(options.common, utterances, model.vocab_size(), options.model);
  Stream stream(device);
  const std::string name =
      std::string(to_string(model.type())) + "-" + to_string(config.algorithm) + " beam " + std::to_string(config.beam);

  ProgressBar progress(options.common.progress, options.common.json, utterances, "utterances");
  if (chunk > 0) {
    report_as_server(input, lengths, options.common, lanes, stream, progress, report, decoder, name, device,
                     boosting.per_utterance.get());
    return;
  }
  if (utterances > 0) {  // untimed, as in every decode command: graph capture and first launches
    const std::int64_t count = std::min(batch_size, utterances);
    if (boosting.per_utterance) boosting.per_utterance->fill_batch(0, count);
    (void)decoder.decode(input.batch(0, count, stream.handle()), lengths_slice(lengths, 0, count), stream.handle());
  }
  for (std::int64_t first = 0; first < utterances; first += batch_size) {
    const std::int64_t count = std::min(batch_size, utterances - first);
    if (boosting.per_utterance) boosting.per_utterance->fill_batch(first, count);
    const TensorView batch = input.batch(first, count, stream.handle());
    stream.synchronize();
    const auto start = std::chrono::steady_clock::now();
    auto beams = decoder.decode_nbest(batch, lengths_slice(lengths, first, count), stream.handle());
    report.add_time(std::chrono::steady_clock::now() - start, total_frames(lengths, first, count));
    report.add_beams(beams, options.nbest);
    progress.update(first + count);
  }
  progress.finish();
  report.finish(name, device, decoder.graph_mode());
}

void run(const TransducerOptions& options) {
  if (is_beam_algorithm(options.algorithm)) {
    run_beam(options);
    return;
  }
  const Device device = choose_device(options.common.device);
  const TransducerModel model = TransducerModel::load(options.model, device);
  ASRDEC_CHECK_ARG(model.type() == options.type, options.model, " holds a ", to_string(model.type()),
                   " model; decode it with `asrdec decode ", to_string(model.type()), "`");
  const std::int64_t lanes = lanes_of(options.common);
  BatchInput input(options.enc, "encoder projections [N, T, J]", device, std::max(options.common.batch_size, lanes));
  const std::int64_t utterances = input.utterances();
  const NpyArray lengths = load_lengths(options.lengths, utterances, input.frames());
  const std::int64_t batch_size =
      std::min<std::int64_t>(options.common.batch_size, std::max<std::int64_t>(utterances, 1));

  TransducerGreedyConfig config;
  config.algorithm = parse_greedy_algorithm(options.algorithm);
  config.window = options.window;
  config.max_symbols_per_frame = options.max_symbols;
  config.graph_mode = parse_graph_mode(options.common.graph_mode);
  config.threads = options.threads;
  config.confidence =
      ConfidenceMethod{parse_confidence_measure(options.confidence), parse_entropy_norm(options.entropy_norm),
                       static_cast<float>(options.confidence_alpha)};
  config.lm = load_fusion_lm(options.common, model.vocab_size(), model.device());
  config.lm_weight = static_cast<float>(options.common.lm_weight);
  const Boosting boosting = load_boosting(options.common.boost, model.vocab_size(), model.device(), options.common.json,
                                          utterances, std::max(batch_size, lanes));
  config.boost = boosting.tree;
  config.boost_weight = static_cast<float>(options.common.boost.weight);
  const std::int64_t chunk = options.common.chunk;
  BatchLimits limits{std::max(batch_size, lanes),
                     std::max<std::int64_t>(chunk > 0 ? std::min(chunk, input.frames()) : input.frames(), 1)};
  limits.max_open_utterances = lanes;
  TransducerGreedyDecoder decoder(model, config, limits);
  DecodeReport report(options.common, utterances, model.vocab_size(), options.model);
  Stream stream(device);
  std::string name = std::string(to_string(model.type())) + "-" + to_string(config.algorithm);
  if (config.algorithm == TransducerGreedyAlgorithm::wind) name += " W=" + std::to_string(config.window);
  ProgressBar progress(options.common.progress, options.common.json, utterances, "utterances");

  if (chunk > 0) {
    report_as_server(input, lengths, options.common, lanes, stream, progress, report, decoder, name, device,
                     boosting.per_utterance.get());
    return;
  }
  if (utterances > 0) {  // untimed: graph capture and first launches
    const std::int64_t count = std::min(batch_size, utterances);
    if (boosting.per_utterance) boosting.per_utterance->fill_batch(0, count);
    (void)decoder.decode(input.batch(0, count, stream.handle()), lengths_slice(lengths, 0, count), stream.handle());
  }
  for (std::int64_t first = 0; first < utterances; first += batch_size) {
    const std::int64_t count = std::min(batch_size, utterances - first);
    if (boosting.per_utterance) boosting.per_utterance->fill_batch(first, count);
    const TensorView batch = input.batch(first, count, stream.handle());
    stream.synchronize();  // the host-to-device copy is not decoder time
    const auto start = std::chrono::steady_clock::now();
    const std::vector<Hypothesis> hypotheses =
        decoder.decode(batch, lengths_slice(lengths, first, count), stream.handle());
    report.add_time(std::chrono::steady_clock::now() - start, total_frames(lengths, first, count));
    for (const Hypothesis& hypothesis : hypotheses) report.add(hypothesis);
    progress.update(first + count);
  }
  progress.finish();
  report.finish(name, device, decoder.graph_mode());
}

void add_command(CLI::App& decode, TransducerType type) {
  auto options = std::make_shared<TransducerOptions>();
  options->type = type;
  const bool tdt = type == TransducerType::tdt;
  CLI::App* command =
      decode.add_subcommand(tdt ? "tdt" : "rnnt", tdt ? "Greedy or beam-search decoding of a TDT transducer"
                                                      : "Greedy or beam-search decoding of an RNN-T transducer");
  command->add_option("--model", options->model, "Model (.safetensors, docs/model-format.md)")
      ->required()
      ->check(CLI::ExistingFile);
  command->add_option("--enc", options->enc, "Encoder projections enc_proj [N, T, J] (.npy, float32 or float16)")
      ->required()
      ->check(CLI::ExistingFile);
  command->add_option("--lengths", options->lengths, "Frames per utterance [N] (.npy, int32 or int64); default: T")
      ->check(CLI::ExistingFile);
  command
      ->add_option("--algo", options->algorithm,
                   tdt ? "frame-looping, label-looping (greedy) or alsd++ (beam search)"
                       : "frame-looping, label-looping, wind (greedy), alsd++, aes++ or wind-beam (beam search)")
      ->check(CLI::IsMember(
          tdt ? std::vector<std::string>{"frame-looping", "label-looping", "alsd++"}
              : std::vector<std::string>{"frame-looping", "label-looping", "wind", "alsd++", "aes++", "wind-beam"}))
      ->capture_default_str();
  if (!tdt) {
    command->add_option("--window", options->window, "WIND and wind-beam: window (frames per joint evaluation)")
        ->check(CLI::PositiveNumber)
        ->capture_default_str();
  }
  command
      ->add_option("--max-symbols", options->max_symbols,
                   "Greedy, ALSD++ and wind-beam: labels per frame before moving on")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  command
      ->add_option("--confidence", options->confidence,
                   "Greedy: token confidences: probability, or NeMo's max_prob, gibbs, tsallis, renyi")
      ->check(CLI::IsMember({"probability", "max_prob", "gibbs", "tsallis", "renyi"}))
      ->capture_default_str();
  command->add_option("--entropy-norm", options->entropy_norm, "With an entropy --confidence: lin or exp")
      ->check(CLI::IsMember({"lin", "exp"}))
      ->capture_default_str();
  command->add_option("--confidence-alpha", options->confidence_alpha, "The measure's α (> 0)")->capture_default_str();
  command
      ->add_option("--threads", options->threads, "On the CPU: threads the utterances are spread over (0: every core)")
      ->check(CLI::Range(0, 1024))
      ->capture_default_str();
  command->add_option("--beam", options->beam, "Beam search: hypotheses kept per utterance (1-64)")
      ->check(CLI::Range(1, 64))
      ->capture_default_str();
  command
      ->add_option("--pruning", options->pruning,
                   "Beam search with --lm/--boost: fusion before (late) or after (early) the top-K")
      ->check(CLI::IsMember({"early", "late"}))
      ->capture_default_str();
  command
      ->add_option("--blank-scoring", options->blank_scoring,
                   "Beam search with --lm/--boost: blank scoring, none or full (lm-weighted-full)")
      ->check(CLI::IsMember({"none", "full"}))
      ->capture_default_str();
  command->add_option("--nbest", options->nbest, "Beam search with --json: add the N best hypotheses as \"nbest\"")
      ->capture_default_str();
  command->add_flag("--no-length-norm", options->no_length_norm,
                    "Beam search: rank by score, not score / (tokens + 1)");
  if (!tdt) {
    command->add_option("--aes-steps", options->aes_steps, "AES++: expansion steps (labels) per frame (1-64)")
        ->check(CLI::Range(1, 64))
        ->capture_default_str();
    command->add_option("--aes-beta", options->aes_beta, "AES++: each hypothesis proposes beam + beta labels (0-16)")
        ->check(CLI::Range(0, 16))
        ->capture_default_str();
    command
        ->add_option("--aes-gamma", options->aes_gamma, "AES++: drop proposals this far below their hypothesis's best")
        ->check(CLI::PositiveNumber)
        ->capture_default_str();
  }
  add_common_decode_options(*command, options->common);
  command->callback([options] { run(*options); });
}

}  // namespace

void add_decode_transducer_commands(CLI::App& decode) {
  add_command(decode, TransducerType::rnnt);
  add_command(decode, TransducerType::tdt);
}

}  // namespace asrdec::cli
