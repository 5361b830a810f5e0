// The exact fixed-point accumulator of reproducible sums, and its rounding.
//
// Every finite double is an integer multiple of 2^-1074, so sums of doubles (and of the floats
// and rounding errors of float-valued sums, multiples of 2^-149) can be added *exactly* as
// integers: 32-bit limbs, each held in a signed 64-bit word so that many additions need no carry.
// Integer addition is associative, so partials may meet in any order, on any warp, block, SM or
// GPU, and give the same limbs; the total is rounded once at the end (round_exact). The total
// is reachable unrounded: gather_exact_rows leaves it normalised (a magnitude in 32-bit limbs,
// a sign and the special-value flags) before round_exact turns it into a float or double.
//
// Layout for a grid: each block stores a row of kExactRowWords<A> 8-byte words (its limbs, then a
// word of kPlusInf / kMinusInf / kNaN flags); one block then adds all rows (gather_exact_rows).
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cstddef>
#include <type_traits>

#include "fastreduce/detail/exact_arith.hpp"
#include "fastreduce/detail/vector.cuh"
#include "fastreduce/detail/warp_reduce.cuh"

namespace fastreduce::primitives {

// A value held as an unevaluated sum hi + lo of two doubles.
struct alignas(16) DoubleDouble {
  double hi;
  double lo;
};

// The bitwise or of `value` over the warp (every lane gets it): one instruction from sm_80 on.
__device__ __forceinline__ unsigned warp_or(unsigned value) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  return __reduce_or_sync(kFullMask, value);
#else
  for (unsigned offset = 16; offset > 0; offset /= 2) value |= __shfl_xor_sync(kFullMask, value, offset);
  return value;
#endif
}

// The exact accumulator. Limb j counts units of 2^(kLowBit + 32 j); 32 * kWordsPerLane limbs
// are spread over the warp's lanes (limb j on lane j % 32), each in a signed 64-bit integer so
// that 2^31 additions of 32-bit pieces cannot overflow it. Every finite partial of a
// float-valued sum (a lane's sum of its two float chains or its double sum of errors) is a
// multiple of 2^-149 (it is made of float values and their exact rounding errors) and below
// 2^129; every tile partial
// of a double sum, a multiple of 2^-1074 below 2^1037. The limbs reach 2^875 and 2^1998: room
// for any sum of such partials.
template <class A>
struct ExactFormat;
template <>
struct ExactFormat<float> {
  static constexpr int kLowBit = -149;
  static constexpr unsigned kWordsPerLane = 1;
};
template <>
struct ExactFormat<double> {
  static constexpr int kLowBit = -1074;
  static constexpr unsigned kWordsPerLane = 3;
};

enum : unsigned { kPlusInf = 1, kMinusInf = 2, kNaN = 4 };

// A double taken apart for an exact accumulator whose lowest bit is 2^low_bit: a finite x is
// (negative ? -1 : 1) * mantissa * 2^(low_bit + position); infinity or NaN only sets `special`.
struct SplitDouble {
  unsigned long long mantissa;
  int position;
  bool negative;
  unsigned special;  // kPlusInf, kMinusInf or kNaN for a non-finite x, else 0
};

__device__ __forceinline__ SplitDouble split_double(double x, int low_bit) {
  const unsigned long long bits = static_cast<unsigned long long>(__double_as_longlong(x));
  const int exponent = static_cast<int>((bits >> 52) & 0x7FF);
  const unsigned long long fraction = bits & ((1ull << 52) - 1);
  const bool negative = (bits >> 63) != 0;
  if (exponent == 0x7FF) return {0, 0, negative, fraction != 0 ? kNaN : negative ? kMinusInf : kPlusInf};
  const unsigned long long mantissa = exponent != 0 ? fraction | (1ull << 52) : fraction;
  return {mantissa, (exponent != 0 ? exponent - 1075 : -1074) - low_bit, negative, 0};
}

template <class A>
struct ExactSum {
  static constexpr int kLowBit = ExactFormat<A>::kLowBit;
  static constexpr unsigned K = ExactFormat<A>::kWordsPerLane;
  static constexpr unsigned kLimbs = 32 * K;
  long long limb[K] = {};  // this lane's limbs: lane + 32 k
  unsigned special = 0;    // kPlusInf | kMinusInf | kNaN seen

