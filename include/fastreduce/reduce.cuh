// fastreduce/reduce.cuh: header-only reductions with users' own operators and transforms, for
// any trivially copyable element type. Include it in a .cu file compiled by nvcc; nothing to link
// but the CUDA runtime. (The library's precompiled fastreduce::reduce keeps serving the built-in
// types and ops with no compile time for its users.)
//
//   struct Square { __host__ __device__ float operator()(float x) const { return x * x; } };
//   float s = fastreduce::transform_reduce(d_in, n, Square{}, fastreduce::Sum{});
//   fastreduce::transform_reduce_async(d_temp, temp_bytes, d_in, n, d_out, transform, op, stream);
//
// What an op must satisfy. With R the transform's result type:
//   - op(R, R) -> R, callable on the device, and associative: op(a, op(b, c)) == op(op(a, b), c)
//     (for floating-point sums this holds up to rounding, so the grouping changes the last bits);
//   - an identity e with op(e, x) == op(x, e) == x: either a static member template
//     `identity<R>()` (as fastreduce::Sum, Prod, Min, Max have) or a member function `identity()`;
//   - commutativity is NOT required: unless the op declares `static constexpr bool commutative =
//     true` (the built-in ops and ArgMax/ArgMin do), the operands always meet in index order,
//       result = op(...op(op(e, f(x[0])), f(x[1]))..., f(x[n-1])) up to associativity,
//     so a non-commutative op (composing affine maps, concatenating ranges) gets the index-order
//     result, only bracketed differently.
// Transforms and ops are functors of namespace scope (CUDA does not instantiate kernels on types
// local to a function) or, with nvcc --extended-lambda, __device__ lambdas.
// Determinism: the bracketing depends on n, the element size, whether d_in is 16-byte aligned and
// the grid (the GPU's SM count and occupancy), never on timing: the same call on the same GPU
// model gives the same bits every time.
//
// A commutative op takes a faster pass: each thread accumulates a grid-stride run of 16-byte
// vectors, the block combines its threads once, one more block combines the blocks.
// The ordered pass: each block takes a contiguous run of tiles (a tile is 4 sub-tiles of 256 threads x 16
// bytes, or of 256 elements when the input is misaligned or its type does not divide 16 bytes);
// a thread combines its elements of a sub-tile in order, the block combines the threads' values in
// order (ordered warp shuffles, then the warps in order), tile after tile; one more block combines
// the blocks' partials in order. Two kernels on `stream`, no allocation, no synchronisation.
#pragma once

#include <cuda_runtime.h>

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <type_traits>
#include <utility>

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

// f(x), or f(x, i) for a transform that takes the element's index too.
template <class Transform, class T>
__host__ __device__ __forceinline__ auto apply(const Transform& f, const T& x, std::size_t i) {
  if constexpr (std::is_invocable_v<const Transform&, const T&, std::size_t>) return f(x, i);
  else return f(x);
}

// Elements per thread per sub-tile: 16-byte vectors of types that divide 16 bytes, else one.
template <class T>
inline constexpr unsigned kVec = (sizeof(T) <= 16 && 16 % sizeof(T) == 0) ? unsigned(16 / sizeof(T)) : 1u;

template <class T, unsigned V>
struct alignas(V * sizeof(T) >= 16 ? 16 : alignof(T)) Pack {
  T v[V];
};

// A tile is kRound sub-tiles of 256 threads x V elements; thread t takes elements [t V, t V + V) of
// each (V > 1 only for a 16-byte aligned input). Block b combines tiles [b * per_block,
// (b + 1) * per_block) into partials[b], or into *out for a grid of one block.
template <unsigned V, class T, class R, class Transform, class Op>
__global__ void __launch_bounds__(kThreads) tiles_kernel(const T* in, std::size_t n, std::size_t per_block,
                                                         Transform f, Op op, R* partials, R* out) {
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
          for (unsigned i = 0; i < V; ++i) v[u] = op(v[u], static_cast<R>(apply(f, p.v[i], base + i)));
        } else {
          for (unsigned i = 0; i < V && base + i < n; ++i) v[u] = op(v[u], static_cast<R>(apply(f, in[base + i], base + i)));
        }
      } else {
        if (base < n) v[u] = static_cast<R>(apply(f, in[base], base));
      }
    }
    acc = block_round(acc, v, op, totals);
  }
  if (threadIdx.x == 0) {
    if (gridDim.x == 1) *out = acc;
    else partials[blockIdx.x] = acc;
  }
}

