// fastreduce::nccl: reductions of an array sharded over the ranks of an NCCL communicator.
//
//   // every rank: its shard of the array, in rank order
//   float s = fastreduce::nccl::reduce(comm, d_shard, n_local);
//   fastreduce::nccl::reduce_async(d_temp, temp_bytes, comm, d_shard, n_local, d_out, op, stream, opt);
//
// Every rank passes its shard and gets the reduction of the concatenation of all shards in rank
// order. The calls are collective: every rank of the communicator makes the same call (same op,
// Options, element type and, for the axis form, the same outer and inner sizes) with its own shard;
// a mismatch is undefined, like a mismatched NCCL collective. An argument error found before the
// first collective is returned on that rank alone, so the other ranks would wait for it: check
// arguments the same way on every rank. Shards may have any size, empty ones included.
//
// Guarantees:
//   - Mode::Fast: a local engine pass, then one small collective: an ncclAllReduce of the
//     partials for sums of the types NCCL adds (float, double, 32- and 64-bit integers; the
//     accumulator of 8- and 16-bit inputs and bool is int64) and integer Min and Max, else an
//     all-gather of every rank's partial combined in rank order. Every rank gets the same bits,
//     and a call repeated on the same communicator with the same shards gives the same bits.
//   - Mode::Reproducible, floating-point Sum: the result is bitwise equal to the single-GPU
//     reproducible fastreduce::reduce of the whole array, for any number of ranks, any shard
//     sizes and any GPUs. The exact fixed-point accumulator is integer-valued, so the ranks'
//     limbs add exactly in any order (an ncclAllReduce of 64-bit integers); the only data that
//     moves are the first kReproTile elements of each shard (an all-gather of 16 or 32 KiB per
//     rank), which complete the summation tile that a shard boundary cuts.
//   - Mode::Exact, floating-point Sum: the exact sum of the whole array rounded once, so bitwise
//     equal to the single-GPU Mode::Exact fastreduce::reduce (and to any correct exact sum), for
//     any number of ranks, shard sizes and GPUs. Each rank sums its shard exactly into a carried
//     row of integer limbs (about 0.3 KB for float, 0.8 KB for double); one ncclAllReduce of
//     64-bit integers adds the rows, and every rank rounds the total. No element moves.
//   - Integers, Min, Max and the bitwise ops are exact in every mode.
//
// The reproducible sum's enqueued work depends on a collective result (two collectives with
// kernels between them), and the exact sum's rounding kernel reads its all-reduce's result: call
// them from one thread (or process) per rank, not inside ncclGroupStart/ncclGroupEnd, which
// would defer the collectives past the kernels that need them. Blocking communicators only (a nonblocking one's
// ncclInProgress is returned as cudaErrorNotSupported).
//
// The algorithm talks to the other ranks through a Transport: NCCL's communicator is one
// (CommTransport); LocalGroup runs P virtual ranks on one GPU (one thread per rank), which is how
// the library tests the multi-rank algorithm without several GPUs, and how a user can too.
#pragma once

#include <nccl.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "fastreduce/fastreduce.cuh"

namespace fastreduce::nccl {

// What the multi-rank algorithm needs from the ranks. Both operations are collective and ordered
// on `stream` like NCCL's: they may return before the data has moved.
class Transport {
 public:
  virtual ~Transport() = default;
  [[nodiscard]] virtual int rank() const = 0;
  [[nodiscard]] virtual int size() const = 0;
  // recv[r * bytes, (r + 1) * bytes) = rank r's send[0, bytes), on every rank.
  virtual cudaError_t all_gather(const void* d_send, void* d_recv, std::size_t bytes, cudaStream_t stream) = 0;
  // recv[i] = the sum over the ranks of send[i] (two's complement, wrapping), on every rank.
  virtual cudaError_t all_reduce_sum(const std::int64_t* d_send, std::int64_t* d_recv, std::size_t count,
                                     cudaStream_t stream) = 0;
  // Optional: recv[i] = the reduction over the ranks of send[i], the same on every rank and
  // deterministic for a given set of ranks. A transport without it returns cudaErrorNotSupported
  // (the default), and the algorithm all-gathers and combines in rank order instead.
  enum class Element { Float, Double, Int32, Uint32, Int64, Uint64 };
  enum class Combine { Sum, Min, Max };
  virtual cudaError_t all_reduce(const void* d_send, void* d_recv, std::size_t count, Element element,
                                 Combine combine, cudaStream_t stream) {
    (void)d_send, (void)d_recv, (void)count, (void)element, (void)combine, (void)stream;
    return cudaErrorNotSupported;
  }
  // The last failure's description (empty when nothing failed).
  [[nodiscard]] virtual std::string last_error() const { return {}; }
};

// The CUDA error a failing NCCL call is reported as: invalid arguments and usage as
// cudaErrorInvalidValue, an unhandled CUDA error as itself (cudaErrorUnknown if CUDA has
// none pending), a system error as cudaErrorOperatingSystem, ncclInProgress (a nonblocking
// communicator) as cudaErrorNotSupported, anything else as cudaErrorUnknown.
cudaError_t to_cuda_error(ncclResult_t result);

// An NCCL communicator as a Transport (it does not own the communicator).
class CommTransport final : public Transport {
 public:
  explicit CommTransport(ncclComm_t comm);
  [[nodiscard]] int rank() const override { return rank_; }
  [[nodiscard]] int size() const override { return size_; }
  cudaError_t all_gather(const void* d_send, void* d_recv, std::size_t bytes, cudaStream_t stream) override;
  cudaError_t all_reduce_sum(const std::int64_t* d_send, std::int64_t* d_recv, std::size_t count,
                             cudaStream_t stream) override;
  cudaError_t all_reduce(const void* d_send, void* d_recv, std::size_t count, Element element, Combine combine,
                         cudaStream_t stream) override;
  [[nodiscard]] std::string last_error() const override { return error_; }
  [[nodiscard]] cudaError_t status() const { return status_; }  // of the constructor's queries

