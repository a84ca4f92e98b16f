// The CUDA side of NgramLm: the tables are copied to the device once at load, queries launch the shared
// kernels on the caller's stream (no host synchronisation, so they can be captured into a graph).

#include <algorithm>

#include "core/cuda/check.hpp"
#include "core/cuda/executor_lifecycle.hpp"
#include "core/cuda/kernel_image.hpp"
#include "lm/ngram_kernels.hpp"
#include "lm/ngram_lm_impl.hpp"

namespace asrdec::detail {
namespace {

template <class T>
DeviceBuffer<T> upload(const T* host, std::size_t count, Device device) {
  DeviceBuffer<T> buffer(std::max<std::size_t>(count, 1), device);
  if (count > 0) {
    ASRDEC_CUDA_CHECK(cudaMemcpy(buffer.data(), host, count * sizeof(T), cudaMemcpyHostToDevice));
  }
  return buffer;
}

}  // namespace

void upload_ngram(NgramLm::Impl& impl) {
  require_kernel_image(impl.device);
  DeviceGuard guard(impl.device);
  const NgramLmRef host = impl.host.ref();
  const auto states = static_cast<std::size_t>(host.states);
  const auto arcs = static_cast<std::size_t>(impl.arcs);
  const auto vocab = static_cast<std::size_t>(host.vocab_size);
  impl.arc_begin = upload(host.arc_begin, states + 1, impl.device);
  impl.arc_label = upload(host.arc_label, arcs, impl.device);
  impl.arc_target = upload(host.arc_target, arcs, impl.device);
  impl.arc_weight = upload(host.arc_weight, arcs, impl.device);
  impl.backoff_to = upload(host.backoff_to, states, impl.device);
  impl.backoff_weight = upload(host.backoff_weight, states, impl.device);
  impl.final_weight = upload(host.final_weight, states, impl.device);
  impl.missing = upload(host.missing, vocab, impl.device);
  impl.device_ref = host;
  impl.device_ref.arc_begin = impl.arc_begin.data();
  impl.device_ref.arc_label = impl.arc_label.data();
  impl.device_ref.arc_target = impl.arc_target.data();
  impl.device_ref.arc_weight = impl.arc_weight.data();
  impl.device_ref.backoff_to = impl.backoff_to.data();
  impl.device_ref.backoff_weight = impl.backoff_weight.data();
  impl.device_ref.final_weight = impl.final_weight.data();
  impl.device_ref.missing = impl.missing.data();
  int multiprocessors = 0;
  ASRDEC_CUDA_CHECK(cudaDeviceGetAttribute(&multiprocessors, cudaDevAttrMultiProcessorCount, impl.device.index()));
  impl.multiprocessors = std::max(multiprocessors, 1);
  // The host copy is no longer needed: a CUDA LM answers only device queries.
  NgramTables sizes;
  sizes.vocab_size = impl.host.vocab_size;
  sizes.order = impl.host.order;
  sizes.missing_offset = impl.host.missing_offset;
  sizes.vocabulary = impl.host.vocabulary;
  sizes.words = std::move(impl.host.words);
  impl.host = std::move(sizes);
}

void advance_cuda(const NgramLm::Impl& impl, const std::int32_t* states, std::int64_t batch, float* scores,
                  std::int32_t* next_states, StreamHandle stream) {
  DeviceGuard guard(impl.device);
  launch_ngram_advance(impl.device_ref, states, batch, scores, next_states, impl.multiprocessors,
                       caller_stream(stream));
}

void launch_fused_queries(const NgramLm* lm, const BoostingTree* boost, const FusionRef& fusion, std::int64_t rows,
                          int multiprocessors, cudaStream_t stream, const std::int32_t* mask) {
  if (lm != nullptr) {
    launch_ngram_advance(lm->ref(), fusion.lm.state, rows, const_cast<float*>(fusion.lm.scores),
                         const_cast<std::int32_t*>(fusion.lm.next), multiprocessors, stream, mask);
  }
  if (boost != nullptr) {
    launch_ngram_advance(boost->ref(), fusion.boost.state, rows, const_cast<float*>(fusion.boost.scores),
                         const_cast<std::int32_t*>(fusion.boost.next), multiprocessors, stream, mask);
  }
}

void final_scores_cuda(const NgramLm::Impl& impl, const std::int32_t* states, std::int64_t batch, float* out,
                       StreamHandle stream) {
  DeviceGuard guard(impl.device);
  launch_ngram_final_scores(impl.device_ref, states, batch, out, caller_stream(stream));
}

}  // namespace asrdec::detail
