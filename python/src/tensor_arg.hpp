#pragma once
// Python arguments as asrdec values: any object with __dlpack__ (NumPy, PyTorch, CuPy, JAX) seen as a TensorView
// without a copy; CUDA streams; devices.

#include <dlpack/dlpack.h>
#include <nanobind/nanobind.h>

#include "asrdec/core/device.hpp"
#include "asrdec/core/stream.hpp"
#include "asrdec/core/tensor.hpp"

namespace asrdec::python {

namespace nb = nanobind;

/** A tensor argument: the object's DLPack export (`__dlpack__`, asked to be ready on `stream` for a CUDA tensor, as
 *  the DLPack stream protocol has it), or, for an object without one (a list, a scalar), NumPy's array of it. The
 *  view reads the producer's memory directly; the export is released when the argument is destroyed, which must
 *  happen with the GIL held. Throws InvalidArgument naming `name` for an object that is neither. */
class TensorArg {
 public:
  TensorArg(nb::handle object, const char* name, StreamHandle stream);
  ~TensorArg();
  TensorArg(const TensorArg&) = delete;
  TensorArg& operator=(const TensorArg&) = delete;

  const TensorView& view() const { return view_; }

 private:
  nb::object keep_;                     // the capsule (or the NumPy array the capsule came from)
  DLManagedTensor* managed_ = nullptr;  // owned once taken from the capsule
  TensorView view_;
};

/** `None` or 0: the legacy default stream; an int: a cudaStream_t's address; an object with `cuda_stream` (PyTorch)
 *  or `ptr` (CuPy): that. */
StreamHandle stream_of(nb::handle stream);

/** A Device, or its text ("cpu", "cuda", "cuda:1"). */
Device device_of(nb::handle device);

}  // namespace asrdec::python
