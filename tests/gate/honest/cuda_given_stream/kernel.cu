// Honest — CUDA: one grid-stride kernel launched on exactly the stream the harness passes in. Must be accepted.
#include <cstdint>
#include <cuda_runtime.h>

__global__ void axpy(const float* __restrict__ x, const float* __restrict__ z, float* __restrict__ y, long long n, float a) {
    for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n; i += (long long)gridDim.x * blockDim.x)
        y[i] = a * x[i] + z[i];
}

extern "C" int kl_launch(const void* const* inputs, void* const* outputs, const int64_t* axes,
                         const double* params, void* stream) {
    const long long n = axes[0];
    unsigned blocks = static_cast<unsigned>((n + 255) / 256);
    if (blocks > 65535) blocks = 65535;
    axpy<<<blocks, 256, 0, static_cast<cudaStream_t>(stream)>>>(static_cast<const float*>(inputs[0]),
                                                                 static_cast<const float*>(inputs[1]),
                                                                 static_cast<float*>(outputs[0]), n,
                                                                 static_cast<float>(params[0]));
    return cudaGetLastError() == cudaSuccess ? 0 : 1;
}
