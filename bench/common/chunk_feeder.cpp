#include "common/chunk_feeder.hpp"

#include <algorithm>
#include <cstring>

namespace asrdec::bench {

ChunkFeeder::ChunkFeeder(const void* source, std::int64_t batch, std::int64_t frames, std::int64_t width,
                         std::size_t element, std::vector<std::int32_t> lengths, std::int64_t lanes, std::int64_t chunk,
                         DType dtype, Device device)
    : source_(static_cast<const std::byte*>(source)),
      batch_(batch),
      frames_(frames),
      width_(width),
      lanes_(lanes),
      chunk_(chunk),
      element_(element),
      lengths_(std::move(lengths)),
      dtype_(dtype),
      device_(device),
      position_(static_cast<std::size_t>(lanes), 0),
      id_(static_cast<std::size_t>(lanes)),
      rows_(static_cast<std::size_t>(lanes)),
      row_lengths_(static_cast<std::size_t>(lanes)),
      host_chunk_(static_cast<std::size_t>(lanes * chunk * width) * element) {
  for (std::int64_t lane = 0; lane < lanes; ++lane) id_[static_cast<std::size_t>(lane)] = next_id_++;
  if (device.is_cuda()) device_chunk_ = DeviceBuffer<std::byte>(host_chunk_.size(), device);
}

void ChunkFeeder::next(StreamHandle stream) {
  frames_in_call_ = 0;
  const auto frame_bytes = static_cast<std::size_t>(width_) * element_;
  for (std::int64_t lane = 0; lane < lanes_; ++lane) {
    const auto l = static_cast<std::size_t>(lane);
    const std::int64_t row = lane % batch_;
    const std::int64_t length = lengths_[static_cast<std::size_t>(row)];
    if (position_[l] >= length && position_[l] > 0) {  // its utterance ended last call: a new one starts here
      position_[l] = 0;
      id_[l] = next_id_++;
    }
    const std::int64_t take = std::min(chunk_, length - position_[l]);
    rows_[l] = ChunkRow{id_[l], position_[l] == 0, position_[l] + take >= length};
    row_lengths_[l] = static_cast<std::int32_t>(take);
    if (take > 0)
      std::memcpy(host_chunk_.data() + static_cast<std::size_t>(lane * chunk_) * frame_bytes,
                  source_ + static_cast<std::size_t>(row * frames_ + position_[l]) * frame_bytes,
                  static_cast<std::size_t>(take) * frame_bytes);
    position_[l] += std::max<std::int64_t>(take, 1);
    frames_in_call_ += take;
  }
  if (device_.is_cuda()) {
    copy_bytes_async(device_chunk_.data(), device_, host_chunk_.data(), Device::cpu(), host_chunk_.size(), stream);
  }
}

TensorView ChunkFeeder::frames() const {
  const void* data = device_.is_cuda() ? static_cast<const void*>(device_chunk_.data()) : host_chunk_.data();
  return TensorView(data, dtype_, {lanes_, chunk_, width_}, device_);
}

}  // namespace asrdec::bench
