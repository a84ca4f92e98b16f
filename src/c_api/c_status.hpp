#pragma once
// Internal: how the C API turns C++ exceptions into status codes and the thread's last-error message.

#include <string>

#include "asrdec/c_api.h"

namespace asrdec::c_api {

/** Records `message` as this thread's last error and returns `status`. */
asrdec_status fail(asrdec_status status, const std::string& message);
/** Clears this thread's last error and returns ASRDEC_OK. */
asrdec_status ok();

/** Runs `body` (which returns nothing): ASRDEC_OK, or the status of the exception it threw, its message recorded.
 *  No exception leaves a C function. */
template <class Body>
asrdec_status guarded(Body&& body) noexcept;

/** The status and message of the exception being handled (call inside a catch block). */
asrdec_status status_of_current_exception() noexcept;

template <class Body>
asrdec_status guarded(Body&& body) noexcept {
  try {
    body();
    return ok();
  } catch (...) {
    return status_of_current_exception();
  }
}

}  // namespace asrdec::c_api
