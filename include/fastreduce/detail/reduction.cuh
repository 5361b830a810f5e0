// What every kernel of the engine is written against: a reduction, in the manner of PyTorch's
// ReduceOp. One small struct per op says how a thread folds its elements, how values meet, and
// what is written; every kernel (1-D, rows, columns, strided views, segments) takes any of them,
// so a new op is written once and gets every path.
//
// A reduction R has:
//   Input, Input2         the element types read (Input2 = NoInput for one input)
//   State                 a thread's running value, fed its elements by
//     start()               the empty state
//     fold(s, x[, y], i)    element i (its index in the array, row or segment)
//     fold_vec(s, v[, w], i)  a vector of V elements from index i (Vec<Input, V>)
//   Acc                   what the threads of a block combine (warp shuffles, then warps)
//     value(s)              a state's Acc
//     combine(a, b)         two Accs of one unit (below)
//     identity()            the Acc of no element
//   Partial               what a unit leaves for a later kernel (the partials of blocks, of
//                         row or column pieces, of cut segments)
//     partial(a)            a unit's combined Acc as a Partial
//     merge(p, q)           two Partials; partial_identity() the Partial of no element
//   Out                   what is written: project(p)
//   at(first)             the reduction for a unit of work (a block's share of a 1-D input, a
//                         row or a piece of one, a column, a segment piece) whose first element
//                         is *first (nullptr: none). Most return themselves; the moments take
//                         that element as the shift their sums are taken from.
//   commutative           elements may meet in any order (false: the ordered kernels)
//   folds                 independent states a thread keeps (one per load in flight: the update
//                         of one element does not wait for the previous one's)
//   order_independent     the result does not depend on the order of the operations at all
//                         (integers, min, max, arg-extremes): Mode::Reproducible gives it as is
// and may have (axis_fast.cuh's LaneForm: rows of whole vectors whose lanes meet in shuffles):
//   LaneAcc               a narrower Acc for the lanes of one short row, shuffled and selected
//                         in fewer words: what the row's length gives need not travel
//     to_lane(a)            an Acc in that form
//     lane_combine(a, b)    combine's operations on the form (the same bits)
//     from_lane(l, n)       the Acc of a row of n elements from the form
//     lane_partial(l, n)    (optional) partial(from_lane(l, n)) for n a power of two, the same
//                           bits in fewer operations; the columns kernel also finishes a column's
//                           Acc a of n elements by lane_partial(to_lane(a), n), however large n
//                           is, so from_lane(to_lane(a), n) must give a back (the moments)
//   kColumnLaneStage      (optional) true: from_lane(to_lane(a), n) is a for an Acc a of n
//                         elements however large n is (the moments), so the columns kernel may
//                         stage its lanes in the form, each with its count of rows, where a
//                         vector of columns' Accs would not fit (axis_fast.cuh, column_lane_stage)
//   kColumnUnitsByVector  (optional) true: the vector columns kernel loads the first row of a
//                         thread's pack of columns as one vector and gives at() its copies, where
//                         at() reads *first (the half types' moments: their shift; axis_fast.cuh,
//                         column_units_by_vector). Such an at() reads *first alone and keeps no
//                         pointer (it is given the loaded copy), and at() of a zero stands for
//                         at(nullptr) where the thread folds nothing
// State, Acc, LaneAcc and Partial are trivially copyable (they are shuffled and stored word by
// word). from_lane(to_lane(a), n) is a for an Acc a of exactly n elements: the kernel meets in
// the form only on rows of whole vectors that every lane of the row has loaded.
#pragma once

#include <cstddef>
#include <cstdint>
#include <type_traits>

#include "fastreduce/detail/vector.cuh"
#include "fastreduce/detail/warp_reduce.cuh"
#include "fastreduce/ops.cuh"

