// Class 10 — compute into a scratch buffer on the harness stream, then deliver y with cudaMemcpyAsync on a private
// stream (ordered after the kernel by an event) that the harness stream never waits for. Must be caught.
#include <cstdint>
#include <cuda_runtime.h>

__global__ void axpy(const float* x, const float* z, float* y, long long n, float a) {
    long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
    if (i < n) y[i] = a * x[i] + z[i];
}

extern "C" int kl_launch(const void* const* inputs, void* const* outputs, const int64_t* axes,
                         const double* params, void* stream) {
    cudaStream_t s = static_cast<cudaStream_t>(stream);
    static cudaStream_t own; static cudaEvent_t done; static float* scratch; static long long cap;
    if (!own) {
        if (cudaStreamCreateWithFlags(&own, cudaStreamNonBlocking) != cudaSuccess) return 1;
        cudaEventCreateWithFlags(&done, cudaEventDisableTiming);
    }
    const float* x = static_cast<const float*>(inputs[0]);
    const float* z = static_cast<const float*>(inputs[1]);
    float* y = static_cast<float*>(outputs[0]);
    long long n = axes[0];
    float a = static_cast<float>(params[0]);
    unsigned blocks = static_cast<unsigned>((n + 255) / 256);
    if (n > cap) {
        if (scratch) cudaFree(scratch);
        if (cudaMalloc(reinterpret_cast<void**>(&scratch), n * sizeof(float)) != cudaSuccess) return 1;
        cap = n;
    }
    axpy<<<blocks, 256, 0, s>>>(x, z, scratch, n, a);
    cudaEventRecord(done, s);
    cudaStreamWaitEvent(own, done, 0);
    cudaMemcpyAsync(y, scratch, n * sizeof(float), cudaMemcpyDeviceToDevice, own);
    return cudaGetLastError() == cudaSuccess ? 0 : 1;
}
