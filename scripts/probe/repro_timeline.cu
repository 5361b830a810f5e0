// Probe: where the reproducible float sum spends its time, from %globaltimer stamps (256 ns apart
// on an H100) taken inside copies of the fast and reproducible kernels, at a few sizes, on data
// rotated beyond L2. For each kernel it prints the time per call back to back, then, relative to
// the first block's start: when 25/50/75/90/100% of the tiles were summed, when each warp's last
// tile arrived and was added, when the blocks reached the grid barrier, and the steps of block 0's
// finish. Variants of the reproducible kernel: the library's loop and lane combine, the
// double-double butterfly it replaced, a diagnostic with plain float lanes (wrong bits), and
// both with batches of 8 vectors and two blocks per SM.
// Build: nvcc -std=c++20 -O3 -arch=sm_90 -Iinclude -Isrc scripts/probe/repro_timeline.cu \
//          src/engine/plan.cpp src/engine/temp_cache.cpp -o repro_timeline
#include <algorithm>
#include <cstdio>
#include <vector>

#include "engine/dispatch.cuh"

using namespace fastreduce;
using namespace fastreduce::engine;

namespace {

constexpr unsigned kTraceSlots = 16;
enum Slot : unsigned { kStart = 0, kWarpDone = 1 /* 1..8 */, kInShared = 9, kArrive = 10, kReleased = 11,
                       kGathered = 12, kNormalized = 13, kEnd = 14 };

__device__ __forceinline__ unsigned long long now_after(long long dep) {
  unsigned long long t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t) : "l"(dep));
  return t;
}

__device__ __forceinline__ unsigned long long now() {
  unsigned long long t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}

// finish_exact with stamps.
template <class A, unsigned kWarps>
struct SharedN {
  long long limbs[kWarps][ExactSum<A>::kLimbs];
  unsigned special[kWarps];
};

template <class A, unsigned kWarps>
__device__ __forceinline__ void finish_traced(const ExactSum<A>& exact, SharedN<A, kWarps>& shared,
                                              unsigned long long* blocks, A* out, unsigned long long* trace) {
  constexpr unsigned W = ExactSum<A>::kLimbs;
  constexpr unsigned K = ExactSum<A>::K;
  constexpr unsigned kWords = kReproBlockWords<A>;
  const unsigned lane = threadIdx.x % 32;
  const unsigned warp = threadIdx.x / 32;
#pragma unroll
  for (unsigned k = 0; k < K; ++k) shared.limbs[warp][lane + 32 * k] = exact.limb[k];
  if (lane == 0) shared.special[warp] = exact.special;
  __syncthreads();
  if (threadIdx.x == 0) trace[kInShared] = now();
  unsigned long long* mine = blocks + std::size_t(blockIdx.x) * kWords;
  for (unsigned t = threadIdx.x; t < W; t += blockDim.x) {
    long long sum = 0;
#pragma unroll
    for (unsigned w = 0; w < kWarps; ++w) sum += shared.limbs[w][t];
    mine[t] = static_cast<unsigned long long>(sum);
  }
  if (threadIdx.x == 0) {
    unsigned special = 0;
#pragma unroll
    for (unsigned w = 0; w < kWarps; ++w) special |= shared.special[w];
    mine[W] = special;
    trace[kArrive] = now();
  }
  cooperative_groups::this_grid().sync();
  if (blockIdx.x != 0) return;
  if (threadIdx.x == 0) trace[kReleased] = now();
  constexpr unsigned kInFlight = 24 / K;
  long long acc[K] = {};
  unsigned special = 0;
  for (unsigned first = warp; first < gridDim.x; first += kWarps * kInFlight) {
    long long row[kInFlight][K];
    unsigned flags[kInFlight];
#pragma unroll
    for (unsigned i = 0; i < kInFlight; ++i) {
      const unsigned b = first + i * kWarps;
      const unsigned long long* words = blocks + std::size_t(b) * kWords;
#pragma unroll
      for (unsigned k = 0; k < K; ++k) row[i][k] = b < gridDim.x ? static_cast<long long>(__ldcg(words + lane + 32 * k)) : 0;
      flags[i] = b < gridDim.x && lane == 0 ? static_cast<unsigned>(__ldcg(words + W)) : 0u;
    }
#pragma unroll
    for (unsigned i = 0; i < kInFlight; ++i) {
#pragma unroll
      for (unsigned k = 0; k < K; ++k) acc[k] += row[i][k];
      special |= flags[i];
    }
  }
#pragma unroll
  for (unsigned k = 0; k < K; ++k) shared.limbs[warp][lane + 32 * k] = acc[k];
  if (lane == 0) shared.special[warp] = special;
  __syncthreads();
  if (warp != 0) return;
  unsigned long long* total = reinterpret_cast<unsigned long long*>(shared.limbs[0]);
  unsigned lowest = W - 1, highest = 0;
#pragma unroll
  for (unsigned k = 0; k < K; ++k) {
    long long sum = 0;
#pragma unroll
    for (unsigned w = 0; w < kWarps; ++w) sum += shared.limbs[w][lane + 32 * k];
    total[lane + 32 * k] = static_cast<unsigned long long>(sum);
    const unsigned mask = __ballot_sync(primitives::kFullMask, sum != 0);
    if (mask != 0) {
      highest = 32 * k + 31 - __clz(mask);
      lowest = lowest < 32 * k ? lowest : 32 * k + __ffs(mask) - 1;
    }
  }
  special = 0;
#pragma unroll
  for (unsigned w = 0; w < kWarps; ++w) special |= shared.special[w];
  if (lowest > highest) lowest = 0;
  __syncwarp();
  if (lane == 0) trace[kGathered] = now();
  bool negative = false;
  if (lane == 0) negative = normalize_limbs<W>(total, lowest, highest);
  __syncwarp();
  negative = __shfl_sync(primitives::kFullMask, negative, 0);
  if (lane == 0) trace[kNormalized] = now();
  const A result = round_exact<A>(total, negative, special, lane);
  if (lane == 0) {
    *out = result;
    trace[kEnd] = now();
  }
}

