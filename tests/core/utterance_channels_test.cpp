// The channel bookkeeping every decoder's decode_chunks() shares (src/core/utterance_channels.hpp), against a plain
// model of open utterances: random calls of first, middle and last chunks, cancellations and bad calls.

#include "core/utterance_channels.hpp"

#include <limits>
#include <map>
#include <set>

#include "support/test_support.hpp"

namespace asrdec {
namespace {

using detail::ChunkPlan;
using detail::UtteranceChannels;

TEST(UtteranceChannels, RejectsBadRowsAndChangesNothing) {
  UtteranceChannels channels(2, "TestDecoder");
  ASRDEC_EXPECT_THROW_MSG(channels.plan({ChunkRow{7, false, false}}, {3}), InvalidArgument,
                          "TestDecoder::decode_chunks: utterance 7 is not open: its first chunk needs first = true");
  ASRDEC_EXPECT_THROW_MSG(channels.plan({ChunkRow{7, true, false}, ChunkRow{7, false, false}}, {3, 3}), InvalidArgument,
                          "utterance 7 appears in more than one row");
  ASRDEC_EXPECT_THROW_MSG(channels.plan({ChunkRow{1, true}, ChunkRow{2, true}, ChunkRow{3, true}}, {1, 1, 1}),
                          OutOfMemory, "utterance 3 cannot start: 0 utterances are open and 2 more start in this call");
  EXPECT_EQ(channels.open(), 0);
  const std::vector<ChunkRow> rows = {ChunkRow{1, true}, ChunkRow{2, true}};
  const std::vector<std::int32_t> lengths = {5, 0};
  const ChunkPlan plan = channels.plan(rows, lengths);
  channels.commit(rows, plan, lengths);
  EXPECT_EQ(channels.open(), 2);
  ASRDEC_EXPECT_THROW_MSG(channels.plan({ChunkRow{3, true}}, {1}), OutOfMemory,
                          "(BatchLimits::max_open_utterances = 2)");
  ASRDEC_EXPECT_THROW_MSG(channels.plan({ChunkRow{1}}, {std::numeric_limits<std::int32_t>::max()}), InvalidArgument,
                          "utterance 1 would pass 2^31 - 1 frames (5 decoded");
  // A first chunk of an open utterance starts it again in its own channel.
  const ChunkPlan again = channels.plan({ChunkRow{1, true}}, {1});
  EXPECT_EQ(again.slot[0], plan.slot[0]);
  EXPECT_EQ(again.offset[0], 0);
  EXPECT_EQ(channels.cancel(2), plan.slot[1]);
  EXPECT_EQ(channels.cancel(2), -1);
  EXPECT_EQ(channels.slot(2), -1);
  EXPECT_EQ(channels.plan({ChunkRow{3, true}}, {1}).slot[0], plan.slot[1]);  // the freed channel
}

TEST(UtteranceChannels, RandomCallsKeepEveryOpenUtteranceInItsOwnChannel) {
  const std::uint64_t seed = testing::test_seed();
  SCOPED_TRACE(testing::seed_message(seed));
  std::mt19937_64 rng(seed);
  const std::int64_t capacity = 1 + static_cast<std::int64_t>(rng() % 8);
  UtteranceChannels channels(capacity, "TestDecoder");
  std::map<std::int64_t, std::pair<std::int32_t, std::int64_t>> model;  // id -> (slot, frames)
  for (int call = 0; call < 400; ++call) {
    std::vector<ChunkRow> rows;
    std::vector<std::int32_t> lengths;
    std::set<std::int64_t> used;
    const int count = static_cast<int>(rng() % 5);
    for (int r = 0; r < count; ++r) {
      ChunkRow row;
      row.utterance = static_cast<std::int64_t>(rng() % 12);
      row.first = rng() % 3 == 0;
      row.last = rng() % 4 == 0;
      rows.push_back(row);
      lengths.push_back(static_cast<std::int32_t>(rng() % 6));
    }
    // What the model says the call must do.
    std::string expected_error;
    std::int64_t starting = 0;
    for (const ChunkRow& row : rows) {
      if (!used.insert(row.utterance).second) {
        expected_error = "appears in more than one row";
        break;
      }
      const bool open = model.count(row.utterance) == 1;
      if (!row.first && !open) {
        expected_error = "is not open";
        break;
      }
      if (!open && static_cast<std::int64_t>(model.size()) + ++starting > capacity) {
        expected_error = "cannot start";
        break;
      }
    }
    if (!expected_error.empty()) {
      try {
        channels.plan(rows, lengths);
        ADD_FAILURE() << "call " << call << ": expected an error containing '" << expected_error << "'";
      } catch (const Error& e) {
        EXPECT_NE(std::string(e.what()).find(expected_error), std::string::npos) << e.what();
      }
      EXPECT_EQ(channels.open(), static_cast<std::int64_t>(model.size()));
      continue;
    }
    const ChunkPlan plan = channels.plan(rows, lengths);
    std::set<std::int32_t> slots;
    for (const auto& [id, open] : model) slots.insert(open.first);
    for (std::size_t b = 0; b < rows.size(); ++b) {
      const auto it = model.find(rows[b].utterance);
      ASSERT_GE(plan.slot[b], 0);
      ASSERT_LT(plan.slot[b], capacity);
      EXPECT_EQ(plan.fresh[b] != 0, rows[b].first);
      if (it != model.end()) {
        EXPECT_EQ(plan.slot[b], it->second.first) << "an open utterance keeps its channel";
        EXPECT_EQ(plan.offset[b], rows[b].first ? 0 : it->second.second);
      } else {
        EXPECT_TRUE(slots.insert(plan.slot[b]).second) << "a new utterance takes a channel nobody holds";
        EXPECT_EQ(plan.offset[b], 0);
      }
    }
    channels.commit(rows, plan, lengths);
    for (std::size_t b = 0; b < rows.size(); ++b) {
      model[rows[b].utterance] = {plan.slot[b], plan.offset[b] + lengths[b]};
    }
    for (const ChunkRow& row : rows) {
      if (row.last) model.erase(row.utterance);
    }
    if (rng() % 5 == 0) {
      const auto id = static_cast<std::int64_t>(rng() % 12);
      const auto held = model.find(id);
      EXPECT_EQ(channels.cancel(id), held == model.end() ? -1 : held->second.first);
      if (held != model.end()) model.erase(held);
    }
    ASSERT_EQ(channels.open(), static_cast<std::int64_t>(model.size()));
    for (const auto& [id, open] : model) EXPECT_EQ(channels.slot(id), open.first);
  }
}

}  // namespace
}  // namespace asrdec
