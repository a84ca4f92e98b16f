#pragma once
// Internal: preparing model weights (any family's) for the executors: checked host floats, rounded to the dtype a
// CUDA GEMM would take them in, or converted to that dtype's bytes.

#include <cstdint>
#include <string>
#include <vector>

#include "asrdec/core/error.hpp"
#include "asrdec/core/tensor.hpp"

namespace asrdec::detail {

/** Rounds `value` to `dtype` (fp16/bf16) and back; identity for fp32. The CPU executor uses it wherever a CUDA
 *  GEMM would take its operand in the weight dtype. */
float round_to(DType dtype, float value);

/** Host float copy of a contiguous float tensor (any float dtype), each value rounded to `dtype`. */
std::vector<float> to_floats(const TensorView& tensor, DType dtype, const std::string& name);

/** Host bytes of a contiguous float tensor converted to `dtype`. */
std::vector<std::byte> to_bytes(const TensorView& tensor, DType dtype, const std::string& name);

/** Throws InvalidArgument "<name>: expected shape [a, b], got [c, d]" unless the host tensor has that shape
 *  and holds floats. */
void expect_shape(const TensorView& tensor, const std::string& name, std::initializer_list<std::int64_t> shape);

}  // namespace asrdec::detail
