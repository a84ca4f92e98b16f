#include "tensor_arg.hpp"

#include <nanobind/stl/string.h>

#include <cstdint>

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
