#include "c_api/c_status.hpp"

#include <exception>
#include <new>

#include "asrdec/core/error.hpp"
#include "asrdec/core/version.hpp"

namespace asrdec::c_api {
namespace {

thread_local std::string last_error;

}  // namespace

asrdec_status fail(asrdec_status status, const std::string& message) {
  try {
    last_error = message;
  } catch (...) {
    last_error.clear();  // no memory for the message: the status still says what happened
  }
  return status;
}

asrdec_status ok() {
  last_error.clear();
  return ASRDEC_OK;
}

asrdec_status status_of_current_exception() noexcept {
  // Most derived first: every asrdec exception derives from asrdec::Error.
  try {
    throw;
  } catch (const InvalidArgument& e) {
    return fail(ASRDEC_INVALID_ARGUMENT, e.what());
  } catch (const ParseError& e) {
    return fail(ASRDEC_PARSE_ERROR, e.what());
  } catch (const Unsupported& e) {
    return fail(ASRDEC_UNSUPPORTED, e.what());
  } catch (const OutOfMemory& e) {
    return fail(ASRDEC_OUT_OF_MEMORY, e.what());
  } catch (const FileError& e) {
    return fail(ASRDEC_FILE_ERROR, e.what());
  } catch (const CudaError& e) {
    return fail(ASRDEC_CUDA_ERROR, e.what());
  } catch (const std::bad_alloc&) {
    return fail(ASRDEC_OUT_OF_MEMORY, "out of host memory");
  } catch (const std::exception& e) {
    return fail(ASRDEC_INTERNAL_ERROR, e.what());
  } catch (...) {
    return fail(ASRDEC_INTERNAL_ERROR, "unknown exception");
  }
}

}  // namespace asrdec::c_api

extern "C" {

const char* asrdec_version(void) { return asrdec::version(); }

int asrdec_c_api_version(void) { return ASRDEC_C_API_VERSION; }

const char* asrdec_status_name(int status) {
  switch (status) {
    case ASRDEC_OK:
      return "ASRDEC_OK";
    case ASRDEC_INVALID_ARGUMENT:
      return "ASRDEC_INVALID_ARGUMENT";
    case ASRDEC_PARSE_ERROR:
      return "ASRDEC_PARSE_ERROR";
    case ASRDEC_UNSUPPORTED:
      return "ASRDEC_UNSUPPORTED";
    case ASRDEC_OUT_OF_MEMORY:
      return "ASRDEC_OUT_OF_MEMORY";
    case ASRDEC_CUDA_ERROR:
      return "ASRDEC_CUDA_ERROR";
    case ASRDEC_INTERNAL_ERROR:
      return "ASRDEC_INTERNAL_ERROR";
    case ASRDEC_FILE_ERROR:
      return "ASRDEC_FILE_ERROR";
  }
  return "unknown asrdec_status";
}

const char* asrdec_last_error(void) { return asrdec::c_api::last_error.c_str(); }

}  // extern "C"
