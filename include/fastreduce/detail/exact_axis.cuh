// Mode::Exact along an axis by the fast kernels: the correctly rounded sum of each output, at the
// speed of fast mode's paths for short rows and columns.
//
// An exact sum has no order, so it can be any reduction of the engine (detail/reduction.cuh):
// ExactCheck folds each element into a double with add_if_exact (float, half and bfloat16 inputs
// up to 1024 elements) or into an exact pair, a TwoSum running sum and its errors added with
// add_if_exact (doubles, and longer float-valued rows: the Wide form). While every addition is
// exact, the state *is* the exact sum, and one rounding of it (a conversion to float, round_double
// into half or bfloat16, sum + error for doubles, the pair's value through off_midpoint for the
// Wide form) is the correctly rounded result. Where an addition would
// have rounded (data spread over more than about 2^29 within a float row, over about 2^53 for the
// errors of a double row, or infinity and NaN), the output is written as NaN and a flag word is
// set; exact_fixup_kernel then recomputes each NaN output from its elements into exact limbs
// (shared-memory integer atomics), rounded once. An output whose exact sum is finite never comes
// out NaN otherwise, and a true NaN is recomputed to NaN, so NaN is a safe mark.
//
// The flag word is zeroed on the stream before the main kernel; the fix-up kernel reads it first
// and returns at once where nothing failed: one memset and an empty launch beside fast mode.
#pragma once

#include <cstddef>
#include <cstdint>
#include <type_traits>

#include "fastreduce/detail/axis_plan.hpp"
#include "fastreduce/detail/exact_arith.hpp"
#include "fastreduce/detail/exact_sum.cuh"
#include "fastreduce/detail/grid_finish.cuh"
#include "fastreduce/detail/reduction.cuh"
#include "fastreduce/detail/repro_path.cuh"
#include "fastreduce/detail/vector.cuh"

namespace fastreduce::engine {

// The longest rows or columns this way takes. A float-valued row in one double fails the check
// with a probability of about length^2 / 2^31 on uniform data (an element some 2^29 times smaller
// than the running sum), so longer float rows take the CheckedPair state (kExactWideCheckMaxLength
// below) and, past that, the exact lanes (axis_repro.cuh), which spill such an element instead of
// the whole row; a pair's errors fail only for data spread over about 2^53. Rows with infinity or NaN, or data spread that wide, fail whatever their length, and
// the fix-up (a warp per failed output, one element per lane at a time) is slow on long ones: the
// same bound of 4096 for doubles keeps that cost near the exact lanes'. The bound also keeps the
// fix-up's limbs far from overflow (a piece below 2^32 per element and limb).
template <class A>
inline constexpr std::size_t kExactCheckMaxLength = std::is_same_v<A, double> ? 4096 : 1024;
// Float-valued sums and L1 norms of more elements, up to the doubles' bound, keep the fast paths
// with ExactCheck's Wide state (a CheckedPair, as doubles'), which fails only for data spread
// over about 2^53 (or infinity and NaN): per element a TwoSum and a checked addition instead of
// one checked addition, which pays past 1024 elements, where the single double would fail rows.
inline constexpr std::size_t kExactWideCheckMaxLength = kExactCheckMaxLength<double>;

// O: the result type, the accumulator's or (half and bfloat16 inputs) T itself. The state is one
// double for float-valued inputs (add_exact_or_nan) and a CheckedPair for doubles and the Wide
// form; NaN (in the error, for pairs) marks a failed check, so there is no flag beside them: the warp's shuffles
// move two words (four for doubles), and a lane's state fits fewer registers. Op: the sum, the sum
// of the elements' magnitudes (the L1 norm) or the sum divided by the axis' length (the mean).
// The mean's divisor, the axis' length: an empty base for the sums (their kernels' arguments stay
// one pointer).
template <bool Divide>
struct CheckDivisor {};
template <>
struct CheckDivisor<true> {
  double length = 0;
};

// Wide: float-valued inputs with the CheckedPair state (rows and columns of more than
// kExactCheckMaxLength<float> elements; not the mean, whose division is written for the single double).
template <class T, class O = acc_t<T, Sum>, primitives::ExactOp Op = primitives::ExactOp::Sum, bool Wide = false>
struct ExactCheck : CheckDivisor<primitives::kDividesBy<Op>> {
  using A = acc_t<T, Sum>;
  static constexpr bool Abs = primitives::kMagnitudesOf<Op>;
  static constexpr bool kDouble = std::is_same_v<A, double>;
  static_assert(!Wide || (!kDouble && !primitives::kDividesBy<Op>), "the Wide state is for float-valued sums and L1 norms");
  static constexpr bool kPair = kDouble || Wide;  // the state is a CheckedPair
  using Input = T;
  using Input2 = NoInput;
  using State = std::conditional_t<kPair, primitives::CheckedPair, double>;
  using Acc = State;
  using Partial = State;
  using Out = O;
  static constexpr bool commutative = true;
  static constexpr unsigned folds = 2;
  static constexpr bool order_independent = true;
  // Blocks an SM for the warp-per-row kernel (axis_fast.cuh): the most registers that do not
  // spill (40 for float, 48 for half and bfloat16, 64 for double). A warp per row is latency-bound;
  // on an H100, float rows of 256 took 34 us at 40 registers against 43 us at 62.
  static constexpr unsigned kWarpRowsMinBlocks = kPair ? 4 : sizeof(T) == 2 ? 5 : 6;
  // Rows past the built-in ops' 256 bytes take a warp each, as they were measured; an axis of
  // length 1 never comes here (it runs as fast mode: exact_length_one_as_fast).
  static constexpr std::size_t kTileRowMaxBytes = kAxisPolicy.tile_row_max_bytes;
  static constexpr bool kMapPath = false;
  unsigned* failed = nullptr;  // set (to 1) by project() where an output failed the check

