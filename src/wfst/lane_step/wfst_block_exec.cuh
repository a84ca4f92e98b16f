#pragma once
// Internal: the lane executor of wfst_lane_step.hpp on CUDA — one thread block is one lane: a phase's items are spread
// over the block's threads, barriers are __syncthreads, atomics are CUDA's (on the lane's global or shared memory),
// scans are cub::BlockScan over chunks of the block's width.

#include <cstdint>
#include <cub/block/block_scan.cuh>

namespace asrdec::detail {

template <int kThreads>
class WfstBlockExec {
 public:
  union Storage {
    typename cub::BlockScan<int, kThreads>::TempStorage scan32;
    typename cub::BlockScan<long long, kThreads>::TempStorage scan64;
  };

  __device__ explicit WfstBlockExec(Storage& storage) : storage_(storage) {}

  template <class F>
  __device__ void for_each(std::int64_t n, F&& f) {
    for (std::int64_t i = threadIdx.x; i < n; i += kThreads) f(i);
  }
  /** apply(i, load(i)) for i < n: a thread loads kBatch items before applying any, so their memory reads (load only
   *  reads) overlap instead of waiting one after another. */
  template <class Load, class Apply>
  __device__ void for_each_batch(std::int64_t n, Load&& load, Apply&& apply) {
    using Value = decltype(load(std::int64_t{0}));
    for (std::int64_t base = threadIdx.x; base < n; base += kBatch * kThreads) {
      Value values[kBatch];
#pragma unroll
      for (int j = 0; j < kBatch; ++j) {
        if (base + j * kThreads < n) values[j] = load(base + j * kThreads);
      }
#pragma unroll
      for (int j = 0; j < kBatch; ++j) {
        if (base + j * kThreads < n) apply(base + j * kThreads, values[j]);
      }
    }
  }
  __device__ void barrier() { __syncthreads(); }
  template <class F>
  __device__ void single(F&& f) {
    if (threadIdx.x == 0) f();
  }
  template <class T>
  __device__ T load(const T* p) {
    return *const_cast<const volatile T*>(p);
  }
  __device__ std::int32_t atomic_cas(std::int32_t* p, std::int32_t expected, std::int32_t desired) {
    return atomicCAS(p, expected, desired);
  }
  __device__ std::int32_t atomic_add(std::int32_t* p, std::int32_t v) { return atomicAdd(p, v); }
  __device__ std::int64_t atomic_add(std::int64_t* p, std::int64_t v) {
    return static_cast<std::int64_t>(
        atomicAdd(reinterpret_cast<unsigned long long*>(p), static_cast<unsigned long long>(v)));
  }
  __device__ std::int32_t atomic_exch(std::int32_t* p, std::int32_t v) { return atomicExch(p, v); }
  __device__ std::int32_t atomic_or(std::int32_t* p, std::int32_t v) { return atomicOr(p, v); }
  __device__ std::uint64_t atomic_min(std::uint64_t* p, std::uint64_t v) {
    return atomicMin(reinterpret_cast<unsigned long long*>(p), static_cast<unsigned long long>(v));
  }
  __device__ std::uint32_t atomic_min(std::uint32_t* p, std::uint32_t v) { return atomicMin(p, v); }
  __device__ std::uint32_t atomic_max(std::uint32_t* p, std::uint32_t v) { return atomicMax(p, v); }

  /** Exclusive prefix sums of values[0, n) in place; returns the total (the same in every thread). */
  __device__ std::int32_t exclusive_scan(std::int32_t* values, std::int64_t n) {
    return scan<int, typename cub::BlockScan<int, kThreads>>(values, n, storage_.scan32);
  }
  __device__ std::int64_t exclusive_scan(std::int64_t* values, std::int64_t n) {
    return static_cast<std::int64_t>(scan<long long, typename cub::BlockScan<long long, kThreads>>(
        reinterpret_cast<long long*>(values), n, storage_.scan64));
  }

 private:
  // kItems consecutive values a thread, so that one pass covers kThreads × kItems values (a frame's tokens, mostly).
  template <class T, class Scan, class TempStorage>
  __device__ T scan(T* values, std::int64_t n, TempStorage& temp) {
    T carry = 0;
    for (std::int64_t base = 0; base < n; base += kThreads * kItems) {
      const std::int64_t first = base + static_cast<std::int64_t>(threadIdx.x) * kItems;
      T items[kItems];
      for (int j = 0; j < kItems; ++j) items[j] = first + j < n ? values[first + j] : T(0);
      T aggregate;
      Scan(temp).ExclusiveSum(items, items, aggregate);
      for (int j = 0; j < kItems; ++j) {
        if (first + j < n) values[first + j] = items[j] + carry;
      }
      carry += aggregate;
      __syncthreads();  // the temporary storage is used again
    }
    return carry;
  }

  static constexpr int kItems = 4;
  static constexpr int kBatch = 4;

  Storage& storage_;
};

}  // namespace asrdec::detail