// One block: out = partials[0] op partials[1] op ... op partials[count - 1].
template <class R, class Op>
__global__ void __launch_bounds__(kThreads) partials_kernel(const R* partials, unsigned count, Op op, R* out) {
  __shared__ RoundTotals<R> totals;
  const R e = identity_of<R>(op);
  R acc = e;
  for (unsigned base = 0; base < count; base += kThreads * kRound) {
    R v[kRound] = {e, e, e, e};
#pragma unroll
    for (unsigned u = 0; u < kRound; ++u) {
      const unsigned i = base + u * kThreads + threadIdx.x;
      if (i < count) v[u] = partials[i];
    }
    acc = block_round(acc, v, op, totals);
  }
  if (threadIdx.x == 0) *out = acc;
}

// Ops whose operands may meet in any order: the built-in ones, and users' that say
// `static constexpr bool commutative = true`.
template <class Op>
struct is_commutative : std::bool_constant<requires { requires Op::commutative; }> {};
template <> struct is_commutative<Sum> : std::true_type {};
template <> struct is_commutative<Prod> : std::true_type {};
template <> struct is_commutative<Min> : std::true_type {};
template <> struct is_commutative<Max> : std::true_type {};
template <> struct is_commutative<BitAnd> : std::true_type {};
template <> struct is_commutative<BitOr> : std::true_type {};
template <> struct is_commutative<BitXor> : std::true_type {};

inline constexpr unsigned kInFlight = 4;  // vectors a thread loads before combining them

// For commutative ops: each thread accumulates the vectors i, i + stride, ... (stride = the
// grid's threads), kInFlight loads in flight; the block combines its threads once at the end.
template <unsigned V, class T, class R, class Transform, class Op>
__global__ void __launch_bounds__(kThreads) any_order_kernel(const T* in, std::size_t n, Transform f, Op op,
                                                             R* partials, R* out) {
  __shared__ RoundTotals<R> totals;
  const R e = identity_of<R>(op);
  R acc = e;
  const std::size_t vectors = n / V;
  const std::size_t stride = std::size_t(gridDim.x) * kThreads;
  std::size_t i = std::size_t(blockIdx.x) * kThreads + threadIdx.x;
  for (; i + (kInFlight - 1) * stride < vectors; i += kInFlight * stride) {
    Pack<T, V> p[kInFlight];
#pragma unroll
    for (unsigned u = 0; u < kInFlight; ++u) p[u] = reinterpret_cast<const Pack<T, V>*>(in)[i + u * stride];
#pragma unroll
    for (unsigned u = 0; u < kInFlight; ++u) {
#pragma unroll
      for (unsigned k = 0; k < V; ++k) acc = op(acc, static_cast<R>(apply(f, p[u].v[k], (i + u * stride) * V + k)));
    }
  }
  for (; i < vectors; i += stride) {
    const Pack<T, V> p = reinterpret_cast<const Pack<T, V>*>(in)[i];
#pragma unroll
    for (unsigned k = 0; k < V; ++k) acc = op(acc, static_cast<R>(apply(f, p.v[k], i * V + k)));
  }
  if constexpr (V > 1) {  // the last n % V elements, one per thread of the grid's first threads
    const std::size_t t = vectors * V + std::size_t(blockIdx.x) * kThreads + threadIdx.x;
    if (t < n) acc = op(acc, static_cast<R>(apply(f, in[t], t)));
  }
  R v[kRound] = {acc, e, e, e};
  acc = block_round(e, v, op, totals);
  if (threadIdx.x == 0) {
    if (gridDim.x == 1) *out = acc;
    else partials[blockIdx.x] = acc;
  }
}

