// softmax, style row_per_warp: one warp per row, lanes stride the row, __shfl_down_sync max/sum.
// y[i,:] = exp(x[i,:] - max) / sum(exp(x[i,:] - max)); bf16 in/out, fp32 math.
#include <cuda_runtime.h>
#include <cuda_bf16.h>
#include <stdint.h>

#define THREADS 256              // 8 warps per block, one row per warp
#define WARPS (THREADS / 32)

// Sum of v over the warp; every lane gets the total.
__device__ float warp_sum(float v) {
  for (int off = 16; off > 0; off >>= 1) v += __shfl_down_sync(0xffffffffu, v, off);
  return __shfl_sync(0xffffffffu, v, 0);
}

// Max of v over the warp; every lane gets it.
__device__ float warp_max(float v) {
  for (int off = 16; off > 0; off >>= 1) v = fmaxf(v, __shfl_down_sync(0xffffffffu, v, off));
  return __shfl_sync(0xffffffffu, v, 0);
}

__global__ void softmax_row_per_warp(const __nv_bfloat16* x, __nv_bfloat16* y, int64_t M,
                                     int64_t N) {
  const int64_t row = ((int64_t)blockIdx.x * blockDim.x + threadIdx.x) / 32;
  const int lane = threadIdx.x % 32;
  if (row >= M) return;  // the whole warp leaves together
  const __nv_bfloat16* xr = x + row * N;
  float m = -INFINITY;
  for (int64_t j = lane; j < N; j += 32) m = fmaxf(m, __bfloat162float(xr[j]));
  m = warp_max(m);
  float s = 0.0f;
  for (int64_t j = lane; j < N; j += 32) s += expf(__bfloat162float(xr[j]) - m);
  s = warp_sum(s);
  for (int64_t j = lane; j < N; j += 32)
    y[row * N + j] = __float2bfloat16(expf(__bfloat162float(xr[j]) - m) / s);
}

extern "C" int kl_launch(const void* const* inputs, void* const* outputs, const int64_t* axes,
                         const double* params, void* stream) {
  (void)params;
  const int64_t M = axes[0], N = axes[1];
  if (M == 0 || N == 0) return 0;
  softmax_row_per_warp<<<(unsigned)((M + WARPS - 1) / WARPS), THREADS, 0, (cudaStream_t)stream>>>(
      (const __nv_bfloat16*)inputs[0], (__nv_bfloat16*)outputs[0], M, N);
  return cudaGetLastError() == cudaSuccess ? 0 : 1;
}
