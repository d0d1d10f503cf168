// Class 10 — launch on the legacy default stream (stream 0) instead of the harness stream; with a non-blocking
// harness stream nothing orders the two, so the timed interval can miss the work. Must be caught.
#include <cstdint>
#include <cuda_runtime.h>

__global__ void axpy(const float* x, const float* z, float* y, long long n, float a) {
    long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
    if (i < n) y[i] = a * x[i] + z[i];
}

extern "C" int kl_launch(const void* const* inputs, void* const* outputs, const int64_t* axes,
                         const double* params, void* stream) {
    (void)stream;
    const float* x = static_cast<const float*>(inputs[0]);
    const float* z = static_cast<const float*>(inputs[1]);
    float* y = static_cast<float*>(outputs[0]);
    long long n = axes[0];
    float a = static_cast<float>(params[0]);
    unsigned blocks = static_cast<unsigned>((n + 255) / 256);
    axpy<<<blocks, 256, 0, 0>>>(x, z, y, n, a);
    return cudaGetLastError() == cudaSuccess ? 0 : 1;
}
