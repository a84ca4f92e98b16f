// asrdec._asrdec: AED decoding — AedDecoder over the built-in TransformerDecoderStep or over a decoder step written
// in Python (any object with vocab_size, max_positions, start() and step(); docs/python.md). The search releases the
// GIL; a Python step takes it back for each of its calls.

#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/shared_ptr.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <cstring>

#include "asrdec/aed/aed_decoder.hpp"
#include "asrdec/aed/transformer_step.hpp"
#include "asrdec/core/error.hpp"
#include "bindings.hpp"
#include "keywords.hpp"
#include "tensor_arg.hpp"

namespace asrdec::python {
namespace {

using namespace nb::literals;

// A NumPy int32 copy of n values (the step's row arrays).
nb::object int_array(const std::int32_t* values, std::size_t n) {
  auto* copy = new std::int32_t[n > 0 ? n : 1];
  std::memcpy(copy, values, n * sizeof(std::int32_t));
  nb::capsule owner(copy, [](void* p) noexcept { delete[] static_cast<std::int32_t*>(p); });
  return nb::cast(nb::ndarray<nb::numpy, std::int32_t, nb::ndim<1>>(copy, {n}, owner));
}

// What a Python step returned, as [rows, V] float32 scores copied into `scores`.
void copy_scores(nb::handle result, std::int64_t rows, std::int64_t vocab, float* scores, const char* call) {
  nb::object np = nb::module_::import_("numpy");
  nb::object array = np.attr("ascontiguousarray")(result, "dtype"_a = np.attr("float32"));
  const nb::tuple shape = nb::borrow<nb::tuple>(array.attr("shape"));
  const bool fits =
      shape.size() == 2 && nb::cast<std::int64_t>(shape[0]) == rows && nb::cast<std::int64_t>(shape[1]) == vocab;
  ASRDEC_CHECK_ARG(fits, "AED step: ", call, "() must return scores [", rows, ", ", vocab, "], got shape ",
                   std::string(nb::str(shape).c_str()));
  const auto address = nb::cast<std::uintptr_t>(array.attr("ctypes").attr("data"));
  std::memcpy(scores, reinterpret_cast<const void*>(address), static_cast<std::size_t>(rows * vocab) * sizeof(float));
}

/** A decoder step written in Python: `object` has vocab_size and max_positions (ints) and the methods
 *  start(encoder, encoder_lengths, prompts) and step(parents, tokens, positions, active), each returning host
 *  log-probabilities [rows, V] (anything numpy.asarray takes). The encoder is the object given to decode(). */
class PythonAedStep final : public AedDecoderStep {
 public:
  explicit PythonAedStep(nb::object object) : object_(std::move(object)) {
    vocab_ = nb::cast<std::int64_t>(object_.attr("vocab_size"));
    positions_ = nb::cast<std::int64_t>(object_.attr("max_positions"));
    ASRDEC_CHECK_ARG(nb::hasattr(object_, "start") && nb::hasattr(object_, "step"),
                     "AedDecoder: a Python step needs start() and step() methods");
  }
  ~PythonAedStep() override {
    nb::gil_scoped_acquire gil;  // the last reference may go on a thread without the GIL
    object_.reset();
    encoder_.reset();
  }
  Device device() const override { return Device::cpu(); }
  std::int64_t vocab_size() const override { return vocab_; }
  std::int64_t max_positions() const override { return positions_; }
  std::unique_ptr<AedStepSession> start_session(std::int64_t max_rows) const override;

  /** The encoder object of the decode call in progress (set with the GIL held). */
  void set_encoder(nb::object encoder) { encoder_ = std::move(encoder); }

 private:
  friend class PythonAedSession;
  nb::object object_;
  nb::object encoder_;
  std::int64_t vocab_ = 0;
  std::int64_t positions_ = 0;
};

class PythonAedSession final : public AedStepSession {
 public:
  explicit PythonAedSession(const PythonAedStep& step) : step_(step) {}

  void start(const TensorView&, const std::int64_t* lengths, const std::vector<std::vector<std::int32_t>>& prompts,
             float* scores, StreamHandle) override {
    nb::gil_scoped_acquire gil;
    auto* copy = new std::int64_t[prompts.size() > 0 ? prompts.size() : 1];
    std::memcpy(copy, lengths, prompts.size() * sizeof(std::int64_t));
    nb::capsule owner(copy, [](void* p) noexcept { delete[] static_cast<std::int64_t*>(p); });
    nb::object length_array =
        nb::cast(nb::ndarray<nb::numpy, std::int64_t, nb::ndim<1>>(copy, {prompts.size()}, owner));
    nb::object result = step_.object_.attr("start")(step_.encoder_, length_array, nb::cast(prompts));
    copy_scores(result, static_cast<std::int64_t>(prompts.size()), step_.vocab_, scores, "start");
  }

  void step(const std::int32_t* parents, const std::int32_t* tokens, const std::int32_t* positions,
            const std::int32_t* active, std::int64_t rows, float* scores, StreamHandle) override {
    nb::gil_scoped_acquire gil;
    const auto n = static_cast<std::size_t>(rows);
    nb::object result = step_.object_.attr("step")(int_array(parents, n), int_array(tokens, n), int_array(positions, n),
                                                   int_array(active, n));
    copy_scores(result, rows, step_.vocab_, scores, "step");
  }

