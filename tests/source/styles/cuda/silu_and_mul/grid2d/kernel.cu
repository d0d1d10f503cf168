// silu_and_mul, style grid2d: 2-D grid, blockIdx.y = row, x = column, bounds check on both.
// y[m, j] = silu(gu[m, j]) * gu[m, N + j]; gu is M x 2N, y is M x N, bf16 in/out, fp32 math.
#include <cuda_runtime.h>
#include <cuda_bf16.h>
#include <stdint.h>

__global__ void silu_and_mul_grid2d(const __nv_bfloat16* gate_up, __nv_bfloat16* y, int64_t M,
                                    int64_t N) {
  const int64_t row = blockIdx.y;
  const int64_t col = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
  if (row < M && col < N) {
    const float g = __bfloat162float(gate_up[row * (2 * N) + col]);
    const float u = __bfloat162float(gate_up[row * (2 * N) + N + col]);
    const float s = g / (1.0f + expf(-g));
    y[row * N + col] = __float2bfloat16(s * u);
  }
}

extern "C" int kl_launch(const void* const* inputs, void* const* outputs, const int64_t* axes,
                         const double* params, void* stream) {
  (void)params;
  const int64_t M = axes[0], N = axes[1];
  if (M == 0 || N == 0) return 0;
  if (M > 65535) return 1;  // gridDim.y limit: one row per blockIdx.y
  const int threads = 256;
  const dim3 grid((unsigned)((N + threads - 1) / threads), (unsigned)M);
  silu_and_mul_grid2d<<<grid, threads, 0, (cudaStream_t)stream>>>(
      (const __nv_bfloat16*)inputs[0], (__nv_bfloat16*)outputs[0], M, N);
  return cudaGetLastError() == cudaSuccess ? 0 : 1;
}
