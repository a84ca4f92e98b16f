// .npy arrays. Oracle beyond "no crash": an accepted array writes back and reads back identical, and a 3-d float
// array decodes with CTC greedy exactly as a plain first-maximum, collapse-repeats loop (or both refuse a NaN/+inf).

#include <cmath>
#include <cstring>
#include <vector>

#include "asrdec/asrdec.hpp"
#include "asrdec/detail/float16.hpp"
#include "fuzz_file.hpp"

namespace {

using asrdec::fuzz::FuzzFile;

float value_at(const asrdec::NpyArray& a, std::int64_t i) {
  return a.dtype() == asrdec::DType::f32 ? a.data_as<float>()[i]
                                         : asrdec::detail::to_float(a.data_as<asrdec::half_t>()[i]);
}

struct Decoded {
  std::vector<std::vector<std::int32_t>> tokens, frames;
  bool refused = false;
};

// CTC greedy by hand: blank = last column, first maximum wins, a token is emitted where it starts a run.
Decoded reference_ctc_greedy(const asrdec::NpyArray& a) {
  const std::int64_t N = a.shape()[0], T = a.shape()[1], C = a.shape()[2];
  Decoded out;
  for (std::int64_t n = 0; n < N; ++n) {
    std::vector<std::int32_t> tokens, frames;
    std::int32_t previous = static_cast<std::int32_t>(C - 1);
    for (std::int64_t t = 0; t < T; ++t) {
      std::int32_t best = 0;
      for (std::int64_t c = 0; c < C; ++c) {
        const float x = value_at(a, (n * T + t) * C + c);
        if (std::isnan(x) || x == INFINITY) {
          out.refused = true;
          return out;
        }
        if (x > value_at(a, (n * T + t) * C + best)) best = static_cast<std::int32_t>(c);
      }
      if (best != C - 1 && best != previous) {
        tokens.push_back(best);
        frames.push_back(static_cast<std::int32_t>(t));
      }
      previous = best;
    }
    out.tokens.push_back(tokens);
    out.frames.push_back(frames);
  }
  return out;
}

void check_round_trip(const asrdec::NpyArray& a, FuzzFile& copy) {
  if (a.shape().size() > asrdec::TensorView::kMaxDims) return;
  asrdec::write_npy(copy.path(), a.view());
  const asrdec::NpyArray back = asrdec::read_npy(copy.path());
  ASRDEC_FUZZ_CHECK(back.dtype() == a.dtype() && back.shape() == a.shape() && back.bytes() == a.bytes());
  ASRDEC_FUZZ_CHECK(a.bytes() == 0 || std::memcmp(back.data(), a.data(), a.bytes()) == 0);
}

void check_ctc_greedy(const asrdec::NpyArray& a) {
  if (a.shape().size() != 3 || !asrdec::is_floating(a.dtype()) || a.shape()[2] < 2 || a.numel() > 1 << 16) return;
  const std::int64_t N = a.shape()[0], T = a.shape()[1];
  const Decoded want = reference_ctc_greedy(a);
  std::vector<std::int64_t> lengths(static_cast<std::size_t>(N), T);
  asrdec::CtcGreedyDecoder decoder(asrdec::Device::cpu());
  std::vector<asrdec::Hypothesis> got;
  try {
    got = decoder.decode(a.view(), asrdec::TensorView(lengths.data(), asrdec::DType::i64, {N}));
  } catch (const asrdec::InvalidArgument&) {
    ASRDEC_FUZZ_CHECK(want.refused);
    return;
  }
  ASRDEC_FUZZ_CHECK(!want.refused);
  ASRDEC_FUZZ_CHECK(static_cast<std::int64_t>(got.size()) == N);
  for (std::int64_t n = 0; n < N; ++n) {
    ASRDEC_FUZZ_CHECK(got[static_cast<std::size_t>(n)].tokens == want.tokens[static_cast<std::size_t>(n)]);
    ASRDEC_FUZZ_CHECK(got[static_cast<std::size_t>(n)].timestamps == want.frames[static_cast<std::size_t>(n)]);
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static FuzzFile input("npy_input.npy");
  static FuzzFile copy("npy_copy.npy");
  try {
    const asrdec::NpyArray array = asrdec::read_npy(input.write(data, size));
    check_round_trip(array, copy);
    check_ctc_greedy(array);
  } catch (const asrdec::Error&) {
    // A typed refusal is the expected outcome for most inputs.
  }
  return 0;
}
