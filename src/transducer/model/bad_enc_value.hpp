#pragma once
// Internal: the one message for an encoder projection the transducer decoders refuse, shared by the CPU joint and
// the CUDA executors (which report the same (b, t, column) through the packed bad-value key).

#include <cstdint>

#include "asrdec/core/error.hpp"

namespace asrdec::detail {

/** enc_proj[b, t, j] is NaN or infinite; or, for j == kJointOutputColumn, the row's values are finite but the joint
 *  outputs computed from them are not (values far outside what an encoder produces). */
InvalidArgument bad_enc_value_error(std::int64_t b, std::int64_t t, std::int64_t j, bool is_nan);

}  // namespace asrdec::detail
