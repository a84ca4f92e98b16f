// asrdec._asrdec: WFST decoding of CTC outputs — graphs, the decoder, word boosts, word timings — and building a
// CTC decoding graph (TLG) with OpenFst.

#include <nanobind/nanobind.h>
#include <nanobind/stl/pair.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include "asrdec/text/symbol_table.hpp"
#include "asrdec/text/word_timing.hpp"
#include "asrdec/wfst/graph_builder.hpp"
#include "asrdec/wfst/wfst_decoder.hpp"
#include "asrdec/wfst/wfst_graph.hpp"
#include "bindings.hpp"
#include "keywords.hpp"
#include "tensor_arg.hpp"

namespace asrdec::python {
namespace {

using namespace nb::literals;

std::vector<WordBoosts> boosts_of(nb::handle boosts) {
  if (boosts.is_none()) return {};
  return nb::cast<std::vector<WordBoosts>>(boosts);
}

}  // namespace

void bind_wfst(nb::module_& m) {
  nb::class_<WfstGraph>(m, "WfstGraph", "A decoding graph (OpenFst binary, e.g. a TLG from build_ctc_graph).")
      .def_static(
          "load",
          [](const std::string& path) {
            nb::gil_scoped_release release;
            return WfstGraph::load(path);
          },
          "path"_a)
      .def_prop_ro("num_states", &WfstGraph::num_states)
      .def_prop_ro("num_arcs", &WfstGraph::num_arcs)
      .def_prop_ro("start_state", &WfstGraph::start_state)
      .def_prop_ro("max_input_label", &WfstGraph::max_input_label)
      .def_prop_ro("max_output_label", &WfstGraph::max_output_label)
      .def_prop_ro("source", &WfstGraph::source);

  nb::class_<WfstResult>(m, "WfstResult", "One utterance's best path through the graph (asrdec::WfstResult).")
      .def_ro("words", &WfstResult::words, "Word ids (the graph's output labels).")
      .def_ro("word_start_frames", &WfstResult::word_start_frames)
      .def_ro("word_end_frames", &WfstResult::word_end_frames, "Inclusive.")
      .def_ro("cost", &WfstResult::cost)
      .def_ro("graph_cost", &WfstResult::graph_cost)
      .def_ro("acoustic_cost", &WfstResult::acoustic_cost)
      .def_ro("reached_final", &WfstResult::reached_final)
      .def_ro("overflow", &WfstResult::overflow)
      .def_ro("frames", &WfstResult::frames)
      .def_prop_ro("score", &WfstResult::score, "-cost.");

  m.def("read_word_boosts", &read_word_boosts, "path"_a, "words"_a,
        "A word boosting file (word score per line) as (word id, score) pairs.");
  m.def(
      "word_timings",
      [](const WfstResult& r, const SymbolTable& words, double shift) { return word_timings(r, words, shift); },
      "result"_a, "words"_a, "frame_shift_seconds"_a, "The words of a WFST result with their frames and seconds.");

  nb::class_<WfstDecoder> decoder(m, "WfstDecoder", "Exact token-passing beam search of CTC outputs through a graph.");
  decoder
      .def(
          "__init__",
          [](WfstDecoder* self, const WfstGraph& graph, nb::handle device, const nb::kwargs& kwargs) {
            WfstDecoderConfig config;
            std::vector<Keyword> keywords = {field("beam", config.beam),
                                             field("max_active", config.max_active),
                                             field("min_active", config.min_active),
                                             field("max_tokens_per_frame", config.max_tokens_per_frame),
                                             field("acoustic_scale", config.acoustic_scale),
                                             field("use_final_probs", config.use_final_probs),
                                             field("blank_id", config.blank_id),
                                             field("word_start_columns", config.word_start_columns),
                                             field("max_open_utterances", config.max_open_utterances),
                                             field("device_frame_tokens", config.device_frame_tokens),
                                             field("device_history_tokens", config.device_history_tokens),
                                             field("device_fast_tokens", config.device_fast_tokens)};
            add_execution(keywords, config);
            apply_keywords(kwargs, keywords, "WfstDecoder");
            new (self) WfstDecoder(graph, config, device_of(device));
          },
          "graph"_a, "device"_a = "cpu", "kwargs"_a, "Keywords: WfstDecoderConfig's fields.")
      .def(
          "decode",
          [](WfstDecoder& d, nb::handle x, nb::handle lengths, nb::handle boosts, nb::handle stream) {
            const std::vector<WordBoosts> word_boosts = boosts_of(boosts);
            const StreamHandle s = stream_of(stream);
            const BatchArg batch(x, lengths, "logprobs", s);
            nb::gil_scoped_release release;
            return d.decode(batch.input(), batch.lengths(), word_boosts, s);
          },
          "logprobs"_a, "lengths"_a = nb::none(), "boosts"_a = nb::none(), "stream"_a = nb::none(),
          "Decodes a batch (as the other decoders' decode: [B, T, V] with lengths, one utterance [T, V], or a list of "
          "host utterances); boosts: per utterance, (word id, score) pairs (or None).")
      .def(
          "decode_nbest",
          [](WfstDecoder& d, nb::handle x, nb::handle lengths, std::int64_t n, nb::handle boosts, nb::handle stream) {
            const std::vector<WordBoosts> word_boosts = boosts_of(boosts);
            const StreamHandle s = stream_of(stream);
            const BatchArg batch(x, lengths, "logprobs", s);
            nb::gil_scoped_release release;
            return d.decode_nbest(batch.input(), batch.lengths(), n, word_boosts, s);
          },
          "logprobs"_a, "lengths"_a, "n"_a, "boosts"_a = nb::none(), "stream"_a = nb::none(),
          "Each utterance's n best distinct word sequences among the final frame's surviving paths, best first.")
      .def(
          "decode_chunks",
          [](WfstDecoder& d, nb::handle rows, nb::handle x, nb::handle lengths, nb::handle boosts, nb::handle stream) {
            const std::vector<ChunkRow> chunk_rows = chunk_rows_of(rows);
            const std::vector<WordBoosts> word_boosts = boosts_of(boosts);
            const StreamHandle s = stream_of(stream);
            const TensorArg logprobs(x, "logprobs", s);
            const TensorArg n(lengths, "lengths", s);
            nb::gil_scoped_release release;
            return d.decode_chunks(chunk_rows, logprobs.view(), n.view(), word_boosts, s);
          },
          "rows"_a, "logprobs"_a, "lengths"_a, "boosts"_a = nb::none(), "stream"_a = nb::none(),
          "Streaming: row b continues utterance rows[b] (docs/streaming.md).")
      .def("cancel", &WfstDecoder::cancel, "utterance"_a)
      .def_prop_ro("open_utterances", &WfstDecoder::open_utterances)
      .def_prop_ro("lane_device_bytes", &WfstDecoder::lane_device_bytes)
      .def_prop_ro("device_bytes", &WfstDecoder::device_bytes,
                   "CUDA: the device memory the decoder holds now (graph, lanes, channels, buffers); 0 on the CPU.")
      .def_prop_ro("host_fallbacks", &WfstDecoder::host_fallbacks,
                   "CUDA: rows of decode() and decode_nbest() and chunks of decode_chunks() that a lane could not "
                   "hold, decoded on the CPU instead (same results).")
      .def_prop_ro("device", &WfstDecoder::device)
      .def_prop_ro("graph_mode", [](const WfstDecoder& d) { return std::string(to_string(d.graph_mode())); })
      .def("__repr__", [](const WfstDecoder& d) { return d.config().to_string(); });

  nb::class_<CtcGraphSummary>(m, "CtcGraphSummary", "What build_ctc_graph made.")
      .def_ro("tlg_states", &CtcGraphSummary::tlg_states)
      .def_ro("tlg_arcs", &CtcGraphSummary::tlg_arcs)
      .def_ro("lg_states", &CtcGraphSummary::lg_states)
      .def_ro("lg_arcs", &CtcGraphSummary::lg_arcs)
      .def_ro("g_states", &CtcGraphSummary::g_states)
      .def_ro("g_arcs", &CtcGraphSummary::g_arcs)
      .def_ro("num_columns", &CtcGraphSummary::num_columns)
      .def_ro("blank_id", &CtcGraphSummary::blank_id)
      .def_ro("words", &CtcGraphSummary::words)
      .def_ro("pronunciations", &CtcGraphSummary::pronunciations)
      .def_ro("disambiguation_symbols", &CtcGraphSummary::disambiguation_symbols)
      .def_ro("arpa_words_not_in_lexicon", &CtcGraphSummary::arpa_words_not_in_lexicon)
      .def_ro("lexicon_words_not_in_arpa", &CtcGraphSummary::lexicon_words_not_in_arpa)
      .def_ro("arpa_has_unk", &CtcGraphSummary::arpa_has_unk)
      .def_ro("seconds", &CtcGraphSummary::seconds)
      .def("__str__", &CtcGraphSummary::to_string);

  m.def(
      "build_ctc_graph",
      [](const std::string& tokens, const std::string& lexicon, const std::string& arpa, const std::string& graph,
         const std::string& words, const std::string& topology, bool self_loops, std::int32_t blank_id,
         bool clamp_positive_probabilities) {
        CtcGraphOptions options;
        options.topology = parse_ctc_topology(topology);
        options.self_loops = self_loops;
        options.blank_id = blank_id;
        options.clamp_positive_probabilities = clamp_positive_probabilities;
        nb::gil_scoped_release release;
        return build_ctc_graph(tokens, read_lexicon(lexicon), arpa, options, graph, words);
      },
      "tokens"_a, "lexicon"_a, "arpa"_a, "graph"_a, "words"_a, "topology"_a = "standard", "self_loops"_a = true,
      "blank_id"_a = -1, "clamp_positive_probabilities"_a = false,
      "Builds a CTC decoding graph TLG (OpenFst binary at `graph`) and its words table (`words`) from tokens.txt, a "
      "lexicon file (word piece piece ...) and a word-level ARPA LM (as `asrdec graph build --lexicon`).");
}

}  // namespace asrdec::python
