// The CUDA executor of CTC greedy decoding: buffers sized from the limits, the kernels captured once per input
// dtype into a graph (GraphExecutor), per-call arguments copied to the device before each replay.

#include <algorithm>
#include <array>
#include <optional>
#include <utility>

#include "asrdec/core/buffer.hpp"
#include "asrdec/core/error.hpp"
#include "core/bad_value.hpp"
#include "core/cuda/check.hpp"
#include "core/cuda/executor_lifecycle.hpp"
#include "core/cuda/lane_copies.hpp"
#include "ctc/greedy/ctc_greedy_backend.hpp"
#include "ctc/greedy/ctc_greedy_kernels.hpp"

namespace asrdec::detail {
namespace {

class CtcGreedyCuda final : public CtcGreedyBackend {
 public:
  CtcGreedyCuda(Device device, const CtcGreedyConfig& config, BatchLimits limits)
      : device_(device),
        config_(config),
        limits_(limits),
        lifecycle_(device, config.graph_mode, config.max_device_bytes),
        args_(1, device),
        first_bad_value_(1, device),
        first_bad_length_(1, device),
        host_status_(2) {
    DeviceGuard guard(device_);
    preload_ctc_greedy_kernels();
    int multiprocessors = 0;
    ASRDEC_CUDA_CHECK(cudaDeviceGetAttribute(&multiprocessors, cudaDevAttrMultiProcessorCount, device_.index()));
    multiprocessors_ = std::max(multiprocessors, 1);
    lifecycle_.grow(limits_, limits_, [this] { allocate(); });
  }

  CtcGreedyBatchResult decode_async(const CtcInput& problem, StreamHandle user_stream) override {
    return enqueue(problem, nullptr, {}, user_stream);
  }

  std::vector<Hypothesis> decode(const CtcInput& problem, StreamHandle user_stream) override {
    DeviceGuard guard(device_);
    const ExecutorLifecycle::Call call(lifecycle_, user_stream);
    const cudaStream_t stream = call.stream();
    return unpack_ctc_greedy(fetch(problem, enqueue(problem, nullptr, {}, stream), stream));
  }

  std::vector<Hypothesis> decode_chunks(const CtcInput& problem, const ChunkPlan& plan,
                                        const std::vector<std::int32_t>& boost_roots,
                                        StreamHandle user_stream) override {
    DeviceGuard guard(device_);
    const ExecutorLifecycle::Call call(lifecycle_, user_stream);
    const cudaStream_t stream = call.stream();
    if (!streaming_) {
      // The channels are allocated (and the graphs captured again with them) by the first streaming call.
      // When the allocation with channels fails, grow() allocates the old size again: without them.
      bool with_channels = true;
      lifecycle_.grow(limits_, limits_, [this, &with_channels] {
        streaming_ = std::exchange(with_channels, false);
        allocate();
      });
    }
    return unpack_ctc_greedy_chunks(fetch(problem, enqueue(problem, &plan, boost_roots, stream), stream), plan);
  }

  void synchronize_and_check(StreamHandle user_stream) override {
    DeviceGuard guard(device_);
    const ExecutorLifecycle::Call call(lifecycle_, user_stream);
    const cudaStream_t stream = call.stream();
    ASRDEC_CUDA_CHECK(cudaMemcpyAsync(&host_status_[0], first_bad_value_.data(), sizeof(unsigned long long),
                                      cudaMemcpyDeviceToHost, stream));
    ASRDEC_CUDA_CHECK(cudaMemcpyAsync(&host_status_[1], first_bad_length_.data(), sizeof(unsigned int),
                                      cudaMemcpyDeviceToHost, stream));
    ASRDEC_CUDA_CHECK(cudaStreamSynchronize(stream));
    lifecycle_.check_loops();
    const auto bad_length = static_cast<unsigned int>(host_status_[1]);
    if (bad_length != ~0u) {
      throw InvalidArgument(describe_bad_length(bad_length, stream));
    }
    if (host_status_[0] != kNoBadValue) {
      const BadValue bad = unpack_bad_value(host_status_[0]);
      throw InvalidArgument(concat("logprobs[", bad.b, ", ", bad.t, ", ", bad.v, "] is ", bad.is_nan ? "NaN" : "+inf",
                                   "; log-probabilities must be finite or -inf"));
    }
  }