  // Adds x exactly. Every lane of the warp passes the same x and adds the bits of its limbs.
  __device__ __forceinline__ void add(double x, unsigned lane) {
    const SplitDouble d = split_double(x, kLowBit);
    if (d.special != 0) {
      special |= d.special;
      return;
    }
    // The mantissa's bit 0 is bit d.position of the accumulator (bits below the accumulator's,
    // which no partial has, would be dropped).
#pragma unroll
    for (unsigned k = 0; k < K; ++k) {
      const int shift = 32 * static_cast<int>(lane + 32 * k) - d.position;  // mantissa bit at the limb's bit 0
      unsigned long long piece = 0;
      if (shift >= 0) piece = shift < 64 ? (d.mantissa >> shift) & 0xFFFFFFFFull : 0;
      else if (shift > -32) piece = (d.mantissa << -shift) & 0xFFFFFFFFull;
      limb[k] += d.negative ? -static_cast<long long>(piece) : static_cast<long long>(piece);
    }
  }
  __device__ __forceinline__ void add(const DoubleDouble& partial, unsigned lane) {
    add(partial.hi, lane);
    // A partial that overflowed in its last step is (inf, -inf): its hi alone says which.
    if (isfinite(partial.hi)) add(partial.lo, lane);
  }
  // Brings every limb within [-1, 2^32] below the top one (which keeps the sign and everything
  // above), without changing the value: two rounds of passing each limb's bits above 32 to the
  // next limb (the next lane; lane 31's go to lane 0 of the next word). Mode::Exact carries after
  // a tile that spilled many pieces into the limbs, so that no limb can overflow.
  __device__ __forceinline__ void carry(unsigned lane) {
#pragma unroll
    for (unsigned round = 0; round < 2; ++round) {
      long long up[K];
#pragma unroll
      for (unsigned k = 0; k < K; ++k) up[k] = limb[k] >> 32;  // arithmetic shift: floor division
#pragma unroll
      for (unsigned k = 0; k < K; ++k) {
        long long from_below = __shfl_up_sync(kFullMask, up[k], 1);
        const long long wrapped = k > 0 ? __shfl_sync(kFullMask, up[k > 0 ? k - 1 : 0], 31) : 0;
        if (lane == 0) from_below = wrapped;
        if (lane == 31 && k == K - 1) limb[k] += from_below;
        else limb[k] = (limb[k] & 0xFFFFFFFFll) + from_below;
      }
    }
  }
};

// Brings a warp's limbs (limb j on lane j) within [-1, 2^32] below the top one, without
// changing their value: two rounds of passing each limb's bits above 32 to the next lane. The
// block and grid sums then add at most one such row per warp, whatever the length of the input.
__device__ __forceinline__ long long carry_once(long long limb, unsigned lane) {
  const long long carry = limb >> 32;  // arithmetic shift: floor division by 2^32
  const long long from_below = __shfl_up_sync(kFullMask, carry, 1);
  if (lane == 31) return limb + from_below;  // the top limb keeps its sign and everything above
  return (limb & 0xFFFFFFFFll) + (lane != 0 ? from_below : 0);
}

// Float-valued sums: every lane keeps its own exact accumulator in shared memory, so that a
// tile's lane partials need no butterfly (five levels of shuffles and dependent double-double
// additions: about a microsecond per tile on an H100, which the last tile of every warp could not
// hide). Each lane adds its tile partial (two doubles) exactly into limbs of its
// own, with a few integer instructions and no exchange.
// Limb q of a lane counts units of 2^(kLowBit + 32 q), the grid of ExactSum<float>, and lives in
// column `lane` of row q (each lane its own column: no bank conflict, whichever rows the lanes
// touch).
// Both halves of a partial are whole multiples of 2^-149 below 2^129, so their bits land in limbs
// 0 .. kLaneLimbs - 1; sums and errors have rows of their own, so a tile's two additions touch
// different words.
inline constexpr unsigned kLaneLimbs = 9;  // bits 2^-149 .. 2^138 (a partial's highest is 2^128)

struct LaneLimbs {
  long long sums[kLaneLimbs][32];
  long long errors[kLaneLimbs][32];
};

struct LaneExact {
  static constexpr int kLowBit = ExactFormat<float>::kLowBit;
  LaneLimbs& limbs;
  unsigned lane;
  unsigned special = 0;  // kPlusInf | kMinusInf | kNaN seen

