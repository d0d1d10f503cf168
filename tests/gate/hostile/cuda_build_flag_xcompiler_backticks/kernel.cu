/* Class 13 - the same with backticks. */
#include <cstdint>
#include <cuda_runtime.h>

__global__ void axpy(const float *x, const float *z, float *y, float a, long long n) {
    long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
    if (i < n) y[i] = a * x[i] + z[i];
}

extern "C" int kl_launch(const void *const *inputs, void *const *outputs, const int64_t *axes,
                         const double *params, void *stream) {
    long long n = axes[0];
    unsigned blocks = (unsigned)((n + 255) / 256);
    axpy<<<blocks, 256, 0, (cudaStream_t)stream>>>((const float *)inputs[0], (const float *)inputs[1],
                                                   (float *)outputs[0], (float)params[0], n);
    return cudaGetLastError() == cudaSuccess ? 0 : 1;
}
