#pragma once
// Python arguments as asrdec values: any object with __dlpack__ (NumPy, PyTorch, CuPy, JAX) seen as a TensorView
// without a copy; decode()'s batches in the shapes callers have at hand; CUDA streams; devices.

#include <dlpack/dlpack.h>
#include <nanobind/nanobind.h>

#include <cstdint>
#include <optional>
#include <vector>

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

/** A batch of utterances for decode(): `input` is a padded [B, T, *] tensor with `lengths` [B] (None: every row is T
 *  frames); one utterance [T, *] (a batch of one, read in place; lengths None or [T]); or a list or tuple of
 *  utterances [T_i, *] in host memory, padded here into one array (a copy; lengths None: each T_i). float64 host
 *  frames are converted to float32 (a copy); float64 frames on a device, and a list of device tensors, are refused
 *  with the conversion to make. Throws InvalidArgument naming `name`. */
class BatchArg {
 public:
  BatchArg(nb::handle input, nb::handle lengths, const char* name, StreamHandle stream);
  BatchArg(const BatchArg&) = delete;
  BatchArg& operator=(const BatchArg&) = delete;

  const TensorView& input() const { return input_view_; }
  const TensorView& lengths() const { return lengths_view_; }

 private:
  std::optional<TensorArg> input_, lengths_;
  std::vector<std::int32_t> own_lengths_;  // when the lengths are implied by the input
  TensorView input_view_, lengths_view_;
};

/** `None` or 0: the legacy default stream; an int: a cudaStream_t's address; an object with `cuda_stream` (PyTorch)
 *  or `ptr` (CuPy): that. */
StreamHandle stream_of(nb::handle stream);

/** A Device, or its text ("cpu", "cuda", "cuda:1"). */
Device device_of(nb::handle device);

}  // namespace asrdec::python
