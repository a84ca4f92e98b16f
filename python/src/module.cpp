// asrdec._asrdec: the module's core — exceptions, version, devices, results, vocabularies, LMs and boosting trees —
// and its entry point. The Python names and fields are the C++ ones (docs/python.md).

#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/pair.h>
#include <nanobind/stl/shared_ptr.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <sstream>

#include "asrdec/core/buffer.hpp"
#include "asrdec/core/cpu_threads.hpp"
#include "asrdec/core/device.hpp"
#include "asrdec/core/endpoint.hpp"
#include "asrdec/core/error.hpp"
#include "asrdec/core/stream.hpp"
#include "asrdec/core/version.hpp"
#include "asrdec/hyps/hypothesis.hpp"
#include "asrdec/lm/boosting_tree.hpp"
#include "asrdec/lm/ngram_lm.hpp"
#include "asrdec/text/symbol_table.hpp"
#include "asrdec/text/vocabulary.hpp"
#include "asrdec/text/word_timing.hpp"
#include "bindings.hpp"
#include "keywords.hpp"
#include "tensor_arg.hpp"

namespace asrdec::python {
namespace {

using namespace nb::literals;

// Python exception types of the C++ ones; each is an asrdec.Error and, where one fits, a built-in type too (an
// InvalidArgument is a ValueError), so generic handlers catch them.
struct ExceptionTypes {
  PyObject* error;
  PyObject* invalid_argument;
  PyObject* parse_error;
  PyObject* file_error;
  PyObject* unsupported;
  PyObject* out_of_memory;
  PyObject* cuda_error;
};
ExceptionTypes exception_types{};

PyObject* new_exception(nb::module_& m, const char* name, std::initializer_list<PyObject*> bases, const char* doc) {
  nb::tuple base_tuple = nb::steal<nb::tuple>(PyTuple_New(static_cast<Py_ssize_t>(bases.size())));
  Py_ssize_t i = 0;
  for (PyObject* base : bases) {
    Py_INCREF(base);
    PyTuple_SET_ITEM(base_tuple.ptr(), i++, base);
  }
  const std::string qualified = std::string("asrdec.") + name;
  PyObject* type = PyErr_NewExceptionWithDoc(qualified.c_str(), doc, base_tuple.ptr(), nullptr);
  if (type == nullptr) throw nb::python_error();
  m.attr(name) = nb::handle(type);
  return type;
}

void bind_exceptions(nb::module_& m) {
  ExceptionTypes& t = exception_types;
  t.error = new_exception(m, "Error", {PyExc_RuntimeError}, "Every error asrdec raises (asrdec::Error).");
  t.invalid_argument = new_exception(m, "InvalidArgument", {t.error, PyExc_ValueError},
                                     "A bad argument: shape, dtype, device, value, length, configuration.");
  t.parse_error = new_exception(m, "ParseError", {t.error, PyExc_ValueError}, "A malformed file (its name and line).");
  t.file_error = new_exception(m, "FileError", {t.error, PyExc_OSError}, "A file that cannot be opened or read.");
  t.unsupported = new_exception(m, "Unsupported", {t.error, PyExc_NotImplementedError},
                                "A valid request asrdec cannot serve (no CUDA, a model kind it does not know).");
  t.out_of_memory =
      new_exception(m, "OutOfMemory", {t.error, PyExc_MemoryError}, "Memory or a configured capacity ran out.");
  t.cuda_error = new_exception(m, "CudaError", {t.error}, "A CUDA runtime or driver call failed.");
  nb::register_exception_translator([](const std::exception_ptr& p, void*) {
    const ExceptionTypes& types = exception_types;
    try {
      std::rethrow_exception(p);
    } catch (const InvalidArgument& e) {
      PyErr_SetString(types.invalid_argument, e.what());
    } catch (const ParseError& e) {
      PyErr_SetString(types.parse_error, e.what());
    } catch (const FileError& e) {
      PyErr_SetString(types.file_error, e.what());
    } catch (const Unsupported& e) {
      PyErr_SetString(types.unsupported, e.what());
    } catch (const OutOfMemory& e) {
      PyErr_SetString(types.out_of_memory, e.what());
    } catch (const CudaError& e) {
      PyErr_SetString(types.cuda_error, e.what());
    } catch (const Error& e) {
      PyErr_SetString(types.error, e.what());
    }
  });
}

// Python's truth value of an object (NumPy bools included, which nanobind's bool does not take).
bool truthy(nb::handle value) {
  const int truth = PyObject_IsTrue(value.ptr());
  if (truth < 0) throw nb::python_error();
  return truth != 0;
}

// Bytes on a device (or the host), for to_device.
class DeviceBytes {
 public:
  DeviceBytes(Device device, std::size_t bytes) {
    if (device.is_cuda()) {
      device_ = DeviceBuffer<std::byte>(bytes, device);
    } else {
      host_ = HostBuffer<std::byte>(bytes);
    }
  }
  std::byte* data() { return device_.size() > 0 ? device_.data() : host_.data(); }