constexpr unsigned kWarpSlots = 16;
__device__ __forceinline__ unsigned long long now_after_f(float dep) {
  unsigned long long t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t) : "f"(dep));
  return t;
}

// The lane total of the double-double tile combine (before lane partials went exact).
__device__ __forceinline__ DoubleDouble old_total(const FloatLane& l) {
  if (!isfinite(l.sum)) return {static_cast<double>(l.sum), 0.0};
  return dd_add({static_cast<double>(l.sum), 0.0}, {l.error, 0.0});
}

// Variants of the reproducible kernel's schedule (the same bits unless Plain).
struct Cfg {
  unsigned threads;
  unsigned batch;   // vectors per lane per batch (a tile is 32 vectors per lane)
  bool contiguous;  // tiles of a block contiguous (else round the blocks)
  unsigned plain;   // 0 the double-double butterfly of v9b; 4 exact lane partials (stamps for the
                    // last tile's batches); 5 the library's own loop and lane combine. Diagnostics,
                    // wrong bits: 1 plain float lanes, 2 plain in the last tile only, 3 errors
                    // summed in float (no conversions)
};

template <Cfg C>
__device__ __forceinline__ void load_batch_v(Vec<float> (&batch)[C.batch], const float* in, std::size_t n,
                                             std::size_t tile, unsigned b, unsigned lane) {
  const std::size_t base = tile * kReproTile;
  if (base + kReproTile <= n) {
    const Vec<float>* v = reinterpret_cast<const Vec<float>*>(in + base) + lane;
#pragma unroll
    for (unsigned j = 0; j < C.batch; ++j) batch[j] = load_vec(v + (b * C.batch + j) * 32);
  } else {
#pragma unroll
    for (unsigned j = 0; j < C.batch; ++j) {
      const std::size_t first = base + (std::size_t(b * C.batch + j) * 32 + lane) * 4;
#pragma unroll
      for (unsigned c = 0; c < 4; ++c) batch[j].elem[c] = first + c < n ? in[first + c] : 0.0f;
    }
  }
}

