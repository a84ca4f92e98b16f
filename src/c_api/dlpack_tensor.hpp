#pragma once
// Internal: a DLPack DLTensor seen as an asrdec TensorView (no copy).

#include <dlpack/dlpack.h>

#include "asrdec/core/tensor.hpp"

namespace asrdec::c_api {

/** The TensorView of `tensor`: data + byte_offset, shape, strides (NULL: row-major), dtype (float32/16, bfloat16,
 *  int32/64, one lane) and device (CPU and CUDA-pinned host memory are "cpu", CUDA is "cuda:<id>"). Throws
 *  InvalidArgument naming `name` for NULL, other dtypes or devices, or more dimensions than a TensorView holds. */
TensorView tensor_view(const DLTensor* tensor, const char* name);

}  // namespace asrdec::c_api
