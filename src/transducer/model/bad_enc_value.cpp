#include "transducer/model/bad_enc_value.hpp"

#include "core/bad_value.hpp"

namespace asrdec::detail {

InvalidArgument bad_enc_value_error(std::int64_t b, std::int64_t t, std::int64_t j, bool is_nan) {
  if (j == kJointOutputColumn) {
    return InvalidArgument(concat("enc_proj[", b, ", ", t, ", :] makes the joint's outputs overflow float32 (values ",
                                  "far outside what an encoder produces); encoder projections must be finite and of ",
                                  "an encoder's magnitude"));
  }
  return InvalidArgument(concat("enc_proj[", b, ", ", t, ", ", j, "] is ", is_nan ? "NaN" : "infinite",
                                "; encoder projections must be finite"));
}

}  // namespace asrdec::detail
