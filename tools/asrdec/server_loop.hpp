#pragma once
// `--chunk N --lanes L` of the decode commands: the utterances of the input decoded as a streaming server decodes
// them (docs/streaming.md). At most L utterances are in flight; every call carries the next N frames of each
// utterance in flight (first, middle and last chunks of different utterances at different offsets), and the next
// utterance joins as soon as one finishes. The results equal a whole-batch run's.

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <utility>
#include <vector>

#include "asrdec/asrdec.hpp"
#include "batch_input.hpp"
#include "decode_output.hpp"
#include "progress_bar.hpp"

namespace asrdec::cli {

/** Does nothing with a chunk's result. */
struct IgnoreChunks {
  template <class Result>
  void operator()(std::int64_t, const Result&, std::int64_t) const {}
};

/** Runs the utterances of `input` through `decode(rows, frames, lengths)` — a decoder's decode_chunks — with chunks
 *  of `chunk` frames and at most `lanes` utterances in flight (the utterance's index is its id). `timed(duration,
 *  frames)` receives each call's decoding time (the input's copy to the device excluded) and frames; `seen(utterance,
 *  result so far, frames decoded so far)` every row's result. Returns each utterance's final result, in input order. */
template <class Result, class DecodeChunks, class Timed, class Seen = IgnoreChunks>
std::vector<Result> decode_as_server(BatchInput& input, const NpyArray& lengths, std::int64_t chunk, std::int64_t lanes,
                                     Stream& stream, ProgressBar& progress, DecodeChunks&& decode, Timed&& timed,
                                     Seen seen = Seen{}, UtterancePhrases* phrases = nullptr) {
  const std::int64_t utterances = input.utterances();
  const std::int64_t width = std::clamp<std::int64_t>(chunk, 1, std::max<std::int64_t>(input.frames(), 1));
  std::vector<Result> finals(static_cast<std::size_t>(utterances));
  struct InFlight {
    std::int64_t utterance;
    std::int64_t next_frame;
    std::int32_t phrase_list;  // --boost-per-utterance: its slot
  };
  std::vector<InFlight> in_flight;
  std::int64_t joined = 0, finished = 0;
  while (joined < utterances || !in_flight.empty()) {
    while (static_cast<std::int64_t>(in_flight.size()) < lanes && joined < utterances) {
      const std::int64_t u = joined++;
      in_flight.push_back(InFlight{u, 0, phrases != nullptr ? phrases->join(u) : 0});
    }
    std::vector<ChunkRow> rows;
    std::vector<std::int64_t> ids, starts;
    std::vector<std::int32_t> row_lengths;
    std::int64_t frames = 0;
    for (const InFlight& u : in_flight) {
      const std::int64_t length = length_at(lengths, u.utterance);
      const std::int64_t n = std::clamp<std::int64_t>(length - u.next_frame, 0, width);
      rows.push_back(ChunkRow{u.utterance, u.next_frame == 0, u.next_frame + n == length, u.phrase_list});
      ids.push_back(u.utterance);
      starts.push_back(u.next_frame);
      row_lengths.push_back(static_cast<std::int32_t>(n));
      frames += n;
    }
    const auto count = static_cast<std::int64_t>(rows.size());
    const TensorView batch = input.gather(ids, starts, width, stream.handle());
    stream.synchronize();  // the host-to-device copy is not decoder time
    const auto start = std::chrono::steady_clock::now();
    std::vector<Result> results = decode(rows, batch, TensorView(row_lengths.data(), DType::i32, {count}));
    timed(std::chrono::steady_clock::now() - start, frames);
    std::vector<InFlight> still;
    for (std::size_t r = 0; r < rows.size(); ++r) {
      InFlight u = in_flight[r];
      u.next_frame += row_lengths[r];
      seen(u.utterance, results[r], u.next_frame);
      if (rows[r].last) {
        if (phrases != nullptr) phrases->leave(u.utterance);
        finals[static_cast<std::size_t>(u.utterance)] = std::move(results[r]);
        ++finished;
      } else {
        still.push_back(u);
      }
    }
    in_flight = std::move(still);
    progress.update(finished);
  }
  return finals;
}

/** decode_as_server() for the decoders whose decode_chunks() returns one Hypothesis per row, reported as a
 *  whole-batch run is (`report`, in input order) and summarised as `name`, chunks of N. */
template <class Decoder>
void report_as_server(BatchInput& input, const NpyArray& lengths, const DecodeOptions& options, std::int64_t lanes,
                      Stream& stream, ProgressBar& progress, DecodeReport& report, Decoder& decoder,
                      const std::string& name, Device device, UtterancePhrases* phrases = nullptr) {
  // --endpoint: the first chunk after which an endpoint rule fires, per utterance (rule 0: none).
  EndpointConfig endpoints = options.endpoints;
  endpoints.frame_shift_seconds = options.frame_shift_ms / 1000.0;
  std::vector<std::pair<int, std::int64_t>> first_endpoint(static_cast<std::size_t>(input.utterances()), {0, 0});
  const std::vector<Hypothesis> results = decode_as_server<Hypothesis>(
      input, lengths, options.chunk, lanes, stream, progress,
      [&](const std::vector<ChunkRow>& rows, const TensorView& batch, const TensorView& row_lengths) {
        return decoder.decode_chunks(rows, batch, row_lengths, stream.handle());
      },
      [&](std::chrono::steady_clock::duration spent, std::int64_t frames) { report.add_time(spent, frames); },
      [&](std::int64_t utterance, const Hypothesis& so_far, std::int64_t frames) {
        auto& first = first_endpoint[static_cast<std::size_t>(utterance)];
        if (options.endpoint && first.first == 0) first = {detect_endpoint(endpoints, so_far, frames), frames};
      },
      phrases);
  std::int64_t by_rule[4] = {0, 0, 0, 0};
  for (std::size_t u = 0; u < results.size(); ++u) {
    if (!options.endpoint) {
      report.add(results[u]);
      continue;
    }
    const auto [rule, frame] = first_endpoint[u];
    ++by_rule[rule];
    const nlohmann::json extra = {
        {"endpoint", rule == 0
                         ? nlohmann::json(nullptr)
                         : nlohmann::json{{"rule", rule},
                                          {"frame", frame},
                                          {"seconds", static_cast<double>(frame) * endpoints.frame_shift_seconds}}}};
    report.add(results[u], nullptr, &extra);
  }
  if (options.endpoint) {
    std::fprintf(stderr, "endpoints: %lld of %lld utterances (rule 1: %lld, rule 2: %lld, rule 3: %lld)\n",
                 static_cast<long long>(by_rule[1] + by_rule[2] + by_rule[3]), static_cast<long long>(results.size()),
                 static_cast<long long>(by_rule[1]), static_cast<long long>(by_rule[2]),
                 static_cast<long long>(by_rule[3]));
  }
  progress.finish();
  report.finish(name + ", chunks of " + std::to_string(options.chunk), device, decoder.graph_mode());
}

}  // namespace asrdec::cli
