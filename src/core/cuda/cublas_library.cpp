#include "core/cuda/cublas_library.hpp"

#include <dlfcn.h>

#include <string>

#include "asrdec/core/error.hpp"

namespace asrdec::detail {
namespace {

#define ASRDEC_STRINGIFY_NAME(name) #name
// The cuBLAS headers map some names to versioned symbols (cublasCreate -> cublasCreate_v2); expanding the macro
// before stringifying gives the symbol the headers would have linked.
#define ASRDEC_CUBLAS_SYMBOL(name) ASRDEC_STRINGIFY_NAME(name)
#define ASRDEC_LIBRARY_NAME(major) "libcublas.so." ASRDEC_STRINGIFY_NAME(major)

// Overload resolution picks the declaration with exactly this type, so a change of its signature in the headers
// fails to compile here instead of calling the library with the wrong arguments.
[[maybe_unused]] constexpr CublasGemmEx kGemmExSignatureCheck = &cublasGemmEx;

struct Loaded {
  CublasLibrary entry_points;
  std::string error;  // empty when every entry point was found
};

template <class Function>
bool find_symbol(void* handle, const char* symbol, Function& out, std::string& error) {
  dlerror();
  void* address = dlsym(handle, symbol);
  if (address == nullptr) {
    const char* reason = dlerror();
    error = concat("cuBLAS: ", cublas_library_name(), " has no symbol ", symbol, " (", reason ? reason : "not found",
                   "); asrdec was compiled against cuBLAS ", CUBLAS_VER_MAJOR, ".", CUBLAS_VER_MINOR,
                   " and needs that major version");
    return false;
  }
  out = reinterpret_cast<Function>(address);
  return true;
}

Loaded load() {
  Loaded loaded;
  // The plain name searches LD_LIBRARY_PATH, the loader cache and the caller's run path; the toolkit's library
  // folder at build time is the fallback for toolkits installed outside the loader's search path.
  void* handle = dlopen(cublas_library_name(), RTLD_NOW | RTLD_LOCAL);
  std::string first_reason;
  if (handle == nullptr) {
    const char* reason = dlerror();
    first_reason = reason ? reason : "unknown reason";
#ifdef ASRDEC_CUBLAS_FALLBACK_DIR
    const std::string fallback = std::string(ASRDEC_CUBLAS_FALLBACK_DIR) + "/" + cublas_library_name();
    handle = dlopen(fallback.c_str(), RTLD_NOW | RTLD_LOCAL);
#endif
  }
  if (handle == nullptr) {
    loaded.error = concat("CUDA transducer decoding needs cuBLAS ", CUBLAS_VER_MAJOR, ", which could not be opened (",
                          first_reason,
                          "); install it (the CUDA toolkit's libcublas, or pip's nvidia-cublas) and put "
                          "its folder on LD_LIBRARY_PATH, or decode on the CPU");
    return loaded;
  }
  CublasLibrary& f = loaded.entry_points;
  // The handle stays open for the life of the process: cuBLAS handles may outlive any one decoder.
  (void)(find_symbol(handle, ASRDEC_CUBLAS_SYMBOL(cublasCreate), f.create, loaded.error) &&
         find_symbol(handle, ASRDEC_CUBLAS_SYMBOL(cublasDestroy), f.destroy, loaded.error) &&
         find_symbol(handle, ASRDEC_CUBLAS_SYMBOL(cublasSetStream), f.set_stream, loaded.error) &&
         find_symbol(handle, ASRDEC_CUBLAS_SYMBOL(cublasSetWorkspace), f.set_workspace, loaded.error) &&
         find_symbol(handle, ASRDEC_CUBLAS_SYMBOL(cublasSetMathMode), f.set_math_mode, loaded.error) &&
         find_symbol(handle, ASRDEC_CUBLAS_SYMBOL(cublasGemmEx), f.gemm_ex, loaded.error) &&
         find_symbol(handle, ASRDEC_CUBLAS_SYMBOL(cublasGetStatusName), f.status_name, loaded.error) &&
         find_symbol(handle, ASRDEC_CUBLAS_SYMBOL(cublasGetStatusString), f.status_string, loaded.error));
  return loaded;
}

}  // namespace

const char* cublas_library_name() noexcept { return ASRDEC_LIBRARY_NAME(CUBLAS_VER_MAJOR); }

const CublasLibrary& cublas_library() {
  static const Loaded loaded = load();  // thread-safe initialisation
  if (!loaded.error.empty()) {
    throw Unsupported(loaded.error);
  }
  return loaded.entry_points;
}

}  // namespace asrdec::detail
