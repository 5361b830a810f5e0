// fastreduce/reduce.cuh: header-only reductions with users' own operators and transforms, for
// any trivially copyable element type. Include it in a .cu file compiled by nvcc; nothing to link
// but the CUDA runtime. (The library's precompiled fastreduce::reduce keeps serving the built-in
// types and ops with no compile time for its users.)
//
//   struct Square { __host__ __device__ float operator()(float x) const { return x * x; } };
//   float s = fastreduce::transform_reduce(d_in, n, Square{}, fastreduce::Sum{});
//   fastreduce::transform_reduce_async(d_temp, temp_bytes, d_in, n, d_out, transform, op, stream);
//   fastreduce::transform_reduce(d_x, d_y, n, pair_transform, op);              // two inputs
//   fastreduce::transform_reduce_axis_async(d_temp, temp_bytes, d_in, d_out, axis, transform, op);
//   fastreduce::transform_reduce_segments_async(d_temp, temp_bytes, d_in, d_out, segments,
//                                               d_begin, d_end, transform, op);
//   fastreduce::Indexed<float> m = fastreduce::argmax(d_in, n);   // or reduce(d_in, n, ArgMax{})
// Mean, variance, norms and dot: fastreduce/stats.cuh, built on this header.
//
// What an op must satisfy. With R the transform's result type:
//   - op(R, R) -> R, callable on the device, and associative: op(a, op(b, c)) == op(op(a, b), c)
//     (for floating-point sums this holds up to rounding, so the grouping changes the last bits);
//   - an identity e with op(e, x) == op(x, e) == x: either a static member template
//     `identity<R>()` (as fastreduce::Sum, Prod, Min, Max have) or a member function `identity()`;
//   - commutativity is NOT required: unless the op declares `static constexpr bool commutative =
//     true` (the built-in ops, ArgMax/ArgMin and MeanVar do), the operands always meet in index
//     order, result = op(...op(op(e, f(x[0])), f(x[1]))..., f(x[n-1])) up to associativity,
//     so a non-commutative op (composing affine maps, concatenating ranges) gets the index-order
//     result, only bracketed differently. (Two-input reductions need a commutative op.)
// Transforms and ops are functors of namespace scope (CUDA does not instantiate kernels on types
// local to a function) or, with nvcc --extended-lambda, __device__ lambdas. A transform may take
// the element's index (std::size_t) as its last argument: the position in the array, or along the
// axis, or in the segment.
// Determinism: the bracketing depends on n, the element size, whether d_in is 16-byte aligned and
// the grid (the GPU's SM count and occupancy), never on timing: the same call on the same GPU
// model gives the same bits every time.
//
// A commutative op takes a faster pass: each thread accumulates a grid-stride run of 16-byte
// vectors (four independent running values, one per load in flight), the block combines its
// threads once, one more block combines the blocks (on sm_90 a programmatic dependent launch).
// Up to 256 KB read, a single block of 1024 threads does everything in one kernel.
// The ordered pass: each block takes a contiguous run of tiles (a tile is 4 sub-tiles of 256 threads x 16
// bytes, or of 256 elements when the input is misaligned or its type does not divide 16 bytes);
// a thread combines its elements of a sub-tile in order, the block combines the threads' values in
// order (ordered warp shuffles, then the warps in order), tile after tile; one more block combines
// the blocks' partials in order. At most two kernels on `stream`, no allocation, no
// synchronisation, no block waiting for another (the GPU stays shareable).
#pragma once

#include <cuda_runtime.h>

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <type_traits>
#include <utility>

#include "fastreduce/axis.hpp"
#include "fastreduce/error.hpp"
#include "fastreduce/ops.cuh"

