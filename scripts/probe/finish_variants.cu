// Probe: how should a multi-block reduction finish when it may not need the whole GPU at once
// (no cooperative launch, no block waiting for another)? Float sum with the engine's load loop
// (1024 threads x 4 vectors, 2 blocks per SM), back to back, inputs rotated beyond the L2,
// against CUB in the same run. Three experiments (docs/notes.md, "How a grid finishes"):
//   finish_variants launch     the finish: coop (cooperative launch and a grid barrier, what the
//                              engine did), memset / write (a last-block counter zeroed per call
//                              by cudaMemsetAsync / cuStreamWriteValue32), tag (no stream op: a
//                              CAS-updated word tagged with %gridid), pdl (a second, one-block
//                              kernel with programmatic dependent launch); and whether %gridid
//                              differs across graph replays
//   finish_variants one-block  pdl with and without an early trigger and with a 256-thread
//                              combine, against one block for the whole input; then whether the
//                              pdl pair finishes while a kernel holds half, or all but two, SMs
//   finish_variants tail       (built with relocatable device code) the combine as a device-side
//                              tail launch: one host launch, against the pdl pair
// Outputs: docs/results/finish_variants_{launch,one-block,tail}_H100_2026-11-23.txt.
#include <cooperative_groups.h>
#include <cuda.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cub/device/device_reduce.cuh>
#include <set>
#include <string>
#include <vector>

constexpr unsigned kThreads = 1024, kUnroll = 4;

__device__ __forceinline__ float block_sum(float v) {
  __shared__ float warp_sums[32];
  for (int o = 16; o; o >>= 1) v += __shfl_xor_sync(~0u, v, o);
  if (threadIdx.x % 32 == 0) warp_sums[threadIdx.x / 32] = v;
  __syncthreads();
  if (threadIdx.x < 32) {
    v = threadIdx.x < blockDim.x / 32 ? warp_sums[threadIdx.x] : 0.f;
    for (int o = 16; o; o >>= 1) v += __shfl_xor_sync(~0u, v, o);
  }
  return v;
}

__device__ __forceinline__ float load_sum(const float4* in, size_t nv, size_t share) {
  const size_t begin = blockIdx.x * share, end = min(begin + share, nv);
  float acc = 0;
  size_t i = begin + threadIdx.x;
  for (; i + (kUnroll - 1) * kThreads < end; i += kUnroll * kThreads) {
    float4 v[kUnroll];
#pragma unroll
    for (unsigned u = 0; u < kUnroll; ++u) v[u] = __ldg(in + i + u * kThreads);
#pragma unroll
    for (unsigned u = 0; u < kUnroll; ++u) acc += (v[u].x + v[u].y) + (v[u].z + v[u].w);
  }
  for (; i < end; i += kThreads) {
    float4 v = __ldg(in + i);
    acc += (v.x + v.y) + (v.z + v.w);
  }
  return acc;
}

__device__ __forceinline__ void combine(const float* part, float* out) {
  float acc = 0;
  for (unsigned b = threadIdx.x; b < gridDim.x; b += blockDim.x) acc += __ldcg(part + b);
  acc = block_sum(acc);
  if (threadIdx.x == 0) *out = acc;
}

__global__ void __launch_bounds__(kThreads) k_coop(const float4* in, size_t nv, size_t share, float* part, float* out) {
  const float s = block_sum(load_sum(in, nv, share));
  if (threadIdx.x == 0) part[blockIdx.x] = s;
  cooperative_groups::this_grid().sync();
  if (blockIdx.x == 0) combine(part, out);
}

__global__ void __launch_bounds__(kThreads)
    k_counter(const float4* in, size_t nv, size_t share, float* part, unsigned* counter, float* out) {
  __shared__ bool last;
  const float s = block_sum(load_sum(in, nv, share));
  if (threadIdx.x == 0) {
    part[blockIdx.x] = s;
    __threadfence();
    last = atomicAdd(counter, 1u) == gridDim.x - 1;
    __threadfence();
  }
  __syncthreads();
  if (last) combine(part, out);
}

__device__ __forceinline__ unsigned long long grid_tag() {
  unsigned long long id;
  asm volatile("mov.u64 %0, %%gridid;" : "=l"(id));
  return id;
}

