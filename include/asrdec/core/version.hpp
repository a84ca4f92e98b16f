#pragma once
/**
 * @file
 * Which asrdec a program runs against, and how it was built. The macros in asrdec/config.hpp describe the headers
 * a program was compiled with; these functions describe the library it is linked or loaded with, which can differ
 * for a shared library.
 */

#include <string>
#include <vector>

#include "asrdec/core/export.hpp"

namespace asrdec {

/** The library's version, "MAJOR.MINOR.PATCH". */
ASRDEC_API const char* version() noexcept;

/** How the library was built. */
struct ASRDEC_API BuildInfo {
  std::string version;    ///< as version()
  int version_major = 0;  ///< the shared library's SONAME carries this number
  int version_minor = 0;
  int version_patch = 0;
  bool cuda = false;                            ///< the CUDA executors are compiled in
  std::vector<std::string> cuda_architectures;  ///< CMake's list, e.g. {"80", "86", "89", "90"}; empty without CUDA
  std::string cuda_compiler;                    ///< e.g. "NVIDIA 13.0.48"; "none" without CUDA
  std::string cxx_compiler;                     ///< e.g. "GNU 12.2.0"
  std::string build_type;                       ///< CMake's build type, e.g. "Release"

  /** cuda_architectures as CMake writes them, "80;86;89;90"; "none" without CUDA. */
  std::string cuda_architectures_list() const;

  /** One line: "asrdec 0.1.0 (Release; GNU 12.2.0; CUDA NVIDIA 13.0.48 for 80;86;89;90)". */
  std::string to_string() const;
};

/** How the library was built; the same for every call. */
ASRDEC_API BuildInfo build_info();

}  // namespace asrdec
