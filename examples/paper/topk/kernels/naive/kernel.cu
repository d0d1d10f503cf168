// topk, naive: one block per row; each of the K picks is a block-wide argmax over the whole row
// of the elements after the previous pick in the order (value down, position up). K full passes
// over the row, no selection structure: O(K * S) per row.
#include <cuda_runtime.h>
#include <stdint.h>

constexpr int kThreads = 256;

// a before b in the pick order: larger value first, then smaller position
__device__ __forceinline__ bool before(float va, int64_t ia, float vb, int64_t ib) {
  return va > vb || (va == vb && ia < ib);
}

__global__ void topk_naive(const float* x, float* top_values, int64_t* top_indices,
                           int64_t S, int64_t K) {
  __shared__ float best_value[kThreads];
  __shared__ int64_t best_index[kThreads];
  const float* row = x + (int64_t)blockIdx.x * S;
  float last_value = 0.0f;
  int64_t last_index = -1;  // nothing picked yet
  for (int64_t pick = 0; pick < K; ++pick) {
    float value = 0.0f;
    int64_t index = -1;
    for (int64_t i = threadIdx.x; i < S; i += kThreads) {
      const float v = row[i];
      if (last_index >= 0 && !before(last_value, last_index, v, i)) continue;  // picked already
      if (index < 0 || before(v, i, value, index)) { value = v; index = i; }
    }
    best_value[threadIdx.x] = value;
    best_index[threadIdx.x] = index;
    __syncthreads();
    for (int stride = kThreads / 2; stride > 0; stride /= 2) {
      if (threadIdx.x < stride) {
        const float v = best_value[threadIdx.x + stride];
        const int64_t i = best_index[threadIdx.x + stride];
        if (i >= 0 && (best_index[threadIdx.x] < 0 ||
                       before(v, i, best_value[threadIdx.x], best_index[threadIdx.x]))) {
          best_value[threadIdx.x] = v;
          best_index[threadIdx.x] = i;
        }
      }
      __syncthreads();
    }
    last_value = best_value[0];
    last_index = best_index[0];
    if (threadIdx.x == 0) {
      top_values[(int64_t)blockIdx.x * K + pick] = last_value;
      top_indices[(int64_t)blockIdx.x * K + pick] = last_index;
    }
    __syncthreads();  // every thread has read the winner before the next pick overwrites it
  }
}

extern "C" int kl_launch(const void* const* inputs, void* const* outputs, const int64_t* axes,
                         const double* params, void* stream) {
  const int64_t B = axes[0], S = axes[1], K = axes[2];
  if (B == 0 || K == 0) return 0;
  topk_naive<<<(unsigned)B, kThreads, 0, (cudaStream_t)stream>>>(
      (const float*)inputs[0], (float*)outputs[0], (int64_t*)outputs[1], S, K);
  return cudaGetLastError() == cudaSuccess ? 0 : 1;
}
