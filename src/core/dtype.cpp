#include "asrdec/core/dtype.hpp"

#include "asrdec/core/error.hpp"

namespace asrdec {

const char* dtype_name(DType dtype) noexcept {
  switch (dtype) {
    case DType::f32:
      return "float32";
    case DType::f16:
      return "float16";
    case DType::bf16:
      return "bfloat16";
    case DType::i32:
      return "int32";
    case DType::i64:
      return "int64";
  }
  return "unknown";
}

DType parse_dtype(std::string_view name) {
  if (name == "float32" || name == "fp32" || name == "f32") return DType::f32;
  if (name == "float16" || name == "fp16" || name == "f16") return DType::f16;
  if (name == "bfloat16" || name == "bf16") return DType::bf16;
  if (name == "int32" || name == "i32") return DType::i32;
  if (name == "int64" || name == "i64") return DType::i64;
  throw InvalidArgument(detail::concat("unknown dtype '", name,
                                       "': expected float32 (fp32), float16 (fp16), bfloat16 (bf16), int32 or int64"));
}

}  // namespace asrdec
