#include "core/mapped_file.hpp"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "asrdec/core/error.hpp"

namespace asrdec::detail {

MappedFile::MappedFile(std::string path) : path_(std::move(path)) {
  const int fd = ::open(path_.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) throw FileError(path_, concat(path_, ": cannot open for reading: ", std::strerror(errno)));
  struct stat info {};
  if (::fstat(fd, &info) != 0) {
    const int error = errno;
    ::close(fd);
    throw FileError(path_, concat(path_, ": cannot stat: ", std::strerror(error)));
  }
  // Devices, pipes and directories have no size to check offsets against (/dev/zero would read forever).
  if (!S_ISREG(info.st_mode)) {
    ::close(fd);
    throw FileError(path_, concat(path_, ": not a regular file"));
  }
  size_ = static_cast<std::size_t>(info.st_size);
  if (size_ == 0) {
    ::close(fd);
    return;
  }
  void* mapping = ::mmap(nullptr, size_, PROT_READ, MAP_PRIVATE, fd, 0);
  const int error = errno;
  ::close(fd);
  if (mapping == MAP_FAILED) throw FileError(path_, concat(path_, ": cannot map: ", std::strerror(error)));
  data_ = static_cast<const std::byte*>(mapping);
}

MappedFile::~MappedFile() {
  if (data_ != nullptr) ::munmap(const_cast<std::byte*>(data_), size_);
}

}  // namespace asrdec::detail