template <unsigned Threads, unsigned Batch, bool Contiguous, unsigned Plain>
__global__ void __launch_bounds__(Threads, Threads == 256 && Batch <= 8 ? 2 : 1) repro_variant(ReproArgs<float, float> args, unsigned long long* traces,
                                                         unsigned long long* wtraces) {
  constexpr Cfg C{Threads, Batch, Contiguous, Plain};
  constexpr unsigned warps = C.threads / 32;
  constexpr unsigned batches = 32 / C.batch;
  __shared__ SharedN<float, warps> shared;
  unsigned long long* trace = traces + blockIdx.x * kTraceSlots;
  if (threadIdx.x == 0) trace[kStart] = now();
  const unsigned lane = threadIdx.x % 32;
  const unsigned warp = threadIdx.x / 32;
  unsigned long long* wtrace = wtraces + (std::size_t(blockIdx.x) * warps + warp) * kWarpSlots;
  ExactSum<float> exact;
  // Only the lane-exact variants keep per-lane limbs (the others take no shared memory for them).
  struct NoLaneExact {
    __device__ NoLaneExact(LaneLimbs&, unsigned) {}
  };
  using LaneAcc = std::conditional_t<(C.plain >= 4), LaneExact, NoLaneExact>;
  __shared__ LaneLimbs lane_limbs[C.plain >= 4 ? warps : 1];
  LaneAcc lane_exact(lane_limbs[C.plain >= 4 ? warp : 0], lane);
  std::size_t first, step, last;
  if constexpr (C.contiguous) {
    const std::size_t begin = args.tiles * blockIdx.x / gridDim.x;
    last = args.tiles * (blockIdx.x + 1) / gridDim.x;
    first = begin + warp;
    step = warps;
  } else {
    first = blockIdx.x + std::size_t(warp) * gridDim.x;
    step = std::size_t(gridDim.x) * warps;
    last = args.tiles;
  }
  unsigned done = 0;
  if constexpr (C.plain == 5) {  // the library's schedule and lane combine, a stamp per tile
    sum_tiles(args.in, args.n, args.tiles, first, step, true, lane, [&](FloatLane (&lanes)[2]) {
      lane_exact.add(lane_partial(lanes));
      const long long dep = lane_limbs[warp].sums[0][lane] + lane_limbs[warp].errors[0][lane];
      if (lane == 0 && done < 8) wtrace[done] = now_after(dep);
      ++done;
    });
  } else if (first < last) {
    Vec<float> next[C.batch];
    load_batch_v<C>(next, args.in, args.n, first, 0, lane);
    for (std::size_t tile = first; tile < last; tile += step) {
      FloatLane lanes[2];
      float plain[2] = {0.0f, 0.0f};
      float ferr[2] = {0.0f, 0.0f};
      const bool final = tile + step >= last;
      const bool cheap = C.plain == 1 || (C.plain == 2 && final);
#pragma unroll
      for (unsigned b = 0; b < batches; ++b) {
        Vec<float> current[C.batch];
#pragma unroll
        for (unsigned j = 0; j < C.batch; ++j) current[j] = next[j];
        if (b + 1 < batches) load_batch_v<C>(next, args.in, args.n, tile, b + 1, lane);
        else if (tile + step < last) load_batch_v<C>(next, args.in, args.n, tile + step, 0, lane);
        if (final && lane == 0 && b + 2 >= batches) wtrace[8 + 2 * (b + 2 - batches)] = now_after_f(current[C.batch - 1].elem[3]);
        if (cheap) {
#pragma unroll
          for (unsigned j = 0; j < C.batch; ++j)
#pragma unroll
            for (unsigned c = 0; c < 4; ++c) plain[c % 2] += current[j].elem[c];
        } else if (C.plain == 3) {
#pragma unroll
          for (unsigned j = 0; j < C.batch; ++j)
#pragma unroll
            for (unsigned c = 0; c < 4; ++c) {
              FloatLane& l = lanes[c % 2];
              const float x = current[j].elem[c];
              const float t = __fadd_rn(l.sum, x);
              const float z = __fsub_rn(t, l.sum);
              ferr[c % 2] = __fadd_rn(ferr[c % 2], __fadd_rn(__fsub_rn(l.sum, __fsub_rn(t, z)), __fsub_rn(x, z)));
              l.sum = t;
            }
        } else {
#pragma unroll
          for (unsigned j = 0; j < C.batch; ++j) add_vector<float>(lanes, current[j]);
        }
        if (final && lane == 0 && b + 2 >= batches) wtrace[9 + 2 * (b + 2 - batches)] = now_after_f(lanes[0].sum + plain[0] + ferr[0] + float(lanes[1].error));
      }
      if (cheap) lanes[0].sum += plain[0] + plain[1];
      if (C.plain == 3) { lanes[0].error = ferr[0]; lanes[1].error = ferr[1]; }
      long long dep;
      if constexpr (C.plain == 4) {
        lane_exact.add(lane_partial(lanes));
        dep = lane_limbs[warp].sums[0][lane] + lane_limbs[warp].errors[0][lane];
      } else {
        exact.add(warp_dd_reduce(dd_add(old_total(lanes[0]), old_total(lanes[1]))), lane);
        dep = exact.limb[0];
      }
      if (final && lane == 0) wtrace[12] = now_after(dep);
      if (lane == 0 && done < 8) wtrace[done] = now_after(dep);
      ++done;
    }
  }
  if constexpr (C.plain >= 4) {
    lane_exact.into(exact);
    exact.limb[0] = carry_once(carry_once(exact.limb[0], lane), lane);
  }
  finish_traced<float, warps>(exact, shared, args.blocks, args.out, trace);
}

