#include "tensor_arg.hpp"

#include <nanobind/stl/string.h>

#include <algorithm>
#include <cstdint>
#include <string>

#include "asrdec/core/error.hpp"
#include "c_api/dlpack_tensor.hpp"

namespace asrdec::python {
namespace {

// DLPack's stream argument for a CUDA producer: 1 names the legacy default stream (0 is not allowed).
std::intptr_t dlpack_stream(StreamHandle stream) {
  const auto value = reinterpret_cast<std::intptr_t>(stream);
  return value == 0 ? 1 : value;
}

}  // namespace

TensorArg::TensorArg(nb::handle object, const char* name, StreamHandle stream) {
  nb::object source = nb::borrow(object);
  if (!nb::hasattr(source, "__dlpack__")) {
    // Lists and scalars: NumPy's array of them (a copy, as any conversion of a Python list is).
    nb::object numpy;
    try {
      numpy = nb::module_::import_("numpy");
    } catch (const nb::python_error&) {
      throw InvalidArgument(detail::concat(name,
                                           ": expected a tensor with __dlpack__ (NumPy, PyTorch, CuPy, JAX), got ",
                                           nb::str(nb::type_name(source.type())).c_str()));
    }
    try {
      source = numpy.attr("asarray")(source);
    } catch (const nb::python_error& e) {
      throw InvalidArgument(detail::concat(name, ": not a tensor and not convertible to one (", e.what(), ")"));
    }
  }
  nb::object capsule;
  bool cuda = false;
  if (nb::hasattr(source, "__dlpack_device__")) {
    const nb::tuple where = nb::cast<nb::tuple>(source.attr("__dlpack_device__")());
    cuda = nb::cast<int>(where[0]) == kDLCUDA;
  }
  try {
    capsule = cuda ? source.attr("__dlpack__")(nb::arg("stream") = dlpack_stream(stream)) : source.attr("__dlpack__")();
  } catch (const nb::python_error& e) {
    throw InvalidArgument(detail::concat(name, ": its __dlpack__() failed: ", e.what()));
  }
  void* pointer = PyCapsule_GetPointer(capsule.ptr(), "dltensor");
  if (pointer == nullptr) {
    PyErr_Clear();
    throw InvalidArgument(detail::concat(name, ": __dlpack__() did not return an unused DLPack capsule"));
  }
  managed_ = static_cast<DLManagedTensor*>(pointer);
  // The consumer owns the tensor now (DLPack's protocol): the capsule must not free it again.
  PyCapsule_SetName(capsule.ptr(), "used_dltensor");
  keep_ = std::move(capsule);
  view_ = c_api::tensor_view(&managed_->dl_tensor, name);
}

TensorArg::~TensorArg() {
  if (managed_ != nullptr && managed_->deleter != nullptr) managed_->deleter(managed_);
}

namespace {

// str(object), as Python prints it.
std::string text_of(nb::handle object) {
  const nb::object text = nb::steal(PyObject_Str(object.ptr()));
  const char* utf8 = text.is_valid() ? PyUnicode_AsUTF8(text.ptr()) : nullptr;
  if (utf8 == nullptr) {
    PyErr_Clear();
    return "?";
  }
  return utf8;
}

nb::object numpy_module(const char* name) {
  try {
    return nb::module_::import_("numpy");
  } catch (const nb::python_error&) {
    throw InvalidArgument(detail::concat(name, ": padding a list of utterances or converting float64 needs NumPy"));
  }
}

bool on_cuda(nb::handle object) {
  if (!nb::hasattr(object, "__dlpack_device__")) return false;
  const nb::tuple where = nb::cast<nb::tuple>(object.attr("__dlpack_device__")());
  return nb::cast<int>(where[0]) == kDLCUDA;
}

// Utterances [T_i, *] in host memory as one zero-padded NumPy array [B, max T_i, *] (float64 as float32); their
// lengths into `lengths`.
nb::object pad_utterances(nb::handle list, const char* name, std::vector<std::int32_t>& lengths) {
  nb::object numpy = numpy_module(name);
  std::vector<nb::object> frames;
  std::int64_t longest = 0;
  for (nb::handle item : list) {
    const std::size_t i = frames.size();
    if (on_cuda(item)) {
      throw InvalidArgument(detail::concat(
          name, "[", i, "] is on a CUDA device: pad device utterances there into one [B, T, *] tensor (e.g. ",
          "torch.nn.utils.rnn.pad_sequence(utterances, batch_first=True)) and pass their lengths"));
    }
    nb::object array;
    try {
      array = numpy.attr("asarray")(item);
    } catch (const nb::python_error& e) {
      throw InvalidArgument(detail::concat(name, "[", i, "]: not convertible to an array (", e.what(), ")"));
    }
    const nb::tuple shape = nb::cast<nb::tuple>(array.attr("shape"));
    if (shape.size() != 2) {
      throw InvalidArgument(detail::concat(
          name, "[", i, "]: expected one utterance's frames [T, *] (2 dimensions), got ", text_of(shape)));
    }
    if (!frames.empty() &&
        nb::cast<std::int64_t>(shape[1]) != nb::cast<std::int64_t>(nb::cast<nb::tuple>(frames[0].attr("shape"))[1])) {
      throw InvalidArgument(detail::concat(name, "[", i, "] has ", nb::cast<std::int64_t>(shape[1]),
                                           " values a frame, ", name, "[0] has ",
                                           nb::cast<std::int64_t>(nb::cast<nb::tuple>(frames[0].attr("shape"))[1])));
    }
    const std::int64_t length = nb::cast<std::int64_t>(shape[0]);
    ASRDEC_CHECK_ARG(length < (std::int64_t{1} << 31), name, "[", i, "] has ", length, " frames");
    longest = std::max(longest, length);
    lengths.push_back(static_cast<std::int32_t>(length));
    frames.push_back(std::move(array));
  }
  ASRDEC_CHECK_ARG(!frames.empty(), name, ": an empty list (no utterance to decode)");
  nb::object dtype = frames[0].attr("dtype");
  for (const nb::object& array : frames) dtype = numpy.attr("result_type")(dtype, array.attr("dtype"));
  if (text_of(dtype) == "float64") dtype = numpy.attr("float32");
  const std::int64_t width = nb::cast<std::int64_t>(nb::cast<nb::tuple>(frames[0].attr("shape"))[1]);
  nb::object padded = numpy.attr("zeros")(nb::make_tuple(frames.size(), longest, width), dtype);
  for (std::size_t i = 0; i < frames.size(); ++i) {
    padded[nb::make_tuple(i, nb::slice(0, lengths[i], 1))] = frames[i];
  }
  return padded;
}

}  // namespace

BatchArg::BatchArg(nb::handle input, nb::handle lengths, const char* name, StreamHandle stream) {
  if (nb::isinstance<nb::list>(input) || nb::isinstance<nb::tuple>(input)) {
    input_.emplace(pad_utterances(input, name, own_lengths_), name, stream);
  } else {
    const bool float64 =
        nb::hasattr(input, "dtype") && text_of(input.attr("dtype")).find("float64") != std::string::npos;
    if (!float64) {
      input_.emplace(input, name, stream);
    } else {
      ASRDEC_CHECK_ARG(!on_cuda(input), name,
                       ": float64 frames on a CUDA device are not read; convert them there (.float() in PyTorch, "
                       ".astype(\"float32\") in CuPy)");
      input_.emplace(numpy_module(name).attr("asarray")(input, nb::arg("dtype") = "float32"), name, stream);
    }
  }
  const TensorView x = input_->view();
  input_view_ = x;
  if (x.ndim() == 2) {  // one utterance: a batch of one, in place
    ASRDEC_CHECK_ARG(x.size(0) < (std::int64_t{1} << 31), name, ": ", x.size(0), " frames");
    input_view_ = TensorView(x.data(), x.dtype(), {1, x.size(0), x.size(1)}, {0, x.stride(0), x.stride(1)}, x.device());
    if (lengths.is_none()) own_lengths_.assign(1, static_cast<std::int32_t>(x.size(0)));
  } else if (x.ndim() == 3 && lengths.is_none() && own_lengths_.empty()) {  // every row whole
    ASRDEC_CHECK_ARG(x.size(1) < (std::int64_t{1} << 31), name, ": ", x.size(1), " frames");
    own_lengths_.assign(static_cast<std::size_t>(x.size(0)), static_cast<std::int32_t>(x.size(1)));
  }
  if (!lengths.is_none()) {
    lengths_.emplace(lengths, "lengths", stream);
    lengths_view_ = lengths_->view();
  } else {
    ASRDEC_CHECK_ARG(x.ndim() == 2 || x.ndim() == 3, name, ": expected [B, T, *], one utterance [T, *] or a list of ",
                     "utterances, got ", x.shape_string());
    lengths_view_ = TensorView(own_lengths_.data(), DType::i32, {static_cast<std::int64_t>(own_lengths_.size())});
  }
}

StreamHandle stream_of(nb::handle stream) {
  if (stream.is_none()) return nullptr;
  nb::object handle = nb::borrow(stream);
  if (nb::hasattr(handle, "cuda_stream")) {
    handle = handle.attr("cuda_stream");
  } else if (nb::hasattr(handle, "ptr") && !nb::isinstance<nb::int_>(handle)) {
    handle = handle.attr("ptr");
  }
  if (!nb::isinstance<nb::int_>(handle)) {
    throw InvalidArgument(
        detail::concat("stream: expected None, an int (a cudaStream_t), or an object with "
                       "cuda_stream or ptr, got ",
                       nb::str(nb::type_name(stream.type())).c_str()));
  }
  return reinterpret_cast<StreamHandle>(nb::cast<std::uintptr_t>(handle));
}

Device device_of(nb::handle device) {
  if (nb::isinstance<Device>(device)) return nb::cast<Device>(device);
  if (nb::isinstance<nb::str>(device)) return Device::parse(nb::cast<std::string>(device));
  throw InvalidArgument(
      detail::concat("device: expected an asrdec.Device or a string such as \"cpu\" or \"cuda:0\", got ",
                     nb::str(nb::type_name(device.type())).c_str()));
}

}  // namespace asrdec::python