namespace fastreduce {

// The transform that leaves elements as they are.
struct Identity {
  template <class T>
  __host__ __device__ constexpr T operator()(const T& x) const { return x; }
};

namespace generic {

template <class Op, class R>
concept static_identity = requires { { Op::template identity<R>() } -> std::convertible_to<R>; };
template <class Op, class R>
concept member_identity = requires(const Op& op) { { op.identity() } -> std::convertible_to<R>; };

template <class R, class Op>
__host__ __device__ R identity_of(const Op& op) {
  if constexpr (static_identity<Op, R>) return Op::template identity<R>();
  else return static_cast<R>(op.identity());
}

inline constexpr unsigned kThreads = 256;
inline constexpr unsigned kWarps = kThreads / 32;

// A value of any trivially copyable type, shuffled down the warp word by word.
template <class R>
__device__ __forceinline__ R shfl_down(const R& v, unsigned offset) {
  constexpr unsigned kWords = (sizeof(R) + 3) / 4;
  unsigned words[kWords] = {};
  std::memcpy(words, &v, sizeof(R));
#pragma unroll
  for (unsigned i = 0; i < kWords; ++i) words[i] = __shfl_down_sync(0xffffffffu, words[i], offset);
  R out = v;
  std::memcpy(&out, words, sizeof(R));
  return out;
}

// The warp's values in lane order: lane 0 gets v[0] op v[1] op ... op v[31].
template <class R, class Op>
__device__ __forceinline__ R warp_ordered(R v, const Op& op, unsigned lane) {
#pragma unroll
  for (unsigned offset = 1; offset < 32; offset *= 2) {
    const R other = shfl_down(v, offset);
    if (lane % (2 * offset) == 0) v = op(v, other);  // lane + offset holds the next run in order
  }
  return v;
}

// Sub-tiles per round: each thread's U values go through the ordered warp combine, and the block
// meets once per round (two barriers per U x 256 x V elements).
inline constexpr unsigned kRound = 4;

// Shared memory for the warps' totals of a round (raw storage: R may have member initialisers).
template <class R>
struct RoundTotals {
  alignas(R) unsigned char bytes[sizeof(R) * kRound * kWarps];
  __device__ R& at(unsigned u, unsigned w) { return reinterpret_cast<R*>(bytes)[u * kWarps + w]; }
};

// Folds a round's values (v[u] of every thread, in (u, thread) order) into `acc` (thread 0's).
template <class R, class Op>
__device__ __forceinline__ R block_round(R acc, R (&v)[kRound], const Op& op, RoundTotals<R>& totals) {
  const unsigned lane = threadIdx.x % 32, warp = threadIdx.x / 32;
#pragma unroll
  for (unsigned u = 0; u < kRound; ++u) {
    const R w = warp_ordered(v[u], op, lane);
    if (lane == 0) totals.at(u, warp) = w;
  }
  __syncthreads();
  if (threadIdx.x == 0) {
    for (unsigned u = 0; u < kRound; ++u) {
      for (unsigned w = 0; w < kWarps; ++w) acc = op(acc, totals.at(u, w));
    }
  }
  __syncthreads();
  return acc;
}

// f(x...), or f(x..., i) for a transform that takes the element's index too.
template <class Transform, class... X>
__host__ __device__ __forceinline__ auto apply(const Transform& f, std::size_t i, const X&... x) {
  if constexpr (std::is_invocable_v<const Transform&, const X&..., std::size_t>) return f(x..., i);
  else return f(x...);
}

// What the last block writes: the reduction's value as it is, or a function of it (a norm's
// square root, a variance from its moments).
struct AsIs {
  template <class R>
  __host__ __device__ R operator()(const R& r) const { return r; }
};

// Elements per thread per sub-tile: 16-byte vectors of types that divide 16 bytes, else one.
template <class T>
inline constexpr unsigned kVec = (sizeof(T) <= 16 && 16 % sizeof(T) == 0) ? unsigned(16 / sizeof(T)) : 1u;

template <class T, unsigned V>
struct alignas(V > 1 && V * sizeof(T) == 16 ? 16 : alignof(T)) Pack {  // one element: its own alignment
  T v[V];
};

// Thread 0 gets v[0] c v[1] c ... c v[Threads - 1] (threads in order) of a block's values.
template <unsigned Threads, class P, class Combine>
__device__ __forceinline__ P block_combine(P v, const Combine& c, RoundTotals<P>& shared) {
  static_assert(Threads / 32 <= kRound * kWarps, "a slot of `shared` per warp");
  const unsigned lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  v = warp_ordered(v, c, lane);
  if (lane == 0) shared.at(0, warp) = v;
  __syncthreads();
  if (threadIdx.x == 0) {
    for (unsigned w = 1; w < Threads / 32; ++w) v = c(v, shared.at(0, w));
  }
  __syncthreads();
  return v;
}

// A tile is kRound sub-tiles of 256 threads x V elements; thread t takes elements [t V, t V + V) of
// each (V > 1 only for a 16-byte aligned input). Block b combines tiles [b * per_block,
// (b + 1) * per_block) into partials[b], or writes finish(result) to *out for a grid of one block.
template <unsigned V, class T, class R, class Transform, class Op, class Finish, class O>
__global__ void __launch_bounds__(kThreads) tiles_kernel(const T* in, std::size_t n, std::size_t per_block,
                                                         Transform f, Op op, Finish finish, R* partials, O* out) {
  __shared__ RoundTotals<R> totals;
  const R e = identity_of<R>(op);
  R acc = e;
  constexpr std::size_t kSub = std::size_t(kThreads) * V;
  constexpr std::size_t kTile = kSub * kRound;
  const std::size_t first = std::size_t(blockIdx.x) * per_block;
  const std::size_t tiles = (n + kTile - 1) / kTile;
  const std::size_t last = first + per_block < tiles ? first + per_block : tiles;
  static_assert(kRound == 4, "the value arrays below are written out for 4 sub-tiles");
  for (std::size_t t = first; t < last; ++t) {
    R v[kRound] = {e, e, e, e};
#pragma unroll
    for (unsigned u = 0; u < kRound; ++u) {
      const std::size_t base = t * kTile + u * kSub + std::size_t(threadIdx.x) * V;
      if constexpr (V > 1) {
        if (base + V <= n) {
          const Pack<T, V> p = *reinterpret_cast<const Pack<T, V>*>(in + base);
#pragma unroll
          for (unsigned i = 0; i < V; ++i) v[u] = op(v[u], static_cast<R>(apply(f, base + i, p.v[i])));
        } else {
          for (unsigned i = 0; i < V && base + i < n; ++i) v[u] = op(v[u], static_cast<R>(apply(f, base + i, in[base + i])));
        }
      } else {
        if (base < n) v[u] = static_cast<R>(apply(f, base, in[base]));
      }
    }
    acc = block_round(acc, v, op, totals);
  }
  if (threadIdx.x == 0) {
    if (gridDim.x == 1) *out = finish(acc);
    else partials[blockIdx.x] = acc;
  }
}

// One block: *out = finish(partials[0] op partials[1] op ... op partials[count - 1]). Thread t
// combines a contiguous run of the partials in order, then the threads meet in order.
template <class R, class Op, class Finish, class O>
__global__ void __launch_bounds__(kThreads) partials_kernel(const R* partials, unsigned count, Op op, Finish finish,
                                                            O* out) {
  __shared__ RoundTotals<R> totals;
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  // Launched as a programmatic dependent launch (sm_90): wait until the grid before it on the
  // stream has completed and its partials are visible. Otherwise the stream already ordered them.
  asm volatile("griddepcontrol.wait;" ::: "memory");
#endif
  const unsigned run = (count + kThreads - 1) / kThreads;
  const unsigned begin = threadIdx.x * run < count ? threadIdx.x * run : count;
  const unsigned end = begin + run < count ? begin + run : count;
  R acc = identity_of<R>(op);
  for (unsigned i = begin; i < end; ++i) acc = op(acc, partials[i]);
  acc = block_combine<kThreads>(acc, op, totals);
  if (threadIdx.x == 0) *out = finish(acc);
}

// Ops whose operands may meet in any order: the built-in ones, and users' that say
// `static constexpr bool commutative = true`.
template <class Op, class = void>
struct is_commutative : std::false_type {};
template <class Op>
struct is_commutative<Op, std::enable_if_t<static_cast<bool>(Op::commutative)>> : std::true_type {};
template <> struct is_commutative<Sum> : std::true_type {};
template <> struct is_commutative<Prod> : std::true_type {};
template <> struct is_commutative<Min> : std::true_type {};
template <> struct is_commutative<Max> : std::true_type {};
template <> struct is_commutative<BitAnd> : std::true_type {};
template <> struct is_commutative<BitOr> : std::true_type {};
template <> struct is_commutative<BitXor> : std::true_type {};

// A thread's running value in the commutative pass and in the axis groups, fed the thread's
// elements in increasing index order. The interface (a specialisation may keep a cheaper state:
// ArgMax keeps the value and its index, MeanVar sums of offsets from a shift the block shares):
//   start(p)            p: an element of the block's (group's) range, nullptr if it has none;
//                       called once, the same p on every thread of a block or group
//   add(f, op, i, x...) element i (of each input)
//   partial(op)         what the block's threads combine, with combine(op, a, b)
//   finish(op, p)       the block's combined partial as an R (for the partials, or the output)
// The default folds op(acc, f(x..., i)) and combines with op.
template <class R, class Transform, class Op>
struct ThreadFold {
  using Partial = R;
  R acc;
  __device__ explicit ThreadFold(const Op& op) : acc(identity_of<R>(op)) {}
  template <class T>
  __device__ __forceinline__ void start(const T*) {}
  template <class... X>
  __device__ __forceinline__ void add(const Transform& f, const Op& op, std::size_t i, const X&... x) {
    acc = op(acc, static_cast<R>(apply(f, i, x...)));
  }
  __device__ __forceinline__ R partial(const Op&) const { return acc; }
  __device__ __forceinline__ static R combine(const Op& op, const R& a, const R& b) { return op(a, b); }
  __device__ __forceinline__ R finish(const Op&, const R& p) const { return p; }
};

struct NoInput {};  // the second input of a one-input reduction

inline constexpr unsigned kInFlight = 4;  // vectors a thread loads before combining them

// For commutative ops: each thread accumulates the vectors i, i + stride, ... (stride = the
// grid's threads), kInFlight loads in flight, the loads of a round into folds of their own
// (independent chains: the latency of one element's update does not hold up the next); the
// folds meet at the end, then the block's threads. With a second input
// (U != NoInput) element i of both meets in the transform.
template <unsigned Threads, unsigned V, class T, class U, class R, class Transform, class Op, class Finish, class O>
__global__ void __launch_bounds__(Threads) any_order_kernel(const T* in, const U* in2, std::size_t n, Transform f,
                                                             Op op, Finish finish, R* partials, O* out) {
  constexpr bool kTwo = !std::is_same_v<U, NoInput>;
  using Fold = ThreadFold<R, Transform, Op>;
  using P = typename Fold::Partial;
  __shared__ RoundTotals<P> totals;
  Fold fold[kInFlight] = {Fold(op), Fold(op), Fold(op), Fold(op)};
  static_assert(kInFlight == 4, "the folds above are written out for 4 loads");
  // A large running value (an arg-extreme, moments) in two folds only: fewer registers, more
  // blocks an SM. Load u goes to fold u % kFolds (each fold still sees increasing indices).
  constexpr unsigned kFolds = sizeof(Fold) > 24 ? 2 : kInFlight;
  {
    const std::size_t first = std::size_t(blockIdx.x) * Threads * V;
    const T* p = n == 0 ? static_cast<const T*>(nullptr) : in + (first < n ? first : n - 1);
#pragma unroll
    for (unsigned u = 0; u < kInFlight; ++u) fold[u].start(p);
  }
  const std::size_t vectors = n / V;
  const std::size_t stride = std::size_t(gridDim.x) * Threads;
  std::size_t i = std::size_t(blockIdx.x) * Threads + threadIdx.x;
  for (; i + (kInFlight - 1) * stride < vectors; i += kInFlight * stride) {
    Pack<T, V> p[kInFlight];
    Pack<U, V> q[kTwo ? kInFlight : 1];
#pragma unroll
    for (unsigned u = 0; u < kInFlight; ++u) p[u] = reinterpret_cast<const Pack<T, V>*>(in)[i + u * stride];
    if constexpr (kTwo) {
#pragma unroll
      for (unsigned u = 0; u < kInFlight; ++u) q[u] = reinterpret_cast<const Pack<U, V>*>(in2)[i + u * stride];
    }
    if constexpr (!kTwo && requires { fold[0].add_vector(f, op, std::size_t(0), p[0].v); }) {
#pragma unroll
      for (unsigned u = 0; u < kInFlight; ++u) fold[u % kFolds].add_vector(f, op, (i + u * stride) * V, p[u].v);
    } else {
#pragma unroll
      for (unsigned u = 0; u < kInFlight; ++u) {  // u outer: fold u % kFolds sees increasing indices
#pragma unroll
        for (unsigned k = 0; k < V; ++k) {
          if constexpr (kTwo) fold[u % kFolds].add(f, op, (i + u * stride) * V + k, p[u].v[k], q[u].v[k]);
          else fold[u % kFolds].add(f, op, (i + u * stride) * V + k, p[u].v[k]);
        }
      }
    }
  }
  // Fewer than kInFlight vectors left for this thread: loaded together (all in flight), each into
  // its own fold, still in increasing index order.
  {
    Pack<T, V> p[kInFlight - 1];
    Pack<U, V> q[kTwo ? kInFlight - 1 : 1];
#pragma unroll
    for (unsigned u = 0; u < kInFlight - 1; ++u) {
      if (i + u * stride < vectors) {
        p[u] = reinterpret_cast<const Pack<T, V>*>(in)[i + u * stride];
        if constexpr (kTwo) q[u] = reinterpret_cast<const Pack<U, V>*>(in2)[i + u * stride];
      }
    }
#pragma unroll
    for (unsigned u = 0; u < kInFlight - 1; ++u) {
      if (i + u * stride < vectors) {
        if constexpr (!kTwo && requires { fold[0].add_vector(f, op, std::size_t(0), p[0].v); }) {
          fold[u % kFolds].add_vector(f, op, (i + u * stride) * V, p[u].v);
        } else {
#pragma unroll
          for (unsigned k = 0; k < V; ++k) {
            if constexpr (kTwo) fold[u % kFolds].add(f, op, (i + u * stride) * V + k, p[u].v[k], q[u].v[k]);
            else fold[u % kFolds].add(f, op, (i + u * stride) * V + k, p[u].v[k]);
          }
        }
      }
    }
  }
  if constexpr (V > 1) {  // the last n % V elements, one per thread of the grid's first threads
    const std::size_t t = vectors * V + std::size_t(blockIdx.x) * Threads + threadIdx.x;
    if (t < n) {  // past every vector, so last in any fold's order
      if constexpr (kTwo) fold[kFolds - 1].add(f, op, t, in[t], in2[t]);
      else fold[kFolds - 1].add(f, op, t, in[t]);
    }
  }
  const auto c = [&](const P& a, const P& b) { return Fold::combine(op, a, b); };
  P mine = fold[0].partial(op);
#pragma unroll
  for (unsigned u = 1; u < kFolds; ++u) mine = c(mine, fold[u].partial(op));
  const P combined = block_combine<Threads>(mine, c, totals);
  if (threadIdx.x == 0) {
    const R acc = fold[0].finish(op, combined);
    if (gridDim.x == 1) *out = finish(acc);
    else partials[blockIdx.x] = acc;
  }
}

struct Plan {
  int device;             // the current device, which the plan is for
  unsigned grid;
  unsigned threads;       // 1024 for the one-block commutative pass, else kThreads
  std::size_t per_block;  // tiles per block (the ordered pass)
  bool vectors;
  bool any_order;
};

// The SMs of `device` times the blocks of `kernel` resident on one, and the SMs, asked once per
// kernel and device (a successful answer is kept; the query costs microseconds, a small reduction
// less).
template <auto Kernel, unsigned Threads = kThreads>
cudaError_t resident_blocks(int device, std::size_t& resident, std::size_t* sms_out = nullptr) {
  static std::atomic<unsigned long long> cache[64] = {};  // resident << 24 | SMs
  if (device >= 0 && device < 64) {
    if (const unsigned long long known = cache[device].load(std::memory_order_relaxed); known != 0) {
      resident = known >> 24;
      if (sms_out != nullptr) *sms_out = known & 0xFFFFFF;
      return cudaSuccess;
    }
  }
  int sms = 0, per_sm = 0;
  if (cudaError_t e = cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device); e != cudaSuccess) return e;
  if (cudaError_t e = cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, Kernel, Threads, 0); e != cudaSuccess) return e;
  sms = std::clamp(sms, 1, 0xFFFFFF);
  resident = std::size_t(sms) * std::size_t(std::max(per_sm, 1));
  if (sms_out != nullptr) *sms_out = std::size_t(sms);
  if (device >= 0 && device < 64) cache[device].store((resident << 24) | std::size_t(sms), std::memory_order_relaxed);
  return cudaSuccess;
}