  __device__ __forceinline__ LaneExact(LaneLimbs& l, unsigned lane_index) : limbs(l), lane(lane_index) {
#pragma unroll
    for (unsigned q = 0; q < kLaneLimbs; ++q) limbs.sums[q][lane] = limbs.errors[q][lane] = 0;
  }
  // Adds a lane's partial exactly: its sum and the sum of its rounding errors, both whole
  // multiples of 2^-149 below 2^129 (a non-finite sum only sets the flags).
  __device__ __forceinline__ void add(double sum, double error) {
    const SplitDouble s = split_double(sum, kLowBit);
    if (s.special != 0) {  // a chain overflowed or saw infinity or NaN: the error is meaningless
      special |= s.special;
      return;
    }
    add_split(limbs.sums, s);
    add_split(limbs.errors, split_double(error, kLowBit));
  }
  // Mode::Exact: a finite chain sum of a tile (a float-valued sum in double, a whole multiple of
  // 2^-149 below 2^135) into the sums' limbs, and its partner chain's into the errors' limbs;
  // then, after a tile that spilled, the lane's limbs carried back to 32 bits.
  __device__ __forceinline__ void add_chains(double first, double second) {
    add_split(limbs.sums, split_double(first, kLowBit));
    add_split(limbs.errors, split_double(second, kLowBit));
    if (spilled) {
      carry_column(limbs.sums);
      carry_column(limbs.errors);
      spilled = false;
    }
  }
  // Mode::Exact: an element whose addition to a chain would round (a float, half or bfloat16
  // value as a double), added exactly to the lane's limbs; infinity and NaN set their flag.
  __device__ __forceinline__ void spill(double x) {
    const SplitDouble s = split_double(x, kLowBit);
    if (s.special != 0) {
      special |= s.special;
      return;
    }
    add_split(limbs.errors, s);
    spilled = true;
  }
  // The warp's limbs in ExactSum's layout (limb q on lane q). Each lane's limb gathers at most one
  // piece below 2^32 per tile per row (after a tile that spilled, the lane's limbs are carried), and
  // a warp sums at most kReproMaxElements / kReproTile / 8 tiles: the 64 words a limb adds here
  // stay below 2^63 (detail/repro_path.cuh checks the bound at compile time). Three lanes add up each row
  // (columns p, p + 3, ... from column 3q on: lane l = 3q + p reads column (l + 3k) % 32 at step
  // k: consecutive lanes, consecutive columns, no bank conflict), then lane q takes the three
  // partial sums. The warp's limbs are then carried twice (carry_once), as every caller needs them.
  __device__ __forceinline__ void into(ExactSum<float>& exact) const {
    static_assert(3 * kLaneLimbs <= 32);
    __syncwarp();  // every lane's last additions are visible
    const unsigned row = lane / 3;
    long long part = 0;
    if (row < kLaneLimbs) {
#pragma unroll
      for (unsigned k = 0; k < 11; ++k) {
        if (lane % 3 == 2 && k == 10) break;  // 11 + 11 + 10 columns
        const unsigned column = (lane + 3 * k) % 32;
        part += limbs.sums[row][column] + limbs.errors[row][column];
      }
    }
    part += __shfl_down_sync(kFullMask, part, 1) + __shfl_down_sync(kFullMask, part, 2);
    const long long total = __shfl_sync(kFullMask, part, 3 * lane % 32);
    exact.limb[0] = lane < kLaneLimbs ? total : 0;
    exact.special = warp_or(special);
    exact.limb[0] = carry_once(carry_once(exact.limb[0], lane), lane);
  }

 private:
  bool spilled = false;  // pieces were spilled into the limbs since the last carry

  // Carries the lane's column of `row` bottom to top: limbs 0 .. kLaneLimbs - 2 end in [0, 2^32),
  // the top one keeps the sign and everything above. A tile adds at most one piece per limb per
  // element, so limbs carried after every tile that spilled stay far from overflow.
  __device__ __forceinline__ void carry_column(long long (&row)[kLaneLimbs][32]) {
    long long carry = 0;
#pragma unroll
    for (unsigned q = 0; q + 1 < kLaneLimbs; ++q) {
      const long long v = row[q][lane] + carry;
      carry = v >> 32;  // arithmetic shift: floor division by 2^32
      row[q][lane] = v & 0xFFFFFFFFll;
    }
    row[kLaneLimbs - 1][lane] += carry;
  }

  // Adds a finite double, a whole multiple of 2^-149 below 2^129, to this lane's limbs: the
  // 32-bit pieces of its mantissa, shifted to its place, go into limbs position / 32 and up.
  __device__ __forceinline__ void add_split(long long (&row)[kLaneLimbs][32], const SplitDouble& x) {
    unsigned long long mantissa = x.mantissa;
    int position = x.position;
    if (position < 0) {  // x is a multiple of 2^-149: the mantissa's bits under it are zero
      mantissa = -position < 64 ? mantissa >> -position : 0;
      position = 0;
    }
    const unsigned q = static_cast<unsigned>(position) / 32;
    const unsigned r = static_cast<unsigned>(position) % 32;
    const unsigned long long low = mantissa << r;
    const unsigned long long high = r != 0 ? mantissa >> (64 - r) : 0;  // below 2^20
    const long long pieces[3] = {static_cast<long long>(low & 0xFFFFFFFFull), static_cast<long long>(low >> 32),
                                 static_cast<long long>(high)};
#pragma unroll
    for (unsigned i = 0; i < 3; ++i) {
      if (q + i < kLaneLimbs) row[q + i][lane] += x.negative ? -pieces[i] : pieces[i];
    }
  }
};

