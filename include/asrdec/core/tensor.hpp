#pragma once
/**
 * @file
 * TensorView: a non-owning, read-only view of a strided array (pointer + dtype + shape + strides + device),
 * the form in which every decoder takes its inputs. The caller owns the memory and keeps it alive and
 * unchanged until the call that reads it has finished (for async calls: until the stream reaches that point).
 *
 * TensorCheck validates a view against what a call expects and throws InvalidArgument with a message that
 * names the argument and gives expected versus got, e.g.
 * "logprobs: expected 3 dimensions [B, T, V+1], got 2 dimensions [4, 257]".
 */

#include <array>
#include <cstdint>
#include <initializer_list>
#include <string>
#include <utility>

#include "asrdec/core/device.hpp"
#include "asrdec/core/dtype.hpp"
#include "asrdec/core/export.hpp"

namespace asrdec {

class ASRDEC_API TensorView {
 public:
  static constexpr int kMaxDims = 4;
  using Dims = std::array<std::int64_t, kMaxDims>;

  TensorView() = default;
  /** A contiguous (row-major) view. Throws InvalidArgument for a negative size or more than kMaxDims dims. */
  TensorView(const void* data, DType dtype, std::initializer_list<std::int64_t> shape, Device device = Device::cpu());
  /** A strided view; strides are in elements (not bytes) and may be any non-negative values. */
  TensorView(const void* data, DType dtype, std::initializer_list<std::int64_t> shape,
             std::initializer_list<std::int64_t> strides, Device device = Device::cpu());
  /** Same, from arrays holding `ndim` entries (used by loaders). */
  TensorView(const void* data, DType dtype, int ndim, const std::int64_t* shape, const std::int64_t* strides,
             Device device);

  const void* data() const noexcept { return data_; }
  DType dtype() const noexcept { return dtype_; }
  Device device() const noexcept { return device_; }
  int ndim() const noexcept { return ndim_; }
  std::int64_t size(int dim) const;
  std::int64_t stride(int dim) const;
  std::int64_t numel() const noexcept;
  bool is_contiguous() const noexcept;
  /** "[4, 100, 257]". */
  std::string shape_string() const;
  /** Typed pointer; throws InvalidArgument if T does not match dtype(). */
  template <class T>
  const T* data_as() const {
    check_dtype(dtype_of_v<T>);
    return static_cast<const T*>(data_);
  }
  /** The same memory seen as living on another device, e.g. pinned host memory handed to CUDA code. */
  TensorView on(Device device) const noexcept {
    TensorView copy = *this;
    copy.device_ = device;
    return copy;
  }

 private:
  void init(int ndim, const std::int64_t* shape, const std::int64_t* strides);
  void check_dtype(DType expected) const;

  const void* data_ = nullptr;
  DType dtype_ = DType::f32;
  Device device_;
  int ndim_ = 0;
  Dims shape_{};
  Dims strides_{};
};

/** Fluent validation of one argument; each check throws InvalidArgument naming `name`. */
class ASRDEC_API TensorCheck {
 public:
  TensorCheck(const TensorView& view, std::string name) : view_(view), name_(std::move(name)) {}

  /** Exactly `ndim` dimensions; `layout` (e.g. "[B, T, V+1]") is quoted in the message. */
  TensorCheck& ndim(int ndim, const char* layout);
  TensorCheck& dtype(DType expected);
  TensorCheck& dtype_one_of(std::initializer_list<DType> allowed);
  /** Dimension `dim` equals `expected`; `why` explains where the expectation comes from. */
  TensorCheck& dim(int dim, std::int64_t expected, const char* why);
  TensorCheck& device(Device expected);
  /** Data pointer is not null unless the view is empty. */
  TensorCheck& not_null();
  /** Every stride is non-negative (asrdec never reads with negative strides). */
  TensorCheck& non_negative_strides();

 private:
  [[noreturn]] void fail(const std::string& message) const;
  const TensorView& view_;
  std::string name_;
};

}  // namespace asrdec