// Whether `kernel` may be launched as a programmatic dependent launch on `device`: a Hopper GPU or
// later running code compiled for one (the kernel's wait instruction exists only there). Asked
// once per kernel and device.
template <auto Kernel>
bool dependent_launch(int device) {
  static std::atomic<int> cache[64] = {};  // 0 unknown, 1 no, 2 yes
  if (device >= 0 && device < 64) {
    if (const int known = cache[device].load(std::memory_order_relaxed); known != 0) return known == 2;
  }
  int major = 0;
  cudaFuncAttributes attributes{};
  const bool yes = cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device) == cudaSuccess &&
                   cudaFuncGetAttributes(&attributes, Kernel) == cudaSuccess && major >= 9 &&
                   std::min(attributes.ptxVersion, attributes.binaryVersion) >= 90;
  if (device >= 0 && device < 64) cache[device].store(yes ? 2 : 1, std::memory_order_relaxed);
  return yes;
}

inline bool aligned16(const void* p) { return reinterpret_cast<std::uintptr_t>(p) % 16 == 0; }

template <class T, class U>
inline constexpr unsigned kVec2 = std::is_same_v<U, NoInput> ? kVec<T> : (sizeof(T) == sizeof(U) ? kVec<T> : 1u);

template <class T, class U, class R, class Transform, class Op, class Finish, class O>
cudaError_t plan(const T* in, const U* in2, std::size_t n, Plan& p, int vectors = -1) {
  // vectors: -1 as the pointers' alignment allows, 0 or 1 to plan that way (the size query)
  int& device = p.device;
  if (cudaError_t e = cudaGetDevice(&device); e != cudaSuccess) return e;
  constexpr unsigned kV = kVec2<T, U>;
  p.vectors = kV > 1 && (vectors >= 0 ? vectors == 1
                                      : aligned16(in) && (std::is_same_v<U, NoInput> || aligned16(in2)));
  p.any_order = is_commutative<Op>::value;
  std::size_t resident = 1, sms = 1;
  p.threads = kThreads;
  if (p.any_order) {
    // Up to 256 KB read, one block of 1024 threads does it all (one kernel: a second launch costs
    // more than the block's reading).
    constexpr std::size_t kElementBytes = sizeof(T) + (std::is_same_v<U, NoInput> ? 0 : sizeof(U));
    if (n * kElementBytes <= (std::size_t(256) << 10)) {
      p.grid = 1;
      p.threads = 1024;
      p.per_block = 0;
      return cudaSuccess;
    }
    const cudaError_t e =
        p.vectors ? resident_blocks<any_order_kernel<kThreads, kV, T, U, R, Transform, Op, Finish, O>>(device, resident, &sms)
                  : resident_blocks<any_order_kernel<kThreads, 1, T, U, R, Transform, Op, Finish, O>>(device, resident, &sms);
    if (e != cudaSuccess) return e;
    // A round is kInFlight loads a thread. Eight rounds a thread where the data allow (the block's
    // final combine and the partials are paid fewer times), but four blocks an SM (enough loads
    // in flight) while each thread has a round.
    const std::size_t round = std::size_t(kThreads) * kInFlight * (p.vectors ? kV : 1);
    const std::size_t rounds = (n + round - 1) / round;
    const std::size_t wanted = std::max((rounds + 7) / 8, std::min(4 * sms, rounds));
    p.grid = static_cast<unsigned>(std::clamp<std::size_t>(wanted, 1, resident));
    p.per_block = 0;
    return cudaSuccess;
  }
  if constexpr (std::is_same_v<U, NoInput>) {
    const cudaError_t e = p.vectors ? resident_blocks<tiles_kernel<kV, T, R, Transform, Op, Finish, O>>(device, resident)
                                    : resident_blocks<tiles_kernel<1, T, R, Transform, Op, Finish, O>>(device, resident);
    if (e != cudaSuccess) return e;
    const std::size_t tile = std::size_t(kThreads) * kRound * (p.vectors ? kV : 1);
    const std::size_t tiles = (n + tile - 1) / tile;
    // At least 2 tiles a block where there are enough; at most the resident blocks (no block waits
    // for another, and the GPU stays shareable).
    const std::size_t grid = std::clamp<std::size_t>(std::min(resident, (tiles + 1) / 2), 1, resident);
    p.per_block = std::max<std::size_t>((tiles + grid - 1) / grid, 1);
    p.grid = static_cast<unsigned>(std::max<std::size_t>((tiles + p.per_block - 1) / p.per_block, 1));
    return cudaSuccess;
  } else {
    return cudaErrorInvalidValue;  // unreachable: two-input reductions need a commutative op (static_assert)
  }
}

