// OpenFst graphs (vector and const FSTs of the standard arc), as `decode ctc-wfst --graph` reads them. Oracle beyond
// "no crash": an accepted graph decodes fixed frames chunk by chunk exactly as whole utterances (words, frames,
// costs and flags), the WFST decoder's streaming promise.

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <optional>
#include <random>
#include <vector>

#include "asrdec/asrdec.hpp"
#include "fuzz_file.hpp"

namespace {

void expect_same(const asrdec::WfstResult& a, const asrdec::WfstResult& b) {
  ASRDEC_FUZZ_CHECK(a.words == b.words && a.word_start_frames == b.word_start_frames &&
                    a.word_end_frames == b.word_end_frames);
  ASRDEC_FUZZ_CHECK(a.cost == b.cost && a.graph_cost == b.graph_cost && a.reached_final == b.reached_final &&
                    a.overflow == b.overflow && a.frames == b.frames);
}

void check_decoding(const asrdec::WfstGraph& graph) {
  // Keep each input fast; the logits a graph needs have max_input_label columns, which the caller provides.
  if (graph.num_states() > 4096 || graph.num_arcs() > 1 << 15 || graph.max_input_label() > 4096) return;
  const std::int64_t B = 2, T = 6, C = std::max<std::int64_t>(graph.max_input_label(), 2);
  std::mt19937 rng(5);
  std::uniform_real_distribution<float> unit(-6.0f, 0.0f);
  std::vector<float> frames(static_cast<std::size_t>(B * T * C));
  for (float& v : frames) v = unit(rng);
  const std::vector<std::int32_t> lengths = {6, 4};
  asrdec::WfstDecoderConfig config;
  config.beam = 8.0f;
  config.max_active = 64;
  asrdec::WfstDecoder decoder(graph, config);
  const std::vector<asrdec::WfstResult> whole =
      decoder.decode(asrdec::TensorView(frames.data(), asrdec::DType::f32, {B, T, C}),
                     asrdec::TensorView(lengths.data(), asrdec::DType::i32, {B}));
  // Whole utterances decoded: the same frames in chunks must decode too (an exception here is a finding).
  // Chunks of 1, 2 and 3 frames.
  std::vector<asrdec::WfstResult> chunked(static_cast<std::size_t>(B));
  for (std::int64_t frame = 0, width = 1; frame < T; frame += width, ++width) {
    const std::int64_t w = std::min(width, T - frame);
    std::vector<float> piece(static_cast<std::size_t>(B * w * C));
    std::vector<std::int32_t> piece_lengths(static_cast<std::size_t>(B));
    std::vector<asrdec::ChunkRow> chunks;
    for (std::int64_t b = 0; b < B; ++b) {
      for (std::int64_t t = 0; t < w; ++t) {
        std::copy_n(frames.begin() + ((b * T + frame + t) * C), C, piece.begin() + ((b * w + t) * C));
      }
      piece_lengths[static_cast<std::size_t>(b)] =
          static_cast<std::int32_t>(std::clamp<std::int64_t>(lengths[static_cast<std::size_t>(b)] - frame, 0, w));
      chunks.push_back(asrdec::ChunkRow{b, frame == 0, frame + w >= T});
    }
    std::vector<asrdec::WfstResult> out =
        decoder.decode_chunks(chunks, asrdec::TensorView(piece.data(), asrdec::DType::f32, {B, w, C}),
                              asrdec::TensorView(piece_lengths.data(), asrdec::DType::i32, {B}));
    if (frame + w >= T) chunked = std::move(out);
  }
  for (std::size_t b = 0; b < whole.size(); ++b) expect_same(whole[b], chunked[b]);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static asrdec::fuzz::FuzzFile input("graph.fst");
  std::optional<asrdec::WfstGraph> graph;
  try {
    graph = asrdec::WfstGraph::load(input.write(data, size));
  } catch (const asrdec::Error&) {
    return 0;  // a typed refusal
  }
  try {
    check_decoding(*graph);
  } catch (const asrdec::Error& error) {
    std::fprintf(stderr, "an accepted graph failed to decode: %s\n", error.what());
    std::abort();
  }
  return 0;
}
