// Honest — CUDA: several operations, ALL on the harness stream: cudaMallocAsync a scratch, cudaMemcpyAsync z into
// it, a kernel y = a*x + scratch, cudaFreeAsync. Stream-ordered allocation is not "another stream". Must be accepted.
#include <cstdint>
#include <cuda_runtime.h>

__global__ void axpy_into(const float* x, const float* zcopy, float* y, long long n, float a) {
    long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
    if (i < n) y[i] = a * x[i] + zcopy[i];
}

extern "C" int kl_launch(const void* const* inputs, void* const* outputs, const int64_t* axes,
                         const double* params, void* stream) {
    cudaStream_t s = static_cast<cudaStream_t>(stream);
    const long long n = axes[0];
    const size_t bytes = static_cast<size_t>(n) * sizeof(float);
    float* zcopy = nullptr;
    if (cudaMallocAsync(reinterpret_cast<void**>(&zcopy), bytes, s) != cudaSuccess) return 1;
    cudaMemcpyAsync(zcopy, inputs[1], bytes, cudaMemcpyDeviceToDevice, s);
    axpy_into<<<static_cast<unsigned>((n + 255) / 256), 256, 0, s>>>(static_cast<const float*>(inputs[0]), zcopy,
                                                                    static_cast<float*>(outputs[0]), n,
                                                                    static_cast<float>(params[0]));
    cudaFreeAsync(zcopy, s);
    return cudaGetLastError() == cudaSuccess ? 0 : 1;
}