struct Plan {
  unsigned grid;
  std::size_t per_block;  // tiles per block (the ordered pass)
  bool vectors;
  bool any_order;
};

// The SMs of `device` times the blocks of `kernel` resident on one, asked once per kernel and
// device (a successful answer is kept; the query costs microseconds, a small reduction less).
template <auto Kernel>
cudaError_t resident_blocks(int device, std::size_t& resident) {
  static std::atomic<unsigned long long> cache[64] = {};
  if (device >= 0 && device < 64) {
    if (const unsigned long long known = cache[device].load(std::memory_order_relaxed); known != 0) {
      resident = known;
      return cudaSuccess;
    }
  }
  int sms = 0, per_sm = 0;
  if (cudaError_t e = cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device); e != cudaSuccess) return e;
  if (cudaError_t e = cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, Kernel, kThreads, 0); e != cudaSuccess) return e;
  resident = std::size_t(std::max(sms, 1)) * std::size_t(std::max(per_sm, 1));
  if (device >= 0 && device < 64) cache[device].store(resident, std::memory_order_relaxed);
  return cudaSuccess;
}

template <class T, class R, class Transform, class Op>
cudaError_t plan(const T* in, std::size_t n, Plan& p) {
  int device = 0;
  if (cudaError_t e = cudaGetDevice(&device); e != cudaSuccess) return e;
  p.vectors = kVec<T> > 1 && reinterpret_cast<std::uintptr_t>(in) % 16 == 0;
  p.any_order = is_commutative<Op>::value;
  std::size_t resident = 1;
  if (p.any_order) {
    const cudaError_t e = p.vectors ? resident_blocks<any_order_kernel<kVec<T>, T, R, Transform, Op>>(device, resident)
                                    : resident_blocks<any_order_kernel<1, T, R, Transform, Op>>(device, resident);
    if (e != cudaSuccess) return e;
    const std::size_t per_thread = std::size_t(kInFlight) * (p.vectors ? kVec<T> : 1);
    const std::size_t wanted = (n + std::size_t(kThreads) * per_thread - 1) / (std::size_t(kThreads) * per_thread);
    p.grid = static_cast<unsigned>(std::clamp<std::size_t>(wanted, 1, resident));
    p.per_block = 0;
    return cudaSuccess;
  }
  const cudaError_t e = p.vectors ? resident_blocks<tiles_kernel<kVec<T>, T, R, Transform, Op>>(device, resident)
                                  : resident_blocks<tiles_kernel<1, T, R, Transform, Op>>(device, resident);
  if (e != cudaSuccess) return e;
  const std::size_t tile = std::size_t(kThreads) * kRound * (p.vectors ? kVec<T> : 1);
  const std::size_t tiles = (n + tile - 1) / tile;
  // At least 2 tiles a block where there are enough; at most the resident blocks (no block waits
  // for another, and the GPU stays shareable).
  const std::size_t grid = std::clamp<std::size_t>(std::min(resident, (tiles + 1) / 2), 1, resident);
  p.per_block = std::max<std::size_t>((tiles + grid - 1) / grid, 1);
  p.grid = static_cast<unsigned>(std::max<std::size_t>((tiles + p.per_block - 1) / p.per_block, 1));
  return cudaSuccess;
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
}  // namespace generic

// The type transform_reduce returns: what the transform makes of an element (a transform may
// take the element's index as a second argument, std::size_t).
template <class T, class Transform>
using transform_result_t = typename generic::transform_result<T, Transform>::type;

// Enqueues *d_out = op over i < n of transform(d_in[i]) (n = 0 writes the identity). CUB's
// two-phase contract: with d_temp == nullptr only temp_bytes is set (never 0). Errors:
// cudaErrorInvalidValue (d_in null with n > 0, d_out null, temp_bytes too small), and the
// launch's. d_in may have any alignment.
template <class T, class Transform, class Op, class R = transform_result_t<T, Transform>>
  requires std::is_trivially_copyable_v<T> && std::is_trivially_copyable_v<R> &&
           (generic::static_identity<Op, R> || generic::member_identity<Op, R>)
