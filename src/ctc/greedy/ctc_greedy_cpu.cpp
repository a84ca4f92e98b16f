// The CPU executor of CTC greedy decoding: one pass over each utterance's frames, utterances spread over a thread
// pool, writing into buffers sized from the decoder's limits (no allocation per call unless a limit grows).

#include <algorithm>
#include <memory>
#include <type_traits>
#include <vector>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#include "asrdec/core/buffer.hpp"
#include "asrdec/core/error.hpp"
#include "asrdec/detail/float16.hpp"
#include "core/bad_value.hpp"
#include "core/ctc_input.hpp"
#include "core/thread_pool.hpp"
#include "ctc/ctc_step.hpp"
#include "ctc/greedy/ctc_greedy_backend.hpp"
#include "lm/fusion_step.hpp"
#include "lm/ngram_lm_impl.hpp"

namespace asrdec::detail {
namespace {

// The maximum of a row (NaN never wins: `x > m ? x : m`) and whether any value is NaN or +inf. On x86-64 the
// SSE2 MAXPS instruction computes exactly `a > b ? a : b`, so four lanes at a time give the same maximum up to
// the sign of a zero (callers re-read the value at the chosen index); compilers do not vectorise this
// reduction themselves because it may not be reordered.
float maximum_and_validity(const float* values, std::int32_t columns, int& bad) {
  float maximum = argmax_identity().value;
  std::int32_t v = 0;
#if defined(__SSE2__)
  __m128 lanes_a = _mm_set1_ps(maximum);
  __m128 lanes_b = lanes_a;
  __m128 invalid = _mm_setzero_ps();
  const __m128 largest = _mm_set1_ps(3.402823466e+38f);
  for (; v + 8 <= columns; v += 8) {
    const __m128 a = _mm_loadu_ps(values + v);
    const __m128 b = _mm_loadu_ps(values + v + 4);
    lanes_a = _mm_max_ps(a, lanes_a);
    lanes_b = _mm_max_ps(b, lanes_b);
    invalid = _mm_or_ps(
        invalid, _mm_or_ps(_mm_cmpunord_ps(a, b), _mm_or_ps(_mm_cmpgt_ps(a, largest), _mm_cmpgt_ps(b, largest))));
  }
  alignas(16) float lanes[8];
  _mm_store_ps(lanes, lanes_a);
  _mm_store_ps(lanes + 4, lanes_b);
  for (float lane : lanes) {
    maximum = lane > maximum ? lane : maximum;
  }
  bad |= _mm_movemask_ps(invalid);
#endif
  for (; v < columns; ++v) {
    bad |= static_cast<int>(is_invalid_logprob(values[v]));
    maximum = values[v] > maximum ? values[v] : maximum;
  }
  return maximum;
}

// The first column whose value equals `maximum` (columns when none does). Blank is usually the last column
// and wins most frames, so this scan often covers the whole row and is worth vectorising too.
std::int32_t first_equal(const float* values, std::int32_t columns, float maximum) {
  std::int32_t v = 0;
#if defined(__SSE2__)
  const __m128 target = _mm_set1_ps(maximum);
  for (; v + 8 <= columns; v += 8) {
    const int mask = _mm_movemask_ps(_mm_cmpeq_ps(_mm_loadu_ps(values + v), target)) |
                     (_mm_movemask_ps(_mm_cmpeq_ps(_mm_loadu_ps(values + v + 4), target)) << 4);
    if (mask != 0) {
      return v + __builtin_ctz(static_cast<unsigned>(mask));
    }
  }
#endif
  for (; v < columns; ++v) {
    if (values[v] == maximum) {
      return v;
    }
  }
  return columns;
}

// What an utterance carries from chunk to chunk (a channel), and what a row ends a call with.
struct CtcGreedyCarry {
  std::int32_t previous = -1;  // the last frame's token (-1 before the first frame)
  double score = 0.0;          // the chosen log-probabilities so far, summed in frame order
  std::int32_t lm_state = 0;
  std::int32_t boost_state = 0;
  float lm_total = 0.0f;
  float boost_total = 0.0f;
};

class CtcGreedyCpu final : public CtcGreedyBackend {
 public:
  CtcGreedyCpu(const CtcGreedyConfig& config, BatchLimits limits) : config_(config), limits_(limits) {
    outputs_.with_lm = config_.lm != nullptr;
    outputs_.with_boost = config_.boost != nullptr;
    const std::int64_t V = config_.lm != nullptr      ? config_.lm->vocab_size()
                           : config_.boost != nullptr ? config_.boost->vocab_size()
                                                      : 0;
    const int threads = resolve_threads(config_.threads);
    pool_ = std::make_unique<ThreadPool>(threads);
    workers_.resize(static_cast<std::size_t>(threads));
    for (WorkerScratch& w : workers_) {
      if (config_.lm != nullptr) {
        w.lm_scores = HostBuffer<float>(static_cast<std::size_t>(V));
        w.lm_next = HostBuffer<std::int32_t>(static_cast<std::size_t>(V));
      }
      if (config_.boost != nullptr) {
        w.boost_scores = HostBuffer<float>(static_cast<std::size_t>(V));
        w.boost_next = HostBuffer<std::int32_t>(static_cast<std::size_t>(V));
      }
    }
    vocab_ = static_cast<std::int32_t>(V);
    allocate();
  }

