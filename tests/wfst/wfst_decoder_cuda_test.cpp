// WFST beam search on CUDA against the CPU executor (bit-identical results: the same rules and cost rounding) and
// OpenFst: random graphs in exact, pruned and overflowing searches, with word boosts, f32 and f16 frames, every
// graph mode; the sample TLG under max_active and queue pressure; n-best lists; chunked streams; bad input. Skips where
// no CUDA device is usable.

#include <gtest/gtest.h>

#include <limits>
#include <random>

#include "asrdec/asrdec.hpp"
#include "asrdec/detail/float16.hpp"
#include "support/test_support.hpp"
#include "wfst/openfst_oracle.hpp"
#include "wfst/random_wfst.hpp"

namespace asrdec {
namespace {

using namespace wfst_testing;  // the helpers shared with the CPU tests

// A host batch [B, T, C] as f32 or f16 values, and a device copy of the same bytes.
struct TwoCopies {
  std::vector<float> f32;
  std::vector<half_t> f16;
  DeviceBuffer<std::byte> device;
  DType dtype = DType::f32;
  std::int64_t shape[3] = {0, 0, 0};

  TwoCopies(const Batch& batch, DType type, Device cuda) : f32(batch.values), dtype(type) {
    shape[0] = static_cast<std::int64_t>(batch.lengths.size());
    shape[1] = batch.frames;
    shape[2] = batch.columns;
    if (dtype == DType::f16) {
      for (const float x : f32) f16.push_back(detail::from_float<half_t>(x));
      device = testing::to_device(f16.data(), f16.size() * 2, cuda);
    } else {
      device = testing::to_device(f32.data(), f32.size() * 4, cuda);
    }
  }
  const void* host_data() const {
    return dtype == DType::f16 ? static_cast<const void*>(f16.data()) : static_cast<const void*>(f32.data());
  }
  TensorView host() const { return TensorView(host_data(), dtype, {shape[0], shape[1], shape[2]}); }
  TensorView on(Device cuda) const { return TensorView(device.data(), dtype, {shape[0], shape[1], shape[2]}, cuda); }
};

void expect_same_with_overflow(const WfstResult& cuda, const WfstResult& cpu, const std::string& what) {
  expect_same(cuda, cpu, what);
  EXPECT_EQ(cuda.overflow, cpu.overflow) << what;
}

// Lanes small enough that some rows and chunks go to the CPU: 4 tokens a frame (`tiny_frames`) or 16, 16 back-pointers
// (`short_history`) or 64, and a max_device_bytes that admits `lanes` of them. Tiny frames have a fast frame of 2
// tokens (frames outgrow it often), the others none.
void use_small_lanes(WfstDecoderConfig& config, const WfstGraph& graph, Device cuda, bool tiny_frames,
                     bool short_history, std::int64_t lanes) {
  config.device_frame_tokens = tiny_frames ? 4 : 16;
  config.device_fast_tokens = tiny_frames ? 2 : 0;
  config.device_history_tokens = short_history ? 16 : 64;
  config.max_device_bytes = lanes * WfstDecoder(graph, config, cuda).lane_device_bytes();
}

TEST(WfstDecoderCUDA, EqualsTheCpuAndOpenFstOnRandomGraphs) {
  ASRDEC_SKIP_WITHOUT_CUDA();
  const std::uint64_t seed = testing::test_seed();
  SCOPED_TRACE(testing::seed_message(seed));
  std::mt19937_64 rng(seed);
  const Device cuda = Device::cuda(0);
  const GraphMode modes[] = {GraphMode::automatic, GraphMode::per_step, GraphMode::eager};
  std::int64_t utterances = 0, overflowed = 0, boosted = 0, rejected = 0;
  for (int i = 0; i < 150 || utterances < 500; ++i) {
    auto [random, graph] = accepted_graph(rng, rejected);
    const int kind = i % 4;
    WfstDecoderConfig config = random_search_config(rng, kind);
    config.use_final_probs = i % 4 != 3;
    config.acoustic_scale = i % 5 == 0 ? 0.5f + static_cast<float>(rng() % 100) / 50.0f : 1.0f;
    config.graph_mode = modes[(i / 3) % 3];
    const Batch batch = random_batch(rng, random.columns, 6, 12);
    std::vector<WordBoosts> boosts;
    if (i % 4 == 1) {
      for (std::size_t b = 0; b < batch.lengths.size(); ++b) {
        WordBoosts list;
        if (rng() % 2 == 0) list.emplace_back(1 + static_cast<std::int32_t>(rng() % random.words), 0.7f);
        boosts.push_back(list);
      }
    }
    const TwoCopies frames(batch, i % 3 == 2 ? DType::f16 : DType::f32, cuda);
    SCOPED_TRACE("case " + std::to_string(i) + ", " + config.to_string());
    WfstDecoder cpu(graph, config);
    std::vector<WfstResult> want;
    try {
      want = cpu.decode(frames.host(), batch.lens(), boosts);
    } catch (const InvalidArgument&) {
      boosts.clear();  // a boost that makes an ε-cycle free is rejected (tested on the CPU)
      want = cpu.decode(frames.host(), batch.lens(), boosts);
    }
    WfstDecoder decoder(graph, config, cuda);
    for (int call = 0; call < 2; ++call) {  // one decoder, twice
      const std::vector<WfstResult> got = decoder.decode(frames.on(cuda), batch.lens(), boosts);
      ASSERT_EQ(got.size(), want.size());
      for (std::size_t b = 0; b < got.size(); ++b) {
        expect_same_with_overflow(got[b], want[b], "utterance " + std::to_string(b) + ", call " + std::to_string(call));
      }
    }
    if (kind == 0 && boosts.empty() && frames.dtype == DType::f32) {
      for (std::size_t b = 0; b < want.size(); ++b) {
        const testing::OracleBest best =
            testing::openfst_best_path(random.fst, batch.utterances[b], batch.lengths[b], random.columns,
                                       config.acoustic_scale, config.use_final_probs);
        expect_matches_oracle(want[b], best, batch.lengths[b], "oracle, utterance " + std::to_string(b));
      }
    }
    if (::testing::Test::HasFailure()) return;
    for (const WfstResult& r : want) overflowed += r.overflow ? 1 : 0;
    boosted += boosts.empty() ? 0 : static_cast<std::int64_t>(batch.lengths.size());
    utterances += static_cast<std::int64_t>(batch.lengths.size());
  }
  EXPECT_GT(overflowed, 0) << "no search overflowed";
  std::printf("%lld utterances (%lld overflowed, %lld with boost lists)\n", static_cast<long long>(utterances),
              static_cast<long long>(overflowed), static_cast<long long>(boosted));
}

// The sample frames (f16, as shipped) through a small real TLG, with max_active and max_tokens_per_frame small
// enough that the histogram cut, beam tightening and the overflow selection all happen.
TEST(WfstDecoderCUDA, SampleTlgEqualsTheCpuUnderPressure) {
  ASRDEC_SKIP_WITHOUT_CUDA();
  const Device cuda = Device::cuda(0);
  const NpyArray logprobs = read_npy(sample_data_dir() + "/ctc/logprobs.npy");
  const NpyArray lengths = read_npy(sample_data_dir() + "/ctc/lengths.npy");
  const TensorView host(logprobs.data(), logprobs.dtype(),
                        {logprobs.shape()[0], logprobs.shape()[1], logprobs.shape()[2]});
  const TensorView lens(lengths.data(), lengths.dtype(), {lengths.shape()[0]});
  const DeviceBuffer<std::byte> on_device = testing::to_device(logprobs.data(), logprobs.bytes(), cuda);
  const TensorView device_view(on_device.data(), logprobs.dtype(),
                               {logprobs.shape()[0], logprobs.shape()[1], logprobs.shape()[2]}, cuda);
  CtcGraphOptions options;
  const WfstGraph graph = detail::wfst_graph_from_fst(sample_ctc_graph(options).tlg, "sample TLG");
  std::int64_t overflowed = 0;
  for (const auto& [max_active, max_tokens] : sample_pressure_limits()) {
    WfstDecoderConfig config;
    config.acoustic_scale = 2.0f;
    config.max_active = max_active;
    config.max_tokens_per_frame = max_tokens;
    for (std::int32_t column = 0; column < 8; ++column) config.word_start_columns.push_back(column);
    SCOPED_TRACE(config.to_string());
    const std::vector<WfstResult> want = WfstDecoder(graph, config).decode(host, lens);
    WfstDecoder decoder(graph, config, cuda);
    const std::vector<WfstResult> got = decoder.decode(device_view, lens);
    EXPECT_EQ(decoder.host_fallbacks(), 0) << "the default lanes could not hold the sample";
    EXPECT_LE(decoder.lane_device_bytes(), 4 << 20);
    // ilabel, olabel, next_state, weight and arc_source: 20 bytes an arc; and a lane at least.
    EXPECT_GE(decoder.device_bytes(), graph.num_arcs() * 20 + decoder.lane_device_bytes());
    ASSERT_EQ(got.size(), want.size());
    for (std::size_t b = 0; b < got.size(); ++b) {
      expect_same_with_overflow(got[b], want[b], "utterance " + std::to_string(b));
      overflowed += want[b].overflow ? 1 : 0;
    }
    if (::testing::Test::HasFailure()) return;
  }
  EXPECT_GT(overflowed, 0) << "max_tokens_per_frame never overflowed";
}

// Lanes too small for some frames or some utterances' live paths, and fewer lanes than rows: rows go through the
// lanes' queue, and those no lane can hold are decoded on the CPU, with the CPU's results.
TEST(WfstDecoderCUDA, SmallLanesQueueRowsAndFallBackExactly) {
  ASRDEC_SKIP_WITHOUT_CUDA();
  const std::uint64_t seed = testing::test_seed();
  SCOPED_TRACE(testing::seed_message(seed));
  std::mt19937_64 rng(seed);
  const Device cuda = Device::cuda(0);
  std::int64_t rejected = 0, fallbacks = 0, rows = 0;
  for (int i = 0; i < 80; ++i) {
    auto [random, graph] = accepted_graph(rng, rejected);
    WfstDecoderConfig config = random_search_config(rng, i % 4);
    use_small_lanes(config, graph, cuda, i % 3 == 0, i % 2 == 0, 1 + i % 3);
    const Batch batch = random_batch(rng, random.columns, 9, 40);
    const TwoCopies frames(batch, i % 2 == 0 ? DType::f16 : DType::f32, cuda);
    SCOPED_TRACE("case " + std::to_string(i) + ", " + config.to_string());
    const std::vector<WfstResult> want = WfstDecoder(graph, config).decode(frames.host(), batch.lens());
    WfstDecoder decoder(graph, config, cuda);
    const std::vector<WfstResult> got = decoder.decode(frames.on(cuda), batch.lens());
    ASSERT_EQ(got.size(), want.size());
    for (std::size_t b = 0; b < got.size(); ++b) expect_same_with_overflow(got[b], want[b], "row " + std::to_string(b));
    if (::testing::Test::HasFailure()) return;
    fallbacks += decoder.host_fallbacks();
    rows += static_cast<std::int64_t>(got.size());
  }
  EXPECT_GT(fallbacks, 0) << "no row fell back to the CPU";
  EXPECT_LT(fallbacks, rows) << "every row fell back to the CPU";
  std::printf("%lld rows, %lld decoded on the CPU\n", static_cast<long long>(rows), static_cast<long long>(fallbacks));
}

// N-best lists: every row decoded on a lane as a one-chunk stream, its channel read back and ranked on the host; the
// lists equal the CPU's entry by entry, with default lanes and with lanes so small that rows continue on the CPU.
TEST(WfstDecoderCUDA, NbestListsEqualTheCpu) {
  ASRDEC_SKIP_WITHOUT_CUDA();
  const std::uint64_t seed = testing::test_seed();
  SCOPED_TRACE(testing::seed_message(seed));
  std::mt19937_64 rng(seed);
  const Device cuda = Device::cuda(0);
  std::int64_t rejected = 0, lists = 0, several = 0, fallbacks = 0;
  for (int i = 0; i < 80; ++i) {
    auto [random, graph] = accepted_graph(rng, rejected);
    WfstDecoderConfig config = random_search_config(rng, i % 4);
    config.use_final_probs = i % 3 != 2;
    if (i % 2 == 1) {
      use_small_lanes(config, graph, cuda, i % 3 == 0, i % 4 == 1, 1 + i % 3);
    }
    const Batch batch = random_batch(rng, random.columns, 9, 30);
    std::vector<WordBoosts> boosts;
    if (i % 4 == 2) {
      for (std::size_t b = 0; b < batch.lengths.size(); ++b) boosts.push_back(maybe_boost(rng, random, graph, true));
    }
    const TwoCopies frames(batch, i % 2 == 0 ? DType::f16 : DType::f32, cuda);
    const auto n = static_cast<std::int64_t>(2 + rng() % 5);
    SCOPED_TRACE("case " + std::to_string(i) + ", n " + std::to_string(n) + ", " + config.to_string());
    const auto want = WfstDecoder(graph, config).decode_nbest(frames.host(), batch.lens(), n, boosts);
    WfstDecoder decoder(graph, config, cuda);
    std::int64_t bytes = 0;
    for (int call = 0; call < 2; ++call) {  // one decoder, twice: the second reuses the first's memory
      const auto got = decoder.decode_nbest(frames.on(cuda), batch.lens(), n, boosts);
      if (call == 0) bytes = decoder.device_bytes();
      EXPECT_EQ(decoder.device_bytes(), bytes) << "call " << call;
      EXPECT_GE(bytes, decoder.lane_device_bytes()) << "a lane at least";
      ASSERT_EQ(got.size(), want.size());
      for (std::size_t b = 0; b < got.size(); ++b) {
        ASSERT_EQ(got[b].size(), want[b].size()) << "row " << b;
        for (std::size_t k = 0; k < got[b].size(); ++k) {
          expect_same_with_overflow(got[b][k], want[b][k], "row " + std::to_string(b) + ", entry " + std::to_string(k));
        }
      }
      if (::testing::Test::HasFailure()) return;
    }
    fallbacks += decoder.host_fallbacks();
    for (const auto& list : want) several += list.size() > 1 ? 1 : 0;
    lists += static_cast<std::int64_t>(want.size());
  }
  EXPECT_GT(several, lists / 5) << "too few lists with several word sequences";
  EXPECT_GT(fallbacks, 0) << "no row continued on the CPU";
  std::printf("%lld lists, %lld with several word sequences, %lld rows continued on the CPU\n",
              static_cast<long long>(lists), static_cast<long long>(several), static_cast<long long>(fallbacks));
}

TEST(WfstDecoderCUDA, ChunkedStreamsEqualTheCpu) {
  ASRDEC_SKIP_WITHOUT_CUDA();
  const std::uint64_t seed = testing::test_seed();
  SCOPED_TRACE(testing::seed_message(seed));
  std::mt19937_64 rng(seed);
  const Device cuda = Device::cuda(0);
  std::int64_t rejected = 0, chunks = 0;
  for (int i = 0; i < 60; ++i) {
    auto [random, graph] = accepted_graph(rng, rejected);
    WfstDecoderConfig config = i % 2 == 0 ? exact_config() : WfstDecoderConfig{};
    if (i % 2 == 1) {
      config.beam = 0.5f + static_cast<float>(rng() % 40) / 10.0f;
      config.max_active = 1 + static_cast<std::int64_t>(rng() % 4);
    }
    const Batch batch = random_batch(rng, random.columns, 5, 14);
    SCOPED_TRACE("case " + std::to_string(i) + ", " + config.to_string());
    const std::vector<WfstResult> whole = WfstDecoder(graph, config).decode(batch.logprobs(), batch.lens());
    WfstDecoder decoder(graph, config, cuda);
    const std::vector<WfstResult> streamed = decode_in_random_chunks(decoder, batch, rng, cuda, chunks);
    for (std::size_t b = 0; b < whole.size(); ++b) {
      expect_same_with_overflow(streamed[b], whole[b], "stream " + std::to_string(b));
    }
    if (::testing::Test::HasFailure()) return;
  }
  std::printf("%lld chunk calls\n", static_cast<long long>(chunks));
}

// Streams whose channels stay on the device between calls, on lanes too small for some frames or live paths (those
// streams continue on the CPU from where their lane stopped), compared with the CPU decoder after every call: random
// subsets of the open streams per call, chunks of 0-5 frames, word boosts, cancelled streams, ids reused.
TEST(WfstDecoderCUDA, StreamsOnSmallLanesEqualTheCpuAfterEveryChunk) {
  ASRDEC_SKIP_WITHOUT_CUDA();
  const std::uint64_t seed = testing::test_seed();
  SCOPED_TRACE(testing::seed_message(seed));
  std::mt19937_64 rng(seed);
  const Device cuda = Device::cuda(0);
  std::int64_t rejected = 0, chunks = 0, fallbacks = 0, cancelled = 0;
  for (int i = 0; i < 60; ++i) {
    auto [random, graph] = accepted_graph(rng, rejected);
    WfstDecoderConfig config = random_search_config(rng, i % 4);
    config.use_final_probs = i % 3 != 2;
    config.max_open_utterances = 1 + static_cast<std::int64_t>(rng() % 6);
    use_small_lanes(config, graph, cuda, i % 3 == 0, i % 2 == 0, 1 + i % 3);
    SCOPED_TRACE("case " + std::to_string(i) + ", " + config.to_string());
    WfstDecoder cpu(graph, config);
    WfstDecoder gpu(graph, config, cuda);
    const Batch source = random_batch(rng, random.columns, 6, 30);
    const auto columns = static_cast<std::size_t>(random.columns);
    struct Open {
      std::int64_t id;
      std::size_t utterance;
      std::int32_t done;
    };
    std::vector<Open> open;
    std::int64_t next_id = 0;
    for (int call = 0; call < 12; ++call) {
      std::vector<ChunkRow> rows;
      std::vector<std::int32_t> lengths;
      std::vector<WordBoosts> boosts;
      std::vector<float> values;
      std::vector<std::size_t> in_call;  // into open; SIZE_MAX: a new stream
      for (std::size_t o = 0; o < open.size(); ++o) {
        if (rng() % 4 != 0) in_call.push_back(o);
      }
      while (static_cast<std::int64_t>(open.size() + rng() % 2) < config.max_open_utterances && rng() % 3 != 0) {
        open.push_back(Open{next_id++, static_cast<std::size_t>(rng() % source.lengths.size()), -1});
        in_call.push_back(open.size() - 1);
      }
      for (const std::size_t o : in_call) {
        Open& s = open[o];
        const bool first = s.done < 0;
        s.done = std::max(s.done, 0);
        const std::int32_t left = source.lengths[s.utterance] - s.done;
        const std::int32_t take = std::min<std::int32_t>(left, static_cast<std::int32_t>(rng() % 6));
        rows.push_back(ChunkRow{s.id, first, take == left && rng() % 2 == 0});
        boosts.push_back(first ? maybe_boost(rng, random, graph, true) : WordBoosts{});
        lengths.push_back(take);
      }
      if (rows.empty()) continue;
      const std::int32_t width = std::max(1, *std::max_element(lengths.begin(), lengths.end()));
      values.assign(rows.size() * static_cast<std::size_t>(width) * columns, 0.0f);
      for (std::size_t r = 0; r < rows.size(); ++r) {
        const Open& s = open[in_call[r]];
        std::copy_n(source.utterances[s.utterance].begin() + static_cast<std::ptrdiff_t>(s.done) * columns,
                    static_cast<std::size_t>(lengths[r]) * columns,
                    values.begin() + static_cast<std::ptrdiff_t>(r * static_cast<std::size_t>(width) * columns));
      }
      const auto n = static_cast<std::int64_t>(rows.size());
      const DeviceBuffer<std::byte> on_device = testing::to_device(values.data(), values.size() * 4, cuda);
      const TensorView host(values.data(), DType::f32, {n, width, random.columns});
      const TensorView device(on_device.data(), DType::f32, {n, width, random.columns}, cuda);
      const TensorView lens(lengths.data(), DType::i32, {n});
      const std::vector<WfstResult> want = cpu.decode_chunks(rows, host, lens, boosts);
      const std::vector<WfstResult> got = gpu.decode_chunks(rows, device, lens, boosts);
      ASSERT_EQ(got.size(), want.size());
      for (std::size_t r = 0; r < got.size(); ++r) {
        expect_same_with_overflow(got[r], want[r],
                                  "call " + std::to_string(call) + ", stream " + std::to_string(rows[r].utterance) +
                                      (rows[r].last ? ", last" : ""));
      }
      if (::testing::Test::HasFailure()) return;
      chunks += n;
      // Ended streams leave; now and then one is cancelled on both.
      std::vector<Open> still;
      for (std::size_t r = 0; r < rows.size(); ++r) open[in_call[r]].done += lengths[r];
      for (const Open& s : open) {
        const bool ended = std::any_of(rows.begin(), rows.end(),
                                       [&](const ChunkRow& row) { return row.utterance == s.id && row.last; });
        if (ended) continue;
        if (s.done >= 0 && rng() % 10 == 0) {
          EXPECT_TRUE(cpu.cancel(s.id));
          EXPECT_TRUE(gpu.cancel(s.id));
          cancelled += 1;
          continue;
        }
        still.push_back(s);
      }
      open = std::move(still);
      EXPECT_EQ(gpu.open_utterances(), cpu.open_utterances());
    }
    fallbacks += gpu.host_fallbacks();
  }
  EXPECT_GT(fallbacks, 0) << "no stream continued on the CPU";
  EXPECT_LT(fallbacks, chunks) << "every chunk was decoded on the CPU";
  std::printf("%lld chunks, %lld decoded on the CPU, %lld streams cancelled\n", static_cast<long long>(chunks),
              static_cast<long long>(fallbacks), static_cast<long long>(cancelled));
}

TEST(WfstDecoderCUDA, RejectsBadInput) {
  ASRDEC_SKIP_WITHOUT_CUDA();
  const Device cuda = Device::cuda(0);
  std::mt19937_64 rng(11);
  std::int64_t rejected = 0;
  auto [random, graph] = accepted_graph(rng, rejected);
  Batch batch;
  batch.columns = random.columns;
  batch.frames = 3;
  batch.lengths = {3, 2};
  for (int b = 0; b < 2; ++b) batch.utterances.push_back(random_frames(rng, 3, random.columns));
  for (const auto& u : batch.utterances) batch.values.insert(batch.values.end(), u.begin(), u.end());
  batch.values[static_cast<std::size_t>(1 * 3 * random.columns + 1 * random.columns + 1)] = std::nanf("");
  const DeviceBuffer<std::byte> d = testing::to_device(batch.values.data(), batch.values.size() * 4, cuda);
  const TensorView view(d.data(), DType::f32, {2, 3, random.columns}, cuda);
  WfstDecoder decoder(graph, WfstDecoderConfig{}, cuda);
  ASRDEC_EXPECT_THROW_MSG(decoder.decode(view, batch.lens()), InvalidArgument, "logprobs[1, 1, 1] is NaN");
  // decode() checks the values alongside decoding, so its lanes read the bad value before the call is rejected; they
  // are left empty all the same: a +inf is rejected too, and the next call with good values equals the CPU.
  std::vector<float> bad = batch.values;
  bad[1] = std::numeric_limits<float>::infinity();
  const DeviceBuffer<std::byte> with_inf = testing::to_device(bad.data(), bad.size() * 4, cuda);
  ASRDEC_EXPECT_THROW_MSG(
      decoder.decode(TensorView(with_inf.data(), DType::f32, {2, 3, random.columns}, cuda), batch.lens()),
      InvalidArgument, "logprobs[0, 0, 1] is +inf");
  std::vector<float> good = batch.values;
  good[static_cast<std::size_t>(1 * 3 * random.columns + 1 * random.columns + 1)] = -1.5f;
  const DeviceBuffer<std::byte> good_values = testing::to_device(good.data(), good.size() * 4, cuda);
  const std::vector<WfstResult> after =
      decoder.decode(TensorView(good_values.data(), DType::f32, {2, 3, random.columns}, cuda), batch.lens());
  const std::vector<WfstResult> want =
      WfstDecoder(graph, WfstDecoderConfig{}, Device::cpu())
          .decode(TensorView(good.data(), DType::f32, {2, 3, random.columns}), batch.lens());
  ASSERT_EQ(after.size(), want.size());
  for (std::size_t b = 0; b < want.size(); ++b)
    expect_same(after[b], want[b], "after a rejected call, row " + std::to_string(b));
  // Host logprobs for a CUDA decoder.
  ASRDEC_EXPECT_THROW_MSG(decoder.decode(batch.logprobs(), batch.lens()), InvalidArgument, "logprobs");
  // A NaN past the utterance's length is never read.
  batch.lengths[1] = 1;
  EXPECT_EQ(decoder.decode(view, batch.lens()).size(), 2u);
  // A rejected chunk call leaves the streams as they were: the first call starts both streams, the second is
  // rejected, the third ends them as if the second had not happened.
  const std::vector<ChunkRow> first = {{1, true, false}, {2, true, false}};
  const std::vector<ChunkRow> next = {{1, false, true}, {2, false, true}};
  std::vector<std::int32_t> one = {1, 1};
  const TensorView one_lens(one.data(), DType::i32, {2});
  decoder.decode_chunks(first, view, one_lens);
  batch.lengths = {3, 3};
  ASRDEC_EXPECT_THROW_MSG(decoder.decode_chunks(next, view, batch.lens()), InvalidArgument, "is NaN");
  EXPECT_EQ(decoder.open_utterances(), 2);
  const std::vector<WfstResult> ended = decoder.decode_chunks(next, view, one_lens);
  ASSERT_EQ(ended.size(), 2u);
  EXPECT_EQ(ended[0].frames, 2);
  EXPECT_EQ(decoder.open_utterances(), 0);
  // A restart of an open stream that is rejected after its new channel was built (without the value check, the call
  // finds the host frames it was given as late as the launch) leaves the stream as it was: its boosts and frames go
  // on as if the restart had not been asked for.
  WfstDecoderConfig unchecked;
  unchecked.check_values = false;
  WfstDecoder restarted(graph, unchecked, cuda), control(graph, unchecked, Device::cpu());
  const std::vector<WordBoosts> boosted = {maybe_boost(rng, random, graph, true)};
  const TensorView row0(d.data(), DType::f32, {1, 3, random.columns}, cuda);
  const TensorView row0_host(good.data(), DType::f32, {1, 3, random.columns});
  const std::vector<std::int32_t> two = {2};
  const TensorView two_lens(two.data(), DType::i32, {1});
  restarted.decode_chunks({{7, true, false}}, row0, two_lens, boosted);
  control.decode_chunks({{7, true, false}}, row0_host, two_lens, boosted);
  ASRDEC_EXPECT_THROW_MSG(
      restarted.decode_chunks({{7, true, false}}, TensorView(good.data(), DType::f32, {1, 3, random.columns}, cuda),
                              two_lens),
      InvalidArgument, "logprobs");
  const std::vector<WfstResult> resumed = restarted.decode_chunks({{7, false, true}}, row0, two_lens);
  const std::vector<WfstResult> expected = control.decode_chunks({{7, false, true}}, row0_host, two_lens);
  ASSERT_EQ(resumed.size(), 1u);
  expect_same(resumed[0], expected[0], "a stream after its rejected restart");
  EXPECT_EQ(resumed[0].frames, 4);
}

}  // namespace
}  // namespace asrdec
