// The transports of the multi-rank reductions: an NCCL communicator, and P virtual ranks in
// one process.
#include <algorithm>
#include <atomic>
#include <barrier>
#include <cstdio>
#include <string>
#include <vector>

#include "fastreduce/nccl.cuh"

namespace fastreduce::nccl {

cudaError_t to_cuda_error(ncclResult_t result) {
  switch (result) {
    case ncclSuccess:
      return cudaSuccess;
    case ncclInvalidArgument:
    case ncclInvalidUsage:
      return cudaErrorInvalidValue;
    case ncclUnhandledCudaError: {
      const cudaError_t pending = cudaGetLastError();
      return pending != cudaSuccess ? pending : cudaErrorUnknown;
    }
    case ncclSystemError:
      return cudaErrorOperatingSystem;
    case ncclInProgress:
      return cudaErrorNotSupported;
    default:
      return cudaErrorUnknown;
  }
}

CommTransport::CommTransport(ncclComm_t comm) : comm_(comm) {
  if (comm == nullptr) {
    status_ = cudaErrorInvalidValue;
    error_ = "the communicator is null";
    return;
  }
  if (ncclResult_t r = ncclCommUserRank(comm, &rank_); r != ncclSuccess) {
    status_ = fail(r, "ncclCommUserRank");
    return;
  }
  if (ncclResult_t r = ncclCommCount(comm, &size_); r != ncclSuccess) status_ = fail(r, "ncclCommCount");
}

cudaError_t CommTransport::fail(ncclResult_t result, const char* call) {
  error_ = std::string(call) + ": " + ncclGetErrorString(result);
  if (comm_ != nullptr) {
    const char* detail = ncclGetLastError(comm_);
    if (detail != nullptr && detail[0] != '\0') error_ += std::string(" (") + detail + ")";
  }
  if (result == ncclInProgress) error_ += " (nonblocking communicators are not supported)";
  return to_cuda_error(result);
}

cudaError_t CommTransport::all_gather(const void* d_send, void* d_recv, std::size_t bytes, cudaStream_t stream) {
  const ncclResult_t r = ncclAllGather(d_send, d_recv, bytes, ncclUint8, comm_, stream);
  return r == ncclSuccess ? cudaSuccess : fail(r, "ncclAllGather");
}

cudaError_t CommTransport::all_reduce_sum(const std::int64_t* d_send, std::int64_t* d_recv, std::size_t count,
                                          cudaStream_t stream) {
  const ncclResult_t r = ncclAllReduce(d_send, d_recv, count, ncclInt64, ncclSum, comm_, stream);
  return r == ncclSuccess ? cudaSuccess : fail(r, "ncclAllReduce");
}

cudaError_t CommTransport::all_reduce(const void* d_send, void* d_recv, std::size_t count, Element element,
                                      Combine combine, cudaStream_t stream) {
  const ncclDataType_t type = element == Element::Float    ? ncclFloat32
                              : element == Element::Double ? ncclFloat64
                              : element == Element::Int32  ? ncclInt32
                              : element == Element::Uint32 ? ncclUint32
                              : element == Element::Int64  ? ncclInt64
                                                           : ncclUint64;
  const ncclRedOp_t op = combine == Combine::Sum ? ncclSum : combine == Combine::Min ? ncclMin : ncclMax;
  const ncclResult_t r = ncclAllReduce(d_send, d_recv, count, type, op, comm_, stream);
  return r == ncclSuccess ? cudaSuccess : fail(r, "ncclAllReduce");
}

// ---------------------------------------------------------------------------------------------
// LocalGroup: a collective is three host barriers. Each rank publishes its send buffer and an
// event recorded after it on its stream; every rank's stream waits for all those events and
// copies (or adds) the buffers; each rank records a second event after its reads, and every
// stream waits for all of them before going on, so no rank overwrites a send buffer that another
// is still reading. The last barrier keeps the events from being recorded again (by the next
// collective) before every rank has enqueued its waits on them.

namespace {

struct SumSources {
  const std::int64_t* src[LocalGroup::kMaxRanks];
};

__global__ void sum_ranks_kernel(SumSources sources, int ranks, std::size_t count, std::int64_t* out) {
  for (std::size_t i = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x; i < count;
       i += std::size_t(gridDim.x) * blockDim.x) {
    unsigned long long sum = 0;  // wraps, as NCCL's integer sum does on the GPU
    for (int r = 0; r < ranks; ++r) sum += static_cast<unsigned long long>(sources.src[r][i]);
    out[i] = static_cast<std::int64_t>(sum);
  }
}

}  // namespace

struct LocalGroup::State {
  explicit State(int n) : ranks(n), barrier(n), sends(n), ready(n), done(n) {}
  std::atomic<bool> failed{false};  // sticky: a rank failed in a collective
  ~State() {
    for (cudaEvent_t e : ready) if (e != nullptr) cudaEventDestroy(e);
    for (cudaEvent_t e : done) if (e != nullptr) cudaEventDestroy(e);
  }
  int ranks;
  std::barrier<> barrier;
  std::vector<const void*> sends;
  std::vector<cudaEvent_t> ready, done;
  std::vector<std::unique_ptr<Transport>> endpoints;
};

namespace {

class LocalRank final : public Transport {
 public:
  LocalRank(LocalGroup::State& state, int rank) : state_(state), rank_(rank) {}
  [[nodiscard]] int rank() const override { return rank_; }
  [[nodiscard]] int size() const override { return state_.ranks; }
  cudaError_t all_gather(const void* d_send, void* d_recv, std::size_t bytes, cudaStream_t stream) override {
    return collective(d_send, stream, [&](cudaStream_t s) -> cudaError_t {
      for (int r = 0; r < state_.ranks; ++r) {
        if (bytes == 0) break;
        if (cudaError_t e = cudaMemcpyAsync(static_cast<char*>(d_recv) + r * bytes, state_.sends[r], bytes,
                                            cudaMemcpyDefault, s);
            e != cudaSuccess) {
          return e;
        }
      }
      return cudaSuccess;
    });
  }
  cudaError_t all_reduce_sum(const std::int64_t* d_send, std::int64_t* d_recv, std::size_t count,
                             cudaStream_t stream) override {
    return collective(d_send, stream, [&](cudaStream_t s) -> cudaError_t {
      if (count == 0) return cudaSuccess;
      SumSources sources{};
      for (int r = 0; r < state_.ranks; ++r) sources.src[r] = static_cast<const std::int64_t*>(state_.sends[r]);
      const unsigned blocks = static_cast<unsigned>(std::min<std::size_t>((count + 255) / 256, 1024));
      sum_ranks_kernel<<<blocks, 256, 0, s>>>(sources, state_.ranks, count, d_recv);
      return cudaGetLastError();
    });
  }
  [[nodiscard]] std::string last_error() const override { return error_; }

