// `asrdec decode ctc-greedy`: greedy decoding of CTC log-probabilities from .npy files.

#include <algorithm>

#include "batch_input.hpp"
#include "commands.hpp"
#include "decode_output.hpp"
#include "progress_bar.hpp"
#include "server_loop.hpp"

namespace asrdec::cli {
namespace {

struct CtcGreedyOptions {
  DecodeOptions common;
  std::string logprobs;
  std::string lengths;
  std::int32_t blank_id = -1;
  std::int32_t threads = 0;
};

void run(const CtcGreedyOptions& options) {
  const Device device = choose_device(options.common.device);
  const std::int64_t lanes = lanes_of(options.common);
  BatchInput input(options.logprobs, "log-probabilities [N, T, V+1]", device,
                   std::max(options.common.batch_size, lanes));
  const std::int64_t utterances = input.utterances();
  const NpyArray lengths = load_lengths(options.lengths, utterances, input.frames());
  const std::int64_t batch_size =
      std::min<std::int64_t>(options.common.batch_size, std::max<std::int64_t>(utterances, 1));

  CtcGreedyConfig config;
  config.blank_id = options.blank_id;
  config.graph_mode = parse_graph_mode(options.common.graph_mode);
  config.threads = options.threads;
  config.lm = load_fusion_lm(options.common, input.columns() - 1, device);
  config.lm_weight = static_cast<float>(options.common.lm_weight);
  const Boosting boosting = load_boosting(options.common.boost, input.columns() - 1, device, options.common.json,
                                          utterances, std::max(batch_size, lanes));
  config.boost = boosting.tree;
  config.boost_weight = static_cast<float>(options.common.boost.weight);
  BatchLimits limits{std::max(batch_size, lanes), std::max<std::int64_t>(input.frames(), 1)};
  limits.max_open_utterances = lanes;
  CtcGreedyDecoder decoder(device, config, limits);
  DecodeReport report(options.common, utterances, input.columns() - 1, options.logprobs);
  Stream stream(device);
  if (options.common.chunk > 0) {
    ProgressBar progress(options.common.progress, options.common.json, utterances, "utterances");
    report_as_server(input, lengths, options.common, lanes, stream, progress, report, decoder, "ctc-greedy", device,
                     boosting.per_utterance.get());
    return;
  }

  // One untimed call first: CUDA graph capture and the device's first launches are not part of throughput.
  if (utterances > 0) {
    const std::int64_t count = std::min(batch_size, utterances);
    if (boosting.per_utterance) boosting.per_utterance->fill_batch(0, count);
    (void)decoder.decode(input.batch(0, count, stream.handle()), lengths_slice(lengths, 0, count), stream.handle());
  }
  ProgressBar progress(options.common.progress, options.common.json, utterances, "utterances");
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
  report.finish("ctc-greedy", device, decoder.graph_mode());
}

}  // namespace

void add_decode_ctc_greedy_command(CLI::App& decode) {
  auto options = std::make_shared<CtcGreedyOptions>();
  CLI::App* command = decode.add_subcommand("ctc-greedy", "Greedy (best-path) decoding of CTC log-probabilities");
  add_logprobs_option(*command, options->logprobs);
  command->add_option("--lengths", options->lengths, "Frames per utterance [N] (.npy, int32 or int64); default: T")
      ->check(CLI::ExistingFile);
  command->add_option("--blank-id", options->blank_id, "Blank column (-1: the last)")->capture_default_str();
  command->add_option("--threads", options->threads, "CPU threads the utterances are spread over (0: every core)")
      ->check(CLI::Range(0, 1024))
      ->capture_default_str();
  add_common_decode_options(*command, options->common);
  command->callback([options] {
    require_logprobs(options->logprobs);
    run(*options);
  });
}

}  // namespace asrdec::cli