  GraphMode graph_mode() const noexcept override { return lifecycle_.mode(); }
  std::int64_t device_bytes() const noexcept override { return lifecycle_.device_bytes(); }

 private:
  // Enqueues a decode of `problem` on `stream` (a caller's stream inside a Call); `plan`: streaming, each row
  // continuing or starting its channel.
  CtcGreedyBatchResult enqueue(const CtcInput& problem, const ChunkPlan* plan,
                               const std::vector<std::int32_t>& boost_roots, StreamHandle user_stream) {
    DeviceGuard guard(device_);
    const ExecutorLifecycle::Call call(lifecycle_, user_stream);
    const cudaStream_t stream = call.stream();
    if (!lifecycle_.usable() || problem.batch > limits_.max_batch || problem.frames > limits_.max_frames) {
      // Grow outside any loop (the graphs are captured again with the new pointers).
      BatchLimits wanted = limits_;
      wanted.max_batch = std::max(limits_.max_batch, problem.batch);
      wanted.max_frames = std::max(limits_.max_frames, problem.frames);
      lifecycle_.grow(limits_, wanted, [this] { allocate(); });
    }
    if (problem.logprobs.numel() > 0) {
      check_device_readable(problem.logprobs.data(), device_, "logprobs");
    }

    CtcGreedyArgs args{};
    args.logprobs = problem.logprobs.data();
    args.stride_b = problem.logprobs.stride(0);
    args.stride_t = problem.logprobs.stride(1);
    args.stride_v = problem.logprobs.stride(2);
    args.batch = static_cast<std::int32_t>(problem.batch);
    args.frames = static_cast<std::int32_t>(problem.frames);
    args.columns = static_cast<std::int32_t>(problem.columns);
    args.blank = problem.blank;
    args.check_values = config_.check_values ? 1 : 0;
    if (problem.lengths_on_host) {
      // Host lengths were validated already; copy them (as int32) next to the other buffers. The source is
      // pageable memory, which CUDA stages before returning, so the vector may die right after the call.
      ASRDEC_CUDA_CHECK(cudaMemcpyAsync(lengths_.data(), problem.host_lengths.data(),
                                        problem.host_lengths.size() * sizeof(std::int32_t), cudaMemcpyHostToDevice,
                                        stream));
      args.lengths = lengths_.data();
      args.lengths_stride = 1;
      args.lengths_are_int64 = 0;
    } else {
      if (problem.batch > 0) {
        check_device_readable(problem.lengths.data(), device_, "lengths");
      }
      args.lengths = problem.lengths.data();
      args.lengths_stride = problem.batch > 0 ? problem.lengths.stride(0) : 1;
      args.lengths_are_int64 = problem.lengths.dtype() == DType::i64 ? 1 : 0;
    }
    if (plan != nullptr) {
      // Each lane's channel, start flag, frame offset and boosting root, as four [max_batch] rows.
      args.streaming = 1;
      const auto lanes = static_cast<std::size_t>(limits_.max_batch);
      lane_host_.assign(4 * lanes, 0);
      for (std::size_t b = 0; b < plan->slot.size(); ++b) {
        lane_host_[b] = plan->slot[b];
        lane_host_[lanes + b] = plan->fresh[b];
        lane_host_[2 * lanes + b] = static_cast<std::int32_t>(plan->offset[b]);
        lane_host_[3 * lanes + b] = boost_roots[b];
      }
      ASRDEC_CUDA_CHECK(cudaMemcpyAsync(lane_args_.data(), lane_host_.data(), lane_host_.size() * sizeof(std::int32_t),
                                        cudaMemcpyHostToDevice, stream));
    }
    ASRDEC_CUDA_CHECK(cudaMemcpyAsync(args_.data(), &args, sizeof args, cudaMemcpyHostToDevice, stream));
    last_lengths_ = problem.lengths;
    last_batch_ = problem.batch;
    last_frames_ = problem.frames;

    lifecycle_.run(executor(problem.logprobs.dtype()), stream);

    return outputs_.view(device_, problem.batch, limits_.max_frames);
  }

