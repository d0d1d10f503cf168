// klineage's own (not the red team's): honest for the first 40 calls (correctness and part of the
// warm-up), then every call also overwrites one element of its input x. The GPU cannot map inputs
// read-only, so the gate compares them with its own copy after each call, on the device, read back
// at the end of a trial: the write must still be found, and named.
#include <cstdint>
#include <cuda_runtime.h>

__global__ void axpy(const float* x, const float* z, float* y, long long n, float a) {
    long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
    if (i < n) y[i] = a * x[i] + z[i];
}

__global__ void scribble(float* x, long long n) { x[n / 2] = 12345.0f; }

extern "C" int kl_launch(const void* const* inputs, void* const* outputs, const int64_t* axes,
                         const double* params, void* stream) {
    static int calls = 0;
    cudaStream_t s = static_cast<cudaStream_t>(stream);
    long long n = axes[0];
    axpy<<<static_cast<unsigned>((n + 255) / 256), 256, 0, s>>>(
        static_cast<const float*>(inputs[0]), static_cast<const float*>(inputs[1]),
        static_cast<float*>(outputs[0]), n, static_cast<float>(params[0]));
    if (++calls > 40) scribble<<<1, 1, 0, s>>>(const_cast<float*>(static_cast<const float*>(inputs[0])), n);
    return cudaGetLastError() == cudaSuccess ? 0 : 1;
}