namespace fastreduce::engine {

struct NoInput {};  // the second input of a one-input reduction

// The input pointers of a reduction: one, or two read at the same indices.
template <class T, class U>
struct Inputs {
  const T* x;
  const U* y;
};
template <class T>
struct Inputs<T, NoInput> {
  const T* x;
};

template <class R>
using inputs_t = Inputs<typename R::Input, typename R::Input2>;
template <class R>
inline constexpr bool two_inputs_v = !std::is_same_v<typename R::Input2, NoInput>;

// The inputs moved d elements on.
template <class T, class U>
__host__ __device__ __forceinline__ Inputs<T, U> advance(const Inputs<T, U>& in, std::ptrdiff_t d) {
  if constexpr (std::is_same_v<U, NoInput>) return {in.x + d};
  else return {in.x + d, in.y + d};
}

// fold of element k of the inputs (index i), one or two inputs alike.
template <class R, class S>
__device__ __forceinline__ S fold_element(const R& r, const S& s, const inputs_t<R>& in, std::ptrdiff_t k,
                                          std::size_t i) {
  if constexpr (two_inputs_v<R>) return r.fold(s, in.x[k], in.y[k], i);
  else return r.fold(s, in.x[k], i);
}

// A vector of each input, loaded together.
template <class R, unsigned V>
struct Loaded {
  primitives::Vec<typename R::Input, V> x;
  primitives::Vec<std::conditional_t<two_inputs_v<R>, typename R::Input2, typename R::Input>, two_inputs_v<R> ? V : 1> y;
};

// Vector j (of V elements) after `base` elements of the inputs (base + j V must be V-aligned).
template <unsigned V, primitives::LoadHint Hint = primitives::LoadHint::ReadOnly, class R>
__device__ __forceinline__ Loaded<R, V> load_vector(const inputs_t<R>& in, std::size_t base, std::size_t j) {
  using primitives::Vec;
  Loaded<R, V> l;
  l.x = primitives::load_vec<Hint>(reinterpret_cast<const Vec<typename R::Input, V>*>(in.x + base) + j);
  if constexpr (two_inputs_v<R>) {
    l.y = primitives::load_vec<Hint>(reinterpret_cast<const Vec<typename R::Input2, V>*>(in.y + base) + j);
  }
  return l;
}

template <class R, class S, unsigned V>
__device__ __forceinline__ S fold_loaded(const R& r, const S& s, const Loaded<R, V>& l, std::size_t i) {
  if constexpr (two_inputs_v<R>) return r.fold_vec(s, l.x, l.y, i);
  else return r.fold_vec(s, l.x, i);
}

// Elements per vector of a reduction's kernels: 16 bytes of each input when both inputs' elements
// have the same size, else one.
template <class R>
inline constexpr unsigned kVecOf =
    !two_inputs_v<R> ? primitives::kVecElems<typename R::Input>
    : (sizeof(typename R::Input) == sizeof(typename R::Input2) ? primitives::kVecElems<typename R::Input> : 1u);

// The op the threads' values meet with in warp and block reductions: a built-in reduction's op
// itself (32-bit integer ops keep their single-instruction warp reduction), else a functor.
template <class R>
struct CombineWith {
  R r;
  __device__ __forceinline__ typename R::Acc operator()(const typename R::Acc& a, const typename R::Acc& b) const {
    return r.combine(a, b);
  }
};
template <class R>
struct MergeWith {
  R r;
  __device__ __forceinline__ typename R::Partial operator()(const typename R::Partial& a,
                                                            const typename R::Partial& b) const {
    return r.merge(a, b);
  }
};
// A built-in op (Builtin below): its op combines values itself.
template <class R>
inline constexpr bool is_builtin_v = requires { typename R::BuiltinOp; };

template <class R>
__device__ __forceinline__ auto combiner_of(const R& r) {
  if constexpr (is_builtin_v<R>) return r.op;
  else return CombineWith<R>{r};
}
template <class R>
__device__ __forceinline__ auto merger_of(const R& r) {
  if constexpr (is_builtin_v<R>) return r.op;
  else return MergeWith<R>{r};
}

// Results with padding inside: an Indexed<V> whose value is narrower than its 8-byte index.
template <class O>
inline constexpr bool kPaddedIndexed = false;
template <class V>
inline constexpr bool kPaddedIndexed<Indexed<V>> = sizeof(V) < sizeof(std::int64_t);

// Stores an Indexed<V> with padding (kPaddedIndexed) as output q: its two 8-byte words, the
// padding zeroed. Stored member by member, 4 of each 16 bytes of a float's stay unwritten, and
// the L2 reads such partly written sectors from memory before it writes them back. On an H200 at
// 2^28, argmax over rows of 4 floats moved 3.2 GB for 2.1 (Nsight Compute: DRAM at 92% of peak,
// 728 us against Sum's 303; docs/notes.md, "Whole sectors for the arg-extremes; the moments'
// offset by a multiplication"). The callers branch on kPaddedIndexed themselves: a call of a
// helper with an `out[q] = o` branch for the other types changed the PTX of unrelated kernels
// (Sum's columns kernel among them).
template <class O>
__device__ __forceinline__ void store_result(O* out, std::size_t q, const O& o) {
  static_assert(kPaddedIndexed<O> && sizeof(O) == 16 && alignof(O) == 8, "an 8-byte index after a narrower value");
  unsigned long long value = 0;
  __builtin_memcpy(&value, &o.value, sizeof(o.value));
  // Two 8-byte stores (an Indexed is 8-byte aligned; a byte copy, memcpy's here, takes 16 byte
  // stores). Nothing reads an output back in the kernel that writes it.
  unsigned long long* words = reinterpret_cast<unsigned long long*>(out + q);
  words[0] = value;
  words[1] = static_cast<unsigned long long>(o.index);
}

// Writes output q: out[q] = project(p).
template <class R>
__device__ __forceinline__ void write_result(const R& r, typename R::Out* out, std::size_t q,
                                             const typename R::Partial& p) {
  if constexpr (kPaddedIndexed<typename R::Out>) store_result<typename R::Out>(out, q, r.project(p));
  else out[q] = r.project(p);
}

// Results a thread may store as whole words of 4, 8 or 16 bytes (store_results): arithmetic
// types, the half types and Indexed (its padding zeroed); another type (a user's struct, whose
// padding is not known here) is stored as itself.
template <class O>
inline constexpr bool kWordResult = std::is_arithmetic_v<O> || std::is_same_v<O, __half> || std::is_same_v<O, __nv_bfloat16>;
template <class V>
inline constexpr bool kWordResult<Indexed<V>> = kWordResult<V>;

template <unsigned Bytes>
struct WordOf;
template <>
struct WordOf<4> {
  using type = unsigned;
};
template <>
struct WordOf<8> {
  using type = uint2;
};
template <>
struct WordOf<16> {
  using type = uint4;
};

// Writes the results of Pack adjacent outputs, out[q + e] = result(e) for e < n (n <= Pack), as
// one thread. Where the Pack results are whole words of up to 16 bytes (kWordResult) at an address
// of their size, and n == Pack, they go as such words (a warp's store instruction then writes
// whole sectors, as 32 threads writing an output each do), built a word at a time; else a result
// at a time. result(e) is called once for each e < n, in order. (Results computed into an array
// first, then stored, took more registers: float argmax's columns kernel 59 -> 72, bfloat16 mean's
// 12 -> 40 bytes of spills.)
template <unsigned Pack, class O, class F>
__device__ __forceinline__ void store_results(O* out, std::size_t q, unsigned n, const F& result) {
  constexpr std::size_t kBytes = Pack * sizeof(O);
  constexpr std::size_t kWord = kBytes < 16 ? kBytes : 16;
  if constexpr (Pack > 1 && kWordResult<O> && (kWord == 4 || kWord == 8 || kWord == 16) && kWord % sizeof(O) == 0) {
    using W = typename WordOf<kWord>::type;
    constexpr unsigned kPer = kWord / sizeof(O);
    if (n == Pack && reinterpret_cast<std::uintptr_t>(out + q) % kWord == 0) {
#pragma unroll
      for (unsigned w = 0; w < Pack / kPer; ++w) {
        W word{};
#pragma unroll
        for (unsigned k = 0; k < kPer; ++k) {
          const O o = result(w * kPer + k);
          char* at = reinterpret_cast<char*>(&word) + k * sizeof(O);
          if constexpr (kPaddedIndexed<O>) {
            __builtin_memcpy(at, &o.value, sizeof(o.value));
            __builtin_memcpy(at + 8, &o.index, sizeof(o.index));
          } else {
            __builtin_memcpy(at, &o, sizeof(O));
          }
        }
        reinterpret_cast<W*>(out + q)[w] = word;
      }
      return;
    }
  }
#pragma unroll
  for (unsigned e = 0; e < Pack; ++e) {
    if (e >= n) break;
    if constexpr (kPaddedIndexed<O>) store_result<O>(out, q + e, result(e));
    else out[q + e] = result(e);
  }
}

// How the columns kernel finishes a column where a block has one lane a column and every thread
// one (a block as wide as its threads, the short columns of a wide array; axis_fast.cuh,
// axis_columns_kernel):
//   Walk       the lanes' accumulators staged through shared memory, then a thread a column
//              walks them (the unit made again by at())
//   Lane       the thread that folded the column finishes it from its registers, a result at a
//              time
//   LaneWords  the same, its pack's results stored as whole words (store_results)
// Each reduction's is measured (docs/notes.md, "Short columns' results as whole words"): a
// finish in the lane also moves the registers of the kernel's other branches, and some lost more
// on columns of more lanes than they gained on the short ones. Wrappers forward their reduction's.
enum class ColumnFinish { Walk, Lane, LaneWords };
template <class R>
inline constexpr ColumnFinish kColumnFinish = ColumnFinish::Walk;

// Reductions that the reproducible and exact sums' kernels serve as the sum of their elements'
// magnitudes: the family's L1 norm of floating-point inputs (specialised in stat_reductions.cuh).
template <class R>
inline constexpr bool kMagnitudeSum = false;
// Reductions they serve as the sum of their elements divided by the count: the family's mean of
// floating-point inputs (specialised in stat_reductions.cuh).
template <class R>
inline constexpr bool kMeanSum = false;
// Reductions they serve as the sum of their elements' squares, whose square root is the result:
// the family's L2 norm of float, half and bfloat16 inputs (specialised in stat_reductions.cuh),
// on every shape.
template <class R>
inline constexpr bool kSquareSum = false;
// Reductions they serve as the sum of the products of two inputs' elements: the family's dot
// product of float, half and bfloat16 inputs (specialised in stat_reductions.cuh), on every
// shape.
template <class R>
inline constexpr bool kProductSum = false;

// What Mode::Exact's double lanes add for element i: the element itself (a double sum), its square
// (kSquareSum) or the product x[i] y[i] (kProductSum), each exact in double for float, half and
// bfloat16 inputs.
enum class LaneTerm : unsigned { Element, Square, Product };
template <class R>
inline constexpr LaneTerm kLaneTermOf = kSquareSum<R> ? LaneTerm::Square : kProductSum<R> ? LaneTerm::Product : LaneTerm::Element;
// The reductions whose exact form is a sum of such terms (squares or products) in double.
template <class R>
inline constexpr bool kTermSum = kLaneTermOf<R> != LaneTerm::Element;
// Reductions they serve from the exact sums of the elements and of their squares: the family's
// variance and standard deviation of float, half and bfloat16 inputs (specialised in
// stat_reductions.cuh): the 1-D reduce and every axis, not segments.
template <class R>
inline constexpr bool kVarianceSum = false;

// A reduction may refuse its own parameters (a negative variance correction): `valid(message)`.
template <class R>
bool valid_reduction(const R& r, const char** message) {
  if constexpr (requires { r.valid(message); }) return r.valid(message);
  else return true;
}

// ---------------------------------------------------------------------------------------------
// The built-in ops (fastreduce.cuh): elements widened to the op's accumulator (acc_t), every value
// one accumulator, a vector's elements combined pairwise first. O: the result's type, A itself or,
// for half and bfloat16 inputs, the input's own type (the float result rounded once when written).

template <class T, class Op, class A, class O = A>
struct Builtin {
  using Input = T;
  using Input2 = NoInput;
  using State = A;
  using Acc = A;
  using Partial = A;
  using Out = O;
  using BuiltinOp = Op;
  static constexpr bool commutative = true;
  static constexpr unsigned folds = 1;
  static constexpr bool order_independent =
      !std::is_floating_point_v<A> || std::is_same_v<Op, Min> || std::is_same_v<Op, Max>;
  Op op;
  __device__ __forceinline__ Builtin at(const T*) const { return *this; }
  __host__ __device__ __forceinline__ A identity() const { return Op::template identity<A>(); }
  __device__ __forceinline__ A start() const { return identity(); }
  __device__ __forceinline__ A fold(const A& s, const T& x, std::size_t) const { return op(s, primitives::to_acc<A>(x)); }
  template <unsigned V>
  __device__ __forceinline__ A fold_vec(const A& s, const primitives::Vec<T, V>& v, std::size_t) const {
    return op(s, primitives::reduce_vec<A>(v, op));
  }
  __device__ __forceinline__ A value(const A& s) const { return s; }
  __device__ __forceinline__ A combine(const A& a, const A& b) const { return op(a, b); }
  __host__ __device__ __forceinline__ A partial(const A& a) const { return a; }
  __device__ __forceinline__ A merge(const A& a, const A& b) const { return op(a, b); }
  __host__ __device__ __forceinline__ A partial_identity() const { return identity(); }
  __host__ __device__ __forceinline__ O project(const A& p) const {
    if constexpr (std::is_same_v<O, A>) return p;
    else return primitives::narrow_float<O>(p);
  }
};

// ---------------------------------------------------------------------------------------------
// Users' ops: a transform of each element (or of a pair of elements, or with its index), then an
// associative op with an identity; the result is finish(total).

// The op's operands may meet in any order: the built-in ops, and users' ops that say
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

// An op whose result does not depend on the order of its operands at all (not only up to
// rounding): users' ops say `static constexpr bool order_independent = true`.
template <class Op, class = void>
struct is_order_independent : std::false_type {};
template <class Op>
struct is_order_independent<Op, std::enable_if_t<static_cast<bool>(Op::order_independent)>> : std::true_type {};

// f(x...), or f(x..., i) for a transform that takes the element's index too.
template <class F, class... X>
__host__ __device__ __forceinline__ auto apply(const F& f, std::size_t i, const X&... x) {
  if constexpr (std::is_invocable_v<const F&, const X&..., std::size_t>) return f(x..., i);
  else return f(x...);
}

// A vector's values combined pairwise in index order ((0, 1), (2, 3), ..., then (0, 2), ...),
// into lanes[0]: the order of every reduction's fold_vec that meets its elements pairwise.
template <class A, unsigned V, class Op>
__device__ __forceinline__ A pairwise_in_order(A (&lanes)[V], const Op& op) {
#pragma unroll
  for (unsigned width = 1; width < V; width *= 2) {
#pragma unroll
    for (unsigned k = 0; k + width < V; k += 2 * width) lanes[k] = op(lanes[k], lanes[k + width]);
  }
  return lanes[0];
}

// What is written: the total as it is.
struct AsIs {
  template <class R>
  __host__ __device__ R operator()(const R& r) const { return r; }
};

template <class T, class U, class F, class Op, class R, class Finish = AsIs>
struct Transformed {
  using Input = T;
  using Input2 = U;
  using State = R;
  using Acc = R;
  using Partial = R;
  using Out = std::remove_cvref_t<std::invoke_result_t<const Finish&, const R&>>;
  static constexpr bool commutative = is_commutative<Op>::value;
  static constexpr unsigned folds = sizeof(R) > 24 ? 2 : 4;
  static constexpr bool order_independent = is_order_independent<Op>::value;
  F f;
  Op op;
  Finish finish;
  // Sums only: the largest magnitude (MaxAbs over the same transform) ran slower widened by bits.
  template <unsigned V>
  static constexpr bool kWidensHalves = (std::is_same_v<T, __half> || std::is_same_v<T, __nv_bfloat16>) && V % 2 == 0 &&
                                        std::is_same_v<Op, Sum> && std::is_invocable_v<const F&, double> &&
                                        requires { requires bool(F::widens_to_double); };
  __device__ __forceinline__ Transformed at(const T*) const { return *this; }
  __host__ __device__ __forceinline__ R identity() const { return detail::identity_of<R>(op); }
  __device__ __forceinline__ R start() const { return identity(); }
  template <class... X>
  __device__ __forceinline__ R element(std::size_t i, const X&... x) const {
    return static_cast<R>(apply(f, i, x...));
  }
  __device__ __forceinline__ R fold(const R& s, const T& x, std::size_t i) const { return op(s, element(i, x)); }
  __device__ __forceinline__ R fold(const R& s, const T& x, const U& y, std::size_t i) const {
    return op(s, element(i, x, y));
  }
  // A vector's transformed elements meet pairwise (in index order), then join the state. A sum of
  // a transform that says `widens_to_double` (f(x) is f of x as a double: the L1 and L2 norms'
  // magnitudes and squares) takes a half or bfloat16 vector widened to double by its bits, with no
  // conversion instruction (primitives::widen_halves): each element the double its conversion gives
  // (built without -ftz; under -ftz=true the conversion flushes a subnormal bfloat16, which the
  // bits keep, while elements folded one at a time, heads, tails and short rows, still flush).
  template <unsigned V>
  __device__ __forceinline__ R fold_vec(const R& s, const primitives::Vec<T, V>& v, std::size_t i) const {
    R lanes[V];
    if constexpr (kWidensHalves<V>) {
      double w[V];
      primitives::widen_halves(v, w);
#pragma unroll
      for (unsigned k = 0; k < V; ++k) lanes[k] = static_cast<R>(f(w[k]));
    } else {
#pragma unroll
      for (unsigned k = 0; k < V; ++k) lanes[k] = element(i + k, v.elem[k]);
    }
    return op(s, pairwise_in_order(lanes, op));
  }
  template <unsigned V, class UU = U>
    requires(!std::is_same_v<UU, NoInput>)
  __device__ __forceinline__ R fold_vec(const R& s, const primitives::Vec<T, V>& v, const primitives::Vec<UU, V>& w,
                                        std::size_t i) const {
    R lanes[V];
#pragma unroll
    for (unsigned k = 0; k < V; ++k) lanes[k] = element(i + k, v.elem[k], w.elem[k]);
    return op(s, pairwise_in_order(lanes, op));
  }
  __device__ __forceinline__ R value(const R& s) const { return s; }
  __device__ __forceinline__ R combine(const R& a, const R& b) const { return op(a, b); }
  __host__ __device__ __forceinline__ R partial(const R& a) const { return a; }
  __device__ __forceinline__ R merge(const R& a, const R& b) const { return op(a, b); }
  __host__ __device__ __forceinline__ R partial_identity() const { return identity(); }
  __host__ __device__ __forceinline__ Out project(const R& p) const { return finish(p); }
};

}  // namespace fastreduce::engine
