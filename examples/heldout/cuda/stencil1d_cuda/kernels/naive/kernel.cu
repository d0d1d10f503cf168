// stencil1d_cuda, naive: one thread per output; all 7 taps and all 7 weights are read from
// global memory, each tap behind its own bounds test.
#include <cuda_runtime.h>
#include <stdint.h>

#define RADIUS 3

__global__ void stencil_naive(const float* x, const float* w, float* y, long long n) {
  long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  float acc = 0.0f;
  for (int k = -RADIUS; k <= RADIUS; ++k) {
    long long j = i + k;
    if (j >= 0 && j < n) acc += w[k + RADIUS] * x[j];
  }
  y[i] = acc;
}

extern "C" int kl_launch(const void* const* inputs, void* const* outputs, const int64_t* axes,
                         const double* params, void* stream) {
  (void)params;
  const long long n = axes[0];
  const int block = 256;
  stencil_naive<<<(unsigned)((n + block - 1) / block), block, 0, (cudaStream_t)stream>>>(
      (const float*)inputs[0], (const float*)inputs[1], (float*)outputs[0], n);
  return cudaGetLastError() == cudaSuccess ? 0 : 1;
}