// Carries every limb's bits above 32 into the next one, bottom to top, in place (one thread):
// limbs 0 .. W - 2 end in [0, 2^32) and the top limb keeps the sign of the total. A negative
// total is then negated the same way, so the limbs hold its magnitude. Returns the sign.
// No limb below `lowest` or above `highest` is non-zero: carrying starts at the first, and past
// the second only the carry is left to place.
template <unsigned W>
__device__ __forceinline__ bool normalize_limbs(unsigned long long* limbs, unsigned lowest, unsigned highest) {
  long long carry = 0;
  unsigned j = lowest;
  for (; j + 1 < W && (j <= highest || (carry != 0 && carry != -1)); ++j) {
    const long long v = static_cast<long long>(limbs[j]) + carry;
    carry = v >> 32;  // arithmetic shift: floor division by 2^32
    limbs[j] = static_cast<unsigned long long>(v & 0xFFFFFFFFll);
  }
  // Limbs 0 .. end - 1 are in [0, 2^32); `top` counts units of limb `end` and holds everything
  // from there up (the top limb when the loop reached it, else only the carry: 0 or -1).
  const unsigned end = j;
  const bool reached_top = end + 1 == W;
  const long long top = reached_top ? static_cast<long long>(limbs[W - 1]) + carry : carry;
  if (top >= 0) {
    limbs[end] = static_cast<unsigned long long>(top);
    return false;
  }
  // Negative: the magnitude is the two's complement, borrowing up from limb 0.
  carry = 0;
  for (unsigned i = lowest; i < end; ++i) {
    const long long v = carry - static_cast<long long>(limbs[i]);
    carry = v >> 32;
    limbs[i] = static_cast<unsigned long long>(v & 0xFFFFFFFFll);
  }
  limbs[end] = static_cast<unsigned long long>(carry - top);
  return true;
}

// The binary format of a result type O, and O from its bits.
template <class O>
inline constexpr BinaryFormat kFormatOf = std::is_same_v<O, double>   ? kDoubleFormat
                                          : std::is_same_v<O, __half> ? kHalfFormat
                                          : std::is_same_v<O, float>  ? kFloatFormat
                                                                      : kBfloat16Format;
template <class O>
__device__ __forceinline__ O from_bits(std::uint64_t bits) {
  if constexpr (std::is_same_v<O, double>) return double_from_bits(bits);
  else if constexpr (std::is_same_v<O, float>) return float_from_bits(static_cast<std::uint32_t>(bits));
  else if constexpr (std::is_same_v<O, __half>) return __ushort_as_half(static_cast<unsigned short>(bits));
  else return __ushort_as_bfloat16(static_cast<unsigned short>(bits));
}

// What the exact kernels make of the exact sum of a row's elements: the sum, the sum of their
// magnitudes (the L1 norm: each element's sign bit cleared as it is loaded), or the sum divided by
// the row's length (the mean: the exact quotient rounded once).
enum class ExactOp { Sum, Magnitudes, Mean };
template <ExactOp Op>
inline constexpr bool kMagnitudesOf = Op == ExactOp::Magnitudes;
template <ExactOp Op>
inline constexpr bool kDividesBy = Op == ExactOp::Mean;

