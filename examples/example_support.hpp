// Helpers the examples share: a tensor the engine would already hold on the GPU, and printing a result with its
// words and times. Not part of the library.
#pragma once

#include <cstdio>
#include <string>

#include "asrdec/asrdec.hpp"

namespace example {

/** An .npy array as a TensorView on `device`: the engine normally already holds it there; here it is copied. */
struct OnDevice {
  asrdec::DeviceBuffer<std::byte> buffer;
  asrdec::TensorView view;
};

inline OnDevice place(const asrdec::NpyArray& array, asrdec::Device device, asrdec::StreamHandle stream) {
  OnDevice out;
  out.view = array.view();
  if (device.is_cuda()) {
    out.buffer = asrdec::DeviceBuffer<std::byte>(array.bytes(), device);
    asrdec::copy_bytes_async(out.buffer.data(), device, array.data(), asrdec::Device::cpu(), array.bytes(), stream);
    const asrdec::TensorView host = array.view();
    std::int64_t shape[asrdec::TensorView::kMaxDims], strides[asrdec::TensorView::kMaxDims];
    for (int d = 0; d < host.ndim(); ++d) {
      shape[d] = host.size(d);
      strides[d] = host.stride(d);
    }
    out.view = asrdec::TensorView(out.buffer.data(), array.dtype(), host.ndim(), shape, strides, device);
  }
  return out;
}

/** "index: text  (score ...)" and the words with their times in seconds (80 ms model frames). */
inline void print_result(std::size_t index, const asrdec::Hypothesis& h, const asrdec::Vocabulary& vocabulary) {
  std::printf("%zu: %s  (score %.2f = am %.2f + lm %.2f + boost %.2f)\n", index,
              vocabulary.detokenize(h.tokens).c_str(), h.score, h.am_score, h.lm_score, h.boost_score);
  std::string words;
  for (const asrdec::WordTiming& w : asrdec::word_timings(h, vocabulary, 0.08)) {
    char line[160];
    std::snprintf(line, sizeof line, " %s[%.2f-%.2f]", w.word.c_str(), w.start_seconds, w.end_seconds);
    words += line;
  }
  std::printf("   words:%s\n", words.c_str());
}

}  // namespace example