// The whole-array reduction: plan, check, launch (see transform_reduce_async).
template <class T, class U, class R, class Transform, class Op, class Finish, class O>
cudaError_t launch(void* d_temp, std::size_t& temp_bytes, const T* d_in, const U* d_in2, std::size_t n, O* d_out,
                   const Transform& f, const Op& op, const Finish& finish, cudaStream_t stream) {
  static_assert(std::is_same_v<U, NoInput> || is_commutative<Op>::value,
                "a reduction of two inputs needs a commutative op (static constexpr bool commutative = true)");
  Plan p{};
  if (cudaError_t e = plan<T, U, R, Transform, Op, Finish, O>(d_in, d_in2, n, p); e != cudaSuccess) return e;
  const std::size_t needed = std::max<std::size_t>(std::size_t(p.grid) * sizeof(R), 16);
  if (d_temp == nullptr) {
    // Enough for this n at any alignment (CUB's contract: the size query's pointers need not be
    // the ones reduced): the larger of the vector and the element-wise plans.
    temp_bytes = needed;
    for (int vectors : {0, 1}) {
      Plan q{};
      if (cudaError_t e = plan<T, U, R, Transform, Op, Finish, O>(d_in, d_in2, n, q, vectors); e != cudaSuccess) return e;
      temp_bytes = std::max(temp_bytes, std::size_t(q.grid) * sizeof(R));
    }
    return cudaSuccess;
  }
  if ((d_in == nullptr && n > 0) || (!std::is_same_v<U, NoInput> && d_in2 == nullptr && n > 0) || d_out == nullptr ||
      temp_bytes < needed) {
    return cudaErrorInvalidValue;
  }
  constexpr unsigned kV = kVec2<T, U>;
  R* partials = static_cast<R*>(d_temp);
  if (p.any_order && p.threads == 1024) {
    if (p.vectors) {
      any_order_kernel<1024, kV, T, U, R, Transform, Op, Finish, O>
          <<<1, 1024, 0, stream>>>(d_in, d_in2, n, f, op, finish, partials, d_out);
    } else {
      any_order_kernel<1024, 1, T, U, R, Transform, Op, Finish, O>
          <<<1, 1024, 0, stream>>>(d_in, d_in2, n, f, op, finish, partials, d_out);
    }
  } else if (p.any_order) {
    if (p.vectors) {
      any_order_kernel<kThreads, kV, T, U, R, Transform, Op, Finish, O>
          <<<p.grid, kThreads, 0, stream>>>(d_in, d_in2, n, f, op, finish, partials, d_out);
    } else {
      any_order_kernel<kThreads, 1, T, U, R, Transform, Op, Finish, O>
          <<<p.grid, kThreads, 0, stream>>>(d_in, d_in2, n, f, op, finish, partials, d_out);
    }
  } else if constexpr (std::is_same_v<U, NoInput>) {
    if (p.vectors) {
      tiles_kernel<kV, T, R, Transform, Op, Finish, O>
          <<<p.grid, kThreads, 0, stream>>>(d_in, n, p.per_block, f, op, finish, partials, d_out);
    } else {
      tiles_kernel<1, T, R, Transform, Op, Finish, O>
          <<<p.grid, kThreads, 0, stream>>>(d_in, n, p.per_block, f, op, finish, partials, d_out);
    }
  }
  if (cudaError_t e = cudaPeekAtLastError(); e != cudaSuccess) return e;
  if (p.grid > 1) {
    // The one-block combine of the partials, on sm_90 as a programmatic dependent launch: the GPU
    // prepares it while the main grid runs.
    constexpr auto combine = partials_kernel<R, Op, Finish, O>;
    cudaLaunchConfig_t config{};
    config.gridDim = dim3(1);
    config.blockDim = dim3(kThreads);
    config.stream = stream;
    cudaLaunchAttribute attribute{};
    attribute.id = cudaLaunchAttributeProgrammaticStreamSerialization;
    attribute.val.programmaticStreamSerializationAllowed = 1;
    if (dependent_launch<combine>(p.device)) {
      config.attrs = &attribute;
      config.numAttrs = 1;
    }
    if (cudaError_t e = cudaLaunchKernelEx(&config, combine, static_cast<const R*>(partials), p.grid, op, finish, d_out);
        e != cudaSuccess) {
      return e;
    }
  }
  return cudaSuccess;
}