  template <class R>
  static ExactCheck with(unsigned* failed, std::size_t length, const R&) {
    ExactCheck c{};
    c.failed = failed;
    if constexpr (primitives::kDividesBy<Op>) c.length = static_cast<double>(length);
    return c;
  }

  __device__ __forceinline__ ExactCheck at(const T*) const { return *this; }
  __host__ __device__ __forceinline__ State identity() const {
    if constexpr (kPair) return {0.0, 0.0};
    else return 0.0;
  }
  __device__ __forceinline__ State start() const { return identity(); }
  // x added to the state (a magnitude already, for Abs).
  __device__ __forceinline__ State add(const State& s, const T& x) const {
    if constexpr (kPair) return primitives::checked_pair_add(s, primitives::to_acc<double>(x));
    else return primitives::add_exact_or_nan(s, primitives::to_acc<double>(x));
  }
  __device__ __forceinline__ State fold(const State& s, const T& x, std::size_t) const {
    return add(s, primitives::magnitude_if<Abs>(x));
  }
  __device__ __forceinline__ State value(const State& s) const { return s; }
  // A vector's magnitudes are taken word by word (four masks for 16 bytes), not element by element.
  template <unsigned V>
  __device__ __forceinline__ State fold_vec(State s, const primitives::Vec<T, V>& v, std::size_t) const {
    if constexpr (Abs) {
      const primitives::Vec<T, V> m = primitives::magnitudes(v);
#pragma unroll
      for (unsigned k = 0; k < V; ++k) s = add(s, m.elem[k]);
    } else {
#pragma unroll
      for (unsigned k = 0; k < V; ++k) s = add(s, v.elem[k]);
    }
    return s;
  }
  __device__ __forceinline__ State combine(const State& a, const State& b) const {
    if constexpr (kPair) return primitives::checked_pair_join(a, b);
    else return primitives::add_exact_or_nan(a, b);
  }
  __host__ __device__ __forceinline__ State partial(const State& a) const { return a; }
  __device__ __forceinline__ State merge(const State& a, const State& b) const { return combine(a, b); }
  __host__ __device__ __forceinline__ State partial_identity() const { return identity(); }
  // The exact sum rounded once into O; NaN and the flag where a step would have rounded. A half
  // or bfloat16 result is the exact double sum rounded once into that type (never through float).
  // The mean: the exact quotient rounded once (mean_of), NaN and the flag also where this cannot
  // be sure of it.
  __device__ __forceinline__ O project(const State& p) const {
    double mark;
    if constexpr (kPair) mark = p.error;
    else mark = p;
    if constexpr (primitives::kDividesBy<Op>) {
      if (!isnan(mark)) mark = mean_of(p);
    }
    if (isnan(mark)) {
      atomicOr(failed, 1u);
      if constexpr (std::is_same_v<O, A>) return static_cast<A>(mark);  // NaN
      else return primitives::narrow_float<O>(static_cast<float>(mark));
    }
    if constexpr (primitives::kDividesBy<Op>) {
      if constexpr (std::is_same_v<O, double>) return mark;
      else if constexpr (std::is_same_v<O, float>) return __double2float_rn(mark);
      else return primitives::from_bits<O>(primitives::round_double<primitives::kFormatOf<O>>(mark));
    } else {
      if constexpr (kDouble) {
        return primitives::add_rn(p.sum, p.error);
      } else if constexpr (Wide) {
        // The pair's exact value rounded once into O (pair_to_float's way, for any format).
        const primitives::TwoSum t = primitives::two_sum(p.sum, p.error);
        const double q = primitives::off_midpoint<primitives::kFormatOf<O>>(t.sum, t.error);
        if constexpr (std::is_same_v<O, A>) return __double2float_rn(q);
        else return primitives::from_bits<O>(primitives::round_double<primitives::kFormatOf<O>>(q));
      } else if constexpr (std::is_same_v<O, A>) {
        return __double2float_rn(p);
      } else {
        return primitives::from_bits<O>(primitives::round_double<primitives::kFormatOf<O>>(p));
      }
    }
  }

