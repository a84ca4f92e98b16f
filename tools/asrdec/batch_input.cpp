#include "batch_input.hpp"

namespace asrdec::cli {

BatchInput::BatchInput(const std::string& path, const std::string& what, Device device, std::int64_t max_batch)
    : array_(read_npy(path)), device_(device) {
  ASRDEC_CHECK_ARG(array_.shape().size() == 3, path, ": expected ", what, ", got shape ", array_.view().shape_string());
  if (device_.is_cuda()) {
    const auto row = static_cast<std::size_t>(frames() * columns()) * dtype_size(dtype());
    staging_ = DeviceBuffer<std::byte>(static_cast<std::size_t>(std::max<std::int64_t>(max_batch, 1)) * row, device_);
  }
}

TensorView BatchInput::slice(std::int64_t first, std::int64_t count, std::int64_t frame, std::int64_t frames,
                             StreamHandle stream) {
  const std::int64_t T = this->frames();
  const std::int64_t C = columns();
  const auto element = static_cast<std::int64_t>(dtype_size(dtype()));
  const auto* host = static_cast<const std::byte*>(array_.data()) + (first * T + frame) * C * element;
  if (device_.is_cpu()) {
    return TensorView(host, dtype(), {count, frames, C}, {T * C, C, 1});
  }
  // Rows of `frames` frames, copied with one 2-D copy into a dense [count, frames, C] block.
  const std::size_t row_bytes = static_cast<std::size_t>(frames * C * element);
  for (std::int64_t b = 0; b < count; ++b) {
    copy_bytes_async(staging_.data() + static_cast<std::size_t>(b) * row_bytes, device_, host + b * T * C * element,
                     Device::cpu(), row_bytes, stream);
  }
  return TensorView(staging_.data(), dtype(), {count, frames, C}, device_);
}

NpyArray load_lengths(const std::string& path, std::int64_t utterances, std::int64_t frames) {
  if (path.empty()) {
    NpyArray lengths(DType::i64, {utterances});
    for (std::int64_t i = 0; i < utterances; ++i) lengths.mutable_data_as<std::int64_t>()[i] = frames;
    return lengths;
  }
  NpyArray lengths = read_npy(path);
  ASRDEC_CHECK_ARG(lengths.shape().size() == 1 && lengths.shape()[0] == utterances, path,
                   ": expected lengths of shape [", utterances, "] to match the model outputs, got ",
                   lengths.view().shape_string());
  return lengths;
}

TensorView lengths_slice(const NpyArray& lengths, std::int64_t first, std::int64_t count) {
  const auto* base =
      static_cast<const std::byte*>(lengths.data()) + static_cast<std::size_t>(first) * dtype_size(lengths.dtype());
  return TensorView(base, lengths.dtype(), {count});
}

std::int64_t total_frames(const NpyArray& lengths, std::int64_t first, std::int64_t count) {
  std::int64_t total = 0;
  const TensorView view = lengths_slice(lengths, first, count);
  for (std::int64_t i = 0; i < count; ++i) {
    total += view.dtype() == DType::i32 ? view.data_as<std::int32_t>()[i] : view.data_as<std::int64_t>()[i];
  }
  return total;
}

}  // namespace asrdec::cli
