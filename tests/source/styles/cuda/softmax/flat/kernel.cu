// softmax, style flat: one thread per row from a flat long long index, three passes.
// y[i,:] = exp(x[i,:] - max) / sum(exp(x[i,:] - max)); bf16 in/out, fp32 math.
#include <cuda_runtime.h>
#include <cuda_bf16.h>
#include <stdint.h>

__global__ void softmax_flat(const __nv_bfloat16* x, __nv_bfloat16* y, long long M, long long N) {
  long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  if (i < M) {
    float mx = -INFINITY;
    for (long long j = 0; j < N; ++j) mx = fmaxf(mx, __bfloat162float(x[i * N + j]));
    float sum = 0.0f;
    for (long long j = 0; j < N; ++j) sum += expf(__bfloat162float(x[i * N + j]) - mx);
    for (long long j = 0; j < N; ++j)
      y[i * N + j] = __float2bfloat16(expf(__bfloat162float(x[i * N + j]) - mx) / sum);
  }
}

extern "C" int kl_launch(const void* const* inputs, void* const* outputs, const int64_t* axes,
                         const double* params, void* stream) {
  (void)params;
  const long long M = axes[0], N = axes[1];
  if (M == 0 || N == 0) return 0;
  const int threads = 128;
  softmax_flat<<<(unsigned)((M + threads - 1) / threads), threads, 0, (cudaStream_t)stream>>>(
      (const __nv_bfloat16*)inputs[0], (__nv_bfloat16*)outputs[0], M, N);
  return cudaGetLastError() == cudaSuccess ? 0 : 1;
}