// fast_reduce_kernel with stamps (finish_grid inlined).
template <unsigned Threads, unsigned Unroll>
__global__ void __launch_bounds__(Threads) fast_traced(FastArgs<float, float> args, unsigned long long* traces,
                                                      unsigned long long* wtraces) {
  using A = float;
  Sum op;
  __shared__ primitives::BlockReduceStorage<A, Threads> storage;
  unsigned long long* trace = traces + blockIdx.x * kTraceSlots;
  const unsigned tid = threadIdx.x;
  unsigned long long* wtrace = wtraces + (std::size_t(blockIdx.x) * (Threads / 32) + tid / 32) * kWarpSlots;
  if (tid == 0) trace[kStart] = now();
  const Vec<float>* body = reinterpret_cast<const Vec<float>*>(args.in + args.head);
  const std::size_t begin = std::size_t(blockIdx.x) * args.share;
  const std::size_t end = begin + args.share < args.vectors ? begin + args.share : args.vectors;
  A acc = 0;
  std::size_t i = begin + tid;
  unsigned done = 0;
  for (; i + (Unroll - 1) * Threads < end; i += Unroll * Threads) {
    Vec<float> v[Unroll];
#pragma unroll
    for (unsigned u = 0; u < Unroll; ++u) v[u] = load_vec(body + i + u * Threads);
#pragma unroll
    for (unsigned u = 0; u < Unroll; ++u) acc = op(acc, reduce_vec<A>(v[u], op));
    if (tid % 32 == 0 && done < kWarpSlots) wtrace[done] = now_after_f(acc);
    ++done;
  }
#pragma unroll
  for (unsigned u = 0; u < Unroll - 1; ++u) {
    if (i + u * Threads < end) acc = op(acc, reduce_vec<A>(load_vec(body + i + u * Threads), op));
  }
  const A block_total = primitives::block_reduce<Threads>(acc, op, storage);
  if (tid == 0) {
    args.partials[blockIdx.x] = block_total;
    trace[kArrive] = now();
  }
  cooperative_groups::this_grid().sync();
  if (blockIdx.x != 0) return;
  if (tid == 0) trace[kReleased] = now();
  A combined = 0;
  for (unsigned b = tid; b < gridDim.x; b += Threads) combined = op(combined, __ldcg(args.partials + b));
  const A total = primitives::block_reduce<Threads>(combined, op, storage);
  if (tid == 0) {
    *args.out = total;
    trace[kEnd] = now();
  }
}

float time_calls(int calls, auto&& f) {
  cudaEvent_t a, b;
  cudaEventCreate(&a);
  cudaEventCreate(&b);
  for (int i = 0; i < 5; ++i) f(i);
  std::vector<float> t;
  int k = 0;
  for (int r = 0; r < 11; ++r) {
    cudaEventRecord(a);
    for (int i = 0; i < calls; ++i) f(k++);
    cudaEventRecord(b);
    cudaEventSynchronize(b);
    float ms;
    cudaEventElapsedTime(&ms, a, b);
    t.push_back(ms * 1000 / calls);
  }
  std::sort(t.begin(), t.end());
  return t[t.size() / 2];
}

