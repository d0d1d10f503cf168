// softmax, style gridstride: a grid-stride loop over rows, one row per iteration per thread.
// y[i,:] = exp(x[i,:] - max) / sum(exp(x[i,:] - max)); bf16 in/out, fp32 math.
#include <cuda_runtime.h>
#include <cuda_bf16.h>
#include <stdint.h>
#define MAX_BLOCKS 64  // the grid-stride loop covers the rest

__global__ void softmax_gridstride(const __nv_bfloat16* x, __nv_bfloat16* y, int64_t M, int64_t N) {
  for (int64_t row = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; row < M;
       row += (int64_t)blockDim.x * gridDim.x) {
    const __nv_bfloat16* xr = x + row * N;
    __nv_bfloat16* yr = y + row * N;
    float m = __bfloat162float(xr[0]);
    for (int64_t j = 1; j < N; ++j) {
      const float v = __bfloat162float(xr[j]);
      if (v > m) m = v;
    }
    float s = 0.0f;
    for (int64_t j = 0; j < N; ++j) s += expf(__bfloat162float(xr[j]) - m);
    const float inv = 1.0f / s;
    for (int64_t j = 0; j < N; ++j)
      yr[j] = __float2bfloat16(expf(__bfloat162float(xr[j]) - m) * inv);
  }
}

extern "C" int kl_launch(const void* const* inputs, void* const* outputs, const int64_t* axes,
                         const double* params, void* stream) {
  (void)params;
  const int64_t M = axes[0], N = axes[1];
  if (M == 0 || N == 0) return 0;
  const int threads = 128;
  int64_t blocks = (M + threads - 1) / threads;
  if (blocks > MAX_BLOCKS) blocks = MAX_BLOCKS;
  softmax_gridstride<<<(unsigned)blocks, threads, 0, (cudaStream_t)stream>>>(
      (const __nv_bfloat16*)inputs[0], (__nv_bfloat16*)outputs[0], M, N);
  return cudaGetLastError() == cudaSuccess ? 0 : 1;
}
