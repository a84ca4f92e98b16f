// The CUDA frame step of WFST beam search: the same four steps and rules as the CPU executor
// (src/wfst/wfst_channel.cpp), computed by one block per lane.
//
// Exactness. Every state's best way in is the least (cost, ε-depth, arc id) over the ways below the cutoff, a
// fixpoint that does not depend on the order ways are tried (except in a float-rounding corner case, see the
// tie-breaks below); the costs use the shared rounding of wfst/wfst_step.hpp. The block finds it in three stages:
// atomicMin on (ordered cost, depth) keys (emitting arcs, then the ε-closure in frontier rounds), then the arc ids
// among the ways that reach each key exactly, then the back-pointers. This file is compiled without FMA contraction
// (see src/CMakeLists.txt) so the histogram bins match the CPU's too.

#include "asrdec/detail/float16.hpp"
#include "core/bad_value.hpp"
#include "core/ctc_input.hpp"
#include "core/cuda/check.hpp"
#include "wfst/wfst_kernels.hpp"

namespace asrdec::detail {
namespace {

constexpr int kFrameThreads = 512;
constexpr int kWarps = kFrameThreads / 32;
constexpr int kGatherThreads = 256;
constexpr unsigned kFullWarp = 0xffffffffu;
constexpr unsigned long long kNoKey = ~0ull;
constexpr std::int32_t kClaimed = -2;
constexpr unsigned long long kClosurePopsPerToken = 1024;
constexpr unsigned long long kClosurePopsExtra = 1ull << 20;
constexpr float kInf = __builtin_huge_valf();

// Bits of WfstLanes::mark.
constexpr std::int32_t kCandidate = 1;  // below the frame's active cut
constexpr std::int32_t kActive = 2;     // expanded on the next frame
constexpr std::int32_t kKept = 4;       // stored for the host
constexpr std::int32_t kLocal = 8;      // its way in is an ε-arc (the predecessor is in this frame)

__device__ __forceinline__ unsigned long long pack_key(float cost, std::uint32_t depth) {
  return (static_cast<unsigned long long>(wfst_ordered_cost(cost)) << 32) | depth;
}
__device__ __forceinline__ float key_cost(unsigned long long key) {
  return wfst_cost_of_ordered(static_cast<std::uint32_t>(key >> 32));
}
__device__ __forceinline__ std::uint32_t key_depth(unsigned long long key) { return static_cast<std::uint32_t>(key); }
__device__ __forceinline__ unsigned long long load_key(const unsigned long long* key) {
  return *reinterpret_cast<const volatile unsigned long long*>(key);
}

// One lane's arrays.
struct Lane {
  unsigned long long* key;
  std::int32_t* slot;
  std::int32_t* list_state;
  unsigned long long* emit_win;
  unsigned long long* eps_win;
  std::int32_t* mark;
  std::int32_t* stored;
  std::int32_t* frontier[2];
  unsigned int* queued[2];
  std::int32_t* active_state;
  float* active_cost;
  std::int32_t* active_stored;
  const float* logp;
  const float* boost;
  WfstLaneControl* control;
  WfstSegmentHeader* header;
  WfstStoredToken* tokens;
};

__device__ Lane lane_of(const WfstKernelArgs& g, std::int32_t l) {
  const auto S = static_cast<std::int64_t>(g.graph.num_states);
  const WfstLanes& w = g.lanes;
  Lane L;
  L.key = w.key + l * S;
  L.slot = w.slot + l * S;
  L.list_state = w.list_state + l * S;
  L.emit_win = w.emit_win + l * S;
  L.eps_win = w.eps_win + l * S;
  L.mark = w.mark + l * S;
  L.stored = w.stored + l * S;
  L.frontier[0] = w.frontier + 2 * l * S;
  L.frontier[1] = L.frontier[0] + S;
  L.queued[0] = w.queued + 2 * static_cast<std::int64_t>(l) * w.queued_words;
  L.queued[1] = L.queued[0] + w.queued_words;
  L.active_state = w.active_state + l * S;
  L.active_cost = w.active_cost + l * S;
  L.active_stored = w.active_stored + l * S;
  L.logp = w.frame_logp + static_cast<std::int64_t>(l) * w.columns;
  L.control = w.control + l;
  L.boost = w.boost != nullptr && L.control->has_boost != 0 ? w.boost + l * w.boost_width : nullptr;
  L.header = g.segment.headers + l;
  L.tokens = g.segment.tokens + static_cast<std::int64_t>(l) * g.params.segment_capacity;
  return L;
}

__device__ __forceinline__ float boost_of(const Lane& L, std::int32_t word) {
  return L.boost != nullptr ? L.boost[word] : 0.0f;
}

// A way into state v with key k: the state joins the frame list on its first way; true when k improved its key.
__device__ __forceinline__ bool offer(const Lane& L, int* count, std::int32_t v, unsigned long long k) {
  if (*reinterpret_cast<volatile std::int32_t*>(L.slot + v) == -1 && atomicCAS(L.slot + v, -1, kClaimed) == -1) {
    const int j = atomicAdd(count, 1);
    L.list_state[j] = v;
    L.slot[v] = j;
  }
  return k < atomicMin(L.key + v, k);
}

// The state an arc leaves: the last s with emitting_begin[s] <= arc.
__device__ std::int32_t source_state(const WfstDeviceGraph& G, std::int64_t arc) {
  std::int32_t lo = 0;
  std::int32_t hi = G.num_states - 1;
  while (lo < hi) {
    const std::int32_t mid = lo + (hi - lo + 1) / 2;
    if (G.emitting_begin[mid] <= arc) {
      lo = mid;
    } else {
      hi = mid - 1;
    }
  }
  return lo;
}

// Exclusive prefix of a 0/1 flag over the block, in thread order; *total gets the block's sum. Every thread of
// the block must call it.
__device__ int block_exclusive_scan(int flag, int* warp_sums, int* total) {
  const int lane = threadIdx.x & 31;
  const int warp = threadIdx.x >> 5;
  const unsigned ballot = __ballot_sync(kFullWarp, flag != 0);
  if (lane == 0) warp_sums[warp] = __popc(ballot);
  __syncthreads();
  if (threadIdx.x == 0) {
    int run = 0;
    for (int w = 0; w < kWarps; ++w) {
      const int c = warp_sums[w];
      warp_sums[w] = run;
      run += c;
    }
    warp_sums[kWarps] = run;
  }
  __syncthreads();
  const int result = warp_sums[warp] + __popc(ballot & ((1u << lane) - 1u));
  *total = warp_sums[kWarps];
  __syncthreads();
  return result;
}

// Forgets the frame list (keys and slots back to "none"); the caller synchronises before the list is reused.
__device__ void clear_list(const Lane& L, int count) {
  for (int j = threadIdx.x; j < count; j += blockDim.x) {
    const std::int32_t v = L.list_state[j];
    L.key[v] = kNoKey;
    L.slot[v] = -1;
  }
}

// min_active (Kaldi's GetCutoff), as WfstSearcher::widen_to_min_active: `bound` widened to the (M+1)-th smallest
// cost among the live entries of the frame list when there are more than M, else to `all`. The k-th smallest is a
// radix select over the ordered costs (the keys' upper halves), a byte at a time; the CPU takes it with nth_element
// on the same floats, so both widen to the same value. Every thread of the block calls it and gets the result.
__device__ float widen_to_min_active(const Lane& L, int count, std::int64_t min_active, float bound, float all,
                                     unsigned long long* s_hist, unsigned long long* s_select,
                                     unsigned long long* s_remaining, int* s_live) {
  if (threadIdx.x == 0) s_live[0] = s_live[1] = 0;
  __syncthreads();
  int live = 0, below = 0;
  for (int j = threadIdx.x; j < count; j += blockDim.x) {
    const unsigned long long k = L.key[L.list_state[j]];
    if (k == kNoKey) continue;
    ++live;
    below += key_cost(k) < bound ? 1 : 0;
  }
  atomicAdd(s_live, live);
  atomicAdd(s_live + 1, below);
  __syncthreads();
  const int total = s_live[0];
  const int under = s_live[1];
  __syncthreads();                                                  // read before a later call resets them
  if (static_cast<std::int64_t>(under) > min_active) return bound;  // the (M+1)-th cheapest is below it
  if (static_cast<std::int64_t>(total) <= min_active) return bound > all ? bound : all;
  if (threadIdx.x == 0) {
    *s_select = 0;
    *s_remaining = static_cast<unsigned long long>(min_active) + 1;  // the (M+1)-th smallest
  }
  for (int shift = 24; shift >= 0; shift -= 8) {
    for (int b = threadIdx.x; b < 256; b += blockDim.x) s_hist[b] = 0;
    __syncthreads();
    const unsigned int high = shift == 24 ? 0u : ~((1u << (shift + 8)) - 1u);
    const auto prefix = static_cast<unsigned int>(*s_select);
    for (int j = threadIdx.x; j < count; j += blockDim.x) {
      const unsigned long long k = L.key[L.list_state[j]];
      if (k == kNoKey) continue;
      const auto key = static_cast<unsigned int>(k >> 32);
      if ((key & high) == prefix) atomicAdd(s_hist + ((key >> shift) & 255u), 1ull);
    }
    __syncthreads();
    if (threadIdx.x == 0) {
      unsigned long long seen = 0;
      for (unsigned d = 0; d < 256; ++d) {
        if (seen + s_hist[d] >= *s_remaining) {
          *s_select |= static_cast<unsigned long long>(d) << shift;
          *s_remaining -= seen;
          break;
        }
        seen += s_hist[d];
      }
    }
    __syncthreads();
  }
  const float kth = wfst_cost_of_ordered(static_cast<unsigned int>(*s_select));
  __syncthreads();  // every thread has read s_select before anyone reuses it
  return bound > kth ? bound : kth;
}

__global__ void __launch_bounds__(kFrameThreads) wfst_frame_kernel(WfstKernelArgs g) {
  __shared__ int s_count;
  __shared__ int s_front[2];
  __shared__ int s_alive;
  __shared__ int s_error;
  __shared__ unsigned int s_best;
  __shared__ int s_warp[kWarps + 1];
  __shared__ unsigned long long s_hist[256];
  __shared__ unsigned long long s_select;
  __shared__ unsigned long long s_remaining;
  __shared__ int s_last_bin;
  __shared__ int s_live[2];
  __shared__ unsigned int s_worst;

  const std::int32_t l = blockIdx.x;
  if (l >= g.lanes.lanes) return;
  const Lane L = lane_of(g, l);
  const WfstLaneControl c = *L.control;  // every thread reads it before thread 0 rewrites it at the end
  if (c.row < 0 || c.stalled != 0 || c.frame >= c.length) return;
  const WfstDeviceGraph& G = g.graph;
  const WfstSearchParams& P = g.params;
  const int tid = threadIdx.x;
  const int warp = tid >> 5;
  const int wl = tid & 31;
  const bool store_all = c.frame == c.length - 1;  // a row's last frame of the call: every token goes to the host
  if (tid == 0) s_error = 0;

  float beam = P.beam;
  float cutoff = kInf;
  bool fits = false;
  bool closure_cut = false;
  for (int attempt = 0;; ++attempt) {
    if (tid == 0) {
      s_count = 0;
      s_best = wfst_ordered_cost(kInf);
      s_front[0] = s_front[1] = 0;
    }
    __syncthreads();
    // 1. Emitting arcs of the active tokens (a warp per token); a running bound drops ways that cannot pass the
    //    final cutoff, so the keys below it are exactly the CPU's. With min_active, when the beam holds at most
    //    min_active ways in, every finite way is taken again (the bound dropped), as on the CPU.
    for (int pass = 0; pass < 2; ++pass) {
      const bool bounded = pass == 0;
      for (int i = warp; i < c.active_count; i += kWarps) {
        const std::int32_t from = L.active_state[i];
        const float from_cost = L.active_cost[i];
        for (std::int64_t a = G.emitting_begin[from] + wl; a < G.epsilon_begin[from]; a += 32) {
          const float acoustic = wfst_acoustic_cost(P.acoustic_scale, L.logp[G.ilabel[a] - 1]);
          const float cost = wfst_emitting_way(from_cost, G.weight[a], boost_of(L, G.olabel[a]), acoustic);
          const float running = wfst_cost_of_ordered(*reinterpret_cast<volatile unsigned int*>(&s_best));
          if (!(cost < (bounded ? rounded_add(running, beam) : kInf))) continue;
          atomicMin(&s_best, wfst_ordered_cost(cost));
          offer(L, &s_count, G.next_state[a], pack_key(cost, 0));
        }
      }
      __syncthreads();
      if (!bounded || P.min_active == 0) break;
      const float bound = rounded_add(wfst_cost_of_ordered(s_best), beam);
      if (tid == 0) s_live[0] = 0;
      __syncthreads();
      int below = 0;
      for (int j = tid; j < s_count; j += blockDim.x) below += key_cost(L.key[L.list_state[j]]) < bound ? 1 : 0;
      atomicAdd(s_live, below);
      __syncthreads();
      const bool widen = static_cast<std::int64_t>(s_live[0]) <= P.min_active;
      __syncthreads();
      if (!widen) break;
      clear_list(L, s_count);
      __syncthreads();
      if (tid == 0) {
        s_count = 0;
        s_best = wfst_ordered_cost(kInf);
      }
      __syncthreads();
    }
    cutoff = rounded_add(wfst_cost_of_ordered(s_best), beam);
    // 2. The cutoff (widened by min_active); the survivors start the ε-closure.
    const int expanded = s_count;
    if (P.min_active > 0) {
      if (tid == 0) s_worst = 0;
      __syncthreads();
      unsigned int worst = 0;
      for (int j = tid; j < expanded; j += blockDim.x) {
        const unsigned long long k = L.key[L.list_state[j]];
        if (k != kNoKey) worst = max(worst, static_cast<unsigned int>(k >> 32));
      }
      atomicMax(&s_worst, worst);
      __syncthreads();
      const float all = rounded_add(wfst_cost_of_ordered(s_worst), beam);
      cutoff = widen_to_min_active(L, expanded, P.min_active, cutoff, all, s_hist, &s_select, &s_remaining, s_live);
    }
    for (int j = tid; j < expanded; j += blockDim.x) {
      const std::int32_t v = L.list_state[j];
      if (!(key_cost(L.key[v]) < cutoff)) {
        L.key[v] = kNoKey;  // the entry stays in the list, dead unless the closure reaches it again
        continue;
      }
      atomicOr(L.queued[0] + (v >> 5), 1u << (v & 31));
      L.frontier[0][atomicAdd(&s_front[0], 1)] = v;
    }
    __syncthreads();
    // 3. ε-closure below the cutoff, in rounds: a state whose key improves goes on the next round's frontier.
    int cur = 0;
    unsigned long long pops = 0;
    closure_cut = false;
    for (;;) {
      const int n = s_front[cur];
      if (n == 0) break;
      if (pops > kClosurePopsPerToken * static_cast<unsigned long long>(s_count) + kClosurePopsExtra) {
        for (int e = tid; e < n; e += blockDim.x) {
          const std::int32_t u = L.frontier[cur][e];
          atomicAnd(L.queued[cur] + (u >> 5), ~(1u << (u & 31)));
        }
        closure_cut = true;  // float rounding on a nearly free ε-cycle; flagged as an overflow, as on the CPU
        break;
      }
      pops += static_cast<unsigned long long>(n);
      const int nxt = cur ^ 1;
      for (int e = warp; e < n; e += kWarps) {
        const std::int32_t u = L.frontier[cur][e];
        unsigned long long k = 0;
        if (wl == 0) {
          atomicAnd(L.queued[cur] + (u >> 5), ~(1u << (u & 31)));
          k = load_key(L.key + u);
        }
        k = __shfl_sync(kFullWarp, k, 0);
        if (k == kNoKey) continue;
        const float from_cost = key_cost(k);
        const std::uint32_t depth = key_depth(k) + 1;
        for (std::int64_t a = G.epsilon_begin[u] + wl; a < G.emitting_begin[u + 1]; a += 32) {
          const float cost = wfst_epsilon_way(from_cost, G.weight[a], boost_of(L, G.olabel[a]));
          if (!(cost < cutoff)) continue;
          const std::int32_t v = G.next_state[a];
          if (!offer(L, &s_count, v, pack_key(cost, depth))) continue;
          const unsigned bit = 1u << (v & 31);
          if ((atomicOr(L.queued[nxt] + (v >> 5), bit) & bit) == 0) L.frontier[nxt][atomicAdd(&s_front[nxt], 1)] = v;
        }
      }
      __syncthreads();
      if (tid == 0) s_front[cur] = 0;
      __syncthreads();
      cur = nxt;
    }
    __syncthreads();
    // Tokens of the frame: a frame with more than max_tokens_per_frame is decoded again with half the beam.
    const int count = s_count;
    if (tid == 0) s_alive = 0;
    __syncthreads();
    int alive = 0;
    for (int j = tid; j < count; j += blockDim.x) alive += L.key[L.list_state[j]] != kNoKey ? 1 : 0;
    atomicAdd(&s_alive, alive);
    __syncthreads();
    fits = static_cast<std::int64_t>(s_alive) <= P.max_tokens_per_frame;
    if (fits || attempt == kWfstBeamTightenings) break;
    clear_list(L, count);
    __syncthreads();
    beam *= 0.5f;
  }

  const int count = s_count;
  // Tie-breaks: among the ways that reach a state's key exactly, the lowest arc id (emitting ways have depth 0, so
  // they win whenever the key's depth is 0). An ε-way that reaches the cost from a shallower state with another
  // depth is kept as a "loose" fallback: a key can come from a predecessor's earlier value when two of its costs
  // round to the same sum (then the depth, and which equal-cost way wins, can depend on the order of the closure,
  // on the CPU as here).
  for (int j = tid; j < count; j += blockDim.x) {
    L.emit_win[j] = kNoKey;
    L.eps_win[j] = kNoKey;
    L.mark[j] = 0;
  }
  __syncthreads();
  for (int i = warp; i < c.active_count; i += kWarps) {
    const std::int32_t from = L.active_state[i];
    const float from_cost = L.active_cost[i];
    const auto stored_prev = static_cast<std::uint32_t>(L.active_stored[i]);
    for (std::int64_t a = G.emitting_begin[from] + wl; a < G.epsilon_begin[from]; a += 32) {
      const float acoustic = wfst_acoustic_cost(P.acoustic_scale, L.logp[G.ilabel[a] - 1]);
      const float cost = wfst_emitting_way(from_cost, G.weight[a], boost_of(L, G.olabel[a]), acoustic);
      if (!(cost < cutoff)) continue;
      const std::int32_t v = G.next_state[a];
      if (pack_key(cost, 0) != L.key[v]) continue;
      atomicMin(L.emit_win + L.slot[v], (static_cast<unsigned long long>(a) << 32) | stored_prev);
    }
  }
  for (int j = warp; j < count; j += kWarps) {
    const std::int32_t u = L.list_state[j];
    const unsigned long long k = L.key[u];
    if (k == kNoKey) continue;
    const float from_cost = key_cost(k);
    const std::uint32_t depth = key_depth(k) + 1;
    for (std::int64_t a = G.epsilon_begin[u] + wl; a < G.emitting_begin[u + 1]; a += 32) {
      const float cost = wfst_epsilon_way(from_cost, G.weight[a], boost_of(L, G.olabel[a]));
      if (!(cost < cutoff)) continue;
      const std::int32_t v = G.next_state[a];
      const unsigned long long kv = L.key[v];
      if (kv == kNoKey || wfst_ordered_cost(cost) != static_cast<std::uint32_t>(kv >> 32)) continue;
      // A loose way must come from a shallower state, so back-pointers stay acyclic (depth falls along them).
      if (depth > key_depth(kv)) continue;
      const unsigned long long loose = depth != key_depth(kv) ? 1ull : 0ull;
      atomicMin(L.eps_win + L.slot[v], (loose << 63) | (static_cast<unsigned long long>(depth & 0x7fffffffu) << 32) |
                                           static_cast<std::uint32_t>(a));
    }
  }
  __syncthreads();
  // Resolved way of each entry (in emit_win): arc << 32 | predecessor (stored index in the previous frame, or
  // this frame's entry for an ε-arc, marked kLocal).
  for (int j = tid; j < count; j += blockDim.x) {
    const unsigned long long k = L.key[L.list_state[j]];
    if (k == kNoKey) continue;
    if (key_depth(k) == 0 && L.emit_win[j] != kNoKey) continue;
    const unsigned long long eps = L.eps_win[j];
    if (eps == kNoKey) {
      s_error = 1;  // no way reproduces the key (a closure cut short): the token starts its own path, flagged
      L.emit_win[j] = kNoKey;
      continue;
    }
    const std::int64_t arc = static_cast<std::uint32_t>(eps);
    L.emit_win[j] =
        (static_cast<unsigned long long>(arc) << 32) | static_cast<std::uint32_t>(L.slot[source_state(G, arc)]);
    L.mark[j] = kLocal;
  }
  // 4. Active tokens: below min(cutoff, best + beam), then the cheapest max_tokens_per_frame on an overflow, then
  //    the max_active histogram.
  if (tid == 0) s_best = wfst_ordered_cost(kInf);
  __syncthreads();
  {
    unsigned int mine = wfst_ordered_cost(kInf);
    for (int j = tid; j < count; j += blockDim.x) {
      const unsigned long long k = L.key[L.list_state[j]];
      if (k != kNoKey) mine = min(mine, static_cast<unsigned int>(k >> 32));
    }
    atomicMin(&s_best, mine);
  }
  if (tid == 0) s_alive = 0;
  __syncthreads();
  const float best = wfst_cost_of_ordered(s_best);
  const float bound = rounded_add(best, beam);
  float cut = bound < cutoff ? bound : cutoff;
  if (P.min_active > 0) {
    cut = widen_to_min_active(L, count, P.min_active, cut, cutoff, s_hist, &s_select, &s_remaining, s_live);
    if (tid == 0) s_alive = 0;
    __syncthreads();
  }
  {
    int candidates = 0;
    for (int j = tid; j < count; j += blockDim.x) {
      const unsigned long long k = L.key[L.list_state[j]];
      if (k != kNoKey && key_cost(k) < cut) {
        L.mark[j] |= kCandidate;
        ++candidates;
      }
    }
    atomicAdd(&s_alive, candidates);
  }
  __syncthreads();
  const bool overflow = !fits || closure_cut;
  std::int64_t candidates = s_alive;
  if (overflow && candidates > P.max_tokens_per_frame) {
    // The max_tokens_per_frame cheapest by (cost, state), as the CPU's nth_element: a radix select of the k-th
    // smallest of the unique keys ordered cost << 32 | state, a byte at a time.
    if (tid == 0) {
      s_select = 0;
      s_remaining = static_cast<unsigned long long>(P.max_tokens_per_frame);
    }
    for (int shift = 56; shift >= 0; shift -= 8) {
      for (int b = tid; b < 256; b += blockDim.x) s_hist[b] = 0;
      __syncthreads();
      const unsigned long long high = shift == 56 ? 0ull : ~((1ull << (shift + 8)) - 1ull);
      const unsigned long long prefix = s_select;
      for (int j = tid; j < count; j += blockDim.x) {
        if ((L.mark[j] & kCandidate) == 0) continue;
        const std::int32_t v = L.list_state[j];
        const unsigned long long key = (L.key[v] & 0xffffffff00000000ull) | static_cast<std::uint32_t>(v);
        if ((key & high) == prefix) atomicAdd(s_hist + ((key >> shift) & 255u), 1ull);
      }
      __syncthreads();
      if (tid == 0) {
        unsigned long long seen = 0;
        for (unsigned d = 0; d < 256; ++d) {
          if (seen + s_hist[d] >= s_remaining) {
            s_select |= static_cast<unsigned long long>(d) << shift;
            s_remaining -= seen;
            break;
          }
          seen += s_hist[d];
        }
      }
      __syncthreads();
    }
    const unsigned long long kth = s_select;
    for (int j = tid; j < count; j += blockDim.x) {
      if ((L.mark[j] & kCandidate) == 0) continue;
      const std::int32_t v = L.list_state[j];
      const unsigned long long key = (L.key[v] & 0xffffffff00000000ull) | static_cast<std::uint32_t>(v);
      if (key > kth) L.mark[j] &= ~kCandidate;
    }
    candidates = P.max_tokens_per_frame;
    __syncthreads();
  }
  const bool histogram = candidates > P.max_active;
  if (histogram) {
    const float range = rounded_sub(cut, best);
    for (int b = tid; b < 256; b += blockDim.x) s_hist[b] = 0;
    __syncthreads();
    for (int j = tid; j < count; j += blockDim.x) {
      if ((L.mark[j] & kCandidate) == 0) continue;
      atomicAdd(s_hist + wfst_cost_bin(key_cost(L.key[L.list_state[j]]), best, range), 1ull);
    }
    __syncthreads();
    if (tid == 0) s_last_bin = wfst_last_kept_bin(reinterpret_cast<const std::int64_t*>(s_hist), P.max_active);
    __syncthreads();
  }
  {
    const float range = rounded_sub(cut, best);
    for (int j = tid; j < count; j += blockDim.x) {
      if ((L.mark[j] & kCandidate) == 0) continue;
      if (histogram && wfst_cost_bin(key_cost(L.key[L.list_state[j]]), best, range) > s_last_bin) continue;
      L.mark[j] |= kActive;
    }
  }
  __syncthreads();
  // Stored tokens: every token on the row's last frame of the call (results may consider them all), otherwise the
  // active tokens and their ε-ancestors in this frame (nothing else can be on a later best path).
  for (int j = tid; j < count; j += blockDim.x) {
    if (L.key[L.list_state[j]] == kNoKey) continue;
    if (store_all) {
      atomicOr(L.mark + j, kKept);
      continue;
    }
    if ((L.mark[j] & kActive) == 0) continue;
    int x = j;
    for (int steps = 0;; ++steps) {
      const std::int32_t old = atomicOr(L.mark + x, kKept);
      if ((old & kKept) != 0 || (old & kLocal) == 0) break;
      if (steps > count) {
        s_error = 1;  // cannot happen: depth falls along back-pointers
        break;
      }
      x = static_cast<int>(static_cast<std::uint32_t>(L.emit_win[x]));
    }
  }
  __syncthreads();
  int kept_total = 0;
  for (int base = 0; base < count; base += blockDim.x) {
    const int j = base + tid;
    const int flag = j < count && (L.mark[j] & kKept) != 0 ? 1 : 0;
    int total = 0;
    const int index = block_exclusive_scan(flag, s_warp, &total);
    if (flag != 0) L.stored[j] = kept_total + index;
    kept_total += total;
  }
  const WfstSegmentHeader header = *L.header;
  if (header.used + kept_total > P.segment_capacity) {
    // No room left in this segment: the frame is decoded again by the next program, into the other segment.
    clear_list(L, count);
    if (tid == 0) L.control->stalled = 1;
    return;
  }
  __syncthreads();
  WfstStoredToken* out = L.tokens + header.used;
  int active_total = 0;
  for (int base = 0; base < count; base += blockDim.x) {
    const int j = base + tid;
    const std::int32_t m = j < count ? L.mark[j] : 0;
    if ((m & kKept) != 0) {
      const std::int32_t v = L.list_state[j];
      const unsigned long long way = L.emit_win[j];
      const auto low = static_cast<std::int32_t>(static_cast<std::uint32_t>(way));
      WfstStoredToken t;
      t.state = v;
      t.cost = key_cost(L.key[v]);
      t.arc = way == kNoKey ? -1 : static_cast<std::int32_t>(way >> 32);
      t.prev = way == kNoKey ? -1 : ((m & kLocal) != 0 ? L.stored[low] : low);
      t.active = (m & kActive) != 0 ? 1 : 0;
      out[L.stored[j]] = t;
    }
    int total = 0;
    const int index = block_exclusive_scan((m & kActive) != 0 ? 1 : 0, s_warp, &total);
    if ((m & kActive) != 0) {
      const std::int32_t v = L.list_state[j];
      L.active_state[active_total + index] = v;
      L.active_cost[active_total + index] = key_cost(L.key[v]);
      L.active_stored[active_total + index] = L.stored[j];
    }
    active_total += total;
  }
  __syncthreads();
  clear_list(L, count);
  if (tid == 0) {
    WfstSegmentHeader* h = L.header;
    h->sizes[header.frames] = kept_total;
    if (overflow || s_error != 0) h->overflow_mask |= 1 << header.frames;
    h->frames = header.frames + 1;
    h->used = header.used + kept_total;
    h->progress = c.frame + 1;
    L.control->frame = c.frame + 1;
    L.control->active_count = active_total;
  }
}

__global__ void wfst_begin_segment_kernel(WfstKernelArgs g) {
  for (std::int32_t l = blockIdx.x * blockDim.x + threadIdx.x; l < g.lanes.lanes; l += gridDim.x * blockDim.x) {
    WfstSegmentHeader* h = g.segment.headers + l;
    h->frames = 0;
    h->used = 0;
    h->overflow_mask = 0;
    // Only sizes[0, frames) carry meaning, but the host copies the whole header back: no byte of it is stale.
    for (std::int32_t f = 0; f < kWfstFramesPerProgram; ++f) h->sizes[f] = 0;
    h->progress = g.lanes.control[l].frame;
    g.lanes.control[l].stalled = 0;
  }
}

template <class T>
__global__ void __launch_bounds__(kGatherThreads) wfst_gather_frame_kernel(WfstKernelArgs g) {
  const WfstInputArgs input = *g.input;
  for (std::int32_t l = blockIdx.x; l < g.lanes.lanes; l += gridDim.x) {
    const WfstLaneControl c = g.lanes.control[l];
    if (c.row < 0 || c.stalled != 0 || c.frame >= c.length) continue;
    const T* row = static_cast<const T*>(input.logprobs) + c.row * input.stride_b + c.frame * input.stride_t;
    float* out = g.lanes.frame_logp + static_cast<std::int64_t>(l) * g.lanes.columns;
    for (std::int32_t v = threadIdx.x; v < g.lanes.columns; v += blockDim.x) out[v] = to_float(row[v * input.stride_v]);
  }
}

template <class T>
__global__ void wfst_check_values_kernel(WfstInputArgs input, const std::int32_t* lengths, std::int32_t batch,
                                         std::int32_t frames, std::int32_t columns, unsigned long long* bad) {
  for (std::int64_t bt = blockIdx.x; bt < static_cast<std::int64_t>(batch) * frames; bt += gridDim.x) {
    const std::int64_t b = bt / frames;
    const std::int64_t t = bt - b * frames;
    if (t >= lengths[b]) continue;
    const T* row = static_cast<const T*>(input.logprobs) + b * input.stride_b + t * input.stride_t;
    for (std::int32_t v = threadIdx.x; v < columns; v += blockDim.x) {
      const float x = to_float(row[v * input.stride_v]);
      if (is_invalid_logprob(x)) atomicMin(bad, pack_bad_value(b, t, v, x != x));
    }
  }
}

int lane_blocks(std::int32_t lanes) { return lanes < 65535 ? (lanes < 1 ? 1 : lanes) : 65535; }

}  // namespace

void launch_wfst_begin_segment(const WfstKernelArgs& args, cudaStream_t stream) {
  wfst_begin_segment_kernel<<<(args.lanes.lanes + 255) / 256, 256, 0, stream>>>(args);
  ASRDEC_CUDA_CHECK_LAUNCH(stream, "wfst_begin_segment_kernel");
}

void launch_wfst_gather_frame(DType dtype, const WfstKernelArgs& args, cudaStream_t stream) {
  const int blocks = lane_blocks(args.lanes.lanes);
  switch (dtype) {
    case DType::f16:
      wfst_gather_frame_kernel<half_t><<<blocks, kGatherThreads, 0, stream>>>(args);
      break;
    case DType::bf16:
      wfst_gather_frame_kernel<bfloat16_t><<<blocks, kGatherThreads, 0, stream>>>(args);
      break;
    default:
      wfst_gather_frame_kernel<float><<<blocks, kGatherThreads, 0, stream>>>(args);
  }
  ASRDEC_CUDA_CHECK_LAUNCH(stream, "wfst_gather_frame_kernel");
}

void launch_wfst_frame(const WfstKernelArgs& args, cudaStream_t stream) {
  wfst_frame_kernel<<<args.lanes.lanes, kFrameThreads, 0, stream>>>(args);
  ASRDEC_CUDA_CHECK_LAUNCH(stream, "wfst_frame_kernel");
}

void launch_wfst_check_values(DType dtype, const WfstInputArgs& input, const std::int32_t* lengths, std::int32_t batch,
                              std::int32_t frames, std::int32_t columns, unsigned long long* bad, cudaStream_t stream) {
  const std::int64_t rows = static_cast<std::int64_t>(batch) * frames;
  if (rows == 0) return;
  const int blocks = static_cast<int>(rows < 65535 ? rows : 65535);
  switch (dtype) {
    case DType::f16:
      wfst_check_values_kernel<half_t><<<blocks, 256, 0, stream>>>(input, lengths, batch, frames, columns, bad);
      break;
    case DType::bf16:
      wfst_check_values_kernel<bfloat16_t><<<blocks, 256, 0, stream>>>(input, lengths, batch, frames, columns, bad);
      break;
    default:
      wfst_check_values_kernel<float><<<blocks, 256, 0, stream>>>(input, lengths, batch, frames, columns, bad);
  }
  ASRDEC_CUDA_CHECK_LAUNCH(stream, "wfst_check_values_kernel");
}

void preload_wfst_kernels() {
  cudaFuncAttributes attributes{};
  ASRDEC_CUDA_CHECK(cudaFuncGetAttributes(&attributes, wfst_frame_kernel));
  ASRDEC_CUDA_CHECK(cudaFuncGetAttributes(&attributes, wfst_begin_segment_kernel));
  ASRDEC_CUDA_CHECK(cudaFuncGetAttributes(&attributes, wfst_gather_frame_kernel<float>));
  ASRDEC_CUDA_CHECK(cudaFuncGetAttributes(&attributes, wfst_gather_frame_kernel<half_t>));
  ASRDEC_CUDA_CHECK(cudaFuncGetAttributes(&attributes, wfst_gather_frame_kernel<bfloat16_t>));
}

}  // namespace asrdec::detail
