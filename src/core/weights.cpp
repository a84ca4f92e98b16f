#include "core/weights.hpp"

#include <cstring>

#include "asrdec/detail/float16.hpp"

namespace asrdec::detail {

float round_to(DType dtype, float value) {
  switch (dtype) {
    case DType::f16:
      return half_bits_to_float(float_to_half_bits(value));
    case DType::bf16:
      return bf16_bits_to_float(float_to_bf16_bits(value));
    default:
      return value;
  }
}

namespace {

float read_float(const TensorView& tensor, std::int64_t i) {
  switch (tensor.dtype()) {
    case DType::f32:
      return static_cast<const float*>(tensor.data())[i];
    case DType::f16:
      return to_float(static_cast<const half_t*>(tensor.data())[i]);
    case DType::bf16:
      return to_float(static_cast<const bfloat16_t*>(tensor.data())[i]);
    default:
      throw InvalidArgument("expected a float tensor");
  }
}

void expect_host_floats(const TensorView& tensor, const std::string& name) {
  ASRDEC_CHECK_ARG(is_floating(tensor.dtype()), name, ": expected float32, float16 or bfloat16 values, got ",
                   dtype_name(tensor.dtype()));
  ASRDEC_CHECK_ARG(tensor.device().is_cpu(), name, ": weights are read from host memory, got ",
                   tensor.device().to_string());
  ASRDEC_CHECK_ARG(tensor.is_contiguous(), name, ": expected a contiguous tensor");
  ASRDEC_CHECK_ARG(tensor.data() != nullptr || tensor.numel() == 0, name, ": null data");
}

}  // namespace

void expect_shape(const TensorView& tensor, const std::string& name, std::initializer_list<std::int64_t> shape) {
  expect_host_floats(tensor, name);
  bool same = tensor.ndim() == static_cast<int>(shape.size());
  int d = 0;
  for (std::int64_t size : shape) {
    same = same && tensor.size(d) == size;
    ++d;
  }
  if (!same) {
    std::string expected = "[";
    d = 0;
    for (std::int64_t size : shape) expected += (d++ ? ", " : "") + std::to_string(size);
    throw InvalidArgument(concat(name, ": expected shape ", expected, "], got ", tensor.shape_string()));
  }
}

std::vector<float> to_floats(const TensorView& tensor, DType dtype, const std::string& name) {
  expect_host_floats(tensor, name);
  std::vector<float> out(static_cast<std::size_t>(tensor.numel()));
  for (std::int64_t i = 0; i < tensor.numel(); ++i) {
    const float value = read_float(tensor, i);
    ASRDEC_CHECK_ARG(value == value && value - value == 0.0f, name, "[", i, "] is not finite (", value, ")");
    out[static_cast<std::size_t>(i)] = round_to(dtype, value);
  }
  return out;
}

std::vector<std::byte> to_bytes(const TensorView& tensor, DType dtype, const std::string& name) {
  const std::vector<float> values = to_floats(tensor, dtype, name);
  std::vector<std::byte> out(values.size() * dtype_size(dtype));
  for (std::size_t i = 0; i < values.size(); ++i) {
    if (dtype == DType::f32) {
      std::memcpy(out.data() + 4 * i, &values[i], 4);
    } else {
      const std::uint16_t bits = dtype == DType::f16 ? float_to_half_bits(values[i]) : float_to_bf16_bits(values[i]);
      std::memcpy(out.data() + 2 * i, &bits, 2);
    }
  }
  return out;
}

}  // namespace asrdec::detail