// A warp's normalised limbs, limb j on lane j % 32 (word j / 32): this lane's words of a row, the
// highest non-zero limb (-1 for none), limb j itself (0 for j < 0) and whether any limb under j is
// non-zero. Every lane calls them with the same arguments and gets the answer.
template <unsigned K>
__device__ __forceinline__ void load_limbs(const unsigned long long* limbs, unsigned lane, long long (&limb)[K]) {
#pragma unroll
  for (unsigned k = 0; k < K; ++k) limb[k] = static_cast<long long>(limbs[lane + 32 * k]);
}
template <unsigned K>
__device__ __forceinline__ int highest_limb(const long long (&limb)[K]) {
  int h = -1;
#pragma unroll
  for (int k = K - 1; k >= 0; --k) {
    const unsigned mask = __ballot_sync(kFullMask, limb[k] != 0);
    if (h < 0 && mask != 0) h = 32 * k + 31 - __clz(mask);
  }
  return h;
}
template <unsigned K>
__device__ __forceinline__ unsigned long long limb_at(const long long (&limb)[K], int j) {
  long long mine = 0;
#pragma unroll
  for (unsigned k = 0; k < K; ++k) if (j >= 0 && unsigned(j) / 32 == k) mine = limb[k];
  const long long v = __shfl_sync(kFullMask, mine, j >= 0 ? j % 32 : 0);
  return j >= 0 ? static_cast<unsigned long long>(v) : 0ull;
}
template <unsigned K>
__device__ __forceinline__ bool any_limb_below(const long long (&limb)[K], int j, unsigned lane) {
  bool below = false;
#pragma unroll
  for (unsigned k = 0; k < K; ++k) below = below || (int(lane + 32 * k) < j && limb[k] != 0);
  return __any_sync(kFullMask, below);
}

// What IEEE addition gives for the special values seen, in format F: NaN, or the one sign of
// infinity seen.
template <class O>
__device__ __forceinline__ O special_result(unsigned special) {
  constexpr BinaryFormat F = kFormatOf<O>;
  const bool nan = special & kNaN || (special & kPlusInf && special & kMinusInf);
  constexpr int p = F.precision;
  constexpr std::uint64_t kInfinity = ((std::uint64_t(1) << (F.width - p)) - 1) << (p - 1);
  const std::uint64_t sign = !nan && special == kMinusInf ? std::uint64_t(1) << (F.width - 1) : 0;
  return from_bits<O>(sign | kInfinity | (nan ? std::uint64_t(1) << (p - 2) : 0));
}

// The value of normalised limbs (a magnitude, and its sign) rounded once to O (round to nearest
// even): A itself, or half or bfloat16 for a float-valued sum. Computed by one warp; the result
// is valid in lane 0.
template <class A, class O = A>
__device__ __forceinline__ O round_exact(const unsigned long long* limbs, bool negative, unsigned special, unsigned lane) {
  using Exact = ExactSum<A>;
  constexpr unsigned K = Exact::K;
  constexpr BinaryFormat F = kFormatOf<O>;
  if (special != 0) return special_result<O>(special);
  long long limb[K];
  load_limbs(limbs, lane, limb);
  // The highest non-zero limb h, and limbs h, h - 1, h - 2 from their lanes.
  const int h = highest_limb(limb);
  if (h < 0) return from_bits<O>(0);
  const unsigned long long l2 = limb_at(limb, h), l1 = limb_at(limb, h - 1), l0 = limb_at(limb, h - 2);
  const bool below = any_limb_below(limb, h - 2, lane);  // any limb under h - 2 non-zero
  // 64 leading bits of the magnitude, with everything under them folded into a sticky bit, so
  // that the one conversion below rounds exactly as the infinite-precision value would.
  const int lz = __clz(static_cast<unsigned>(l2));
  const unsigned long long high = (l2 << 32) | l1;
  unsigned long long m = (high << lz) | (lz > 0 ? l0 >> (32 - lz) : 0ull);
  const bool sticky = below || ((l0 << lz) & 0xFFFFFFFFull) != 0;
  m |= sticky ? 1ull : 0ull;
  const int scale = Exact::kLowBit + 32 * (h - 1) - lz;  // the value is m * 2^scale
  // One rounding, subnormal results included (m's top bit is bit 63, its sticky bit far below
  // the last bit kept).
  return from_bits<O>(round_scaled<F>(m, scale, negative));
}

// The mean: normalised limbs divided by `divisor` (under 2^48; 0, the mean of nothing, gives NaN)
// and rounded once to O, by long division from the five highest limbs (divide_window). An exact
// zero gives +0, as the sum. Computed by one warp (every lane divides); valid in lane 0.
template <class A, class O = A>
__device__ __forceinline__ O round_exact_quotient(const unsigned long long* limbs, bool negative, unsigned special,
                                                  unsigned lane, std::uint64_t divisor) {
  constexpr unsigned K = ExactSum<A>::K;
  if (divisor == 0) return special_result<O>(kNaN);
  if (special != 0) return special_result<O>(special);
  long long limb[K];
  load_limbs(limbs, lane, limb);
  const int h = highest_limb(limb);
  if (h < 0) return from_bits<O>(0);
  std::uint32_t window[5];
#pragma unroll
  for (int i = 0; i < 5; ++i) window[i] = static_cast<std::uint32_t>(limb_at(limb, h - i));
  const Scaled q = divide_window(window, any_limb_below(limb, h - 4, lane), divisor);
  return from_bits<O>(round_scaled<kFormatOf<O>>(q.m, q.scale + ExactSum<A>::kLowBit + 32 * (h - 4), negative));
}

