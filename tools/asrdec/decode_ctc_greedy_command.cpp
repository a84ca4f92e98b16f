// `asrdec decode ctc-greedy`: greedy decoding of CTC log-probabilities from .npy files.

#include <algorithm>

#include "commands.hpp"
#include "decode_output.hpp"
#include "progress_bar.hpp"

namespace asrdec::cli {
namespace {

struct CtcGreedyOptions {
  DecodeOptions common;
  std::string logits;
  std::string lengths;
  std::int32_t blank_id = -1;
};

void run(const CtcGreedyOptions& options) {
  const NpyArray logprobs = read_npy(options.logits);
  ASRDEC_CHECK_ARG(logprobs.shape().size() == 3, options.logits, ": expected log-probabilities [N, T, V+1], got ",
                   logprobs.view().shape_string());
  const std::int64_t utterances = logprobs.shape()[0];
  const std::int64_t frames = logprobs.shape()[1];
  const std::int64_t columns = logprobs.shape()[2];
  const NpyArray lengths = load_lengths(options.lengths, utterances, frames);
  const Device device = choose_device(options.common.device);

  CtcGreedyConfig config;
  config.blank_id = options.blank_id;
  config.graph_mode = parse_graph_mode(options.common.graph_mode);
  const std::int64_t batch_size =
      std::min<std::int64_t>(options.common.batch_size, std::max<std::int64_t>(utterances, 1));
  CtcGreedyDecoder decoder(device, config, BatchLimits{batch_size, std::max<std::int64_t>(frames, 1)});
  DecodeReport report(options.common, utterances, columns - 1, options.logits);

  Stream stream(device);
  const std::size_t row_bytes = static_cast<std::size_t>(frames * columns) * dtype_size(logprobs.dtype());
  DeviceBuffer<std::byte> staging;
  if (device.is_cuda()) {
    staging = DeviceBuffer<std::byte>(static_cast<std::size_t>(batch_size) * row_bytes, device);
  }
  const auto batch_view = [&](std::int64_t first, std::int64_t count) {
    const auto* host = static_cast<const std::byte*>(logprobs.data()) + static_cast<std::size_t>(first) * row_bytes;
    if (device.is_cpu()) {
      return TensorView(host, logprobs.dtype(), {count, frames, columns});
    }
    copy_bytes_async(staging.data(), device, host, Device::cpu(), static_cast<std::size_t>(count) * row_bytes,
                     stream.handle());
    return TensorView(staging.data(), logprobs.dtype(), {count, frames, columns}, device);
  };
  const auto lengths_view = [&](std::int64_t first, std::int64_t count) {
    const auto* base =
        static_cast<const std::byte*>(lengths.data()) + static_cast<std::size_t>(first) * dtype_size(lengths.dtype());
    return TensorView(base, lengths.dtype(), {count});
  };
  const auto frames_in = [&](std::int64_t first, std::int64_t count) {
    std::int64_t total = 0;
    const TensorView view = lengths_view(first, count);
    for (std::int64_t i = 0; i < count; ++i) {
      total += view.dtype() == DType::i32 ? view.data_as<std::int32_t>()[i] : view.data_as<std::int64_t>()[i];
    }
    return total;
  };

  // One untimed call first: CUDA graph capture and the device's first launches are not part of throughput.
  if (utterances > 0) {
    const std::int64_t count = std::min(batch_size, utterances);
    (void)decoder.decode(batch_view(0, count), lengths_view(0, count), stream.handle());
  }
  ProgressBar progress(options.common.progress, options.common.json, utterances, "utterances");
  for (std::int64_t first = 0; first < utterances; first += batch_size) {
    const std::int64_t count = std::min(batch_size, utterances - first);
    const TensorView input = batch_view(first, count);
    stream.synchronize();  // the host-to-device copy is not decoder time
    const auto start = std::chrono::steady_clock::now();
    const std::vector<Hypothesis> hypotheses = decoder.decode(input, lengths_view(first, count), stream.handle());
    report.add_time(std::chrono::steady_clock::now() - start, frames_in(first, count));
    for (const Hypothesis& hypothesis : hypotheses) {
      report.add(hypothesis);
    }
    progress.update(first + count);
  }
  progress.finish();
  report.finish("ctc-greedy", device, decoder.graph_mode());
}

}  // namespace

void add_decode_ctc_greedy_command(CLI::App& decode) {
  auto options = std::make_shared<CtcGreedyOptions>();
  CLI::App* command = decode.add_subcommand("ctc-greedy", "Greedy (best-path) decoding of CTC log-probabilities");
  command->add_option("--logits", options->logits, "Log-probabilities [N, T, V+1] (.npy, float32 or float16)")
      ->required()
      ->check(CLI::ExistingFile);
  command->add_option("--lengths", options->lengths, "Frames per utterance [N] (.npy, int32 or int64); default: T")
      ->check(CLI::ExistingFile);
  command->add_option("--blank-id", options->blank_id, "Blank column (-1: the last)")->capture_default_str();
  add_common_decode_options(*command, options->common);
  command->callback([options] { run(*options); });
}

}  // namespace asrdec::cli
