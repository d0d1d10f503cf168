// bias_gelu_2d, naive: y[r][c] = gelu_tanh(x[r][c] + bias[c]) on a row-major fp32 matrix.
// 16x16 thread blocks on a 2-D grid that covers the matrix, one element per thread, x is the
// column and y the row; the formula is written out with powf and tanhf.
#include <cuda_runtime.h>
#include <stdint.h>

__global__ void bias_gelu_kernel(const float* x, const float* bias, float* y, int rows, int cols) {
  int col = blockIdx.x * blockDim.x + threadIdx.x;
  int row = blockIdx.y * blockDim.y + threadIdx.y;
  if (row < rows && col < cols) {
    float v = x[row * cols + col] + bias[col];
    float inner = 0.7978845608f * (v + 0.044715f * powf(v, 3.0f));
    y[row * cols + col] = 0.5f * v * (1.0f + tanhf(inner));
  }
}

extern "C" int kl_launch(const void* const* inputs, void* const* outputs, const int64_t* axes,
                         const double* params, void* stream) {
  (void)params;
  const int rows = (int)axes[0];
  const int cols = (int)axes[1];
  dim3 block(16, 16);
  dim3 grid((cols + block.x - 1) / block.x, (rows + block.y - 1) / block.y);
  bias_gelu_kernel<<<grid, block, 0, (cudaStream_t)stream>>>(
      (const float*)inputs[0], (const float*)inputs[1], (float*)outputs[0], rows, cols);
  return cudaGetLastError() == cudaSuccess ? 0 : 1;
}