// round_exact, or (Divide) round_exact_quotient by `divisor`.
template <bool Divide, class A, class O = A>
__device__ __forceinline__ O round_exact_as(const unsigned long long* limbs, bool negative, unsigned special,
                                            unsigned lane, std::uint64_t divisor) {
  if constexpr (Divide) return round_exact_quotient<A, O>(limbs, negative, special, lane, divisor);
  else return round_exact<A, O>(limbs, negative, special, lane);
}

// The narrow result types a kernel's stores may be asked for: Input, a kernel of one input type
// (its own type if it is half or bfloat16, else none); AnyNarrow, a kernel shared by the float
// accumulator's inputs (half or bfloat16, as `type` says).
struct AnyNarrow {};

// Rounds normalised limbs (round_exact) into out[q]: A, or the narrow type `type` says (a float
// sum's half or bfloat16 result, rounded once from the exact value). Input: the calling kernel's
// input type (only its own type, if half or bfloat16, is compiled as a narrow result) or AnyNarrow
// (both). Divide: the mean, the value divided by `divisor` (round_exact_quotient). Lane 0 stores;
// every lane of the warp calls it.
template <class Input, class A, bool Divide = false>
__device__ __forceinline__ void store_exact(A* out, std::size_t q, ResultType type, const unsigned long long* limbs,
                                            bool negative, unsigned special, unsigned lane,
                                            std::uint64_t divisor = 0) {
  if constexpr (std::is_same_v<A, float>) {
    constexpr bool kHalf = std::is_same_v<Input, AnyNarrow> || std::is_same_v<Input, __half>;
    constexpr bool kBfloat16 = std::is_same_v<Input, AnyNarrow> || std::is_same_v<Input, __nv_bfloat16>;
    if constexpr (kHalf) {
      if (type == ResultType::Half) {
        const __half v = round_exact_as<Divide, A, __half>(limbs, negative, special, lane, divisor);
        if (lane == 0) reinterpret_cast<__half*>(out)[q] = v;
        return;
      }
    }
    if constexpr (kBfloat16) {
      if (type == ResultType::Bfloat16) {
        const __nv_bfloat16 v = round_exact_as<Divide, A, __nv_bfloat16>(limbs, negative, special, lane, divisor);
        if (lane == 0) reinterpret_cast<__nv_bfloat16*>(out)[q] = v;
        return;
      }
    }
  }
  if (type != ResultType::Acc) __trap();  // a narrow type this kernel was not compiled for: never asked
  const A v = round_exact_as<Divide, A>(limbs, negative, special, lane, divisor);
  if (lane == 0) out[q] = v;
}

// What a block stores for the grid: its limbs and a word of special-value flags.
template <class A>
inline constexpr unsigned kExactRowWords = ExactSum<A>::kLimbs + 1;

// Shared memory of a block that stores or gathers rows: a row of limbs per warp, and each warp's
// special-value flags.
template <class A, unsigned Warps>
struct ExactShared {
  long long limbs[Warps][ExactSum<A>::kLimbs];
  unsigned special[Warps];
};

// The block's warps add their accumulators (limb j on lane j % 32 of each warp) and store the
// block's row at `row`. Ends with the block's threads done with `shared`.
template <class A, unsigned Warps>
__device__ __forceinline__ void store_exact_row(const ExactSum<A>& exact, ExactShared<A, Warps>& shared,
                                                unsigned long long* row) {
  constexpr unsigned W = ExactSum<A>::kLimbs;
  constexpr unsigned K = ExactSum<A>::K;
  const unsigned lane = threadIdx.x % 32;
  const unsigned warp = threadIdx.x / 32;
#pragma unroll
  for (unsigned k = 0; k < K; ++k) shared.limbs[warp][lane + 32 * k] = exact.limb[k];
  if (lane == 0) shared.special[warp] = exact.special;
  __syncthreads();  // every warp's limbs are in shared memory
  for (unsigned t = threadIdx.x; t < W; t += Warps * 32) {
    long long sum = 0;
#pragma unroll
    for (unsigned w = 0; w < Warps; ++w) sum += shared.limbs[w][t];
    row[t] = static_cast<unsigned long long>(sum);
  }
  if (threadIdx.x == 0) {
    unsigned special = 0;
#pragma unroll
    for (unsigned w = 0; w < Warps; ++w) special |= shared.special[w];
    row[W] = special;
  }
  __syncthreads();  // every thread is done reading `shared`, and the row is written
}