  CtcGreedyBatchResult decode_async(const CtcInput& problem, StreamHandle) override {
    starts_.resize(static_cast<std::size_t>(problem.batch));
    for (std::int64_t b = 0; b < problem.batch; ++b) {
      starts_[static_cast<std::size_t>(b)] =
          start_carry(config_.boost != nullptr ? config_.boost->root_for(b, problem.batch) : 0);
    }
    return run_any(problem);
  }

  std::vector<Hypothesis> decode(const CtcInput& problem, StreamHandle stream) override {
    return unpack_ctc_greedy(decode_async(problem, stream));
  }

  std::vector<Hypothesis> decode_chunks(const CtcInput& problem, const ChunkPlan& plan,
                                        const std::vector<std::int32_t>& boost_roots, StreamHandle) override {
    if (channels_.empty()) channels_.resize(static_cast<std::size_t>(limits_.max_open_utterances));
    starts_.resize(static_cast<std::size_t>(problem.batch));
    for (std::size_t b = 0; b < starts_.size(); ++b) {
      starts_[b] = plan.fresh[b] ? start_carry(boost_roots[b]) : channels_[static_cast<std::size_t>(plan.slot[b])];
    }
    const CtcGreedyBatchResult result = run_any(problem);  // throws before any channel changes
    for (std::size_t b = 0; b < starts_.size(); ++b) channels_[static_cast<std::size_t>(plan.slot[b])] = ends_[b];
    return unpack_ctc_greedy_chunks(result, plan);
  }

  void synchronize_and_check(StreamHandle) override {}  // errors were thrown by decode_async itself
  GraphMode graph_mode() const noexcept override { return GraphMode::eager; }

 private:
  void allocate() { outputs_.allocate(limits_, Device::cpu()); }

  CtcGreedyCarry start_carry(std::int32_t boost_root) const {
    CtcGreedyCarry carry;
    carry.lm_state = NgramLm::bos_state();
    carry.boost_state = boost_root;
    return carry;
  }

  // Decodes every row from starts_[b], leaving its end state in ends_[b].
  CtcGreedyBatchResult run_any(const CtcInput& problem) {
    if (problem.batch > limits_.max_batch || problem.frames > limits_.max_frames) {
      // The limits grow only once their buffers are allocated: a call that cannot have them throws and leaves the
      // limits those of the buffers.
      BatchLimits grown = limits_;
      grown.max_batch = std::max(limits_.max_batch, problem.batch);
      grown.max_frames = std::max(limits_.max_frames, problem.frames);
      outputs_.allocate(grown, Device::cpu());
      limits_ = grown;
    }
    ends_.resize(starts_.size());
    switch (problem.logprobs.dtype()) {
      case DType::f32:
        run<float>(problem);
        break;
      case DType::f16:
        run<half_t>(problem);
        break;
      case DType::bf16:
        run<bfloat16_t>(problem);
        break;
      default:
        throw InvalidArgument(concat("logprobs: unsupported dtype ", dtype_name(problem.logprobs.dtype())));
    }
    return outputs_.view(Device::cpu(), problem.batch, limits_.max_frames);
  }

