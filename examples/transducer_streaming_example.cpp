// A streaming server's decoding loop (docs/streaming.md): utterances arrive one after another, at most `lanes` are
// in flight, and every call of decode_chunks() carries the next chunk of each utterance in flight — first chunks,
// middle chunks and last chunks of different utterances, at different offsets, in one call. The decoder keeps
// each utterance's state under the caller's id between calls; the next utterance joins as soon as one finishes.
// The final results equal whole-utterance decoding exactly (tokens, timestamps and scores).
//
//   transducer_streaming_example model.safetensors enc_proj.npy lengths.npy tokens.txt [chunk_frames] [cpu|cuda]
//                                [lanes]

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <deque>
#include <string>
#include <vector>

#include "example_support.hpp"

int main(int argc, char** argv) {
  if (argc < 5) {
    std::fprintf(stderr,
                 "usage: %s model.safetensors enc_proj.npy lengths.npy tokens.txt [chunk_frames] [cpu|cuda] [lanes]\n",
                 argv[0]);
    return 2;
  }
  try {
    const std::int64_t chunk = argc > 5 ? std::max(1, std::atoi(argv[5])) : 8;
    const asrdec::Device device = asrdec::Device::parse(argc > 6 ? argv[6] : "cpu");
    const std::int64_t lanes = argc > 7 ? std::max(1, std::atoi(argv[7])) : 8;
    const asrdec::TransducerModel model = asrdec::TransducerModel::load(argv[1], device);
    const asrdec::NpyArray enc_proj = asrdec::read_npy(argv[2]);  // [B, T, J] float32
    const asrdec::NpyArray lengths = asrdec::read_npy(argv[3]);   // [B] int32
    const asrdec::Vocabulary vocabulary = asrdec::Vocabulary::load(argv[4]);
    if (enc_proj.dtype() != asrdec::DType::f32 || lengths.dtype() != asrdec::DType::i32) {
      std::fprintf(stderr, "this example reads float32 enc_proj and int32 lengths\n");
      return 2;
    }
    const std::int64_t B = enc_proj.shape()[0], T = enc_proj.shape()[1], J = enc_proj.shape()[2];
    const auto* frames = static_cast<const float*>(enc_proj.data());
    const auto* length = static_cast<const std::int32_t*>(lengths.data());

    asrdec::Stream stream(device);
    asrdec::BatchLimits limits;
    limits.max_batch = lanes;                // rows per call
    limits.max_frames = chunk;               // frames per row
    limits.max_open_utterances = 2 * lanes;  // utterances whose state the decoder keeps
    asrdec::TransducerGreedyDecoder decoder(model, asrdec::TransducerGreedyConfig{}, limits);  // label looping

    // The server's side: which utterance each id is, and where it is. Ids are the server's own (here 1000 + index).
    struct InFlight {
      std::int64_t utterance;
      std::int64_t next_frame = 0;
    };
    std::deque<std::int64_t> waiting;
    for (std::int64_t b = 0; b < B; ++b) waiting.push_back(b);
    std::vector<InFlight> in_flight;
    std::vector<asrdec::Hypothesis> finals(static_cast<std::size_t>(B));
    std::vector<float> piece(static_cast<std::size_t>(lanes * chunk * J));
    asrdec::DeviceBuffer<float> on_device;
    if (device.is_cuda()) on_device = asrdec::DeviceBuffer<float>(piece.size(), device);
    std::int64_t calls = 0;
    while (!waiting.empty() || !in_flight.empty()) {
      while (static_cast<std::int64_t>(in_flight.size()) < lanes && !waiting.empty()) {  // join as lanes free up
        in_flight.push_back(InFlight{waiting.front()});
        waiting.pop_front();
      }
      // One row per utterance in flight: its next `chunk` frames (fewer, or none, at its end).
      std::vector<asrdec::ChunkRow> rows;
      std::vector<std::int32_t> row_lengths;
      for (std::size_t r = 0; r < in_flight.size(); ++r) {
        const InFlight& u = in_flight[r];
        const std::int64_t n = std::clamp<std::int64_t>(length[u.utterance] - u.next_frame, 0, chunk);
        std::memcpy(piece.data() + r * chunk * J, frames + (u.utterance * T + u.next_frame) * J, sizeof(float) * n * J);
        rows.push_back(
            asrdec::ChunkRow{1000 + u.utterance, u.next_frame == 0, u.next_frame + n == length[u.utterance]});
        row_lengths.push_back(static_cast<std::int32_t>(n));
      }
      const auto count = static_cast<std::int64_t>(rows.size());
      asrdec::TensorView view(piece.data(), asrdec::DType::f32, {count, chunk, J});
      if (device.is_cuda()) {
        asrdec::copy_bytes_async(on_device.data(), device, piece.data(), asrdec::Device::cpu(),
                                 static_cast<std::size_t>(count * chunk * J) * sizeof(float), stream.handle());
        view = asrdec::TensorView(on_device.data(), asrdec::DType::f32, {count, chunk, J}, device);
      }
      const std::vector<asrdec::Hypothesis> results = decoder.decode_chunks(
          rows, view, asrdec::TensorView(row_lengths.data(), asrdec::DType::i32, {count}), stream.handle());
      if (calls++ == 0) {
        std::printf("first call, %lld utterances in flight; 0 so far: %s\n", static_cast<long long>(count),
                    vocabulary.detokenize(results[0].tokens).c_str());
      }
      std::vector<InFlight> still;
      for (std::size_t r = 0; r < in_flight.size(); ++r) {
        InFlight u = in_flight[r];
        u.next_frame += row_lengths[r];
        if (results[r].is_final) {
          finals[static_cast<std::size_t>(u.utterance)] = results[r];
        } else {
          still.push_back(u);
        }
      }
      in_flight = std::move(still);
    }
    // The same utterances decoded whole, for comparison: tokens, timestamps and scores are the same bits.
    const example::OnDevice whole_input = example::place(enc_proj, device, stream.handle());
    const auto whole = decoder.decode(whole_input.view, lengths.view(), stream.handle());
    std::int64_t same = 0;
    for (std::int64_t b = 0; b < B; ++b) {
      const asrdec::Hypothesis& s = finals[static_cast<std::size_t>(b)];
      const asrdec::Hypothesis& w = whole[static_cast<std::size_t>(b)];
      if (b < 3) example::print_result(static_cast<std::size_t>(b), s, vocabulary);
      same += s.tokens == w.tokens && s.timestamps == w.timestamps && s.score == w.score ? 1 : 0;
    }
    std::printf("%lld calls of at most %lld utterances\n", static_cast<long long>(calls),
                static_cast<long long>(lanes));
    std::printf("streamed in chunks of %lld frames: %lld of %lld transcripts equal whole-utterance decoding\n",
                static_cast<long long>(chunk), static_cast<long long>(same), static_cast<long long>(B));
    return same == B ? 0 : 1;
  } catch (const asrdec::Error& error) {
    std::fprintf(stderr, "error: %s\n", error.what());
    return 1;
  }
}
