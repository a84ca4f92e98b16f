// `asrdec decode ctc-beam`: batched beam search over CTC log-probabilities from .npy files (CPU or CUDA).

#include <algorithm>

#include "batch_input.hpp"
#include "commands.hpp"
#include "decode_output.hpp"
#include "progress_bar.hpp"
#include "server_loop.hpp"

namespace asrdec::cli {
namespace {

struct CtcBeamOptions {
  DecodeOptions common;
  std::string logprobs;
  std::string lengths;
  std::int32_t blank_id = -1;
  std::int32_t beam = 4;
  double beam_beta = 0.0;
  double beam_threshold = 20.0;
  bool merge_before_prune = false;
  bool log_add = false;
  std::int32_t beam_size_token = 0;
  std::int32_t nbest = 0;
  std::int32_t threads = 0;
};

void run(const CtcBeamOptions& options) {
  const Device device = choose_device(options.common.device);
  ASRDEC_CHECK_ARG(options.nbest >= 0 && options.nbest <= options.beam,
                   "--nbest must be in [0, --beam = ", options.beam, "], got ", options.nbest);
  ASRDEC_EXPECTS(options.common.chunk == 0 || options.nbest == 0, Unsupported,
                 "--nbest with --chunk: streaming returns each utterance's best hypothesis; drop one of them");
  const std::int64_t lanes = lanes_of(options.common);
  BatchInput input(options.logprobs, "log-probabilities [N, T, V+1]", device,
                   std::max(options.common.batch_size, lanes));
  const std::int64_t utterances = input.utterances();
  const NpyArray lengths = load_lengths(options.lengths, utterances, input.frames());
  const std::int64_t batch_size =
      std::min<std::int64_t>(options.common.batch_size, std::max<std::int64_t>(utterances, 1));

  CtcBeamConfig config;
  config.blank_id = options.blank_id;
  config.beam = options.beam;
  config.beam_beta = static_cast<float>(options.beam_beta);
  config.beam_threshold = static_cast<float>(options.beam_threshold);
  config.merge_before_prune = options.merge_before_prune;
  config.log_add = options.log_add;
  config.beam_size_token = options.beam_size_token;
  config.lm = load_fusion_lm(options.common, input.columns() - 1, device);
  config.lm_weight = static_cast<float>(options.common.lm_weight);
  const Boosting boosting = load_boosting(options.common.boost, input.columns() - 1, device, options.common.json,
                                          utterances, std::max(batch_size, lanes));
  config.boost = boosting.tree;
  config.boost_weight = static_cast<float>(options.common.boost.weight);
  config.graph_mode = parse_graph_mode(options.common.graph_mode);
  config.threads = options.threads;
  BatchLimits limits{std::max(batch_size, lanes), std::max<std::int64_t>(input.frames(), 1)};
  limits.max_open_utterances = lanes;
  CtcBeamDecoder decoder(device, config, limits);
  DecodeReport report(options.common, utterances, input.columns() - 1, options.logprobs);
  Stream stream(device);

  ProgressBar progress(options.common.progress, options.common.json, utterances, "utterances");
  const std::string name = "ctc-beam " + std::to_string(config.beam);
  if (options.common.chunk > 0) {
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

}  // namespace

void add_decode_ctc_beam_command(CLI::App& decode) {
  auto options = std::make_shared<CtcBeamOptions>();
  CLI::App* command =
      decode.add_subcommand("ctc-beam", "Beam search over CTC log-probabilities, with an optional LM and boosting");
  add_logprobs_option(*command, options->logprobs);
  command->add_option("--lengths", options->lengths, "Frames per utterance [N] (.npy, int32 or int64); default: T")
      ->check(CLI::ExistingFile);
  command->add_option("--blank-id", options->blank_id, "Blank column (-1: the last)")->capture_default_str();
  command->add_option("--beam", options->beam, "Hypotheses kept per utterance (1-1024 on the CPU, 1-64 on CUDA)")
      ->check(CLI::Range(1, 1024))
      ->capture_default_str();
  command->add_option("--threads", options->threads, "CPU threads the utterances are spread over (0: every core)")
      ->check(CLI::Range(0, 1024))
      ->capture_default_str();
  command->add_option("--beam-beta", options->beam_beta, "Insertion bonus per emitted token")->capture_default_str();
  command->add_option("--beam-threshold", options->beam_threshold, "Drop hypotheses this far below the best")
      ->capture_default_str();
  command->add_flag("--merge-before-prune", options->merge_before_prune,
                    "Merge equal hypotheses before keeping the --beam best (flashlight-text's order; CPU)");
  command->add_flag("--log-add", options->log_add, "Merge equal hypotheses by log-sum-exp instead of maximum");
  command
      ->add_option("--beam-size-token", options->beam_size_token,
                   "Propose only each frame's N most likely columns (0: all; CPU)")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  command->add_option("--nbest", options->nbest, "With --json: add the N best hypotheses as \"nbest\"")
      ->capture_default_str();
  add_common_decode_options(*command, options->common);
  command->callback([options] {
    require_logprobs(options->logprobs);
    run(*options);
  });
}

}  // namespace asrdec::cli