// The exact total of `count` rows, normalised: a magnitude in 32-bit limbs, its sign and the
// special-value flags. Valid in warp 0 only (the other warps return with `limbs` null).
template <class A>
struct ExactTotal {
  const unsigned long long* limbs;  // ExactSum<A>::kLimbs limbs in shared memory, limb j = 2^(32 j) units
  bool negative;
  unsigned special;
};

// One block of Warps warps adds rows[0 .. count) (each kExactRowWords<A> words, written by an
// earlier grid or by this block before a barrier), and (Extra) the row `extra` too. Warp w adds
// rows w, w + Warps, ... with lane l taking limbs l + 32 k (coalesced), several rows' loads in
// flight before their additions; then warp 0 adds the warps' sums and carries them into 32-bit
// limbs.
template <class A, unsigned Warps, bool Extra = false>
__device__ __forceinline__ ExactTotal<A> gather_exact_rows(const unsigned long long* rows, unsigned count,
                                                           ExactShared<A, Warps>& shared,
                                                           const unsigned long long* extra = nullptr) {
  constexpr unsigned W = ExactSum<A>::kLimbs;
  constexpr unsigned K = ExactSum<A>::K;
  constexpr unsigned kWords = kExactRowWords<A>;
  const unsigned lane = threadIdx.x % 32;
  const unsigned warp = threadIdx.x / 32;
  constexpr unsigned kInFlight = 24 / K;  // all rows at once up to 192 (float) or 64 (double)
  long long acc[K] = {};
  unsigned special = 0;
  for (unsigned first = warp; first < count; first += Warps * kInFlight) {
    long long row[kInFlight][K];
    unsigned flags[kInFlight];
#pragma unroll
    for (unsigned i = 0; i < kInFlight; ++i) {
      const unsigned b = first + i * Warps;
      const unsigned long long* words = rows + std::size_t(b) * kWords;
#pragma unroll
      for (unsigned k = 0; k < K; ++k) row[i][k] = b < count ? static_cast<long long>(__ldcg(words + lane + 32 * k)) : 0;
      flags[i] = b < count && lane == 0 ? static_cast<unsigned>(__ldcg(words + W)) : 0u;
    }
#pragma unroll
    for (unsigned i = 0; i < kInFlight; ++i) {
#pragma unroll
      for (unsigned k = 0; k < K; ++k) acc[k] += row[i][k];
      special |= flags[i];
    }
  }
  if constexpr (Extra) {
    if (warp == 0) {
#pragma unroll
      for (unsigned k = 0; k < K; ++k) acc[k] += static_cast<long long>(__ldcg(extra + lane + 32 * k));
      if (lane == 0) special |= static_cast<unsigned>(__ldcg(extra + W));
    }
  }
#pragma unroll
  for (unsigned k = 0; k < K; ++k) shared.limbs[warp][lane + 32 * k] = acc[k];
  if (lane == 0) shared.special[warp] = special;
  __syncthreads();  // every warp's sums are in shared memory
  if (warp != 0) return {nullptr, false, 0};
  // Warp 0 adds the warps' rows into row 0 (each lane its own limbs), then carries.
  unsigned long long* total = reinterpret_cast<unsigned long long*>(shared.limbs[0]);
  unsigned lowest = W - 1, highest = 0;  // the non-zero limbs before carrying
#pragma unroll
  for (unsigned k = 0; k < K; ++k) {
    long long sum = 0;
#pragma unroll
    for (unsigned w = 0; w < Warps; ++w) sum += shared.limbs[w][lane + 32 * k];
    total[lane + 32 * k] = static_cast<unsigned long long>(sum);
    const unsigned mask = __ballot_sync(kFullMask, sum != 0);
    if (mask != 0) {
      highest = 32 * k + 31 - __clz(mask);
      lowest = lowest < 32 * k ? lowest : 32 * k + __ffs(mask) - 1;
    }
  }
  special = 0;
#pragma unroll
  for (unsigned w = 0; w < Warps; ++w) special |= shared.special[w];
  if (lowest > highest) lowest = 0;  // all zero
  __syncwarp();  // the totals are visible to lane 0
  bool negative = false;
  if (lane == 0) negative = normalize_limbs<W>(total, lowest, highest);
  __syncwarp();  // lane 0's normalised limbs are visible to the warp
  negative = __shfl_sync(kFullMask, negative, 0);
  return {total, negative, special};
}

