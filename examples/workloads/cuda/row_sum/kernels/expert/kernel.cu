// row_sum, expert: one warp per row (no shared memory, no block barriers), a persistent grid of
// warps striding over rows, 8 independent 16-byte loads in flight per lane.
//
// Optimizations (catalogue names):
//   vectorized_access      float4 loads (fast path when N % 4 == 0; scalar general kernel otherwise)
//   restrict               __restrict__ on the pointer parameters
//   read_only_cache        __ldg() for x
//   launch_bounds          __launch_bounds__(kThreads)
//   unroll_pragma          #pragma unroll over the 8-load batch and the shuffle tree
//   warp_shuffle_reduction __shfl_xor_sync butterfly in warp_sum()
//   grid_stride_loop       warps stride over rows by the total number of resident warps
//   register_blocking      v[kBatch] float4 batch + float4 accumulator per lane
#include <cuda_runtime.h>
#include <stdint.h>

constexpr int kThreads = 256;
constexpr int kWarpsPerBlock = kThreads / 32;
constexpr int kBatch = 8;  // float4 loads issued back to back per lane before any is summed

__device__ __forceinline__ float warp_sum(float v) {
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}

__global__ void __launch_bounds__(kThreads)
row_sum_vec(const float4* __restrict__ x, float* __restrict__ y, int64_t M, int64_t nvec) {
  const int lane = threadIdx.x & 31;
  const int64_t warp = (int64_t)blockIdx.x * kWarpsPerBlock + (threadIdx.x >> 5);
  const int64_t nwarps = (int64_t)gridDim.x * kWarpsPerBlock;
  for (int64_t row = warp; row < M; row += nwarps) {
    const float4* xr = x + row * nvec;
    float4 acc = make_float4(0.f, 0.f, 0.f, 0.f);
    int64_t i = lane;
    // main loop: kBatch loads in flight, then the adds
    for (; i + (kBatch - 1) * 32 < nvec; i += kBatch * 32) {
      float4 v[kBatch];
#pragma unroll
      for (int k = 0; k < kBatch; ++k) v[k] = __ldg(xr + i + k * 32);
#pragma unroll
      for (int k = 0; k < kBatch; ++k) {
        acc.x += v[k].x;
        acc.y += v[k].y;
        acc.z += v[k].z;
        acc.w += v[k].w;
      }
    }
    for (; i < nvec; i += 32) {  // remainder
      const float4 v = __ldg(xr + i);
      acc.x += v.x;
      acc.y += v.y;
      acc.z += v.z;
      acc.w += v.w;
    }
    const float s = warp_sum((acc.x + acc.y) + (acc.z + acc.w));
    if (lane == 0) y[row] = s;
  }
}

// General path: any N, any alignment; scalar loads, same warp-per-row structure.
__global__ void __launch_bounds__(kThreads)
row_sum_general(const float* __restrict__ x, float* __restrict__ y, int64_t M, int64_t N) {
  const int lane = threadIdx.x & 31;
  const int64_t warp = (int64_t)blockIdx.x * kWarpsPerBlock + (threadIdx.x >> 5);
  const int64_t nwarps = (int64_t)gridDim.x * kWarpsPerBlock;
  for (int64_t row = warp; row < M; row += nwarps) {
    const float* xr = x + row * N;
    float acc = 0.0f;
    for (int64_t j = lane; j < N; j += 32) acc += __ldg(xr + j);
    const float s = warp_sum(acc);
    if (lane == 0) y[row] = s;
  }
}

extern "C" int kl_launch(const void* const* inputs, void* const* outputs, const int64_t* axes,
                         const double* params, void* stream) {
  (void)params;
  const int64_t M = axes[0], N = axes[1];
  if (M == 0) return 0;
  cudaStream_t s = (cudaStream_t)stream;
  int dev = 0, sms = 0, per_sm = 0;
  if (cudaGetDevice(&dev) != cudaSuccess) return 1;
  if (cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev) != cudaSuccess) return 1;
  const bool vec_ok = (N % 4 == 0) && (((uintptr_t)inputs[0] & 15u) == 0);
  if (vec_ok) {
    if (cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, row_sum_vec, kThreads, 0) != cudaSuccess)
      return 1;
  } else {
    if (cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, row_sum_general, kThreads, 0) != cudaSuccess)
      return 1;
  }
  // persistent grid: as many blocks as fit at once, but no more than there are rows for
  const int64_t need = (M + kWarpsPerBlock - 1) / kWarpsPerBlock;
  const int64_t resident = (int64_t)sms * (per_sm > 0 ? per_sm : 1);
  const unsigned grid = (unsigned)(need < resident ? need : resident);
  if (vec_ok)
    row_sum_vec<<<grid, kThreads, 0, s>>>((const float4*)inputs[0], (float*)outputs[0], M, N / 4);
  else
    row_sum_general<<<grid, kThreads, 0, s>>>((const float*)inputs[0], (float*)outputs[0], M, N);
  return cudaGetLastError() == cudaSuccess ? 0 : 1;
}