  // Copies the result of the enqueued decode to the host and checks it (throws for bad values or lengths).
  CtcGreedyBatchResult fetch(const CtcInput& problem, const CtcGreedyBatchResult& r, cudaStream_t stream) {
    const std::size_t width = static_cast<std::size_t>(std::max<std::int64_t>(problem.frames, 1));
    const auto rows = static_cast<std::size_t>(problem.batch);
    if (rows > 0) {
      copy_rows(host_outputs_.tokens.data(), r.tokens, width, rows, stream);
      copy_rows(host_outputs_.timestamps.data(), r.timestamps, width, rows, stream);
      copy_rows(host_outputs_.token_logprobs.data(), r.token_logprobs, width, rows, stream);
      ASRDEC_CUDA_CHECK(cudaMemcpyAsync(host_outputs_.counts.data(), r.lengths, rows * sizeof(std::int32_t),
                                        cudaMemcpyDeviceToHost, stream));
      ASRDEC_CUDA_CHECK(
          cudaMemcpyAsync(host_outputs_.scores.data(), r.scores, rows * sizeof(float), cudaMemcpyDeviceToHost, stream));
      if (r.lm_scores != nullptr) {
        ASRDEC_CUDA_CHECK(cudaMemcpyAsync(host_outputs_.lm_scores.data(), r.lm_scores, rows * sizeof(float),
                                          cudaMemcpyDeviceToHost, stream));
      }
      if (r.boost_scores != nullptr) {
        ASRDEC_CUDA_CHECK(cudaMemcpyAsync(host_outputs_.boost_scores.data(), r.boost_scores, rows * sizeof(float),
                                          cudaMemcpyDeviceToHost, stream));
      }
    }
    synchronize_and_check(stream);
    return host_outputs_.view(Device::cpu(), problem.batch, static_cast<std::int64_t>(width));
  }

  template <class T>
  void copy_rows(T* host, const T* device, std::size_t width, std::size_t rows, cudaStream_t stream) {
    ASRDEC_CUDA_CHECK(cudaMemcpy2DAsync(host, width * sizeof(T), device,
                                        static_cast<std::size_t>(limits_.max_frames) * sizeof(T), width * sizeof(T),
                                        rows, cudaMemcpyDeviceToHost, stream));
  }

  std::string describe_bad_length(unsigned int b, cudaStream_t stream) {
    // The lengths came from device memory; read the offending value back for the message if still possible.
    std::int64_t value = 0;
    const std::size_t element = dtype_size(last_lengths_.dtype());
    const auto* source = static_cast<const char*>(last_lengths_.data()) +
                         static_cast<std::int64_t>(b) * last_lengths_.stride(0) * static_cast<std::int64_t>(element);
    if (cudaMemcpyAsync(&value, source, element, cudaMemcpyDeviceToHost, stream) == cudaSuccess &&
        cudaStreamSynchronize(stream) == cudaSuccess) {
      if (element == 4) {
        value = static_cast<std::int32_t>(value & 0xffffffff);
      }
      return concat("lengths[", b, "] = ", value, " is outside [0, ", last_frames_, "] (T, the frames of logprobs)");
    }
    (void)cudaGetLastError();
    return concat("lengths[", b, "] is outside [0, ", last_frames_, "] (T, the frames of logprobs)");
  }

  void allocate() {
    for (auto& slot : executors_) slot.reset();  // they point into the buffers about to be replaced
    const auto cells = static_cast<std::size_t>(limits_.max_batch * limits_.max_frames);
    const auto rows = static_cast<std::size_t>(limits_.max_batch);
    frame_token_ = DeviceBuffer<std::int32_t>(cells, device_);
    frame_logprob_ = DeviceBuffer<float>(cells, device_);
    lengths_ = DeviceBuffer<std::int32_t>(rows, device_);
    outputs_.allocate(limits_, device_);
    host_outputs_.allocate(limits_, Device::cpu());
    outputs_.with_lm = host_outputs_.with_lm = config_.lm != nullptr;
    outputs_.with_boost = host_outputs_.with_boost = config_.boost != nullptr;
    lane_carry_ = DeviceBuffer<CtcGreedyCarry>(rows, device_);
    lane_args_ = DeviceBuffer<std::int32_t>(4 * rows, device_);
    if (streaming_) reallocate_channels(channels_, static_cast<std::size_t>(limits_.max_open_utterances), device_);
  }