// Blocking form of an _async call `enqueue(temp, bytes, d_out)`: stream-ordered storage, the
// result copied back, fastreduce::Error naming `what` on failure.
template <class O, class Enqueue>
O run_blocking(const Enqueue& enqueue, cudaStream_t stream, const char* what) {
  std::size_t bytes = 0;
  check(enqueue(nullptr, bytes, static_cast<O*>(nullptr)), what);
  void* temp = nullptr;
  check(cudaMallocAsync(&temp, bytes + sizeof(O) + 16, stream), what);
  O* d_out = reinterpret_cast<O*>(static_cast<char*>(temp) + (bytes + 15) / 16 * 16);
  const cudaError_t launched = enqueue(temp, bytes, d_out);
  O result{};
  const cudaError_t copied =
      launched == cudaSuccess ? cudaMemcpyAsync(&result, d_out, sizeof(O), cudaMemcpyDeviceToHost, stream) : cudaSuccess;
  const cudaError_t freed = cudaFreeAsync(temp, stream);
  const cudaError_t synced = cudaStreamSynchronize(stream);
  for (const cudaError_t e : {launched, copied, freed, synced}) check(e, what);
  return result;
}

}  // namespace generic

namespace generic {
template <class T, class Transform>
struct transform_result {
  using type = std::remove_cvref_t<std::invoke_result_t<const Transform&, const T&>>;
};
template <class T, class Transform>
  requires std::is_invocable_v<const Transform&, const T&, std::size_t>
struct transform_result<T, Transform> {
  using type = std::remove_cvref_t<std::invoke_result_t<const Transform&, const T&, std::size_t>>;
};
template <class T, class U, class Transform>
struct transform_result2 {
  using type = std::remove_cvref_t<std::invoke_result_t<const Transform&, const T&, const U&>>;
};
template <class T, class U, class Transform>
  requires std::is_invocable_v<const Transform&, const T&, const U&, std::size_t>
struct transform_result2<T, U, Transform> {
  using type = std::remove_cvref_t<std::invoke_result_t<const Transform&, const T&, const U&, std::size_t>>;
};
}  // namespace generic

// The type transform_reduce returns: what the transform makes of an element (a transform may
// take the element's index as a last argument, std::size_t).
template <class T, class Transform>
using transform_result_t = typename generic::transform_result<T, Transform>::type;
template <class T, class U, class Transform>
using transform_result2_t = typename generic::transform_result2<T, U, Transform>::type;

// Enqueues *d_out = op over i < n of transform(d_in[i]) (n = 0 writes the identity). CUB's
// two-phase contract: with d_temp == nullptr only temp_bytes is set (never 0). Errors:
// cudaErrorInvalidValue (d_in null with n > 0, d_out null, temp_bytes too small), and the
// launch's. d_in may have any alignment.
template <class T, class Transform, class Op, class R = transform_result_t<T, Transform>>
  requires std::is_trivially_copyable_v<T> && std::is_trivially_copyable_v<R> &&
           (generic::static_identity<Op, R> || generic::member_identity<Op, R>)
cudaError_t transform_reduce_async(void* d_temp, std::size_t& temp_bytes, const T* d_in, std::size_t n, R* d_out,
                                   Transform transform, Op op, cudaStream_t stream = 0) {
  return generic::launch<T, generic::NoInput, R>(d_temp, temp_bytes, d_in, static_cast<const generic::NoInput*>(nullptr),
                                                 n, d_out, transform, op, generic::AsIs{}, stream);
}

// Two inputs: *d_out = op over i < n of transform(x[i], y[i]) (a dot product is
// transform_reduce(x, y, n, Multiply{}, Sum{})). The op must be commutative. Contract and errors as
// the one-input form; x and y may have any alignment (16-byte vectors when both are aligned).
template <class T, class U, class Transform, class Op, class R = transform_result2_t<T, U, Transform>>
  requires std::is_trivially_copyable_v<T> && std::is_trivially_copyable_v<U> && std::is_trivially_copyable_v<R> &&
           (generic::static_identity<Op, R> || generic::member_identity<Op, R>)
cudaError_t transform_reduce_async(void* d_temp, std::size_t& temp_bytes, const T* d_x, const U* d_y, std::size_t n,
                                   R* d_out, Transform transform, Op op, cudaStream_t stream = 0) {
  return generic::launch<T, U, R>(d_temp, temp_bytes, d_x, d_y, n, d_out, transform, op, generic::AsIs{}, stream);
}

// Blocking: allocates its storage on `stream` (stream-ordered), reduces and returns the result.
// Throws fastreduce::Error naming the failing call.
template <class T, class Transform, class Op, class R = transform_result_t<T, Transform>>
  requires std::is_trivially_copyable_v<T> && std::is_trivially_copyable_v<R> &&
           (generic::static_identity<Op, R> || generic::member_identity<Op, R>)
R transform_reduce(const T* d_in, std::size_t n, Transform transform, Op op, cudaStream_t stream = 0) {
  return generic::run_blocking<R>(
      [&](void* temp, std::size_t& bytes, R* out) {
        return transform_reduce_async(temp, bytes, d_in, n, out, transform, op, stream);
      },
      stream, "fastreduce::transform_reduce");
}
template <class T, class U, class Transform, class Op, class R = transform_result2_t<T, U, Transform>>
  requires std::is_trivially_copyable_v<T> && std::is_trivially_copyable_v<U> && std::is_trivially_copyable_v<R> &&
           (generic::static_identity<Op, R> || generic::member_identity<Op, R>)
R transform_reduce(const T* d_x, const U* d_y, std::size_t n, Transform transform, Op op, cudaStream_t stream = 0) {
  return generic::run_blocking<R>(
      [&](void* temp, std::size_t& bytes, R* out) {
        return transform_reduce_async(temp, bytes, d_x, d_y, n, out, transform, op, stream);
      },
      stream, "fastreduce::transform_reduce");
}
// ---------------------------------------------------------------------------------------------
// Axis and segmented forms: one result per row, column or segment (struct Axis, fastreduce/axis.hpp;
// segments as CUB's, device arrays of begin and end offsets). An index-aware transform receives
// the element's index within its row or segment, so ArgMax gives the position along the axis.

