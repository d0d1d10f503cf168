// Honest - nvcc flags an optimizer legitimately tries: --use_fast_math, -arch=sm_90a (the H200's
// architecture-specific target) and a -D the code needs. One kernel on the harness stream; must be
// accepted.
#include <cstdint>
#include <cuda_runtime.h>

#ifndef KL_BLOCK
#error "KL_BLOCK comes from kernel.toml's -DKL_BLOCK=256"
#endif

__global__ void axpy(const float *x, const float *z, float *y, float a, long long n) {
    long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
    if (i < n) y[i] = __fmaf_rn(a, x[i], z[i]);
}

extern "C" int kl_launch(const void *const *inputs, void *const *outputs, const int64_t *axes,
                         const double *params, void *stream) {
    long long n = axes[0];
    unsigned blocks = (unsigned)((n + KL_BLOCK - 1) / KL_BLOCK);
    axpy<<<blocks, KL_BLOCK, 0, (cudaStream_t)stream>>>((const float *)inputs[0], (const float *)inputs[1],
                                                        (float *)outputs[0], (float)params[0], n);
    return cudaGetLastError() == cudaSuccess ? 0 : 1;
}