// Completion curve: when 25/50/75/90/100 % of the bytes had been summed (each warp stamp stands
// for `bytes_per_stamp`), the spread of warps' last stamps, and block 0's finish.
void report(const char* name, const std::vector<unsigned long long>& tr, const std::vector<unsigned long long>& wtr,
            unsigned grid, unsigned warps, double bytes_per_stamp, bool repro) {
  std::vector<double> starts;
  for (unsigned b = 0; b < grid; ++b) if (tr[b * kTraceSlots + kStart]) starts.push_back(double(tr[b * kTraceSlots + kStart]));
  const double t0 = *std::min_element(starts.begin(), starts.end());
  std::vector<double> stamps, lasts;
  for (unsigned w = 0; w < grid * warps; ++w) {
    double last = 0;
    for (unsigned i = 0; i < (repro ? 8u : kWarpSlots); ++i) {
      if (!wtr[w * kWarpSlots + i]) break;
      last = (double(wtr[w * kWarpSlots + i]) - t0) / 1e3;
      stamps.push_back(last);
    }
    if (last > 0) lasts.push_back(last);
  }
  std::sort(stamps.begin(), stamps.end());
  std::sort(lasts.begin(), lasts.end());
  std::printf("  %-34s grid %3u", name, grid);
  if (!stamps.empty()) {
    std::printf(" | done 25%% %6.2f 50%% %6.2f 75%% %6.2f 90%% %6.2f 100%% %6.2f", stamps[stamps.size() / 4],
                stamps[stamps.size() / 2], stamps[stamps.size() * 3 / 4], stamps[stamps.size() * 9 / 10], stamps.back());
    std::printf(" | warp last min %6.2f med %6.2f", lasts.front(), lasts[lasts.size() / 2]);
    std::printf(" | %.0f MB", stamps.size() * bytes_per_stamp / 1e6);
  }
  if (repro) {  // the last tile of each warp: when its batches arrived and were added (median, max)
    const char* names[] = {"b-2 in", "added", "b-1 in", "added", "tile in"};
    std::printf("\n      last tile:");
    for (unsigned k = 0; k < 5; ++k) {
      std::vector<double> v;
      for (unsigned w = 0; w < grid * warps; ++w)
        if (wtr[w * kWarpSlots + 8 + k]) v.push_back((double(wtr[w * kWarpSlots + 8 + k]) - t0) / 1e3);
      if (v.empty()) continue;
      std::sort(v.begin(), v.end());
      std::printf("  %s %6.2f/%6.2f", names[k], v[v.size() / 2], v.back());
    }
    std::printf("\n     ");
  }
  auto at = [&](unsigned slot) { return tr[slot] ? (double(tr[slot]) - t0) / 1e3 : -1.0; };
  double arrive = 0;
  for (unsigned b = 0; b < grid; ++b) if (tr[b * kTraceSlots + kArrive]) arrive = std::max(arrive, (double(tr[b * kTraceSlots + kArrive]) - t0) / 1e3);
  std::printf(" | barrier %6.2f released %6.2f", arrive, at(kReleased));
  if (repro) std::printf(" gathered %6.2f", at(kGathered));
  std::printf(" end %6.2f us\n", at(kEnd));
}

}  // namespace

