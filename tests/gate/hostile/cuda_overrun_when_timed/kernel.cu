// klineage's own (not the red team's): honest for the first 40 calls, then every call also writes
// one float past the end of y. The canary bytes behind each output are counted on the device after
// every call and read back at the end of a trial: the overrun must still be found.
#include <cstdint>
#include <cuda_runtime.h>

__global__ void axpy(const float* x, const float* z, float* y, long long n, float a, int overrun) {
    long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
    if (i < n) y[i] = a * x[i] + z[i];
    if (overrun && i == n) y[n] = 1.0f;
}

extern "C" int kl_launch(const void* const* inputs, void* const* outputs, const int64_t* axes,
                         const double* params, void* stream) {
    static int calls = 0;
    cudaStream_t s = static_cast<cudaStream_t>(stream);
    long long n = axes[0];
    axpy<<<static_cast<unsigned>((n + 256) / 256), 256, 0, s>>>(
        static_cast<const float*>(inputs[0]), static_cast<const float*>(inputs[1]),
        static_cast<float*>(outputs[0]), n, static_cast<float>(params[0]), ++calls > 40);
    return cudaGetLastError() == cudaSuccess ? 0 : 1;
}
