#pragma once
// Internal: a regular file mapped read-only into memory, for the binary readers (safetensors, LM images, OpenFst
// graphs). The mapping lives as long as the object; readers check every offset against size() before reading.

#include <cstddef>
#include <string>

namespace asrdec::detail {

class MappedFile {
 public:
  /** Maps `path`; throws Error naming it when it cannot be opened, is not a regular file, or cannot be mapped.
   *  An empty file maps to data() == nullptr, size() == 0. */
  explicit MappedFile(std::string path);
  ~MappedFile();
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;

  const std::byte* data() const noexcept { return data_; }
  std::size_t size() const noexcept { return size_; }
  const std::string& path() const noexcept { return path_; }

 private:
  std::string path_;
  const std::byte* data_ = nullptr;
  std::size_t size_ = 0;
};

}  // namespace asrdec::detail
