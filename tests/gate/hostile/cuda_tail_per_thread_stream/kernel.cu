// Class 10 (held-out review, 2026-12-03, rewritten by us) — four fifths of the work on the harness stream, the last
// fifth on cudaStreamPerThread (a ready-made handle: no creation call to deny) after an event the harness stream
// records, so it runs after the harness's end event. The result is right; the time must include the tail.
#include <cstdint>
#include <cuda_runtime.h>

__global__ void axpy(const float* x, const float* z, float* y, long long begin, long long end, float a) {
    for (long long i = begin + blockIdx.x * (long long)blockDim.x + threadIdx.x; i < end;
         i += (long long)gridDim.x * blockDim.x)
        y[i] = a * x[i] + z[i];
}

extern "C" int kl_launch(const void* const* inputs, void* const* outputs, const int64_t* axes,
                         const double* params, void* stream) {
    static cudaEvent_t head_done;
    if (!head_done && cudaEventCreateWithFlags(&head_done, cudaEventDisableTiming) != cudaSuccess) return 1;
    const float* x = static_cast<const float*>(inputs[0]);
    const float* z = static_cast<const float*>(inputs[1]);
    float* y = static_cast<float*>(outputs[0]);
    const long long n = axes[0], cut = n - n / 5;
    const float a = static_cast<float>(params[0]);
    cudaStream_t harness = static_cast<cudaStream_t>(stream);
    axpy<<<1024, 256, 0, harness>>>(x, z, y, 0, cut, a);
    cudaEventRecord(head_done, harness);
    cudaStreamWaitEvent(cudaStreamPerThread, head_done, 0);
    axpy<<<1024, 256, 0, cudaStreamPerThread>>>(x, z, y, cut, n, a);
    return cudaGetLastError() == cudaSuccess ? 0 : 1;
}