 private:
  const PythonAedStep& step_;
};

std::unique_ptr<AedStepSession> PythonAedStep::start_session(std::int64_t) const {
  return std::make_unique<PythonAedSession>(*this);
}

AedSearch parse_search(const std::string& name) {
  if (name == "greedy") return AedSearch::greedy;
  if (name == "beam") return AedSearch::beam;
  throw InvalidArgument("AedDecoder: search must be 'greedy' or 'beam', got '" + name + "'");
}

// The decoder with the Python step it wraps (if any), so decode() can hand the step its encoder object.
struct PyAedDecoder {
  std::shared_ptr<PythonAedStep> python_step;
  std::unique_ptr<AedDecoder> decoder;
};

template <class Call>
auto aed_call(PyAedDecoder& d, nb::handle encoder, nb::handle lengths, nb::handle prompts, Call call) {
  const std::vector<std::vector<std::int32_t>> prompt_lists = nb::cast<std::vector<std::vector<std::int32_t>>>(prompts);
  const TensorArg n(lengths, "encoder_lengths", nullptr);
  if (d.python_step) {
    // A Python step gets the caller's encoder object; the search sees a placeholder of its shape.
    d.python_step->set_encoder(nb::borrow(encoder));
    const nb::tuple shape = nb::borrow<nb::tuple>(nb::module_::import_("numpy").attr("shape")(encoder));
    ASRDEC_CHECK_ARG(shape.size() == 3, "encoder: expected [B, T, D], got ", shape.size(), " dimensions");
    static const float placeholder = 0.0f;
    const TensorView view(
        &placeholder, DType::f32,
        {nb::cast<std::int64_t>(shape[0]), nb::cast<std::int64_t>(shape[1]), nb::cast<std::int64_t>(shape[2])},
        {0, 0, 0}, Device::cpu());
    nb::gil_scoped_release release;
    return call(*d.decoder, view, n.view(), prompt_lists);
  }
  const TensorArg x(encoder, "encoder", nullptr);
  nb::gil_scoped_release release;
  return call(*d.decoder, x.view(), n.view(), prompt_lists);
}

}  // namespace

void bind_aed(nb::module_& m) {
  nb::class_<AedDecoderStep>(m, "AedDecoderStep", "An AED decoder network as asrdec's AED search sees it.")
      .def_prop_ro("vocab_size", &AedDecoderStep::vocab_size)
      .def_prop_ro("max_positions", &AedDecoderStep::max_positions)
      .def_prop_ro("device", &AedDecoderStep::device);

  nb::class_<TransformerDecoderStep, AedDecoderStep>(
      m, "TransformerDecoderStep", "The built-in reference Transformer decoder step (safetensors; CPU).")
      .def_static(
          "load",
          [](const std::string& path, nb::handle device) {
            return TransformerDecoderStep::load(path, device_of(device));
          },
          "path"_a, "device"_a = "cpu")
      .def_prop_ro("bos_id", &TransformerDecoderStep::bos_id)
      .def_prop_ro("eos_id", &TransformerDecoderStep::eos_id)
      .def_prop_ro("default_prompt", &TransformerDecoderStep::default_prompt)
      .def_prop_ro("model_dim", &TransformerDecoderStep::model_dim)
      .def_prop_ro("encoder_dim", &TransformerDecoderStep::encoder_dim)
      .def("__repr__",
           [](const TransformerDecoderStep& s) { return "asrdec.TransformerDecoderStep(" + s.describe() + ")"; });

  nb::class_<PyAedDecoder>(m, "AedDecoder",
                           "Greedy or beam search for attention encoder-decoder models with LM and boosting fusion.")
      .def(
          "__init__",
          [](PyAedDecoder* self, nb::handle step, const nb::kwargs& kwargs) {
            AedDecoderConfig config;
            std::vector<Keyword> keywords = {
                choice("search", config.search, parse_search),  field("beam_size", config.beam_size),
                field("length_penalty", config.length_penalty), field("eos_id", config.eos_id),
                field("max_new_tokens", config.max_new_tokens), field("max_length_delta", config.max_length_delta),
                field("check_values", config.check_values)};
            add_fusion(keywords, config);
            apply_keywords(kwargs, keywords, "AedDecoder");
            new (self) PyAedDecoder();
            std::shared_ptr<const AedDecoderStep> native;
            if (nb::isinstance<AedDecoderStep>(step)) {
              native = nb::cast<std::shared_ptr<AedDecoderStep>>(step);
            } else {
              self->python_step = std::make_shared<PythonAedStep>(nb::borrow(step));
              native = self->python_step;
            }
            self->decoder = std::make_unique<AedDecoder>(native, config);
          },
          "step"_a, "kwargs"_a,
          "step: a TransformerDecoderStep or a Python object with vocab_size, max_positions, start(encoder, "
          "encoder_lengths, prompts) and step(parents, tokens, positions, active) returning log-probabilities "
          "[rows, V]. Keywords: AedDecoderConfig's fields (search 'greedy' or 'beam').")
      .def(
          "decode",
          [](PyAedDecoder& d, nb::handle encoder, nb::handle lengths, nb::handle prompts) {
            return aed_call(d, encoder, lengths, prompts,
                            [](AedDecoder& dec, const TensorView& x, const TensorView& n,
                               const std::vector<std::vector<std::int32_t>>& p) { return dec.decode(x, n, p); });
          },
          "encoder"_a, "encoder_lengths"_a, "prompts"_a,
          "The best hypothesis of each utterance; prompts: one token list per utterance, or one for all.")
      .def(
          "decode_nbest",
          [](PyAedDecoder& d, nb::handle encoder, nb::handle lengths, nb::handle prompts) {
            return aed_call(d, encoder, lengths, prompts,
                            [](AedDecoder& dec, const TensorView& x, const TensorView& n,
                               const std::vector<std::vector<std::int32_t>>& p) { return dec.decode_nbest(x, n, p); });
          },
          "encoder"_a, "encoder_lengths"_a, "prompts"_a, "Each utterance's final hypotheses, best first.")
      .def("__repr__", [](const PyAedDecoder& d) { return d.decoder->config().to_string(); });
}

}  // namespace asrdec::python
