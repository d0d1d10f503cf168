// Class 10 (gray zone) — textbook fork/join: the harness stream's event gates a private stream, the kernel runs there,
// and the harness stream waits on the private stream's event before returning. Ordering and timing are exact.
#include <cstdint>
#include <cuda_runtime.h>

__global__ void axpy(const float* x, const float* z, float* y, long long n, float a) {
    long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
    if (i < n) y[i] = a * x[i] + z[i];
}

extern "C" int kl_launch(const void* const* inputs, void* const* outputs, const int64_t* axes,
                         const double* params, void* stream) {
    cudaStream_t s = static_cast<cudaStream_t>(stream);
    static cudaStream_t own; static cudaEvent_t forked, joined;
    if (!own) {
        if (cudaStreamCreateWithFlags(&own, cudaStreamNonBlocking) != cudaSuccess) return 1;
        cudaEventCreateWithFlags(&forked, cudaEventDisableTiming);
        cudaEventCreateWithFlags(&joined, cudaEventDisableTiming);
    }
    const float* x = static_cast<const float*>(inputs[0]);
    const float* z = static_cast<const float*>(inputs[1]);
    float* y = static_cast<float*>(outputs[0]);
    long long n = axes[0];
    float a = static_cast<float>(params[0]);
    unsigned blocks = static_cast<unsigned>((n + 255) / 256);
    cudaEventRecord(forked, s);
    cudaStreamWaitEvent(own, forked, 0);
    axpy<<<blocks, 256, 0, own>>>(x, z, y, n, a);
    cudaEventRecord(joined, own);
    cudaStreamWaitEvent(s, joined, 0);
    return cudaGetLastError() == cudaSuccess ? 0 : 1;
}