__global__ void __launch_bounds__(kThreads)
    k_tag(const float4* in, size_t nv, size_t share, float* part, unsigned long long* word, float* out) {
  __shared__ bool last;
  const float s = block_sum(load_sum(in, nv, share));
  if (threadIdx.x == 0) {
    part[blockIdx.x] = s;
    __threadfence();
    const unsigned long long tag = (grid_tag() * 0x9E3779B97F4A7C15ull) | 1;  // odd: never 0
    const unsigned long long tag_bits = tag & ~0xFFFFFull;
    unsigned long long cur = *reinterpret_cast<volatile unsigned long long*>(word), seen;
    unsigned count;
    while (true) {
      const bool mine = (cur & ~0xFFFFFull) == tag_bits;
      count = mine ? unsigned(cur & 0xFFFFF) : 0;
      seen = atomicCAS(word, cur, tag_bits | (count + 1));
      if (seen == cur) break;
      cur = seen;
    }
    last = count + 1 == gridDim.x;
    __threadfence();
  }
  __syncthreads();
  if (last) combine(part, out);
}

__global__ void __launch_bounds__(kThreads) k_partials(const float4* in, size_t nv, size_t share, float* part) {
  const float s = block_sum(load_sum(in, nv, share));
  if (threadIdx.x == 0) part[blockIdx.x] = s;
}
__global__ void __launch_bounds__(kThreads) k_partials_trigger(const float4* in, size_t nv, size_t share, float* part) {
  cudaTriggerProgrammaticLaunchCompletion();  // every block has started: the finish may be scheduled
  const float s = block_sum(load_sum(in, nv, share));
  if (threadIdx.x == 0) part[blockIdx.x] = s;
}
template <unsigned U>
__global__ void __launch_bounds__(1024) k_one_block(const float4* in, size_t nv, float* out) {
  float acc = 0;
  size_t i = threadIdx.x;
  for (; i + (U - 1) * 1024 < nv; i += U * 1024) {
    float4 v[U];
#pragma unroll
    for (unsigned u = 0; u < U; ++u) v[u] = __ldg(in + i + u * 1024);
#pragma unroll
    for (unsigned u = 0; u < U; ++u) acc += (v[u].x + v[u].y) + (v[u].z + v[u].w);
  }
  for (; i < nv; i += 1024) {
    float4 v = __ldg(in + i);
    acc += (v.x + v.y) + (v.z + v.w);
  }
  acc = block_sum(acc);
  if (threadIdx.x == 0) *out = acc;
}
// Holds one SM: all of its shared memory, spinning until *release or about two seconds pass.
__global__ void k_hold(volatile unsigned* started, volatile unsigned* release, unsigned* timed_out) {
  extern __shared__ unsigned char hold_smem[];
  if (threadIdx.x == 0) {
    hold_smem[0] = 1;
    atomicAdd((unsigned*)started, 1u);
    unsigned long long t0, t;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t0));
    do {
      asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
      if (t - t0 > 2000000000ull) {
        atomicAdd(timed_out, 1u);
        break;
      }
    } while (*release == 0);
  }
  __syncthreads();
}
template <unsigned FinishThreads>
__global__ void __launch_bounds__(FinishThreads) k_finish_t(const float* part, unsigned blocks, float* out) {
  cudaGridDependencySynchronize();
  float acc = 0;
  for (unsigned b = threadIdx.x; b < blocks; b += blockDim.x) acc += __ldcg(part + b);
  acc = block_sum(acc);
  if (threadIdx.x == 0) *out = acc;
}
#ifdef FASTREDUCE_PROBE_TAIL_LAUNCH
__global__ void __launch_bounds__(kThreads)
    k_partials_tail(const float4* in, size_t nv, size_t share, float* part, float* out) {
  // Tail launch: runs after this whole grid has completed (device runtime, relocatable code).
  if (blockIdx.x == 0 && threadIdx.x == 0) k_finish_t<256><<<1, 256, 0, cudaStreamTailLaunch>>>(part, gridDim.x, out);
  const float s = block_sum(load_sum(in, nv, share));
  if (threadIdx.x == 0) part[blockIdx.x] = s;
}
#endif

