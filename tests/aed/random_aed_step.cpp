#include "aed/random_aed_step.hpp"

#include "asrdec/config.hpp"
#include "asrdec/core/memory.hpp"
#if ASRDEC_WITH_CUDA
#include <cuda_runtime_api.h>
#endif

#include <cmath>
#include <limits>
#include <random>
#include <stdexcept>

namespace asrdec::testing {

namespace {

std::uint64_t mix(std::uint64_t h, std::uint64_t v) {
  h ^= v + 0x9e3779b97f4a7c15ULL + (h << 6) + (h >> 2);
  return h * 0xff51afd7ed558ccdULL;
}

class RandomAedSession final : public AedStepSession {
 public:
  RandomAedSession(const RandomAedStep& step, std::int64_t max_rows) : step_(step), max_rows_(max_rows) {}

  void start(const TensorView&, const std::int64_t*, const std::vector<std::vector<std::int32_t>>& prompts,
             float* scores, StreamHandle) override {
    if (static_cast<std::int64_t>(prompts.size()) > max_rows_) throw std::logic_error("start: too many rows");
    prompts_ = prompts;
    rows_.clear();
    for (std::size_t b = 0; b < prompts.size(); ++b) {
      rows_.push_back({static_cast<std::int64_t>(b), {}});
      write(rows_.back(), scores + static_cast<std::int64_t>(b) * step_.vocab_size());
    }
  }

  void step(const std::int32_t* parents, const std::int32_t* tokens, const std::int32_t* positions,
            const std::int32_t* active, std::int64_t rows, float* scores, StreamHandle) override {
    if (rows > max_rows_) throw std::logic_error("step: too many rows");
    std::vector<Row> next(static_cast<std::size_t>(rows));
    for (std::int64_t r = 0; r < rows; ++r) {
      if (!active[r]) continue;
      const Row& parent = rows_.at(static_cast<std::size_t>(parents[r]));
      Row row = parent;
      row.generated.push_back(tokens[r]);
      const auto expected =
          static_cast<std::int64_t>(prompts_[static_cast<std::size_t>(row.utterance)].size() + row.generated.size()) -
          1;
      if (positions[r] != expected) throw std::logic_error("step: wrong position");
      write(row, scores + r * step_.vocab_size());
      next[static_cast<std::size_t>(r)] = std::move(row);
      ++step_.active_rows_stepped;
    }
    rows_ = std::move(next);
  }

 private:
  struct Row {
    std::int64_t utterance = 0;
    std::vector<std::int32_t> generated;
  };
  void write(const Row& row, float* scores) const {
    const std::vector<float> lp =
        step_.logprobs(row.utterance, prompts_[static_cast<std::size_t>(row.utterance)], row.generated);
    std::copy(lp.begin(), lp.end(), scores);
    if (step_.poison_token >= 0 && row.generated.empty()) {
      scores[step_.poison_token] = std::numeric_limits<float>::quiet_NaN();
    }
  }

  const RandomAedStep& step_;
  std::int64_t max_rows_;
  std::vector<std::vector<std::int32_t>> prompts_;
  std::vector<Row> rows_;
};

}  // namespace

std::vector<float> RandomAedStep::logprobs(std::int64_t utterance, const std::vector<std::int32_t>& prompt,
                                           const std::vector<std::int32_t>& generated) const {
  std::uint64_t h = mix(seed_, static_cast<std::uint64_t>(utterance));
  for (std::int32_t t : prompt) h = mix(h, static_cast<std::uint64_t>(t) + 1);
  h = mix(h, 0xabcdefULL);
  for (std::int32_t t : generated) h = mix(h, static_cast<std::uint64_t>(t) + 7);
  std::mt19937_64 rng(h);
  std::normal_distribution<float> normal(0.0f, sharpness_);
  std::vector<float> logits(static_cast<std::size_t>(vocab_));
  for (float& l : logits) l = normal(rng);
  logits[static_cast<std::size_t>(eos_)] += 0.6f * static_cast<float>(generated.size()) - 2.0f;
  float top = -std::numeric_limits<float>::infinity();
  for (float l : logits) top = std::max(top, l);
  double total = 0.0;
  for (float l : logits) total += std::exp(static_cast<double>(l - top));
  const float log_total = static_cast<float>(std::log(total));
  for (float& l : logits) l = l - top - log_total;
  return logits;
}

std::unique_ptr<AedStepSession> RandomAedStep::start_session(std::int64_t max_rows) const {
  return std::make_unique<RandomAedSession>(*this, max_rows);
}

namespace {

class DeviceAedSession final : public AedStepSession {
 public:
  DeviceAedSession(std::unique_ptr<AedStepSession> cpu, Device device, std::int64_t vocab)
      : cpu_(std::move(cpu)), device_(device), vocab_(vocab) {}

  void start(const TensorView& encoder, const std::int64_t* lengths,
             const std::vector<std::vector<std::int32_t>>& prompts, float* scores, StreamHandle stream) override {
    if (encoder.device() != device_) throw std::logic_error("start: the encoder is not on the step's device");
    host_scores_.resize(prompts.size() * static_cast<std::size_t>(vocab_));
    cpu_->start(encoder.on(Device::cpu()), lengths, prompts, host_scores_.data(), stream);
    to_device(scores, host_scores_.data(), host_scores_.size() * 4, stream);
  }

  void step(const std::int32_t* parents, const std::int32_t* tokens, const std::int32_t* positions,
            const std::int32_t* active, std::int64_t rows, float* scores, StreamHandle stream) override {
    const auto n = static_cast<std::size_t>(rows);
    std::vector<std::int32_t> p(n), t(n), q(n), a(n);
    to_host(p.data(), parents, n * 4, stream);
    to_host(t.data(), tokens, n * 4, stream);
    to_host(q.data(), positions, n * 4, stream);
    to_host(a.data(), active, n * 4, stream);
    host_scores_.resize(n * static_cast<std::size_t>(vocab_));
    cpu_->step(p.data(), t.data(), q.data(), a.data(), rows, host_scores_.data(), stream);
    to_device(scores, host_scores_.data(), host_scores_.size() * 4, stream);
  }

 private:
  void wait(StreamHandle stream) const {
#if ASRDEC_WITH_CUDA
    if (cudaStreamSynchronize(reinterpret_cast<cudaStream_t>(stream)) != cudaSuccess) {
      throw std::runtime_error("cudaStreamSynchronize failed");
    }
#else
    (void)stream;
#endif
  }
  void to_host(void* dst, const void* src, std::size_t bytes, StreamHandle stream) const {
    copy_bytes_async(dst, Device::cpu(), src, device_, bytes, stream);
    wait(stream);
  }
  void to_device(void* dst, const void* src, std::size_t bytes, StreamHandle stream) const {
    copy_bytes_async(dst, device_, src, Device::cpu(), bytes, stream);
    wait(stream);
  }

  std::unique_ptr<AedStepSession> cpu_;
  Device device_;
  std::int64_t vocab_;
  std::vector<float> host_scores_;
};

}  // namespace

std::unique_ptr<AedStepSession> DeviceAedStep::start_session(std::int64_t max_rows) const {
  return std::make_unique<DeviceAedSession>(cpu_->start_session(max_rows), device_, cpu_->vocab_size());
}

}  // namespace asrdec::testing