  [[noreturn]] static void throw_bad_value(std::int64_t b, std::int64_t t, std::int64_t v, float value) {
    throw InvalidArgument(concat("logprobs[", b, ", ", t, ", ", v, "] is ", value != value ? "NaN" : "+inf",
                                 "; log-probabilities must be finite or -inf"));
  }

  // Argmax of one frame whose columns are contiguous, in two passes the compiler vectorises: the maximum (and
  // whether any value is NaN or +inf), then the first column holding it. Same result as the scalar first-max
  // scan: NaN never wins, and a frame with nothing comparable yields the identity (decoded as blank).
  template <class T>
  static ArgMax contiguous_argmax(const T* frame, std::int32_t columns, bool& invalid,
                                  HostBuffer<float>& frame_scratch) {
    const float* values;
    if constexpr (std::is_same_v<T, float>) {
      values = frame;
    } else {
      float* scratch = frame_scratch.data();
      for (std::int32_t v = 0; v < columns; ++v) scratch[v] = to_float(frame[v]);
      values = scratch;
    }
    int bad = 0;
    const float maximum = maximum_and_validity(values, columns, bad);
    invalid = bad != 0;
    const std::int32_t index = first_equal(values, columns, maximum);
    ArgMax best = argmax_identity();
    if (index < columns) {
      best = ArgMax{values[index], index};
    }
    return best;
  }

  template <class T>
  static ArgMax strided_argmax(const T* frame, std::int32_t columns, std::int64_t stride, bool check, std::int64_t b,
                               std::int32_t t) {
    ArgMax best = argmax_identity();
    for (std::int32_t v = 0; v < columns; ++v) {
      const float x = to_float(frame[v * stride]);
      if (check && is_invalid_logprob(x)) {
        throw_bad_value(b, t, v, x);
      }
      argmax_update(best, x, v);
    }
    return best;
  }