namespace generic {

// Output o's elements: in[base + k * step] for k < length.
struct AxisLayout {
  std::size_t length, inner;
  std::int64_t outer_stride, length_stride, inner_stride;
  __device__ __forceinline__ void at(std::size_t o, std::int64_t& base, std::size_t& len, std::int64_t& step) const {
    const std::size_t oo = o / inner, ii = o % inner;
    base = static_cast<std::int64_t>(oo) * outer_stride + static_cast<std::int64_t>(ii) * inner_stride;
    len = length;
    step = length_stride;
  }
};
template <class Offset>
struct SegmentLayout {
  const Offset* begin;
  const Offset* end;
  __device__ __forceinline__ void at(std::size_t o, std::int64_t& base, std::size_t& len, std::int64_t& step) const {
    const Offset b = begin[o], e = end[o];
    base = static_cast<std::int64_t>(b);
    len = e > b ? static_cast<std::size_t>(e - b) : 0;
    step = 1;
  }
};

// Groups of G threads (1, a warp or the block) each reduce one output at a time. A thread of a
// group takes every G-th element for a commutative op, a contiguous run of the row otherwise (the
// group's threads then meet in order), so the op's operands always meet in index order.
template <unsigned G, class T, class R, class Layout, class Transform, class Op, class Finish, class O>
__global__ void __launch_bounds__(kThreads) groups_kernel(const T* in, Layout layout, std::size_t outputs, Transform f,
                                                          Op op, Finish finish, O* out) {
  static_assert(G == 1 || G == 32 || G == kThreads);
  using Fold = ThreadFold<R, Transform, Op>;
  using P = typename Fold::Partial;
  __shared__ RoundTotals<P> totals;
  constexpr unsigned kGroups = kThreads / G;
  const unsigned g = threadIdx.x / G, r = threadIdx.x % G, lane = threadIdx.x % 32;
  for (std::size_t o = std::size_t(blockIdx.x) * kGroups + g; o < outputs; o += std::size_t(gridDim.x) * kGroups) {
    std::int64_t base = 0, step = 0;
    std::size_t len = 0;
    layout.at(o, base, len, step);
    const T* row = in + base;
    Fold fold(op);
    fold.start(len > 0 ? row : static_cast<const T*>(nullptr));
    if constexpr (G == 1) {
      for (std::size_t k = 0; k < len; ++k) fold.add(f, op, k, row[static_cast<std::int64_t>(k) * step]);
    } else if constexpr (is_commutative<Op>::value) {
      for (std::size_t k = r; k < len; k += G) fold.add(f, op, k, row[static_cast<std::int64_t>(k) * step]);
    } else {
      const std::size_t chunk = (len + G - 1) / G;
      const std::size_t k0 = r * chunk < len ? r * chunk : len, k1 = k0 + chunk < len ? k0 + chunk : len;
      for (std::size_t k = k0; k < k1; ++k) fold.add(f, op, k, row[static_cast<std::int64_t>(k) * step]);
    }
    P v = fold.partial(op);
    const auto c = [&](const P& a, const P& b) { return Fold::combine(op, a, b); };
    if constexpr (G == 32) v = warp_ordered(v, c, lane);
    if constexpr (G == kThreads) v = block_combine<kThreads>(v, c, totals);
    if (r == 0) out[o] = finish(fold.finish(op, v));
  }
}

// Checks the shape and fills in the contiguous strides: nullptr, or what is wrong.
inline const char* resolve(const Axis& axis, AxisLayout& layout, std::size_t& outputs) {
  using u128 = unsigned __int128;
  using i128 = __int128;
  const u128 count = u128(axis.outer) * axis.inner;
  if (count > u128(INT64_MAX) || count * axis.length > u128(INT64_MAX)) return "outer * length * inner overflows";
  outputs = static_cast<std::size_t>(count);
  layout.length = axis.length;
  layout.inner = axis.inner;
  layout.inner_stride = axis.inner_stride == Axis::kContiguous ? 1 : axis.inner_stride;
  layout.length_stride = axis.length_stride == Axis::kContiguous ? static_cast<std::int64_t>(axis.inner) : axis.length_stride;
  layout.outer_stride = axis.outer_stride == Axis::kContiguous ? static_cast<std::int64_t>(axis.inner * axis.length)
                                                               : axis.outer_stride;
  if (outputs == 0 || axis.length == 0) return nullptr;
  const std::size_t extents[3] = {axis.outer, axis.length, axis.inner};
  const std::int64_t strides[3] = {layout.outer_stride, layout.length_stride, layout.inner_stride};
  i128 reach = 0;
  for (int d = 0; d < 3; ++d) reach += (strides[d] < 0 ? -i128(strides[d]) : i128(strides[d])) * i128(extents[d] - 1);
  if (reach > i128(INT64_MAX / 16)) return "a stride puts elements out of reach";
  return nullptr;
}

// Launches groups of G threads over `outputs` results, as many blocks as fit the GPU at once.
template <unsigned G, class T, class R, class Layout, class Transform, class Op, class Finish, class O>
cudaError_t launch_groups(const T* in, const Layout& layout, std::size_t outputs, const Transform& f, const Op& op,
                          const Finish& finish, O* out, cudaStream_t stream) {
  int device = 0;
  if (cudaError_t e = cudaGetDevice(&device); e != cudaSuccess) return e;
  std::size_t resident = 1;
  constexpr auto kernel = groups_kernel<G, T, R, Layout, Transform, Op, Finish, O>;
  if (cudaError_t e = resident_blocks<kernel>(device, resident); e != cudaSuccess) return e;
  constexpr unsigned kGroups = kThreads / G;
  const auto grid = static_cast<unsigned>(std::clamp<std::size_t>((outputs + kGroups - 1) / kGroups, 1, resident));
  kernel<<<grid, kThreads, 0, stream>>>(in, layout, outputs, f, op, finish, out);
  return cudaPeekAtLastError();
}

// Blocks for long rows where there are few of them, warps otherwise; a thread per output where the
// outputs are adjacent in memory (column reductions) and there are enough of them.
template <class T, class R, class Transform, class Op, class Finish, class O>
cudaError_t launch_axis(void* d_temp, std::size_t& temp_bytes, const T* d_in, O* d_out, const Axis& axis,
                        const Transform& f, const Op& op, const Finish& finish, cudaStream_t stream) {
  AxisLayout layout{};
  std::size_t outputs = 0;
  if (resolve(axis, layout, outputs) != nullptr) return cudaErrorInvalidValue;
  if (d_temp == nullptr) {
    temp_bytes = 16;
    return cudaSuccess;
  }
  if (temp_bytes < 16 || (d_out == nullptr && outputs > 0) || (d_in == nullptr && outputs > 0 && axis.length > 0)) {
    return cudaErrorInvalidValue;
  }
  if (outputs == 0) return cudaSuccess;
  if (axis.inner >= 32 && (layout.inner_stride == 1 || layout.inner_stride == -1) && outputs >= 8192) {
    return launch_groups<1, T, R>(d_in, layout, outputs, f, op, finish, d_out, stream);
  }
  if (axis.length >= 8192 && outputs <= 4096) {
    return launch_groups<kThreads, T, R>(d_in, layout, outputs, f, op, finish, d_out, stream);
  }
  return launch_groups<32, T, R>(d_in, layout, outputs, f, op, finish, d_out, stream);
}

template <class T, class R, class Offset, class Transform, class Op, class Finish, class O>
cudaError_t launch_segments(void* d_temp, std::size_t& temp_bytes, const T* d_in, O* d_out, std::size_t segments,
                            const Offset* d_begin, const Offset* d_end, const Transform& f, const Op& op,
                            const Finish& finish, cudaStream_t stream) {
  if (d_temp == nullptr) {
    temp_bytes = 16;
    return cudaSuccess;
  }
  if (temp_bytes < 16 || (segments > 0 && (d_out == nullptr || d_begin == nullptr || d_end == nullptr))) {
    return cudaErrorInvalidValue;
  }
  if (segments == 0) return cudaSuccess;
  const SegmentLayout<Offset> layout{d_begin, d_end};
  // The lengths are device data: a block a segment for a few segments (each may be long), else warps.
  if (segments <= 1024) return launch_groups<kThreads, T, R>(d_in, layout, segments, f, op, finish, d_out, stream);
  return launch_groups<32, T, R>(d_in, layout, segments, f, op, finish, d_out, stream);
}

}  // namespace generic