cudaError_t transform_reduce_async(void* d_temp, std::size_t& temp_bytes, const T* d_in, std::size_t n, R* d_out,
                                   Transform transform, Op op, cudaStream_t stream = 0) {
  generic::Plan p{};
  if (cudaError_t e = generic::plan<T, R, Transform, Op>(d_in, n, p); e != cudaSuccess) return e;
  const std::size_t needed = std::max<std::size_t>(std::size_t(p.grid) * sizeof(R), 16);
  if (d_temp == nullptr) {
    temp_bytes = needed;
    return cudaSuccess;
  }
  if ((d_in == nullptr && n > 0) || d_out == nullptr || temp_bytes < needed) return cudaErrorInvalidValue;
  R* partials = static_cast<R*>(d_temp);
  if (p.any_order) {
    if (p.vectors) {
      generic::any_order_kernel<generic::kVec<T>, T, R, Transform, Op>
          <<<p.grid, generic::kThreads, 0, stream>>>(d_in, n, transform, op, partials, d_out);
    } else {
      generic::any_order_kernel<1, T, R, Transform, Op>
          <<<p.grid, generic::kThreads, 0, stream>>>(d_in, n, transform, op, partials, d_out);
    }
  } else if (p.vectors) {
    generic::tiles_kernel<generic::kVec<T>, T, R, Transform, Op>
        <<<p.grid, generic::kThreads, 0, stream>>>(d_in, n, p.per_block, transform, op, partials, d_out);
  } else {
    generic::tiles_kernel<1, T, R, Transform, Op>
        <<<p.grid, generic::kThreads, 0, stream>>>(d_in, n, p.per_block, transform, op, partials, d_out);
  }
  if (cudaError_t e = cudaPeekAtLastError(); e != cudaSuccess) return e;
  if (p.grid > 1) {
    generic::partials_kernel<R, Op><<<1, generic::kThreads, 0, stream>>>(partials, p.grid, op, d_out);
    if (cudaError_t e = cudaPeekAtLastError(); e != cudaSuccess) return e;
  }
  return cudaSuccess;
}

// Blocking: allocates its storage on `stream` (stream-ordered), reduces and returns the result.
// Throws fastreduce::Error naming the failing call.
template <class T, class Transform, class Op, class R = transform_result_t<T, Transform>>
  requires std::is_trivially_copyable_v<T> && std::is_trivially_copyable_v<R> &&
           (generic::static_identity<Op, R> || generic::member_identity<Op, R>)
R transform_reduce(const T* d_in, std::size_t n, Transform transform, Op op, cudaStream_t stream = 0) {
  std::size_t bytes = 0;
  check(transform_reduce_async(nullptr, bytes, d_in, n, static_cast<R*>(nullptr), transform, op, stream),
        "fastreduce::transform_reduce: planning");
  void* temp = nullptr;
  check(cudaMallocAsync(&temp, bytes + sizeof(R) + 16, stream), "fastreduce::transform_reduce: cudaMallocAsync");
  R* d_out = reinterpret_cast<R*>(static_cast<char*>(temp) + (bytes + 15) / 16 * 16);
  const cudaError_t launched = transform_reduce_async(temp, bytes, d_in, n, d_out, transform, op, stream);
  R result{};
  cudaError_t copied = launched == cudaSuccess ? cudaMemcpyAsync(&result, d_out, sizeof(R), cudaMemcpyDeviceToHost, stream)
                                               : cudaSuccess;
  const cudaError_t freed = cudaFreeAsync(temp, stream);
  const cudaError_t synced = cudaStreamSynchronize(stream);
  check(launched, "fastreduce::transform_reduce: arguments or launch");
  check(copied, "fastreduce::transform_reduce: copying the result");
  check(freed, "fastreduce::transform_reduce: cudaFreeAsync");
  check(synced, "fastreduce::transform_reduce: kernels");
  return result;
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