__global__ void k_record_tag(unsigned long long* where) {
  if (threadIdx.x == 0 && blockIdx.x == 0) *where = grid_tag();
}

#define CHECK(x)                                                                     \
  do {                                                                               \
    cudaError_t e_ = (x);                                                            \
    if (e_ != cudaSuccess) {                                                         \
      std::printf("%s:%d %s: %s\n", __FILE__, __LINE__, #x, cudaGetErrorString(e_)); \
      std::exit(1);                                                                  \
    }                                                                                \
  } while (0)

template <class K, class... Args>
void launch_pdl(K kernel, unsigned grid, unsigned threads, cudaStream_t st, Args... args) {
  cudaLaunchConfig_t cfg{};
  cfg.gridDim = grid;
  cfg.blockDim = threads;
  cfg.stream = st;
  cudaLaunchAttribute attr{};
  attr.id = cudaLaunchAttributeProgrammaticStreamSerialization;
  attr.val.programmaticStreamSerializationAllowed = 1;
  cfg.attrs = &attr;
  cfg.numAttrs = 1;
  CHECK(cudaLaunchKernelEx(&cfg, kernel, args...));
}

// The pair the engine uses: the partials (with an early trigger when Trigger), then a one-block
// combine of FinishThreads threads with programmatic dependent launch.
template <bool Trigger, unsigned FinishThreads>
void pdl_pair(cudaStream_t st, const float4* in, size_t nv, size_t share, unsigned grid, float* part, float* out) {
  if constexpr (Trigger)
    k_partials_trigger<<<grid, kThreads, 0, st>>>(in, nv, share, part);
  else
    k_partials<<<grid, kThreads, 0, st>>>(in, nv, share, part);
  launch_pdl(k_finish_t<FinishThreads>, 1, FinishThreads, st, (const float*)part, grid, out);
}

// Back-to-back time per call on `st` (median of 15 batches of `calls` calls between two events,
// after 20 warm-up calls), and the host's time per enqueued call in *host_us.
template <class F>
float time_calls(cudaStream_t st, int calls, F&& f, double* host_us) {
  cudaEvent_t a, b;
  cudaEventCreate(&a);
  cudaEventCreate(&b);
  for (int i = 0; i < 20; ++i) f(i);
  std::vector<float> t;
  std::vector<double> h;
  int k = 0;
  for (int r = 0; r < 15; ++r) {
    cudaEventRecord(a, st);
    const auto h0 = std::chrono::steady_clock::now();
    for (int i = 0; i < calls; ++i) f(k++);
    h.push_back(std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - h0).count() / calls);
    cudaEventRecord(b, st);
    CHECK(cudaEventSynchronize(b));
    float ms;
    cudaEventElapsedTime(&ms, a, b);
    t.push_back(ms * 1000 / calls);
  }
  std::sort(t.begin(), t.end());
  std::sort(h.begin(), h.end());
  *host_us = h[h.size() / 2];
  cudaEventDestroy(a);
  cudaEventDestroy(b);
  return t[t.size() / 2];
}

// One size 2^p of an experiment: 1024-thread blocks, one per 1024 vectors up to `resident`, each
// with an equal share (whole rounds of the block); inputs rotated among slices of the arena;
// calls per timed batch.
struct Shape {
  size_t n, nv, slices, share;
  unsigned grid;
  int calls;
  Shape(int p, size_t arena, unsigned resident)
      : n(size_t(1) << p),
        nv(n / 4),
        slices(std::max<size_t>(1, std::min<size_t>(arena / n, 4096))),
        share(0),
        grid(unsigned(std::clamp<size_t>((nv + 1023) / 1024, 1, resident))),
        calls(std::clamp<int>(int((size_t(1) << 27) / n), 20, 400)) {
    share = ((nv + grid - 1) / grid + kThreads - 1) / kThreads * kThreads;
  }
  const float4* slice(const float* in, int i) const {
    return reinterpret_cast<const float4*>(in + (size_t(i) % slices) * n);
  }
};

