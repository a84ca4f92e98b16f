#pragma once
/**
 * @file
 * BatchedHyps: the growing hypotheses of a batch during greedy decoding, in device memory for the CUDA executor
 * and host memory for the CPU one. Row b holds lengths[b] labels with their frame, TDT duration, log-probability
 * and max-prob confidence, and each row the log-probability of its path so far. The capacity per row is fixed when a
 * decode starts (frames x max_symbols + 1, which greedy decoding cannot exceed) and grows only between decodes.
 *
 * BatchedHypsView is what decode_async() hands out: read-only pointers valid until the decoder's next call.
 */

#include <algorithm>
#include <cstdint>
#include <vector>

#include "asrdec/core/buffer.hpp"
#include "asrdec/core/export.hpp"
#include "asrdec/hyps/hypothesis.hpp"
#include "asrdec/hyps/hyps_ref.hpp"

namespace asrdec {

struct ASRDEC_API BatchedHypsView {
  Device device;
  std::int64_t batch = 0;
  std::int64_t capacity = 0;                 ///< row stride of the [batch, capacity] arrays
  const std::int32_t* tokens = nullptr;      ///< [batch, capacity]
  const std::int32_t* timestamps = nullptr;  ///< [batch, capacity] frame within the decoded chunk
  const std::int32_t* durations = nullptr;   ///< [batch, capacity] TDT durations (0 for RNN-T)
  const float* scores = nullptr;             ///< [batch, capacity] log-softmax of each label (token columns)
  const float* confidences = nullptr;        ///< [batch, capacity] max-prob confidence of each label
  const std::int32_t* lengths = nullptr;     ///< [batch]
  const float* total_scores = nullptr;       ///< [batch] log-probability of each path (am_score)
};

template <MemoryKind Kind>
class BatchedHyps {
 public:
  BatchedHyps() = default;

  /** Makes room for `batch` rows of `capacity` labels; reallocates only when either grows. A reservation that
   *  cannot be allocated throws and leaves the container as it was. */
  void reserve(std::int64_t batch, std::int64_t capacity, Device device) {
    if (batch <= batch_ && capacity <= capacity_) {
      return;
    }
    // Every buffer of the new size is allocated before any replaces the old one.
    BatchedHyps grown;
    grown.batch_ = std::max(batch, batch_);
    grown.capacity_ = std::max(capacity, capacity_);
    const auto cells = static_cast<std::size_t>(grown.batch_ * grown.capacity_);
    const auto rows = static_cast<std::size_t>(grown.batch_);
    for (auto* buffer : {&grown.tokens_, &grown.timestamps_, &grown.durations_}) {
      *buffer = Buffer<std::int32_t, Kind>(cells, device);
    }
    grown.scores_ = Buffer<float, Kind>(cells, device);
    grown.confidences_ = Buffer<float, Kind>(cells, device);
    for (auto* buffer : {&grown.lengths_, &grown.last_timestamp_, &grown.same_timestamp_count_, &grown.overflow_}) {
      *buffer = Buffer<std::int32_t, Kind>(rows, device);
    }
    grown.total_scores_ = Buffer<float, Kind>(rows, device);
    *this = std::move(grown);
  }

  std::int64_t max_batch() const noexcept { return batch_; }
  std::int64_t capacity() const noexcept { return capacity_; }

  /** The mutable view the step functions write through. */
  HypsRef ref() noexcept {
    return HypsRef{tokens_.data(),
                   timestamps_.data(),
                   durations_.data(),
                   scores_.data(),
                   confidences_.data(),
                   lengths_.data(),
                   total_scores_.data(),
                   last_timestamp_.data(),
                   same_timestamp_count_.data(),
                   overflow_.data(),
                   capacity_};
  }

  BatchedHypsView view(Device device, std::int64_t batch) const noexcept {
    BatchedHypsView v;
    v.device = device;
    v.batch = batch;
    v.capacity = capacity_;
    v.tokens = tokens_.data();
    v.timestamps = timestamps_.data();
    v.durations = durations_.data();
    v.scores = scores_.data();
    v.confidences = confidences_.data();
    v.lengths = lengths_.data();
    v.total_scores = total_scores_.data();
    return v;
  }

  const std::int32_t* overflow() const noexcept { return overflow_.data(); }

 private:
  std::int64_t batch_ = 0;
  std::int64_t capacity_ = 0;
  Buffer<std::int32_t, Kind> tokens_, timestamps_, durations_;
  Buffer<float, Kind> scores_, confidences_;
  Buffer<std::int32_t, Kind> lengths_;
  Buffer<float, Kind> total_scores_;
  Buffer<std::int32_t, Kind> last_timestamp_, same_timestamp_count_, overflow_;
};

/** Host hypotheses from a view in host memory. `time_offsets` (may be null) is added to each row's timestamps,
 *  making chunk-relative frames absolute; durations are kept only when `with_durations` (TDT). */
ASRDEC_API std::vector<Hypothesis> to_hypotheses(const BatchedHypsView& host_view, const std::int64_t* time_offsets,
                                                 bool with_durations, bool is_final);

}  // namespace asrdec