 private:
  cudaError_t fail(ncclResult_t result, const char* call);
  ncclComm_t comm_;
  int rank_ = 0;
  int size_ = 1;
  cudaError_t status_ = cudaSuccess;
  std::string error_;
};

// P virtual ranks in one process, each a Transport: rank r is driven by its own host thread
// (the collectives wait, on the host, for every rank to arrive), with streams of the device that
// was current when the group was made (its events are that device's). For tests and for trying
// the multi-rank algorithm on one GPU. A failure on one rank makes that collective, and every
// later one, fail on every rank (cudaErrorUnknown on the others, with last_error() saying so).
class LocalGroup {
 public:
  explicit LocalGroup(int ranks);  // throws fastreduce::Error for ranks outside [1, kMaxRanks]
  ~LocalGroup();
  LocalGroup(const LocalGroup&) = delete;
  LocalGroup& operator=(const LocalGroup&) = delete;
  static constexpr int kMaxRanks = 64;
  [[nodiscard]] int size() const;
  [[nodiscard]] Transport& rank(int r);

  struct State;  // the ranks' shared state (src/multi/transport.cu)

 private:
  std::unique_ptr<State> state_;
};

// The axis form: each rank holds a slice of the reduced axis, `local` describing its slice
// (outer, length = this rank's part of the reduced axis, inner, strides in elements as in
// fastreduce::Axis). Every output is the reduction over the concatenation of the ranks' slices
// in rank order: column sums of a row-sharded matrix are local = {.length = rows_local,
// .inner = columns}. outer and inner must be the same on every rank.
//
// Mode::Reproducible floating-point sums give every output bitwise equal to the single-GPU
// reproducible reduce_axis of the whole array, and need `first`: the index, in the whole reduced
// axis, of this rank's first slice (the sum of the lengths of the ranks before it; without it
// the call returns cudaErrorInvalidValue, and if the ranks' values disagree with their lengths
// every output is NaN). Its cost: the ranks all-gather their first 4095 slices of every output
// (rank count x 4095 x outer x inner elements), which complete the summation tiles that slice
// boundaries cut, and all-reduce an exact accumulator per output (about 0.3 KB for float, 0.8 KB
// for double): small beside the local pass when every rank holds many more than
// rank count x 4096 slices.
//
// Mode::Exact floating-point sums give every output the exact sum rounded once (bitwise equal to
// the single-GPU Mode::Exact reduce_axis of the whole array) and ignore `first`: an exact sum does
// not depend on where a slice begins. Their cost: the all-reduce of an exact accumulator per
// output, no elements moved.
inline constexpr std::size_t kUnknownFirst = SIZE_MAX;

namespace detail {
template <class T, class Op>
cudaError_t reduce_async(void* d_temp, std::size_t& temp_bytes, Transport& transport, const T* d_shard,
                         std::size_t n_local, acc_t<T, Op>* d_out, Op op, cudaStream_t stream, const Options& opt);
template <class T, class Op>
acc_t<T, Op> reduce(Transport& transport, const T* d_shard, std::size_t n_local, Op op, const Options& opt,
                    cudaStream_t stream);
template <class T, class Op>
cudaError_t reduce_axis_async(void* d_temp, std::size_t& temp_bytes, Transport& transport, const T* d_shard,
                              const Axis& local, acc_t<T, Op>* d_out, Op op, cudaStream_t stream, const Options& opt,
                              std::size_t first);
}  // namespace detail

// Enqueues the reduction of the ranks' shards into *d_out on every rank (two-phase contract as
// fastreduce::reduce_async: d_temp == nullptr sets temp_bytes, which depends on n_local and the
// rank count). Errors: those of fastreduce::reduce_async, and a failing NCCL call's (see
// to_cuda_error). Mode::Reproducible sums at most 2^40 elements over all ranks; each rank checks
// its own n_local, and a larger total gives NaN. Mode::Exact sums fewer than 2^40 elements per
// rank (the total may be larger), over fewer than 2^21 ranks. In both modes a rank whose shard or
// output is wrong (d_shard null or misaligned, d_out misaligned, a shard too large) joins the
// collectives before it returns the error, and every rank's result is NaN. Errors of the size
// query, a null d_out and a temp_bytes too small are returned at once, on that rank alone.
template <class T, class Op = Sum>
  requires reducible<T, Op>
cudaError_t reduce_async(void* d_temp, std::size_t& temp_bytes, Transport& transport, const T* d_shard,
                         std::size_t n_local, acc_t<T, Op>* d_out, Op op = {}, cudaStream_t stream = 0,
                         const Options& opt = {}) {
  using S = storage_t<T>;
  return detail::reduce_async<S, Op>(d_temp, temp_bytes, transport, reinterpret_cast<const S*>(d_shard), n_local,
                                     reinterpret_cast<acc_t<S, Op>*>(d_out), op, stream, opt);
}

template <class T, class Op = Sum>
  requires reducible<T, Op>
cudaError_t reduce_async(void* d_temp, std::size_t& temp_bytes, ncclComm_t comm, const T* d_shard,
                         std::size_t n_local, acc_t<T, Op>* d_out, Op op = {}, cudaStream_t stream = 0,
                         const Options& opt = {}) {
  CommTransport transport(comm);
  if (transport.status() != cudaSuccess) return transport.status();
  return reduce_async<T, Op>(d_temp, temp_bytes, static_cast<Transport&>(transport), d_shard, n_local, d_out, op,
                             stream, opt);
}

// Blocking: reduces on `stream` and returns the result on every rank. Throws fastreduce::Error
// naming the bad argument, the failing CUDA call or NCCL's message. Its temporary storage is
// allocated and freed on `stream` (stream-ordered), so ranks may share a stream.
template <class T, class Op = Sum>
  requires reducible<T, Op>
acc_t<T, Op> reduce(Transport& transport, const T* d_shard, std::size_t n_local, Op op = {}, const Options& opt = {},
                    cudaStream_t stream = 0) {
  using S = storage_t<T>;
  return static_cast<acc_t<T, Op>>(
      detail::reduce<S, Op>(transport, reinterpret_cast<const S*>(d_shard), n_local, op, opt, stream));
}

template <class T, class Op = Sum>
  requires reducible<T, Op>
acc_t<T, Op> reduce(ncclComm_t comm, const T* d_shard, std::size_t n_local, Op op = {}, const Options& opt = {},
                    cudaStream_t stream = 0) {
  CommTransport transport(comm);
  check(transport.status(), "fastreduce::nccl::reduce: querying the communicator");
  return reduce<T, Op>(static_cast<Transport&>(transport), d_shard, n_local, op, opt, stream);
}

// Enqueues the axis reduction (above) into d_out[0, outer * inner) on every rank. Errors as
// reduce_async, and fastreduce::reduce_axis_async's for the local slice.
template <class T, class Op = Sum>
  requires reducible<T, Op>
cudaError_t reduce_axis_async(void* d_temp, std::size_t& temp_bytes, Transport& transport, const T* d_shard,
                              Axis local, acc_t<T, Op>* d_out, Op op = {}, cudaStream_t stream = 0,
                              const Options& opt = {}, std::size_t first = kUnknownFirst) {
  using S = storage_t<T>;
  return detail::reduce_axis_async<S, Op>(d_temp, temp_bytes, transport, reinterpret_cast<const S*>(d_shard), local,
                                          reinterpret_cast<acc_t<S, Op>*>(d_out), op, stream, opt, first);
}

template <class T, class Op = Sum>
  requires reducible<T, Op>
cudaError_t reduce_axis_async(void* d_temp, std::size_t& temp_bytes, ncclComm_t comm, const T* d_shard, Axis local,
                              acc_t<T, Op>* d_out, Op op = {}, cudaStream_t stream = 0, const Options& opt = {},
                              std::size_t first = kUnknownFirst) {
  CommTransport transport(comm);
  if (transport.status() != cudaSuccess) return transport.status();
  return reduce_axis_async<T, Op>(d_temp, temp_bytes, static_cast<Transport&>(transport), d_shard, local, d_out, op,
                                  stream, opt, first);
}

}  // namespace fastreduce::nccl
