// The held-out mechanism of 2026-12-03 with a tail of known length: the call's GPU work begins with a mark of the
// GPU's clock, computes y on the harness stream and waits there until HEAD_NS after the mark; after an event on
// the harness stream, a kernel on cudaStreamPerThread waits until HEAD_NS + TAIL_NS after it. The harness's events
// end at about HEAD_NS; the call's GPU work lasts at least HEAD_NS + TAIL_NS, and the gate's time must too.
#include <cstdint>
#include <cuda_runtime.h>

#define HEAD_NS 400000ull
#define TAIL_NS 40000ull

__device__ unsigned long long marked;

__device__ unsigned long long now_ns() {
    unsigned long long t;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
    return t;
}

__global__ void mark() { marked = now_ns(); }

__global__ void wait_until(unsigned long long after_mark) {
    while (now_ns() < marked + after_mark) {
    }
}

__global__ void axpy(const float* x, const float* z, float* y, long long n, float a) {
    for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n; i += (long long)gridDim.x * blockDim.x)
        y[i] = a * x[i] + z[i];
}

extern "C" int kl_launch(const void* const* inputs, void* const* outputs, const int64_t* axes,
                         const double* params, void* stream) {
    static cudaEvent_t head_done;
    if (!head_done && cudaEventCreateWithFlags(&head_done, cudaEventDisableTiming) != cudaSuccess) return 1;
    cudaStream_t harness = static_cast<cudaStream_t>(stream);
    mark<<<1, 1, 0, harness>>>();
    axpy<<<1024, 256, 0, harness>>>(static_cast<const float*>(inputs[0]), static_cast<const float*>(inputs[1]),
                                    static_cast<float*>(outputs[0]), axes[0], static_cast<float>(params[0]));
    wait_until<<<1, 1, 0, harness>>>(HEAD_NS);
    cudaEventRecord(head_done, harness);
    cudaStreamWaitEvent(cudaStreamPerThread, head_done, 0);
    wait_until<<<1, 1, 0, cudaStreamPerThread>>>(HEAD_NS + TAIL_NS);
    return cudaGetLastError() == cudaSuccess ? 0 : 1;
}
