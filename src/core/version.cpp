#include "asrdec/core/version.hpp"

#include <sstream>

#include "asrdec/config.hpp"

namespace asrdec {

const char* version() noexcept { return ASRDEC_VERSION_STRING; }

BuildInfo build_info() {
  BuildInfo info;
  info.version = ASRDEC_VERSION_STRING;
  info.version_major = ASRDEC_VERSION_MAJOR;
  info.version_minor = ASRDEC_VERSION_MINOR;
  info.version_patch = ASRDEC_VERSION_PATCH;
  info.cuda = ASRDEC_WITH_CUDA != 0;
  if (info.cuda) {
    std::stringstream list(ASRDEC_CUDA_ARCHITECTURES);
    for (std::string item; std::getline(list, item, ';');) {
      if (!item.empty()) {
        info.cuda_architectures.push_back(item);
      }
    }
  }
  info.cuda_compiler = ASRDEC_CUDA_COMPILER;
  info.cxx_compiler = ASRDEC_CXX_COMPILER;
  info.build_type = ASRDEC_BUILD_TYPE;
  return info;
}

std::string BuildInfo::cuda_architectures_list() const {
  if (!cuda) {
    return "none";
  }
  std::string list;
  for (const std::string& a : cuda_architectures) {
    list += (list.empty() ? "" : ";") + a;
  }
  return list;
}

std::string BuildInfo::to_string() const {
  std::ostringstream out;
  out << "asrdec " << version << " (" << (build_type.empty() ? "no build type" : build_type) << "; " << cxx_compiler
      << "; ";
  if (cuda) {
    out << "CUDA " << cuda_compiler << " for " << cuda_architectures_list();
  } else {
    out << "CPU only";
  }
  out << ")";
  return out.str();
}

}  // namespace asrdec
