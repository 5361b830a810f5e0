#include <cub/device/device_reduce.cuh>
#include <cub/device/device_segmented_reduce.cuh>
#include <cuda/functional>
#include <cuda/std/functional>
#include <cuda/std/limits>
#include <thrust/execution_policy.h>
#include <thrust/reduce.h>

#include "baselines.hpp"

namespace fastreduce::bench {

namespace {
template <class A, class Op>
auto cub_op() {
  if constexpr (std::is_same_v<Op, Sum>) return cuda::std::plus<A>{};
  else return cuda::maximum<A>{};
}
template <class A, class Op>
A cub_init() {
  if constexpr (std::is_same_v<Op, Sum>) return A(0);
  else return cuda::std::numeric_limits<A>::lowest();
}
}  // namespace

template <class T, class Op>
cudaError_t cub_reduce(void* d_temp, std::size_t& temp_bytes, const T* d_in, acc_t<T, Op>* d_out,
                       std::size_t n, cudaStream_t stream) {
  using A = acc_t<T, Op>;
  return cub::DeviceReduce::Reduce(d_temp, temp_bytes, d_in, d_out, static_cast<std::int64_t>(n),
                                   cub_op<A, Op>(), cub_init<A, Op>(), stream);
}

template <class T, class Op>
cudaError_t cub_segmented_reduce(void* d_temp, std::size_t& temp_bytes, const T* d_in, acc_t<T, Op>* d_out,
                                 std::size_t segments, const std::int64_t* d_begin, const std::int64_t* d_end,
                                 cudaStream_t stream) {
  using A = acc_t<T, Op>;
  return cub::DeviceSegmentedReduce::Reduce(d_temp, temp_bytes, d_in, d_out, static_cast<std::int64_t>(segments),
                                            d_begin, d_end, cub_op<A, Op>(), cub_init<A, Op>(), stream);
}

template <class T, class Op>
acc_t<T, Op> thrust_reduce(const T* d_in, std::size_t n, cudaStream_t stream) {
  using A = acc_t<T, Op>;
  return thrust::reduce(thrust::cuda::par.on(stream), d_in, d_in + n, cub_init<A, Op>(), cub_op<A, Op>());
}

template <class T>
cudaError_t cub_sum(void* d_temp, std::size_t& temp_bytes, const T* d_in, T* d_out, std::size_t n,
                    cudaStream_t stream) {
  return cub::DeviceReduce::Sum(d_temp, temp_bytes, d_in, d_out, static_cast<std::int64_t>(n), stream);
}
template cudaError_t cub_sum<std::int32_t>(void*, std::size_t&, const std::int32_t*, std::int32_t*, std::size_t, cudaStream_t);
template cudaError_t cub_sum<std::uint32_t>(void*, std::size_t&, const std::uint32_t*, std::uint32_t*, std::size_t, cudaStream_t);
template cudaError_t cub_sum<std::int64_t>(void*, std::size_t&, const std::int64_t*, std::int64_t*, std::size_t, cudaStream_t);
template cudaError_t cub_sum<float>(void*, std::size_t&, const float*, float*, std::size_t, cudaStream_t);
template cudaError_t cub_sum<double>(void*, std::size_t&, const double*, double*, std::size_t, cudaStream_t);

#define FASTREDUCE_BASELINE(T, Op)                                                                  \
  template cudaError_t cub_reduce<T, Op>(void*, std::size_t&, const T*, acc_t<T, Op>*, std::size_t, \
                                         cudaStream_t);                                             \
  template acc_t<T, Op> thrust_reduce<T, Op>(const T*, std::size_t, cudaStream_t);                 \
  template cudaError_t cub_segmented_reduce<T, Op>(void*, std::size_t&, const T*, acc_t<T, Op>*,    \
                                                   std::size_t, const std::int64_t*,                \
                                                   const std::int64_t*, cudaStream_t);
FASTREDUCE_BASELINE(float, Sum)
FASTREDUCE_BASELINE(float, Max)
FASTREDUCE_BASELINE(double, Sum)
FASTREDUCE_BASELINE(double, Max)
FASTREDUCE_BASELINE(std::int32_t, Sum)
FASTREDUCE_BASELINE(std::int32_t, Max)
FASTREDUCE_BASELINE(__nv_bfloat16, Sum)
FASTREDUCE_BASELINE(__nv_bfloat16, Max)
#undef FASTREDUCE_BASELINE

}  // namespace fastreduce::bench