 private:
  DeviceBuffer<std::byte> device_;
  HostBuffer<std::byte> host_;
};

// The DLPack dtype of an asrdec dtype.
nb::dlpack::dtype dlpack_dtype(DType dtype) {
  switch (dtype) {
    case DType::f16:
      return nb::dlpack::dtype{static_cast<std::uint8_t>(nb::dlpack::dtype_code::Float), 16, 1};
    case DType::bf16:
      return nb::dlpack::dtype{static_cast<std::uint8_t>(nb::dlpack::dtype_code::Bfloat), 16, 1};
    case DType::i32:
      return nb::dtype<std::int32_t>();
    case DType::i64:
      return nb::dtype<std::int64_t>();
    default:
      return nb::dtype<float>();
  }
}

std::string list_string(const std::vector<std::int32_t>& values) {
  std::ostringstream out;
  out << '[';
  for (std::size_t i = 0; i < values.size(); ++i) out << (i > 0 ? ", " : "") << values[i];
  out << ']';
  return out.str();
}

void bind_core(nb::module_& m) {
  m.def("version", &version, "The library's version, e.g. \"0.1.0\" (asrdec.__version__).");
  m.def(
      "build_info", [] { return build_info().to_string(); },
      "How this build was made: version, CUDA architectures, compilers.");
  m.def(
      "cuda_available", [] { return cuda_info().available; }, "Whether this build has CUDA and a device can be used.");
  m.def("cuda_device_count", &cuda_device_count, "CUDA devices this process can use (0 without CUDA).");

  nb::class_<Device>(m, "Device", "A device: the CPU or a CUDA device by index.")
      .def(
          "__init__", [](Device* self, const std::string& text) { new (self) Device(Device::parse(text)); },
          "text"_a = "cpu", "\"cpu\", \"cuda\" or \"cuda:N\".")
      .def_static("cpu", &Device::cpu)
      .def_static("cuda", &Device::cuda, "index"_a = 0)
      .def_prop_ro("index", &Device::index)
      .def_prop_ro("is_cpu", &Device::is_cpu)
      .def_prop_ro("is_cuda", &Device::is_cuda)
      .def("__str__", &Device::to_string)
      .def("__repr__", [](const Device& d) { return "asrdec.Device('" + d.to_string() + "')"; })
      .def("__eq__", [](const Device& a, const Device& b) { return a == b; })
      .def("__hash__", [](const Device& d) { return std::hash<std::string>()(d.to_string()); });

  nb::class_<Hypothesis>(m, "Hypothesis", "One decoding result (asrdec::Hypothesis; docs/results.md).")
      .def(nb::init<>())
      .def_ro("tokens", &Hypothesis::tokens, "Token ids; blank never included.")
      .def_ro("timestamps", &Hypothesis::timestamps, "Frame each token was emitted on.")
      .def_ro("durations", &Hypothesis::durations, "TDT: duration of each token.")
      .def_ro("token_scores", &Hypothesis::token_scores, "Log-probability of each token (greedy decoders).")
      .def_ro("token_confidences", &Hypothesis::token_confidences, "exp(token_scores) (transducer greedy).")
      .def_ro("score", &Hypothesis::score, "am_score + lm_score + boost_score.")
      .def_ro("ranking_score", &Hypothesis::ranking_score, "What N-best lists are sorted by.")
      .def_ro("am_score", &Hypothesis::am_score)
      .def_ro("lm_score", &Hypothesis::lm_score)
      .def_ro("boost_score", &Hypothesis::boost_score)
      .def_ro("is_final", &Hypothesis::is_final, "False for a partial streaming result.")
      .def("token_end_frames", &token_end_frames, "Each token's end frame (timestamp + duration, TDT).")
      .def("__repr__", [](const Hypothesis& h) {
        std::ostringstream out;
        out << "asrdec.Hypothesis(tokens=" << list_string(h.tokens) << ", score=" << h.score
            << (h.is_final ? "" : ", is_final=False") << ')';
        return out.str();
      });

  nb::class_<ChunkRow>(m, "ChunkRow", "A row of a streaming call (asrdec::ChunkRow): which utterance it continues.")
      .def(
          "__init__",
          [](ChunkRow* self, std::int64_t utterance, nb::handle first, nb::handle last, std::int32_t phrase_list) {
            new (self) ChunkRow{utterance, truthy(first), truthy(last), phrase_list};
          },
          "utterance"_a, "first"_a = false, "last"_a = false, "phrase_list"_a = 0,
          "first/last take any truth value (a NumPy bool too).")
      .def_rw("utterance", &ChunkRow::utterance)
      .def_rw("first", &ChunkRow::first)
      .def_rw("last", &ChunkRow::last)
      .def_rw("phrase_list", &ChunkRow::phrase_list);

  m.def("set_cpu_threads", &set_cpu_threads, "threads"_a,
        "Sizes the CPU thread pool all CPU decoders share (0: every core), before the first CPU decoder is made.");
  m.def("cpu_threads", &cpu_threads, "The size of the shared CPU thread pool (its workers plus one caller).");
  nb::class_<EndpointRule>(m, "EndpointRule", "One endpointing rule (asrdec::EndpointRule; docs/streaming.md).")
      .def(
          "__init__",
          [](EndpointRule* self, float min_trailing_silence, float min_utterance_length, bool must_contain_speech,
             bool enabled) {
            new (self) EndpointRule{enabled, must_contain_speech, min_trailing_silence, min_utterance_length};
          },
          "min_trailing_silence"_a = 0.0f, "min_utterance_length"_a = 0.0f, "must_contain_speech"_a = false,
          "enabled"_a = true)
      .def_rw("enabled", &EndpointRule::enabled)
      .def_rw("must_contain_speech", &EndpointRule::must_contain_speech)
      .def_rw("min_trailing_silence", &EndpointRule::min_trailing_silence)
      .def_rw("min_utterance_length", &EndpointRule::min_utterance_length);
  nb::class_<EndpointConfig>(m, "EndpointConfig",
                             "Endpointing rules: 1 silence with nothing said, 2 silence after speech, 3 the longest "
                             "utterance (asrdec::EndpointConfig; sherpa's defaults).")
      .def(
          "__init__",
          [](EndpointConfig* self, double frame_shift_seconds) {
            new (self) EndpointConfig{};
            self->frame_shift_seconds = frame_shift_seconds;
            self->validate();
          },
          "frame_shift_seconds"_a = 0.08)
      .def_rw("rule1", &EndpointConfig::rule1)
      .def_rw("rule2", &EndpointConfig::rule2)
      .def_rw("rule3", &EndpointConfig::rule3)
      .def_rw("frame_shift_seconds", &EndpointConfig::frame_shift_seconds)
      .def("__repr__", &EndpointConfig::to_string);
  m.def(
      "detect_endpoint",
      [](const EndpointConfig& config, const Hypothesis& so_far, std::int64_t frames_decoded) {
        return detect_endpoint(config, so_far, frames_decoded);
      },
      "config"_a, "so_far"_a, "frames_decoded"_a,
      "The endpoint rule (1, 2, 3) that fires for a streamed utterance's result so far after frames_decoded frames, "
      "or 0.");
  m.def(
      "detect_endpoint",
      [](const EndpointConfig& config, std::int64_t frames_decoded, std::int64_t speech_end) {
        return detect_endpoint(config, frames_decoded, speech_end);
      },
      "config"_a, "frames_decoded"_a, "speech_end"_a,
      "The same from frames: speech ends at frame speech_end (exclusive; -1: nothing said).");

  nb::class_<WordTiming>(m, "WordTiming", "A word and its frames and seconds.")
      .def_ro("word", &WordTiming::word)
      .def_ro("start_frame", &WordTiming::start_frame)
      .def_ro("end_frame", &WordTiming::end_frame, "Exclusive.")
      .def_ro("start_seconds", &WordTiming::start_seconds)
      .def_ro("end_seconds", &WordTiming::end_seconds)
      .def_ro("confidence", &WordTiming::confidence, "Aggregated token confidences in [0, 1]; -1 when none.")
      .def("__repr__", [](const WordTiming& w) {
        std::ostringstream out;
        out << "asrdec.WordTiming('" << w.word << "', " << w.start_seconds << ", " << w.end_seconds << ')';
        return out.str();
      });

  nb::class_<Vocabulary>(m, "Vocabulary", "Token strings by id (tokens.txt), and detokenisation.")
      .def(nb::init<std::vector<std::string>>(), "tokens"_a)
      .def_static("load", &Vocabulary::load, "path"_a)
      .def("__len__", &Vocabulary::size)
      .def("token", &Vocabulary::token, "id"_a)
      .def("detokenize", &Vocabulary::detokenize, "ids"_a)
      .def("word_start_ids", &Vocabulary::word_start_ids, "Ids of the tokens that begin a word (a leading ▁).");
  nb::class_<SymbolTable>(m, "SymbolTable", "An OpenFst text symbol table (the words of a WFST graph).")
      .def_static("load", &SymbolTable::load, "path"_a)
      .def("__len__", &SymbolTable::size)
      .def("symbol", &SymbolTable::symbol, "id"_a)
      .def("find", &SymbolTable::find, "word"_a);
  m.def(
      "word_timings",
      [](const Hypothesis& h, const Vocabulary& v, double shift, const std::string& aggregation) {
        return word_timings(h, v, shift, parse_confidence_aggregation(aggregation));
      },
      "hypothesis"_a, "vocabulary"_a, "frame_shift_seconds"_a, "confidence_aggregation"_a = "min",
      "The words of a token hypothesis with their frames, seconds and confidences (min, max, mean or prod of their "
      "tokens').");
  m.def("join_words", &join_words, "words"_a);

  nb::class_<NgramLm>(m, "NgramLm", "An n-gram LM for fusion (ARPA, or asrdec's binary image).")
      .def_static(
          "load",
          [](const std::string& path, nb::handle device, const std::string& vocabulary, std::int64_t vocab_size,
             const std::string& symbol_table, bool normalize_unk, bool clamp_positive_probabilities) {
            NgramLmOptions options;
            if (vocabulary == "token_level") {
              options.vocabulary = LmVocabularyKind::token_level;
            } else if (vocabulary == "arpa_words") {
              options.vocabulary = LmVocabularyKind::arpa_words;
            } else if (vocabulary == "symbol_table") {
              options.vocabulary = LmVocabularyKind::symbol_table;
            } else {
              throw InvalidArgument("NgramLm.load: vocabulary must be token_level, arpa_words or symbol_table, got '" +
                                    vocabulary + "'");
            }
            options.vocab_size = vocab_size;
            options.symbol_table = symbol_table;
            options.normalize_unk = normalize_unk;
            options.clamp_positive_probabilities = clamp_positive_probabilities;
            const Device where = device_of(device);
            nb::gil_scoped_release release;
            return std::make_shared<NgramLm>(NgramLm::load(path, options, where));
          },
          "path"_a, "device"_a = "cpu", "vocabulary"_a = "token_level", "vocab_size"_a = 0, "symbol_table"_a = "",
          "normalize_unk"_a = false, "clamp_positive_probabilities"_a = false,
          "Loads an LM; token_level LMs name token ids 0..vocab_size-1 (the model's tokens, blank excluded).")
      .def_prop_ro("device", &NgramLm::device)
      .def_prop_ro("vocab_size", &NgramLm::vocab_size)
      .def_prop_ro("order", &NgramLm::order)
      .def_prop_ro("num_states", &NgramLm::num_states)
      .def_prop_ro("num_arcs", &NgramLm::num_arcs)
      .def("score", &NgramLm::score, "state"_a, "token"_a, "(ln p(token | state), next state).")
      .def("final_score", &NgramLm::final_score, "state"_a)
      .def_static("bos_state", &NgramLm::bos_state)
      .def("save_binary", &NgramLm::save_binary, "path"_a)
      .def("__repr__", [](const NgramLm& lm) { return "asrdec.NgramLm(" + lm.describe() + ")"; });

  nb::class_<BoostingTree>(m, "BoostingTree", "A phrase-boosting automaton (lists of token-id phrases).")
      .def_static(
          "build",
          [](const nb::handle& lists, std::int64_t vocab_size, nb::handle device, float context_score,
             float depth_scaling, float unk_score, float final_eos_score, bool uniform_weights) {
            // One list ([[ids...], ...]) or several ([[[ids...], ...], ...]).
            std::vector<PhraseList> phrase_lists;
            try {
              phrase_lists = nb::cast<std::vector<PhraseList>>(lists);
            } catch (const nb::cast_error&) {
              phrase_lists = {nb::cast<PhraseList>(lists)};
            }
            const BoostingTreeOptions options{context_score, depth_scaling, unk_score, final_eos_score,
                                              uniform_weights};
            const Device where = device_of(device);
            nb::gil_scoped_release release;
            return std::make_shared<BoostingTree>(BoostingTree::build(phrase_lists, vocab_size, options, where));
          },
          "lists"_a, "vocab_size"_a, "device"_a = "cpu", "context_score"_a = 1.0f, "depth_scaling"_a = 2.0f,
          "unk_score"_a = 0.0f, "final_eos_score"_a = 1.0f, "uniform_weights"_a = false,
          "Builds a tree from one phrase list or several (one per utterance, chosen by ChunkRow.phrase_list).")
      .def_static(
          "with_slots",
          [](std::int64_t vocab_size, std::int64_t slots, std::int64_t states_per_slot, std::int32_t max_phrase_tokens,
             nb::handle device, float context_score, float depth_scaling, float unk_score, float final_eos_score,
             bool uniform_weights) {
            const BoostingTreeOptions options{context_score, depth_scaling, unk_score, final_eos_score,
                                              uniform_weights};
            const Device where = device_of(device);
            nb::gil_scoped_release release;
            return std::make_shared<BoostingTree>(BoostingTree::with_slots(
                vocab_size, BoostingSlots{slots, states_per_slot, max_phrase_tokens}, options, where));
          },
          "vocab_size"_a, "slots"_a, "states_per_slot"_a, "max_phrase_tokens"_a = 64, "device"_a = "cpu",
          "context_score"_a = 1.0f, "depth_scaling"_a = 2.0f, "unk_score"_a = 0.0f, "final_eos_score"_a = 1.0f,
          "uniform_weights"_a = false,
          "A tree of `slots` phrase lists replaced at run time by set_list (per-request phrases; "
          "docs/phrase-boosting.md).")
      .def(
          "set_list",
          [](BoostingTree& tree, std::int64_t slot, const PhraseList& phrases) {
            nb::gil_scoped_release release;
            tree.set_list(slot, phrases);
          },
          "slot"_a, "phrases"_a,
          "Replaces the phrase list of a slot (between decoder calls; not under an open stream that uses it).")
      .def_prop_ro("slots", [](const BoostingTree& t) { return t.slots().slots; })
      .def_prop_ro("device", &BoostingTree::device)
      .def_prop_ro("num_lists", &BoostingTree::num_lists)
      .def_prop_ro("num_phrases", &BoostingTree::num_phrases)
      .def("__repr__", [](const BoostingTree& t) { return "asrdec.BoostingTree(" + t.describe() + ")"; });

  m.def(
      "to_device",
      [](nb::handle x, nb::handle device) {
        const Device where = device_of(device);
        const TensorArg arg(x, "x", nullptr);
        const TensorView& v = arg.view();
        ASRDEC_CHECK_ARG(v.device().is_cpu(),
                         "to_device: x must be in host memory (a CUDA tensor is on a device "
                         "already), got one on ",
                         v.device().to_string());
        ASRDEC_CHECK_ARG(v.is_contiguous(), "to_device: x must be contiguous (numpy.ascontiguousarray), got ",
                         v.shape_string());
        const auto bytes = static_cast<std::size_t>(v.numel()) * dtype_size(v.dtype());
        // The copy owns its memory; the returned array frees it with its last reference.
        auto* copy = new DeviceBytes(where, std::max<std::size_t>(bytes, 1));
        const nb::capsule owner(copy, [](void* p) noexcept { delete static_cast<DeviceBytes*>(p); });
        if (bytes > 0) {
          nb::gil_scoped_release release;
          const Stream stream(where);
          copy_bytes_async(copy->data(), where, v.data(), Device::cpu(), bytes, stream.handle());
          stream.synchronize();
        }
        std::vector<std::size_t> shape;
        for (int d = 0; d < v.ndim(); ++d) shape.push_back(static_cast<std::size_t>(v.size(d)));
        return nb::ndarray<nb::array_api>(
            copy->data(), shape.size(), shape.data(), owner, nullptr, dlpack_dtype(v.dtype()),
            where.is_cuda() ? nb::device::cuda::value : nb::device::cpu::value, where.index());
      },
      "x"_a, "device"_a = "cuda",
      "A contiguous copy of a tensor on `device`, as a DLPack tensor asrdec owns (for engines without PyTorch or "
      "CuPy: NumPy data to a CUDA decoder). The copy is complete on return.");
  m.def(
      "_tensor_info",
      [](nb::handle x) {
        const TensorArg arg(x, "x", nullptr);
        const TensorView& v = arg.view();
        return nb::make_tuple(reinterpret_cast<std::uintptr_t>(v.data()), std::string(dtype_name(v.dtype())),
                              v.device().to_string(), v.shape_string());
      },
      "x"_a, "How asrdec sees a tensor argument: (address, dtype, device, shape); for tests of zero-copy input.");
}

}  // namespace

void apply_keywords(const nb::kwargs& kwargs, const std::vector<Keyword>& keywords, const char* owner) {
  for (const auto& [key, value] : kwargs) {
    const std::string name = nb::cast<std::string>(key);
    const Keyword* match = nullptr;
    for (const Keyword& k : keywords) {
      if (name == k.name) match = &k;
    }
    if (match == nullptr) {
      std::string known;
      for (const Keyword& k : keywords) known += std::string(known.empty() ? "" : ", ") + k.name;
      throw nb::type_error(
          (std::string(owner) + "() got an unexpected keyword argument '" + name + "'; its keywords are: " + known)
              .c_str());
    }
    try {
      match->set(value);
    } catch (const nb::cast_error&) {
      throw nb::type_error((std::string(owner) + ": keyword '" + name + "' cannot take a value of type " +
                            nb::str(nb::type_name(value.type())).c_str())
                               .c_str());
    }
  }
}

std::vector<ChunkRow> chunk_rows_of(const nb::handle& rows) {
  std::vector<ChunkRow> out;
  for (nb::handle row : rows) {
    if (nb::isinstance<ChunkRow>(row)) {
      out.push_back(nb::cast<ChunkRow>(row));
      continue;
    }
    const nb::tuple t = nb::cast<nb::tuple>(row);
    if (t.size() < 3 || t.size() > 4) {
      throw InvalidArgument("rows: a row is a ChunkRow or a tuple (utterance, first, last[, phrase_list])");
    }
    ChunkRow r;
    r.utterance = nb::cast<std::int64_t>(t[0]);
    r.first = truthy(t[1]);
    r.last = truthy(t[2]);
    r.phrase_list = t.size() == 4 ? nb::cast<std::int32_t>(t[3]) : 0;
    out.push_back(r);
  }
  return out;
}

}  // namespace asrdec::python

NB_MODULE(_asrdec, m) {
  m.doc() = "asrdec: exact, fast decoding of CTC, RNN-T/TDT and WFST models on CPUs and NVIDIA GPUs";
  asrdec::python::bind_exceptions(m);
  asrdec::python::bind_core(m);
  asrdec::python::bind_decoders(m);
  asrdec::python::bind_wfst(m);
  asrdec::python::bind_aed(m);
}
