// An engine's own decoding loop written against asrdec's header-only hypothesis storage: BatchedHyps holds the
// growing rows, HypsRef (asrdec/hyps/hyps_ref.hpp) is its trivially copyable view, and hyps_clear / hyps_append /
// hyps_add_step_logprob are the same inline functions asrdec's own decoders update rows with. The loop here is
// greedy CTC (one row per utterance; a token is emitted on the first frame of a run of equal non-blank argmaxes),
// so its results can be checked against asrdec::CtcGreedyDecoder. hyps_user_kernel.cu runs the same rule in a
// CUDA kernel.
//
//   hyps_user_loop logprobs.npy lengths.npy

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <vector>

#include "asrdec/asrdec.hpp"

namespace {

// IEEE binary16 → float: the sample log-probabilities are fp16, as an engine's often are.
float half_to_float(std::uint16_t h) {
  const int exponent = (h >> 10) & 31;
  const int mantissa = h & 1023;
  float value = 0.0f;
  if (exponent == 0) {
    value = std::ldexp(static_cast<float>(mantissa), -24);
  } else if (exponent == 31) {
    value = mantissa != 0 ? NAN : INFINITY;
  } else {
    value = std::ldexp(static_cast<float>(mantissa + 1024), exponent - 25);
  }
  return (h & 0x8000) != 0 ? -value : value;
}

// One utterance of greedy CTC: rows of the batch are independent, so a CUDA kernel runs this body per thread.
void decode_row(const asrdec::HypsRef& hyps, std::int64_t b, const std::uint16_t* logprobs, std::int64_t frames,
                std::int64_t columns) {
  const auto blank = static_cast<std::int32_t>(columns - 1);
  asrdec::hyps_clear(hyps, b);
  std::int32_t previous = blank;
  for (std::int64_t t = 0; t < frames; ++t) {
    const std::uint16_t* row = logprobs + t * columns;
    std::int32_t best = 0;
    float best_value = half_to_float(row[0]);
    for (std::int64_t v = 1; v < columns; ++v) {
      const float value = half_to_float(row[v]);
      if (value > best_value) {
        best = static_cast<std::int32_t>(v);
        best_value = value;
      }
    }
    asrdec::hyps_add_step_logprob(hyps, b, best_value);  // the path's log-probability, blanks included
    if (best != blank && best != previous) {
      asrdec::hyps_append(hyps, b, best, static_cast<std::int32_t>(t), 0, best_value, std::exp(best_value));
    }
    previous = best;
  }
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 3) {
    std::fprintf(stderr, "usage: %s logprobs.npy lengths.npy\n", argv[0]);
    return 2;
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
    const auto* values = static_cast<const std::uint16_t*>(logprobs.data());
    const std::int32_t* length = lengths.data_as<std::int32_t>();

    // A row never holds more tokens than frames.
    asrdec::BatchedHyps<asrdec::MemoryKind::host> hyps;
    hyps.reserve(batch, frames, asrdec::Device::cpu());
    const asrdec::HypsRef ref = hyps.ref();
    for (std::int64_t b = 0; b < batch; ++b) decode_row(ref, b, values + b * frames * columns, length[b], columns);
    const std::vector<asrdec::Hypothesis> mine =
        asrdec::to_hypotheses(hyps.view(asrdec::Device::cpu(), batch), nullptr, false, true);

    // The library's decoder on the same input: the same rule, so the same tokens, frames and scores.
    const std::vector<asrdec::Hypothesis> library =
        asrdec::CtcGreedyDecoder(asrdec::Device::cpu()).decode(logprobs.view(), lengths.view());
    std::int64_t equal = 0;
    for (std::int64_t b = 0; b < batch; ++b) {
      const asrdec::Hypothesis& x = mine[static_cast<std::size_t>(b)];
      const asrdec::Hypothesis& y = library[static_cast<std::size_t>(b)];
      const bool same = x.tokens == y.tokens && x.timestamps == y.timestamps && x.token_scores == y.token_scores &&
                        std::fabs(x.score - y.score) <= 1e-3f * (1.0f + std::fabs(y.score));
      equal += same ? 1 : 0;
      if (b < 2) std::printf("%lld: %zu tokens, score %.3f\n", static_cast<long long>(b), x.tokens.size(), x.score);
    }
    std::printf("%lld of %lld utterances equal CtcGreedyDecoder\n", static_cast<long long>(equal),
                static_cast<long long>(batch));
    return equal == batch ? 0 : 1;
  } catch (const asrdec::Error& error) {
    std::fprintf(stderr, "error: %s\n", error.what());
    return 1;
  }
}
