#include "batch_input.hpp"

#include <algorithm>
#include <cstring>

namespace asrdec::cli {

BatchInput::BatchInput(const std::string& path, const std::string& what, Device device, std::int64_t max_batch)
    : array_(read_npy(path)), device_(device), max_batch_(std::max<std::int64_t>(max_batch, 1)) {
  ASRDEC_CHECK_ARG(array_.shape().size() == 3, path, ": expected ", what, ", got shape ", array_.view().shape_string());
  ASRDEC_CHECK_ARG(is_floating(array_.dtype()), path, ": expected ", what, " as float32 or float16, got ",
                   dtype_name(array_.dtype()));
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

TensorView BatchInput::gather(const std::vector<std::int64_t>& utterances, const std::vector<std::int64_t>& starts,
                              std::int64_t frames, StreamHandle stream) {
  const std::int64_t T = this->frames();
  const std::int64_t C = columns();
  const auto count = static_cast<std::int64_t>(utterances.size());
  ASRDEC_CHECK_ARG(count <= max_batch_, "internal error: ", count, " rows gathered into room for ", max_batch_);
  const auto element = static_cast<std::int64_t>(dtype_size(dtype()));
  const auto row_bytes = static_cast<std::size_t>(frames * C * element);
  std::byte* staging = nullptr;
  if (device_.is_cpu()) {
    host_staging_.resize(static_cast<std::size_t>(count) * row_bytes);
    staging = host_staging_.data();
  } else {
    staging = staging_.data();
  }
  for (std::int64_t r = 0; r < count; ++r) {
    const std::int64_t available = std::clamp<std::int64_t>(T - starts[static_cast<std::size_t>(r)], 0, frames);
    const auto* host =
        static_cast<const std::byte*>(array_.data()) +
        (utterances[static_cast<std::size_t>(r)] * T + starts[static_cast<std::size_t>(r)]) * C * element;
    const auto bytes = static_cast<std::size_t>(available * C * element);
    std::byte* to = staging + static_cast<std::size_t>(r) * row_bytes;
    if (bytes == 0) continue;
    if (device_.is_cpu()) {
      std::memcpy(to, host, bytes);
    } else {
      copy_bytes_async(to, device_, host, Device::cpu(), bytes, stream);
    }
  }
  return TensorView(staging, dtype(), {count, frames, C}, device_);
}

NpyArray load_lengths(const std::string& path, std::int64_t utterances, std::int64_t frames) {
  NpyArray lengths(DType::i64, {utterances});
  std::int64_t* out = lengths.mutable_data_as<std::int64_t>();
  if (path.empty()) {
    for (std::int64_t i = 0; i < utterances; ++i) out[i] = frames;
    return lengths;
  }
  const NpyArray file = read_npy(path);
  ASRDEC_CHECK_ARG(file.shape().size() == 1 && file.shape()[0] == utterances, path, ": expected lengths of shape [",
                   utterances, "] to match the model outputs, got ", file.view().shape_string());
  ASRDEC_CHECK_ARG(file.dtype() == DType::i32 || file.dtype() == DType::i64, path,
                   ": lengths must be int32 or int64, got ", dtype_name(file.dtype()));
  // Every decoder refuses lengths outside [0, T]; checking here names the file, and chunked decoding, which only
  // hands the decoder each chunk's share, cannot clamp a bad length into a plausible one.
  for (std::int64_t i = 0; i < utterances; ++i) {
    out[i] = file.dtype() == DType::i32 ? file.data_as<std::int32_t>()[i] : file.data_as<std::int64_t>()[i];
    ASRDEC_CHECK_ARG(out[i] >= 0 && out[i] <= frames, path, ": lengths[", i, "] = ", out[i], " is outside [0, ", frames,
                     "] (T, the frames of the model outputs)");
  }
  return lengths;
}

std::int64_t length_at(const NpyArray& lengths, std::int64_t utterance) {
  return lengths.data_as<std::int64_t>()[utterance];
}

TensorView lengths_slice(const NpyArray& lengths, std::int64_t first, std::int64_t count) {
  const auto* base =
      static_cast<const std::byte*>(lengths.data()) + static_cast<std::size_t>(first) * dtype_size(lengths.dtype());
  return TensorView(base, lengths.dtype(), {count});
}

std::int64_t total_frames(const NpyArray& lengths, std::int64_t first, std::int64_t count) {
  std::int64_t total = 0;
  for (std::int64_t i = first; i < first + count; ++i) total += length_at(lengths, i);
  return total;
}

}  // namespace asrdec::cli