// Enqueues out[o] = op over k < axis.length of transform(element k of output o) for the
// outer * inner outputs of `axis` (length 0 writes the identity; no output writes nothing).
// Two-phase contract as transform_reduce_async; cudaErrorInvalidValue for a shape whose element
// count or offsets overflow, or a null pointer where there is something to read or write.
template <class T, class Transform, class Op, class R = transform_result_t<T, Transform>>
  requires std::is_trivially_copyable_v<T> && std::is_trivially_copyable_v<R> &&
           (generic::static_identity<Op, R> || generic::member_identity<Op, R>)
cudaError_t transform_reduce_axis_async(void* d_temp, std::size_t& temp_bytes, const T* d_in, R* d_out,
                                        const Axis& axis, Transform transform, Op op, cudaStream_t stream = 0) {
  return generic::launch_axis<T, R>(d_temp, temp_bytes, d_in, d_out, axis, transform, op, generic::AsIs{}, stream);
}

// Enqueues out[s] = op over d_in[d_begin[s], d_end[s]) (an end at or before its begin: the
// identity). Offsets are device data of any integer type, not checked against the input, nor is a
// null d_in (allowed when every segment is empty), as CUB and reduce_segments_async.
template <class T, class Offset, class Transform, class Op, class R = transform_result_t<T, Transform>>
  requires std::is_trivially_copyable_v<T> && std::is_trivially_copyable_v<R> && std::is_integral_v<Offset> &&
           (generic::static_identity<Op, R> || generic::member_identity<Op, R>)
cudaError_t transform_reduce_segments_async(void* d_temp, std::size_t& temp_bytes, const T* d_in, R* d_out,
                                            std::size_t num_segments, const Offset* d_begin, const Offset* d_end,
                                            Transform transform, Op op, cudaStream_t stream = 0) {
  return generic::launch_segments<T, R>(d_temp, temp_bytes, d_in, d_out, num_segments, d_begin, d_end, transform, op,
                                        generic::AsIs{}, stream);
}

// Reduction with an op alone (the identity transform).
template <class T, class Op>
  requires std::is_trivially_copyable_v<T> && (generic::static_identity<Op, T> || generic::member_identity<Op, T>)
T reduce_generic(const T* d_in, std::size_t n, Op op, cudaStream_t stream = 0) {
  return transform_reduce(d_in, n, Identity{}, op, stream);
}

// ---------------------------------------------------------------------------------------------
// Arg-extremes: the value and the index of the maximum (minimum) element. The first index wins
// on ties; NaN counts as the extreme and the first NaN's index is returned, as NumPy and
// PyTorch do. Indices are 64-bit: right beyond 2^32 elements.

template <class V>
struct Indexed {
  V value;
  std::int64_t index;
};

namespace generic {
template <class V>
__host__ __device__ constexpr bool nan_value(const V& v) {
  if constexpr (std::is_integral_v<V>) return false;
  else return !(v == v);
}
template <class V, bool Greater>
__host__ __device__ constexpr bool wins(const Indexed<V>& b, const Indexed<V>& a) {  // does b replace a?
  const bool an = nan_value(a.value), bn = nan_value(b.value);
  if (an || bn) return bn && (!an || b.index < a.index);
  if (Greater ? b.value > a.value : b.value < a.value) return true;
  return b.value == a.value && b.index < a.index;
}
struct WithIndex {
  template <class T>
  __host__ __device__ Indexed<T> operator()(const T& x, std::size_t i) const {
    return {x, static_cast<std::int64_t>(i)};
  }
};
}  // namespace generic

struct ArgMax {
  static constexpr bool commutative = true;  // ties go to the lower index, whatever the order
  template <class R>  // R = Indexed<V>; the identity loses to every element (index past any)
  __host__ __device__ static R identity() {
    using V = decltype(R::value);
    if constexpr (std::is_floating_point_v<V>) return {-detail::infinity<V>(), INT64_MAX};
    else return {detail::lowest_value<V>(), INT64_MAX};
  }
  template <class V>
  __host__ __device__ Indexed<V> operator()(const Indexed<V>& a, const Indexed<V>& b) const {
    return generic::wins<V, true>(b, a) ? b : a;
  }
};

struct ArgMin {
  static constexpr bool commutative = true;
  template <class R>
  __host__ __device__ static R identity() {
    using V = decltype(R::value);
    if constexpr (std::is_floating_point_v<V>) return {detail::infinity<V>(), INT64_MAX};
    else return {detail::max_value<V>(), INT64_MAX};
  }
  template <class V>
  __host__ __device__ Indexed<V> operator()(const Indexed<V>& a, const Indexed<V>& b) const {
    return generic::wins<V, false>(b, a) ? b : a;
  }
};

