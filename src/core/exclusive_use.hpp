#pragma once
// Internal: the entry check of every call on a stateful object (decoders, transducer streams). A decoder has one
// owner at a time (DESIGN §6): two threads calling one decoder used to mix their state and return wrong results
// with nothing detecting it, and a moved-from decoder or stream dereferenced null. Each call now takes the object's
// owner slot for its duration: a call from a second thread while another runs, and any use of a moved-from object,
// is an InvalidArgument. Nested calls from the owning thread (decode() calling decode_async()) pass. The cost is one
// atomic compare-and-swap per call.

#include <atomic>
#include <memory>
#include <thread>

#include "asrdec/core/error.hpp"

namespace asrdec::detail {

/** The thread running a call on the object, or none. */
struct OwnerSlot {
  std::atomic<std::thread::id> owner{};
};

/** Holds `slot` for the duration of one call (see above); `call` names the call in the error. */
class ExclusiveCall {
 public:
  ExclusiveCall(OwnerSlot& slot, const char* call) {
    std::thread::id expected{};
    const std::thread::id me = std::this_thread::get_id();
    if (slot.owner.compare_exchange_strong(expected, me, std::memory_order_acquire)) {
      slot_ = &slot;
      return;
    }
    if (expected != me) {
      throw InvalidArgument(concat(call, ": another thread is using this object (a decoder and its streams have ",
                                   "one owner at a time: give each thread its own decoder)"));
    }
  }
  ~ExclusiveCall() {
    if (slot_ != nullptr) slot_->owner.store(std::thread::id{}, std::memory_order_release);
  }
  ExclusiveCall(const ExclusiveCall&) = delete;
  ExclusiveCall& operator=(const ExclusiveCall&) = delete;

 private:
  OwnerSlot* slot_ = nullptr;  // null for a nested call of the owning thread
};

/** *impl, or InvalidArgument naming `type` when the object was moved from. */
template <class Impl>
Impl& live(const std::unique_ptr<Impl>& impl, const char* type) {
  if (impl == nullptr) throw InvalidArgument(concat(type, ": used after it was moved from"));
  return *impl;
}

/** A fresh id for an object that streams or results must be matched against (never 0). */
inline std::uint64_t next_object_id() {
  static std::atomic<std::uint64_t> next{1};
  return next.fetch_add(1, std::memory_order_relaxed);
}

}  // namespace asrdec::detail