  CtcGreedyWorkspace workspace() const {
    CtcGreedyWorkspace ws{};
    ws.args = args_.data();
    ws.frame_token = const_cast<std::int32_t*>(frame_token_.data());
    ws.frame_logprob = const_cast<float*>(frame_logprob_.data());
    ws.tokens = const_cast<std::int32_t*>(outputs_.tokens.data());
    ws.timestamps = const_cast<std::int32_t*>(outputs_.timestamps.data());
    ws.token_logprobs = const_cast<float*>(outputs_.token_logprobs.data());
    ws.token_counts = const_cast<std::int32_t*>(outputs_.counts.data());
    ws.scores = const_cast<float*>(outputs_.scores.data());
    ws.first_bad_value = const_cast<unsigned long long*>(first_bad_value_.data());
    ws.first_bad_length = const_cast<unsigned int*>(first_bad_length_.data());
    ws.row_stride = limits_.max_frames;
    ws.lm_scores = const_cast<float*>(outputs_.lm_scores.data());
    if (config_.lm != nullptr) {
      ws.lm = config_.lm->ref();
      ws.lm_weight = config_.lm_weight;
      ws.use_lm = 1;
    }
    ws.lane_carry = const_cast<CtcGreedyCarry*>(lane_carry_.data());
    ws.channels = streaming_ ? const_cast<CtcGreedyCarry*>(channels_.data()) : nullptr;
    const auto lanes = static_cast<std::size_t>(limits_.max_batch);
    ws.lane_slot = lane_args_.data();
    ws.lane_fresh = lane_args_.data() + lanes;
    ws.lane_offset = lane_args_.data() + 2 * lanes;
    ws.lane_boost_root = lane_args_.data() + 3 * lanes;
    ws.boost_scores = const_cast<float*>(outputs_.boost_scores.data());
    if (config_.boost != nullptr) {
      ws.boost = config_.boost->ref();
      ws.boost_roots = config_.boost->list_roots();
      ws.boost_lists = config_.boost->num_lists();
      ws.boost_weight = config_.boost_weight;
      ws.use_boost = 1;
    }
    return ws;
  }

  GraphExecutor& executor(DType dtype) {
    auto& slot = executors_[static_cast<std::size_t>(dtype)];
    if (!slot) {
      // Enough warps to cover the largest batch, capped at what the device runs concurrently; the kernels
      // loop over any remainder, so the graph does not depend on the size of a particular call.
      const std::int64_t frames = limits_.max_batch * limits_.max_frames;
      const std::int64_t warps_per_block = 256 / 32;
      const int argmax_blocks = static_cast<int>(
          std::clamp<std::int64_t>((frames + warps_per_block - 1) / warps_per_block, 1, 8LL * multiprocessors_));
      const int collapse_blocks = static_cast<int>(std::clamp<std::int64_t>(limits_.max_batch, 1, 4096));
      const CtcGreedyWorkspace ws = workspace();
      StreamProgram program;
      program.then([=](StreamHandle s) { launch_ctc_greedy(dtype, ws, argmax_blocks, collapse_blocks, s); });
      slot.emplace(device_, lifecycle_.mode(), std::move(program));
    }
    return *slot;
  }

  Device device_;
  CtcGreedyConfig config_;
  BatchLimits limits_;
  ExecutorLifecycle lifecycle_;
  int multiprocessors_ = 1;
  DeviceBuffer<CtcGreedyArgs> args_;
  DeviceBuffer<unsigned long long> first_bad_value_;
  DeviceBuffer<unsigned int> first_bad_length_;
  DeviceBuffer<std::int32_t> frame_token_;
  DeviceBuffer<float> frame_logprob_;
  DeviceBuffer<std::int32_t> lengths_;
  CtcGreedyOutputs<MemoryKind::device> outputs_;
  CtcGreedyOutputs<MemoryKind::pinned> host_outputs_;
  PinnedBuffer<unsigned long long> host_status_;
  DeviceBuffer<CtcGreedyCarry> lane_carry_;  // [max_batch]
  DeviceBuffer<std::int32_t> lane_args_;     // [4, max_batch]: slot, fresh, offset, boosting root
  DeviceBuffer<CtcGreedyCarry> channels_;    // [max_open_utterances] once streaming started
  std::vector<std::int32_t> lane_host_;
  bool streaming_ = false;
  std::array<std::optional<GraphExecutor>, 3> executors_;
  TensorView last_lengths_;
  std::int64_t last_batch_ = 0;
  std::int64_t last_frames_ = 0;
};

}  // namespace

std::unique_ptr<CtcGreedyBackend> make_ctc_greedy_cuda(Device device, const CtcGreedyConfig& config,
                                                       BatchLimits limits) {
  return std::make_unique<CtcGreedyCuda>(device, config, limits);
}

}  // namespace asrdec::detail
