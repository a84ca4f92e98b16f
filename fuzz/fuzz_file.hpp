#pragma once
// The fuzz targets hand asrdec files, as engines do: each input is written to one scratch file per process (and
// per role), rewritten for every input. libFuzzer may run several processes; the pid keeps them apart.

#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

namespace asrdec::fuzz {

class FuzzFile {
 public:
  explicit FuzzFile(const std::string& role) {
    const char* dir = std::getenv("TMPDIR");
    path_ = std::string(dir != nullptr && *dir != '\0' ? dir : "/tmp") + "/asrdec_fuzz_" + std::to_string(::getpid()) +
            "_" + role;
  }
  ~FuzzFile() { std::remove(path_.c_str()); }
  FuzzFile(const FuzzFile&) = delete;
  FuzzFile& operator=(const FuzzFile&) = delete;

  /** Replaces the file's content; returns its path. */
  const std::string& write(const std::uint8_t* data, std::size_t size) {
    std::FILE* file = std::fopen(path_.c_str(), "wb");
    if (file == nullptr) std::abort();  // the fuzzing machine itself is broken
    if (size > 0 && std::fwrite(data, 1, size, file) != size) std::abort();
    std::fclose(file);
    return path_;
  }
  const std::string& write(const std::string& text) {
    return write(reinterpret_cast<const std::uint8_t*>(text.data()), text.size());
  }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

/** A fuzz-found defect in an oracle: abort so that libFuzzer records the input (the library itself never aborts). */
[[noreturn]] inline void oracle_failed(const char* what) {
  std::fprintf(stderr, "oracle failed: %s\n", what);
  std::abort();
}

#define ASRDEC_FUZZ_CHECK(condition)                             \
  do {                                                           \
    if (!(condition)) ::asrdec::fuzz::oracle_failed(#condition); \
  } while (false)

}  // namespace asrdec::fuzz
