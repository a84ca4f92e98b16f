// The rule of hyps_user_loop.cpp (greedy CTC) in a CUDA kernel of the engine's own: one thread per utterance
// extends its row of a device-side BatchedHyps through the public, header-only HypsRef functions
// (asrdec/hyps/hyps_ref.hpp, __host__ __device__ under nvcc). The library is used only to allocate, to copy the
// rows back (to_hypotheses) and to check the result against asrdec::CtcGreedyDecoder on CUDA.
//
//   hyps_user_kernel logprobs.npy lengths.npy        (exits 77 when no CUDA device is visible)

#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <stdexcept>
#include <string>
#include <vector>

#include "asrdec/asrdec.hpp"

namespace {

__global__ void greedy_ctc_rows(asrdec::HypsRef hyps, const __half* logprobs, const std::int32_t* lengths,
                                std::int64_t batch, std::int64_t frames, std::int64_t columns) {
  const std::int64_t b = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x;
  if (b >= batch) return;
  const auto blank = static_cast<std::int32_t>(columns - 1);
  asrdec::hyps_clear(hyps, b);
  std::int32_t previous = blank;
  for (std::int64_t t = 0; t < lengths[b]; ++t) {
    const __half* row = logprobs + (b * frames + t) * columns;
    std::int32_t best = 0;
    float best_value = __half2float(row[0]);
    for (std::int64_t v = 1; v < columns; ++v) {
      const float value = __half2float(row[v]);
      if (value > best_value) {
        best = static_cast<std::int32_t>(v);
        best_value = value;
      }
    }
    asrdec::hyps_add_step_logprob(hyps, b, best_value);
    if (best != blank && best != previous) {
      asrdec::hyps_append(hyps, b, best, static_cast<std::int32_t>(t), 0, best_value, expf(best_value));
    }
    previous = best;
  }
}

void check(cudaError_t status, const char* what) {
  if (status != cudaSuccess) throw std::runtime_error(std::string(what) + ": " + cudaGetErrorString(status));
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 3) {
    std::fprintf(stderr, "usage: %s logprobs.npy lengths.npy\n", argv[0]);
    return 2;
  }
  if (!asrdec::cuda_info().available) {
    std::printf("no CUDA device: nothing to run\n");
    return 77;
  }
  try {
    const asrdec::NpyArray logprobs = asrdec::read_npy(argv[1]);  // [B, T, V+1] fp16, C order
    const asrdec::NpyArray lengths = asrdec::read_npy(argv[2]);   // [B] int32
    if (logprobs.dtype() != asrdec::DType::f16 || logprobs.shape().size() != 3 ||
        lengths.dtype() != asrdec::DType::i32) {
      std::fprintf(stderr, "this example reads [B, T, V+1] float16 log-probabilities and int32 lengths\n");
      return 2;
    }
    const std::int64_t batch = logprobs.shape()[0], frames = logprobs.shape()[1], columns = logprobs.shape()[2];
    const asrdec::Device gpu = asrdec::Device::cuda(0);
    asrdec::Stream stream(gpu);

    asrdec::DeviceBuffer<std::byte> d_logprobs(logprobs.bytes(), gpu);
    asrdec::DeviceBuffer<std::int32_t> d_lengths(static_cast<std::size_t>(batch), gpu);
    asrdec::copy_bytes_async(d_logprobs.data(), gpu, logprobs.data(), asrdec::Device::cpu(), logprobs.bytes(),
                             stream.handle());
    asrdec::copy_bytes_async(d_lengths.data(), gpu, lengths.data(), asrdec::Device::cpu(), lengths.bytes(),
                             stream.handle());

    asrdec::BatchedHyps<asrdec::MemoryKind::device> hyps;
    hyps.reserve(batch, frames, gpu);  // a row never holds more tokens than frames
    const auto cuda_stream = static_cast<cudaStream_t>(stream.handle());
    const int threads = 128;
    greedy_ctc_rows<<<static_cast<unsigned>((batch + threads - 1) / threads), threads, 0, cuda_stream>>>(
        hyps.ref(), reinterpret_cast<const __half*>(d_logprobs.data()), d_lengths.data(), batch, frames, columns);
    check(cudaGetLastError(), "greedy_ctc_rows");

    // Copy the rows to the host and turn them into Hypothesis objects.
    const asrdec::BatchedHypsView on_device = hyps.view(gpu, batch);
    const auto cells = static_cast<std::size_t>(batch * on_device.capacity);
    std::vector<std::int32_t> tokens(cells), timestamps(cells), durations(cells), row_lengths(batch);
    std::vector<float> scores(cells), confidences(cells), totals(batch);
    const auto fetch = [&](void* to, const void* from, std::size_t bytes) {
      asrdec::copy_bytes_async(to, asrdec::Device::cpu(), from, gpu, bytes, stream.handle());
    };
    fetch(tokens.data(), on_device.tokens, cells * 4);
    fetch(timestamps.data(), on_device.timestamps, cells * 4);
    fetch(durations.data(), on_device.durations, cells * 4);
    fetch(scores.data(), on_device.scores, cells * 4);
    fetch(confidences.data(), on_device.confidences, cells * 4);
    fetch(row_lengths.data(), on_device.lengths, static_cast<std::size_t>(batch) * 4);
    fetch(totals.data(), on_device.total_scores, static_cast<std::size_t>(batch) * 4);
    stream.synchronize();
    asrdec::BatchedHypsView on_host = on_device;
    on_host.device = asrdec::Device::cpu();
    on_host.tokens = tokens.data();
    on_host.timestamps = timestamps.data();
    on_host.durations = durations.data();
    on_host.scores = scores.data();
    on_host.confidences = confidences.data();
    on_host.lengths = row_lengths.data();
    on_host.total_scores = totals.data();
    const std::vector<asrdec::Hypothesis> mine = asrdec::to_hypotheses(on_host, nullptr, false, true);

    const asrdec::TensorView input(d_logprobs.data(), asrdec::DType::f16, {batch, frames, columns}, gpu);
    const std::vector<asrdec::Hypothesis> library =
        asrdec::CtcGreedyDecoder(gpu).decode(input, lengths.view(), stream.handle());
    std::int64_t equal = 0;
    for (std::int64_t b = 0; b < batch; ++b) {
      const asrdec::Hypothesis& x = mine[static_cast<std::size_t>(b)];
      const asrdec::Hypothesis& y = library[static_cast<std::size_t>(b)];
      equal += x.tokens == y.tokens && x.timestamps == y.timestamps &&
                       std::fabs(x.score - y.score) <= 1e-3f * (1.0f + std::fabs(y.score))
                   ? 1
                   : 0;
    }
    std::printf("%lld of %lld utterances equal CtcGreedyDecoder on CUDA\n", static_cast<long long>(equal),
                static_cast<long long>(batch));
    return equal == batch ? 0 : 1;
  } catch (const std::exception& error) {  // asrdec::Error, or the kernel launch failing
    std::fprintf(stderr, "error: %s\n", error.what());
    return 1;
  }
}
