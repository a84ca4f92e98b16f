#pragma once
/**
 * @file
 * NumPy .npy files (format versions 1.0, 2.0 and 3.0): the array format every toolkit can write in one line
 * (`np.save("logprobs.npy", x)`). Supported element types: float32 ('<f4'), float16 ('<f2'), int32 ('<i4'),
 * int64 ('<i8'), little-endian, C order. Anything else (float64, big-endian, Fortran order, object arrays) is
 * rejected with Unsupported naming the type and how to convert it; a malformed or truncated file raises
 * ParseError with the file name.
 */

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "asrdec/core/buffer.hpp"
#include "asrdec/core/dtype.hpp"
#include "asrdec/core/export.hpp"
#include "asrdec/core/tensor.hpp"

namespace asrdec {

/** An array read from a .npy file, owning its host memory. */
class ASRDEC_API NpyArray {
 public:
  NpyArray() = default;
  NpyArray(DType dtype, std::vector<std::int64_t> shape);

  DType dtype() const noexcept { return dtype_; }
  const std::vector<std::int64_t>& shape() const noexcept { return shape_; }
  std::int64_t numel() const noexcept;
  std::size_t bytes() const noexcept { return data_.size(); }
  void* data() noexcept { return data_.data(); }
  const void* data() const noexcept { return data_.data(); }
  /** Typed pointer; throws InvalidArgument if T does not match dtype(). */
  template <class T>
  const T* data_as() const {
    return view().data_as<T>();
  }
  template <class T>
  T* mutable_data_as() {
    return const_cast<T*>(view().data_as<T>());
  }
  /** A host view (throws InvalidArgument for more than TensorView::kMaxDims dimensions). */
  TensorView view() const;

 private:
  DType dtype_ = DType::f32;
  std::vector<std::int64_t> shape_;
  HostBuffer<std::byte> data_;
};

/** Reads a whole .npy file. Throws ParseError (malformed, truncated) or Unsupported (element type/order). */
ASRDEC_API NpyArray read_npy(const std::string& path);

/** Writes a contiguous host view as a version 1.0 .npy file (bf16 is not representable and is rejected with
 *  Unsupported). Throws InvalidArgument for a non-contiguous or device view, Error if the file cannot be
 *  written. */
ASRDEC_API void write_npy(const std::string& path, const TensorView& array);

}  // namespace asrdec
