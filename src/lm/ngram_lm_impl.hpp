#pragma once
// Internal: what an NgramLm holds — the host tables (CPU LMs) or device copies (CUDA LMs), plus the vocabulary.

#include <unordered_map>

#include "asrdec/config.hpp"
#include "asrdec/core/buffer.hpp"
#include "asrdec/core/stream.hpp"
#include "lm/ngram_tables.hpp"

namespace asrdec {

struct NgramLm::Impl {
  Device device;
  detail::NgramTables host;  // the tables for CPU LMs; sizes and words only for CUDA LMs
  std::int64_t arcs = 0;
  std::size_t bytes = 0;
  std::unordered_map<std::string, std::int32_t> word_ids;
  // CUDA copies
  DeviceBuffer<std::int32_t> arc_begin, arc_label, arc_target, backoff_to;
  DeviceBuffer<float> arc_weight, backoff_weight, final_weight;
  DeviceBuffer<std::uint8_t> missing;
  NgramLmRef device_ref{};
  int multiprocessors = 1;
};

namespace detail {
/** The CPU full-vocabulary query of one state (shared by NgramLm and the fused decoders). */
void advance_row(const NgramLmRef& lm, std::int32_t state, float* scores, std::int32_t* next_states);
/** Completes an Impl whose host tables are set: sizes, word index, and the device copy for a CUDA device. */
void finish_ngram(NgramLm::Impl& impl);
#if ASRDEC_WITH_CUDA
void upload_ngram(NgramLm::Impl& impl);
void advance_cuda(const NgramLm::Impl& impl, const std::int32_t* states, std::int64_t batch, float* scores,
                  std::int32_t* next_states, StreamHandle stream);
void final_scores_cuda(const NgramLm::Impl& impl, const std::int32_t* states, std::int64_t batch, float* out,
                       StreamHandle stream);
#endif
}  // namespace detail
}  // namespace asrdec