 private:
  // The mean of a row whose exact sum the state holds: a double that rounds once into O as the
  // exact quotient does, or NaN where it may not.
  //   - Float-valued sums: the sum S is a double; q = S / length rounded, and r = S - q length is
  //     exact (the remainder of a rounded division). Rounding q into O rounds twice only where q is
  //     a midpoint of O and r is not zero: q then moves one double ulp toward the quotient, which
  //     leaves no other point of O's grid nearby. (With S a double and a length under 2^28, a q on
  //     a midpoint has r = 0; the test keeps the rounding from resting on that.)
  //   - Doubles: S = sum + error exactly, renormalised by TwoSum so that |error| is at most half
  //     an ulp of sum. q = sum / length rounded, r = sum - q length exact (a multiple of q's ulp,
  //     for q of 2^-1020 and more), and the quotient is q + t with t = (r + error) / length,
  //     within 1.5 ulps of q. Every midpoint of doubles within 1.5 ulps of q is q plus a non-zero
  //     integer multiple of a quarter ulp (the binade below has half the ulp). The computed t comes
  //     from two monotone roundings (of r + error, then of the quotient by length), and every
  //     k quarter-ulps and k quarter-ulps times length are doubles (a quarter ulp is at least
  //     2^-1074 for q of 2^-1020 and more), so the computed t is on the same side of each such
  //     offset as the exact t, or exactly on it. So q + t (one rounding) is the quotient's
  //     rounding unless the computed t is on or near such an offset: t within 2^-20 quarter ulps
  //     of a non-zero multiple is sent to the fix-up, as is a q under 2^-1020 and a sum that
  //     overflows.
  __device__ __forceinline__ double mean_of(const State& p) const {
    if constexpr (kDouble) {
      const primitives::TwoSum s = primitives::two_sum(p.sum, p.error);
      if (s.sum == 0.0 && s.error == 0.0) return 0.0;
      const double length = this->length;
      const double q = __ddiv_rn(s.sum, length);
      // (an overflowing sum, whose mean may be finite, goes to the fix-up too)
      if (!(fabs(q) >= 0x1p-1020) || !primitives::finite(s.sum)) return primitives::quiet_nan();
      const double r = fma(-q, length, s.sum);
      const double t = __ddiv_rn(primitives::add_rn(r, s.error), length);
      const double quarter = ldexp(1.0, ilogb(q) - 54);
      const double w = t / quarter;  // exact: a power of two, no underflow
      const double k = rint(w);
      if (k != 0.0 && fabs(w - k) < 0x1p-20) return primitives::quiet_nan();
      return primitives::add_rn(q, t);
    } else {
      const double length = this->length;
      double q = __ddiv_rn(p, length);
      const double r = fma(-q, length, p);
      return primitives::off_midpoint<primitives::kFormatOf<O>>(q, r);  // one ulp toward the quotient where it must
    }
  }
};
// The float L1 norm's and mean's checks finish short columns in the lane, as whole words: on an
// H200 at 2^28 down columns of 4 1.17-1.21x faster than walked, of 16 to 1024 1.00-1.14x. The
// others keep the walk: the float sum's check ran 1.12-1.13x faster down columns of 4 in the lane
// but 0.94x down columns of 256 and 1024 in one build (1.06x in another: the branch moves the
// registers of the walk's); the half types' sum, L1 and mean checks 0.94-0.99x down columns of
// 256 and 1024; doubles' and the pair state's (Wide) were not measured.
template <class T, class O, primitives::ExactOp Op, bool Wide>
inline constexpr ColumnFinish kColumnFinish<ExactCheck<T, O, Op, Wide>> =
    std::is_same_v<T, float> && Op != primitives::ExactOp::Sum && !Wide ? ColumnFinish::LaneWords : ColumnFinish::Walk;

struct ExactFixupArgs {
  const unsigned* failed;
  std::size_t outputs, length, inner;
  std::int64_t outer_stride, length_stride, inner_stride;
  primitives::ResultType result;  // the type of the outputs (ResultType::Acc: float or double; kSumResultType)
};

// Whether output i (of type `type`) is NaN: one the check marked, or a true NaN.
template <class A>
__device__ __forceinline__ bool output_is_nan(const A* out, std::size_t i, primitives::ResultType type) {
  if (type != primitives::ResultType::Acc) {
    const unsigned bits = __ldcg(reinterpret_cast<const unsigned short*>(out) + i);
    const unsigned exponent = type == primitives::ResultType::Half ? 0x7C00u : 0x7F80u;
    return (bits & exponent) == exponent && (bits & ~(exponent | 0x8000u)) != 0;
  }
  return isnan(static_cast<double>(__ldcg(out + i)));
}

inline constexpr unsigned kFixupThreads = 256;

// A warp's row of exact limbs (format A) and its flags per warp of a fix-up block, in shared
// memory: cleared, then added to by all the warp's lanes at once with shared-memory atomics.
template <class A>
struct FixupRows {
  static constexpr unsigned kWarps = kFixupThreads / 32;
  long long limbs[kWarps][primitives::ExactSum<A>::kLimbs];
  unsigned specials[kWarps];
  __device__ __forceinline__ void clear(unsigned warp, unsigned lane) {
#pragma unroll
    for (unsigned k = 0; k < primitives::ExactSum<A>::K; ++k) limbs[warp][lane + 32 * k] = 0;
    if (lane == 0) specials[warp] = 0;
  }
  __device__ __forceinline__ void add(unsigned warp, double x) {
    primitives::atomic_add_exact<A>(limbs[warp], &specials[warp], x);
  }
};

// The fix-ups' loop: once `failed` is set, a warp per NaN output (is_nan(q)) clears its rows
// (clear(warp, lane)), adds the output's elements (add(warp, i), i the offset of each from the
// input's start) and rounds them once (store(q, warp, lane)). Launched after the main kernels (a
// dependent launch where the GPU has them).
template <class IsNan, class Clear, class Add, class Store>
__device__ __forceinline__ void fix_nan_outputs(const ExactFixupArgs& args, IsNan&& is_nan, Clear&& clear, Add&& add,
                                                Store&& store) {
  constexpr unsigned kWarps = kFixupThreads / 32;
  primitives::wait_for_prior_grid();
  if (__ldcg(args.failed) == 0) return;
  const unsigned lane = threadIdx.x % 32;
  const unsigned warp = threadIdx.x / 32;
  const std::size_t step = std::size_t(gridDim.x) * kWarps * 32;
  for (std::size_t base = (std::size_t(blockIdx.x) * kWarps + warp) * 32; base < args.outputs; base += step) {
    const std::size_t mine = base + lane;
    const bool redo = mine < args.outputs && is_nan(mine);
    for (unsigned mask = __ballot_sync(primitives::kFullMask, redo); mask != 0; mask &= mask - 1) {
      const std::size_t q = base + static_cast<unsigned>(__ffs(mask) - 1);
      clear(warp, lane);
      __syncwarp();
      const std::int64_t first = static_cast<std::int64_t>(q / args.inner) * args.outer_stride +
                                 static_cast<std::int64_t>(q % args.inner) * args.inner_stride;
      for (std::size_t k = lane; k < args.length; k += 32) add(warp, first + static_cast<std::int64_t>(k) * args.length_stride);
      __syncwarp();
      store(q, warp, lane);
      __syncwarp();  // the rows are read before the next output clears them
    }
  }
}

// Recomputes every NaN output of an ExactCheck launch (fix_nan_outputs): its elements (Op: their
// magnitudes) into the sum's limbs, rounded once by store_limb_row (Op: the mean, divided by the
// length).
template <class T, primitives::ExactOp Op = primitives::ExactOp::Sum>
__global__ void __launch_bounds__(kFixupThreads) exact_fixup_kernel(const T* in, acc_t<T, Sum>* out,
                                                                     ExactFixupArgs args) {
  __shared__ FixupRows<acc_t<T, Sum>> rows;
  fix_nan_outputs(
      args, [&](std::size_t i) { return output_is_nan(out, i, args.result); },
      [&](unsigned warp, unsigned lane) { rows.clear(warp, lane); },
      [&](unsigned warp, std::int64_t at) {
        rows.add(warp, primitives::to_acc<double>(primitives::magnitude_if<primitives::kMagnitudesOf<Op>>(in[at])));
      },
      [&](std::size_t q, unsigned warp, unsigned lane) {
        primitives::store_limb_row<T, primitives::kDividesBy<Op>>(out, q, args.result, rows.limbs[warp],
                                                                 rows.specials[warp], lane, args.length);
      });
}

// ---------------------------------------------------------------------------------------------
// The L2 norm and dot product of float, half and bfloat16 inputs along short axes (both modes, whose
// bits are one): ExactCheck's way with squares or products as the terms. Each term is a double
// exactly (lane_value), and the state is a CheckedPair, a TwoSum running sum and the sum of its
// errors, which stays exact while the errors span under 53 bits (float rows of 4096 elements of one
// binade span about 30). A row whose check fails (wider data, infinity, NaN) is written as NaN, sets
// the flag, and is recomputed by term_fixup_kernel into exact limbs. The finish is the 1-D one on
// the same exact value: sum + error rounded once to double (one IEEE addition of the pair), then
// - Square: its square root rounded to double, then to O (narrow_double), as store_term_total;
// - Product: rounded once to float (pair_to_float: the double sum + error, moved one double ulp
//   toward the exact value where it is a float midpoint the exact value is not, then converted).
template <class T, LaneTerm Term, class O>
struct TermCheck {
  static_assert(Term != LaneTerm::Element);
  static constexpr bool kTwo = Term == LaneTerm::Product;
  using Input = T;
  using Input2 = std::conditional_t<kTwo, T, NoInput>;
  using State = primitives::CheckedPair;
  using Acc = State;
  using Partial = State;
  using Out = O;
  static constexpr bool commutative = true;
  static constexpr unsigned folds = 2;
  static constexpr bool order_independent = true;
  static constexpr unsigned kWarpRowsMinBlocks = 4;  // ExactCheck's for doubles (the same state)
  static constexpr std::size_t kTileRowMaxBytes = kAxisPolicy.tile_row_max_bytes;
  static constexpr bool kMapPath = false;
  unsigned* failed = nullptr;

