// softmax, style row_per_block: one block per row, threads stride the row, shared-memory tree
// max and sum. y[i,:] = exp(x[i,:] - max) / sum(exp(x[i,:] - max)); bf16 in/out, fp32 math.
#include <cuda_runtime.h>
#include <cuda_bf16.h>
#include <stdint.h>

#define THREADS 256  // a power of two: the tree reduction halves it

// Sum of v over the block; every thread gets the total. buf holds blockDim.x floats.
__device__ float block_sum(float v, float* buf) {
  const unsigned t = threadIdx.x;
  buf[t] = v;
  __syncthreads();
  for (unsigned s = blockDim.x / 2; s > 0; s >>= 1) {
    if (t < s) buf[t] += buf[t + s];
    __syncthreads();
  }
  const float total = buf[0];
  __syncthreads();  // buf is reused by the next reduction
  return total;
}

// Max of v over the block; every thread gets it.
__device__ float block_max(float v, float* buf) {
  const unsigned t = threadIdx.x;
  buf[t] = v;
  __syncthreads();
  for (unsigned s = blockDim.x / 2; s > 0; s >>= 1) {
    if (t < s) buf[t] = fmaxf(buf[t], buf[t + s]);
    __syncthreads();
  }
  const float m = buf[0];
  __syncthreads();
  return m;
}

__global__ void softmax_row_per_block(const __nv_bfloat16* x, __nv_bfloat16* y, int64_t N) {
  __shared__ float buf[THREADS];
  const int64_t row = blockIdx.x;
  float m = -INFINITY;
  for (int64_t j = threadIdx.x; j < N; j += blockDim.x)
    m = fmaxf(m, __bfloat162float(x[row * N + j]));
  m = block_max(m, buf);
  float s = 0.0f;
  for (int64_t j = threadIdx.x; j < N; j += blockDim.x)
    s += expf(__bfloat162float(x[row * N + j]) - m);
  s = block_sum(s, buf);
  for (int64_t j = threadIdx.x; j < N; j += blockDim.x)
    y[row * N + j] = __float2bfloat16(expf(__bfloat162float(x[row * N + j]) - m) / s);
}

extern "C" int kl_launch(const void* const* inputs, void* const* outputs, const int64_t* axes,
                         const double* params, void* stream) {
  (void)params;
  const int64_t M = axes[0], N = axes[1];
  if (M == 0 || N == 0) return 0;
  softmax_row_per_block<<<(unsigned)M, THREADS, 0, (cudaStream_t)stream>>>(
      (const __nv_bfloat16*)inputs[0], (__nv_bfloat16*)outputs[0], N);
  return cudaGetLastError() == cudaSuccess ? 0 : 1;
}
