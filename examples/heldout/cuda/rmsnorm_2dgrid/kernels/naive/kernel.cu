// rmsnorm_2dgrid, naive: two kernels over a 2-D grid (blockIdx.y = row, blockIdx.x = column
// chunk). The first adds every x^2 into a per-row sum with one atomicAdd per element; the second
// reads the sum back and scales. The per-row sums live in stream-ordered scratch.
#include <cuda_runtime.h>
#include <stdint.h>

__global__ void sum_squares(const float* x, float* ss, int cols) {
  int row = blockIdx.y;
  int col = blockIdx.x * blockDim.x + threadIdx.x;
  if (col < cols) {
    float v = x[(long long)row * cols + col];
    atomicAdd(&ss[row], v * v);
  }
}

__global__ void scale_rows(const float* x, const float* w, const float* ss, float* y, int cols,
                           float eps) {
  int row = blockIdx.y;
  int col = blockIdx.x * blockDim.x + threadIdx.x;
  if (col < cols) {
    float r = 1.0f / sqrtf(ss[row] / cols + eps);
    long long at = (long long)row * cols + col;
    y[at] = x[at] * r * w[col];
  }
}

extern "C" int kl_launch(const void* const* inputs, void* const* outputs, const int64_t* axes,
                         const double* params, void* stream) {
  const int rows = (int)axes[0], cols = (int)axes[1];
  const float eps = (float)params[0];
  cudaStream_t s = (cudaStream_t)stream;
  // gridDim.y is at most 65535: rows beyond that go to further launch pairs
  float* ss = nullptr;
  if (cudaMallocAsync((void**)&ss, sizeof(float) * rows, s) != cudaSuccess) return 1;
  if (cudaMemsetAsync(ss, 0, sizeof(float) * rows, s) != cudaSuccess) return 1;
  const int block = 256;
  for (int r0 = 0; r0 < rows; r0 += 65535) {
    const int nr = rows - r0 < 65535 ? rows - r0 : 65535;
    dim3 grid((cols + block - 1) / block, nr);
    const long long off = (long long)r0 * cols;
    sum_squares<<<grid, block, 0, s>>>((const float*)inputs[0] + off, ss + r0, cols);
    scale_rows<<<grid, block, 0, s>>>((const float*)inputs[0] + off, (const float*)inputs[1],
                                      ss + r0, (float*)outputs[0] + off, cols, eps);
  }
  if (cudaFreeAsync(ss, s) != cudaSuccess) return 1;
  return cudaGetLastError() == cudaSuccess ? 0 : 1;
}