  template <class R>
  static TermCheck with(unsigned* failed, std::size_t /*length*/, const R&) {  // (ExactCheck's signature)
    TermCheck c{};
    c.failed = failed;
    return c;
  }
  __device__ __forceinline__ TermCheck at(const T*) const { return *this; }
  __host__ __device__ __forceinline__ State identity() const { return {0.0, 0.0}; }
  __device__ __forceinline__ State start() const { return identity(); }
  __device__ __forceinline__ State fold(const State& s, const T& x, std::size_t) const {
    return primitives::checked_pair_add(s, lane_value<LaneTerm::Square>(x, x));
  }
  __device__ __forceinline__ State fold(const State& s, const T& x, const T& y, std::size_t) const {
    return primitives::checked_pair_add(s, lane_value<LaneTerm::Product>(x, y));
  }
  template <unsigned V>
  __device__ __forceinline__ State fold_vec(State s, const primitives::Vec<T, V>& v, std::size_t) const {
#pragma unroll
    for (unsigned k = 0; k < V; ++k) s = primitives::checked_pair_add(s, lane_value<LaneTerm::Square>(v.elem[k], v.elem[k]));
    return s;
  }
  template <unsigned V>
  __device__ __forceinline__ State fold_vec(State s, const primitives::Vec<T, V>& v, const primitives::Vec<T, V>& w,
                                            std::size_t) const {
#pragma unroll
    for (unsigned k = 0; k < V; ++k) s = primitives::checked_pair_add(s, lane_value<LaneTerm::Product>(v.elem[k], w.elem[k]));
    return s;
  }
  __device__ __forceinline__ State value(const State& s) const { return s; }
  __device__ __forceinline__ State combine(const State& a, const State& b) const {
    return primitives::checked_pair_join(a, b);
  }
  __host__ __device__ __forceinline__ State partial(const State& a) const { return a; }
  __device__ __forceinline__ State merge(const State& a, const State& b) const { return combine(a, b); }
  __host__ __device__ __forceinline__ State partial_identity() const { return identity(); }
  __device__ __forceinline__ O project(const State& p) const {
    if (isnan(p.error)) {
      atomicOr(failed, 1u);
      return primitives::narrow_double<O>(primitives::quiet_nan());
    }
    if constexpr (Term == LaneTerm::Square) {
      return primitives::narrow_double<O>(__dsqrt_rn(primitives::add_rn(p.sum, p.error)));  // the sum rounded once
    } else {
      return primitives::pair_to_float(p.sum, p.error);
    }
  }
};
// Short columns finish in the lane, as whole words (on an H200 at 2^28, the L2 norm's check down
// columns of 4 1.25x (float) and 1.67x (bfloat16) faster than walked), but for the half types'
// dot product (bfloat16 down columns of 256 and 1024 0.92-0.93x in the lane).
template <class T, LaneTerm Term, class O>
inline constexpr ColumnFinish kColumnFinish<TermCheck<T, Term, O>> =
    Term == LaneTerm::Product && (std::is_same_v<T, __half> || std::is_same_v<T, __nv_bfloat16>) ? ColumnFinish::Walk
                                                                                                 : ColumnFinish::LaneWords;

// Recomputes every NaN output of a TermCheck launch (fix_nan_outputs): its squares (products
// with in2's elements) into the double format's limbs, finished by store_term_row.
template <class T, LaneTerm Term, class O>
__global__ void __launch_bounds__(kFixupThreads) term_fixup_kernel(const T* in, const T* in2, O* out,
                                                                    ExactFixupArgs args) {
  __shared__ FixupRows<double> rows;
  fix_nan_outputs(
      args, [&](std::size_t i) { return output_is_nan(reinterpret_cast<const float*>(out), i, args.result); },
      [&](unsigned warp, unsigned lane) { rows.clear(warp, lane); },
      [&](unsigned warp, std::int64_t at) {
        const T x = in[at];
        if constexpr (Term == LaneTerm::Square) rows.add(warp, lane_value<LaneTerm::Square>(x, x));
        else rows.add(warp, lane_value<LaneTerm::Product>(x, in2[at]));
      },
      [&](std::size_t q, unsigned warp, unsigned lane) {
        store_term_row<Term>(out, q, rows.limbs[warp], rows.specials[warp], lane);
      });
}

// ---------------------------------------------------------------------------------------------
// The variance and standard deviation of float, half and bfloat16 inputs along axes of up to
// kExactCheckMaxLength<double> elements (both modes, whose bits are one): ExactCheck's way with two
// CheckedPairs, the elements' sum S1 and their squares' S2 (each square exact in double). Where
// both stay exact, the finish is the 1-D one on the same exact integers: N = n S2 - S1^2 rounded
// once to double (variance_numerator_of_pairs, the digits of variance_numerator), then the fixed
// divisions and root (variance_from_numerator) and one rounding into O. A row whose check fails
// (wide data, infinity, NaN) is written as NaN, sets the flag, and is recomputed by
// variance_fixup_kernel from exact limbs. (NaN for n <= correction is written without the flag;
// recomputed, where the flag is set for another row, to NaN again.)
struct MomentPairs {
  primitives::CheckedPair s1, s2;
};

template <class T, class O>
struct VarianceCheck {
  using Input = T;
  using Input2 = NoInput;
  using State = MomentPairs;
  using Acc = State;
  using Partial = State;
  using Out = O;
  static constexpr bool commutative = true;
  static constexpr unsigned folds = 2;
  static constexpr bool order_independent = true;
  static constexpr unsigned kWarpRowsMinBlocks = 4;
  static constexpr std::size_t kTileRowMaxBytes = kAxisPolicy.tile_row_max_bytes;
  static constexpr bool kMapPath = false;
  unsigned* failed = nullptr;
  std::uint64_t length = 0;
  std::int64_t correction = 0;
  bool root = false;