namespace generic {
// The extreme of a and b, NaN if either is (a single instruction for float on sm_80 and later).
template <class V, bool Greater>
__device__ __forceinline__ V extreme_nan(V a, V b) {
  if constexpr (std::is_integral_v<V>) {
    return Greater ? (b > a ? b : a) : (b < a ? b : a);
  } else {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
    if constexpr (std::is_same_v<V, float>) {
      float r;
      if constexpr (Greater) asm("max.NaN.f32 %0, %1, %2;" : "=f"(r) : "f"(a), "f"(b));
      else asm("min.NaN.f32 %0, %1, %2;" : "=f"(r) : "f"(a), "f"(b));
      return r;
    }
#endif
    return (a != a || (Greater ? a > b : a < b)) ? a : b;
  }
}

// A thread's arg-extreme over its elements, which come in increasing index order: a later element
// replaces the best only when it is strictly better or the first NaN, so no index comparison.
// Whole 16-byte vectors take a cheaper way, with no index work and no branch: the vector's
// extreme decides, and the best vector is kept whole with its position; which of its elements
// is the extreme is looked up once, at the end.
template <class V, bool Greater, unsigned K>
struct ArgFold {
  V best{};
  std::int64_t index = -1;  // none yet (the elements taken one by one)
  V vbest{};
  static constexpr unsigned kWords = (sizeof(V) * K + 3) / 4;
  unsigned vkept[kWords] = {};  // the best vector's bytes (16 bytes as 4 words, whatever V is)
  std::int64_t vector = -1;     // none yet (the best vector: elements [vector K, vector K + K))
  __device__ __forceinline__ static bool beats(const V& x, const V& than) {  // strictly, or x NaN
    return (Greater ? !(x <= than) : !(x >= than)) && !nan_value(than);
  }
  __device__ __forceinline__ void take(std::size_t i, const V& x) {
    if (index < 0 || beats(x, best)) {
      best = x;
      index = static_cast<std::int64_t>(i);
    }
  }
  __device__ __forceinline__ void take_vector(std::size_t first, const V (&x)[K]) {
    V m = x[0];
#pragma unroll
    for (unsigned k = 1; k < K; ++k) m = extreme_nan<V, Greater>(m, x[k]);
    const bool better = vector < 0 || beats(m, vbest);
    vbest = better ? m : vbest;
    unsigned words[kWords];
    std::memcpy(words, x, sizeof(V) * K);
#pragma unroll
    for (unsigned w = 0; w < kWords; ++w) vkept[w] = better ? words[w] : vkept[w];
    vector = better ? static_cast<std::int64_t>(first / K) : vector;
  }
  template <class Op>
  __device__ __forceinline__ Indexed<V> value() const {
    Indexed<V> r = index < 0 ? Op::template identity<Indexed<V>>() : Indexed<V>{best, index};
    if (vector >= 0) {  // the first element of the best vector that is its extreme (or NaN)
      V x[K];
      std::memcpy(x, vkept, sizeof(V) * K);
      unsigned at = K - 1;
#pragma unroll
      for (int k = int(K) - 1; k >= 0; --k) {
        if (nan_value(vbest) ? nan_value(x[k]) : x[k] == vbest) at = unsigned(k);
      }
      r = Op{}(r, Indexed<V>{x[at], vector * std::int64_t(K) + std::int64_t(at)});
    }
    return r;
  }
};

template <class V, class Op, bool Greater>
struct ArgThreadFold : ArgFold<V, Greater, kVec<V>> {
  using Partial = Indexed<V>;
  __device__ explicit ArgThreadFold(const Op&) {}
  template <class T>
  __device__ __forceinline__ void start(const T*) {}
  __device__ __forceinline__ void add(const WithIndex&, const Op&, std::size_t i, const V& x) { this->take(i, x); }
  __device__ __forceinline__ void add_vector(const WithIndex&, const Op&, std::size_t first, const V (&x)[kVec<V>]) {
    this->take_vector(first, x);
  }
  __device__ __forceinline__ Partial partial(const Op&) const { return this->template value<Op>(); }
  __device__ __forceinline__ static Partial combine(const Op& op, const Partial& a, const Partial& b) { return op(a, b); }
  __device__ __forceinline__ Partial finish(const Op&, const Partial& p) const { return p; }
};
template <class V>
struct ThreadFold<Indexed<V>, WithIndex, ArgMax> : ArgThreadFold<V, ArgMax, true> {
  using ArgThreadFold<V, ArgMax, true>::ArgThreadFold;
};
template <class V>
struct ThreadFold<Indexed<V>, WithIndex, ArgMin> : ArgThreadFold<V, ArgMin, false> {
  using ArgThreadFold<V, ArgMin, false>::ArgThreadFold;
};
}  // namespace generic

// Enqueues *d_out = {max, its first index} of d_in[0, n) (n = 0 writes {lowest, INT64_MAX}).
// Two-phase contract as transform_reduce_async. For the arithmetic types (float, double,
// integers).
template <class T>
  requires std::is_arithmetic_v<T>
cudaError_t argmax_async(void* d_temp, std::size_t& temp_bytes, const T* d_in, std::size_t n, Indexed<T>* d_out,
                         cudaStream_t stream = 0) {
  return transform_reduce_async(d_temp, temp_bytes, d_in, n, d_out, generic::WithIndex{}, ArgMax{}, stream);
}
template <class T>
  requires std::is_arithmetic_v<T>
cudaError_t argmin_async(void* d_temp, std::size_t& temp_bytes, const T* d_in, std::size_t n, Indexed<T>* d_out,
                         cudaStream_t stream = 0) {
  return transform_reduce_async(d_temp, temp_bytes, d_in, n, d_out, generic::WithIndex{}, ArgMin{}, stream);
}
// Blocking forms (allocating on `stream`, as transform_reduce).
template <class T>
  requires std::is_arithmetic_v<T>
Indexed<T> argmax(const T* d_in, std::size_t n, cudaStream_t stream = 0) {
  return transform_reduce(d_in, n, generic::WithIndex{}, ArgMax{}, stream);
}
template <class T>
  requires std::is_arithmetic_v<T>
Indexed<T> argmin(const T* d_in, std::size_t n, cudaStream_t stream = 0) {
  return transform_reduce(d_in, n, generic::WithIndex{}, ArgMin{}, stream);
}

}  // namespace fastreduce

namespace fastreduce {

// ArgMax and ArgMin through the library's entry points: reduce, reduce_async, reduce_axis_async
// and reduce_segments_async take them as they take Sum (defined here, header-only). Along an axis
// or in a segment, the index is the position within the row or segment.
template <class Op>
concept arg_op = std::is_same_v<Op, ArgMax> || std::is_same_v<Op, ArgMin>;

template <class T, class Op>
  requires std::is_arithmetic_v<T> && arg_op<Op>
cudaError_t reduce_async(void* d_temp, std::size_t& temp_bytes, const T* d_in, Indexed<T>* d_out, std::size_t n, Op op,
                         cudaStream_t stream = 0) {
  return transform_reduce_async(d_temp, temp_bytes, d_in, n, d_out, generic::WithIndex{}, op, stream);
}
template <class T, class Op>
  requires std::is_arithmetic_v<T> && arg_op<Op>
Indexed<T> reduce(const T* d_in, std::size_t n, Op op, cudaStream_t stream = 0) {
  return transform_reduce(d_in, n, generic::WithIndex{}, op, stream);
}
template <class T, class Op>
  requires std::is_arithmetic_v<T> && arg_op<Op>
cudaError_t reduce_axis_async(void* d_temp, std::size_t& temp_bytes, const T* d_in, Indexed<T>* d_out, const Axis& axis,
                              Op op, cudaStream_t stream = 0) {
  return transform_reduce_axis_async(d_temp, temp_bytes, d_in, d_out, axis, generic::WithIndex{}, op, stream);
}
template <class T, class Op, class Offset>
  requires std::is_arithmetic_v<T> && arg_op<Op> && std::is_integral_v<Offset>
cudaError_t reduce_segments_async(void* d_temp, std::size_t& temp_bytes, const T* d_in, Indexed<T>* d_out,
                                  std::size_t num_segments, const Offset* d_begin, const Offset* d_end, Op op,
                                  cudaStream_t stream = 0) {
  return transform_reduce_segments_async(d_temp, temp_bytes, d_in, d_out, num_segments, d_begin, d_end,
                                         generic::WithIndex{}, op, stream);
}

}  // namespace fastreduce