// `count` floats of whole numbers 1..7 (never zeros), for inputs rotated through in slices.
float* whole_number_input(size_t count) {
  float* in;
  CHECK(cudaMalloc(&in, count * 4));
  std::vector<float> h(count);
  for (size_t i = 0; i < count; ++i) h[i] = float(1 + (i * 2654435761u >> 7) % 7);
  CHECK(cudaMemcpy(in, h.data(), count * 4, cudaMemcpyHostToDevice));
  return in;
}

void launch_variants() {
  cudaDeviceProp prop;
  CHECK(cudaGetDeviceProperties(&prop, 0));
  std::printf("%s, %d SMs\n", prop.name, prop.multiProcessorCount);
  int per_sm = 0;
  CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, k_counter, kThreads, 0));
  const unsigned resident = prop.multiProcessorCount * per_sm;

  using WriteValue = CUresult (*)(CUstream, CUdeviceptr, cuuint32_t, unsigned);
  void* fn = nullptr;
  cudaDriverEntryPointQueryResult q;
  CHECK(cudaGetDriverEntryPointByVersion("cuStreamWriteValue32", &fn, 12000, cudaEnableDefault, &q));
  const auto write_value = reinterpret_cast<WriteValue>(fn);

  const size_t arena = size_t(1) << 28;
  float* in = whole_number_input(arena);
  float *part, *out;
  unsigned* counter;
  unsigned long long* word;
  CHECK(cudaMalloc(&part, 1 << 20));
  CHECK(cudaMalloc(&out, 64));
  CHECK(cudaMalloc(&counter, 64));
  CHECK(cudaMalloc(&word, 64));
  CHECK(cudaMemset(counter, 0, 64));
  CHECK(cudaMemset(word, 0xA5, 64));
  void* cub_temp;
  CHECK(cudaMalloc(&cub_temp, 64 << 20));
  cudaStream_t st;
  CHECK(cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking));

  std::printf("%-6s %9s %9s %9s %9s %9s %9s %9s   (us per call, back to back; host us per enqueue in [])\n", "n",
              "grid", "cub", "coop", "memset", "write", "tag", "pdl");
  for (int p : {14, 16, 18, 20, 22, 24, 26}) {
    const Shape shape(p, arena, resident);
    const size_t n = shape.n, nv = shape.nv, share = shape.share;
    const unsigned grid = shape.grid;
    const int calls = shape.calls;
    auto slice = [&](int i) { return shape.slice(in, i); };
    double host[6];
    size_t cub_bytes = 64 << 20;
    const float t_cub = time_calls(
        st, calls, [&](int i) { cub::DeviceReduce::Sum(cub_temp, cub_bytes, (const float*)slice(i), out, n, st); },
        &host[0]);
    const float t_coop = time_calls(
        st, calls,
        [&](int i) {
          const float4* pin = slice(i);
          size_t v = nv, s = share;
          void* args[] = {(void*)&pin, &v, &s, &part, &out};
          CHECK(cudaLaunchCooperativeKernel((void*)k_coop, grid, kThreads, args, 0, st));
        },
        &host[1]);
    const float t_memset = time_calls(
        st, calls,
        [&](int i) {
          cudaMemsetAsync(counter, 0, 4, st);
          k_counter<<<grid, kThreads, 0, st>>>(slice(i), nv, share, part, counter, out);
        },
        &host[2]);
    const float t_write = time_calls(
        st, calls,
        [&](int i) {
          write_value(st, reinterpret_cast<CUdeviceptr>(counter), 0, 0);
          k_counter<<<grid, kThreads, 0, st>>>(slice(i), nv, share, part, counter, out);
        },
        &host[3]);
    const float t_tag = time_calls(
        st, calls, [&](int i) { k_tag<<<grid, kThreads, 0, st>>>(slice(i), nv, share, part, word, out); }, &host[4]);
    const float t_pdl = time_calls(
        st, calls, [&](int i) { pdl_pair<false, 1024>(st, slice(i), nv, share, grid, part, out); }, &host[5]);
    CHECK(cudaDeviceSynchronize());
    std::printf("2^%-4d %9u %9.2f %9.2f %9.2f %9.2f %9.2f %9.2f\n", p, grid, t_cub, t_coop, t_memset, t_write, t_tag,
                t_pdl);
    std::printf("%-6s %9s [%7.2f] [%7.2f] [%7.2f] [%7.2f] [%7.2f] [%7.2f]\n", "", "", host[0], host[1], host[2],
                host[3], host[4], host[5]);
  }
  // Correctness of each variant on one input.
  {
    const size_t n = (size_t(1) << 22), nv = n / 4;
    std::vector<float> h(n);
    CHECK(cudaMemcpy(h.data(), in, n * 4, cudaMemcpyDeviceToHost));
    double ref = 0;
    for (float x : h) ref += x;
    const unsigned grid = resident;
    const size_t share = ((nv + grid - 1) / grid + kThreads - 1) / kThreads * kThreads;
    float r[4];
    write_value(st, reinterpret_cast<CUdeviceptr>(counter), 0, 0);
    k_counter<<<grid, kThreads, 0, st>>>((const float4*)in, nv, share, part, counter, out);
    CHECK(cudaMemcpyAsync(&r[0], out, 4, cudaMemcpyDeviceToHost, st));
    CHECK(cudaStreamSynchronize(st));
    k_tag<<<grid, kThreads, 0, st>>>((const float4*)in, nv, share, part, word, out);
    CHECK(cudaMemcpyAsync(&r[1], out, 4, cudaMemcpyDeviceToHost, st));
    CHECK(cudaStreamSynchronize(st));
    std::printf("check 2^22: ref %.1f counter %.1f tag %.1f\n", ref, r[0], r[1]);
  }
  // %gridid across launches, streams and graph replays.
  {
    unsigned long long* tags;
    CHECK(cudaMalloc(&tags, 8 * 64));
    cudaStream_t s2;
    CHECK(cudaStreamCreateWithFlags(&s2, cudaStreamNonBlocking));
    for (int i = 0; i < 8; ++i) k_record_tag<<<1, 32, 0, i % 2 ? s2 : st>>>(tags + i);
    cudaGraph_t graph;
    cudaGraphExec_t exec;
    CHECK(cudaStreamBeginCapture(st, cudaStreamCaptureModeGlobal));
    const CUresult wr = write_value(st, reinterpret_cast<CUdeviceptr>(counter), 0, 0);
    k_record_tag<<<1, 32, 0, st>>>(tags + 8);
    CHECK(cudaStreamEndCapture(st, &graph));
    std::printf("cuStreamWriteValue32 during capture: CUresult %d\n", int(wr));
    CHECK(cudaGraphInstantiate(&exec, graph, 0));
    std::vector<unsigned long long> seen;
    for (int r = 0; r < 4; ++r) {
      CHECK(cudaGraphLaunch(exec, st));
      CHECK(cudaStreamSynchronize(st));
      unsigned long long v;
      CHECK(cudaMemcpy(&v, tags + 8, 8, cudaMemcpyDeviceToHost));
      seen.push_back(v);
    }
    std::vector<unsigned long long> h(8);
    CHECK(cudaMemcpy(h.data(), tags, 64, cudaMemcpyDeviceToHost));
    std::printf("gridid launches:");
    for (auto v : h) std::printf(" %llu", v);
    std::printf("\ngridid graph replays:");
    for (auto v : seen) std::printf(" %llu", v);
    std::printf("\n");
  }
  CHECK(cudaDeviceSynchronize());
}