  template <class R>
  static VarianceCheck with(unsigned* failed, std::size_t length, const R& red) {
    VarianceCheck c{};
    c.failed = failed;
    c.length = length;
    c.correction = red.finish.correction;
    c.root = red.finish.root;
    return c;
  }
  __device__ __forceinline__ VarianceCheck at(const T*) const { return *this; }
  __host__ __device__ __forceinline__ State identity() const { return {{0.0, 0.0}, {0.0, 0.0}}; }
  __device__ __forceinline__ State start() const { return identity(); }
  __device__ __forceinline__ State add(const State& s, const T& x) const {
    const double d = static_cast<double>(primitives::to_acc<float>(x));
    return {primitives::checked_pair_add(s.s1, d), primitives::checked_pair_add(s.s2, lane_value<LaneTerm::Square>(x, x))};
  }
  __device__ __forceinline__ State fold(const State& s, const T& x, std::size_t) const { return add(s, x); }
  template <unsigned V>
  __device__ __forceinline__ State fold_vec(State s, const primitives::Vec<T, V>& v, std::size_t) const {
#pragma unroll
    for (unsigned k = 0; k < V; ++k) s = add(s, v.elem[k]);
    return s;
  }
  __device__ __forceinline__ State value(const State& s) const { return s; }
  __device__ __forceinline__ State combine(const State& a, const State& b) const {
    return {primitives::checked_pair_join(a.s1, b.s1), primitives::checked_pair_join(a.s2, b.s2)};
  }
  __host__ __device__ __forceinline__ State partial(const State& a) const { return a; }
  __device__ __forceinline__ State merge(const State& a, const State& b) const { return combine(a, b); }
  __host__ __device__ __forceinline__ State partial_identity() const { return identity(); }
  __device__ __forceinline__ O project(const State& p) const {
    if (isnan(p.s1.error) || isnan(p.s2.error)) {
      atomicOr(failed, 1u);
      return primitives::narrow_double<O>(primitives::quiet_nan());
    }
    if (!(static_cast<std::int64_t>(length) - correction > 0)) return primitives::narrow_double<O>(primitives::quiet_nan());
    const double numerator =
        primitives::variance_numerator_of_pairs(p.s1.sum, p.s1.error, p.s2.sum, p.s2.error, length);
    return primitives::narrow_double<O>(primitives::variance_from_numerator(numerator, length, correction, root));
  }
};
// Short columns finish in the lane, as whole words (on an H200 at 2^28, float down every column
// length measured 1.03-1.14x faster than walked).
template <class T, class O>
inline constexpr ColumnFinish kColumnFinish<VarianceCheck<T, O>> = ColumnFinish::LaneWords;

// Recomputes every NaN output of a VarianceCheck launch (fix_nan_outputs): its elements into the
// exact Sum's limbs and their squares into the double format's, finished by store_variance_rows.
template <class T, class O>
__global__ void __launch_bounds__(kFixupThreads) variance_fixup_kernel(const T* in, O* out, ExactFixupArgs args,
                                                                        std::int64_t correction, bool root) {
  __shared__ FixupRows<float> sums;
  __shared__ FixupRows<double> squares;
  fix_nan_outputs(
      args, [&](std::size_t i) { return output_is_nan(reinterpret_cast<const float*>(out), i, args.result); },
      [&](unsigned warp, unsigned lane) {
        sums.clear(warp, lane);
        squares.clear(warp, lane);
      },
      [&](unsigned warp, std::int64_t at) {
        const T x = in[at];
        sums.add(warp, static_cast<double>(primitives::to_acc<float>(x)));
        squares.add(warp, lane_value<LaneTerm::Square>(x, x));
      },
      [&](std::size_t q, unsigned warp, unsigned lane) {
        store_variance_rows(out, q, sums.limbs[warp], squares.limbs[warp], sums.specials[warp] | squares.specials[warp],
                            args.length, correction, root, lane);
      });
}

}  // namespace fastreduce::engine