int main() {
  int sms;
  cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0);
  cudaDeviceProp prop;
  cudaGetDeviceProperties(&prop, 0);
  std::printf("%s, %d SMs\n", prop.name, sms);
  const std::size_t arena = std::size_t(1) << 28;
  float* in;
  cudaMalloc(&in, arena * 4);
  std::vector<float> h(arena);
  for (std::size_t i = 0; i < arena; ++i) h[i] = 0.5f + float((i * 2654435761u) % 1000) / 1000.0f;
  cudaMemcpy(in, h.data(), arena * 4, cudaMemcpyHostToDevice);
  float* out;
  cudaMalloc(&out, 64);
  void* temp;
  cudaMalloc(&temp, 64 << 20);
  unsigned long long *traces, *wtraces;
  const std::size_t wslots = std::size_t(8192) * kWarpSlots;
  cudaMalloc(&traces, 4096 * kTraceSlots * 8);
  cudaMalloc(&wtraces, wslots * 8);
  std::vector<unsigned long long> tr(4096 * kTraceSlots), wtr(wslots);

  for (int p : {16, 20, 22, 24, 26}) {
    const std::size_t n = std::size_t(1) << p;
    const std::size_t slices = std::max<std::size_t>(1, std::min<std::size_t>(arena / n, 4096));
    const int calls = std::clamp<int>(int((std::size_t(1) << 26) / n), 2, 200);
    auto slice = [&](int i) { return in + (std::size_t(i) % slices) * n; };
    std::printf("n = 2^%d\n", p);
    float reference = 0;
    for (bool repro : {false, true}) {
      const Options opt{.mode = repro ? Mode::Reproducible : Mode::Fast};
      std::size_t bytes = 0;
      reduce_async_impl<float, Sum>(nullptr, bytes, in, out, n, Sum{}, 0, opt);
      const float t = time_calls(calls, [&](int i) {
        std::size_t b = bytes;
        reduce_async_impl<float, Sum>(temp, b, slice(i), out, n, Sum{}, 0, opt);
      });
      std::printf("  %-34s %8.2f us per call (events, back to back)\n", repro ? "library reproducible" : "library fast", t);
      if (repro) {
        std::size_t b = bytes;
        reduce_async_impl<float, Sum>(temp, b, slice(3), out, n, Sum{}, 0, opt);
        cudaMemcpy(&reference, out, 4, cudaMemcpyDeviceToHost);
      }
    }
    // Each variant: back-to-back time with stamps, then a traced run alone (slice not in L2).
    auto run = [&](const char* name, unsigned warps, double bytes_per_stamp, bool repro, bool check, auto&& launch_on) {
      unsigned grid = 0;
      const float t = time_calls(calls, [&](int i) { grid = launch_on(slice(i)); });
      float got = 0;
      grid = launch_on(slice(3));
      cudaMemcpy(&got, out, 4, cudaMemcpyDeviceToHost);
      cudaMemset(traces, 0, 4096 * kTraceSlots * 8);
      cudaMemset(wtraces, 0, wslots * 8);
      cudaDeviceSynchronize();
      grid = launch_on(slice(11));
      cudaError_t e = cudaDeviceSynchronize();
      if (e != cudaSuccess) { std::printf("error %s\n", cudaGetErrorString(e)); std::exit(1); }
      cudaMemcpy(tr.data(), traces, tr.size() * 8, cudaMemcpyDeviceToHost);
      cudaMemcpy(wtr.data(), wtraces, wtr.size() * 8, cudaMemcpyDeviceToHost);
      std::printf("  %-34s %8.2f us per call%s\n", name, t,
                  !check ? "" : got == reference ? " (bits as the library)" : " (BITS DIFFER)");
      report(name, tr, wtr, grid, warps, bytes_per_stamp, repro);
    };
    auto fast = [&]<FastPolicy policy>(const char* name) {
      run(name, policy.threads / 32, policy.unroll * 512.0, false, false, [&](const float* src) {
        constexpr auto kernel = fast_traced<policy.threads, policy.unroll>;
        static int per_sm = 0;
        if (!per_sm) cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, kernel, policy.threads, 0);
        const FastPlan plan = plan_fast(n, 4, reinterpret_cast<std::uintptr_t>(src), 4, policy, sms, per_sm, 0);
        FastArgs<float, float> args{src, n, plan.head, plan.vectors, plan.share, static_cast<float*>(temp), out};
        launch(kernel, plan.grid, policy.threads, 0, 0, args, traces, wtraces);
        return plan.grid;
      });
    };
    if (n * 4 <= kSm90SmallMaxBytes) fast.template operator()<kSm90Small>("fast traced");
    else fast.template operator()<kSm90Large>("fast traced");
    auto variant = [&]<Cfg C>(const char* name) {
      run(name, C.threads / 32, 16384.0, true, C.plain >= 4, [&](const float* src) {
        constexpr auto kernel = repro_variant<C.threads, C.batch, C.contiguous, C.plain>;
        static int per_sm = 0;
        if (!per_sm) cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, kernel, C.threads, 0);
        const std::size_t tiles = (n + kReproTile - 1) / kReproTile;
        const unsigned grid = unsigned(std::min<std::size_t>(tiles, std::size_t(sms) * per_sm));
        ReproArgs<float, float> args{src, n, tiles, true, static_cast<unsigned long long*>(temp), out};
        launch(kernel, grid, C.threads, 0, 0, args, traces, wtraces);
        return grid;
      });
    };
    variant.template operator()<Cfg{256, 16, false, 5}>("repro library loop");
    variant.template operator()<Cfg{256, 16, false, 4}>("repro lane-exact, batch stamps");
    variant.template operator()<Cfg{256, 16, false, 0}>("repro butterfly (v9b)");
    variant.template operator()<Cfg{256, 16, false, 1}>("repro PLAIN (diag)");
    variant.template operator()<Cfg{256, 8, false, 4}>("repro lane-exact, 8-vector batches");
    variant.template operator()<Cfg{256, 8, false, 1}>("repro PLAIN, 8-vector batches (diag)");
  }
}