void one_block_and_held() {
  cudaDeviceProp prop;
  CHECK(cudaGetDeviceProperties(&prop, 0));
  std::printf("%s, %d SMs\n", prop.name, prop.multiProcessorCount);
  int per_sm = 0;
  CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, k_partials, kThreads, 0));
  const unsigned resident = prop.multiProcessorCount * per_sm;
  const size_t arena = size_t(1) << 28;
  float* in = whole_number_input(arena);
  float *part, *out;
  CHECK(cudaMalloc(&part, 1 << 20));
  CHECK(cudaMalloc(&out, 64));
  void* cub_temp;
  CHECK(cudaMalloc(&cub_temp, 64 << 20));
  cudaStream_t st;
  CHECK(cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking));

  std::printf("%-6s %5s %8s %8s %8s %8s %8s %8s   us per call back to back, [host us per enqueue]\n", "n", "grid",
              "cub", "pdl", "pdl_trig", "pdl_f256", "one_u4", "one_u8");
  for (int p : {14, 15, 16, 17, 18, 19, 20, 22, 24, 26}) {
    const Shape shape(p, arena, resident);
    const size_t n = shape.n, nv = shape.nv, share = shape.share;
    const unsigned grid = shape.grid;
    const int calls = shape.calls;
    auto slice = [&](int i) { return shape.slice(in, i); };
    double host[6] = {};
    float t[6] = {};
    size_t cub_bytes = 64 << 20;
    t[0] = time_calls(
        st, calls, [&](int i) { cub::DeviceReduce::Sum(cub_temp, cub_bytes, (const float*)slice(i), out, n, st); },
        &host[0]);
    t[1] = time_calls(
        st, calls, [&](int i) { pdl_pair<false, 1024>(st, slice(i), nv, share, grid, part, out); }, &host[1]);
    t[2] = time_calls(
        st, calls, [&](int i) { pdl_pair<true, 1024>(st, slice(i), nv, share, grid, part, out); }, &host[2]);
    t[3] = time_calls(
        st, calls, [&](int i) { pdl_pair<true, 256>(st, slice(i), nv, share, grid, part, out); }, &host[3]);
    if (p <= 19) {
      t[4] = time_calls(
          st, calls, [&](int i) { k_one_block<4><<<1, 1024, 0, st>>>(slice(i), nv, out); }, &host[4]);
      t[5] = time_calls(
          st, calls, [&](int i) { k_one_block<8><<<1, 1024, 0, st>>>(slice(i), nv, out); }, &host[5]);
    }
    CHECK(cudaDeviceSynchronize());
    std::printf("2^%-4d %5u %8.2f %8.2f %8.2f %8.2f %8.2f %8.2f\n", p, grid, t[0], t[1], t[2], t[3], t[4], t[5]);
    std::printf("%-12s [%6.2f] [%6.2f] [%6.2f] [%6.2f] [%6.2f] [%6.2f]\n", "", host[0], host[1], host[2], host[3],
                host[4], host[5]);
  }
  {  // correctness of the trigger variant
    const size_t n = size_t(1) << 22, nv = n / 4;
    std::vector<float> h(n);
    CHECK(cudaMemcpy(h.data(), in, n * 4, cudaMemcpyDeviceToHost));
    double ref = 0;
    for (float x : h) ref += x;
    const unsigned grid = resident;
    const size_t share = ((nv + grid - 1) / grid + kThreads - 1) / kThreads * kThreads;
    float r = 0;
    pdl_pair<true, 256>(st, (const float4*)in, nv, share, grid, part, out);
    CHECK(cudaMemcpyAsync(&r, out, 4, cudaMemcpyDeviceToHost, st));
    CHECK(cudaStreamSynchronize(st));
    std::printf("check 2^22: ref %.1f pdl_trig %.1f\n", ref, r);
  }
  // Other work holds SMs: does the two-kernel reduction finish while it runs?
  {
    unsigned* flags;
    CHECK(cudaHostAlloc(&flags, 64, cudaHostAllocMapped));
    int smem = 0;
    CHECK(cudaDeviceGetAttribute(&smem, cudaDevAttrMaxSharedMemoryPerBlockOptin, 0));
    CHECK(cudaFuncSetAttribute(k_hold, cudaFuncAttributeMaxDynamicSharedMemorySize, smem));
    cudaStream_t hs;
    CHECK(cudaStreamCreateWithFlags(&hs, cudaStreamNonBlocking));
    for (unsigned held : {unsigned(prop.multiProcessorCount / 2), unsigned(prop.multiProcessorCount - 2)}) {
      for (int p : {20, 24}) {
        const size_t n = size_t(1) << p, nv = n / 4;
        const unsigned grid = unsigned(std::clamp<size_t>((nv + 1023) / 1024, 1, resident));
        const size_t share = ((nv + grid - 1) / grid + kThreads - 1) / kThreads * kThreads;
        flags[0] = 0;
        flags[1] = 0;
        flags[2] = 0;
        CHECK(cudaDeviceSynchronize());
        k_hold<<<held, 1024, smem, hs>>>(flags, flags + 1, flags + 2);
        while (((volatile unsigned*)flags)[0] < held) {
        }
        const auto t0 = std::chrono::steady_clock::now();
        pdl_pair<true, 256>(st, (const float4*)in, nv, share, grid, part, out);
        cudaError_t q;
        while ((q = cudaStreamQuery(st)) == cudaErrorNotReady &&
               std::chrono::steady_clock::now() - t0 < std::chrono::milliseconds(1500)) {
        }
        const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
        ((volatile unsigned*)flags)[1] = 1;
        CHECK(cudaDeviceSynchronize());
        std::printf("held %u SMs, 2^%d: %s after %.3f ms, holders timed out: %u\n", held, p,
                    q == cudaSuccess ? "finished" : "NOT finished", ms, flags[2]);
      }
    }
  }
  CHECK(cudaDeviceSynchronize());
}
#ifdef FASTREDUCE_PROBE_TAIL_LAUNCH
void tail_launch() {
  cudaDeviceProp prop;
  CHECK(cudaGetDeviceProperties(&prop, 0));
  std::printf("%s\n", prop.name);
  int per_sm = 0;
  CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, k_partials_tail, kThreads, 0));
  const unsigned resident = prop.multiProcessorCount * per_sm;
  const size_t arena = size_t(1) << 27;
  float* in = whole_number_input(arena);
  float *part, *out;
  CHECK(cudaMalloc(&part, 1 << 20));
  CHECK(cudaMalloc(&out, 64));
  void* cub_temp;
  CHECK(cudaMalloc(&cub_temp, 64 << 20));
  cudaStream_t nb;
  CHECK(cudaStreamCreateWithFlags(&nb, cudaStreamNonBlocking));
  std::printf("%-6s %8s | %8s %8s %8s |   us/call back to back [host]\n", "n", "stream", "cub", "pdl", "tail");
  for (cudaStream_t st : {cudaStream_t(0), nb}) {
    for (int p : {16, 17, 18, 19, 20, 22, 24}) {
      const Shape shape(p, arena, resident);
      const size_t n = shape.n, nv = shape.nv, share = shape.share;
      const unsigned grid = shape.grid;
      const int calls = shape.calls;
      auto slice = [&](int i) { return shape.slice(in, i); };
      double host[3];
      float t[3];
      size_t cb = 64 << 20;
      t[0] = time_calls(
          st, calls, [&](int i) { cub::DeviceReduce::Sum(cub_temp, cb, (const float*)slice(i), out, n, st); },
          &host[0]);
      t[1] = time_calls(
          st, calls, [&](int i) { pdl_pair<false, 256>(st, slice(i), nv, share, grid, part, out); }, &host[1]);
      t[2] = time_calls(
          st, calls, [&](int i) { k_partials_tail<<<grid, kThreads, 0, st>>>(slice(i), nv, share, part, out); },
          &host[2]);
      CHECK(cudaDeviceSynchronize());
      std::printf("2^%-4d %8s | %8.2f %8.2f %8.2f | [%6.2f] [%6.2f] [%6.2f]\n", p, st ? "nonblock" : "legacy", t[0],
                  t[1], t[2], host[0], host[1], host[2]);
    }
  }
  auto now = [] { return std::chrono::steady_clock::now(); };
  auto t0 = now();
  for (int i = 0; i < 20000; ++i) {
    cudaPointerAttributes at;
    cudaPointerGetAttributes(&at, in + (i % 4096) * 1024);
  }
  std::printf("cudaPointerGetAttributes: %.3f us\n",
              std::chrono::duration<double, std::micro>(now() - t0).count() / 20000);
  int dev;
  t0 = now();
  for (int i = 0; i < 20000; ++i) cudaGetDevice(&dev);
  std::printf("cudaGetDevice: %.3f us\n", std::chrono::duration<double, std::micro>(now() - t0).count() / 20000);
}
#endif

int main(int argc, char** argv) {
  const std::string what = argc > 1 ? argv[1] : "all";
  if (what == "launch" || what == "all") launch_variants();
  if (what == "one-block" || what == "all") one_block_and_held();
#ifdef FASTREDUCE_PROBE_TAIL_LAUNCH
  if (what == "tail" || what == "all") tail_launch();
#endif
  return 0;
}
