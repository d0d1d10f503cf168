// hist256_u8, naive: counts[v] = #{ i : x[i] == v } over a flat uint8 tensor.
// Clear the 256 counters, then one thread per byte increments its bin in global memory with
// atomicAdd.
#include <cuda_runtime.h>
#include <stdint.h>

__global__ void histogram_kernel(const unsigned char* data, int* counts, long long n) {
  long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) atomicAdd(&counts[data[i]], 1);
}

extern "C" int kl_launch(const void* const* inputs, void* const* outputs, const int64_t* axes,
                         const double* params, void* stream) {
  (void)params;
  const long long n = axes[0];
  cudaStream_t s = (cudaStream_t)stream;
  int* counts = (int*)outputs[0];
  if (cudaMemsetAsync(counts, 0, 256 * sizeof(int), s) != cudaSuccess) return 1;
  const int block = 256;
  const long long grid = (n + block - 1) / block;
  histogram_kernel<<<(unsigned)grid, block, 0, s>>>((const unsigned char*)inputs[0], counts, n);
  return cudaGetLastError() == cudaSuccess ? 0 : 1;
}