// One block: the rounded exact total of rows[0 .. count) into *out (in `type`, as store_exact;
// Divide: divided by `divisor`).
template <class Input, bool Divide = false, class A, unsigned Warps>
__device__ __forceinline__ void finish_exact_rows(const unsigned long long* rows, unsigned count,
                                                  ExactShared<A, Warps>& shared, A* out, ResultType type,
                                                  std::uint64_t divisor = 0) {
  const ExactTotal<A> total = gather_exact_rows<A, Warps>(rows, count, shared);
  if (total.limbs == nullptr) return;
  store_exact<Input, A, Divide>(out, 0, type, total.limbs, total.negative, total.special, threadIdx.x % 32, divisor);
}

}  // namespace fastreduce::primitives

namespace fastreduce::primitives {

// One warp: normalises a row of ExactSum<A>::kLimbs signed limbs in shared memory (limb j counts
// units of 2^(kLowBit + 32 j); any values, not carried yet) in place, into a magnitude in 32-bit
// limbs; returns its sign (every lane).
template <class A>
__device__ __forceinline__ bool normalize_limb_row(long long* limbs, unsigned lane) {
  constexpr unsigned W = ExactSum<A>::kLimbs;
  constexpr unsigned K = ExactSum<A>::K;
  unsigned lowest = W - 1, highest = 0;
#pragma unroll
  for (unsigned k = 0; k < K; ++k) {
    const unsigned mask = __ballot_sync(kFullMask, limbs[lane + 32 * k] != 0);
    if (mask != 0) {
      highest = 32 * k + 31 - __clz(mask);
      lowest = lowest < 32 * k ? lowest : 32 * k + __ffs(mask) - 1;
    }
  }
  if (lowest > highest) lowest = 0;  // all zero
  __syncwarp();
  unsigned long long* words = reinterpret_cast<unsigned long long*>(limbs);
  bool negative = false;
  if (lane == 0) negative = normalize_limbs<W>(words, lowest, highest);
  __syncwarp();  // lane 0's normalised limbs are visible to the warp
  return __shfl_sync(kFullMask, negative, 0);
}

// One warp: the rounded value of such a row with its special-value flags (normalised in place).
// The result is valid in lane 0.
template <class A>
__device__ __forceinline__ A finish_limb_row(long long* limbs, unsigned special, unsigned lane) {
  const bool negative = normalize_limb_row<A>(limbs, lane);
  return round_exact<A>(reinterpret_cast<const unsigned long long*>(limbs), negative, special, lane);
}

// One warp: such a row rounded once into out[q] (in `type`, as store_exact; Divide: divided by
// `divisor`).
template <class Input, bool Divide = false, class A>
__device__ __forceinline__ void store_limb_row(A* out, std::size_t q, ResultType type, long long* limbs,
                                               unsigned special, unsigned lane, std::uint64_t divisor = 0) {
  const bool negative = normalize_limb_row<A>(limbs, lane);
  store_exact<Input, A, Divide>(out, q, type, reinterpret_cast<const unsigned long long*>(limbs), negative, special,
                                lane, divisor);
}

// Adds a finite double x (a whole multiple of 2^kLowBit) into a row of signed limbs with shared-
// memory atomics (any number of threads may add into the same row at once: integer addition
// makes the order irrelevant). A non-finite x sets its flag in *special instead.
template <class A>
__device__ __forceinline__ void atomic_add_exact(long long* limbs, unsigned* special, double x) {
  constexpr unsigned W = ExactSum<A>::kLimbs;
  const SplitDouble d = split_double(x, ExactSum<A>::kLowBit);
  if (d.special != 0) {
    atomicOr(special, d.special);
    return;
  }
  if (d.mantissa == 0) return;
  unsigned long long mantissa = d.mantissa;
  int position = d.position;
  if (position < 0) {  // bits under the accumulator's lowest, which no partial has
    mantissa = -position < 64 ? mantissa >> -position : 0;
    position = 0;
  }
  const unsigned q = static_cast<unsigned>(position) / 32;
  const unsigned r = static_cast<unsigned>(position) % 32;
  const unsigned long long low = mantissa << r;
  const unsigned long long high = r != 0 ? mantissa >> (64 - r) : 0;
  const unsigned long long pieces[3] = {low & 0xFFFFFFFFull, low >> 32, high};
#pragma unroll
  for (unsigned i = 0; i < 3; ++i) {
    if (q + i < W && pieces[i] != 0) {
      const unsigned long long add = d.negative ? 0ull - pieces[i] : pieces[i];
      atomicAdd(reinterpret_cast<unsigned long long*>(limbs + q + i), add);  // two's complement: a signed add
    }
  }
}

}  // namespace fastreduce::primitives
