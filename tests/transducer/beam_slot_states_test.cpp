// BeamSlotStates, the CPU beam searches' per-slot predictor and fused states: a reservation that cannot be
// allocated throws and leaves the slots as they were, so the next call that fits grows them.

#include "transducer/beam/beam_slot_states.hpp"

#include <gtest/gtest.h>

#include <random>

#include "asrdec/asrdec.hpp"
#include "support/test_support.hpp"
#include "transducer/random_transducer.hpp"

namespace asrdec {
namespace {

// More slots than size_t counts the predictor states of: the buffer refuses them before asking for memory, so the
// failure is the same on every machine and under the sanitizers. (The sizes used to grow first: the next call that
// fitted them found no reason to reallocate and wrote its slots past the buffers.)
TEST(BeamSlotStates, ReservationThatCannotBeAllocatedLeavesTheSlotsAsTheyWere) {
  const std::uint64_t seed = testing::test_seed();
  SCOPED_TRACE(testing::seed_message(seed));
  std::mt19937_64 rng(seed);
  const testing::RandomTransducerSpec spec = testing::random_spec(rng);
  const TransducerModel model = testing::make_random_transducer(spec, rng).build(Device::cpu());
  TransducerBeamConfig config;
  detail::BeamSlotStates states(model, config);
  states.reserve(4);
  const std::int64_t S = model.predictor().state_size();
  EXPECT_THROW(states.reserve((std::int64_t{1} << 62) / S + 1), Error);
  EXPECT_EQ(states.max_slots(), 4);
  states.start(2, 4, {0, 0});  // 8 slots: room for them now
  EXPECT_EQ(states.max_slots(), 8);
}

}  // namespace
}  // namespace asrdec
