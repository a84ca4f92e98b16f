#pragma once
// Internal: the lane executor of wfst_lane_step.hpp on CUDA — one thread block is one lane: a phase's items are spread
// over the block's threads, barriers are __syncthreads, atomics are CUDA's (on the lane's global or shared memory),
// scans are one warp's shuffles for few values, else cub::BlockScan over chunks of the block's width.

#include <cstdint>
#include <cub/block/block_scan.cuh>
#include <type_traits>

namespace asrdec::detail {

template <int kThreads>
class WfstBlockExec {
 public:
  struct Storage {
    union {
      typename cub::BlockScan<int, kThreads>::TempStorage scan32;
      typename cub::BlockScan<long long, kThreads>::TempStorage scan64;
    } block;
    long long total[2];  ///< a one-warp scan's total, by the scan's parity
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

  /** Exclusive prefix sums of value_of(i) for i < n (int32 or int64, read only before any sum is written, so `sums`
   *  may be the array value_of reads), written into sums[0, n); returns the total (the same in every thread). Ends
   *  with a barrier: the sums and the total are every thread's. */
  template <class T, class ValueOf>
  __device__ T exclusive_scan_of(T* sums, std::int64_t n, ValueOf&& value_of) {
    static_assert(sizeof(T) == 4 || sizeof(T) == 8, "int32 or int64 sums");
    if (n <= kWarpItems * kWarp) return warp_scan(sums, n, value_of);
    using Wide = std::conditional_t<sizeof(T) == 4, int, long long>;
    if constexpr (sizeof(T) == 4) {
      return static_cast<T>(block_scan<Wide, typename cub::BlockScan<int, kThreads>>(reinterpret_cast<Wide*>(sums), n,
                                                                                     value_of, storage_.block.scan32));
    } else {
      return static_cast<T>(block_scan<Wide, typename cub::BlockScan<long long, kThreads>>(
          reinterpret_cast<Wide*>(sums), n, value_of, storage_.block.scan64));
    }
  }

 private:
  // Few values (a frame's tokens, mostly): the first warp scans them, up to kWarpItems consecutive values a lane, and
  // the block waits at one barrier instead of a block scan's three. The total alternates between two cells, so a
  // scan never overwrites the one a slow thread of the previous scan has yet to read (every scan ends with a barrier).
  template <class T, class ValueOf>
  __device__ T warp_scan(T* sums, std::int64_t n, ValueOf& value_of) {
    const int cell = parity_;
    parity_ ^= 1;
    if (threadIdx.x < kWarp) {
      const int lane = static_cast<int>(threadIdx.x);
      const int per_lane = static_cast<int>((n + kWarp - 1) / kWarp);
      const std::int64_t first = static_cast<std::int64_t>(lane) * per_lane;
      T items[kWarpItems];
      T own = 0;
#pragma unroll
      for (int j = 0; j < kWarpItems; ++j) {
        items[j] = j < per_lane && first + j < n ? static_cast<T>(value_of(first + j)) : T(0);
        own += items[j];
      }
      T before = own;  // inclusive over the lanes, then exclusive
#pragma unroll
      for (int offset = 1; offset < kWarp; offset *= 2) {
        const T other = __shfl_up_sync(0xffffffffu, before, offset);
        if (lane >= offset) before += other;
      }
      const T total = __shfl_sync(0xffffffffu, before, kWarp - 1);
      before -= own;
#pragma unroll
      for (int j = 0; j < kWarpItems; ++j) {
        if (j < per_lane && first + j < n) sums[first + j] = before;
        before += items[j];
      }
      if (lane == 0) storage_.total[cell] = static_cast<long long>(total);
    }
    __syncthreads();
    return static_cast<T>(storage_.total[cell]);
  }

  // kItems consecutive values a thread, so that one pass covers kThreads × kItems values.
  template <class T, class Scan, class TempStorage, class ValueOf>
  __device__ T block_scan(T* sums, std::int64_t n, ValueOf& value_of, TempStorage& temp) {
    T carry = 0;
    for (std::int64_t base = 0; base < n; base += kThreads * kItems) {
      const std::int64_t first = base + static_cast<std::int64_t>(threadIdx.x) * kItems;
      T items[kItems];
      for (int j = 0; j < kItems; ++j) items[j] = first + j < n ? static_cast<T>(value_of(first + j)) : T(0);
      T aggregate;
      Scan(temp).ExclusiveSum(items, items, aggregate);
      for (int j = 0; j < kItems; ++j) {
        if (first + j < n) sums[first + j] = items[j] + carry;
      }
      carry += aggregate;
      __syncthreads();  // the temporary storage is used again; the sums are every thread's
    }
    return carry;
  }

  static constexpr int kWarp = 32;
  // 4: up to 128 values (the sample's frames hold fewer); 8 made the chunks kernel spill at its 128 registers.
  static constexpr int kWarpItems = 4;
  static constexpr int kItems = 4;
  static constexpr int kBatch = 4;

  Storage& storage_;
  int parity_ = 0;  ///< the one-warp scans' total cell (every thread calls every scan, so all agree)
};

}  // namespace asrdec::detail
