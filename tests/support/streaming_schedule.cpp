#include "support/streaming_schedule.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <set>

namespace asrdec::testing {

StreamingSchedule random_streaming_schedule(std::mt19937_64& rng, const std::vector<std::int32_t>& lengths,
                                            int max_open, int max_lanes, double drop_rate) {
  StreamingSchedule schedule;
  const int count = static_cast<int>(lengths.size());
  schedule.finished.assign(lengths.size(), false);
  std::uniform_real_distribution<double> coin(0.0, 1.0);
  // A small pool of ids (some negative, some large), so that ids are reused once their utterance is done.
  std::vector<std::int64_t> pool;
  for (int i = 0; i < std::max(2 * max_open, 4); ++i) {
    pool.push_back(static_cast<std::int64_t>(rng() >> 1) * (i % 2 == 0 ? 1 : -1) / (i % 3 == 0 ? 1 : 1000003));
  }
  struct Open {
    int utterance;
    std::int64_t id;
    std::int32_t next = 0;  // next frame
    bool started = false;   // has had its first chunk
    bool doomed = false;    // will be dropped before its end
  };
  std::vector<Open> open;
  std::set<std::int64_t> held;  // the ids the decoder holds open
  int next_utterance = 0;
  std::vector<std::int64_t> cancel_next;
  while (next_utterance < count || !open.empty()) {
    StreamingCall call;
    call.cancel = std::move(cancel_next);
    cancel_next.clear();
    for (std::int64_t id : call.cancel) held.erase(id);
    // Arrivals: up to the open limit, each with a free id (or, rarely, the id of an open utterance, which the new
    // first chunk abandons).
    while (next_utterance < count && static_cast<int>(open.size()) < max_open && coin(rng) < 0.6) {
      std::set<std::int64_t> busy;
      for (const Open& o : open) busy.insert(o.id);
      std::vector<std::int64_t> free_ids;
      for (std::int64_t id : pool) {
        if (busy.count(id) == 0) free_ids.push_back(id);
      }
      Open fresh;
      fresh.utterance = next_utterance++;
      fresh.doomed = coin(rng) < drop_rate;
      fresh.id = free_ids[rng() % free_ids.size()];
      for (std::size_t i = 0; i < open.size(); ++i) {
        if (open[i].doomed && open[i].started && coin(rng) < 0.3) {
          fresh.id = open[i].id;  // the new utterance's first chunk abandons this one
          open.erase(open.begin() + static_cast<std::ptrdiff_t>(i));
          break;
        }
      }
      open.push_back(fresh);
    }
    // Rows: a random subset of the open utterances, in random order, at most max_lanes.
    std::vector<int> order(open.size());
    for (std::size_t i = 0; i < order.size(); ++i) order[i] = static_cast<int>(i);
    std::shuffle(order.begin(), order.end(), rng);
    std::vector<int> done;
    std::set<std::int64_t> ids_in_call;
    for (int i : order) {
      if (static_cast<int>(call.rows.size()) >= max_lanes) break;
      Open& o = open[static_cast<std::size_t>(i)];
      if (o.started && coin(rng) < 0.25) continue;  // not ready this time
      if (!ids_in_call.insert(o.id).second) continue;
      const std::int32_t length = lengths[static_cast<std::size_t>(o.utterance)];
      const std::int32_t left = length - o.next;
      std::int32_t take = 0;
      const double r = coin(rng);
      if (left > 0) {
        take = r < 0.15 ? 0 : r < 0.3 ? left : 1 + static_cast<std::int32_t>(rng() % static_cast<std::uint64_t>(left));
      }
      ChunkRow row;
      row.utterance = o.id;
      row.first = !o.started;
      row.last = !o.doomed && o.next + take == length && (take > 0 || coin(rng) < 0.7 || length == 0);
      row.phrase_list = 0;
      call.rows.push_back(row);
      held.insert(row.utterance);
      call.utterance.push_back(o.utterance);
      call.start.push_back(o.next);
      call.length.push_back(take);
      o.started = true;
      o.next += take;
      if (row.last) {
        schedule.finished[static_cast<std::size_t>(o.utterance)] = true;
        done.push_back(i);
      } else if (o.doomed && coin(rng) < 0.3) {
        cancel_next.push_back(o.id);  // cancelled before the next call
        done.push_back(i);
      }
    }
    schedule.max_open = std::max(schedule.max_open, static_cast<std::int64_t>(held.size()));
    for (const ChunkRow& row : call.rows) {
      if (row.last) held.erase(row.utterance);
    }
    schedule.max_rows = std::max<std::int64_t>(schedule.max_rows, static_cast<std::int64_t>(call.rows.size()));
    std::sort(done.rbegin(), done.rend());
    for (int i : done) open.erase(open.begin() + i);
    if (!call.rows.empty() || !call.cancel.empty()) schedule.calls.push_back(std::move(call));
  }
  if (!cancel_next.empty()) {
    StreamingCall last;
    last.cancel = std::move(cancel_next);
    schedule.calls.push_back(std::move(last));
  }
  return schedule;
}

std::vector<std::byte> gather_chunks(const void* whole, std::int64_t T, std::int64_t X, std::size_t element,
                                     const StreamingCall& call, std::int64_t& frames) {
  frames = 1;
  for (std::int32_t length : call.length) frames = std::max<std::int64_t>(frames, length);
  const auto row_bytes = static_cast<std::size_t>(frames * X) * element;
  const auto frame_bytes = static_cast<std::size_t>(X) * element;
  // Never-read frames hold NaN (all bits set is a NaN in float32, float16 and bfloat16): a decoder that read past a
  // chunk's length would meet it.
  std::vector<std::byte> out(call.rows.size() * row_bytes, std::byte{0xff});
  const auto* source = static_cast<const std::byte*>(whole);
  for (std::size_t r = 0; r < call.rows.size(); ++r) {
    if (call.length[r] == 0) continue;  // (an empty batch has no data to point into)
    const std::byte* from = source + (static_cast<std::size_t>(call.utterance[r]) * static_cast<std::size_t>(T) +
                                      static_cast<std::size_t>(call.start[r])) *
                                         frame_bytes;
    std::memcpy(out.data() + r * row_bytes, from, static_cast<std::size_t>(call.length[r]) * frame_bytes);
  }
  return out;
}

namespace {

template <class T>
bool starts_with(const std::vector<T>& whole, const std::vector<T>& part) {
  return part.size() <= whole.size() && std::equal(part.begin(), part.end(), whole.begin());
}

bool same_bits(float a, float b) { return std::memcmp(&a, &b, sizeof a) == 0; }

}  // namespace

void expect_streamed_equals_whole(const Hypothesis& streamed, const Hypothesis& whole) {
  EXPECT_TRUE(streamed.is_final);
  EXPECT_EQ(streamed.tokens, whole.tokens);
  EXPECT_EQ(streamed.timestamps, whole.timestamps);
  EXPECT_EQ(streamed.durations, whole.durations);
  EXPECT_EQ(streamed.token_scores, whole.token_scores);
  EXPECT_EQ(streamed.token_confidences, whole.token_confidences);
  EXPECT_PRED2(same_bits, streamed.am_score, whole.am_score);
  EXPECT_PRED2(same_bits, streamed.lm_score, whole.lm_score);
  EXPECT_PRED2(same_bits, streamed.boost_score, whole.boost_score);
  EXPECT_PRED2(same_bits, streamed.score, whole.score);
  EXPECT_PRED2(same_bits, streamed.ranking_score, whole.ranking_score);
}

void expect_prefix_of_whole(const Hypothesis& partial, const Hypothesis& whole) {
  EXPECT_FALSE(partial.is_final);
  EXPECT_TRUE(starts_with(whole.tokens, partial.tokens));
  EXPECT_TRUE(starts_with(whole.timestamps, partial.timestamps));
  EXPECT_TRUE(starts_with(whole.durations, partial.durations));
  EXPECT_TRUE(starts_with(whole.token_scores, partial.token_scores));
}

}  // namespace asrdec::testing
