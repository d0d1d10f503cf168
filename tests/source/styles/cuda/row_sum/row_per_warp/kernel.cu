// row_sum, style row_per_warp: one warp per row, lanes stride the row, __shfl_down_sync sum.
// y[i] = sum_j x[i, j], fp32 accumulation.
#include <cuda_runtime.h>
#include <stdint.h>

#define THREADS 256              // 8 warps per block, one row per warp
#define WARPS (THREADS / 32)

// Sum of v over the warp; every lane gets the total.
__device__ float warp_sum(float v) {
  for (int off = 16; off > 0; off >>= 1) v += __shfl_down_sync(0xffffffffu, v, off);
  return __shfl_sync(0xffffffffu, v, 0);
}

__global__ void row_sum_row_per_warp(const float* x, float* y, int64_t M, int64_t N) {
  const int64_t row = ((int64_t)blockIdx.x * blockDim.x + threadIdx.x) / 32;
  const int lane = threadIdx.x % 32;
  if (row >= M) return;  // the whole warp leaves together
  float s = 0.0f;
  for (int64_t j = lane; j < N; j += 32) s += x[row * N + j];
  s = warp_sum(s);
  if (lane == 0) y[row] = s;
}

extern "C" int kl_launch(const void* const* inputs, void* const* outputs, const int64_t* axes,
                         const double* params, void* stream) {
  (void)params;
  const int64_t M = axes[0], N = axes[1];
  if (M == 0) return 0;
  const unsigned blocks = (unsigned)((M + WARPS - 1) / WARPS);
  row_sum_row_per_warp<<<blocks, THREADS, 0, (cudaStream_t)stream>>>(
      (const float*)inputs[0], (float*)outputs[0], M, N);
  return cudaGetLastError() == cudaSuccess ? 0 : 1;
}
