#include "c_api/dlpack_tensor.hpp"

#include <cstdint>
#include <cstring>
#include <limits>

#include "asrdec/core/error.hpp"

namespace asrdec::c_api {
namespace {

DType dtype_of(const DLDataType& type, const char* name) {
  ASRDEC_CHECK_ARG(type.lanes == 1, name, ": vector dtypes (lanes = ", type.lanes, ") are not supported");
  if (type.code == kDLFloat && type.bits == 32) return DType::f32;
  if (type.code == kDLFloat && type.bits == 16) return DType::f16;
  if (type.code == kDLBfloat && type.bits == 16) return DType::bf16;
  if (type.code == kDLInt && type.bits == 32) return DType::i32;
  if (type.code == kDLInt && type.bits == 64) return DType::i64;
  throw InvalidArgument(detail::concat(name, ": DLPack dtype code ", static_cast<int>(type.code), " with ",
                                       static_cast<int>(type.bits),
                                       " bits is not supported (float32, float16, bfloat16, int32, int64)"));
}

Device device_of(const DLDevice& device, const char* name) {
  // Read as an int: a C caller may store any value in the enum field, and loading one outside the enum's range is
  // undefined in C++.
  static_assert(sizeof(device.device_type) == sizeof(int), "DLDeviceType is int-sized");
  int type = 0;
  std::memcpy(&type, &device.device_type, sizeof type);
  switch (type) {
    case kDLCPU:
    case kDLCUDAHost:  // pinned host memory: the CPU reads it directly
      return Device::cpu();
    case kDLCUDA:
      ASRDEC_CHECK_ARG(device.device_id >= 0, name, ": negative CUDA device id ", device.device_id);
      return Device::cuda(device.device_id);
    default:
      throw InvalidArgument(
          detail::concat(name, ": DLPack device type ", type, " is not supported (CPU, CUDA, CUDA host)"));
  }
}

}  // namespace

TensorView tensor_view(const DLTensor* tensor, const char* name) {
  ASRDEC_CHECK_ARG(tensor != nullptr, name, ": NULL DLTensor");
  ASRDEC_CHECK_ARG(tensor->ndim >= 0 && tensor->ndim <= TensorView::kMaxDims, name, ": ", tensor->ndim,
                   " dimensions (at most ", TensorView::kMaxDims, ")");
  ASRDEC_CHECK_ARG(tensor->ndim == 0 || tensor->shape != nullptr, name, ": NULL shape");
  const DType dtype = dtype_of(tensor->dtype, name);
  const Device device = device_of(tensor->device, name);
  const auto* data = static_cast<const std::uint8_t*>(tensor->data);
  if (data != nullptr) {
    data += tensor->byte_offset;
  }
  TensorView::Dims strides{};
  if (tensor->strides != nullptr) {
    for (int d = 0; d < tensor->ndim; ++d) {
      strides[static_cast<std::size_t>(d)] = tensor->strides[d];
    }
  } else {
    std::int64_t stride = 1;
    for (int d = tensor->ndim - 1; d >= 0; --d) {
      const std::int64_t extent = tensor->shape[d];
      ASRDEC_CHECK_ARG(extent >= 0, name, ": negative size ", extent, " in dimension ", d);
      strides[static_cast<std::size_t>(d)] = stride;
      ASRDEC_CHECK_ARG(extent <= 1 || stride <= std::numeric_limits<std::int64_t>::max() / extent, name,
                       ": the shape's element count overflows");
      stride *= extent > 0 ? extent : 1;
    }
  }
  return TensorView(data, dtype, tensor->ndim, tensor->shape, strides.data(), device);
}

}  // namespace asrdec::c_api
