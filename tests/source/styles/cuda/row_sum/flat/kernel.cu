// row_sum, style flat: one thread per row from a flat long long index, if (i < M) guard.
// y[i] = sum_j x[i, j], fp32 accumulation.
#include <cuda_runtime.h>
#include <stdint.h>

__global__ void row_sum_flat(const float* x, float* y, long long M, long long N) {
  long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  if (i < M) {
    float sum = 0.0f;
    for (long long j = 0; j < N; ++j) sum += x[i * N + j];
    y[i] = sum;
  }
}

extern "C" int kl_launch(const void* const* inputs, void* const* outputs, const int64_t* axes,
                         const double* params, void* stream) {
  (void)params;
  const long long M = axes[0], N = axes[1];
  if (M == 0) return 0;
  const int threads = 128;
  const unsigned blocks = (unsigned)((M + threads - 1) / threads);
  row_sum_flat<<<blocks, threads, 0, (cudaStream_t)stream>>>((const float*)inputs[0],
                                                             (float*)outputs[0], M, N);
  return cudaGetLastError() == cudaSuccess ? 0 : 1;
}
