#include "asrdec/core/tensor.hpp"

#include <sstream>

#include "asrdec/core/error.hpp"

namespace asrdec {
namespace {

std::string join_dtypes(std::initializer_list<DType> dtypes) {
  std::string out;
  std::size_t i = 0;
  for (DType dtype : dtypes) {
    if (i > 0) {
      out += (i + 1 == dtypes.size()) ? " or " : ", ";
    }
    out += dtype_name(dtype);
    ++i;
  }
  return out;
}

}  // namespace

TensorView::TensorView(const void* data, DType dtype, std::initializer_list<std::int64_t> shape, Device device)
    : data_(data), dtype_(dtype), device_(device) {
  ASRDEC_CHECK_ARG(shape.size() <= kMaxDims, "tensor views have at most ", kMaxDims, " dimensions, got ", shape.size());
  init(static_cast<int>(shape.size()), shape.begin(), nullptr);
}

TensorView::TensorView(const void* data, DType dtype, std::initializer_list<std::int64_t> shape,
                       std::initializer_list<std::int64_t> strides, Device device)
    : data_(data), dtype_(dtype), device_(device) {
  ASRDEC_CHECK_ARG(shape.size() <= kMaxDims, "tensor views have at most ", kMaxDims, " dimensions, got ", shape.size());
  ASRDEC_CHECK_ARG(shape.size() == strides.size(), "tensor view with ", shape.size(), " dimensions but ",
                   strides.size(), " strides");
  init(static_cast<int>(shape.size()), shape.begin(), strides.begin());
}

TensorView::TensorView(const void* data, DType dtype, int ndim, const std::int64_t* shape, const std::int64_t* strides,
                       Device device)
    : data_(data), dtype_(dtype), device_(device) {
  ASRDEC_CHECK_ARG(ndim >= 0 && ndim <= kMaxDims, "tensor views have at most ", kMaxDims, " dimensions, got ", ndim);
  init(ndim, shape, strides);
}

void TensorView::init(int ndim, const std::int64_t* shape, const std::int64_t* strides) {
  ndim_ = ndim;
  for (int d = 0; d < ndim; ++d) {
    ASRDEC_CHECK_ARG(shape[d] >= 0, "tensor view dimension ", d, " has negative size ", shape[d]);
    shape_[d] = shape[d];
  }
  if (strides != nullptr) {
    for (int d = 0; d < ndim; ++d) {
      strides_[d] = strides[d];
    }
  } else {
    std::int64_t stride = 1;
    for (int d = ndim - 1; d >= 0; --d) {
      strides_[d] = stride;
      stride *= shape_[d];
    }
  }
}

std::int64_t TensorView::size(int dim) const {
  ASRDEC_CHECK_ARG(dim >= 0 && dim < ndim_, "dimension ", dim, " out of range for a ", ndim_, "-d tensor");
  return shape_[dim];
}

std::int64_t TensorView::stride(int dim) const {
  ASRDEC_CHECK_ARG(dim >= 0 && dim < ndim_, "dimension ", dim, " out of range for a ", ndim_, "-d tensor");
  return strides_[dim];
}

std::int64_t TensorView::numel() const noexcept {
  std::int64_t n = 1;
  for (int d = 0; d < ndim_; ++d) {
    n *= shape_[d];
  }
  return n;
}

bool TensorView::is_contiguous() const noexcept {
  std::int64_t expected = 1;
  for (int d = ndim_ - 1; d >= 0; --d) {
    if (shape_[d] != 1 && strides_[d] != expected) {
      return false;
    }
    expected *= shape_[d];
  }
  return true;
}

std::string TensorView::shape_string() const {
  std::ostringstream out;
  out << '[';
  for (int d = 0; d < ndim_; ++d) {
    out << (d > 0 ? ", " : "") << shape_[d];
  }
  out << ']';
  return out.str();
}

void TensorView::check_dtype(DType expected) const {
  ASRDEC_CHECK_ARG(dtype_ == expected, "tensor holds ", dtype_name(dtype_), ", accessed as ", dtype_name(expected));
}

void TensorCheck::fail(const std::string& message) const { throw InvalidArgument(name_ + ": " + message); }

TensorCheck& TensorCheck::ndim(int ndim, const char* layout) {
  if (view_.ndim() != ndim) {
    fail(detail::concat("expected ", ndim, " dimensions ", layout, ", got ", view_.ndim(), " dimensions ",
                        view_.shape_string()));
  }
  return *this;
}

TensorCheck& TensorCheck::dtype(DType expected) { return dtype_one_of({expected}); }

TensorCheck& TensorCheck::dtype_one_of(std::initializer_list<DType> allowed) {
  for (DType dtype : allowed) {
    if (view_.dtype() == dtype) {
      return *this;
    }
  }
  fail(detail::concat("expected dtype ", join_dtypes(allowed), ", got ", dtype_name(view_.dtype())));
}

TensorCheck& TensorCheck::dim(int dim, std::int64_t expected, const char* why) {
  if (view_.size(dim) != expected) {
    fail(detail::concat("dimension ", dim, " must be ", expected, " (", why, "), got ", view_.size(dim), " in shape ",
                        view_.shape_string()));
  }
  return *this;
}

TensorCheck& TensorCheck::device(Device expected) {
  if (view_.device() != expected) {
    fail(detail::concat("expected data on ", expected.to_string(), ", got ", view_.device().to_string()));
  }
  return *this;
}

TensorCheck& TensorCheck::not_null() {
  if (view_.data() == nullptr && view_.numel() > 0) {
    fail(detail::concat("null data pointer for a tensor of shape ", view_.shape_string()));
  }
  return *this;
}

TensorCheck& TensorCheck::non_negative_strides() {
  for (int d = 0; d < view_.ndim(); ++d) {
    if (view_.stride(d) < 0) {
      fail(detail::concat("negative stride ", view_.stride(d), " in dimension ", d, " is not supported"));
    }
  }
  return *this;
}

}  // namespace asrdec