 private:
  // Every rank must reach every barrier, also after a failure, or the others would wait forever:
  // the first failure is remembered and returned at the end.
  template <class Move>
  cudaError_t collective(const void* d_send, cudaStream_t stream, Move&& move) {
    bool mine = false;  // this rank's own failure (the others see state_.failed)
    auto note = [&](cudaError_t e) {
      if (e != cudaSuccess && !mine) {
        mine = true;
        error_ = std::string("LocalGroup: ") + cudaGetErrorString(e);
        state_.failed.store(true);
      }
      return e;
    };
    cudaError_t status = note(cudaEventRecord(state_.ready[rank_], stream));
    state_.sends[rank_] = d_send;
    state_.barrier.arrive_and_wait();  // every send buffer and event is published
    const bool go = !state_.failed.load();
    for (int r = 0; r < state_.ranks && go && status == cudaSuccess; ++r) status = note(cudaStreamWaitEvent(stream, state_.ready[r]));
    if (go && status == cudaSuccess) status = note(move(stream));
    if (go && status == cudaSuccess) status = note(cudaEventRecord(state_.done[rank_], stream));
    state_.barrier.arrive_and_wait();  // every rank has enqueued its reads
    const bool ok = !state_.failed.load();
    for (int r = 0; r < state_.ranks && ok && status == cudaSuccess; ++r) status = note(cudaStreamWaitEvent(stream, state_.done[r]));
    state_.barrier.arrive_and_wait();  // every rank has enqueued its waits on the events
    if (status == cudaSuccess && state_.failed.load()) {
      error_ = "LocalGroup: another rank's collective failed";
      return cudaErrorUnknown;
    }
    if (status == cudaSuccess) error_.clear();
    return status;
  }
  LocalGroup::State& state_;
  int rank_;
  std::string error_;
};

}  // namespace

LocalGroup::LocalGroup(int ranks) {
  if (ranks < 1 || ranks > kMaxRanks) {
    throw Error(cudaErrorInvalidValue, "fastreduce::nccl::LocalGroup: " + std::to_string(ranks) +
                                           " ranks (1 to " + std::to_string(kMaxRanks) + ")");
  }
  state_ = std::make_unique<State>(ranks);
  for (int r = 0; r < ranks; ++r) {
    for (cudaEvent_t* e : {&state_->ready[r], &state_->done[r]}) {
      check(cudaEventCreateWithFlags(e, cudaEventDisableTiming), "fastreduce::nccl::LocalGroup: cudaEventCreate");
    }
    state_->endpoints.push_back(std::make_unique<LocalRank>(*state_, r));
  }
}

LocalGroup::~LocalGroup() = default;

int LocalGroup::size() const { return state_->ranks; }

Transport& LocalGroup::rank(int r) {
  if (r < 0 || r >= state_->ranks) {
    throw Error(cudaErrorInvalidValue, "fastreduce::nccl::LocalGroup::rank: " + std::to_string(r) + " is not a rank of " +
                                           std::to_string(state_->ranks));
  }
  return *state_->endpoints[r];
}

}  // namespace fastreduce::nccl