  template <class T>
  void run(const CtcInput& problem) {
    const T* data = static_cast<const T*>(problem.logprobs.data());
    const std::int64_t stride_b = problem.logprobs.stride(0);
    const std::int64_t stride_t = problem.logprobs.stride(1);
    const std::int64_t stride_v = problem.logprobs.stride(2);
    const auto columns = static_cast<std::int32_t>(problem.columns);
    const std::int64_t row_stride = limits_.max_frames;
    for (WorkerScratch& w : workers_) w.frame.reserve_discard(static_cast<std::size_t>(columns));
    const bool fused = config_.lm != nullptr || config_.boost != nullptr;
    // Utterances in parallel, each whole on one thread with that thread's scratch; a bad value throws what a plain
    // loop over the utterances would have thrown first.
    pool_->parallel_for(problem.batch, [&](std::int64_t b, int worker) {
      WorkerScratch& w = workers_[static_cast<std::size_t>(worker)];
      const std::int32_t length = problem.host_lengths[static_cast<std::size_t>(b)];
      std::int32_t* tokens = outputs_.tokens.data() + b * row_stride;
      std::int32_t* timestamps = outputs_.timestamps.data() + b * row_stride;
      float* token_logprobs = outputs_.token_logprobs.data() + b * row_stride;
      std::int32_t count = 0;
      const CtcGreedyCarry& start = starts_[static_cast<std::size_t>(b)];
      std::int32_t previous = start.previous;
      double score = start.score;
      // Fusion over this utterance alone: row 0 of the [1, V] query buffers.
      std::int32_t lm_state = start.lm_state;
      std::int32_t boost_state = start.boost_state;
      float lm_total = start.lm_total, boost_total = start.boost_total;
      FusionRef fusion;
      fusion.vocab = vocab_;
      fusion.blank = problem.blank;
      if (config_.lm != nullptr) {
        fusion.lm = FusionSource{w.lm_scores.data(), w.lm_next.data(), &lm_state, &lm_total, config_.lm_weight};
      }
      if (config_.boost != nullptr) {
        fusion.boost =
            FusionSource{w.boost_scores.data(), w.boost_next.data(), &boost_state, &boost_total, config_.boost_weight};
      }
      bool stale = true;
      for (std::int32_t t = 0; t < length; ++t) {
        const T* frame = data + b * stride_b + t * stride_t;
        ArgMax best;
        if (stride_v == 1) {
          bool invalid = false;
          best = contiguous_argmax(frame, columns, invalid, w.frame);
          if (invalid && config_.check_values) {
            strided_argmax(frame, columns, 1, true, b, t);  // locates and reports the first bad column
          }
        } else {
          best = strided_argmax(frame, columns, stride_v, config_.check_values, b, t);
        }
        std::int32_t token = ctc_frame_token(best, problem.blank);
        float value = best.value;
        if (ctc_emits(token, previous, problem.blank)) {
          if (fused) {
            if (stale) {
              if (config_.lm != nullptr) advance_row(config_.lm->ref(), lm_state, w.lm_scores.data(), w.lm_next.data());
              if (config_.boost != nullptr) {
                advance_row(config_.boost->ref(), boost_state, w.boost_scores.data(), w.boost_next.data());
              }
              stale = false;
            }
            // Re-choose among the non-blank tokens other than the previous frame's (which would collapse).
            ArgMax best_fused = argmax_identity();
            for (std::int32_t v = 0; v < columns; ++v) {
              if (v == problem.blank || v == previous) continue;
              argmax_update(best_fused, to_float(frame[v * stride_v]) + fusion_bonus(fusion, 0, v), v);
            }
            if (best_fused.index != argmax_identity().index) {
              token = best_fused.index;
              value = to_float(frame[token * stride_v]);
            }
            fusion_emit(fusion, 0, token);
            stale = true;
          }
          tokens[count] = token;
          timestamps[count] = t;
          token_logprobs[count] = value;
          ++count;
        }
        score += value;
        previous = token;
      }
      outputs_.counts[static_cast<std::size_t>(b)] = count;
      outputs_.scores[static_cast<std::size_t>(b)] = static_cast<float>(score);
      outputs_.lm_scores[static_cast<std::size_t>(b)] = lm_total;
      outputs_.boost_scores[static_cast<std::size_t>(b)] = boost_total;
      ends_[static_cast<std::size_t>(b)] =
          CtcGreedyCarry{previous, score, lm_state, boost_state, lm_total, boost_total};
    });
  }

  /** What one thread writes besides its utterance's outputs. */
  struct WorkerScratch {
    HostBuffer<float> frame;                       ///< one frame converted to float (fp16/bf16 input)
    HostBuffer<float> lm_scores, boost_scores;     ///< [V] query of the current utterance's states
    HostBuffer<std::int32_t> lm_next, boost_next;  ///< [V]
  };

  CtcGreedyConfig config_;
  BatchLimits limits_;
  CtcGreedyOutputs<MemoryKind::host> outputs_;
  std::vector<CtcGreedyCarry> starts_, ends_;  // per row of the current call
  std::vector<CtcGreedyCarry> channels_;       // [max_open_utterances] once streaming started
  std::int32_t vocab_ = 0;                     ///< V of the fused models
  std::unique_ptr<ThreadPool> pool_;
  std::vector<WorkerScratch> workers_;  ///< one per thread of pool_
};

}  // namespace

std::unique_ptr<CtcGreedyBackend> make_ctc_greedy_cpu(const CtcGreedyConfig& config, BatchLimits limits) {
  return std::make_unique<CtcGreedyCpu>(config, limits);
}

}  // namespace asrdec::detail
