#pragma once
/**
 * @file
 * Typed, owning, move-only buffers of trivially copyable elements in host, pinned host or device memory.
 * Contents are uninitialised after construction. Buffers never grow by themselves: decoders size them from
 * their maxima and call reserve_discard() outside their decode loops.
 */

#include <cstddef>
#include <type_traits>
#include <utility>

#include "asrdec/core/error.hpp"
#include "asrdec/core/memory.hpp"
#include "asrdec/core/tensor.hpp"

namespace asrdec {

template <class T, MemoryKind Kind>
class Buffer {
  static_assert(std::is_trivially_copyable_v<T>, "asrdec buffers hold trivially copyable elements only");

 public:
  using value_type = T;
  static constexpr MemoryKind kind = Kind;

  Buffer() = default;
  /** `size` elements; `device` must be a CUDA device for device buffers and is ignored otherwise. */
  explicit Buffer(std::size_t size, Device device = Device::cpu()) : device_(location(device)) { allocate(size); }
  ~Buffer() { release(); }
  Buffer(Buffer&& other) noexcept
      : data_(std::exchange(other.data_, nullptr)), size_(std::exchange(other.size_, 0)), device_(other.device_) {}
  Buffer& operator=(Buffer&& other) noexcept {
    if (this != &other) {
      release();
      data_ = std::exchange(other.data_, nullptr);
      size_ = std::exchange(other.size_, 0);
      device_ = other.device_;
    }
    return *this;
  }
  Buffer(const Buffer&) = delete;
  Buffer& operator=(const Buffer&) = delete;

  T* data() noexcept { return data_; }
  const T* data() const noexcept { return data_; }
  std::size_t size() const noexcept { return size_; }
  std::size_t bytes() const noexcept { return size_ * sizeof(T); }
  bool empty() const noexcept { return size_ == 0; }
  /** Where the memory lives: the CUDA device for device buffers, the CPU for host and pinned buffers. */
  Device device() const noexcept { return device_; }

  /** Element access for host-side buffers. */
  template <MemoryKind K = Kind, class = std::enable_if_t<K != MemoryKind::device>>
  T& operator[](std::size_t i) noexcept {
    return data_[i];
  }
  template <MemoryKind K = Kind, class = std::enable_if_t<K != MemoryKind::device>>
  const T& operator[](std::size_t i) const noexcept {
    return data_[i];
  }

  /** Makes room for at least `size` elements, discarding the contents when it has to reallocate. Returns
   *  true when it reallocated (pointers handed out before are then invalid). */
  bool reserve_discard(std::size_t size) {
    if (size <= size_) {
      return false;
    }
    release();
    allocate(size);
    return true;
  }

  /** A contiguous view of the first elements in the given shape; throws if it needs more than size(). */
  TensorView view(std::initializer_list<std::int64_t> shape) const {
    TensorView v(data_, dtype_of_v<T>, shape, device_);
    ASRDEC_CHECK_ARG(static_cast<std::size_t>(v.numel()) <= size_, "buffer view ", v.shape_string(), " needs ",
                     v.numel(), " elements, the buffer holds ", size_);
    return v;
  }

 private:
  static Device location(Device requested) {
    if constexpr (Kind == MemoryKind::device) {
      ASRDEC_CHECK_ARG(requested.is_cuda(), "a device buffer needs a CUDA device, got ", requested.to_string());
      return requested;
    } else {
      return Device::cpu();
    }
  }
  void allocate(std::size_t size) {
    if (size > 0) {
      ASRDEC_CHECK_ARG(size <= static_cast<std::size_t>(-1) / sizeof(T), "buffer of ", size,
                       " elements overflows size_t");
      data_ = static_cast<T*>(allocate_bytes(Kind, size * sizeof(T), device_));
      size_ = size;
    }
  }
  void release() noexcept {
    if (data_ != nullptr) {
      free_bytes(Kind, data_, device_);
      data_ = nullptr;
      size_ = 0;
    }
  }

  T* data_ = nullptr;
  std::size_t size_ = 0;
  Device device_;
};

template <class T>
using HostBuffer = Buffer<T, MemoryKind::host>;
template <class T>
using PinnedBuffer = Buffer<T, MemoryKind::pinned>;
template <class T>
using DeviceBuffer = Buffer<T, MemoryKind::device>;

/** Copies `count` elements from src[src_offset...] to dst[dst_offset...], enqueued on `stream` when a device
 *  is involved (see copy_bytes_async). Throws InvalidArgument when a range falls outside its buffer. */
template <class T, MemoryKind DstKind, MemoryKind SrcKind>
void copy_async(Buffer<T, DstKind>& dst, const Buffer<T, SrcKind>& src, std::size_t count, StreamHandle stream,
                std::size_t dst_offset = 0, std::size_t src_offset = 0) {
  ASRDEC_CHECK_ARG(dst_offset <= dst.size() && count <= dst.size() - dst_offset, "copy_async: destination range [",
                   dst_offset, ", ", dst_offset + count, ") outside a buffer of ", dst.size(), " elements");
  ASRDEC_CHECK_ARG(src_offset <= src.size() && count <= src.size() - src_offset, "copy_async: source range [",
                   src_offset, ", ", src_offset + count, ") outside a buffer of ", src.size(), " elements");
  copy_bytes_async(dst.data() + dst_offset, dst.device(), src.data() + src_offset, src.device(), count * sizeof(T),
                   stream);
}

/** Copies between a buffer and caller memory at `pointer` on `device`. */
template <class T, MemoryKind Kind>
void copy_from_async(Buffer<T, Kind>& dst, const T* pointer, Device device, std::size_t count, StreamHandle stream) {
  ASRDEC_CHECK_ARG(count <= dst.size(), "copy_from_async: ", count, " elements into a buffer of ", dst.size());
  copy_bytes_async(dst.data(), dst.device(), pointer, device, count * sizeof(T), stream);
}
template <class T, MemoryKind Kind>
void copy_to_async(T* pointer, Device device, const Buffer<T, Kind>& src, std::size_t count, StreamHandle stream) {
  ASRDEC_CHECK_ARG(count <= src.size(), "copy_to_async: ", count, " elements from a buffer of ", src.size());
  copy_bytes_async(pointer, device, src.data(), src.device(), count * sizeof(T), stream);
}

}  // namespace asrdec
