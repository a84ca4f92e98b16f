// asrdec._asrdec: CTC greedy and beam decoders, the transducer model, greedy and beam decoders. Every decode call
// reads its tensors through DLPack without a copy and releases the GIL while it runs, so Python threads decode in
// parallel (each on its own decoder: one decoder serves one call at a time).

#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>
#include <nanobind/stl/shared_ptr.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <chrono>
#include <type_traits>

#include "asrdec/ctc/ctc_beam.hpp"
#include "asrdec/ctc/ctc_greedy.hpp"
#include "asrdec/transducer/beam_decoder.hpp"
#include "asrdec/transducer/greedy_decoder.hpp"
#include "asrdec/transducer/transducer_model.hpp"
#include "bindings.hpp"
#include "keywords.hpp"
#include "tensor_arg.hpp"

namespace asrdec::python {
namespace {

using namespace nb::literals;

// decode(x, lengths, stream) and decode_nbest(...) of any decoder: the tensors seen through DLPack, the call made
// without the GIL.
template <class Decoder, class Result>
Result decode_call(Decoder& decoder, Result (Decoder::*method)(const TensorView&, const TensorView&, StreamHandle),
                   const char* input_name, nb::handle input, nb::handle lengths, nb::handle stream) {
  const StreamHandle s = stream_of(stream);
  const BatchArg batch(input, lengths, input_name, s);
  nb::gil_scoped_release release;
  return (decoder.*method)(batch.input(), batch.lengths(), s);
}

template <class Decoder>
std::vector<Hypothesis> decode_chunks_call(Decoder& decoder, const char* input_name, nb::handle rows, nb::handle input,
                                           nb::handle lengths, nb::handle stream) {
  const std::vector<ChunkRow> chunk_rows = chunk_rows_of(rows);
  const StreamHandle s = stream_of(stream);
  const TensorArg x(input, input_name, s);
  const TensorArg n(lengths, "lengths", s);
  nb::gil_scoped_release release;
  return decoder.decode_chunks(chunk_rows, x.view(), n.view(), s);
}

// The methods every decoder has: decode, decode_chunks, cancel, open_utterances, graph_mode, device_bytes, repr.
template <class Decoder>
void bind_common(nb::class_<Decoder>& c, const char* input_name) {
  c.def(
       "decode",
       [input_name](Decoder& d, nb::handle x, nb::handle lengths, nb::handle stream) {
         return decode_call(d, &Decoder::decode, input_name, x, lengths, stream);
       },
       nb::arg(input_name), "lengths"_a = nb::none(), "stream"_a = nb::none(),
       "Decodes a batch: x [B, T, *] and lengths [B] (any DLPack tensor or sequence; None: every row T frames), one "
       "utterance [T, *], or a list of host utterances [T_i, *] (padded here); one Hypothesis per row.")
      .def(
          "decode_chunks",
          [input_name](Decoder& d, nb::handle rows, nb::handle x, nb::handle lengths, nb::handle stream) {
            return decode_chunks_call(d, input_name, rows, x, lengths, stream);
          },
          "rows"_a, nb::arg(input_name), "lengths"_a, "stream"_a = nb::none(),
          "Streaming: row b continues utterance rows[b] (docs/streaming.md); returns each row's result so far.")
      .def("cancel", &Decoder::cancel, "utterance"_a, "Forgets an open utterance; False when it is not open.")
      .def_prop_ro("open_utterances", &Decoder::open_utterances)
      .def_prop_ro("graph_mode", [](const Decoder& d) { return std::string(to_string(d.graph_mode())); })
      .def_prop_ro("device_bytes", &Decoder::device_bytes)
      .def("__repr__", [](const Decoder& d) { return d.config().to_string(); });
}

template <class Decoder>
void bind_nbest(nb::class_<Decoder>& c, const char* input_name) {
  c.def(
      "decode_nbest",
      [input_name](Decoder& d, nb::handle x, nb::handle lengths, nb::handle stream) {
        return decode_call(d, &Decoder::decode_nbest, input_name, x, lengths, stream);
      },
      nb::arg(input_name), "lengths"_a = nb::none(), "stream"_a = nb::none(),
      "Each row's N-best list, best first (inputs as decode's).");
}

// decode_async: the inputs stay alive with the results (a CUDA decode may still read them after the call returns).
struct AsyncInputs {
  AsyncInputs(nb::handle input, const char* input_name, nb::handle lengths, StreamHandle stream)
      : batch(input, lengths, input_name, stream) {}
  BatchArg batch;
};

// An array of the decoder's result buffers as a DLPack tensor on the decoder's device (no copy); `owner` keeps the
// decoder and the inputs alive while the array is.
template <class T>
nb::ndarray<nb::array_api> result_array(const T* data, std::initializer_list<std::size_t> shape, Device device,
                                        nb::handle owner) {
  return nb::ndarray<nb::array_api>(const_cast<T*>(data), shape, owner, {}, nb::dtype<T>(),
                                    device.is_cuda() ? nb::device::cuda::value : nb::device::cpu::value,
                                    device.index());
}

template <class Decoder>
nb::dict decode_async_call(nb::handle self, const char* input_name, nb::handle input, nb::handle lengths,
                           nb::handle stream) {
  Decoder& decoder = nb::cast<Decoder&>(self);
  const StreamHandle s = stream_of(stream);
  auto* inputs = new AsyncInputs(input, input_name, lengths, s);
  const nb::capsule keep(inputs, [](void* p) noexcept { delete static_cast<AsyncInputs*>(p); });
  const nb::tuple owner = nb::make_tuple(self, keep);
  nb::dict out;
  if constexpr (std::is_same_v<Decoder, CtcGreedyDecoder>) {
    CtcGreedyBatchResult r;
    {
      nb::gil_scoped_release release;
      r = decoder.decode_async(inputs->batch.input(), inputs->batch.lengths(), s);
    }
    const auto B = static_cast<std::size_t>(r.batch), L = static_cast<std::size_t>(r.row_stride);
    out["tokens"] = result_array(r.tokens, {B, L}, r.device, owner);
    out["timestamps"] = result_array(r.timestamps, {B, L}, r.device, owner);
    out["token_scores"] = result_array(r.token_logprobs, {B, L}, r.device, owner);
    out["lengths"] = result_array(r.lengths, {B}, r.device, owner);
    out["am_scores"] = result_array(r.scores, {B}, r.device, owner);
    if (r.lm_scores != nullptr) out["lm_scores"] = result_array(r.lm_scores, {B}, r.device, owner);
    if (r.boost_scores != nullptr) out["boost_scores"] = result_array(r.boost_scores, {B}, r.device, owner);
  } else {
    BatchedHypsView r;
    {
      nb::gil_scoped_release release;
      r = decoder.decode_async(inputs->batch.input(), inputs->batch.lengths(), s);
    }
    const auto B = static_cast<std::size_t>(r.batch), L = static_cast<std::size_t>(r.capacity);
    out["tokens"] = result_array(r.tokens, {B, L}, r.device, owner);
    out["timestamps"] = result_array(r.timestamps, {B, L}, r.device, owner);
    out["durations"] = result_array(r.durations, {B, L}, r.device, owner);
    out["token_scores"] = result_array(r.scores, {B, L}, r.device, owner);
    out["token_confidences"] = result_array(r.confidences, {B, L}, r.device, owner);
    out["lengths"] = result_array(r.lengths, {B}, r.device, owner);
    out["am_scores"] = result_array(r.total_scores, {B}, r.device, owner);
  }
  return out;
}

// The methods of the greedy decoders' asynchronous path.
template <class Decoder>
void bind_async(nb::class_<Decoder>& c, const char* input_name) {
  c.def(
       "decode_async",
       [input_name](nb::handle self, nb::handle x, nb::handle lengths, nb::handle stream) {
         return decode_async_call<Decoder>(self, input_name, x, lengths, stream);
       },
       nb::arg(input_name), "lengths"_a = nb::none(), "stream"_a = nb::none(),
       "Enqueues the decode (inputs as decode's) on `stream` and returns the decoder's result buffers as DLPack "
       "tensors on its device, "
       "without a copy: tokens, timestamps, token_scores [B, L] (row b holds lengths[b] entries), lengths and "
       "am_scores [B] (and the decoder's other arrays). They stay valid until this decoder's next call; read them "
       "after synchronize_and_check(stream), or in work ordered after it on `stream`.")
      .def(
          "synchronize_and_check",
          [](Decoder& d, nb::handle stream) {
            const StreamHandle s = stream_of(stream);
            nb::gil_scoped_release release;
            d.synchronize_and_check(s);
          },
          "stream"_a = nb::none(),
          "Waits for `stream`; raises InvalidArgument if the last decode_async met a bad value.");
}

// The C++ side of the overhead benchmark (python/bench/call_overhead.py): `iterations` decode() calls made in C++ on
// tensors converted once; returns the seconds they took.
template <class Decoder>
double time_cpp_decode(Decoder& decoder, const char* input_name, nb::handle input, nb::handle lengths,
                       std::int64_t iterations) {
  const TensorArg x(input, input_name, nullptr);
  const TensorArg n(lengths, "lengths", nullptr);
  nb::gil_scoped_release release;
  const auto start = std::chrono::steady_clock::now();
  for (std::int64_t i = 0; i < iterations; ++i) decoder.decode(x.view(), n.view(), nullptr);
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

// A decoder's loop counts (GreedyLoopCounts, BeamLoopCounts) as a dict of their passes over the batch.
template <class Counts>
nb::dict pass_counts(const Counts& c) {
  nb::dict out;
  out["outer"] = c.outer;
  out["inner"] = c.inner;
  out["joint_passes"] = c.joint_passes;
  return out;
}

void bind_ctc(nb::module_& m) {
  nb::class_<CtcGreedyDecoder> greedy(m, "CtcGreedyDecoder", "CTC greedy decoding, with optional LM and boosting.");
  greedy.def(
      "__init__",
      [](CtcGreedyDecoder* self, nb::handle device, const nb::kwargs& kwargs) {
        CtcGreedyConfig config;
        BatchLimits limits;
        std::vector<Keyword> keywords = {field("blank_id", config.blank_id)};
        add_fusion(keywords, config);
        add_execution(keywords, config);
        add_limits(keywords, limits);
        apply_keywords(kwargs, keywords, "CtcGreedyDecoder");
        new (self) CtcGreedyDecoder(device_of(device), config, limits);
      },
      "device"_a = "cpu", "kwargs"_a, "Keywords: CtcGreedyConfig's and BatchLimits' fields.");
  bind_common(greedy, "logprobs");
  bind_async(greedy, "logprobs");
  greedy.def_prop_ro("device", &CtcGreedyDecoder::device);

  nb::class_<CtcBeamDecoder> beam(m, "CtcBeamDecoder", "CTC prefix beam search, with optional LM and boosting.");
  beam.def(
      "__init__",
      [](CtcBeamDecoder* self, nb::handle device, const nb::kwargs& kwargs) {
        CtcBeamConfig config;
        BatchLimits limits;
        std::vector<Keyword> keywords = {field("blank_id", config.blank_id),
                                         field("beam", config.beam),
                                         field("beam_beta", config.beam_beta),
                                         field("beam_threshold", config.beam_threshold),
                                         field("unique_transcripts", config.unique_transcripts),
                                         field("merge_before_prune", config.merge_before_prune),
                                         field("log_add", config.log_add),
                                         field("beam_size_token", config.beam_size_token)};
        add_fusion(keywords, config);
        add_execution(keywords, config);
        add_limits(keywords, limits);
        apply_keywords(kwargs, keywords, "CtcBeamDecoder");
        new (self) CtcBeamDecoder(device_of(device), config, limits);
      },
      "device"_a = "cpu", "kwargs"_a, "Keywords: CtcBeamConfig's and BatchLimits' fields.");
  bind_common(beam, "logprobs");
  bind_nbest(beam, "logprobs");
  beam.def_prop_ro("device", &CtcBeamDecoder::device);
}

void bind_transducer(nb::module_& m) {
  nb::class_<TransducerModel>(m, "TransducerModel", "The decoder side of an RNN-T or TDT model (joint, predictor).")
      .def_static(
          "load",
          [](const std::string& path, nb::handle device, nb::handle weight_dtype) {
            TransducerLoadOptions options;
            if (!weight_dtype.is_none()) {
              options.override_weight_dtype = true;
              options.weight_dtype = parse_dtype(nb::cast<std::string>(weight_dtype));
            }
            const Device where = device_of(device);
            nb::gil_scoped_release release;
            return TransducerModel::load(path, where, options);
          },
          "path"_a, "device"_a = "cpu", "weight_dtype"_a = nb::none(),
          "Loads a model in asrdec's safetensors format (docs/model-format.md).")
      .def_prop_ro("type", [](const TransducerModel& model) { return std::string(to_string(model.type())); })
      .def_prop_ro("vocab_size", &TransducerModel::vocab_size)
      .def_prop_ro("blank_id", &TransducerModel::blank_id)
      .def_prop_ro("durations", &TransducerModel::durations)
      .def_prop_ro("joint_hidden", &TransducerModel::joint_hidden)
      .def_prop_ro("device", &TransducerModel::device)
      .def("__repr__", &TransducerModel::to_string);

  nb::class_<TransducerGreedyDecoder> greedy(m, "TransducerGreedyDecoder",
                                             "RNN-T/TDT greedy decoding: frame looping, label looping or WIND.");
  greedy.def(
      "__init__",
      [](TransducerGreedyDecoder* self, const TransducerModel& model, const nb::kwargs& kwargs) {
        TransducerGreedyConfig config;
        BatchLimits limits;
        std::vector<Keyword> keywords = {
            choice("algorithm", config.algorithm, [](const std::string& n) { return parse_greedy_algorithm(n); }),
            field("window", config.window),
            field("max_symbols_per_frame", config.max_symbols_per_frame),
            choice("confidence_measure", config.confidence.measure,
                   [](const std::string& n) { return parse_confidence_measure(n); }),
            choice("entropy_norm", config.confidence.norm, [](const std::string& n) { return parse_entropy_norm(n); }),
            field("confidence_alpha", config.confidence.alpha)};
        add_fusion(keywords, config);
        add_execution(keywords, config);
        add_limits(keywords, limits);
        apply_keywords(kwargs, keywords, "TransducerGreedyDecoder");
        new (self) TransducerGreedyDecoder(model, config, limits);
      },
      "model"_a, "kwargs"_a, "Keywords: TransducerGreedyConfig's and BatchLimits' fields.");
  bind_common(greedy, "enc_proj");
  bind_async(greedy, "enc_proj");
  greedy.def_prop_ro("device", &TransducerGreedyDecoder::device);
  greedy.def(
      "loop_counts",
      [](const TransducerGreedyDecoder& d) {
        const GreedyLoopCounts c = d.loop_counts();
        nb::dict out = pass_counts(c);
        out["choices"] = c.choices;
        return out;
      },
      "How the last call's loops ran (GreedyLoopCounts): a dict of its outer and inner passes over the batch, the "
      "joint choices the rows used and the passes that evaluated the joint; choices / (joint_passes * batch) is the "
      "fraction of row evaluations that did work.");

  nb::class_<TransducerBeamDecoder> beam(m, "TransducerBeamDecoder",
                                         "RNN-T/TDT batched beam search: ALSD++, AES++ or WIND beam.");
  beam.def(
      "__init__",
      [](TransducerBeamDecoder* self, const TransducerModel& model, const nb::kwargs& kwargs) {
        TransducerBeamConfig config;
        BatchLimits limits;
        std::vector<Keyword> keywords = {
            choice("algorithm", config.algorithm, [](const std::string& n) { return parse_beam_algorithm(n); }),
            field("beam", config.beam),
            field("max_symbols_per_frame", config.max_symbols_per_frame),
            field("aes_num_steps", config.aes_num_steps),
            field("aes_expansion_beta", config.aes_expansion_beta),
            field("aes_expansion_gamma", config.aes_expansion_gamma),
            field("wind_window", config.wind_window),
            field("length_normalized", config.length_normalized),
            field("unique_transcripts", config.unique_transcripts),
            choice("pruning", config.pruning, [](const std::string& n) { return parse_fusion_pruning(n); }),
            choice("blank_scoring", config.blank_scoring,
                   [](const std::string& n) { return parse_blank_lm_scoring(n); })};
        add_fusion(keywords, config);
        add_execution(keywords, config);
        add_limits(keywords, limits);
        apply_keywords(kwargs, keywords, "TransducerBeamDecoder");
        new (self) TransducerBeamDecoder(model, config, limits);
      },
      "model"_a, "kwargs"_a, "Keywords: TransducerBeamConfig's and BatchLimits' fields.");
  bind_common(beam, "enc_proj");
  bind_nbest(beam, "enc_proj");
  beam.def(
      "loop_counts", [](const TransducerBeamDecoder& d) { return pass_counts(d.loop_counts()); },
      "How the last call's search loop ran (BeamLoopCounts): a dict of its outer passes (ALSD++ and WIND beam: "
      "steps; AES++: frames), inner passes (AES++: expansion steps) and the passes that evaluated the joint.");
}

}  // namespace

void bind_decoders(nb::module_& m) {
  bind_ctc(m);
  bind_transducer(m);
  m.def(
      "_time_cpp_decode",
      [](nb::handle decoder, nb::handle x, nb::handle lengths, std::int64_t iterations) {
        if (nb::isinstance<CtcGreedyDecoder>(decoder)) {
          return time_cpp_decode(nb::cast<CtcGreedyDecoder&>(decoder), "logprobs", x, lengths, iterations);
        }
        return time_cpp_decode(nb::cast<TransducerGreedyDecoder&>(decoder), "enc_proj", x, lengths, iterations);
      },
      "decoder"_a, "x"_a, "lengths"_a, "iterations"_a,
      "Seconds `iterations` decode() calls take when made in C++ (CtcGreedyDecoder, TransducerGreedyDecoder).");
}

}  // namespace asrdec::python
